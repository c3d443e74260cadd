"""The editor window's File actions: documents, files, recovery, settings and their dialogs.

`FileActions` is a controller the editor window (app.qt.window) owns as `file_actions`: New / Open /
Open Recent / Examples / Save / Save As / Export Frozen / Settings / Quit, the prompt before unsaved
changes are lost, attaching to what a running engine plays, the offer of autosaved work, and the
`ask_*` / `report_error` dialogs tests replace. The document and its file live in the window's
`EditorSession` (app.session.session); a saved file's new folder or name goes to the engine. A file
that does not load is reported with its one-line reason and the current patch stays. Autosave runs a
few seconds after the last edit, on the session's worker thread; at start the editor offers back
only the autosaved work of editors that are no longer running, also when it attaches to a running
engine (beside what the engine plays). Settings (app.qt.dialogs.settings; also a click on a
service's indicator) change the OSC port and host, the tempo and the MIDI options live (the engine
restarts only the service concerned), as one undo step; service statuses from the engine show in the
status bar, the open dialog and Messages.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMenu, QMessageBox

from app.engine.protocol.channel import patch_from_message
from app.engine.protocol.messages import DocumentPath, GetPatch, PatchDocument, Services
from app.qt.dialogs.export import export_frozen_dialog
from app.qt.dialogs.settings import QtSettingsDialog, SettingsChoice, SettingsCommand
from app.qt.panels.service_status import service_line
from app.session.node_examples import example_paths
from app.session.session import Recovery
from evaluators import ServiceStatus
from nodes import Patch, PatchError

if TYPE_CHECKING:
    from app.qt.window import QtEditorWindow

FILE_FILTER = "patchbay patches (*.patchbay);;All files (*)"
ATTACH_TIMEOUT_S = 30.0  # for the running engine's patch (a big one is tens of MB of blobs)


class FileActions:
    """The window's File menu and what it does (see the module note); owned by the window,
    whose session, engine and widgets it uses."""

    def __init__(self, window: QtEditorWindow) -> None:
        self.window = window
        self.settings_dialog: QtSettingsDialog | None = None

    def build_menu(self, file_menu: QMenu) -> None:
        """File: documents, examples, export, settings, quit."""
        self.window.add_action(file_menu, "&New", self.new_patch, QKeySequence.StandardKey.New)
        self.window.add_action(file_menu, "&Open…", self.open_dialog, QKeySequence.StandardKey.Open)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self.examples_menu = file_menu.addMenu("E&xamples")
        for path in example_paths():
            self.window.add_action(
                self.examples_menu, path.stem, lambda p=path: self.open_example(p)
            )
        self.save_action = self.window.add_action(
            file_menu, "&Save", self.save, QKeySequence.StandardKey.Save
        )
        self.window.add_action(file_menu, "Save &As…", self.save_as, "Ctrl+Shift+S")
        self.window.add_action(file_menu, "Export &Frozen…", self.export_frozen, "Ctrl+E")
        file_menu.addSeparator()
        self.window.add_action(file_menu, "Se&ttings…", self.open_settings, "Ctrl+,")
        file_menu.addSeparator()
        self.window.add_action(file_menu, "&Quit", self.window.close, QKeySequence.StandardKey.Quit)

    def new_patch(self) -> bool:
        if not self.maybe_save_changes():
            return False
        self.window.set_patch(Patch(), None)
        return True

    def open_dialog(self) -> bool:
        path = self.ask_open_path()
        return self.open_path(path) if path else False

    def open_path(self, path: str | Path, *, ask: bool = True, untitled: bool = False) -> bool:
        """Open a patch file; a bad file is reported and the current patch stays. `untitled`:
        as a new document that no file holds yet (an example), not a recent file."""
        if ask and not self.maybe_save_changes():
            return False
        try:
            patch = self.window.session.load(path)
        except PatchError as error:
            self.report_error(str(error))
            return False
        self.window.set_patch(patch, None if untitled else Path(path), from_file=True)
        if not untitled:
            self.window.session.remember_recent(Path(path))
        if not self.window.live_control.send_allowed:
            self.window.live_control.offer_allow_send()
        return True

    def open_example(self, path: Path) -> bool:
        """Open a bundled example patch as a new document no file holds yet (Save asks for a
        name), titled with the example's name ("noise_color (example)")."""
        if not self.open_path(path, untitled=True):
            return False
        self.name_untitled(f"{path.stem} (example)")
        self.window.canvas.frame(None)
        return True

    def name_untitled(self, name: str) -> None:
        """What the title calls the document until it is saved (an example, the demo)."""
        self.window.session.untitled_name = name
        self.window.update_title()

    def save(self) -> bool:
        if self.window.path is None:
            return self.save_as()
        return self._write(self.window.path)

    def save_as(self) -> bool:
        path = self.ask_save_path()
        if not path:
            return False
        path = Path(path)
        if not path.suffix:
            path = path.with_suffix(".patchbay")
        if not self._write(path):
            return False
        self.window.session.remember_recent(path)
        return True

    def export_frozen(self) -> None:
        """File > Export Frozen…: the live patch as a frozen runtime patch (see
        app.qt.dialogs.export)."""
        export_frozen_dialog(
            self.window,
            self.window.patch,
            self.window.path,
            saved=not self.window.modified,
            report_error=self.report_error,
        )

    def _write(self, path: Path) -> bool:
        folder = self.window.patch.folder
        problem = self.window.session.save(path)
        if problem is not None:
            self.report_error(problem)
            return False
        if self.window.patch.folder != folder:
            self.window.send_patch()  # the engine's copy resolves file names in the new folder too
        else:
            self.window.engine.send(DocumentPath(str(path)))
        self.window.undo_stack.setClean()
        self.window.update_title()
        self.window.statusBar().showMessage(f"Saved {path}", 3000)
        return True

    def maybe_save_changes(self) -> bool:
        """True when it is fine to drop the current patch (saved, discarded or unchanged)."""
        if not self.window.modified:
            return True
        answer = self.ask_unsaved()
        if answer == "save":
            return self.save()
        return answer == "discard"

    def recent_files(self) -> list[str]:
        return self.window.session.recent_files()

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        for entry in self.recent_files():
            action = self.recent_menu.addAction(entry)
            action.triggered.connect(lambda _checked=False, p=entry: self.open_path(p))
        self.recent_menu.setEnabled(bool(self.recent_files()))

    def autosave(self) -> None:
        """Start writing the patch to this editor's recovery file now (on the session's worker
        thread; edits normally trigger it, a few seconds after the last one)."""
        self.window.session.autosave()

    def poll_autosave(self) -> None:
        for message in self.window.session.poll():
            self.window.statusBar().showMessage(message, 8000)

    def offer_recovery(self, playing: str | None = None) -> bool:
        """If editors that are no longer running left autosaved work, offer to restore it
        (one of it); True if restored. `playing` describes what the engine plays when this
        editor attached to it: the offer shows it beside the autosaved work, and a restore
        replaces it. Declining removes what was offered; work that fails to load is never
        removed. This editor's own autosave has a file of its own: it never replaces what is
        offered."""
        offered = self.window.session.orphaned_recoveries()
        if not offered:
            return False
        chosen = self.ask_restore(offered, playing)
        if chosen is None:
            self.window.session.discard(offered)
            return False
        self.window.session.release(r for r in offered if r != chosen)  # offered again next time
        try:
            patch = self.window.session.restore(chosen)
        except PatchError as error:  # kept: offered again next time, and there to open by hand
            self.window.session.release([chosen])
            self.report_error(f"{error}; the autosaved work stays in {chosen.patch_file}")
            return False
        self.window.set_patch(patch, chosen.original, from_file=True)
        self.window.session.mark_unsaved()
        self.window.update_title()
        if not self.window.live_control.send_allowed:
            self.window.live_control.offer_allow_send()
        return True

    def attach(self, timeout: float = ATTACH_TIMEOUT_S) -> bool:
        """Take the running engine's patch as the document (an editor attaching to a show);
        False if it did not come within `timeout` seconds."""
        if not self.window.engine.send(GetPatch()):
            return False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for message, blobs in self.window.engine.poll():
                if isinstance(message, PatchDocument):
                    patch = patch_from_message(message, blobs)
                    where = Path(message.path) if message.path is not None else None
                    # Its osc.out nodes send once allowed here (as a file's: it may be one).
                    self.window.set_patch(patch, where, send=False, from_file=True)
                    self.window.session.mark_unsaved()  # what the engine plays may not be saved
                    self.window.update_title()
                    self.window.send_watch()
                    if not self.window.live_control.send_allowed:
                        self.window.live_control.offer_allow_send()
                    return True
            time.sleep(0.01)
        return False

    def ask_unsaved(self) -> str:
        """'save', 'discard' or 'cancel'."""
        buttons = QMessageBox.StandardButton
        answer = QMessageBox.question(
            self.window,
            "Unsaved changes",
            f"Save the changes to {self.window.path.name if self.window.path else 'untitled'}?",
            buttons.Save | buttons.Discard | buttons.Cancel,
        )
        return {buttons.Save: "save", buttons.Discard: "discard"}.get(answer, "cancel")

    def ask_open_path(self) -> str | None:
        path, _ = QFileDialog.getOpenFileName(self.window, "Open patch", "", FILE_FILTER)
        return path or None

    def ask_save_path(self) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self.window, "Save patch", "", FILE_FILTER)
        return path or None

    def ask_restore(
        self, recoveries: list[Recovery], playing: str | None = None
    ) -> Recovery | None:
        """Which autosaved work to restore (newest first), or None; `playing`: what the engine
        plays, shown beside it (see `offer_recovery`)."""
        plays = (
            f"\n\nThe engine plays {playing}. Restoring replaces it; declining keeps it."
            if playing is not None
            else ""
        )
        if len(recoveries) == 1:
            answer = QMessageBox.question(
                self.window,
                "Recover unsaved work",
                "An editor ended without saving. Restore its autosaved patch "
                f"({recoveries[0].describe()})?{plays}",
            )
            return recoveries[0] if answer == QMessageBox.StandardButton.Yes else None
        labels = [recovery.describe() for recovery in recoveries]
        label, accepted = QInputDialog.getItem(
            self.window,
            "Recover unsaved work",
            f"Editors ended without saving.{plays}\n\nRestore:",
            labels,
            0,
            False,
        )
        return recoveries[labels.index(label)] if accepted and label in labels else None

    def report_error(self, message: str) -> None:
        self.window.statusBar().showMessage(message, 10000)
        QMessageBox.warning(self.window, "patchbay", message)

    def open_settings(self) -> QtSettingsDialog:
        """File > Settings…: the dialog, open beside the window (app.qt.dialogs.settings)."""
        if self.settings_dialog is not None:
            self.settings_dialog.raise_()
            return self.settings_dialog
        statuses = {
            name: status
            for name in ("osc", "midi")
            if (status := self.window.service_status.status(name)) is not None
        }
        dialog = QtSettingsDialog(self.window.patch.settings, statuses, self.window)
        dialog.applied.connect(self.apply_settings)
        dialog.finished.connect(self._settings_closed)
        self.settings_dialog = dialog
        dialog.open()
        return dialog

    def _settings_closed(self) -> None:
        if self.settings_dialog is not None:
            self.settings_dialog.deleteLater()
        self.settings_dialog = None

    def apply_settings(self, choice: SettingsChoice) -> None:
        """The Settings dialog's changes: patch settings as one undo step (the engine hears of
        them as edits), the OSC host as the engine's own option."""
        if choice.settings:  # valid by the dialog's ranges: the push applies them
            self.window.undo_stack.push(
                SettingsCommand(self.window.patch, choice.settings, choice.previous)
            )
        if choice.osc_host is not None:
            self.window.send_edits()  # a port changed with it is restarted first
            self.window.engine.send(Services(choice.osc_host))
        self.window.statusBar().showMessage("Settings applied", 4000)

    def show_service(self, name: str, status: ServiceStatus) -> None:
        """A service's status: in its status-bar indicator and the open Settings dialog; in
        Messages when it is off, or works again after being off."""
        before = self.window.service_status.status(name)
        if not self.window.service_status.show_status(name, status):
            return
        if self.settings_dialog is not None:
            self.settings_dialog.show_status(name, status)
        recovered = status.state == "on" and before is not None and before.state == "off"
        if status.state == "off" or recovered:
            self.window.messages.add("service", service_line(name, status))
