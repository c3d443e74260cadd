"""Subpatches in the editor, driven by real input: Ctrl+G groups the selection (one undo step),
a double-click enters an instance and Backspace leaves it, edits inside go to the definition's
body (every instance) and undo the same inside or out, the breadcrumb bar and the badges say
where the canvas is and how many instances an edit affects, and the library lists definitions
and adds instances of them."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, QPointF, Qt, QTimer
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.engine.engine import Engine
from app.qt.window import DECORATE_EVERY
from app.session.placement import free_position
from nodes import Patch
from tests.app.conftest import played, wait_built
from tests.app.test_engine import EditorEnd

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def amp_patch() -> Patch:
    """Two instances of `amp` (y = x * 3), fed 1.0 and 2.0."""
    body = Patch()
    body.add_node("subpatch.inlet", {"name": "x"}, (0, 0), node_id="in1")
    body.add_node("math.mul", {"b": 3.0}, (250, 0), node_id="mul")
    body.add_node("subpatch.outlet", {"name": "y"}, (500, 0), node_id="out1")
    body.connect("in1", "out", "mul", "a")
    body.connect("mul", "out", "out1", "in")
    patch = Patch()
    patch.add_definition("amp", body)
    for index, value in ((1, 1.0), (2, 2.0)):
        y = 250.0 * (index - 1)
        patch.add_node("input.float", {"value": value, "max": 4.0}, (0, y), node_id=f"v{index}")
        patch.add_node("subpatch", {"definition": "amp"}, (300, y), node_id=f"amp{index}")
        patch.add_node("output.value", None, (600, y), node_id=f"o{index}")
        patch.connect(f"v{index}", "out", f"amp{index}", "x")
        patch.connect(f"amp{index}", "y", f"o{index}", "in")
    return patch


def chain_patch() -> Patch:
    patch = Patch()
    patch.add_node("input.float", {"value": 0.5}, (0, 0), node_id="speed")
    patch.add_node("math.mul", {"b": 10.0}, (300, 0), node_id="gain")
    patch.add_node("math.add", {"b": 1.0}, (600, 0), node_id="add")
    patch.add_node("output.value", None, (900, 0), node_id="out")
    patch.connect("speed", "out", "gain", "a")
    patch.connect("gain", "out", "add", "a")
    patch.connect("add", "out", "out", "in")
    return patch


def node_center(editor, node_id: str):
    item = editor.canvas.view_node(node_id).view
    rect = item.sceneBoundingRect()
    # below the title: a double-click there is on the node's body
    return editor.canvas.viewer().mapFromScene(QPointF(rect.center().x(), rect.bottom() - 12))


def double_click(editor, node_id: str) -> None:
    """What a double-click sends: a click, then the double-click event (QTest.mouseDClick alone
    sends only the latter)."""
    viewport = editor.canvas.viewer().viewport()
    point = node_center(editor, node_id)
    for click in (QTest.mouseClick, QTest.mouseDClick):
        click(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)


def shown_ids(editor) -> set[str]:
    """The nodes the canvas shows once it has built its level (entering or leaving a level
    builds part of it from the event loop)."""
    wait_built(editor)
    canvas = editor.canvas
    return {canvas.node_id_of(view) for view in canvas.graph.all_nodes()}


def test_ctrl_g_groups_the_selection_as_one_undo_step(editor, ui, qtbot):
    ui.show_patch(editor, chain_patch())
    asked = []
    editor.edit_actions.ask_definition_name = lambda title, default: (
        asked.append(default) or default
    )
    editor.canvas.select(["gain", "add"])
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_G, Qt.KeyboardModifier.ControlModifier)
    assert asked == ["group1"]
    patch = editor.patch
    assert list(patch.definitions) == ["group1"]
    (instance,) = [n.id for n in patch.nodes.values() if n.type_id == "subpatch"]
    assert set(patch.nodes) == {"speed", "out", instance}
    assert shown_ids(editor) == set(patch.nodes)
    assert ui.view_links(editor) == ui.model_links(patch)
    assert editor.canvas.badge_text(instance) == "group1 ×1"
    assert editor.library.definition_item("group1") is not None
    assert editor.undo_stack.count() == 1
    body = patch.definition("group1")
    ui.run_frames(editor)
    assert played(editor).output("speed") == 0.5

    editor.undo_stack.undo()
    assert set(patch.nodes) == {"speed", "gain", "add", "out"}
    assert not patch.definitions
    assert shown_ids(editor) == set(patch.nodes)
    assert ui.view_links(editor) == ui.model_links(patch)
    assert editor.library.definition_item("group1") is None
    editor.undo_stack.redo()
    assert patch.definition("group1") is body  # commands holding the body still edit it
    assert set(patch.nodes) == {"speed", "out", instance}
    assert ui.view_links(editor) == ui.model_links(patch)

    # Ctrl+Shift+G puts the nodes back, again one undo step
    editor.canvas.select([instance])
    ui.press(viewer, Qt.Key.Key_G,
             Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)  # fmt: skip
    assert set(patch.nodes) == {"speed", "gain", "add", "out"} and not patch.definitions
    assert ui.view_links(editor) == ui.model_links(patch)
    editor.undo_stack.undo()
    assert set(patch.nodes) == {"speed", "out", instance}


def test_a_refused_definition_name_is_explained(editor, ui):
    ui.show_patch(editor, chain_patch())
    editor.edit_actions.ask_definition_name = lambda title, default: "a/b"
    editor.canvas.select(["gain"])
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_G, Qt.KeyboardModifier.ControlModifier)
    assert not editor.patch.definitions
    assert "bad definition name 'a/b'" in editor.statusBar().currentMessage()
    assert editor.undo_stack.count() == 0


def test_enter_by_double_click_edit_inside_and_leave_with_backspace(editor, ui, qtbot):
    ui.show_patch(editor, amp_patch())
    patch, canvas = editor.patch, editor.canvas
    body = patch.definition("amp")
    assert canvas.badge_text("amp1") == "amp ×2"
    double_click(editor, "amp1")
    assert canvas.patch is body and canvas.trail == ["amp1"]
    assert shown_ids(editor) == {"in1", "mul", "out1"}
    assert ui.view_links(editor) == ui.model_links(body)
    assert canvas.view_node("in1").view.name == "in: x"
    assert canvas.view_node("out1").view.name == "out: y"
    assert editor.breadcrumbs.text() == "patch / amp1 (amp)"
    assert "affects 2 instances" in editor.breadcrumbs.affects.text()

    # the inspector edits the body: every instance
    canvas.select(["mul"])
    editor.inspector.pin_widget("b").setValue(5.0)  # what typing + Return does
    assert body.value("mul", "b") == 5.0
    assert "affects 2 instances" in editor.statusBar().currentMessage()
    assert editor.undo_stack.count() == 1

    viewer = canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_Backspace)
    assert canvas.patch is patch and canvas.trail == []
    assert shown_ids(editor) == set(patch.nodes)
    assert canvas.selected_ids() == ["amp1"]
    assert editor.breadcrumbs.text() == "patch"
    assert canvas.badge_text("amp2") == "amp ×2"
    # the body edit undoes from outside too; the top-level canvas ignores body events
    editor.undo_stack.undo()
    assert body.value("mul", "b") == 3.0
    assert shown_ids(editor) == set(patch.nodes)


def test_enter_key_enters_and_body_structure_edits_undo_after_leaving(editor, ui):
    ui.show_patch(editor, amp_patch())
    patch, canvas = editor.patch, editor.canvas
    body = patch.definition("amp")
    canvas.select(["amp2"])
    viewer = canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_Return)
    assert canvas.trail == ["amp2"]
    canvas.create_node("math.sin", (250.0, 200.0))
    added = [n for n in body.nodes if n.startswith("sin")]
    assert len(added) == 1 and added[0] in shown_ids(editor)
    ui.press(viewer, Qt.Key.Key_U)
    assert canvas.trail == [] and shown_ids(editor) == set(patch.nodes)
    editor.undo_stack.undo()
    assert added[0] not in body.nodes
    assert shown_ids(editor) == set(patch.nodes)
    # an instance that goes while the canvas is inside it takes the canvas up a level
    canvas.enter("amp2")
    editor.undo_stack.redo()
    assert added[0] in shown_ids(editor)
    canvas.select([])
    patch.remove_node("amp2")
    assert canvas.trail == [] and shown_ids(editor) == set(patch.nodes)
    assert canvas.badge_text("amp1") == "amp ×1"


def test_the_library_lists_definitions_and_adds_instances(editor, ui, qtbot):
    ui.show_patch(editor, amp_patch())
    library = editor.library
    item = library.definition_item("amp")
    assert item is not None and item.text(1) == "×2"
    tree = library.tree
    tree.scrollToItem(item)
    point = tree.visualItemRect(item).center()
    # an item view takes a double-click on the item it was pressed on: press first
    QTest.mouseClick(tree.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     point)  # fmt: skip
    QTest.mouseDClick(tree.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                      point)  # fmt: skip
    patch = editor.patch
    instances = [c_id for _, c_id in patch.instances("amp")]
    assert len(instances) == 3
    (new,) = set(instances) - {"amp1", "amp2"}
    assert new in shown_ids(editor)
    assert editor.canvas.badge_text(new) == "amp ×3"
    assert editor.canvas.badge_text("amp1") == "amp ×3"
    assert library.definition_item("amp").text(1) == "×3"
    # its pins are the definition's
    view = editor.canvas.view_node(new)
    assert list(view.inputs()) == ["definition", "x"] and list(view.outputs()) == ["y"]
    editor.undo_stack.undo()
    assert new not in patch.nodes and editor.canvas.badge_text("amp1") == "amp ×2"


def test_tab_search_offers_definitions(editor, ui, qtbot):
    ui.show_patch(editor, amp_patch())
    viewer = editor.canvas.viewer()
    search = viewer._search_widget

    def type_choice() -> None:
        QTest.keyClicks(search.line_edit, "amp - definition")
        QTest.keyClick(search.line_edit, Qt.Key.Key_Return)

    QTimer.singleShot(200, type_choice)
    QTimer.singleShot(5000, search.close)  # never leave a modal menu open if typing failed
    viewer.setFocus()
    QTest.keyClick(viewer, Qt.Key.Key_Tab)
    qtbot.waitUntil(lambda: len(editor.patch.instances("amp")) == 3)
    assert editor.undo_stack.count() == 1


def test_rename_and_remove_definitions_are_undoable(editor, ui):
    patch = amp_patch()
    patch.add_definition("spare", Patch())
    ui.show_patch(editor, patch)
    editor.edit_actions.ask_definition_name = lambda title, default: "gain"
    editor.edit_actions.rename_definition("amp")
    assert list(patch.definitions) == ["gain", "spare"]
    assert editor.canvas.badge_text("amp1") == "gain ×2"
    editor.edit_actions.remove_definition("gain")  # in use: refused, with where
    assert "used by 2 instance(s)" in editor.statusBar().currentMessage()
    editor.edit_actions.remove_definition("spare")
    assert list(patch.definitions) == ["gain"]
    assert editor.library.definition_item("spare") is None
    editor.undo_stack.undo()
    editor.undo_stack.undo()
    assert list(patch.definitions) == ["amp", "spare"]
    assert editor.canvas.badge_text("amp1") == "amp ×2"


def preview_out(editor) -> str:
    """What the preview shows for the output `out` of the node it previews."""
    return editor.preview.row_widget("out").text()


def test_inside_an_instance_the_inspector_shows_that_instances_values(editor, ui, qtbot):
    ui.show_patch(editor, amp_patch())
    canvas = editor.canvas
    assert played(editor).output("o2", "out") == 6.0
    for instance, expected in (("amp1", 3.0), ("amp2", 6.0)):
        canvas.go_to(0)
        double_click(editor, instance)
        canvas.select(["mul"])
        assert editor.preview.node_id == f"{instance}/mul"
        # the preview follows the reports every DECORATE_EVERY turns of the loop
        ui.run_until(
            editor, lambda expected=expected: preview_out(editor) == f"{expected:g}",
            f"the preview of {instance}/mul", DECORATE_EVERY,
        )  # fmt: skip


def test_screenshot_inside_an_instance(editor, ui, qtbot):
    """Kept as tests/artifacts/subpatch_inside.png: the breadcrumb bar over the body of amp2,
    its inlet and outlet titled with their pin names; subpatch_top.png: the instances' badges."""
    patch = amp_patch()
    patch.add_node("subpatch", {"definition": "amp"}, (300, 500), node_id="amp3")
    ui.show_patch(editor, patch)
    double_click(editor, "amp2")
    canvas = editor.canvas
    canvas.select(["mul"])
    assert editor.breadcrumbs.text() == "patch / amp2 (amp)"
    assert editor.breadcrumbs.affects.text() == "editing definition amp: affects 3 instances"
    # the preview and the node colours follow the reports every DECORATE_EVERY turns
    ui.run_until(editor, lambda: preview_out(editor) == "6", "amp2/mul's preview", DECORATE_EVERY)
    ui.run_frames(editor, 2 * DECORATE_EVERY)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert editor.centralWidget().grab().save(str(ARTIFACTS / "subpatch_inside.png"))
    # and the top level: each instance's badge
    editor.canvas.viewer().setFocus()
    ui.press(editor.canvas.viewer(), Qt.Key.Key_Backspace)
    assert editor.breadcrumbs.text() == "patch"
    assert editor.centralWidget().grab().save(str(ARTIFACTS / "subpatch_top.png"))


