"""The tempo on the Transport toolbar, through real clicks and keys: a BPM field that sets the
patch tempo as one undo step, a beat light and a bar.beat counter that follow the engine's beat, a
Pause button that shows it is paused, and "Reset Time" named for what it does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QToolBar

from nodes import Patch

SHOTS = Path(os.environ.get("PATCHBAY_SHOTS", "")) if os.environ.get("PATCHBAY_SHOTS") else None


def beat_patch() -> Patch:
    patch = Patch()
    patch.add_node("time.beat", None, (0, 0), node_id="beat")
    patch.add_node("output.value", None, (300, 0), node_id="out")
    patch.connect("beat", "phase", "out", "in")
    return patch


def click(qtbot, toolbar: QToolBar, action) -> None:
    qtbot.mouseClick(toolbar.widgetForAction(action), Qt.MouseButton.LeftButton)


def lit(editor) -> bool:
    return editor.transport_actions.beat_lit


def test_typing_a_tempo_sets_the_patch_tempo_as_one_undo_step(editor, ui, qtbot):
    ui.show_patch(editor, beat_patch())
    field = editor.transport_actions.bpm_box
    assert field.text() == "120.0 BPM"
    steps = editor.undo_stack.count()
    qtbot.mouseDClick(field.lineEdit(), Qt.MouseButton.LeftButton)
    field.lineEdit().selectAll()
    qtbot.keyClicks(field.lineEdit(), "90")
    assert editor.patch.settings.get("bpm", 120.0) == 120.0  # not per key
    qtbot.keyClick(field.lineEdit(), Qt.Key.Key_Return)
    assert editor.patch.settings["bpm"] == 90.0
    assert editor.undo_stack.count() == steps + 1
    ui.run_frames(editor, 2)
    assert editor.evaluator.bpm == 90.0  # the engine plays it
    assert editor.engine.engine.ctx.bpm == 90.0
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert editor.patch.settings.get("bpm", 120.0) == 120.0
    ui.run_frames(editor, 2)
    assert field.value() == 120.0  # the field follows the document


def test_the_beat_light_and_bar_beat_follow_the_engines_beat(editor, ui, qtbot):
    ui.show_patch(editor, beat_patch())
    toolbar = editor.findChild(QToolBar, "Transport")
    transport = editor.transport_actions
    click(qtbot, toolbar, transport.fixed_step_action)  # 1/60 s a frame: 30 frames a beat
    click(qtbot, toolbar, transport.reset_time_action)
    ui.run_frames(editor)
    assert transport.beat_label.text().strip() == "1.1" and lit(editor)
    ui.run_frames(editor, 15)  # half a beat on
    assert transport.beat_label.text().strip() == "1.1" and not lit(editor)
    ui.run_frames(editor, 15)  # the second beat
    assert transport.beat_label.text().strip() == "1.2" and lit(editor)
    if SHOTS is not None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        editor.grab().save(str(SHOTS / "stagewin-tempo.png"))
        toolbar.grab().save(str(SHOTS / "stagewin-tempo-toolbar.png"))
    ui.run_frames(editor, 10)
    assert not lit(editor)
    ui.run_frames(editor, 80)  # to the fifth beat: the second bar
    assert transport.beat_label.text().strip() == "2.1" and lit(editor)
    assert editor.engine.engine.beat == pytest.approx(4.0)  # the engine's count, 0-based
    click(qtbot, toolbar, transport.reset_time_action)
    ui.run_frames(editor)
    assert transport.beat_label.text().strip() == "1.1"


def test_pause_shows_that_it_is_paused_and_reset_says_it_resets_time(editor, ui, qtbot):
    ui.show_patch(editor, beat_patch())
    toolbar = editor.findChild(QToolBar, "Transport")
    transport = editor.transport_actions
    button = toolbar.widgetForAction(transport.pause_action)
    assert button.text() == "Pause" and not button.isChecked()
    click(qtbot, toolbar, transport.pause_action)
    assert transport.paused
    assert button.isChecked() and button.text() == "Paused"
    assert "resume" in button.toolTip()
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_Space)
    assert not transport.paused
    assert not button.isChecked() and button.text() == "Pause"
    ui.press(viewer, Qt.Key.Key_Period)  # a step pauses too
    assert button.isChecked() and button.text() == "Paused"
    reset = toolbar.widgetForAction(transport.reset_time_action)
    assert reset.text() == "Reset Time"
    assert "patch time" in reset.toolTip() and "Ctrl+Home" in reset.toolTip()
