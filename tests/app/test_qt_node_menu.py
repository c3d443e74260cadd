"""A node's own menu on a right-click (Rename, Delete, Duplicate, Help, Why did this run?, Learn,
Expose), each item enabled only where it can act, and the canvas menu's commands enabled the same
way; driven by right-clicks and clicks on the real window."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QPointF, Qt, QTimer
from PySide6.QtGui import QContextMenuEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMenu

from nodes import Patch
from nodes.document.bindings import Binding

SHOTS = Path(__file__).resolve().parents[1] / "artifacts"  # screenshots to look at


def knob_patch() -> Patch:
    patch = Patch()
    patch.add_node("time.seconds", None, (0, 0), node_id="t")
    patch.add_node("math.add", {"b": 1.0}, (300, 0), node_id="add")
    patch.add_node("output.value", None, (600, 0), node_id="out")
    patch.add_node("input.float", {"value": 0.5}, (0, 250), node_id="knob")
    patch.connect("t", "out", "add", "a")
    patch.connect("add", "out", "out", "in")
    return patch


def node_point(editor, node_id: str) -> QPointF:
    """A point on a node's title bar, in viewport coordinates."""
    item = editor.canvas.view_node(node_id).view
    return editor.canvas.viewer().mapFromScene(item.mapToScene(QPointF(20.0, 8.0)))


def right_click(editor, point) -> None:
    """A right-click at a viewport point: press, the context menu event, release (the menu
    runs until closed)."""
    viewport = editor.canvas.viewer().viewport()
    QTest.mousePress(viewport, Qt.MouseButton.RightButton, Qt.KeyboardModifier.NoModifier, point)
    event = QContextMenuEvent(QContextMenuEvent.Reason.Mouse, point, viewport.mapToGlobal(point))
    QApplication.sendEvent(viewport, event)
    QTest.mouseRelease(viewport, Qt.MouseButton.RightButton, Qt.KeyboardModifier.NoModifier, point)


def in_menu(qtbot, open_menu: Callable[[], None], act: Callable[[QMenu], None]) -> None:
    """Open a modal menu with `open_menu()` and run `act(menu)` while it shows (`act` clicks an
    item, or the menu is closed after it)."""
    done: list[bool] = []

    def look() -> None:
        menu = QApplication.activePopupWidget()
        if not isinstance(menu, QMenu):
            QTimer.singleShot(20, look)
            return
        try:
            act(menu)
        finally:  # a failed step must not leave the modal menu open
            while isinstance(popup := QApplication.activePopupWidget(), QMenu):
                popup.close()
            done.append(True)

    QTimer.singleShot(20, look)
    open_menu()
    qtbot.waitUntil(lambda: bool(done))
    QCoreApplication.processEvents()


def action(menu: QMenu, text: str):
    (found,) = [a for a in menu.actions() if a.text() == text]
    return found


def click(menu: QMenu, text: str) -> None:
    QTest.mouseClick(menu, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     menu.actionGeometry(action(menu, text)).center())  # fmt: skip


def click_in_submenu(qtbot, menu: QMenu, title: str, text: str) -> None:
    """Open the submenu `title` with a click and click its item `text`."""
    click(menu, title)
    sub = action(menu, title).menu()
    qtbot.waitUntil(sub.isVisible)
    click(sub, text)


def test_right_clicking_a_node_gives_its_menu_and_delete_deletes_it(editor, ui, qtbot):
    ui.show_patch(editor, knob_patch())
    seen: dict[str, bool] = {}

    def read_and_delete(menu: QMenu) -> None:
        seen.update({a.text(): a.isEnabled() for a in menu.actions() if not a.isSeparator()})
        SHOTS.mkdir(parents=True, exist_ok=True)
        menu.grab().save(str(SHOTS / "menus-node-menu.png"))
        click(menu, "Delete")

    in_menu(qtbot, lambda: right_click(editor, node_point(editor, "add")), read_and_delete)
    assert list(seen) == ["Rename…", "Delete", "Duplicate", "Help", "Why did this run?",
                          "Learn", "Expose"]  # fmt: skip
    assert seen == {"Rename…": True, "Delete": True, "Duplicate": True, "Help": True,
                    "Why did this run?": True, "Learn": True, "Expose": False}  # fmt: skip
    assert "add" not in editor.patch.nodes  # the node right-clicked, selected by the click
    assert editor.undo_stack.undoText() == "delete 1 node"
    editor.undo_stack.undo()
    assert "add" in editor.patch.nodes
    assert editor.canvas.graph.undo_stack().count() == 0


def test_expose_says_why_not_at_the_top_level_and_learn_lists_only_free_number_pins(
    editor, ui, qtbot
):
    ui.show_patch(editor, knob_patch())
    found: dict[str, object] = {}

    def learn_b(menu: QMenu) -> None:
        expose = action(menu, "Expose")
        found["expose tip"] = expose.toolTip()
        found["learn"] = [a.text() for a in action(menu, "Learn").menu().actions()]
        click_in_submenu(qtbot, menu, "Learn", "b")

    in_menu(qtbot, lambda: right_click(editor, node_point(editor, "add")), learn_b)
    assert "inside a definition" in str(found["expose tip"])
    assert found["learn"] == ["b"]  # `a` is linked
    assert editor.live_control.learn.target == ("add", "b")
    editor.live_control.learn.cancel(quiet=True)


