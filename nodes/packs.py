"""Node packs: node types from installed packages and from the user's nodes folder, reloaded live.

A pack is a Python module whose decorated functions declare node types, as the built-in library
does (`nodes.node`). Packs come from the entry-point group `patchbay.nodes` (an installed
distribution names a module: importing it registers its nodes; the pack's name is the entry
point's) and from the user's nodes folder, `<user data folder>/patchbay/nodes/*.py`
(`PATCHBAY_NODES_DIR` overrides it; the pack's name is the file's stem). Patch files never carry
code, and a pack is never loaded from a patch's own folder (`load_folder` refuses one).

Loading a pack never touches the library directly: its module is imported fresh (under its own
name in `sys.modules`) while `collecting_specs` keeps what it registers, possibly on another
thread; the result is staged, and `apply_staged` swaps it in (the pack's old types out, the new
ones in) on the thread that owns the library's readers, between frames. A pack that fails to
import, or declares a type another pack or the built-in library has, changes nothing and gives
one line. `PackWatcher` follows the nodes folder with watchdog (inotify on Linux: no polling, and
an import runs only when a file changed, once its events have been quiet for a moment) and
stages on a thread of its own.

Instances follow the library through `sync_instances(patch)`: an instance of a pack type gets
the type's current spec, or a placeholder when the type is gone; a placeholder gets the real
spec when its type appears. Each swap is a structural `pins` event (Patch._rederive_instance), so
evaluators rebuild what they built from the old spec. Placeholders (`placeholder_spec`) keep an
instance's values and links (pins of type `any`) and the type id it was saved with, so saving
writes the node back unchanged; running one fails with one line saying which type is missing.

Assumes a pack's module is trusted code the person installed; loading one runs it.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import itertools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

from nodes.errors import one_line
from nodes.spec import (
    LIBRARY,
    Determinism,
    NodeSpec,
    OutputSpec,
    PinSpec,
    collecting_specs,
    register,
    unregister,
)

if TYPE_CHECKING:
    from nodes.document.patch import NodeInstance, Patch

ENTRY_POINT_GROUP = "patchbay.nodes"
NODES_DIR_ENV = "PATCHBAY_NODES_DIR"
_MODULE_PREFIX = "patchbay_packs."


class MissingNodeTypeError(RuntimeError):
    """A placeholder node ran: its type is not installed."""


@dataclass(frozen=True)
class Pack:
    """A loaded pack: its name, where it came from (a file or an entry point) and its types."""

    name: str
    origin: str
    type_ids: tuple[str, ...]


#: The packs loaded in this process, by name.
PACKS: dict[str, Pack] = {}
# Every type id a pack ever provided: instances of those follow the library (sync_instances).
_PACK_TYPES: set[str] = set()
_lock = threading.Lock()
_staged: dict[str, tuple[str, list[NodeSpec] | None]] = {}  # pack name -> (origin, specs|gone)
_revision = itertools.count(1)
_library_revision = 0
_imports = itertools.count(1)


def user_nodes_folder() -> Path:
    """The user's nodes folder: `PATCHBAY_NODES_DIR`, else the platform's user data folder."""
    override = os.environ.get(NODES_DIR_ENV)
    if override:
        return Path(override)
    return platformdirs.user_data_path("patchbay") / "nodes"


def pack_of(type_id: str) -> str | None:
    """The name of the pack that provides `type_id`, or None (built in, or unknown)."""
    for pack in PACKS.values():
        if type_id in pack.type_ids:
            return pack.name
    return None


def library_revision() -> int:
    """A number that changes whenever a swap changed the library's pack types."""
    return _library_revision


# ----------------------------------------------------------------------------- placeholders


def placeholder_spec(type_id: str, inputs: Iterable[str], outputs: Iterable[str]) -> NodeSpec:
    """A stand-in for an instance of `type_id`, which is not installed: `any` pins of these
    names; it runs as a sink when nothing reads it, so its failure shows."""
    message = f"node type {type_id!r} is not installed (missing pack?)"

    def compute(*_: Any) -> Any:
        raise MissingNodeTypeError(message)

    outs = tuple(OutputSpec(name, "any") for name in dict.fromkeys(outputs))
    return NodeSpec(
        id=type_id,
        category=type_id.split(".", 1)[0],
        inputs=tuple(PinSpec(name, "any") for name in dict.fromkeys(inputs)),
        outputs=outs,
        determinism=Determinism.DETERMINISTIC,
        compute=compute,
        sink=not outs,
        doc=message,
        missing=True,
    )


