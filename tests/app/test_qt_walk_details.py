"""Details a person meets walking through the window: the title's `*` and the question before
closing agree after every kind of edit; the demo shows a picture and examples are titled with
their names; a node's failure reaches Messages and a click there selects it; the library speaks
the canvas's classes; the legend shows the heat scale while the heat tint is on; the crossfader
moves a tenth per click in its track. Driven by clicks and key presses on the real window."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QToolBar

from app.engine.local import LocalEngineLink
from app.qt.launch import open_editor
from nodes import LIBRARY, Patch

SHOTS = Path(__file__).resolve().parents[1] / "artifacts"  # screenshots to look at


def knob_patch() -> Patch:
    patch = Patch()
    patch.add_node("input.float", {"value": 0.0, "max": 100.0}, (0, 0), node_id="x")
    patch.add_node("math.mul", {"b": 2.0}, (300, 0), node_id="double")
    patch.add_node("output.value", None, (600, 0), node_id="out")
    patch.connect("x", "out", "double", "a")
    patch.connect("double", "out", "out", "in")
    return patch


def shot(widget, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    widget.grab().save(str(SHOTS / name))


# ------------------------------------------------------------------ b: the title and the question
def test_a_tapped_tempo_shows_in_the_title_and_survives_an_undo_to_the_saved_state(
    editor, ui, dialogs, tmp_path, qtbot
):
    ui.show_patch(editor, knob_patch())
    path = tmp_path / "show.patchbay"
    dialogs.save_path = str(path)
    assert editor.file_actions.save()
    assert "*" not in editor.windowTitle()
    toolbar = editor.findChild(QToolBar, "Transport")
    transport = editor.transport_actions
    taps = iter([0.0, 0.5, 1.0])
    transport.tap_clock = lambda: next(taps)
    tap = toolbar.widgetForAction(transport.tap_action)
    for _ in range(3):
        QTest.mouseClick(tap, Qt.MouseButton.LeftButton)
    assert editor.patch.settings["bpm"] == 120.0
    assert editor.windowTitle().startswith("show.patchbay *")  # no undo step holds it
    # an edit and its undo bring the undo stack back to the saved state: the tempo stays unsaved
    editor.canvas.select(["double"])
    editor.canvas.viewer().setFocus()
    ui.press(editor.canvas.viewer(), Qt.Key.Key_Delete)
    editor.undo_stack.undo()
    assert editor.undo_stack.isClean()
    assert editor.windowTitle().startswith("show.patchbay *") and editor.modified
    dialogs.unsaved_answer = "cancel"
    assert not editor.file_actions.maybe_save_changes()
    assert dialogs.asked_unsaved == 1
    editor.activateWindow()  # shortcuts go to the active window
    qtbot.waitUntil(lambda: QApplication.activeWindow() is editor)
    QTest.keySequence(editor, "Ctrl+S")
    assert "*" not in editor.windowTitle() and not editor.modified


def test_a_live_value_marks_the_title_as_closing_asks(editor, ui, dialogs):
    ui.show_patch(editor, knob_patch())
    assert "*" not in editor.windowTitle()
    editor.live_control.apply_live_values([["x", "value", 3.0]], [])
    assert editor.patch.value("x", "value") == 3.0
    assert "*" in editor.windowTitle() and editor.modified
    dialogs.unsaved_answer = "cancel"
    editor.close()
    assert editor.isVisible() and dialogs.asked_unsaved == 1


# ------------------------------------------------------------------ c: the demo and the examples
def test_the_demo_opens_with_its_name_and_an_output(qtbot, tmp_path, dialogs):
    """(Its picture: tests/gl/test_examples_play.py::test_the_demo_shows_a_picture.)"""
    window = open_editor(None, tmp_path / "state", LocalEngineLink())
    dialogs.install(window)
    qtbot.addWidget(window)
    assert window.windowTitle().startswith("demo (example)")
    assert window.path is None  # no file holds it: Save asks for a name
    outputs = [n for n in window.patch.nodes.values() if n.type_id == "gpu.output"]
    assert len(outputs) == 1 and window.patch.link_into(outputs[0].id, "in") is not None
    dialogs.unsaved_answer = "discard"
    window.close()


def test_an_example_from_the_file_menu_is_titled_with_its_name(editor, ui, qtbot):
    file_menu = next(a.menu() for a in editor.menuBar().actions() if a.text() == "&File")
    (examples,) = [a.menu() for a in file_menu.actions() if a.text() == "E&xamples"]
    (noise,) = [a for a in examples.actions() if a.text() == "noise_color"]
    noise.trigger()
    assert editor.path is None
    assert editor.windowTitle().startswith("noise_color (example) — ")
    editor.file_actions.new_patch()
    assert editor.windowTitle().startswith("untitled")


# ------------------------------------------------------------------ d: failures in Messages
def test_a_nodes_first_failure_reaches_messages_and_a_click_selects_it(editor, ui, qtbot):
    patch = knob_patch()
    patch.add_node("debug.fail", {"message": "broken on purpose"}, (300, 250), node_id="broken")
    patch.add_node("output.value", None, (600, 250), node_id="out2")
    patch.connect("broken", "out", "out2", "in")
    ui.show_patch(editor, patch)

    def reported() -> bool:
        ui.run_frames(editor)
        return "node: broken failed:" in editor.messages.text()

    qtbot.waitUntil(reported)
    ui.run_frames(editor, 5)
    lines = [line for line in editor.messages.text().splitlines() if "broken" in line]
    assert len(lines) == 1 and "broken on purpose" in lines[0]  # the first failure, once
    dock = editor.docks["Messages"]
    dock.show()
    dock.raise_()
    qtbot.waitUntil(editor.messages.view.isVisible)
    editor.canvas.select([])
    view = editor.messages.view
    block = next(b for b in _blocks(view) if "broken failed" in b.text())
    rect = view.blockBoundingGeometry(block).translated(view.contentOffset())
    where = QPoint(int(rect.left()) + 40, int(rect.center().y()))
    QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     where)  # fmt: skip
    assert editor.canvas.selected_ids() == ["broken"]
    shot(editor, "menus-messages.png")


def _blocks(view):
    block = view.document().begin()
    while block.isValid():
        yield block
        block = block.next()


# ------------------------------------------------------------------ e: one vocabulary
def test_the_library_and_help_name_the_canvas_class_each_annotation_leads_to(editor, ui, qtbot):
    tree = editor.library.tree
    (item,) = tree.findItems("time.seconds", Qt.MatchFlag.MatchRecursive)
    assert item.text(1) == "nondeterministic → HOT"
    (item,) = tree.findItems("input.float", Qt.MatchFlag.MatchRecursive)
    assert item.text(1) == "user_input → USER"
    (item,) = tree.findItems("math.add", Qt.MatchFlag.MatchRecursive)
    assert item.text(1) == "deterministic → CONST*"  # the tooltip says when it is not
    assert "USER when a user input feeds it" in item.toolTip(1)
    tree.scrollToItem(item)
    QTest.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     tree.visualItemRect(item).center())  # fmt: skip
    QTest.keyClick(editor, Qt.Key.Key_F1)
    qtbot.waitUntil(editor.node_help.isVisible)
    assert "On the canvas it is CONST" in editor.node_help.text()
    assert LIBRARY["math.add"].summary in editor.node_help.text()
    shot(editor.library, "menus-library.png")


# ------------------------------------------------------------------ f: the legend and the heat tint
def test_the_legend_shows_the_heat_scale_while_the_heat_tint_is_on(editor, ui, qtbot):
    ui.show_patch(editor, knob_patch())
    legend = editor.legend
    assert any(text.startswith("CONST") for text in legend.texts)
    assert not any(text.startswith("heat") for text in legend.texts)
    view_menu = next(a.menu() for a in editor.menuBar().actions() if a.text() == "&View")
    heat = next(a for a in view_menu.actions() if a.text() == "&Heat tint")
    heat.trigger()
    assert heat.isChecked()
    assert any(text.startswith("heat") and "cold" in text for text in legend.texts)
    assert not any(text.startswith(("CONST", "USER", "HOT")) for text in legend.texts)
    assert legend._rows["heat"][1].isVisible() and not legend._rows["CONST"][1].isVisible()
    shot(editor, "menus-heat-legend.png")
    heat.trigger()
    assert any(text.startswith("CONST") for text in legend.texts)
    assert not legend._rows["heat"][1].isVisible() and legend._rows["HOT"][1].isVisible()


# ------------------------------------------------------------------ h: the crossfader
def test_a_click_in_the_crossfaders_track_moves_a_tenth_and_an_arrow_one_percent(editor, ui, qtbot):
    ui.show_patch(editor, knob_patch())
    panel = editor.presets_panel
    names = iter(["A", "B"])
    panel.ask_name = lambda title, current: next(names)
    panel.buttons["Capture"].click()
    editor.patch.set_value("x", "value", 10.0)
    panel.buttons["Capture"].click()
    dock = editor.docks["Presets"]
    dock.show()
    dock.raise_()
    fader = panel.crossfader
    qtbot.waitUntil(fader.isVisible)
    assert fader.value() == 0
    QTest.mouseClick(fader, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     QPoint(fader.width() * 3 // 4, fader.height() // 2))  # fmt: skip
    assert fader.value() == fader.maximum() // 10
    fader.setFocus()
    QTest.keyClick(fader, Qt.Key.Key_Right)
    assert fader.value() == fader.maximum() // 10 + fader.maximum() // 100
    ui.run_frames(editor)
    assert editor.patch.value("x", "value") == pytest.approx(1.1)


# ------------------------------------------------------------------ i: the README's first patch
def tab_add(editor, qtbot, type_id: str) -> str:
    """Tab over the canvas, type a node type, Enter: the new node's id."""
    viewer = editor.canvas.viewer()
    search = viewer._search_widget
    before = set(editor.patch.nodes)

    def type_choice() -> None:
        QTest.keyClicks(search.line_edit, type_id)
        QTest.keyClick(search.line_edit, Qt.Key.Key_Return)

    QTimer.singleShot(200, type_choice)
    QTimer.singleShot(5000, search.close)  # never leave a modal menu open if typing failed
    viewer.setFocus()
    QTest.keyClick(viewer, Qt.Key.Key_Tab)
    qtbot.waitUntil(lambda: len(editor.patch.nodes) > len(before))
    (new,) = set(editor.patch.nodes) - before
    assert editor.patch.nodes[new].type_id == type_id
    return new


