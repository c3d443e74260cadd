"""Keyboard focus rules of the editor window: which keys act on the canvas, which on a field.

* Canvas shortcuts (Delete, copy, paste, ...) act only while the canvas has the focus
  (`canvas_only`): Delete or Backspace in the library filter or an inspector field edits that
  field, never the patch.
* Ctrl+Z / Ctrl+Shift+Z work from any field, as in desktop apps: a field with text typed and not
  yet applied undoes (or redoes) its own typing first; otherwise the key goes to the document's
  undo stack (`FieldUndoRouter`). Qt's line edits and spin boxes would otherwise take the key
  whether or not they have anything to undo, so the document's undo seemed to do nothing.

Assumes the document's Undo / Redo are window-wide QActions with the standard key sequences, and
that fields showing applied values get them through `setText` / `setValue`, which clears a line
edit's undo history and modified flag.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence
from PySide6.QtWidgets import QAbstractSpinBox, QApplication, QLineEdit, QWidget


def canvas_only(actions: Iterable[QAction], canvas: QWidget) -> None:
    """Make the shortcuts of `actions` act only while `canvas` (or a child) has the focus; the
    actions stay in their menus, where a click still runs them."""
    for action in actions:
        action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        canvas.addAction(action)


def has_unapplied_text(widget: QWidget | None, redo: bool = False) -> bool:
    """True if `widget` is a text or number field holding typing that is not applied yet and that
    its own undo (or redo) can take back."""
    if isinstance(widget, QAbstractSpinBox):
        edit = widget.findChild(QLineEdit)
        shown = widget.textFromValue(widget.value()) if hasattr(widget, "textFromValue") else None
        if edit is None or shown is None:
            return False
        typed = edit.isRedoAvailable() if redo else edit.isUndoAvailable()
        return typed and widget.cleanText() != shown
    if isinstance(widget, QLineEdit):
        available = widget.isRedoAvailable() if redo else widget.isUndoAvailable()
        return widget.isModified() and available
    return False


class FieldUndoRouter(QObject):
    """Lets Ctrl+Z / Ctrl+Shift+Z reach the document's undo stack from a field with nothing of
    its own to undo (install on the QApplication while the window is open)."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.ShortcutOverride or not isinstance(event, QKeyEvent):
            return False
        undo = event.matches(QKeySequence.StandardKey.Undo)
        redo = event.matches(QKeySequence.StandardKey.Redo) or _is_ctrl_shift_z(event)
        if not (undo or redo) or watched is not QApplication.focusWidget():
            return False
        if not isinstance(watched, (QLineEdit, QAbstractSpinBox)):
            return False
        # Typing not applied yet: the field undoes it. Else the event is taken here unaccepted,
        # so the window's Undo / Redo shortcut runs.
        return not has_unapplied_text(watched, redo=redo)


def _is_ctrl_shift_z(event: QKeyEvent) -> bool:
    mods = event.modifiers() & ~Qt.KeyboardModifier.KeypadModifier
    shift_ctrl = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    return event.key() == Qt.Key.Key_Z and mods == shift_ctrl