def _placeholder_for(instance: NodeInstance, links_out: Iterable[str]) -> NodeSpec:
    names = [pin.name for pin in instance.inputs]
    outputs = [out.name for out in instance.spec.outputs] + list(links_out)
    return placeholder_spec(instance.type_id, names, outputs)


def sync_instances(patch: Patch) -> int:
    """Give every instance of a pack type in the document (and its definitions) the library's
    spec for it now, a placeholder if it is gone; placeholders whose type is installed become
    real nodes. Returns how many instances changed. Call it on the patch's own thread."""
    changed = 0
    document = patch.document
    for container in (document, *document.definitions.values()):
        for node_id, instance in list(container.nodes.items()):
            spec = instance.spec
            current = LIBRARY.get(spec.id)
            if spec.missing:
                if current is None:
                    continue
                target = current
            elif spec.id not in _PACK_TYPES or current is spec:
                continue
            else:
                outs = (link.src_pin for link in container.links_out_of(node_id))
                target = current if current is not None else _placeholder_for(instance, outs)
            container.replace_spec(node_id, target)
            changed += 1
    return changed


# ----------------------------------------------------------------------------- loading


def _import_file(name: str, path: Path) -> list[NodeSpec]:
    """Import a pack file as a fresh module and return the specs it declares."""
    module_name = f"{_MODULE_PREFIX}{name}"
    spec = importlib.util.spec_from_file_location(f"{module_name}_{next(_imports)}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look modules up by name
    try:
        with collecting_specs() as specs:
            spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]
        raise
    return specs


def _forget_modules(specs: Iterable[NodeSpec]) -> None:
    """Drop the modules of pack files these specs came from (replaced, or never applied), so
    reloading a pack many times keeps one module of it."""
    for name in {getattr(spec.compute, "__module__", "") for spec in specs}:
        if name.startswith(_MODULE_PREFIX):
            sys.modules.pop(name, None)


def _load_problem(name: str, origin: str, error: BaseException) -> str:
    if isinstance(error, SyntaxError):
        where = f"{Path(error.filename or origin).name}:{error.lineno}"
        return one_line(f"node pack {name!r} not loaded: {where}: SyntaxError: {error.msg}")
    first = (str(error).strip().splitlines() or [""])[0]
    detail = f"{type(error).__name__}: {first}" if first else type(error).__name__
    return one_line(f"node pack {name!r} ({origin}) not loaded: {detail}")


def stage_file(path: Path) -> str | None:
    """Import the pack file `path` (or note that it is gone) and stage the result for
    `apply_staged`; any thread. Returns the one-line problem when the import failed (the
    pack's current nodes then stay)."""
    name, origin = path.stem, str(path)
    specs: list[NodeSpec] | None = None
    if path.is_file():
        try:
            specs = _import_file(name, path)
        except Exception as error:
            return _load_problem(name, origin, error)
    with _lock:
        superseded = _staged.get(name, ("", None))[1]
        _staged[name] = (origin, specs)
    _forget_modules(superseded or ())
    return None


def apply_staged() -> list[str]:
    """Swap staged packs into the library: the pack's old types out, its new ones in. A pack
    whose types clash with another's stays as it was. Returns one line per problem. Call it
    where nothing reads the library meanwhile (between frames), then `sync_instances`."""
    global _library_revision
    with _lock:
        staged = dict(_staged)
        _staged.clear()
    problems = []
    for name, (origin, specs) in staged.items():
        old = PACKS.get(name)
        old_ids = set(old.type_ids) if old is not None else set()
        new_ids = [spec.id for spec in specs or ()]
        clash = next(
            (
                type_id
                for type_id in new_ids
                if (type_id in LIBRARY and type_id not in old_ids) or new_ids.count(type_id) > 1
            ),
            None,
        )
        if clash is not None:
            owner = pack_of(clash)
            by = f"pack {owner!r}" if owner else "the built-in library"
            if new_ids.count(clash) > 1:
                by = "the pack itself"
            problems.append(
                one_line(
                    f"node pack {name!r} not loaded: type {clash!r} is already declared by {by}"
                )
            )
            _forget_modules(specs or ())
            continue
        _forget_modules(LIBRARY[type_id] for type_id in old_ids if type_id in LIBRARY)
        for type_id in old_ids:
            unregister(type_id)
        if specs is None:
            PACKS.pop(name, None)
        else:
            for spec in specs:
                register(spec)
            PACKS[name] = Pack(name, origin, tuple(new_ids))
            _PACK_TYPES.update(new_ids)
        _library_revision = next(_revision)
    return problems


def _entry_point_specs(entry_point: importlib.metadata.EntryPoint) -> list[NodeSpec]:
    with collecting_specs() as specs:
        entry_point.load()
    return specs