def test_the_readmes_first_patch_works_as_written(editor, ui, qtbot, dialogs, tmp_path):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    assert "## Your first patch in five minutes" in readme
    assert readme.count("patchbay nodes [--json]") == 1
    ui.show_patch(editor, knob_patch())
    dialogs.unsaved_answer = "discard"
    editor.activateWindow()  # shortcuts go to the active window
    qtbot.waitUntil(lambda: QApplication.activeWindow() is editor)
    QTest.keySequence(editor, "Ctrl+N")  # 1. a new, empty patch
    assert editor.patch.nodes == {}
    noise = tab_add(editor, qtbot, "gpu.noise")  # 2.
    output = tab_add(editor, qtbot, "gpu.output")
    clock = tab_add(editor, qtbot, "time.seconds")
    for node_id, pos in ((clock, (0, 0)), (noise, (300, 0)), (output, (600, 0))):
        editor.patch.set_position(node_id, pos)  # apart, wherever the pointer was
    ui.drag_link(editor, noise, "out", output, "in")  # 3.
    ui.drag_link(editor, clock, "out", noise, "time")  # 4.
    assert ui.model_links(editor.patch) == {(noise, "out", output, "in"),
                                            (clock, "out", noise, "time")}  # fmt: skip
    editor.canvas.select([noise])  # 5. the inspector edits a pin
    field = editor.inspector.pin_widget("scale")
    field.setFocus()
    field.selectAll()
    QTest.keyClicks(field, "3")
    QTest.keyClick(field, Qt.Key.Key_Return)
    assert editor.patch.value(noise, "scale") == 3.0
    dialogs.save_path = str(tmp_path / "my.patchbay")
    editor.activateWindow()  # shortcuts go to the active window
    qtbot.waitUntil(lambda: QApplication.activeWindow() is editor)
    QTest.keySequence(editor, "Ctrl+S")  # 6.
    assert (tmp_path / "my.patchbay").exists() and editor.windowTitle().startswith("my.patchbay")
