"""The Presets panel in the editor (running the patch itself): capture, update, rename and delete
are undoable, a double click recalls, the crossfader blends A and B, transitions play in the
window's frame loop; with an engine the panel sends its messages instead. The Transport
toolbar's step back, rate and fixed step. A screenshot of the panel is kept as
tests/artifacts/presets_panel.png."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.engine.protocol.messages import encode
from app.qt.panels.presets import EMPTY_TEXT
from nodes import Patch
from tests.app.conftest import played
from tests.app.test_qt_subpatch import node_center

ARTIFACT = Path(__file__).resolve().parents[1] / "artifacts" / "presets_panel.png"


def knob_patch() -> Patch:
    patch = Patch()
    patch.add_node("input.float", {"value": 0.0, "max": 100.0}, (0, 0), node_id="x")
    patch.add_node("input.toggle", {"value": False}, (0, 150), node_id="on")
    patch.add_node("math.mul", {"b": 2.0}, (300, 0), node_id="double")
    patch.add_node("output.value", None, (600, 0), node_id="out")
    patch.connect("x", "out", "double", "a")
    patch.connect("double", "out", "out", "in")
    return patch


def captured_a_and_b(editor, ui):
    """The knob patch with presets A (x=0, off) and B (x=10, on) captured in the panel."""
    ui.show_patch(editor, knob_patch())
    panel = editor.presets_panel
    names = iter(["A", "B"])
    panel.ask_name = lambda title, current: next(names)
    panel.buttons["Capture"].click()
    editor.patch.set_value("x", "value", 10.0)
    editor.patch.set_value("on", "value", True)
    panel.buttons["Capture"].click()
    return panel


def list_names(panel) -> list[str]:
    return panel.names()


def test_capture_lists_presets_and_undo_removes_them(editor, ui, qtbot):
    panel = captured_a_and_b(editor, ui)
    assert editor.patch.presets == {
        "A": {("x", "value"): 0.0, ("on", "value"): False, ("double", "b"): 2.0},
        "B": {("x", "value"): 10.0, ("on", "value"): True, ("double", "b"): 2.0},
    }
    assert list_names(panel) == ["A", "B"]
    assert (panel.a.currentText(), panel.b.currentText()) == ("A", "B")
    assert editor.undo_stack.undoText() == "capture preset B"
    editor.undo_stack.undo()
    assert list(editor.patch.presets) == ["A"] and list_names(panel) == ["A"]
    editor.undo_stack.redo()
    assert list_names(panel) == ["A", "B"]


def test_update_rename_and_delete_are_undoable(editor, ui, qtbot):
    panel = captured_a_and_b(editor, ui)
    panel.select("A")
    editor.patch.set_value("x", "value", 42.0)
    panel.buttons["Update"].click()
    assert editor.patch.presets["A"][("x", "value")] == 42.0
    panel.ask_name = lambda title, current: "calm"
    panel.buttons["Rename"].click()
    assert list_names(panel) == ["B", "calm"] and panel.selected() == "calm"
    panel.ask_name = lambda title, current: "B"  # taken: refused, nothing changes
    panel.buttons["Rename"].click()
    assert list_names(panel) == ["B", "calm"]
    assert "exists already" in editor.messages.view.toPlainText()
    panel.buttons["Delete"].click()
    assert list(editor.patch.presets) == ["B"]
    for _ in range(3):
        editor.undo_stack.undo()
    assert editor.patch.presets["A"][("x", "value")] == 0.0
    assert sorted(list_names(panel)) == ["A", "B"]  # a renamed preset comes last


def test_double_click_recalls_on_the_engine_and_the_document_follows_live(editor, ui, qtbot):
    panel = captured_a_and_b(editor, ui)
    steps = editor.undo_stack.count()
    item = panel.list.findItems("A", Qt.MatchFlag.MatchExactly)[0]
    center, viewport = panel.list.visualItemRect(item).center(), panel.list.viewport()
    # A real double click: a click, then the second press arrives as a double click.
    QTest.mouseClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, center)
    QTest.mouseDClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, center)
    ui.run_frames(editor)  # the engine's deck jumps; its live values come back
    assert (editor.patch.value("x", "value"), editor.patch.value("on", "value")) == (0.0, False)
    assert played(editor).output("out") == 0.0
    assert editor.undo_stack.count() == steps  # live values: no undo step


def test_the_crossfader_at_a_quarter_gives_a_quarter_of_the_way(editor, ui, qtbot):
    panel = captured_a_and_b(editor, ui)
    panel.crossfader.setValue(250)
    ui.run_frames(editor)  # the engine's deck blends; its live values come back
    assert editor.patch.value("x", "value") == pytest.approx(2.5)
    assert editor.patch.value("on", "value") is False  # A is heavier
    assert played(editor).output("out") == pytest.approx(5.0)
    panel.crossfader.setValue(1000)
    ui.run_frames(editor)
    assert editor.patch.value("x", "value") == 10.0
    assert editor.undo_stack.undoText() == "capture preset B"  # live: no undo steps
    panel.b.setCurrentText("A")  # a new pair, chosen by hand: it plays, and bound faders use it
    panel.b.activated.emit(panel.b.currentIndex())
    ui.run_frames(editor)
    assert editor.patch.value("x", "value") == 0.0
    assert editor.engine.engine.presets.crossfade_pair == ("A", "A")


def test_a_transition_plays_in_the_frame_loop(editor, ui, qtbot):
    panel = captured_a_and_b(editor, ui)
    editor.transport_actions.fixed_step_action.trigger()  # each frame 1/60 s of patch time
    panel.select("A")
    panel.seconds.setValue(0.5)
    panel.buttons["Recall"].click()
    ui.run_frames(editor, 2)
    assert 0.0 < editor.patch.value("x", "value") < 10.0  # on its way
    assert editor.engine.engine.presets.player.busy
    ui.run_frames(editor, 30)  # 0.5 s of patch time
    assert editor.patch.value("x", "value") == 0.0  # arrived
    assert not editor.engine.engine.presets.player.busy


def test_with_an_engine_the_panel_sends_deck_messages(editor, ui, qtbot):
    panel = captured_a_and_b(editor, ui)
    sent: list[dict] = []
    panel.engine_send = lambda message: sent.append(encode(message))  # as the channel has it
    panel.select("B")
    panel.seconds.setValue(2.0)
    panel.easing.setCurrentText("ease-in-out")
    panel.switch.setCurrentText("end")
    panel.start.setCurrentText("bar")
    panel.buttons["Recall"].click()
    panel.jump("A")
    panel.crossfader.setValue(250)
    assert sent == [
        {"type": "preset", "name": "B", "mode": "transition", "seconds": 2.0,
         "easing": "ease-in-out", "switch": "end", "start": "bar"},
        {"type": "preset", "name": "A", "mode": "jump", "start": "now"},
        {"type": "crossfade", "a": "A", "b": "B", "position": 0.25},
    ]  # fmt: skip
    assert editor.patch.value("x", "value") == 10.0  # the engine plays them, not the document


def test_step_back_rate_and_fixed_step_on_the_toolbar(editor, ui, qtbot):
    patch = Patch()
    patch.add_node("time.seconds", None, (0, 0), node_id="t")
    patch.add_node("time.frame", None, (0, 150), node_id="frame")
    patch.add_node("output.value", None, (300, 0), node_id="out")
    patch.add_node("output.value", None, (300, 150), node_id="frames")
    patch.connect("t", "out", "out", "in")
    patch.connect("frame", "out", "frames", "in")
    ui.show_patch(editor, patch)
    ui.run_frames(editor, 4)
    assert played(editor).output("frames") > 3
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_Period)  # pause and step
    assert editor.transport_actions.paused
    ui.run_frames(editor)
    t, frame = played(editor).output("out"), played(editor).output("frames")
    ui.press(viewer, Qt.Key.Key_Comma)
    ui.run_frames(editor)
    assert played(editor).output("out") == pytest.approx(t - 0.016)
    assert played(editor).output("frames") == frame - 1
    editor.transport_actions.rate_box.setValue(2.0)
    assert editor.session.clock.rate == 2.0
    editor.transport_actions.fixed_step_action.trigger()
    assert (
        editor.transport_actions.fixed_step_action.isChecked()
        and editor.session.clock.fixed_fps == 60.0
    )
    ui.press(viewer, Qt.Key.Key_Period)  # a step is one fixed frame now
    ui.run_frames(editor)
    assert played(editor).output("out") == pytest.approx(t - 0.016 + 1 / 60)
    ui.press(viewer, Qt.Key.Key_Space)  # play: each frame 1/60 s on
    ui.run_frames(editor)
    before, at = played(editor).output("out"), played(editor).output("frames")
    ui.run_frames(editor, 10)
    assert played(editor).output("frames") == at + 10
    assert played(editor).output("out") == pytest.approx(before + 10 / 60)
    editor.transport_actions.fixed_step_action.trigger()
    assert editor.session.clock.fixed_fps is None


def test_presets_panel_screenshot(editor, ui, qtbot):
    panel = captured_a_and_b(editor, ui)
    panel.ask_name = lambda title, current: "strobe"
    panel.buttons["Capture"].click()
    panel.select("B")
    panel.crossfader.setValue(400)
    dock = editor.docks["Presets"]
    dock.raise_()
    qtbot.waitUntil(dock.isVisible)
    image = dock.grab().toImage()
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    assert image.save(str(ARTIFACT))
    assert image.width() >= 280 and image.height() > 150
    editor.grab().save(str(ARTIFACT.with_name("presets_editor.png")))


def test_with_a_real_engine_the_crossfader_moves_the_engines_values(qtbot, tmp_path):
    """The editor window with its engine process: presets captured in the panel reach the
    engine as edits, and the crossfader at 0.25 between A (x=0) and B (x=10) makes the
    engine's x 2.5 (its `double` 5.0), a value the engine computes from its deck."""
    from app.engine.client import EngineProcess
    from tests.app.test_engine_process import editor_window

    window = editor_window(qtbot, knob_patch(), tmp_path)
    try:
        assert window.engine is not None
        remote = window.evaluator
        qtbot.waitUntil(lambda: remote.nodes() == {"x", "on", "double", "out"})
        panel = window.presets_panel
        names = iter(["A", "B"])
        panel.ask_name = lambda title, current: next(names)
        panel.buttons["Capture"].click()
        window.patch.set_value("x", "value", 10.0)
        panel.buttons["Capture"].click()
        window.canvas.select(["double"])  # watched: its value comes back in reports
        qtbot.waitUntil(lambda: remote.output("double") == 20.0)
        panel.crossfader.setValue(250)
        qtbot.waitUntil(lambda: remote.output("double") == pytest.approx(5.0))
        panel.jump("A")
        qtbot.waitUntil(lambda: remote.output("double") == 0.0)
    finally:
        window.close()
        EngineProcess(tmp_path / "engine").stop()


