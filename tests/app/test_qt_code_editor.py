"""The GLSL editor of `code` pins in the editor window, driven by real key events: Ctrl+Enter and a
pause in typing each apply once as one undo step, Ctrl+Z undoes typing not yet applied in the text
and an applied edit in the document, the editor survives a rebuild of the inspector (a new
uniform pin), and selecting another node applies what was typed. Compile errors at their line, with
a real GL compiler, are in tests/gl/test_code_editor_gl.py."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtTest import QTest

from app.qt.panels.code_editor import APPLY_PAUSE_MS, GLSLHighlighter, QtCodeField
from app.qt.support.fonts import MONOSPACE_FAMILY
from nodes import Patch
from nodes.library.gpu.sources import DEFAULT_SHADER

CTRL = Qt.KeyboardModifier.ControlModifier


def shader_patch() -> Patch:
    patch = Patch()
    patch.add_node("gpu.shader", None, (0.0, 0.0), node_id="shader")
    patch.add_node("input.float", None, (0.0, 200.0), node_id="knob")
    return patch


def code_field(editor, ui, qtbot) -> QtCodeField:
    ui.show_patch(editor, shader_patch())
    editor.canvas.select(["shader"])
    field = editor.inspector.pin_widget("source")
    assert isinstance(field, QtCodeField)
    editor.activateWindow()
    field.editor.setFocus()
    qtbot.waitUntil(field.editor.hasFocus)
    return field


def type_at_end(field: QtCodeField, text: str) -> None:
    QTest.keyClick(field.editor, Qt.Key.Key_End, CTRL)
    QTest.keyClicks(field.editor, text)


def test_the_source_pin_is_a_multiline_monospace_editor_with_the_shader(editor, ui, qtbot):
    field = code_field(editor, ui, qtbot)
    assert field.text == DEFAULT_SHADER
    metrics = field.editor.fontMetrics()  # monospace as a user sees it: equal advances
    assert metrics.horizontalAdvance("i") == metrics.horizontalAdvance("W") > 0
    assert metrics.horizontalAdvance(".") == metrics.horizontalAdvance("W")
    assert field.editor.fontInfo().family() == MONOSPACE_FAMILY  # the bundled font, everywhere
    assert field.editor.blockCount() == DEFAULT_SHADER.count("\n") + 1
    assert isinstance(field.editor.highlighter, GLSLHighlighter)
    assert field.editor.gutter_width() > 0 and field.editor.viewportMargins().left() > 0


def test_typing_then_ctrl_enter_applies_once_as_one_undo_step(editor, ui, qtbot):
    field = code_field(editor, ui, qtbot)
    type_at_end(field, "// brighter")
    assert editor.patch.value("shader", "source") == DEFAULT_SHADER  # not yet
    QTest.keyClick(field.editor, Qt.Key.Key_Return, CTRL)
    assert editor.patch.value("shader", "source") == DEFAULT_SHADER + "// brighter"
    assert editor.undo_stack.count() == 1
    assert field.text == DEFAULT_SHADER + "// brighter"  # no newline typed by Ctrl+Enter
    qtbot.wait(APPLY_PAUSE_MS + 300)  # the pause timer must not apply it a second time
    assert editor.undo_stack.count() == 1
    QTest.keyClick(field.editor, Qt.Key.Key_Z, CTRL)  # focus still in the editor
    assert editor.patch.value("shader", "source") == DEFAULT_SHADER
    assert field.text == DEFAULT_SHADER
    QTest.keyClick(field.editor, Qt.Key.Key_Z, CTRL | Qt.KeyboardModifier.ShiftModifier)
    assert editor.patch.value("shader", "source") == DEFAULT_SHADER + "// brighter"


def test_a_pause_in_typing_applies_the_edit(editor, ui, qtbot):
    field = code_field(editor, ui, qtbot)
    type_at_end(field, "// a")
    qtbot.waitUntil(lambda: editor.patch.value("shader", "source") == DEFAULT_SHADER + "// a")
    assert editor.undo_stack.count() == 1
    assert field.editor.hasFocus()


def test_ctrl_z_undoes_typing_not_yet_applied_in_the_text_first(editor, ui, qtbot):
    field = code_field(editor, ui, qtbot)
    type_at_end(field, "x")
    QTest.keyClick(field.editor, Qt.Key.Key_Z, CTRL)
    assert field.text == DEFAULT_SHADER
    assert editor.undo_stack.count() == 0
    qtbot.wait(APPLY_PAUSE_MS + 300)  # nothing to apply: the text is the document's again
    assert editor.undo_stack.count() == 0
    assert editor.patch.value("shader", "source") == DEFAULT_SHADER


def test_a_new_uniform_keeps_the_editor_its_focus_and_cursor(editor, ui, qtbot):
    field = code_field(editor, ui, qtbot)
    cursor = field.editor.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.Start)
    cursor.movePosition(QTextCursor.MoveOperation.Down)
    field.editor.setTextCursor(cursor)
    QTest.keyClicks(field.editor, "uniform float gain;")
    QTest.keyClick(field.editor, Qt.Key.Key_Return)
    position = field.editor.textCursor().position()
    QTest.keyClick(field.editor, Qt.Key.Key_Return, CTRL)
    assert "gain" in [pin.name for pin in editor.patch.nodes["shader"].inputs]
    assert editor.inspector.pin_widget("source") is field
    assert editor.inspector.pin_widget("gain") is not None  # the new pin has its row
    assert field.editor.hasFocus() and field.editor.textCursor().position() == position
    QTest.keyClicks(field.editor, "uniform float more;")  # typing goes on where it was
    assert field.text.count("uniform float") == 2


def test_selecting_another_node_applies_what_was_typed(editor, ui, qtbot):
    field = code_field(editor, ui, qtbot)
    type_at_end(field, "// kept")
    editor.canvas.select(["knob"])
    assert editor.patch.value("shader", "source") == DEFAULT_SHADER + "// kept"
    assert editor.undo_stack.count() == 1


def test_glsl_colouring_tells_keywords_types_numbers_comments_and_preprocessor_apart(qtbot):
    field = QtCodeField("source")
    qtbot.addWidget(field)
    field.set_text("#version 330\nuniform vec2 c = vec2(0.5); // note\n/* a\nb */ float x;\n")
    document = field.editor.document()

    def colour_at(line: int, column: int) -> str:
        block = document.findBlockByNumber(line)
        for span in block.layout().formats():
            if span.start <= column < span.start + span.length:
                return span.format.foreground().color().name()
        return "plain"

    preprocessor, keyword, kind = colour_at(0, 1), colour_at(1, 0), colour_at(1, 8)
    number, comment = colour_at(1, 22), colour_at(1, 31)
    assert len({preprocessor, keyword, kind, number, comment, "plain"}) == 6
    assert colour_at(2, 0) == comment and colour_at(3, 1) == comment  # a block over two lines
    assert colour_at(3, 5) == kind  # after the block comment ends
