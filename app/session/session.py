"""The editor's state without its window: the document, its file, recent files, autosave and
recovery, the clipboard's patch fragments and the patch clock. No Qt: tests drive it directly.

The Qt window (app.qt.window) keeps widgets, actions and dialogs and calls this. Dirty state has
two sources: every change event of the Patch marks the document edited, and the window's undo
stack says when it is back at its saved state (`set_clean`).

Autosave: a few seconds after the last edit (`AUTOSAVE_DELAY_S`, debounced), and at the latest
`AUTOSAVE_LIMIT_S` after the first unsaved one while edits keep coming, the window's timer calls
`poll()`, which takes a copy of the document (`Patch.copy()`: node values are shared, never copied,
so even a patch holding a 100 MB array copies in well under a millisecond) and writes it on a
worker thread. The GUI thread never serialises.

Recovery: every editor instance has its own recovery file in `STATE/recovery/`, named
`<pid>-<token>`, and holds an exclusive `flock` on its `.lock` file while it runs (the kernel
drops the lock when the process dies, however it dies). A recovery whose lock can be taken
belongs to an editor that is no longer running: only those are offered (`orphaned_recoveries()`),
and their locks stay held while they are offered, so two editors starting together never both
take the same one. A clean close removes the editor's own recovery; declining a restore removes
only the orphans that were offered. `fcntl` makes this POSIX-only, as the rest of the app is.

Errors of saving and autosaving (an unwritable folder, a value the file format refuses) come back
as one line, never as an exception: the document stays as it is, and so does the last good file.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from app.engine.transport import TransportClock
from nodes import (
    Link,
    Patch,
    PatchError,
    PatchEvent,
    load_patch,
    patch_from_text,
    patch_to_dict,
    save_patch,
)

AUTOSAVE_DELAY_S = 3.0
"""Quiet time after the last edit before an autosave."""
AUTOSAVE_LIMIT_S = 15.0
"""Longest an edit stays unsaved while edits keep coming (a long slider drag)."""
MAX_RECENT = 8
PASTE_OFFSET = 40.0
MESSAGE_CHARS = 300

SAVE_ERRORS = (PatchError, TypeError, ValueError, OSError)
"""What `save_patch` raises for a file or a value it cannot write."""

NodePlacement = tuple[str, str, dict[str, Any], tuple[float, float]]
"""(new id, type id, values, position) of a node to add."""


def one_line(text: str, limit: int = MESSAGE_CHARS) -> str:
    """`text` on one line, control characters escaped, at most `limit` characters."""
    flat = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class PatchClock(TransportClock):
    """The editor's side of the transport: whether the patch plays, its rate, its fixed step and
    its time, as the editor asked the engine (whose clock is the same, app.engine.transport); a
    patch resent to an engine carries them along."""


@dataclass(frozen=True)
class Recovery:
    """Autosaved work of an editor that is no longer running."""

    key: str
    patch_file: Path
    original: Path | None  # the file the work came from; None if it was never saved
    saved_at: float  # time.time() of the autosave

    def describe(self) -> str:
        name = self.original.name if self.original else "untitled"
        stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.saved_at))
        return f"{name}, autosaved {stamp}"


def describe_patch(patch: Patch, path: Path | None) -> str:
    """A patch in a few words, for a question: its file name (or untitled) and size."""
    count = len(patch.nodes)
    return f"{path.name if path else 'untitled'} ({count} node{'s' if count != 1 else ''})"


class _RecoveryFolder:
    """Recovery files and their locks in one folder (see the module note)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.key = f"{os.getpid()}-{secrets.token_hex(3)}"
        own_lock = self._lock(self.key)
        if own_lock is None:  # a fresh random name: only a broken folder gets here
            raise OSError(f"{folder}: cannot lock a recovery file")
        self.own_lock = own_lock
        self.held: dict[str, TextIO] = {}  # locks of orphans being offered

    def patch_file(self, key: str) -> Path:
        return self.folder / f"{key}.patchbay"

    def _info_file(self, key: str) -> Path:
        return self.folder / f"{key}.json"

    def _lock(self, key: str) -> TextIO | None:
        """Our exclusive lock on `key`, or None while its editor runs."""
        handle = open(self.folder / f"{key}.lock", "a")  # noqa: SIM115 - held while we run
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return None
        return handle

    def write(self, patch: Patch, original: Path | None) -> None:
        """Write our recovery (worker thread)."""
        save_patch(patch, self.patch_file(self.key))
        info = {"original": str(original) if original else None, "saved_at": time.time()}
        self._info_file(self.key).write_text(json.dumps(info), "utf-8")

    def orphans(self) -> list[Recovery]:
        """Recoveries of editors that are no longer running, newest first; their locks are
        held from now on, until `remove` or `release`."""
        found = []
        for patch_file in self.folder.glob("*.patchbay"):
            key = patch_file.stem
            if key == self.key:
                continue
            if key not in self.held:
                handle = self._lock(key)
                if handle is None:
                    continue  # its editor is running
                self.held[key] = handle
            if not patch_file.exists():  # removed by another editor meanwhile
                self.release(key)
                continue
            found.append(self._recovery(key))
        return sorted(found, key=lambda recovery: recovery.saved_at, reverse=True)

    def _recovery(self, key: str) -> Recovery:
        patch_file = self.patch_file(key)
        try:
            info = json.loads(self._info_file(key).read_text("utf-8"))
        except (OSError, ValueError):
            info = {}
        info = info if isinstance(info, dict) else {}
        original = info.get("original")
        saved_at = info.get("saved_at")
        if not isinstance(saved_at, int | float):
            saved_at = patch_file.stat().st_mtime
        path = Path(original) if isinstance(original, str) and original else None
        return Recovery(key, patch_file, path, float(saved_at))

    def remove(self, key: str) -> None:
        """Delete the recovery `key` (ours, or an orphan we hold) and its sidecars."""
        patch_file = self.patch_file(key)
        sidecars = self.folder.glob(f"{patch_file.name}.*npz")  # large arrays
        for path in [patch_file, self._info_file(key), *sidecars]:
            path.unlink(missing_ok=True)
        if key != self.key:
            (self.folder / f"{key}.lock").unlink(missing_ok=True)
            self.release(key)

    def release(self, key: str) -> None:
        handle = self.held.pop(key, None)
        if handle is not None:
            handle.close()

    def close(self, *, keep_own: bool = False) -> None:
        """Remove our recovery (unless `keep_own`: it is then an orphan for the next editor)
        and lock; let go of the orphans we held."""
        if not keep_own:
            self.remove(self.key)
        for key in list(self.held):
            self.release(key)
        (self.folder / f"{self.key}.lock").unlink(missing_ok=True)
        self.own_lock.close()