def show_patch_without_inputs() -> Patch:
    """No input.float or input.toggle: a level feeding a gain, and a constant offset."""
    patch = Patch()
    patch.add_node("value.float", {"value": 0.8}, (0, 0), node_id="level")
    patch.add_node("math.mul", {"b": 3.0}, (300, 0), node_id="gain")
    patch.add_node("math.add", {"a": 0.0, "b": 0.5}, (300, 200), node_id="offset")
    patch.add_node("output.value", None, (600, 0), node_id="out")
    patch.add_node("output.value", None, (600, 200), node_id="shift")
    patch.connect("level", "out", "gain", "a")
    patch.connect("gain", "out", "out", "in")
    patch.connect("offset", "out", "shift", "in")
    return patch


def shot(editor, name: str) -> None:
    """Save a screenshot of the window to look at (tests/artifacts, not kept in the
    repository), once the window's loop has shown what changed."""
    QApplication.processEvents()
    shots = Path(__file__).resolve().parents[1] / "artifacts"
    shots.mkdir(parents=True, exist_ok=True)
    editor.grab().save(str(shots / name))


def click(widget, point=None) -> None:
    point = widget.rect().center() if point is None else point
    QTest.mouseClick(widget, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)


def click_row(view, text: str) -> None:
    """Click the row of a list that reads `text` (its first word)."""
    item = next(
        view.item(row) for row in range(view.count()) if view.item(row).text().startswith(text)
    )
    click(view.viewport(), view.visualItemRect(item).center())


