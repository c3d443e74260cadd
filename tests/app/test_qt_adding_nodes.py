"""Adding nodes without extra clicks, through the real window: a node added by tab search or
dropped from the library is selected (the inspector shows it) and lands on no other node; Ctrl+D
and Ungroup place their nodes clear of the others; a new document opens at 100 %; tab search
lists an id with the exact word typed first."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QCoreApplication, QPoint, QPointF, Qt, QTimer
from PySide6.QtGui import QCursor, QDragEnterEvent, QDropEvent, QFontMetricsF, QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.qt.canvas.canvas import READABLE_TITLE_PX, SEARCH_SEPARATOR, search_ranked
from nodes import Patch

SHOTS = Path(__file__).resolve().parents[1] / "artifacts"  # screenshots to look at


def save_shot(editor, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    editor.grab().save(str(SHOTS / name))


def shown_rects(editor) -> dict[str, object]:
    canvas = editor.canvas
    return {canvas.node_id_of(v): v.view.sceneBoundingRect() for v in canvas.graph.all_nodes()}


def assert_no_overlap(editor) -> None:
    rects = shown_rects(editor)
    ids = sorted(rects)
    for i, one in enumerate(ids):
        for other in ids[i + 1 :]:
            assert not rects[one].intersects(rects[other]), (one, other)


def tab_search(editor, qtbot, typed: str, seen: list[str] | None = None) -> None:
    """Press Tab over the canvas, type `typed`, read what is listed, press Return."""
    viewer = editor.canvas.viewer()
    search = viewer._search_widget

    def type_choice() -> None:
        QTest.keyClicks(search.line_edit, typed)
        if seen is not None:
            seen.extend(action.text() for action in search._searched_actions)
        QTest.keyClick(search.line_edit, Qt.Key.Key_Return)

    QTimer.singleShot(200, type_choice)
    QTimer.singleShot(5000, search.close)  # never leave a modal menu open if typing failed
    viewer.setFocus()
    QTest.keyClick(viewer, Qt.Key.Key_Tab)


def pointer_over(editor, scene: QPointF) -> None:
    viewer = editor.canvas.viewer()
    at = viewer.mapFromScene(scene)
    QTest.mouseMove(viewer.viewport(), at)
    QCursor.setPos(viewer.viewport().mapToGlobal(at))  # the search opens where the pointer is


def test_search_ranks_the_exact_word_in_the_id_first() -> None:
    names = [f"gpu.levels{SEARCH_SEPARATOR}Adjusts levels.",
             f"audio.level{SEARCH_SEPARATOR}The loudness of a signal.",
             f"math.lerp{SEARCH_SEPARATOR}Blends between two levels."]  # fmt: skip
    assert [n.split(SEARCH_SEPARATOR)[0] for n in search_ranked("level", names)] == [
        "audio.level", "gpu.levels", "math.lerp"]  # fmt: skip
    assert search_ranked("", names) == []


def test_tab_search_for_level_adds_audio_level_selected_and_clear_of_others(editor, ui, qtbot):
    patch = Patch()
    patch.add_node("value.float", None, (0, 0), node_id="a")
    patch.add_node("math.add", None, (400, 0), node_id="b")
    ui.show_patch(editor, patch)
    pointer_over(editor, editor.canvas.view_node("b").view.sceneBoundingRect().center())
    listed: list[str] = []
    tab_search(editor, qtbot, "level", listed)
    qtbot.waitUntil(lambda: len(editor.patch.nodes) == 3)
    ids = [text.split(SEARCH_SEPARATOR)[0] for text in listed]
    assert ids[0] == "audio.level" and ids.index("audio.level") < ids.index("gpu.levels")
    (new,) = [n for n in editor.patch.nodes if n not in ("a", "b")]
    assert editor.patch.nodes[new].type_id == "audio.level"
    assert editor.canvas.selected_ids() == [new]
    assert editor.inspector.node_id == new  # ready to edit: no click needed
    assert editor.undo_stack.count() == 1
    assert_no_overlap(editor)  # the pointer was over b: the nearest free spot instead
    save_shot(editor, "patching-tab-added.png")


def test_a_node_dropped_from_the_library_is_selected_and_clear_of_others(editor, ui, qtbot):
    patch = Patch()
    patch.add_node("value.float", None, (0, 0), node_id="a")
    ui.show_patch(editor, patch)
    viewport = editor.canvas.viewer().viewport()
    library = editor.library
    (item,) = library.tree.findItems("math.sin", Qt.MatchFlag.MatchRecursive)
    data = library.tree.mimeData([item])
    point = editor.canvas.viewer().mapFromScene(QPointF(10.0, 10.0))  # on a
    buttons, keys = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    QApplication.sendEvent(
        viewport, QDragEnterEvent(point, Qt.DropAction.CopyAction, data, buttons, keys)
    )
    QApplication.sendEvent(
        viewport, QDropEvent(QPointF(point), Qt.DropAction.CopyAction, data, buttons, keys)
    )
    QCoreApplication.processEvents()
    (new,) = [n for n in editor.patch.nodes if n != "a"]
    assert editor.canvas.selected_ids() == [new]
    assert_no_overlap(editor)


def test_a_new_document_opens_at_full_size(editor, ui, qtbot, dialogs):
    patch = Patch()
    for i in range(60):  # wide: framed readable, then zoomed far out by the wheel
        patch.add_node("value.float", None, (i * 300.0, (i % 5) * 200.0), node_id=f"v{i}")
    ui.show_patch(editor, patch)
    viewer = editor.canvas.viewer()
    center = viewer.viewport().rect().center()
    QTest.mouseMove(viewer.viewport(), center)
    for _ in range(10):  # zoomed far out with the wheel, as the last document was left
        QApplication.sendEvent(viewer.viewport(), _wheel(viewer, center, -240))
    assert editor.canvas.zoom() < 0.6
    dialogs.unsaved_answer = "discard"
    ui.press(editor, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not editor.patch.nodes)
    assert abs(editor.canvas.zoom() - 1.0) < 0.01
    font = editor.canvas.graph.widget.font()
    assert QFontMetricsF(font).height() * editor.canvas.zoom() >= READABLE_TITLE_PX
    tab_search(editor, qtbot, "math.add")
    qtbot.waitUntil(lambda: len(editor.patch.nodes) == 1)
    save_shot(editor, "patching-new-document.png")


def _wheel(viewer, at: QPoint, delta: int) -> QWheelEvent:
    return QWheelEvent(
        QPointF(at), QPointF(viewer.viewport().mapToGlobal(at)), QPoint(0, 0), QPoint(0, delta),
        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase,
        False,
    )  # fmt: skip


def test_duplicate_places_the_copies_clear_of_every_node(editor, ui, qtbot):
    patch = Patch()
    patch.add_node("value.float", None, (0, 0), node_id="a")
    patch.add_node("math.add", None, (300, 0), node_id="b")
    patch.connect("a", "out", "b", "a")
    patch.add_node("math.mul", None, (40, 80), node_id="c")  # where a's copy would go
    patch.add_node("math.sub", None, (340, 100), node_id="d")
    ui.show_patch(editor, patch)
    editor.canvas.select(["a", "b"])
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    copies = editor.canvas.selected_ids()
    assert len(copies) == 2 and not {"a", "b", "c", "d"} & set(copies)
    assert len(editor.patch.links) == 2
    assert_no_overlap(editor)
    # The copies keep their own layout (a beside b).
    kinds = {editor.patch.nodes[n].type_id: editor.patch.nodes[n].pos for n in copies}
    (xa, ya), (xb, yb) = kinds["value.float"], kinds["math.add"]
    assert (xb - xa, yb - ya) == (300.0, 0.0)
    assert editor.undo_stack.count() == 1
    save_shot(editor, "patching-duplicate.png")
    editor.undo_stack.undo()
    assert set(editor.patch.nodes) == {"a", "b", "c", "d"}


def test_ungroup_places_the_body_clear_of_the_neighbours(editor, ui, qtbot):
    body = Patch()
    body.add_node("subpatch.inlet", {"name": "x"}, (-300, 0), node_id="in1")
    body.add_node("math.mul", {"b": 3.0}, (0, 0), node_id="mul")
    body.add_node("math.add", {"b": 1.0}, (300, 0), node_id="add")
    body.add_node("math.sin", None, (600, 0), node_id="wave")
    body.add_node("subpatch.outlet", {"name": "y"}, (900, 0), node_id="out1")
    body.connect("in1", "out", "mul", "a")
    body.connect("mul", "out", "add", "a")
    body.connect("add", "out", "wave", "x")
    body.connect("wave", "out", "out1", "in")
    patch = Patch()
    patch.add_definition("chain", body)
    patch.add_node("input.float", {"value": 1.0}, (0, 0), node_id="v")
    patch.add_node("subpatch", {"definition": "chain"}, (300, 0), node_id="inst")
    patch.add_node("output.value", None, (600, 0), node_id="o")
    patch.connect("v", "out", "inst", "x")
    patch.connect("inst", "y", "o", "in")
    ui.show_patch(editor, patch)
    editor.canvas.select(["inst"])
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_G,
             Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)  # fmt: skip
    assert "inst" not in editor.patch.nodes
    added = editor.canvas.selected_ids()
    assert sorted(editor.patch.nodes[n].type_id for n in added) == ["math.add", "math.mul",
                                                                   "math.sin"]  # fmt: skip
    assert_no_overlap(editor)
    assert any(link.src == "v" for link in editor.patch.links)  # still fed
    assert editor.undo_stack.count() == 1
    save_shot(editor, "patching-ungroup.png")
    editor.undo_stack.undo()
    assert "inst" in editor.patch.nodes and len(editor.patch.nodes) == 3