class EditorSession:
    """The editor's document and everything around it that is not a view (see the module note).

    `now` is the clock autosave timing reads (time.monotonic by default; tests pass their own).
    """

    def __init__(
        self,
        state_dir: Path,
        *,
        autosave_delay_s: float = AUTOSAVE_DELAY_S,
        autosave_limit_s: float = AUTOSAVE_LIMIT_S,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.autosave_delay_s = autosave_delay_s
        self.autosave_limit_s = autosave_limit_s
        self.clock = PatchClock()
        self.patch = Patch()
        self.path: Path | None = None
        self.restored_unsaved = False  # a restored or attached document not saved since
        # What the title calls a document no file holds yet ("noise_color (example)"): None for
        # "untitled"; a new document forgets it, a save replaces it with the file's name.
        self.untitled_name: str | None = None
        self._now = now
        self._recovery = _RecoveryFolder(self.state_dir / "recovery")
        self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="patchbay-autosave")
        self._writing: Future[None] | None = None
        self._writing_edit = 0  # the edit count the write in progress holds
        self._adopted: str | None = None  # the orphan restored: removed once ours is written
        self._writing_adopted: str | None = None  # the orphan restored when that write began
        self._clean = True
        # An edit no undo step holds (a live value, a tapped tempo): the undo stack coming back
        # to its saved state does not take it back, so only a save or another document clears it.
        self._outside_undo = False
        self._edits = 0  # counts every edit; autosaves remember the count they hold
        self._autosaved_edits = 0
        self._first_unsaved_at: float | None = None
        self._last_edit_at = 0.0
        self._clipboard: Patch | None = None
        self._unsubscribe = self.patch.subscribe(self._on_event)

    # ------------------------------------------------------------------ the document
    def set_document(self, patch: Patch, path: Path | None, *, unsaved: bool = False) -> None:
        """Edit `patch` from now on; `unsaved`: it holds work no file has (restored, attached)."""
        self._unsubscribe()
        self.patch, self.path = patch, path
        self.untitled_name = None
        self._unsubscribe = patch.subscribe(self._on_event)
        self._clean = True
        self._outside_undo = False
        self.restored_unsaved = False
        self._first_unsaved_at = None
        if unsaved:
            self.mark_unsaved()
        else:
            self._autosaved_edits = self._edits
            self._recovery.remove(self._recovery.key)

    def mark_unsaved(self) -> None:
        """The document holds work no file has: autosave it at the next `poll()`."""
        self.restored_unsaved = True
        self._edited()
        self._first_unsaved_at = self._now() - self.autosave_limit_s

    def edited_outside_undo(self) -> None:
        """An edit no undo step holds was made: the document stays modified until saved."""
        self._outside_undo = True
        self._edited()

    @property
    def modified(self) -> bool:
        """Whether the document holds work its file lacks: what the title's `*` and the question
        before closing both read."""
        return self.restored_unsaved or self._outside_undo or not self._clean

    def set_clean(self, clean: bool) -> None:
        """The undo stack is (back) at the saved state, or has left it."""
        if clean == self._clean:
            return
        if not clean:
            self._edited()
            return
        self._clean = True
        if not self.modified:
            self._autosaved_edits = self._edits
            self._first_unsaved_at = None
            self._recovery.remove(self._recovery.key)

    def title(self) -> str:
        name = self.path.name if self.path else (self.untitled_name or "untitled")
        return f"{name}{' *' if self.modified else ''} — patchbay"

    def _on_event(self, event: PatchEvent) -> None:
        if event.live:  # a live control or a recall: no undo step holds it
            self._outside_undo = True
        self._edited()

    def _edited(self) -> None:
        self._clean = False
        self._edits += 1
        self._last_edit_at = self._now()
        if self._first_unsaved_at is None:
            self._first_unsaved_at = self._last_edit_at

    # ------------------------------------------------------------------ files
    @staticmethod
    def load(path: str | Path) -> Patch:
        """Read a patch file; PatchError (one line) if it does not load."""
        return load_patch(path)

    def save(self, path: Path) -> str | None:
        """Write the document to `path`; None when done, else the one-line reason (the document
        and the file that was there are left as they were)."""
        try:
            save_patch(self.patch, path)
        except SAVE_ERRORS as error:
            return one_line(f"{path}: cannot save: {error}")
        self.path = path
        # Relative file names (shader files) resolve next to the file from now on, as when it
        # is opened again.
        self.patch.folder = path.absolute().parent
        self.restored_unsaved = False
        self._outside_undo = False
        self._clean = True
        self._autosaved_edits = self._edits
        self._first_unsaved_at = None
        self._recovery.remove(self._recovery.key)
        return None

    def recent_files(self) -> list[str]:
        try:
            recent = json.loads((self.state_dir / "recent.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return [p for p in recent if isinstance(p, str)] if isinstance(recent, list) else []

    def remember_recent(self, path: Path) -> None:
        entry = str(path.resolve())
        recent = [entry, *[p for p in self.recent_files() if p != entry]][:MAX_RECENT]
        with contextlib.suppress(OSError):  # a read-only state folder costs the list only
            (self.state_dir / "recent.json").write_text(json.dumps(recent, indent=1), "utf-8")

    # ------------------------------------------------------------------ autosave
    @property
    def recovery_file(self) -> Path:
        """This editor's recovery file (exists once an autosave wrote it)."""
        return self._recovery.patch_file(self._recovery.key)

    def autosave_due(self) -> bool:
        if not self.modified or self._writing is not None or self._first_unsaved_at is None:
            return False
        if self._edits == self._autosaved_edits:
            return False
        now = self._now()
        quiet = now - self._last_edit_at >= self.autosave_delay_s
        return quiet or now - self._first_unsaved_at >= self.autosave_limit_s

    def autosave(self) -> Future[None] | None:
        """Start writing the document to the recovery file now, on the worker thread (None if
        a write is already running)."""
        if self._writing is not None:
            return None
        self._writing_edit = self._edits
        self._writing_adopted = self._adopted
        self._first_unsaved_at = None
        self._writing = self._writer.submit(self._recovery.write, self.patch.copy(), self.path)
        return self._writing

    def poll(self) -> list[str]:
        """Collect a finished autosave and start one when it is due; returns one-line messages
        for the status bar (failures)."""
        messages = self._collect()
        if self.autosave_due():
            self.autosave()
        return messages

    def wait_for_autosave(self, timeout: float | None = None) -> list[str]:
        """Let a running autosave finish and collect it (closing, tests, benchmarks)."""
        if self._writing is not None:
            with contextlib.suppress(Exception):  # reported below
                self._writing.result(timeout)
        return self._collect()

    def _collect(self) -> list[str]:
        writing = self._writing
        if writing is None or not writing.done():
            return []
        self._writing = None
        error = writing.exception()
        if error is not None:
            if self._first_unsaved_at is None:  # try again after the longer wait
                self._first_unsaved_at = self._now()
            return [one_line(f"Autosave failed: {error}")]
        self._autosaved_edits = max(self._autosaved_edits, self._writing_edit)
        if not self.modified:  # saved while it was being written: nothing to recover
            self._recovery.remove(self._recovery.key)
        elif self._adopted is not None and self._writing_adopted == self._adopted:
            # (a write begun before the restore holds the document it replaced: not this work)
            self._recovery.remove(self._adopted)
            self._adopted = None
        return []

    # ------------------------------------------------------------------ recovery
    def orphaned_recoveries(self) -> list[Recovery]:
        """Autosaved work of editors that are no longer running, newest first."""
        return self._recovery.orphans()

    def restore(self, recovery: Recovery) -> Patch:
        """Load an orphaned recovery (PatchError if it does not load). Set it as the document
        with `set_document(patch, recovery.original, unsaved=True)`; the orphan is removed once
        this editor's own autosave holds the work."""
        original = recovery.original
        # Relative file names resolve where the original is, not in the state folder.
        patch = load_patch(recovery.patch_file, original.parent if original else Path.cwd())
        if original is None:
            patch.folder = None
        self._adopted = recovery.key
        return patch

    def discard(self, recoveries: Iterable[Recovery]) -> None:
        """Delete orphaned recoveries the person declined."""
        for recovery in recoveries:
            if recovery.key in self._recovery.held:
                self._recovery.remove(recovery.key)

    def release(self, recoveries: Iterable[Recovery]) -> None:
        """Leave these orphans for a later start (not chosen, not declined)."""
        for recovery in recoveries:
            if recovery.key != self._adopted:
                self._recovery.release(recovery.key)

    # ------------------------------------------------------------------ clipboard
    def fragment(self, node_ids: Iterable[str], source: Patch | None = None) -> Patch:
        """A new patch holding these nodes of `source` (the document, or one of its bodies) and
        the links among them."""
        source = self.patch if source is None else source
        piece = Patch()
        piece.folder = self.patch.folder  # relative file names keep their meaning
        wanted = set(node_ids)
        used = [str(source.nodes[n].values["definition"]) for n in wanted
                if n in source.nodes and source.nodes[n].type_id == "subpatch"]  # fmt: skip
        for name in definitions_needed(source.document, used):  # what the instances follow
            piece.add_definition(name, source.definition(name).copy())
        for inst in source.nodes.values():
            if inst.id in wanted:
                piece.add_node(inst.type_id, dict(inst.values), inst.pos, node_id=inst.id)
        for link in source.links:
            if link.src in wanted and link.dst in wanted:
                piece.connect(*link)
        return piece

    def definitions_to_add(self, piece: Patch) -> list[tuple[str, Patch]]:
        """The definitions of `piece` (a fragment, a paste) the document lacks, each needed one
        before those using it, as (name, copy of the body); same-named ones the document has
        are used as they are."""
        document = self.patch
        names = definitions_needed(piece, list(piece.definitions))
        return [(n, piece.definition(n).copy()) for n in names if n not in document.definitions]

    def copy(self, node_ids: Iterable[str], source: Patch | None = None) -> str:
        """Keep these nodes as the session's clipboard; returns the text for the system
        clipboard: the fragment as a patch document, or "" when it holds large arrays (they need
        a sidecar file: such a copy pastes in this editor only)."""
        self._clipboard = self.fragment(node_ids, source)
        try:
            return json.dumps(patch_to_dict(self._clipboard), sort_keys=True)
        except ValueError:
            return ""

    def to_paste(self, clipboard_text: str) -> Patch | None:
        """What to paste: the patch document on the system clipboard (copied in any editor), else,
        when the clipboard holds no JSON object (nothing, or plain text), this session's last
        copy. Clipboard text is read as a file is, with the same checks and limits: one that
        fails them raises PatchFileError (one line) and nothing is pasted."""
        if not clipboard_text.lstrip().startswith("{"):
            return self._clipboard
        return patch_from_text(clipboard_text, "clipboard")

    def placed_copy(
        self, piece: Patch, target: Patch | None = None
    ) -> tuple[list[NodePlacement], list[Link]]:
        """The nodes and links of `piece` with fresh ids in `target` (the document, or one of its
        bodies), offset so that the copy does not hide its original."""
        target = self.patch if target is None else target
        new_ids = {old: target.new_id(inst.type_id) for old, inst in piece.nodes.items()}
        nodes = [
            (
                new_ids[inst.id],
                inst.type_id,
                dict(inst.values),
                (inst.pos[0] + PASTE_OFFSET, inst.pos[1] + PASTE_OFFSET),
            )
            for inst in piece.nodes.values()
        ]
        links = [
            Link(new_ids[link.src], link.src_pin, new_ids[link.dst], link.dst_pin)
            for link in piece.links
        ]
        return nodes, links

    # ------------------------------------------------------------------ closing
    def close(self, *, keep_unsaved: bool = False) -> None:
        """A clean end: let a running autosave finish, then remove this editor's recovery.
        With `keep_unsaved` (ended by a signal: nobody was asked) unsaved work is autosaved now
        and its recovery kept, so the next editor offers it back."""
        self._unsubscribe()
        keep = keep_unsaved and self.modified
        if keep:
            self.wait_for_autosave()
            if self._edits != self._autosaved_edits:
                self.autosave()
                self.wait_for_autosave()  # a write that fails leaves the last one standing
        self._writer.shutdown(wait=True)
        self._writing = None
        self._recovery.close(keep_own=keep)


def definitions_needed(document: Patch, names: Iterable[str]) -> list[str]:
    """The definitions `names` and those their bodies use, at any depth, each after the ones
    it uses."""
    order: list[str] = []

    def visit(name: str) -> None:
        if name in order or name not in document.definitions:
            return
        order.append(name)  # first: a cycle (refused by the Patch anyway) cannot recurse
        body = document.definition(name)
        for inst in body.nodes.values():
            if inst.type_id == "subpatch":
                visit(str(inst.values["definition"]))
        order.remove(name)
        order.append(name)

    for name in names:
        visit(name)
    return order
