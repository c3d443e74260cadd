"""Files a patch refers to: where they may be, and how they are opened. The one place for both.

A patch file is data from a stranger, and names files in its values (a shader's `file`, an image's
`path`, its `.npz` sidecars). `resolve_patch_path(folder, name, kind)` turns such a name into a
real path, or refuses it with a `PathRefusedError` (one line): a name resolves inside the patch's
folder (subfolders are fine), the built-in resources, or a trusted folder the person configured.
Absolute names, `~`, `..` leading out and symlinks pointing out are refused (symlinks are resolved
before the check, so a link inside the folder to a file inside it is fine).

`read_patch_file(path, kind)` / `open_patch_file(path, kind)` then open regular files only: the path
is checked with `os.stat` before opening (never a FIFO, device or folder), opened with O_NONBLOCK
(a FIFO swapped in between cannot block) and O_NOFOLLOW, checked again with `fstat`, and refused
above the kind's size limit (`Limits`). Reads never go past the limit either.

Trusted folders (a shared shader library, say) are a setting of the person, never of a file:
- `PATCHBAY_TRUSTED_DIRS`: folders separated by `os.pathsep` (`:` on Linux and macOS);
- `trusted_dirs` in `settings.json` of the user config folder (`$XDG_CONFIG_HOME/patchbay`, by
  default `~/.config/patchbay`; `%APPDATA%\\patchbay` on Windows): a list of folder names.
`trusted_folders()` reads them again only when the variable or the settings file (its `stat`)
changed, so resolving a name every frame costs a `stat`, and tests and the editor see changes.

Known downside: the check and the open are two steps; a folder on the path swapped for a symlink
in between is not caught (O_NOFOLLOW covers the last component only).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.resources
import io
import json
import os
import stat
from pathlib import Path
from typing import BinaryIO, Literal

from nodes.errors import shown
from nodes.limits import active_limits

FileKind = Literal["shader", "image", "sidecar", "patch", "file", "video", "font", "audio"]

TRUSTED_DIRS_VARIABLE = "PATCHBAY_TRUSTED_DIRS"
SETTINGS_FILE = "settings.json"

_KIND_NAMES = {"shader": "shader file", "image": "image file", "sidecar": "sidecar file",
               "patch": "patch file", "file": "file", "video": "video file",
               "font": "font file", "audio": "audio file"}  # fmt: skip
_SIZE_LIMITS = {"shader": "shader_file_bytes", "image": "image_file_bytes",
                "sidecar": "sidecar_bytes", "patch": "file_bytes",
                "file": "file_bytes", "video": "video_file_bytes",
                "font": "font_file_bytes", "audio": "audio_file_bytes"}  # fmt: skip
_READ_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)


class PathRefusedError(ValueError):
    """A file name that a patch may not use, or a file that may not be opened; one line."""


def user_config_folder() -> Path:
    """Where patchbay keeps the person's settings."""
    if os.name == "nt" and os.environ.get("APPDATA"):
        return Path(os.environ["APPDATA"]) / "patchbay"
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "patchbay"


@functools.cache
def resources_folder() -> Path:
    """The built-in resources (shaders, examples, icons); found once a process."""
    return Path(str(importlib.resources.files("resources"))).resolve()


#: (what `trusted_folders` read from, the folders): see `trusted_folders`.
_trusted: tuple[tuple[object, ...], tuple[Path, ...]] | None = None


def trusted_folders() -> tuple[Path, ...]:
    """The folders the person trusts besides a patch's own: see the module note. Settings that
    cannot be read are ignored (an unreadable settings file trusts nothing more).

    Asked for every file name a patch resolves (a running shader: every frame), so the answer is
    kept, with the variable's value and the settings file's `stat` it came from: a call costs a
    `stat`, and reads the settings again only when the variable or the file changed."""
    global _trusted
    variable = os.environ.get(TRUSTED_DIRS_VARIABLE, "")
    settings_file = user_config_folder() / SETTINGS_FILE
    try:
        info = os.stat(settings_file)
        version: tuple[object, ...] = (info.st_mtime_ns, info.st_size, info.st_ino, info.st_dev)
    except OSError:
        version = ()
    key = (variable, str(settings_file), *version)
    kept = _trusted
    if kept is not None and kept[0] == key:
        return kept[1]
    folders = _read_trusted_folders(variable, settings_file)
    _trusted = (key, folders)
    return folders