def test_rename_gives_a_new_id_that_links_bindings_and_presets_follow(editor, ui, qtbot):
    patch = knob_patch()
    patch.set_binding("b1", Binding("osc:/fader", "knob", "value"))
    patch.set_preset("calm", {("knob", "value"): 0.25})
    patch.connect("knob", "out", "add", "b")
    ui.show_patch(editor, patch)
    editor.edit_actions.node_menu.ask_node_name = lambda title, label, current: "speed"
    in_menu(qtbot, lambda: right_click(editor, node_point(editor, "knob")),
            lambda menu: click(menu, "Rename…"))  # fmt: skip
    doc = editor.patch
    assert "speed" in doc.nodes and "knob" not in doc.nodes
    assert doc.link_into("add", "b").src == "speed"
    assert doc.bindings["b1"].node == "speed"
    assert doc.presets["calm"] == {("speed", "value"): 0.25}
    assert editor.canvas.selected_ids() == ["speed"]
    editor.undo_stack.undo()
    assert "knob" in doc.nodes and doc.link_into("add", "b").src == "knob"
    assert doc.bindings["b1"].node == "knob"
    # a taken id is refused, with the reason
    editor.edit_actions.node_menu.ask_node_name = lambda title, label, current: "t"
    in_menu(qtbot, lambda: right_click(editor, node_point(editor, "knob")),
            lambda menu: click(menu, "Rename…"))  # fmt: skip
    assert "knob" in doc.nodes and "already used" in editor.messages.text()


def test_expose_inside_a_definition_gives_its_instances_a_pin(editor, ui, qtbot):
    ui.show_patch(editor, knob_patch())
    editor.edit_actions.ask_definition_name = lambda title, default: "adder"
    editor.canvas.select(["add"])
    editor.edit_actions.group_selection()
    (instance,) = editor.canvas.selected_ids()
    assert editor.canvas.enter(instance)
    ui.wait_built(editor)
    body = editor.canvas.patch
    inside = next(n for n in body.nodes if body.nodes[n].type_id == "math.add")

    def expose_b(menu: QMenu) -> None:
        assert action(menu, "Expose").isEnabled()
        assert not action(menu, "Learn").isEnabled()  # bindings are the document's
        click_in_submenu(qtbot, menu, "Expose", "b as an inlet")

    in_menu(qtbot, lambda: right_click(editor, node_point(editor, inside)), expose_b)
    link = body.link_into(inside, "b")
    assert link is not None and body.nodes[link.src].type_id == "subpatch.inlet"
    assert body.nodes[link.src].values["name"] == "b"
    pins = [pin.name for pin in editor.patch.nodes[instance].inputs]
    assert "b" in pins  # the instance, outside, has the pin now
    editor.undo_stack.undo()
    assert body.link_into(inside, "b") is None


def test_why_did_this_run_shows_the_path_from_the_cause(editor, ui, qtbot):
    ui.show_patch(editor, knob_patch())
    ui.run_frames(editor, 3)
    in_menu(qtbot, lambda: right_click(editor, node_point(editor, "add")),
            lambda menu: click(menu, "Why did this run?"))  # fmt: skip
    panel = editor.profiling.profiler_panel
    assert editor.docks["Profiler"].isVisible()
    assert panel.explained == "add"

    def explained() -> bool:
        ui.run_frames(editor)
        return "HOT because" in panel.why.toPlainText()

    qtbot.waitUntil(explained)
    first = panel.why.toPlainText().splitlines()[0]
    assert first.endswith(": t -> this node"), first  # from the cause, not the node itself


def test_the_canvas_menu_enables_only_what_can_act(editor, ui, qtbot):
    ui.show_patch(editor, knob_patch())
    viewer = editor.canvas.viewer()
    empty = viewer.mapFromScene(QPointF(150.0, 600.0))
    states: dict[str, bool] = {}

    def read(menu: QMenu) -> None:
        states.update({a.text(): a.isEnabled() for a in menu.actions() if not a.isSeparator()})
        SHOTS.mkdir(parents=True, exist_ok=True)
        menu.grab().save(str(SHOTS / "menus-canvas-menu.png"))

    editor.canvas.select([])
    in_menu(qtbot, lambda: right_click(editor, empty), read)
    assert states["Add Backdrop Around Selection"]
    assert not states["&Undo"] and not states["&Redo"]  # nothing edited yet
    for text in ("Rename Backdrop…", "Remove Backdrop", "Group (Ctrl+G)",
                 "Ungroup (Ctrl+Shift+G)", "Make Unique", "Enter Instance (Enter)",
                 "Leave Instance (Backspace)"):  # fmt: skip
        assert not states[text], text
    editor.canvas.select(["add", "out"])
    in_menu(qtbot, lambda: right_click(editor, empty), read)
    assert states["Group (Ctrl+G)"] and not states["Enter Instance (Enter)"]
