"""Canvas gestures driven with real mouse and key input: each is one undo step on the app's stack,
the canvas always shows what the Patch holds, and refused links never change anything. A patch
loaded progressively is complete before any edit, gesture or node lookup sees the canvas. Zoomed
out, nodes are plain rectangles that keep their status colours and outlines, and links plain
lines; zoomed back in, both are drawn in full again."""

from __future__ import annotations

from collections import Counter

import pytest
from PySide6.QtCore import QCoreApplication, QPoint, QPointF, Qt, QTimer
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.bench.patches import grid_chain
from app.qt.canvas.canvas import (
    CLASS_COLORS,
    DEFERRED_BORDER,
    FAILED_COLOR,
    SELECTED_OUTLINE,
    SIMPLE_BELOW_ZOOM,
)
from app.session.placement import free_position
from nodes import Patch


def small_patch() -> Patch:
    patch = Patch()
    patch.add_node("value.float", {"value": 2.0}, (0, 0), node_id="a")
    patch.add_node("math.add", {"b": 1.0}, (300, 0), node_id="b")
    patch.add_node("output.value", None, (600, 0), node_id="c")
    patch.add_node("math.add", None, (300, 220), node_id="d")
    return patch


def assert_in_sync(editor, ui) -> None:
    assert ui.view_links(editor) == ui.model_links(editor.patch)
    assert {editor.canvas.node_id_of(v) for v in editor.canvas.graph.all_nodes()} == set(
        editor.patch.nodes
    )


def test_patch_edits_show_on_canvas_without_echo(editor, ui):
    ui.show_patch(editor, small_patch())
    editor.patch.connect("a", "out", "b", "a")
    assert_in_sync(editor, ui)
    assert editor.undo_stack.count() == 0  # nothing came back as a user gesture
    assert editor.canvas.graph.undo_stack().count() == 0


def test_drag_connect_is_one_undo_step(editor, ui):
    ui.show_patch(editor, small_patch())
    ui.drag_link(editor, "a", "out", "b", "a")
    assert ui.model_links(editor.patch) == {("a", "out", "b", "a")}
    assert editor.undo_stack.count() == 1
    assert_in_sync(editor, ui)
    editor.undo_stack.undo()
    assert ui.model_links(editor.patch) == set()
    assert_in_sync(editor, ui)
    editor.undo_stack.redo()
    assert ui.model_links(editor.patch) == {("a", "out", "b", "a")}
    assert_in_sync(editor, ui)


def test_drag_that_closes_a_cycle_is_refused_with_reason(editor, ui):
    ui.show_patch(editor, small_patch())
    editor.patch.connect("b", "out", "d", "a")
    before = ui.model_links(editor.patch)
    ui.drag_link(editor, "d", "out", "b", "a")
    assert ui.model_links(editor.patch) == before
    assert editor.undo_stack.count() == 0
    assert "cycle" in editor.statusBar().currentMessage()
    assert_in_sync(editor, ui)


def test_drag_onto_occupied_input_replaces_in_one_step(editor, ui):
    ui.show_patch(editor, small_patch())
    editor.patch.connect("a", "out", "b", "a")
    ui.drag_link(editor, "d", "out", "b", "a")
    assert ui.model_links(editor.patch) == {("d", "out", "b", "a")}
    assert editor.undo_stack.count() == 1
    assert_in_sync(editor, ui)
    editor.undo_stack.undo()
    assert ui.model_links(editor.patch) == {("a", "out", "b", "a")}
    assert_in_sync(editor, ui)


def test_drag_link_off_an_input_disconnects(editor, ui):
    ui.show_patch(editor, small_patch())
    editor.patch.connect("a", "out", "b", "a")
    start = editor.canvas.port_scene_pos("b", "a", output=False)
    ui.drag(editor, start, start + QPointF(0, 160))
    assert ui.model_links(editor.patch) == set()
    assert editor.undo_stack.count() == 1
    assert_in_sync(editor, ui)
    editor.undo_stack.undo()
    assert ui.model_links(editor.patch) == {("a", "out", "b", "a")}
    assert_in_sync(editor, ui)