def _read_trusted_folders(variable: str, settings_file: Path) -> tuple[Path, ...]:
    names = [name for name in variable.split(os.pathsep) if name]
    with contextlib.suppress(OSError, ValueError):
        settings = json.loads(settings_file.read_text(encoding="utf-8"))
        listed = settings.get("trusted_dirs", []) if isinstance(settings, dict) else []
        names += [name for name in listed if isinstance(name, str) and name]
    folders = []
    for name in names:
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            folders.append(Path(name).expanduser().resolve())
    return tuple(folders)


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def resolve_patch_path(folder: Path | None, name: str, kind: FileKind) -> Path:
    """The real path of the file `name` that a patch in `folder` refers to (None: a patch never
    saved, whose names are relative to the current directory), or PathRefusedError. The file
    need not exist: whether it does is the caller's business (`read_patch_file`)."""
    what = _KIND_NAMES[kind]
    if not isinstance(name, str) or not name:
        raise PathRefusedError(f"{what}: no file name")
    if "\0" in name or len(name) > 4096:
        raise PathRefusedError(f"{what} {shown(name)}: not a file name")
    if name.startswith("~"):
        raise PathRefusedError(f"{what} {shown(name)}: `~` is not allowed (names are relative "
                               "to the patch's folder)")  # fmt: skip
    if os.path.isabs(name) or name.startswith(("/", "\\")) or os.path.splitdrive(name)[0]:
        raise PathRefusedError(f"{what} {shown(name)}: absolute paths are not allowed (names "
                               "are relative to the patch's folder)")  # fmt: skip
    base = Path(folder) if folder is not None else Path.cwd()
    try:
        base = base.resolve()
        path = (base / name).resolve()
    except (OSError, RuntimeError) as error:  # a symlink loop
        raise PathRefusedError(f"{what} {shown(name)}: {error.__class__.__name__}") from None
    if _inside(path, base) or _inside(path, resources_folder()):
        return path
    if any(_inside(path, trusted) for trusted in trusted_folders()):
        return path
    raise PathRefusedError(
        f"{what} {shown(name)} is outside the patch's folder (allowed: its folder and "
        f"subfolders, the built-in resources, and folders in {TRUSTED_DIRS_VARIABLE})"
    )


def file_limit(kind: FileKind) -> tuple[str, int]:
    """The name and value of the size limit for files of `kind`."""
    name = _SIZE_LIMITS[kind]
    return name, getattr(active_limits(), name)


def open_patch_file(path: Path, kind: FileKind) -> BinaryIO:
    """Open a regular file for reading, after the checks of the module note; PathRefusedError
    (or FileNotFoundError for a missing file) with one line otherwise. The caller closes it."""
    what = _KIND_NAMES[kind]
    limit_name, limit = file_limit(kind)
    try:
        before = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} {shown(str(path))} not found") from None
    except OSError as error:
        raise PathRefusedError(f"{what} {shown(str(path))}: {error.strerror}") from None
    if not stat.S_ISREG(before.st_mode):
        raise PathRefusedError(f"{what} {shown(str(path))}: not a regular file")
    try:
        descriptor = os.open(path, _READ_FLAGS)
    except OSError as error:
        raise PathRefusedError(f"{what} {shown(str(path))}: {error.strerror}") from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise PathRefusedError(f"{what} {shown(str(path))}: not a regular file")
        if info.st_size > limit:
            raise PathRefusedError(
                f"{what} {shown(str(path))}: {info.st_size} bytes is above the limit "
                f"{limit_name} = {limit}"
            )
        os.set_blocking(descriptor, True)  # a regular file: reads never wait on a writer
        return io.open(descriptor, "rb", closefd=True)  # noqa: UP020 - from a descriptor
    except BaseException:
        os.close(descriptor)
        raise


def read_patch_file(path: Path, kind: FileKind) -> bytes:
    """The bytes of a regular file, read as `open_patch_file` opens it, never more than the
    kind's limit (a file that grows meanwhile is refused)."""
    limit_name, limit = file_limit(kind)
    with open_patch_file(path, kind) as handle:
        data = handle.read(limit + 1 if limit < 2**62 else -1)
    if len(data) > limit:
        raise PathRefusedError(
            f"{_KIND_NAMES[kind]} {shown(str(path))}: above the limit {limit_name} = {limit}"
        )
    return data
