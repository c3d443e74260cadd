"""The inspector's editors per pin type, driven through the real window: a colour's swatch opens
a colour dialog with alpha (the patch follows it live, Cancel puts the colour back) and its
numbers can be typed, a 2-vector has two number fields, a
choice pin a drop-down of its choices, a file pin a Browse button whose dialog opens in the
patch's folder and names the file relative to it. Each edit is one undo step."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, Qt, QTimer
from PySide6.QtGui import QColor
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QColorDialog, QComboBox, QFileDialog

from app.qt.pin_types import QtColorField, QtFileField, QtVectorField
from nodes import Patch
from tests.app.test_qt_canvas_own import click_node

SHOTS = Path(__file__).resolve().parents[1] / "artifacts"  # screenshots to look at


def answer_modal(kind: type, answer) -> None:
    """Once a modal dialog of `kind` is open, call `answer(dialog)` (which closes it)."""

    def look() -> None:
        dialog = QApplication.activeModalWidget()
        if isinstance(dialog, kind) and dialog.isVisible():
            answer(dialog)
        else:
            QTimer.singleShot(20, look)

    QTimer.singleShot(20, look)


def type_into(field, text: str) -> None:
    """Select what a field holds, type `text` and press Return, as a person does."""
    field.setFocus()
    field.selectAll()
    QTest.keyClicks(field, text)
    QTest.keyClick(field, Qt.Key.Key_Return)
    QCoreApplication.processEvents()


def save_shot(editor, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    editor.grab().save(str(SHOTS / name))


@pytest.fixture
def text_patch(tmp_path: Path) -> Patch:
    patch = Patch()
    patch.folder = tmp_path / "show"
    patch.folder.mkdir()
    patch.add_node("text.render", {"color": (1.0, 0.85, 0.1, 1.0)}, (0, 0), node_id="title")
    return patch


def test_a_colour_is_picked_in_a_dialog_with_alpha_or_typed(editor, ui, qtbot, text_patch):
    ui.show_patch(editor, text_patch)
    click_node(editor, "title")
    field = editor.inspector.pin_widget("color")
    assert isinstance(field, QtColorField)
    assert field.value() == (1.0, 0.85, 0.1, 1.0)
    seen: dict[str, object] = {}

    def choose(dialog: QColorDialog) -> None:
        seen["alpha"] = dialog.testOption(QColorDialog.ColorDialogOption.ShowAlphaChannel)
        seen["start"] = dialog.currentColor().getRgbF()
        save_shot(editor, "patching-colour-dialog.png")
        dialog.grab().save(str(SHOTS / "patching-colour-dialog-only.png"))
        dialog.setCurrentColor(QColor.fromRgbF(0.2, 0.4, 0.6, 0.5))
        dialog.accept()

    answer_modal(QColorDialog, choose)
    qtbot.mouseClick(field.swatch, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: editor.undo_stack.count() == 1)
    assert seen["alpha"] is True
    assert seen["start"][3] == pytest.approx(1.0)
    stored = editor.patch.value("title", "color")
    assert stored == pytest.approx((0.2, 0.4, 0.6, 0.5), abs=0.01)
    assert field.value() == pytest.approx(stored)

    alpha = field.numbers.fields[3].lineEdit()
    type_into(alpha, "0.25")
    assert editor.patch.value("title", "color")[3] == pytest.approx(0.25)
    assert editor.undo_stack.count() == 2  # the dialog's colour, then the typed alpha
    save_shot(editor, "patching-colour.png")

    live: list[tuple[float, ...]] = []

    def try_then_cancel(dialog: QColorDialog) -> None:
        dialog.setCurrentColor(QColor.fromRgbF(0.0, 1.0, 0.0, 1.0))
        live.append(editor.patch.value("title", "color"))  # the patch follows the dialog
        dialog.reject()

    before = editor.patch.value("title", "color")
    answer_modal(QColorDialog, try_then_cancel)
    qtbot.mouseClick(field.swatch, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: field.dialog is None)
    assert live == [(0.0, 1.0, 0.0, 1.0)]
    assert editor.patch.value("title", "color") == pytest.approx(before)  # Cancel: as it was
    assert field.value() == pytest.approx(before)
    assert editor.undo_stack.count() == 2  # and no step

    editor.activateWindow()  # the dialog had it
    qtbot.waitUntil(editor.isActiveWindow)
    editor.canvas.viewer().setFocus()
    ui.press(editor.canvas.viewer(), Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert editor.patch.value("title", "color")[3] == pytest.approx(0.5, abs=0.01)
    assert field.value()[3] == pytest.approx(0.5, abs=0.01)  # the inspector follows undo


def test_a_vec2_has_two_number_fields_and_a_choice_a_drop_down(editor, ui, qtbot, text_patch):
    ui.show_patch(editor, text_patch)
    click_node(editor, "title")
    position = editor.inspector.pin_widget("position")
    assert isinstance(position, QtVectorField) and len(position.fields) == 2
    assert position.value() == (0.5, 0.5)
    type_into(position.fields[1].lineEdit(), "0.8")
    assert editor.patch.value("title", "position") == (0.5, 0.8)
    assert editor.undo_stack.count() == 1

    align = editor.inspector.pin_widget("align")
    assert isinstance(align, QComboBox)
    assert [align.itemText(i) for i in range(align.count())] == ["left", "center", "right"]
    assert align.currentText() == "center"
    align.setFocus()
    QTest.keyClick(align, Qt.Key.Key_Down)  # the next choice, as arrow keys pick on a closed list
    QCoreApplication.processEvents()
    assert editor.patch.value("title", "align") == "right"
    assert editor.undo_stack.count() == 2
    save_shot(editor, "patching-vec2-choice.png")
    editor.undo_stack.undo()
    assert editor.patch.value("title", "align") == "center"
    assert align.currentText() == "center"


def test_a_file_is_chosen_in_the_patch_folder_and_named_relative_to_it(
    editor, ui, qtbot, text_patch, tmp_path
):
    fonts = text_patch.folder / "fonts"
    fonts.mkdir()
    inside = fonts / "title.ttf"
    inside.write_bytes(b"not really a font")
    outside = tmp_path / "elsewhere.ttf"
    outside.write_bytes(b"not really a font")
    ui.show_patch(editor, text_patch)
    click_node(editor, "title")
    field = editor.inspector.pin_widget("font")
    assert isinstance(field, QtFileField)
    opened_in: list[str] = []

    def pick(path: Path):
        def answer(dialog: QFileDialog) -> None:
            opened_in.append(dialog.directory().absolutePath())
            dialog.selectFile(str(path))
            dialog.accept()

        return answer

    answer_modal(QFileDialog, pick(inside))
    qtbot.mouseClick(field.browse, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: editor.undo_stack.count() == 1)
    assert Path(opened_in[0]).resolve() == text_patch.folder.resolve()
    assert editor.patch.value("title", "font") == "fonts/title.ttf"
    assert field.line.text() == "fonts/title.ttf"
    save_shot(editor, "patching-file.png")

    answer_modal(QFileDialog, pick(outside))  # outside the patch's folder: refused, said why
    qtbot.mouseClick(field.browse, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: field.dialog is None)
    qtbot.waitUntil(lambda: "outside the patch's folder" in editor.statusBar().currentMessage())
    assert editor.patch.value("title", "font") == "fonts/title.ttf"
    assert field.line.text() == "fonts/title.ttf"
    assert editor.undo_stack.count() == 1