def test_capture_holds_every_unlinked_value_shown_and_edited_in_the_panel(editor, ui, qtbot):
    ui.show_patch(editor, show_patch_without_inputs())
    panel = editor.presets_panel
    editor.docks["Presets"].raise_()
    panel.ask_name = lambda title, current: "look"
    click(panel.buttons["Capture"])
    # every editable value not fed by a link (gain.a and the sinks' inputs are)
    assert editor.patch.presets["look"] == {
        ("level", "value"): 0.8, ("gain", "b"): 3.0, ("offset", "a"): 0.0, ("offset", "b"): 0.5,
    }  # fmt: skip
    assert panel.contents_rows() == [
        "level.value = 0.8", "gain.b = 3.0", "offset.a = 0.0", "offset.b = 0.5",
    ]  # fmt: skip
    assert panel.contents_label.text() == "<b>look</b> holds 4 values"

    # the preset recalls what it holds
    editor.patch.set_value("gain", "b", 5.0)
    ui.run_frames(editor)
    assert played(editor).output("out") == pytest.approx(4.0)
    click_row(panel.list, "look")
    QTest.mouseDClick(
        panel.list.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
        panel.list.visualItemRect(panel.list.item(0)).center(),
    )  # fmt: skip
    ui.run_frames(editor)
    assert editor.patch.value("gain", "b") == 3.0
    assert played(editor).output("out") == pytest.approx(2.4)

    # Remove: a selected value (Delete in the list), one undo step
    steps = editor.undo_stack.count()
    click_row(panel.contents, "offset.a")
    panel.contents.setFocus()
    ui.press(panel.contents, Qt.Key.Key_Delete)
    assert ("offset", "a") not in editor.patch.presets["look"]
    assert panel.contents_rows() == ["level.value = 0.8", "gain.b = 3.0", "offset.b = 0.5"]
    assert editor.undo_stack.count() == steps + 1
    assert editor.undo_stack.undoText() == "remove offset.a from preset look"
    editor.undo_stack.undo()
    assert len(panel.contents_rows()) == 4
    editor.undo_stack.redo()

    # a value whose node goes is greyed (an undo brings the node back)
    viewer = editor.canvas.viewer()
    click(viewer.viewport(), node_center(editor, "offset"))
    assert editor.canvas.selected_ids() == ["offset"]
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_Delete)
    assert "offset" not in editor.patch.nodes
    assert panel.contents_rows()[-1] == "offset.b = 0.5  (node removed)"
    editor.undo_stack.undo()
    assert panel.contents_rows()[-1] == "offset.b = 0.5"
    click_row(panel.contents, "gain.b")
    shot(editor, "showfix-presets.png")


