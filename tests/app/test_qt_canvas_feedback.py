"""Values and feedback on the canvas, driven with real mouse and key input: hovering a link shows
its value, View > Show Values on Links labels links (numbers, sparklines, array shapes, texture
thumbnails), a refused link shows a bubble at the pointer and a copyable log entry, dragging from
an output rings the inputs it fits and only those, a failed node says so with its last good
value and marks what it holds back until it is fixed, and new nodes land at the pointer or in
free space."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt, QTimer
from PySide6.QtGui import QColor, QCursor, QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.qt.canvas.failure_marks import UPSTREAM_FAILED
from app.qt.canvas.link_values import HISTORY
from app.qt.window import DECORATE_EVERY
from nodes import Link, Patch
from tests.app.conftest import played, run_frames


def run_frames_shown(editor, count: int = 1) -> None:
    """`count` frames, then the values on links and under the pointer brought up to date with
    them (the window does that at most every `REFRESH_S` of wall-clock time by itself)."""
    run_frames(editor, count)
    editor.link_values.refresh(now=True)


def pipe_middle(editor, link: Link) -> QPointF:
    canvas = editor.canvas
    scene = canvas.viewer().scene()
    (pipe,) = [item for item in scene.items() if
               hasattr(item, "input_port") and canvas.link_of_pipe(item) == link]  # fmt: skip
    return pipe.path().pointAtPercent(0.5)


def to_viewport(editor, scene_pos: QPointF) -> QPoint:
    return editor.canvas.viewer().mapFromScene(scene_pos)


def values_patch() -> Patch:
    patch = Patch()
    patch.add_node("time.seconds", None, (0, 0), node_id="clock")
    patch.add_node("math.sin", None, (400, 0), node_id="wave")
    patch.add_node("output.value", None, (800, 0), node_id="shown")
    patch.add_node("array.range", {"count": 128}, (0, 260), node_id="ramp")
    patch.add_node("array.sum", None, (400, 260), node_id="total")
    patch.add_node("output.value", None, (800, 260), node_id="sum_out")
    patch.add_node("gpu.solid", None, (0, 520), node_id="paint")
    patch.add_node("gpu.output", None, (400, 520), node_id="screen")
    patch.add_node("value.float", {"value": 2.0}, (0, 780), node_id="two")
    patch.add_node("math.add", {"b": 1.0}, (400, 780), node_id="sum")
    patch.add_node("output.value", None, (800, 780), node_id="sum_shown")
    for src, dst, pin in (
        ("clock", "wave", "x"),
        ("wave", "shown", "in"),
        ("ramp", "total", "x"),
        ("total", "sum_out", "in"),
        ("paint", "screen", "in"),
        ("two", "sum", "a"),
        ("sum", "sum_shown", "in"),
    ):
        patch.connect(src, "out", dst, pin)
    return patch


def test_hovering_a_link_or_a_pin_shows_its_value(editor, ui, qtbot):
    ui.show_patch(editor, values_patch())
    assert played(editor).output("sum") == 3.0
    viewport = editor.canvas.viewer().viewport()
    QTest.mouseMove(
        viewport, to_viewport(editor, pipe_middle(editor, Link("sum", "out", "sum_shown", "in")))
    )
    # the engine reports the hovered link's value from then on
    run_frames_shown(editor)
    assert editor.link_values.hover_text() == "sum.out → sum_shown.in = 3"
    port = editor.canvas.port_scene_pos("sum", "b", output=False)  # an input nothing feeds
    editor.legend.hide()  # the legend floats over the canvas's lower left, where this port may be
    QTest.mouseMove(viewport, to_viewport(editor, port))
    run_frames_shown(editor)
    assert editor.link_values.hover_text() == "sum.b = 1"
    QTest.mouseMove(viewport, to_viewport(editor, QPointF(200.0, 700.0)))  # empty canvas
    run_frames_shown(editor)
    assert editor.link_values.hover_text() is None


def test_values_on_links_show_numbers_sparklines_shapes_and_thumbnails(editor, ui, qtbot):
    ui.show_patch(editor, values_patch())
    thumbnail = QImage(96, 54, QImage.Format.Format_RGB32)
    thumbnail.fill(QColor(230, 120, 40))
    # What the editor shows under a texture node (from the GPU, or from the engine's pictures).
    editor.canvas.set_thumbnail("paint", thumbnail)
    view_menu = next(a.menu() for a in editor.menuBar().actions() if a.text() == "&View")
    (action,) = [a for a in view_menu.actions() if a.text() == "Show &Values on Links"]
    action.trigger()
    assert action.isChecked()
    values = editor.link_values
    wave = Link("wave", "out", "shown", "in")
    for _ in range(20):  # a sample of each link's value at each refresh
        run_frames_shown(editor)
    labels = values.labels
    assert len(labels[wave].samples) >= 20
    assert labels[wave].kind == "sparkline"
    assert len(set(labels[wave].samples)) > 1  # a live value, sampled as it changes
    assert len(labels[wave].samples) <= HISTORY
    assert labels[Link("ramp", "out", "total", "x")].text == "float64[128]"
    assert labels[Link("two", "out", "sum", "a")].text == "2"
    assert labels[Link("two", "out", "sum", "a")].kind == "text"  # a constant: no sparkline
    assert labels[Link("paint", "out", "screen", "in")].kind == "picture"
    # The labels' sources are watched, and no more than the cap.
    assert "wave" in values.wanted()
    assert values.labels[Link("total", "out", "sum_out", "in")].text == "8.13e+03"
    action.trigger()
    assert values.labels == {}


def test_a_refused_link_shows_a_bubble_at_the_pointer_and_a_copyable_log_entry(editor, ui):
    patch = Patch()
    patch.add_node("gpu.solid", None, (0, 0), node_id="paint")
    patch.add_node("math.add", None, (400, 0), node_id="sum")
    ui.show_patch(editor, patch)
    ui.drag_link(editor, "paint", "out", "sum", "a")
    assert editor.patch.links == []
    bubble = editor.bubble
    assert bubble.isVisible()
    assert "cannot link paint.out (texture) to sum.a (num)" in bubble.text()
    drop = to_viewport(editor, editor.canvas.port_scene_pos("sum", "a", output=False))
    at = editor.mapFromGlobal(editor.canvas.viewer().viewport().mapToGlobal(drop))
    assert (bubble.geometry().topLeft() - at).manhattanLength() < 60  # next to the pointer
    log = editor.messages.text()
    assert "refused: cannot link paint.out (texture) to sum.a (num)" in log
    editor.messages.copy_button.click()
    assert QApplication.clipboard().text() == log


def test_dragging_from_an_output_rings_the_inputs_it_fits_only(editor, ui, qtbot):
    patch = Patch()
    patch.add_node("value.float", None, (0, 0), node_id="a")
    patch.add_node("math.add", None, (400, 0), node_id="b")
    patch.add_node("math.mul", None, (800, 0), node_id="c")
    patch.add_node("gpu.blur", None, (400, 300), node_id="blur")
    patch.connect("a", "out", "b", "a")
    patch.connect("b", "out", "c", "a")
    ui.show_patch(editor, patch)
    viewport = editor.canvas.viewer().viewport()
    start = to_viewport(editor, editor.canvas.port_scene_pos("c", "out", output=True))
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    QTest.mouseMove(viewport, start + QPoint(40, 60))
    QTest.mouseMove(viewport, start + QPoint(80, 120))
    # a.value, b.a and b.b would close a cycle through c; of blur's pins only radius is a number.
    assert editor.pin_hints.ringed() == {("blur", "radius")}
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                       start + QPoint(80, 120))  # fmt: skip
    assert editor.pin_hints.ringed() == set()
    start = to_viewport(editor, editor.canvas.port_scene_pos("a", "out", output=True))
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
    QTest.mouseMove(viewport, start + QPoint(40, 120))
    QTest.mouseMove(viewport, start + QPoint(80, 240))
    # Occupied inputs count (a drop there replaces the link); textures and vec2 do not.
    assert editor.pin_hints.ringed() == {
        ("b", "a"), ("b", "b"), ("c", "a"), ("c", "b"), ("blur", "radius")
    }  # fmt: skip
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                       start + QPoint(80, 240))  # fmt: skip
    assert editor.pin_hints.ringed() == set()


def failing_patch() -> Patch:
    patch = Patch()
    patch.add_node("input.float", {"value": 2.0, "max": 10.0}, (0, 0), node_id="den")
    patch.add_node("math.div", {"a": 1.0}, (400, 0), node_id="ratio")
    patch.add_node("math.add", {"b": 1.0}, (800, 0), node_id="plus")
    patch.add_node("output.value", None, (1200, 0), node_id="shown")
    patch.add_node("value.float", {"value": 5.0}, (400, 300), node_id="other")
    patch.add_node("output.value", None, (800, 300), node_id="other_shown")
    patch.connect("den", "out", "ratio", "b")
    patch.connect("ratio", "out", "plus", "a")
    patch.connect("plus", "out", "shown", "in")
    patch.connect("other", "out", "other_shown", "in")
    return patch


def test_a_failed_node_shows_its_error_and_last_good_value_and_marks_downstream(editor, ui, qtbot):
    ui.show_patch(editor, failing_patch())
    assert played(editor).output("ratio") == 0.5
    editor.canvas.select(["ratio"])
    editor.patch.set_value("den", "value", 0.0)  # as the slider would: 1 / 0 fails
    # The preview and the marks follow the reports every DECORATE_EVERY turns of the loop.
    shown = editor.preview.failure.isVisible
    ui.run_until(editor, shown, "the preview's failure shown", DECORATE_EVERY)
    assert editor.preview.failure.text().startswith("failed: ZeroDivisionError")
    assert editor.preview.row_widget("out").text() == "failed · last good: 0.5"
    assert editor.failure_marks.mark_of("plus") == UPSTREAM_FAILED
    marks = editor.failure_marks
    assert marks.mark_of("ratio").startswith("failed: ZeroDivisionError")
    assert marks.mark_of("ratio").endswith(" · last good: 0.5")
    assert marks.mark_of("shown") == UPSTREAM_FAILED
    assert marks.mark_of("other") is None and marks.mark_of("den") is None
    item = editor.canvas.view_node("plus").view
    assert item.failure_outline.isVisible()
    assert item.failure_caption.text() == UPSTREAM_FAILED
    editor.patch.set_value("den", "value", 4.0)
    ui.run_until(editor, lambda: not shown(), "the preview's failure hidden", DECORATE_EVERY)
    assert marks.mark_of("plus") is None and marks.mark_of("ratio") is None
    assert not item.failure_outline.isVisible()
    assert not editor.canvas.view_node("ratio").view.failure_caption.isVisible()
    assert editor.preview.row_widget("out").text() == "0.25"


def test_tab_search_places_the_node_at_the_pointer(editor, ui, qtbot):
    patch = Patch()
    patch.add_node("value.float", None, (0, 0), node_id="a")
    patch.add_node("value.float", None, (900, 600), node_id="b")
    ui.show_patch(editor, patch)
    viewer = editor.canvas.viewer()
    pointer = to_viewport(editor, QPointF(450.0, 300.0))
    QTest.mouseMove(viewer.viewport(), pointer)
    # The system's pointer there too: the search menu opens and closes where it is.
    QCursor.setPos(viewer.viewport().mapToGlobal(pointer))
    search = viewer._search_widget

    def type_choice() -> None:
        QTest.keyClicks(search.line_edit, "math.mix")
        QTest.keyClick(search.line_edit, Qt.Key.Key_Return)

    QTimer.singleShot(200, type_choice)
    QTimer.singleShot(5000, search.close)  # never leave a modal menu open if typing failed
    viewer.setFocus()
    QTest.keyClick(viewer, Qt.Key.Key_Tab)
    qtbot.waitUntil(lambda: any(n.type_id == "math.mix" for n in editor.patch.nodes.values()))
    (new,) = [n for n in editor.patch.nodes.values() if n.type_id == "math.mix"]
    # Where the pointer is on screen (the window's layout may have moved the scene meanwhile).
    at = viewer.mapFromScene(QPointF(*new.pos))
    assert (at - pointer).manhattanLength() <= 2


def test_library_double_click_and_enter_place_nodes_in_free_space(editor, ui, qtbot):
    patch = Patch()
    patch.add_node("value.float", None, (0, 0), node_id="a")
    ui.show_patch(editor, patch)
    x, y = editor.canvas.view_center()
    editor.patch.set_position("a", (x - 80.0, y - 30.0))  # right where the centre spot is
    library = editor.library
    item = library.first_match()
    library.filter.setFocus()
    QTest.keyClicks(library.filter, "math.sub")
    qtbot.waitUntil(lambda: library.first_match() is not item)
    QTest.keyClick(library.filter, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: len(editor.patch.nodes) == 2)
    (first,) = [n for n in editor.patch.nodes if n != "a"]
    assert editor.patch.nodes[first].type_id == "math.sub"
    assert editor.undo_stack.count() == 1
    tree = library.tree
    sub = library.first_match()
    tree.scrollToItem(sub)
    spot = tree.visualItemRect(sub).center()
    for click in (QTest.mouseClick, QTest.mouseDClick):  # a double click follows a click
        click(tree.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, spot)
    qtbot.waitUntil(lambda: len(editor.patch.nodes) == 3)
    rects = {editor.canvas.node_id_of(v): v.view.sceneBoundingRect() for v in
             editor.canvas.graph.all_nodes()}  # fmt: skip
    ids = sorted(rects)
    for i, one in enumerate(ids):
        for other in ids[i + 1 :]:
            assert not rects[one].intersects(rects[other]), (one, other)
