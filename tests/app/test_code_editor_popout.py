"""The GLSL editor pops out of the inspector into a resizable window of its own and back, through
real clicks and keys: edits there are applied as one undo step each, Ctrl+Z there undoes the
document, and Dock Back (or closing the window) puts the same editor back in the inspector."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.qt.panels.code_editor import QtCodeField
from nodes.library.gpu.sources import DEFAULT_SHADER
from tests.app.test_qt_code_editor import shader_patch

CTRL = Qt.KeyboardModifier.ControlModifier


def shader_field(editor, ui, qtbot) -> QtCodeField:
    ui.show_patch(editor, shader_patch())
    editor.canvas.select(["shader"])
    field = editor.inspector.pin_widget("source")
    assert isinstance(field, QtCodeField)
    qtbot.waitUntil(field.isVisible)  # the inspector shows its new rows at its next turn
    return field


def test_the_glsl_editor_pops_out_into_its_own_window_and_back(editor, ui, qtbot):
    field = shader_field(editor, ui, qtbot)
    narrow = field.editor.width()
    qtbot.mouseClick(field.pop_out_button, Qt.MouseButton.LeftButton)
    popup = field.popup
    assert popup is not None
    qtbot.waitExposed(popup)
    assert field.editor.window() is popup and popup.isWindow()
    assert field.popped_note.isVisible()  # the inspector says where the editor went
    popup.resize(1000, 700)
    qtbot.waitUntil(lambda: field.editor.width() > max(narrow, 800))
    popup.activateWindow()
    qtbot.waitUntil(popup.isActiveWindow)
    field.editor.setFocus()
    qtbot.waitUntil(field.editor.hasFocus)

    steps = editor.undo_stack.count()
    QTest.keyClick(field.editor, Qt.Key.Key_End, CTRL)
    QTest.keyClicks(field.editor, "// wider")
    QTest.keyClick(field.editor, Qt.Key.Key_Return, CTRL)  # applies, one step
    assert editor.patch.value("shader", "source") == DEFAULT_SHADER + "// wider"
    assert editor.undo_stack.count() == steps + 1
    shots = os.environ.get("PATCHBAY_SHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        popup.grab().save(str(Path(shots) / "stagewin-glsl-popout.png"))
        editor.grab().save(str(Path(shots) / "stagewin-glsl-popout-inspector.png"))
    QTest.keyClick(field.editor, Qt.Key.Key_Z, CTRL)  # nothing typed: the document's undo
    assert editor.patch.value("shader", "source") == DEFAULT_SHADER
    assert field.text == DEFAULT_SHADER

    qtbot.mouseClick(popup.dock_back_button, Qt.MouseButton.LeftButton)
    assert field.popup is None and not popup.isVisible()
    assert field.editor.window() is editor and field.editor.isVisible()
    assert not field.popped_note.isVisible()


def test_closing_the_pop_out_window_docks_the_editor_back(editor, ui, qtbot):
    field = shader_field(editor, ui, qtbot)
    qtbot.mouseClick(field.pop_out_button, Qt.MouseButton.LeftButton)
    popup = field.popup
    qtbot.waitExposed(popup)
    popup.close()  # its title bar's close button
    assert field.popup is None
    assert field.editor.window() is editor and field.editor.isVisible()
    qtbot.mouseClick(field.pop_out_button, Qt.MouseButton.LeftButton)  # and out again
    assert field.popup is not None and field.editor.window() is field.popup