def test_a_capture_that_would_hold_nothing_warns_and_makes_no_preset(editor, ui, qtbot):
    patch = Patch()
    patch.add_node("time.seconds", None, (0, 0), node_id="t")
    patch.add_node("output.value", None, (300, 0), node_id="out")
    patch.connect("t", "out", "out", "in")
    ui.show_patch(editor, patch)
    panel = editor.presets_panel
    editor.docks["Presets"].raise_()
    asked: list[str] = []
    panel.ask_name = lambda title, current: asked.append(title) or "empty"
    click(panel.buttons["Capture"])
    assert editor.patch.presets == {} and asked == [] and editor.undo_stack.count() == 0
    assert panel.notice.isVisible()
    assert panel.notice.text().startswith("Nothing to capture: the patch has no value")
    assert "Nothing to capture" in editor.messages.view.toPlainText()
    shot(editor, "showfix-presets-empty.png")

    # an empty preset from an older file says what recalling it does
    editor.patch.set_preset("old", {})
    panel.select("old")
    assert panel.contents_rows() == [EMPTY_TEXT]
    assert panel.contents_label.text() == "<b>old</b> holds 0 values"
    sent: list = []
    panel.engine_send = sent.append
    click(panel.buttons["Recall"])
    assert sent == [] and panel.notice.isVisible()
    assert panel.notice.text() == (
        "Preset old holds no value of this patch: recalling it changes nothing"
    )


def test_capture_of_the_selected_nodes_and_add_the_pin_chosen_in_the_inspector(editor, ui, qtbot):
    ui.show_patch(editor, show_patch_without_inputs())
    panel = editor.presets_panel
    editor.docks["Presets"].raise_()
    viewer = editor.canvas.viewer()
    click(viewer.viewport(), node_center(editor, "gain"))
    assert editor.canvas.selected_ids() == ["gain"]
    panel.scope.setFocus()
    ui.press(panel.scope, Qt.Key.Key_Down)  # Whole patch -> Selected nodes
    assert panel.scope.currentText() == "Selected nodes"
    panel.ask_name = lambda title, current: "gain only"
    click(panel.buttons["Capture"])
    assert editor.patch.presets["gain only"] == {("gain", "b"): 3.0}

    # nothing selected: nothing to capture, and the panel says why
    editor.canvas.select([])
    click(panel.buttons["Capture"])
    assert list(editor.patch.presets) == ["gain only"]
    assert panel.notice.text() == (
        "Nothing to capture: no node is selected (select nodes, or capture the whole patch); "
        "no preset made"
    )

    # Add: the pin last clicked in the inspector goes into the selected preset
    click(viewer.viewport(), node_center(editor, "offset"))
    field = editor.inspector.pin_widget("b")
    click(field, field.rect().center())
    assert editor.inspector.chosen_pin() == ("offset", "b")
    click_row(panel.list, "gain only")
    steps = editor.undo_stack.count()
    click(panel.buttons["Add"])
    assert editor.patch.presets["gain only"] == {("gain", "b"): 3.0, ("offset", "b"): 0.5}
    assert panel.contents_rows() == ["gain.b = 3.0", "offset.b = 0.5"]
    assert panel.selected_values() == [("offset", "b")]
    assert QApplication.focusWidget() is not panel.seconds  # the focus stays off the transition
    assert editor.undo_stack.count() == steps + 1
    assert editor.undo_stack.undoText() == "add offset.b to preset gain only"
    shot(editor, "showfix-presets-add.png")
    click(panel.buttons["Add"])  # in it already: said, nothing changes
    assert panel.notice.text() == "Nothing to add to gain only: offset.b is in it already"
    assert editor.undo_stack.count() == steps + 1
    editor.undo_stack.undo()
    assert editor.patch.presets["gain only"] == {("gain", "b"): 3.0}
