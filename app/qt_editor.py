"""The editor window: canvas, node library, inspector, preview, status bar, files and frame loop.

The window owns the Patch being edited, the one undo stack every gesture goes to, and the
DualEvaluator that runs the patch. A 60 fps timer calls `run_frame`; node colours, the preview and
the inspector's status follow a few times per second, the status bar twice per second, so a large
patch spends its frame time evaluating rather than repainting.

Files: New / Open / Open Recent / Save / Save As, with a prompt before unsaved changes are lost.
A file that does not load is reported with its one-line reason and the current patch stays. Every
30 s an edited patch is written to a recovery file in the state folder; a clean close removes it,
so finding one at start means the last session ended abnormally and the editor offers it back.

Dialogs go through the `ask_*` / `report_error` methods so that tests can answer them.
Frozen exports (`meta["frozen"]`) open read-only, with a banner.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QStandardPaths, Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QUndoStack
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from app.qt_canvas import QtPatchCanvas
from app.qt_commands import AddNodesCommand, NodeRecord, RemoveNodesCommand, SetValueCommand
from app.qt_export import export_frozen_dialog
from app.qt_inspector import QtInspector
from app.qt_library import QtLibraryPanel
from app.qt_preview import QtPreview
from evaluators import DualEvaluator
from nodes import (
    Link,
    Patch,
    PatchError,
    PatchEvent,
    load_patch,
    patch_from_dict,
    patch_to_dict,
    save_patch,
)

FRAME_INTERVAL_MS = 16
DECORATE_EVERY = 6  # frames between node colour / preview updates (10 per second at 60 fps)
STATUS_EVERY_S = 0.5
AUTOSAVE_MS = 30_000
MAX_RECENT = 8
PASTE_OFFSET = 40.0
FILE_FILTER = "patchbay patches (*.patchbay);;All files (*)"


def default_state_dir() -> Path:
    """Where recent files and the recovery file live."""
    base = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.AppDataLocation)
    return Path(base or Path.home() / ".patchbay")


class QtEditorWindow(QMainWindow):
    """The patchbay editor."""

    def __init__(self, state_dir: Path | None = None) -> None:
        super().__init__()
        self.state_dir = Path(state_dir) if state_dir else default_state_dir()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.recovery_path = self.state_dir / "recovery.patchbay"
        self.undo_stack = QUndoStack(self)
        self.canvas = QtPatchCanvas(self.undo_stack)
        self.inspector = QtInspector()
        self.preview = QtPreview()
        self.library = QtLibraryPanel()
        self.patch = Patch()
        self.path: Path | None = None
        self.evaluator: Any = None
        self._unsubscribe: Any = None
        self._restored_unsaved = False
        self._clipboard: Patch | None = None
        self._frame = 0
        self._paused = False
        self._time_offset = 0.0
        self._paused_at = 0.0
        self._clock_start = time.perf_counter()
        self._fps_frames = 0
        self._fps_since = time.perf_counter()
        self._fps = 0.0

        self._build_layout()
        self._build_status_bar()
        self._build_actions()
        self.canvas.refused.connect(self._on_refused)
        self.canvas.selection_changed.connect(self._on_selection)
        self.inspector.value_edited.connect(self._on_value_edited)
        self.library.create_requested.connect(self._create_at_center)
        self.undo_stack.cleanChanged.connect(lambda _clean: self._update_title())

        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(FRAME_INTERVAL_MS)
        self._timer.timeout.connect(self.tick)
        self._autosave = QTimer(self)
        self._autosave.setInterval(AUTOSAVE_MS)
        self._autosave.timeout.connect(self.autosave)
        self.set_patch(Patch(), None)
        self._timer.start()
        self._autosave.start()

    # ------------------------------------------------------------------ layout
    def _build_layout(self) -> None:
        self.banner = QLabel()
        self.banner.setStyleSheet("background: #6a4b00; color: white; padding: 4px;")
        self.banner.hide()
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.banner)
        layout.addWidget(self.canvas.widget, 1)
        self.setCentralWidget(central)
        for title, widget, area in (
            ("Library", self.library, Qt.DockWidgetArea.LeftDockWidgetArea),
            ("Inspector", self.inspector, Qt.DockWidgetArea.RightDockWidgetArea),
            ("Preview", self.preview, Qt.DockWidgetArea.RightDockWidgetArea),
        ):
            scroll = QScrollArea()
            scroll.setWidgetResizable(True)
            scroll.setWidget(widget)
            dock = QDockWidget(title, self)
            dock.setObjectName(title)
            dock.setMinimumWidth(280)
            dock.setWidget(scroll)
            self.addDockWidget(area, dock)
        self.resize(1400, 850)

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        self.status_labels: dict[str, QLabel] = {}
        for key in ("mode", "fps", "frame", "build", "nodes"):
            label = QLabel()
            label.setMinimumWidth(90)
            bar.addPermanentWidget(label)
            self.status_labels[key] = label

    def _action(self, menu: Any, text: str, slot: Any, *shortcuts: Any) -> QAction:
        action = QAction(text, self)
        if shortcuts:
            action.setShortcuts([QKeySequence(s) for s in shortcuts])
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        return action

    def _build_actions(self) -> None:
        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        self._action(file_menu, "&New", self.new_patch, QKeySequence.StandardKey.New)
        self._action(file_menu, "&Open…", self.open_dialog, QKeySequence.StandardKey.Open)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self.save_action = self._action(
            file_menu, "&Save", self.save, QKeySequence.StandardKey.Save
        )
        self._action(file_menu, "Save &As…", self.save_as, "Ctrl+Shift+S")
        self._action(file_menu, "Export &Frozen…", self.export_frozen, "Ctrl+E")
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)

        edit = menu.addMenu("&Edit")
        undo = self.undo_stack.createUndoAction(self, "&Undo")
        undo.setShortcuts([QKeySequence("Ctrl+Z")])
        redo = self.undo_stack.createRedoAction(self, "&Redo")
        redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        edit.addActions([undo, redo])
        edit.addSeparator()
        self.edit_actions = [
            self._action(edit, "&Copy", self.copy_selection, "Ctrl+C"),
            self._action(edit, "&Paste", self.paste, "Ctrl+V"),
            self._action(edit, "&Duplicate", self.duplicate_selection, "Ctrl+D"),
            self._action(edit, "De&lete", self.delete_selection, "Delete", "Backspace"),
            undo,
            redo,
        ]
        self._action(edit, "Select &All", self.select_all, "Ctrl+A")
        self._action(edit, "New node (Tab search)", self.canvas.open_tab_search)

        view = menu.addMenu("&View")
        self._action(view, "&Frame selection", self.frame_selection, "F")
        self._action(view, "Frame &all", lambda: self.canvas.frame(None), "Home")
        self.pause_action = self._action(view, "&Pause / resume", self.toggle_pause, "Space")

    # ------------------------------------------------------------------ the patch
    def set_patch(self, patch: Patch, path: Path | None) -> None:
        """Edit `patch` from now on (the undo history starts over)."""
        if self.evaluator is not None:
            self.evaluator.close()
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.undo_stack.clear()
        self.patch, self.path = patch, path
        self._restored_unsaved = False
        self.canvas.set_patch(patch)
        self.evaluator = DualEvaluator(patch)
        self._unsubscribe = patch.subscribe(self._on_patch_event)
        self.inspector.set_node(None, None)
        self.preview.set_outputs(None, [])
        read_only = patch.frozen
        self.banner.setVisible(read_only)
        self.banner.setText("Frozen export: read-only. Open the source patch to edit.")
        self.canvas.viewer().setInteractive(not read_only)
        self.inspector.setEnabled(not read_only)
        self.library.setEnabled(not read_only)
        self.save_action.setEnabled(not read_only)
        for action in self.edit_actions:
            action.setEnabled(not read_only)
        self.undo_stack.setClean()
        self._update_title()
        self._update_status()
        self.canvas.frame(None)

    @property
    def modified(self) -> bool:
        return self._restored_unsaved or not self.undo_stack.isClean()

    def _update_title(self) -> None:
        name = self.path.name if self.path else "untitled"
        self.setWindowTitle(f"{name}{' *' if self.modified else ''} — patchbay")

    def _on_patch_event(self, event: PatchEvent) -> None:
        node_id = self.inspector.node_id
        if node_id is None:
            return
        touches = event.node_id == node_id or (
            event.link is not None and node_id in (event.link.src, event.link.dst)
        )
        if touches:
            self.inspector.refresh_values()
        if event.op == "remove_node" and event.node_id == node_id:
            self._on_selection([])

    # ------------------------------------------------------------------ files
    def new_patch(self) -> bool:
        if not self.maybe_save_changes():
            return False
        self.set_patch(Patch(), None)
        return True

    def open_dialog(self) -> bool:
        path = self.ask_open_path()
        return self.open_path(path) if path else False

    def open_path(self, path: str | Path, *, ask: bool = True) -> bool:
        """Open a patch file; a bad file is reported and the current patch stays."""
        if ask and not self.maybe_save_changes():
            return False
        try:
            patch = load_patch(path)
        except PatchError as error:
            self.report_error(str(error))
            return False
        self.set_patch(patch, Path(path))
        self._remember_recent(Path(path))
        return True

    def save(self) -> bool:
        if self.path is None:
            return self.save_as()
        return self._write(self.path)

    def save_as(self) -> bool:
        path = self.ask_save_path()
        if not path:
            return False
        path = Path(path)
        if not path.suffix:
            path = path.with_suffix(".patchbay")
        if not self._write(path):
            return False
        self.path = path
        self._remember_recent(path)
        self._update_title()
        return True

    def export_frozen(self) -> None:
        """File > Export Frozen…: the live patch as a frozen runtime patch (see app.qt_export)."""
        export_frozen_dialog(
            self, self.patch, self.path, saved=not self.modified, report_error=self.report_error
        )

    def _write(self, path: Path) -> bool:
        try:
            save_patch(self.patch, path)
        except (OSError, ValueError) as error:
            self.report_error(f"{path}: cannot save: {error}")
            return False
        self._restored_unsaved = False
        self.undo_stack.setClean()
        self._discard_recovery()
        self._update_title()
        self.statusBar().showMessage(f"Saved {path}", 3000)
        return True

    def maybe_save_changes(self) -> bool:
        """True when it is fine to drop the current patch (saved, discarded or unchanged)."""
        if not self.modified:
            return True
        answer = self.ask_unsaved()
        if answer == "save":
            return self.save()
        return answer == "discard"

    def recent_files(self) -> list[str]:
        try:
            recent = json.loads((self.state_dir / "recent.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return [p for p in recent if isinstance(p, str)] if isinstance(recent, list) else []

    def _remember_recent(self, path: Path) -> None:
        entry = str(path.resolve())
        recent = [entry, *[p for p in self.recent_files() if p != entry]][:MAX_RECENT]
        (self.state_dir / "recent.json").write_text(json.dumps(recent, indent=1), "utf-8")

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        for entry in self.recent_files():
            action = self.recent_menu.addAction(entry)
            action.triggered.connect(lambda _checked=False, p=entry: self.open_path(p))
        self.recent_menu.setEnabled(bool(self.recent_files()))

    # ------------------------------------------------------------------ recovery
    def autosave(self) -> None:
        """Write the patch to the recovery file if it has unsaved changes."""
        if not self.modified:
            return
        try:
            save_patch(self.patch, self.recovery_path)
            info = {"path": str(self.path) if self.path else None}
            (self.state_dir / "recovery.json").write_text(json.dumps(info), "utf-8")
        except (OSError, ValueError) as error:
            self.statusBar().showMessage(f"Autosave failed: {error}", 5000)

    def _discard_recovery(self) -> None:
        for name in ("recovery.patchbay", "recovery.patchbay.npz", "recovery.json"):
            (self.state_dir / name).unlink(missing_ok=True)

    def offer_recovery(self) -> bool:
        """If the last session left a recovery file, offer to restore it; True if restored."""
        if not self.recovery_path.exists():
            return False
        restored = False
        if self.ask_restore():
            try:
                patch = load_patch(self.recovery_path)
            except PatchError as error:
                self.report_error(str(error))
            else:
                try:
                    info = json.loads((self.state_dir / "recovery.json").read_text("utf-8"))
                except (OSError, ValueError):
                    info = {}
                original = info.get("path") if isinstance(info, dict) else None
                self.set_patch(patch, Path(original) if original else None)
                self._restored_unsaved = True
                self._update_title()
                restored = True
        if not restored:
            self._discard_recovery()
        return restored

    # ------------------------------------------------------------------ dialogs (tests replace)
    def ask_unsaved(self) -> str:
        """'save', 'discard' or 'cancel'."""
        buttons = QMessageBox.StandardButton
        answer = QMessageBox.question(
            self,
            "Unsaved changes",
            f"Save the changes to {self.path.name if self.path else 'untitled'}?",
            buttons.Save | buttons.Discard | buttons.Cancel,
        )
        return {buttons.Save: "save", buttons.Discard: "discard"}.get(answer, "cancel")

    def ask_open_path(self) -> str | None:
        path, _ = QFileDialog.getOpenFileName(self, "Open patch", "", FILE_FILTER)
        return path or None

    def ask_save_path(self) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, "Save patch", "", FILE_FILTER)
        return path or None

    def ask_restore(self) -> bool:
        answer = QMessageBox.question(
            self,
            "Recover unsaved work",
            "The last session ended without saving. Restore its autosaved patch?",
        )
        return answer == QMessageBox.StandardButton.Yes

    def report_error(self, message: str) -> None:
        self.statusBar().showMessage(message, 10000)
        QMessageBox.warning(self, "patchbay", message)

    # ------------------------------------------------------------------ editing
    def _on_refused(self, reason: str) -> None:
        self.statusBar().showMessage(f"Refused: {reason}", 8000)

    def _on_value_edited(self, node_id: str, pin: str, value: Any, gesture: Any) -> None:
        command = SetValueCommand(self.patch, node_id, pin, value, gesture)
        try:
            command.apply()
        except PatchError as error:
            self._on_refused(str(error))
            self.inspector.refresh_values()
            return
        self.undo_stack.push(command)

    def _create_at_center(self, type_id: str) -> None:
        x, y = self.canvas.view_center()
        node_id = self.canvas.create_node(type_id, (x - 80.0, y - 30.0))
        if node_id is not None:
            self.canvas.select([node_id])

    def _copy_of(self, node_ids: list[str]) -> Patch:
        """A new patch holding these nodes and the links among them."""
        piece = Patch()
        wanted = set(node_ids)
        for inst in self.patch.nodes.values():
            if inst.id in wanted:
                piece.add_node(inst.type_id, dict(inst.values), inst.pos, node_id=inst.id)
        for link in self.patch.links:
            if link.src in wanted and link.dst in wanted:
                piece.connect(*link)
        return piece

    def _insert(self, piece: Patch, text: str) -> None:
        """Add a copy of `piece` with fresh ids, offset, as one undo step; select it."""
        new_ids = {old: self.patch.new_id(inst.type_id) for old, inst in piece.nodes.items()}
        records = [
            NodeRecord(
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
        if records:
            self.undo_stack.push(AddNodesCommand(self.patch, records, links, text))
            self.canvas.select(new_ids.values())

    def copy_selection(self) -> None:
        ids = self.canvas.selected_ids()
        if not ids:
            return
        self._clipboard = self._copy_of(ids)
        try:
            text = json.dumps(patch_to_dict(self._clipboard), sort_keys=True)
        except ValueError:  # large arrays need a sidecar file: paste within this window only
            return
        QApplication.clipboard().setText(text)

    def paste(self) -> None:
        piece = self._clipboard  # unless the system clipboard holds a patch
        with contextlib.suppress(ValueError, PatchError):
            piece = patch_from_dict(json.loads(QApplication.clipboard().text()), "clipboard")
        if piece is not None:
            self._insert(piece, "paste")

    def duplicate_selection(self) -> None:
        ids = self.canvas.selected_ids()
        if ids:
            self._insert(self._copy_of(ids), "duplicate")

    def delete_selection(self) -> None:
        ids = self.canvas.selected_ids()
        if ids:
            self.undo_stack.push(RemoveNodesCommand(self.patch, ids))

    def select_all(self) -> None:
        self.canvas.select(list(self.patch.nodes))

    def frame_selection(self) -> None:
        self.canvas.frame(self.canvas.selected_ids())

    def _on_selection(self, node_ids: list[str]) -> None:
        node_id = node_ids[0] if len(node_ids) == 1 else None
        if node_id is not None and node_id not in self.patch.nodes:
            node_id = None
        self.inspector.set_node(self.patch if node_id else None, node_id)
        outputs = [o.name for o in self.patch.nodes[node_id].spec.outputs] if node_id else []
        self.preview.set_outputs(node_id, outputs)
        self.evaluator.watch([node_id] if node_id else [])
        self._show_node_state()

    # ------------------------------------------------------------------ frame loop
    def toggle_pause(self) -> None:
        now = time.perf_counter()
        if self._paused:
            self._time_offset += now - self._paused_at
        else:
            self._paused_at = now
        self._paused = not self._paused
        self._update_status()

    @property
    def paused(self) -> bool:
        return self._paused

    def clock(self) -> float:
        """Seconds of patch time: wall time since start, minus the time spent paused."""
        now = self._paused_at if self._paused else time.perf_counter()
        return now - self._clock_start - self._time_offset

    def tick(self) -> None:
        """Run one frame (unless paused) and refresh what shows its results."""
        if self._paused:
            return
        self.evaluator.run_frame(self.clock(), self._frame)
        self._frame += 1
        self._fps_frames += 1
        if self._frame % DECORATE_EVERY == 0:
            self.decorate_nodes()
            self._show_node_state()
        now = time.perf_counter()
        if now - self._fps_since >= STATUS_EVERY_S:
            self._fps = self._fps_frames / (now - self._fps_since)
            self._fps_frames, self._fps_since = 0, now
            self._update_status()

    def decorate_nodes(self) -> None:
        ev = self.evaluator
        for node_id in self.patch.nodes:
            self.canvas.decorate(node_id, ev.node_class(node_id), ev.status(node_id),
                                 ev.error(node_id))  # fmt: skip

    def _show_node_state(self) -> None:
        node_id = self.preview.node_id
        if node_id is None or node_id not in self.patch.nodes:
            return
        ev = self.evaluator
        self.inspector.set_state(ev.node_class(node_id), ev.status(node_id), ev.error(node_id))
        outputs = self.patch.nodes[node_id].spec.outputs
        self.preview.show_values({o.name: ev.output(node_id, o.name) for o in outputs})

    def _update_status(self) -> None:
        ev = self.evaluator
        labels = self.status_labels
        labels["mode"].setText(f"{ev.mode}{' · paused' if self._paused else ''}")
        labels["fps"].setText(f"{self._fps:.0f} fps")
        labels["frame"].setText(f"frame {ev.last_frame_seconds * 1000:.2f} ms")
        build = ev.last_build_seconds
        labels["build"].setText(f"build {build * 1000:.1f} ms" if build else "build —")
        labels["nodes"].setText(f"{len(self.patch.nodes)} nodes")

    # ------------------------------------------------------------------ closing
    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.maybe_save_changes():
            event.ignore()
            return
        self._timer.stop()
        self._autosave.stop()
        self.evaluator.close()
        self._discard_recovery()
        event.accept()
