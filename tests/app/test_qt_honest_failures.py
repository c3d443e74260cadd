"""A failed node says what its outputs hold, through the real window: one that never succeeded
says "no good value yet" (in the Preview panel and in its caption on the canvas), not "last
good: 0"; one that succeeded before keeps saying its last good value."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest

from app.qt.canvas.failure_marks import NO_GOOD_VALUE
from nodes import Patch
from tests.app.test_qt_canvas_own import click_node

SHOTS = Path(__file__).resolve().parents[1] / "artifacts"  # screenshots to look at


def test_a_node_that_never_succeeded_says_no_good_value_yet(editor, ui, qtbot):
    patch = Patch()
    patch.add_node("debug.fail", None, (0, 0), node_id="broken")
    patch.add_node("output.value", None, (400, 0), node_id="shown")
    patch.connect("broken", "out", "shown", "in")
    patch.add_node("value.float", {"value": 0.5}, (0, 300), node_id="fine")
    patch.add_node("math.div", {"a": 1.0, "b": 2.0}, (400, 300), node_id="ratio")
    patch.add_node("output.value", None, (800, 300), node_id="ratio_shown")
    patch.connect("ratio", "out", "ratio_shown", "in")
    ui.show_patch(editor, patch)
    ui.run_frames(editor, 3)
    click_node(editor, "broken")
    ui.run_frames(editor, 3)
    qtbot.waitUntil(lambda: editor.preview.failure.isVisible())
    assert editor.preview.row_widget("out").text() == f"failed · {NO_GOOD_VALUE}"
    qtbot.waitUntil(lambda: editor.failure_marks.mark_of("broken") is not None)
    assert editor.failure_marks.mark_of("broken").endswith(f" · {NO_GOOD_VALUE}")
    assert "last good" not in editor.failure_marks.mark_of("broken")
    SHOTS.mkdir(parents=True, exist_ok=True)
    editor.grab().save(str(SHOTS / "patching-no-good-value.png"))

    # One that ran before it failed still says what it last made.
    click_node(editor, "ratio")
    ui.run_frames(editor, 2)
    inspector = editor.inspector
    field = inspector.pin_widget("b")
    field.setFocus()
    field.lineEdit().selectAll()
    QTest.keyClicks(field.lineEdit(), "0")
    QTest.keyClick(field.lineEdit(), Qt.Key.Key_Return)  # 1 / 0 fails
    ui.run_frames(editor, 3)
    qtbot.waitUntil(lambda: editor.preview.failure.isVisible())
    assert editor.preview.row_widget("out").text() == "failed · last good: 0.5"
    qtbot.waitUntil(lambda: (editor.failure_marks.mark_of("ratio") or "").endswith("0.5"))