def load_entry_points() -> list[str]:
    """Load the packs of the entry-point group `patchbay.nodes` (staged, then applied); returns
    one line per problem."""
    problems = []
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry_point.name in PACKS:
            continue
        try:
            specs = _entry_point_specs(entry_point)
        except Exception as error:
            problems.append(
                _load_problem(entry_point.name, f"entry point {entry_point.value}", error)
            )
            continue
        with _lock:
            _staged[entry_point.name] = (f"entry point {entry_point.value}", specs)
    return problems + apply_staged()


def pack_files(folder: Path) -> list[Path]:
    """The pack files of a nodes folder (`*.py`, not starting with `_` or `.`), sorted."""
    if not folder.is_dir():
        return []
    return sorted(
        path for path in folder.glob("*.py") if path.is_file() and path.name[0] not in "_."
    )


def load_folder(folder: Path, patch_folder: Path | None = None) -> list[str]:
    """Load every pack file of `folder` (staged, then applied); returns one line per problem.
    Nothing is loaded from the folder of the patch being opened (`patch_folder`)."""
    if patch_folder is not None and _same_folder(folder, patch_folder):
        return [one_line(f"node packs in {folder} not loaded: it is the patch's own folder")]
    problems = [line for path in pack_files(folder) if (line := stage_file(path)) is not None]
    return problems + apply_staged()


def load_packs(patch_folder: Path | None = None) -> list[str]:
    """Load the installed packs and those of the user's nodes folder, once per process (a
    second call loads only what is new); returns one line per problem."""
    return load_entry_points() + load_folder(user_nodes_folder(), patch_folder)


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


# ----------------------------------------------------------------------------- watching


class PackWatcher:
    """Follows a nodes folder: a pack file created, changed or removed is imported (or noted
    gone) on the watcher's own thread once it has been quiet for `QUIET_S` (an editor's save is
    several events: a truncate, writes, a rename), and staged; `report(line)` gets each
    problem. The owner applies staged packs between frames (`apply_staged`, `sync_instances`)."""

    QUIET_S = 0.1

    def __init__(self, folder: Path, report: Callable[[str], None] | None = None) -> None:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        self.folder = folder
        self._report = report or (lambda line: None)
        self._due: dict[Path, float] = {}  # pack file -> when it has been quiet long enough
        self._wake = threading.Condition()
        self._stopped = False
        watcher = self

        class _Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                if event.event_type in ("opened", "closed_no_write"):
                    return
                for path in (event.src_path, getattr(event, "dest_path", "")):
                    if isinstance(path, bytes):
                        path = os.fsdecode(path)
                    if path:
                        watcher._changed(Path(path))

        folder.mkdir(parents=True, exist_ok=True)
        self._stager = threading.Thread(target=self._stage_when_quiet, name="pack-stager")
        self._stager.daemon = True
        self._stager.start()
        self._observer = Observer()
        self._observer.schedule(_Handler(), str(folder), recursive=False)
        self._observer.daemon = True
        self._observer.start()

    def _changed(self, path: Path) -> None:
        if path.suffix != ".py" or path.parent != self.folder or path.name[0] in "_.":
            return
        with self._wake:
            self._due[path] = time.monotonic() + self.QUIET_S
            self._wake.notify()

    def _stage_when_quiet(self) -> None:
        while True:
            with self._wake:
                while not self._stopped:
                    now = time.monotonic()
                    ready = [path for path, due in self._due.items() if due <= now]
                    if ready:
                        break
                    wait = min(self._due.values(), default=now + 3600.0) - now
                    self._wake.wait(timeout=wait)
                if self._stopped:
                    return
                for path in ready:
                    del self._due[path]
            for path in ready:
                try:
                    problem = stage_file(path)
                except Exception as error:  # never let a pack stop the watcher
                    problem = _load_problem(path.stem, str(path), error)
                if problem is not None:
                    self._report(problem)

    def close(self) -> None:
        self._observer.stop()
        self._observer.join(timeout=5)
        with self._wake:
            self._stopped = True
            self._wake.notify()
        self._stager.join(timeout=5)


__all__ = [
    "ENTRY_POINT_GROUP",
    "NODES_DIR_ENV",
    "PACKS",
    "MissingNodeTypeError",
    "Pack",
    "PackWatcher",
    "apply_staged",
    "library_revision",
    "load_entry_points",
    "load_folder",
    "load_packs",
    "pack_files",
    "pack_of",
    "placeholder_spec",
    "stage_file",
    "sync_instances",
    "user_nodes_folder",
]