def test_copied_instances_bring_their_definition_into_another_patch(editor, ui):
    ui.show_patch(editor, amp_patch())
    viewer = editor.canvas.viewer()
    editor.canvas.select(["v1", "amp1"])
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    ui.show_patch(editor, Patch())
    ui.press(viewer, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    patch = editor.patch
    assert list(patch.definitions) == ["amp"]
    assert sorted(n.type_id for n in patch.nodes.values()) == ["input.float", "subpatch"]
    assert ui.view_links(editor) == ui.model_links(patch) and len(patch.links) == 1
    assert editor.undo_stack.count() == 1
    editor.undo_stack.undo()
    assert not patch.nodes and not patch.definitions
    # pasted into the definition it is an instance of: refused, nothing changes
    editor.undo_stack.redo()
    (instance,) = [n.id for n in patch.nodes.values() if n.type_id == "subpatch"]
    editor.canvas.enter(instance)
    ui.press(viewer, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert "cannot contain itself" in editor.statusBar().currentMessage()
    assert sorted(patch.definition("amp").nodes) == ["in1", "mul", "out1"]
    assert editor.undo_stack.count() == 1


def test_an_edit_inside_a_definition_reaches_the_engine_and_its_output(editor, ui, qtbot):
    """The editor's body edit travels as the engine's ops do (with the definition named); the
    engine's reports carry the level the canvas shows and the values of inner paths."""
    ui.show_patch(editor, amp_patch())
    engine = Engine(Patch())
    end = EditorEnd(engine, editor.patch)  # the document's events, as the window sends them
    try:
        end.channel.send({"type": "watch", "nodes": ["o1", "o2", "amp2/mul"]})
        end.read_until("report", lambda m: m["values"].get("o2", {}).get("out") == 6.0)
        double_click(editor, "amp2")
        editor.canvas.select(["mul"])
        editor.inspector.pin_widget("b").setValue(5.0)
        end.channel.send({"type": "level", "path": "/".join(editor.canvas.trail)})
        report = end.read_until(
            "report",
            lambda m: (
                m["values"].get("o1", {}).get("out") == 5.0
                and m["values"]["o2"]["out"] == 10.0
                and "ids" in m
            ),
        )
        assert report["values"]["amp2/mul"]["out"] == 10.0
        assert set(report["ids"]) >= {"amp2/mul", "amp2/in1"}
        assert report["nodes"]["amp2/mul"][0] == "USER"
        assert engine.patch.definition("amp").value("mul", "b") == 5.0
        assert not any(m["type"] == "resync" for m in end.received)
    finally:
        engine.close()


def test_make_unique_detaches_one_instance_and_undoes(editor, ui):
    ui.show_patch(editor, amp_patch())
    editor.edit_actions.ask_definition_name = lambda title, default: default
    patch, canvas = editor.patch, editor.canvas
    canvas.select(["amp2"])
    editor.edit_actions.make_unique_selection()
    assert patch.value("amp2", "definition") == "amp1"  # the first free name after amp
    assert canvas.badge_text("amp2") == "amp1 ×1" and canvas.badge_text("amp1") == "amp ×1"
    assert editor.library.definition_item("amp1") is not None
    # the copy does not follow the original: an edit inside amp2 leaves amp alone
    canvas.enter("amp2")
    canvas.select(["mul"])
    editor.inspector.pin_widget("b").setValue(7.0)
    assert patch.definition("amp1").value("mul", "b") == 7.0
    assert patch.definition("amp").value("mul", "b") == 3.0
    editor.undo_stack.undo()
    editor.undo_stack.undo()
    # amp2 follows amp again: the canvas, still inside amp2, shows amp's body
    assert canvas.trail == ["amp2"] and canvas.patch is patch.definition("amp")
    canvas.leave()
    assert patch.value("amp2", "definition") == "amp" and list(patch.definitions) == ["amp"]
    assert canvas.badge_text("amp2") == "amp ×2"


def test_an_inlet_renamed_inside_retitles_and_renames_the_instances_pin(editor, ui):
    ui.show_patch(editor, amp_patch())
    canvas = editor.canvas
    double_click(editor, "amp1")
    canvas.select(["in1"])
    line = editor.inspector.pin_widget("name")
    line.setText("level")
    QTest.keyClick(line, Qt.Key.Key_Return)
    assert canvas.view_node("in1").view.name == "in: level"
    canvas.leave()
    assert list(canvas.view_node("amp2").inputs()) == ["definition", "level"]
    assert ui.view_links(editor) == ui.model_links(editor.patch)
    editor.undo_stack.undo()
    assert list(canvas.view_node("amp2").inputs()) == ["definition", "x"]
    assert ui.view_links(editor) == ui.model_links(editor.patch)


def drop(viewport, data, point: QPoint) -> None:
    """What a drag from the library ends with: it enters the canvas, then drops there."""
    buttons, keys = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    QApplication.sendEvent(
        viewport, QDragEnterEvent(point, Qt.DropAction.CopyAction, data, buttons, keys)
    )
    QApplication.sendEvent(
        viewport, QDropEvent(QPointF(point), Qt.DropAction.CopyAction, data, buttons, keys)
    )


def test_a_definition_dropped_from_the_library_makes_an_instance_there(editor, ui):
    ui.show_patch(editor, amp_patch())
    library, canvas = editor.library, editor.canvas
    viewport = canvas.viewer().viewport()
    point = QPoint(200, 150)
    # Under the pointer, or the nearest spot there on no other node.
    dropped_at = canvas.viewer().mapToScene(point)
    spot = free_position(canvas.node_rects(), (dropped_at.x(), dropped_at.y()))
    drop(viewport, library.tree.mimeData([library.definition_item("amp")]), point)
    (new,) = {node_id for _, node_id in editor.patch.instances("amp")} - {"amp1", "amp2"}
    x, y = editor.patch.nodes[new].pos
    assert abs(x - spot[0]) < 1 and abs(y - spot[1]) < 1  # the viewer rounds
    assert canvas.selected_ids() == [new]
    assert editor.undo_stack.count() == 1
    # a node type drags the same way
    (item,) = library.tree.findItems("math.sin", Qt.MatchFlag.MatchRecursive)
    drop(viewport, library.tree.mimeData([item]), point)
    assert any(n.type_id == "math.sin" for n in editor.patch.nodes.values())


def test_the_canvas_context_menu_groups_and_enters(editor, ui):
    ui.show_patch(editor, chain_patch())
    editor.edit_actions.ask_definition_name = lambda title, default: "pair"
    menu = editor.canvas.graph.get_context_menu("graph")
    editor.canvas.select(["gain", "add"])
    menu.get_command("Group (Ctrl+G)").qaction.trigger()
    assert list(editor.patch.definitions) == ["pair"]
    menu.get_command("Enter Instance (Enter)").qaction.trigger()
    assert editor.canvas.patch is editor.patch.definition("pair")
    menu.get_command("Leave Instance (Backspace)").qaction.trigger()
    assert editor.canvas.patch is editor.patch


def test_nested_instances_paths_and_breadcrumb_clicks(editor, ui, qtbot):
    """Group inside a body, enter the inner instance: the trail has three levels, the preview
    reads the nested path, and a click on the first breadcrumb goes back to the top."""
    ui.show_patch(editor, amp_patch())
    editor.edit_actions.ask_definition_name = lambda title, default: "inner"
    canvas = editor.canvas
    double_click(editor, "amp2")
    canvas.select(["mul"])
    viewer = canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_G, Qt.KeyboardModifier.ControlModifier)
    (inner,) = canvas.selected_ids()
    assert editor.patch.definition("amp").nodes[inner].values["definition"] == "inner"
    assert canvas.badge_text(inner) == "inner ×1"  # one instance node, inside amp's body
    ui.press(viewer, Qt.Key.Key_Return)
    assert editor.breadcrumbs.text() == f"patch / amp2 (amp) / {inner} (inner)"
    canvas.select(["mul"])
    assert editor.preview.node_id == f"amp2/{inner}/mul"
    ui.run_until(editor, lambda: preview_out(editor) == "6", "the preview", DECORATE_EVERY)
    top = editor.breadcrumbs.buttons[0]
    QTest.mouseClick(top, Qt.MouseButton.LeftButton)
    assert canvas.trail == [] and canvas.patch is editor.patch
    assert editor.breadcrumbs.text() == "patch"
    # one undo takes the group back, inside amp's body, from the top level
    editor.undo_stack.undo()
    assert "mul" in editor.patch.definition("amp").nodes
    assert "inner" not in editor.patch.definitions


def gain_patch() -> Patch:
    """Definition `glow` (y = 2 * b, b = 1.0) with an inlet `gain` wired to nothing yet, and two
    instances feeding value sinks: each plays 2.0."""
    body = Patch()
    body.add_node("subpatch.inlet", {"name": "gain"}, (0, 0), node_id="gain_in")
    body.add_node("math.mul", {"a": 2.0, "b": 1.0}, (250, 0), node_id="mul")
    body.add_node("subpatch.outlet", {"name": "y"}, (500, 0), node_id="out1")
    body.connect("mul", "out", "out1", "in")
    patch = Patch()
    patch.add_definition("glow", body)
    for index in (1, 2):
        y = 250.0 * (index - 1)
        patch.add_node("subpatch", {"definition": "glow"}, (0, y), node_id=f"glow{index}")
        patch.add_node("output.value", None, (300, y), node_id=f"o{index}")
        patch.connect(f"glow{index}", "y", f"o{index}", "in")
    return patch


def click_node(editor, node_id: str) -> None:
    viewport = editor.canvas.viewer().viewport()
    point = node_center(editor, node_id)
    QTest.mouseClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)
    assert editor.canvas.selected_ids() == [node_id]