def test_dragging_a_node_moves_it_in_one_step(editor, ui):
    ui.show_patch(editor, small_patch())
    item = editor.canvas.view_node("d").view
    start = item.sceneBoundingRect().topLeft() + QPointF(40, 10)
    ui.drag(editor, start, start + QPointF(120, 60))
    moved = editor.patch.nodes["d"].pos
    assert moved != (300.0, 220.0)
    assert editor.undo_stack.count() == 1
    editor.undo_stack.undo()
    assert editor.patch.nodes["d"].pos == (300.0, 220.0)
    assert tuple(round(c) for c in item.xy_pos) == (300, 220)
    editor.undo_stack.redo()
    assert editor.patch.nodes["d"].pos == moved


def test_what_the_canvas_shows_is_never_an_undo_step_of_its_own(editor, ui):
    # Status colours, tints, selections and positions the Patch moves are applied to the view;
    # none of them may pile up in NodeGraphQt's private undo stack (nor in the document's).
    ui.show_patch(editor, small_patch())
    canvas = editor.canvas
    view_stack = canvas.graph.undo_stack()
    canvas.decorate("a", "USER", "ok", None)
    canvas.decorate("d", "HOT", "failed", "boom")
    assert canvas.body_color("a") == CLASS_COLORS["USER"]
    assert canvas.body_color("d") == FAILED_COLOR
    canvas.set_tints({"a": (200, 10, 10)})
    assert canvas.body_color("a") == (200, 10, 10)
    canvas.set_tints({})
    assert canvas.body_color("a") == CLASS_COLORS["USER"]
    canvas.select(["a", "b"])
    assert sorted(canvas.selected_ids()) == ["a", "b"]
    canvas.select(["c"])
    assert canvas.selected_ids() == ["c"]
    canvas.select([])
    assert canvas.selected_ids() == []
    editor.patch.set_position("b", (340.0, 40.0))
    assert tuple(canvas.view_node("b").pos()) == (340.0, 40.0)
    assert view_stack.count() == 0
    assert editor.undo_stack.count() == 0


def test_tab_search_typing_creates_a_node(editor, ui, qtbot):
    ui.show_patch(editor, small_patch())
    viewer = editor.canvas.viewer()
    search = viewer._search_widget

    def type_choice() -> None:
        QTest.keyClicks(search.line_edit, "math.mix")
        QTest.keyClick(search.line_edit, Qt.Key.Key_Return)

    QTimer.singleShot(200, type_choice)
    QTimer.singleShot(5000, search.close)  # never leave a modal menu open if typing failed
    viewer.setFocus()
    QTest.keyClick(viewer, Qt.Key.Key_Tab)
    qtbot.waitUntil(lambda: any(n.type_id == "math.mix" for n in editor.patch.nodes.values()))
    (new,) = [n.id for n in editor.patch.nodes.values() if n.type_id == "math.mix"]
    assert editor.undo_stack.count() == 1
    assert_in_sync(editor, ui)
    editor.undo_stack.undo()
    assert new not in editor.patch.nodes
    assert_in_sync(editor, ui)
    editor.undo_stack.redo()
    assert new in editor.patch.nodes


