"""The inspector's GLSL editor with a real GL compiler: a typed mistake, applied with Ctrl+Enter as
one undo step, fails the node with the driver's error, which the editor marks at its line while the
last good shader keeps rendering; Ctrl+Z puts the good source back and the mark goes. A screenshot
of the editor with its error marker is saved as tests/artifacts/shader_editor_error.png."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QTextCursor, QUndoStack
from PySide6.QtTest import QTest

from app.qt.commands import SetValueCommand
from app.qt.panels.code_editor import ERROR_LINE_COLOUR, ERROR_MARK_COLOUR, QtCodeField
from app.qt.panels.inspector import QtInspector
from evaluators.services.gl import GLService
from nodes import Patch
from tests.evaluator_kinds import evaluator_for_tests

ARTIFACT = Path(__file__).resolve().parents[1] / "artifacts" / "shader_editor_error.png"
CTRL = Qt.KeyboardModifier.ControlModifier
GOOD = """#version 330
in vec2 uv;
out vec4 fragColor;

uniform vec4 color = vec4(0.0, 1.0, 0.0, 1.0);

void main() {
    // a flat colour
    fragColor = color;
}
"""


class Editing:
    """A shader patch run on the GL service, edited in an inspector as the editor window does:
    each value edit one SetValueCommand on an undo stack."""

    def __init__(self, gl: GLService, qtbot: Any) -> None:
        self.gl = gl
        self.patch = Patch()
        self.patch.update_settings(resolution=[64, 64])
        self.patch.add_node("gpu.shader", {"source": GOOD}, node_id="shader")
        self.patch.add_node("gpu.output", None, node_id="output")
        self.patch.connect("shader", "out", "output", "in")
        self.evaluator = evaluator_for_tests("flat", self.patch, gpu=gl)
        self.frame = 0
        self.stack = QUndoStack()
        self.inspector = QtInspector()
        self.inspector.value_edited.connect(self._edited)
        self.patch.subscribe(lambda _event: self.inspector.refresh_values())
        qtbot.addWidget(self.inspector)
        self.inspector.resize(460, 720)
        self.inspector.set_node(self.patch, "shader")
        self.inspector.show()
        qtbot.waitExposed(self.inspector)

    def _edited(self, node_id: str, pin: str, value: Any, gesture: Any) -> None:
        command = SetValueCommand(self.patch, node_id, pin, value, gesture)
        command.apply()
        self.stack.push(command)

    def run(self) -> None:
        """One frame, then the node's state in the inspector (as the editor's refresh does)."""
        with self.gl.frame():
            self.evaluator.run_frame(self.frame / 60.0, self.frame)
        self.frame += 1
        ev = self.evaluator
        self.inspector.set_state(str(ev.node_class("shader")), str(ev.status("shader")),
                                 ev.error("shader"))  # fmt: skip

    def pixel(self) -> tuple[int, ...]:
        return tuple(int(v) for v in self.gl.readback(self.evaluator.output("shader"))[0, 0])

    def close(self) -> None:
        self.evaluator.close()
        self.evaluator.ctx.release_all()


@pytest.fixture
def editing(gl: GLService, qtbot: Any) -> Iterator[Editing]:
    made = Editing(gl, qtbot)
    yield made
    made.close()


def colour_at(image: Any, x: int, y: int) -> QColor:
    return QColor(image.pixel(x, y))


def test_a_compile_error_is_marked_at_its_line_and_undo_restores(editing: Editing, qtbot) -> None:
    editing.run()
    assert editing.evaluator.status("shader") == "ok" and editing.pixel() == (0, 255, 0, 255)
    field = editing.inspector.pin_widget("source")
    assert isinstance(field, QtCodeField)
    editor = field.editor
    editor.setFocus()
    qtbot.waitUntil(editor.hasFocus)

    # type a mistake at the end of line 9 (`fragColor = color;` loses its semicolon)
    cursor = editor.textCursor()
    cursor.setPosition(editor.document().findBlockByNumber(8).position())
    cursor.movePosition(QTextCursor.MoveOperation.EndOfBlock)
    editor.setTextCursor(cursor)
    QTest.keyClick(editor, Qt.Key.Key_Backspace)
    QTest.keyClicks(editor, " * 0.5")
    QTest.keyClick(editor, Qt.Key.Key_Return, CTRL)
    assert editing.stack.count() == 1
    assert "fragColor = color * 0.5\n" in editing.patch.value("shader", "source")

    editing.patch.set_value("shader", "color", (1.0, 0.0, 0.0, 1.0))
    editing.run()
    error = editing.evaluator.error("shader")
    assert editing.evaluator.status("shader") == "failed"
    assert error is not None and error.startswith("ShaderError: line 10"), error  # the `}`
    assert editor.error_line == 10
    assert field.message.text().startswith("line 10")
    assert editing.pixel() == (255, 0, 0, 255)  # the last good shader runs, new colour and all

    # the marker, as drawn in the inspector: the line's band and the gutter's dot
    shown = editing.inspector
    shown.layout().activate()  # the error label just appeared: lay it out before the picture
    image = shown.grab().toImage()
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    assert image.save(str(ARTIFACT))
    rect = editor.cursorRect(QTextCursor(editor.document().findBlockByNumber(9)))
    top_left = editor.viewport().mapTo(shown, rect.topLeft())
    middle_y = top_left.y() + rect.height() // 2
    band_x = editor.viewport().mapTo(shown, editor.viewport().rect().topRight()).x() - 20
    band = colour_at(image, band_x, middle_y)
    assert band == ERROR_LINE_COLOUR, band.name()
    gutter_left = editor.mapTo(shown, editor.contentsRect().topLeft()).x()
    dots = [colour_at(image, gutter_left + x, middle_y) for x in range(2, 16)]
    assert ERROR_MARK_COLOUR in dots, [c.name() for c in dots]
    other_y = middle_y - 3 * rect.height()  # line 7: no band, no dot
    assert colour_at(image, band_x, other_y) != ERROR_LINE_COLOUR
    assert ERROR_MARK_COLOUR not in [colour_at(image, gutter_left + x, other_y) for x in range(16)]

    # Ctrl+Z in the editor: nothing typed is pending, so the document's Undo action acts
    action = editing.stack.createUndoAction(field)
    action.setShortcut("Ctrl+Z")
    action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
    field.addAction(action)
    QTest.keyClick(editor, Qt.Key.Key_Z, CTRL)
    assert editing.patch.value("shader", "source") == GOOD
    assert field.text == GOOD
    editing.run()
    assert editing.evaluator.status("shader") == "ok"
    assert editor.error_line is None and field.message.text() == ""
    assert editing.pixel() == (255, 0, 0, 255)
    assert editing.stack.index() == 0