def type_number(field, text: str) -> None:
    """Select what a number field holds, type `text` and Return, as a person does."""
    field.setFocus()
    QTest.keyClick(field, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    QTest.keyClicks(field, text)
    QTest.keyClick(field, Qt.Key.Key_Return)
    QApplication.processEvents()


def test_a_new_inlet_wired_in_keeps_every_picture_and_its_default_is_edited_in_the_inspector(
    editor, ui, qtbot
):
    ui.show_patch(editor, gain_patch())
    patch, canvas = editor.patch, editor.canvas
    body = patch.definition("glow")
    ui.run_frames(editor, 2)
    assert (played(editor).output("o1"), played(editor).output("o2")) == (2.0, 2.0)
    click_node(editor, "glow1")  # a new inlet: a float pin at 0.0, editable on the instance
    field = editor.inspector.pin_widget("gain")
    assert type(field).__name__ == "QDoubleSpinBox" and field.value() == 0.0

    double_click(editor, "glow1")
    assert canvas.patch is body
    ui.drag_link(editor, "gain_in", "out", "mul", "b")  # wired in: b held 1.0
    assert body.link_into("mul", "b") is not None
    ui.run_frames(editor, 2)
    # every instance still plays 2.0 (it was 0.0: the picture went black)
    assert (played(editor).output("o1"), played(editor).output("o2")) == (2.0, 2.0)
    assert (patch.value("glow1", "gain"), patch.value("glow2", "gain")) == (1.0, 1.0)

    click_node(editor, "gain_in")  # the inlet's default, as its instances' pin: a float, 1.0
    default = editor.inspector.pin_widget("default")
    assert type(default).__name__ == "QDoubleSpinBox" and default.value() == 1.0
    steps = editor.undo_stack.count()
    type_number(default, "0.5")
    assert body.value("gain_in", "default") == 0.5
    assert editor.undo_stack.count() == steps + 1
    ui.run_frames(editor, 2)
    assert (played(editor).output("o1"), played(editor).output("o2")) == (1.0, 1.0)
    assert editor.inspector.pin_widget("default").value() == 0.5
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    editor.grab().save(str(ARTIFACTS / "showfix-inlet.png"))

    canvas.viewer().setFocus()
    ui.press(canvas.viewer(), Qt.Key.Key_Backspace)  # up to the document: set one instance
    click_node(editor, "glow2")
    type_number(editor.inspector.pin_widget("gain"), "3")
    ui.run_frames(editor, 2)
    assert (played(editor).output("o1"), played(editor).output("o2")) == (1.0, 6.0)
    editor.grab().save(str(ARTIFACTS / "showfix-inlet-instance.png"))
    editor.undo_stack.undo()  # the instance's value
    editor.undo_stack.undo()  # the inlet's default: the instances nobody set follow it back
    ui.run_frames(editor, 2)
    assert (patch.value("glow1", "gain"), patch.value("glow2", "gain")) == (1.0, 1.0)
    assert (played(editor).output("o1"), played(editor).output("o2")) == (2.0, 2.0)


def test_the_inspector_follows_an_instance_pin_that_changes_type(editor, ui):
    ui.show_patch(editor, gain_patch())
    click_node(editor, "glow1")
    assert type(editor.inspector.pin_widget("gain")).__name__ == "QDoubleSpinBox"
    body = editor.patch.definition("glow")
    body.add_node("gpu.solid", {"color": (1.0, 0.5, 0.0, 1.0)}, (250, 200), node_id="solid")
    body.connect("gain_in", "out", "solid", "color")  # the inlet's pin is a colour now
    field = editor.inspector.pin_widget("gain")
    assert type(field).__name__ == "QtColorField" and field.value() == (1.0, 0.5, 0.0, 1.0)
