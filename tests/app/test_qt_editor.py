"""The editor window live: inspector edits reach the running patch, the evaluator goes lazy -> flat,
Space pauses, files round-trip, bad files leave the patch alone, recovery, read-only exports."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QSlider, QStyle, QStyleOptionSlider

from app.qt.pin_types import QtSliderField
from app.qt.window import DECORATE_EVERY
from nodes import Patch, load_patch, patch_to_dict, save_patch
from tests.app.conftest import played
from tests.app.editor_process import CRASH, KEEP_RUNNING, run_editor
from tests.waiting import TIMEOUT_S


def slider_patch() -> Patch:
    patch = Patch()
    patch.add_node("input.float", {"value": 0.2, "min": 0.0, "max": 4.0}, (0, 0), node_id="speed")
    patch.add_node("math.mul", {"b": 10.0}, (300, 0), node_id="gain")
    patch.add_node("output.value", None, (600, 0), node_id="out")
    patch.connect("speed", "out", "gain", "a")
    patch.connect("gain", "out", "out", "in")
    return patch


def handle_center(slider: QSlider) -> QPoint:
    option = QStyleOptionSlider()
    slider.initStyleOption(option)
    rect = slider.style().subControlRect(
        QStyle.ComplexControl.CC_Slider, option, QStyle.SubControl.SC_SliderHandle, slider
    )
    return rect.center()


def test_slider_drag_changes_downstream_value_and_is_one_undo_step(editor, ui, qtbot):
    ui.show_patch(editor, slider_patch())
    assert played(editor).output("out") == 2.0
    editor.canvas.select(["speed"])
    field = editor.inspector.pin_widget("value")
    assert isinstance(field, QtSliderField)
    slider = field.slider
    start = handle_center(slider)
    QTest.mousePress(slider, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    for dx in (10, 30, 60, 90):
        QTest.mouseMove(slider, start + QPoint(dx, 0))
    QTest.mouseRelease(
        slider, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start + QPoint(90, 0)
    )
    value = editor.patch.value("speed", "value")
    assert value > 0.2
    assert editor.undo_stack.count() == 1  # the whole drag is one step
    ui.run_frames(editor)
    assert played(editor).output("out") == value * 10.0
    editor.undo_stack.undo()
    assert editor.patch.value("speed", "value") == 0.2
    assert field.number.value() == 0.2  # the inspector follows undo
    ui.run_frames(editor)
    assert played(editor).output("out") == 2.0


def test_number_field_edit_is_undoable(editor, ui):
    ui.show_patch(editor, slider_patch())
    editor.canvas.select(["gain"])
    number = editor.inspector.pin_widget("b")
    number.setValue(3.5)  # what typing + Return does (keyboard tracking is off)
    assert editor.patch.value("gain", "b") == 3.5
    editor.undo_stack.undo()
    assert editor.patch.value("gain", "b") == 10.0
    assert number.value() == 10.0


def test_a_structural_edit_shows_on_the_next_frame_and_stays_flat(editor, ui, qtbot):
    """A small edit: the program is built from the running one, so no frame runs lazily."""
    ui.show_patch(editor, slider_patch())
    assert played(editor).mode == "flat"  # built when it was loaded
    running = played(editor).program
    ui.drag_link(editor, "speed", "out", "gain", "b")
    assert editor.undo_stack.count() == 1
    ui.run_frames(editor)
    assert played(editor).output("out") == 0.2 * 0.2
    program = played(editor).program
    assert program is not None and program is not running and program.derived
    assert played(editor).derived_swaps == 1
    editor.update_status()
    assert editor.status_labels["mode"].text() == "flat"


def test_a_structural_edit_is_built_between_frames_even_while_paused(editor, ui, qtbot):
    """With the frame loop paused, no frame can build the edit's program: the editor builds it
    once the edit is done, between frames, as the engine does for the edits it receives."""
    ui.show_patch(editor, slider_patch())
    assert played(editor).mode == "flat"  # built when it was loaded
    running = played(editor).program
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_Space)
    assert editor.transport_actions.paused
    frame = editor.engine.engine.frame
    ui.drag_link(editor, "speed", "out", "gain", "b")
    ui.run_frames(editor)  # a turn of the loop while paused: the edit is built, no frame runs
    assert played(editor).program not in (None, running)
    assert played(editor).program.derived and editor.engine.engine.frame == frame
    ui.press(viewer, Qt.Key.Key_Space)
    ui.run_frames(editor)
    assert played(editor).output("out") == 0.2 * 0.2


def test_space_pauses_and_resumes_the_frame_loop(editor, ui, qtbot):
    patch = Patch()
    patch.add_node("time.frame", None, (0, 0), node_id="frame")
    patch.add_node("output.value", None, (300, 0), node_id="out")
    patch.connect("frame", "out", "out", "in")
    ui.show_patch(editor, patch)
    ui.run_frames(editor, 3)
    assert played(editor).output("out") > 2
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_Space)
    assert editor.transport_actions.paused
    ui.run_frames(editor)  # the engine hears of the pause before its frame
    frozen = played(editor).output("out")
    ui.run_frames(editor, 5)
    assert played(editor).output("out") == frozen
    ui.press(viewer, Qt.Key.Key_Space)
    assert not editor.transport_actions.paused
    ui.run_frames(editor)
    assert played(editor).output("out") > frozen


def test_failed_node_is_red_with_its_message(editor, ui, qtbot):
    patch = Patch()
    patch.add_node("debug.fail", {"message": "boom here"}, (0, 0), node_id="bad")
    patch.add_node("output.value", None, (300, 0), node_id="out")
    patch.add_node("value.float", None, (0, 200), node_id="loose")
    patch.connect("bad", "out", "out", "in")
    ui.show_patch(editor, patch)
    assert played(editor).status("bad") == "failed"
    editor.report_views.decorate_nodes()
    bad = editor.canvas.view_node("bad")
    assert tuple(bad.color()[:3]) == (190, 30, 30)
    assert "boom here" in bad.view.toolTip()
    assert editor.canvas.view_node("loose").view.opacity() < 1.0  # no sink needs it: dimmed
    editor.canvas.select(["bad"])
    editor.tick()
    assert "boom here" in editor.inspector._error.text()


def test_save_then_open_round_trips(editor, ui, dialogs, tmp_path):
    ui.show_patch(editor, slider_patch())
    editor.patch.set_position("gain", (310.0, 15.0))
    target = tmp_path / "mine.patchbay"
    dialogs.save_path = str(target)
    assert editor.file_actions.save()
    assert "mine.patchbay" in editor.windowTitle() and "*" not in editor.windowTitle()
    original = patch_to_dict(editor.patch)
    editor.file_actions.new_patch()
    assert editor.patch.nodes == {}
    assert editor.file_actions.open_path(target)
    assert patch_to_dict(editor.patch) == original
    assert not editor.modified and "*" not in editor.windowTitle()
    assert str(target.resolve()) in editor.file_actions.recent_files()


def test_opening_a_corrupt_file_keeps_the_current_patch(editor, ui, dialogs, tmp_path):
    ui.show_patch(editor, slider_patch())
    bad = tmp_path / "bad.patchbay"
    bad.write_text('{"format": "patchbay", "version": 1, "nodes": [{"id": "x"', "utf-8")
    before = patch_to_dict(editor.patch)
    assert not editor.file_actions.open_path(bad)
    assert patch_to_dict(editor.patch) == before
    assert len(dialogs.errors) == 1 and "invalid JSON" in dialogs.errors[0]
    assert "\n" not in dialogs.errors[0]


def test_unsaved_changes_prompt(editor, ui, dialogs):
    ui.show_patch(editor, slider_patch())
    editor.canvas.select(["gain"])
    editor.edit_actions.delete_selection()
    assert editor.windowTitle().startswith("untitled *")
    dialogs.unsaved_answer = "cancel"
    assert not editor.file_actions.new_patch()
    assert "speed" in editor.patch.nodes and dialogs.asked_unsaved == 1
    dialogs.unsaved_answer = "discard"
    assert editor.file_actions.new_patch()
    assert editor.patch.nodes == {}


def test_restore_offers_the_work_of_a_crashed_editor_only(qtbot, ui, dialogs, tmp_path):
    state = tmp_path / "state"
    live = ui.make_editor(qtbot, state, dialogs)
    ui.show_patch(live, slider_patch())
    live.canvas.select(["gain"])
    live.edit_actions.delete_selection()
    live.file_actions.autosave()
    assert live.session.wait_for_autosave(TIMEOUT_S) == []
    original = tmp_path / "show.patchbay"
    assert run_editor(state, 0.8, CRASH, str(original)).wait(TIMEOUT_S) == 1
    offered = []
    second = ui.make_editor(qtbot, state, dialogs)
    second.file_actions.ask_restore = lambda recoveries, playing: (
        offered.extend(recoveries) or recoveries[0]
    )
    assert second.file_actions.offer_recovery()
    assert [recovery.original for recovery in offered] == [original]  # not the live editor's
    assert second.patch.value("speed", "value") == 0.4 and second.path == original
    assert second.modified and second.windowTitle().startswith("show.patchbay *")
    assert live.session.recovery_file.exists()
    dialogs.unsaved_answer = "discard"  # both close without a prompt


def test_declining_a_restore_keeps_a_running_editors_work(qtbot, ui, dialogs, tmp_path):
    state = tmp_path / "state"
    assert run_editor(state, 0.8, CRASH).wait(TIMEOUT_S) == 1
    running = run_editor(state, 0.6, KEEP_RUNNING)
    try:
        dialogs.restore = False
        editor = ui.make_editor(qtbot, state, dialogs)
        assert not editor.file_actions.offer_recovery()
        left = list((state / "recovery").glob("*.patchbay"))
        assert len(left) == 1 and load_patch(left[0]).value("speed", "value") == 0.3
        assert (
            not editor.file_actions.offer_recovery()
        )  # the declined one is gone, the live one not offered
    finally:
        running.communicate("stop\n", timeout=TIMEOUT_S)


def test_autosaved_work_that_fails_to_load_is_kept(qtbot, ui, dialogs, tmp_path):
    state = tmp_path / "state"
    assert run_editor(state, 0.8, CRASH).wait(TIMEOUT_S) == 1
    [recovery] = list((state / "recovery").glob("*.patchbay"))
    recovery.write_text('{"format": "patchbay", "version": 1, "nodes": [', "utf-8")  # torn
    dialogs.restore = True
    editor = ui.make_editor(qtbot, state, dialogs)
    assert not editor.file_actions.offer_recovery()
    assert len(dialogs.errors) == 1 and str(recovery) in dialogs.errors[0]
    assert "\n" not in dialogs.errors[0] and recovery.exists()
    offered = []
    again = ui.make_editor(qtbot, state, dialogs)
    again.file_actions.ask_restore = lambda recoveries, playing: offered.extend(
        recoveries
    )  # declines
    editor.close()  # let go of it
    again.file_actions.offer_recovery()
    assert [r.patch_file for r in offered] == [recovery]  # offered again, not lost


def test_autosave_follows_edits_without_a_save(editor, ui, qtbot):
    ui.show_patch(editor, slider_patch())
    editor.session.autosave_delay_s = 0.0
    editor.canvas.select(["gain"])
    editor.edit_actions.delete_selection()
    qtbot.waitUntil(editor.session.recovery_file.exists)
    qtbot.waitUntil(lambda: "gain" not in load_patch(editor.session.recovery_file).nodes)
    editor.undo_stack.undo()  # back at the saved state: nothing to recover
    qtbot.waitUntil(lambda: not editor.session.recovery_file.exists())


def test_a_save_that_fails_is_reported_in_one_line(editor, ui, dialogs, tmp_path):
    ui.show_patch(editor, slider_patch())
    editor.patch.set_value("speed", "value", 0.5)  # unsaved
    (tmp_path / "file").write_text("a file, not a folder")
    dialogs.save_path = str(tmp_path / "file" / "x.patchbay")
    assert not editor.file_actions.save()
    assert len(dialogs.errors) == 1 and "cannot save" in dialogs.errors[0]
    assert "\n" not in dialogs.errors[0] and editor.modified and editor.path is None


def test_frozen_export_opens_read_only_with_banner(editor, tmp_path):
    patch = slider_patch()
    patch.meta["frozen"] = {"source": "x.patchbay"}
    path = tmp_path / "frozen.patchbay"
    save_patch(patch, path)
    assert editor.file_actions.open_path(path)
    assert editor.banner.isVisible() and "read-only" in editor.banner.text()
    assert not editor.canvas.viewer().isInteractive()
    assert not editor.file_actions.save_action.isEnabled()


def test_the_demo_opens_unmodified(editor):
    from app.qt.launch import demo_patch_path

    editor.set_patch(load_patch(demo_patch_path()), None)
    editor.tick()
    assert not editor.modified


def test_demo_patch_loads_and_shows_the_product():
    from app.qt.launch import demo_patch_path

    patch = load_patch(demo_patch_path())
    types = {n.type_id for n in patch.nodes.values()}
    assert {"time.seconds", "input.float", "logic.switch", "debug.fail", "array.map_sin"} <= types
    assert json.loads(demo_patch_path().read_text("utf-8"))["format"] == "patchbay"


def test_paste_pastes_the_last_copy_even_with_large_arrays(editor, ui, qtbot):
    import numpy as np

    patch = Patch()
    patch.add_node("math.add", None, (0, 0), node_id="small")
    big = np.arange(20_000, dtype=np.float64)  # too large for the clipboard text (a sidecar)
    patch.add_node("value.array", {"value": big}, (300, 0), node_id="big")
    ui.show_patch(editor, patch)
    editor.canvas.select(["small"])
    editor.edit_actions.copy_selection()
    editor.canvas.select(["big"])
    editor.edit_actions.copy_selection()  # the last copy: only this window can hold it
    editor.edit_actions.paste()
    pasted = editor.canvas.selected_ids()
    assert len(pasted) == 1 and editor.patch.nodes[pasted[0]].type_id == "value.array"
    assert np.array_equal(editor.patch.value(pasted[0], "value"), big)
    # A patch copied (in any window) after that is what pastes next.
    editor.canvas.select(["small"])
    editor.edit_actions.copy_selection()
    editor.edit_actions.paste()
    pasted = editor.canvas.selected_ids()
    assert len(pasted) == 1 and editor.patch.nodes[pasted[0]].type_id == "math.add"


def test_the_editor_does_not_import_moderngl():
    import ast
    import inspect

    import app.qt.window

    tree = ast.parse(inspect.getsource(app.qt.window))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}  # fmt: skip
    imported |= {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not {name for name in imported if name and name.startswith("moderngl")}


def test_create_gl_service_reports_moderngl_errors_as_runtime_errors(qtbot, monkeypatch):
    import moderngl
    import pytest

    from app.qt import output as qt_output
    from tests.xvfb import unavailable

    if not qt_output.qt_gl_available():
        unavailable("Qt cannot make OpenGL contexts here")

    def failing(**kwargs):
        raise moderngl.Error("no usable OpenGL")

    monkeypatch.setattr(qt_output.moderngl, "create_context", failing)
    with pytest.raises(RuntimeError, match="no usable OpenGL"):
        qt_output.create_gl_service()


def test_a_node_bypassed_for_taking_too_long_can_be_retried_from_the_inspector(editor, ui, qtbot):
    patch = Patch()
    patch.add_node("time.frame", None, (0, 0), node_id="frame")
    patch.add_node("debug.sleep", {"seconds": 0.3}, (200, 0), node_id="slow")
    patch.add_node("output.value", None, (400, 0), node_id="out")
    patch.connect("frame", "out", "slow", "x")
    patch.connect("slow", "out", "out", "in")
    ui.show_patch(editor, patch)
    editor.engine.engine.ctx.time_budget = 0.1
    editor.canvas.select(["slow"])
    # A frame over the budget bypasses the node (one more, should the collector have run in it).
    bypassed = editor.report_views.is_bypassed
    ui.run_until(editor, lambda: bypassed("slow"), "the slow node bypassed", 2)
    retry = editor.inspector.retry_button
    ui.run_until(editor, lambda: not retry.isHidden(), "the Retry button shown", DECORATE_EVERY)
    assert "bypassed" in played(editor).error("slow")
    editor.engine.engine.ctx.time_budget = 10.0  # the machine got faster: the same node now fits
    retry.click()
    ui.run_frames(editor)
    assert played(editor).status("slow") == "ok"
    assert not editor.report_views.is_bypassed("slow")
    ui.run_until(editor, retry.isHidden, "the Retry button hidden", DECORATE_EVERY)


def _visible_scene_rect(editor):
    viewer = editor.canvas.viewer()
    return viewer.mapToScene(viewer.viewport().rect()).boundingRect()


def test_frame_all_shows_every_node_of_a_patch_spread_to_the_position_limits(
    editor, ui, dialogs, tmp_path
):
    patch = Patch()
    for node_id, pos in (("left", (-1e6, -1e6)), ("right", (1e6, 1e6)), ("mid", (0, 0))):
        patch.add_node("math.add", None, pos, node_id=node_id)
    save_patch(patch, tmp_path / "wide.patchbay")
    assert editor.file_actions.open_path(tmp_path / "wide.patchbay")
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    viewer.scale(50, 50)  # somewhere else entirely
    ui.press(viewer, Qt.Key.Key_Home)
    shown = _visible_scene_rect(editor)
    for node_id in ("left", "right", "mid"):
        bounds = editor.canvas.view_node(node_id).view.sceneBoundingRect()
        assert shown.contains(bounds), node_id
    assert not dialogs.errors


def clock_patch() -> Patch:
    patch = Patch()
    patch.add_node("time.frame", None, (0, 0), node_id="frame")
    patch.add_node("time.seconds", None, (0, 150), node_id="t")
    patch.add_node("output.value", None, (300, 0), node_id="out")
    patch.add_node("output.value", None, (300, 150), node_id="out_t")
    patch.connect("frame", "out", "out", "in")
    patch.connect("t", "out", "out_t", "in")
    return patch


@pytest.mark.live_loop  # the rate shown is frames per second of wall-clock time
def test_the_fps_label_says_paused_while_the_clock_is_paused(editor, ui, qtbot):
    ui.show_patch(editor, clock_patch())
    fps = editor.status_labels["fps"]
    qtbot.waitUntil(lambda: fps.text().endswith(" fps") and fps.text() != "0 fps")
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_Space)
    assert fps.text() == "paused"
    qtbot.wait(700)  # longer than a status refresh: it must not go back to a rate
    assert fps.text() == "paused"
    ui.press(viewer, Qt.Key.Key_Space)
    qtbot.waitUntil(lambda: fps.text().endswith(" fps") and fps.text() != "0 fps")


def test_step_runs_one_frame_and_reset_takes_time_back_to_zero(editor, ui, qtbot):
    from PySide6.QtWidgets import QToolBar

    ui.show_patch(editor, clock_patch())
    ui.run_frames(editor, 3)
    assert played(editor).output("out") > 2
    toolbar = editor.findChild(QToolBar, "Transport")
    assert [a.text() for a in toolbar.actions() if a.text()] == [  # the rate box has none
        "&Pause / resume", "Step &back one frame", "S&tep one frame", "&Reset Time",
        "&Fixed step (render)", "Tap &tempo", "Nudge beat &earlier", "Nudge beat &later",
        "Resync to &downbeat",
    ]  # fmt: skip
    assert toolbar.widgetForAction(editor.transport_actions.step_back_action).text() == "◀ Step"
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_Period)  # playing: a step pauses first
    assert editor.transport_actions.paused
    ui.run_frames(editor)  # the engine hears of the pause and the step
    frame, seconds = played(editor).output("frame"), played(editor).output("t")
    ui.run_frames(editor, 5)
    assert played(editor).output("frame") == frame  # paused: turns of the loop run no frame
    ui.press(viewer, Qt.Key.Key_Period)
    ui.run_frames(editor)
    assert played(editor).output("frame") == frame + 1
    assert played(editor).output("t") == pytest.approx(seconds + 0.016)
    button = toolbar.widgetForAction(
        editor.transport_actions.step_action
    )  # the toolbar's button does the same
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    ui.run_frames(editor)
    assert played(editor).output("frame") == frame + 2
    assert played(editor).output("t") == pytest.approx(seconds + 0.032)
    ui.press(viewer, Qt.Key.Key_Home, Qt.KeyboardModifier.ControlModifier)
    assert editor.transport_actions.paused
    ui.run_frames(editor)
    assert played(editor).output("frame") == 0.0 and played(editor).output("t") == 0.0
    ui.press(viewer, Qt.Key.Key_Space)
    ui.run_frames(editor, 3)
    assert played(editor).output("out") > 2  # playing again


def test_tap_nudge_and_resync_from_the_transport_toolbar(editor, ui, qtbot):
    from PySide6.QtWidgets import QToolBar

    patch = Patch()
    patch.add_node("time.beat", None, (0, 0), node_id="beat")
    patch.add_node("output.value", None, (300, 0), node_id="out")
    patch.connect("beat", "phase", "out", "in")
    ui.show_patch(editor, patch)
    toolbar = editor.findChild(QToolBar, "Transport")
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_Period)  # paused: frames run only when stepped
    ui.run_frames(editor)
    now = [50.0]
    editor.transport_actions.tap_clock = lambda: now[0]
    tap = toolbar.widgetForAction(editor.transport_actions.tap_action)
    for t in (50.0, 50.4, 50.8, 51.3, 51.6):  # 0.4 s taps, one late (both its intervals ignored)
        now[0] = t
        qtbot.mouseClick(tap, Qt.MouseButton.LeftButton)
    assert editor.patch.settings["bpm"] == 150.0
    assert "150 BPM" in editor.transport_actions.tap_action.toolTip()

    def beats() -> float:
        return played(editor).output("beat", "beat") + played(editor).output("beat", "phase")

    ui.press(viewer, Qt.Key.Key_Period)
    ui.run_frames(editor)
    before = beats()
    qtbot.mouseClick(
        toolbar.widgetForAction(editor.transport_actions.nudge_earlier_action),
        Qt.MouseButton.LeftButton,
    )
    ui.press(viewer, Qt.Key.Key_Period)  # 16 ms at 150 BPM is 0.04 beats, plus the nudge
    ui.run_frames(editor)
    assert beats() == pytest.approx(before + 0.04 + 0.05)
    qtbot.mouseClick(
        toolbar.widgetForAction(editor.transport_actions.nudge_later_action),
        Qt.MouseButton.LeftButton,
    )
    ui.press(viewer, Qt.Key.Key_Period)
    ui.run_frames(editor)
    assert beats() == pytest.approx(before + 0.08)
    qtbot.mouseClick(
        toolbar.widgetForAction(editor.transport_actions.resync_action), Qt.MouseButton.LeftButton
    )
    ui.press(viewer, Qt.Key.Key_Period)
    ui.run_frames(editor)
    assert played(editor).output("beat", "phase") == 0.0
    assert played(editor).output("beat", "beat") % 4 == 0
    assert played(editor).output("beat", "pulse") is True