def test_delete_key_removes_selection_with_links_and_undo_restores(editor, ui):
    ui.show_patch(editor, small_patch())
    editor.patch.connect("a", "out", "b", "a")
    editor.patch.connect("b", "out", "c", "in")
    editor.canvas.select(["b"])
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_Delete)
    assert "b" not in editor.patch.nodes and ui.model_links(editor.patch) == set()
    assert_in_sync(editor, ui)
    ui.press(viewer, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert ui.model_links(editor.patch) == {("a", "out", "b", "a"), ("b", "out", "c", "in")}
    assert_in_sync(editor, ui)
    ui.press(
        viewer,
        Qt.Key.Key_Z,
        Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
    )
    assert "b" not in editor.patch.nodes
    assert_in_sync(editor, ui)


def test_copy_paste_and_duplicate_keys(editor, ui):
    ui.show_patch(editor, small_patch())
    editor.patch.connect("a", "out", "b", "a")
    editor.canvas.select(["a", "b"])
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    ui.press(viewer, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert len(editor.patch.nodes) == 6
    pasted = editor.canvas.selected_ids()
    assert len(pasted) == 2 and not {"a", "b"} & set(pasted)
    assert len(editor.patch.links) == 2  # the link between the copies came along
    ui.press(viewer, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    assert len(editor.patch.nodes) == 8 and len(editor.patch.links) == 3
    assert editor.undo_stack.count() == 2
    assert_in_sync(editor, ui)
    editor.undo_stack.undo()
    editor.undo_stack.undo()
    assert set(editor.patch.nodes) == {"a", "b", "c", "d"}
    assert_in_sync(editor, ui)


def test_library_double_click_creates_node(editor, ui, qtbot):
    ui.show_patch(editor, small_patch())
    tree = editor.library.tree
    editor.library.filter.setText("lfo")
    item = next(
        tree.topLevelItem(i).child(j)
        for i in range(tree.topLevelItemCount())
        for j in range(tree.topLevelItem(i).childCount())
        if not tree.topLevelItem(i).child(j).isHidden()
    )
    assert item.text(0) == "time.lfo"
    rect = tree.visualItemRect(item)
    for click in (QTest.mouseClick, QTest.mouseDClick):  # a double click follows a click
        click(tree.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
              rect.center())  # fmt: skip
    QCoreApplication.processEvents()
    assert [n.type_id for n in editor.patch.nodes.values()].count("time.lfo") == 1
    assert editor.undo_stack.count() == 1
    assert_in_sync(editor, ui)


def start_progressive_load(editor, size: int = 30) -> Patch:
    """Open a `size`-node chain with a canvas that builds one step per event-loop turn."""
    editor.canvas.LOAD_SLICE_S = 0.0
    patch = grid_chain(size)
    editor.set_patch(patch, None)
    assert editor.canvas.loading
    assert 0 < len(editor.canvas.graph.all_nodes()) < size
    return patch


def test_progressive_load_completes_from_the_event_loop_and_frames_then(editor, ui, qtbot):
    patch = start_progressive_load(editor)
    assert editor.canvas._progress.isVisible()
    qtbot.waitUntil(lambda: not editor.canvas.loading)
    assert not editor.canvas._progress.isVisible()
    assert_in_sync(editor, ui)
    viewer = editor.canvas.viewer()
    shown = viewer.mapToScene(viewer.viewport().rect()).boundingRect()
    first, last = patch.nodes["n0"].pos, patch.nodes["n29"].pos
    # The frame asked for while loading was done at the end: the chain is too long to be read
    # whole, so the view shows its start at the least readable zoom.
    assert shown.contains(QPointF(*first))
    assert not shown.contains(QPointF(*last))
    assert viewer.transform().m11() == pytest.approx(editor.canvas.readable_zoom(), rel=0.02)


def test_patch_edits_while_loading_finish_the_load_first(editor, ui):
    patch = start_progressive_load(editor)
    patch.remove_node("n28")  # never built: its links go first, then the node
    assert not editor.canvas.loading
    assert_in_sync(editor, ui)
    patch.connect("n27", "out", "n29", "in")
    assert_in_sync(editor, ui)


def test_a_press_on_the_canvas_while_loading_finishes_the_load_first(editor, ui):
    start_progressive_load(editor)
    viewport = editor.canvas.viewer().viewport()
    QTest.mouseClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     viewport.rect().center())  # fmt: skip
    assert not editor.canvas.loading
    assert_in_sync(editor, ui)
    assert editor.undo_stack.count() == 0


def test_a_drop_on_the_canvas_while_loading_lands_where_it_is_dropped(editor, ui):
    """A drop maps its point with the view as it is once loaded and framed: the node lands under
    the pointer, not where the pointer was before the frame asked for while loading moved it."""
    start_progressive_load(editor)
    editor.canvas.frame(None, readable=True)  # as opening a file asks, done when loaded
    viewport = editor.canvas.viewer().viewport()
    library = editor.library
    (item,) = library.tree.findItems("math.sin", Qt.MatchFlag.MatchRecursive)
    data = library.tree.mimeData([item])
    point = QPoint(200, 150)
    buttons, keys = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    QApplication.sendEvent(
        viewport, QDragEnterEvent(point, Qt.DropAction.CopyAction, data, buttons, keys)
    )
    assert not editor.canvas.loading
    QApplication.sendEvent(
        viewport, QDropEvent(QPointF(point), Qt.DropAction.CopyAction, data, buttons, keys)
    )
    (new,) = [n for n in editor.patch.nodes.values() if n.type_id == "math.sin"]
    # Under the pointer, or the nearest spot there on no other node.
    dropped = editor.canvas.viewer().mapToScene(point)
    others = [r for node_id, r in zip(editor.canvas._views, editor.canvas.node_rects(), strict=True)
              if node_id != new.id]  # fmt: skip
    spot = free_position(others, (dropped.x(), dropped.y()))
    at = editor.canvas.viewer().mapFromScene(QPointF(*new.pos))
    wanted = editor.canvas.viewer().mapFromScene(QPointF(*spot))
    assert (at - wanted).manhattanLength() <= 2  # the viewer rounds to whole scene units
    assert_in_sync(editor, ui)


def test_a_wheel_zoom_while_loading_is_kept_when_the_load_ends(editor, qtbot):
    """The frame asked for while loading is done before the wheel zooms, not after it: the zoom
    a person made while a big patch was drawn stays."""
    start_progressive_load(editor)
    editor.canvas.frame(None, readable=True)  # as opening a file asks, done when loaded
    viewer = editor.canvas.viewer()
    point = QPointF(200, 150)
    wheel = QWheelEvent(
        point, viewer.viewport().mapToGlobal(point), QPoint(0, 0), QPoint(0, 240),
        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase,
        False,
    )  # fmt: skip
    framed = editor.canvas.readable_zoom()
    QApplication.sendEvent(viewer.viewport(), wheel)
    assert not editor.canvas.loading
    zoomed = viewer.transform().m11()
    assert zoomed > framed * 1.05  # zoomed in from the framed view
    qtbot.wait(50)  # nothing left to move the view afterwards
    assert viewer.transform().m11() == pytest.approx(zoomed)


def test_selecting_while_loading_finishes_the_load_first(editor):
    patch = start_progressive_load(editor)
    editor.canvas.select(patch.nodes)
    assert not editor.canvas.loading
    assert sorted(editor.canvas.selected_ids()) == sorted(patch.nodes)


def test_opening_another_patch_while_loading_drops_the_rest(editor, ui, qtbot):
    start_progressive_load(editor)
    editor.canvas.LOAD_SLICE_S = 1.0
    editor.set_patch(small_patch(), None)
    assert not editor.canvas.loading
    assert_in_sync(editor, ui)


def test_a_node_decorated_before_it_is_built_shows_it_once_built(editor):
    start_progressive_load(editor)
    editor.canvas.decorate("n29", "HOT", "failed", "boom")
    editor.canvas.finish_loading()
    assert editor.canvas.view_node("n29").view.toolTip().endswith("boom")


# ---------------------------------------------------------------------- level of detail
def zoom_and_paint(editor, scale: float):
    """Show the canvas at `scale` (screen pixels per scene unit) around its centre and paint it
    once; returns the painted viewport as an image."""
    viewer = editor.canvas.viewer()
    size = viewer.viewport().size()
    x, y = editor.canvas.view_center()
    w, h = size.width() / scale, size.height() / scale
    viewer.set_scene_rect([x - w / 2, y - h / 2, w, h])
    assert abs(viewer.transform().m11() - scale) < 0.01 * scale
    return viewer.viewport().grab().toImage()


def linked_small_patch() -> Patch:
    patch = small_patch()
    patch.connect("a", "out", "b", "a")
    patch.connect("b", "out", "c", "in")
    return patch


def drawn_simple(editor) -> dict:
    """For each node and link: drawn simplified, with its details (text, ports, arrow) skipped."""
    canvas = editor.canvas
    state = {}
    for node_id in canvas.patch.nodes:
        item = canvas.view_node(node_id).view
        details = [c for c in item.childItems() if c is not item._x_item]
        assert {c.opacity() for c in details} == ({0.0} if item.simple else {1.0})
        state[node_id] = item.simple
    for pipe in canvas.viewer().all_pipes():
        assert pipe._dir_pointer.opacity() == (0.0 if pipe.simple else 1.0)
        assert pipe.isVisible()
        state[canvas._link_of(pipe.output_port, pipe.input_port)] = pipe.simple
    return state


def test_zoomed_out_canvas_is_drawn_simply_and_in_full_again_when_zoomed_in(editor, ui):
    ui.show_patch(editor, linked_small_patch())
    canvas = editor.canvas
    sizes = {n: canvas.view_node(n).view.boundingRect() for n in canvas.patch.nodes}
    zoom_and_paint(editor, 1.0)
    assert set(drawn_simple(editor).values()) == {False}
    zoom_and_paint(editor, SIMPLE_BELOW_ZOOM * 0.8)
    state = drawn_simple(editor)
    assert len(state) == 6 and set(state.values()) == {True}
    port = canvas.port_scene_pos("b", "a", output=False)
    hit = {type(item).__name__ for item in canvas.viewer().scene().items(port)}
    assert "PortItem" not in hit  # a press there takes the node, not a port
    canvas.view_node("d").add_input("extra")  # a pin added while zoomed out is not drawn either
    drawn_simple(editor)
    sizes["d"] = canvas.view_node("d").view.boundingRect()  # laid out while zoomed out
    editor.patch.set_position("b", (320.0, 40.0))  # links follow a node moved while zoomed out
    (pipe,) = canvas.view_node("b").get_input("a").view.connected_pipes
    start = pipe.path().elementAt(0)
    assert QPointF(start.x, start.y) == canvas.port_scene_pos("b", "a", output=False)
    zoom_and_paint(editor, SIMPLE_BELOW_ZOOM * 1.2)
    assert set(drawn_simple(editor).values()) == {False}
    canvas.view_node("d").view.draw_node()  # laid out again in full: same size
    assert {n: canvas.view_node(n).view.boundingRect() for n in canvas.patch.nodes} == sizes
    assert_in_sync(editor, ui)


def colours_in(image, viewer, item) -> Counter:
    """Pixel colours (with counts) inside an item's rectangle on screen, edges included."""
    rect = viewer.mapFromScene(item.sceneBoundingRect()).boundingRect().adjusted(-2, -2, 2, 2)
    colours = (
        image.pixelColor(x, y)
        for x in range(rect.left(), rect.right() + 1)
        for y in range(rect.top(), rect.bottom() + 1)
    )
    return Counter((c.red(), c.green(), c.blue()) for c in colours)


def centre_colour(image, viewer, item) -> tuple[int, int, int]:
    c = image.pixelColor(viewer.mapFromScene(item.sceneBoundingRect().center()))
    return c.red(), c.green(), c.blue()


def test_zoomed_out_nodes_keep_status_colours_and_outlines(editor, ui):
    ui.show_patch(editor, linked_small_patch())
    canvas = editor.canvas
    canvas.decorate("a", "USER", "ok", None)
    canvas.decorate("b", "USER", "deferred", None)
    canvas.decorate("c", "USER", "idle", None)
    canvas.decorate("d", "HOT", "failed", "boom")
    canvas.select(["a"])
    viewer = canvas.viewer()
    image = zoom_and_paint(editor, SIMPLE_BELOW_ZOOM * 0.8)
    items = {n: canvas.view_node(n).view for n in canvas.patch.nodes}
    assert all(item.simple for item in items.values())
    assert centre_colour(image, viewer, items["a"]) == CLASS_COLORS["USER"]
    assert centre_colour(image, viewer, items["d"]) == FAILED_COLOR
    idle = centre_colour(image, viewer, items["c"])
    assert idle != CLASS_COLORS["USER"] and sum(idle) < sum(CLASS_COLORS["USER"])  # dimmed
    outlines = {n: colours_in(image, viewer, item) for n, item in items.items()}
    assert outlines["a"][SELECTED_OUTLINE] > 0
    assert outlines["b"][DEFERRED_BORDER] > 0
    assert all(outlines[n][SELECTED_OUTLINE] == 0 for n in "bcd")
    assert all(outlines[n][DEFERRED_BORDER] == 0 for n in "acd")
    canvas.select([])
    image = zoom_and_paint(editor, SIMPLE_BELOW_ZOOM * 0.8)
    assert colours_in(image, viewer, items["a"])[SELECTED_OUTLINE] == 0
