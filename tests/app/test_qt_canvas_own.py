"""The canvas as a person meets it, driven by real mouse and key input: its menu and tab search
offer our actions and node types only; backdrops frame, carry and keep nodes (undoable, saved as
layout); the legend explains colours and words; titles show types and are readable on opening;
links are drawn over nodes; pins tell their type and value; canvas keys never act from a field,
a typed value is one undo step and Ctrl+Z works from any field."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QEvent, QPointF, Qt, QTimer
from PySide6.QtGui import QContextMenuEvent, QFontMetricsF, QHelpEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLineEdit, QMenu, QToolTip

from app.engine.local import LocalEngineLink
from app.qt.canvas.backdrops import HEADER
from app.qt.canvas.canvas import PIPE_Z, READABLE_TITLE_PX, SEARCH_SEPARATOR
from app.qt.launch import open_editor
from app.qt.window import DECORATE_EVERY
from nodes import LIBRARY, Backdrop, Patch, load_patch, patch_to_dict, save_patch
from tests.app.conftest import played, run_frames, stop_loop, wait_built

ARTIFACT = Path(__file__).resolve().parents[1] / "artifacts" / "demo_first_launch.png"


def small_patch() -> Patch:
    patch = Patch()
    patch.add_node("value.float", {"value": 2.0}, (0, 0), node_id="a")
    patch.add_node("math.add", {"b": 1.0}, (300, 0), node_id="b")
    patch.add_node("output.value", None, (600, 0), node_id="c")
    patch.add_node("debug.fail", None, (300, 260), node_id="d")
    patch.connect("a", "out", "b", "a")
    return patch


def click_node(editor, node_id: str) -> None:
    """Click a node's title bar on the canvas."""
    item = editor.canvas.view_node(node_id).view
    scene = item.mapToScene(QPointF(20.0, 8.0))
    viewport = editor.canvas.viewer().viewport()
    QTest.mouseClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     editor.canvas.viewer().mapFromScene(scene))  # fmt: skip
    QCoreApplication.processEvents()


def popup_texts(qtbot, open_menu) -> list[str]:
    """Open a modal menu with `open_menu()`, read its action texts, close it."""
    seen: list[str] = []

    def read() -> None:
        menu = QApplication.activePopupWidget()
        if isinstance(menu, QMenu):
            seen.extend(a.text() for a in menu.actions() if not a.isSeparator())
            menu.close()
        else:
            QTimer.singleShot(20, read)

    QTimer.singleShot(20, read)
    open_menu()
    qtbot.waitUntil(lambda: bool(seen))
    return seen


# ------------------------------------------------------------------ menus and search
def test_canvas_menu_offers_our_actions_and_one_undo_stack(editor, ui, qtbot):
    ui.show_patch(editor, small_patch())
    for node_id in ("a", "b", "c", "a", "b"):  # selections once grew NodeGraphQt's undo list
        click_node(editor, node_id)
    viewer = editor.canvas.viewer()
    empty = viewer.mapFromScene(QPointF(150.0, 500.0))

    def right_click() -> None:
        QTest.mousePress(viewer.viewport(), Qt.MouseButton.RightButton,
                         Qt.KeyboardModifier.NoModifier, empty)  # fmt: skip
        global_pos = viewer.viewport().mapToGlobal(empty)
        event = QContextMenuEvent(QContextMenuEvent.Reason.Mouse, empty, global_pos)
        QApplication.sendEvent(viewer.viewport(), event)  # the menu runs until closed
        QTest.mouseRelease(viewer.viewport(), Qt.MouseButton.RightButton,
                           Qt.KeyboardModifier.NoModifier, empty)  # fmt: skip

    texts = popup_texts(qtbot, right_click)
    ours = [t for t in texts if not t.startswith(("&Undo", "&Redo"))]
    assert ours == [
        "Add Backdrop Around Selection",
        "Rename Backdrop…",
        "Recolour Backdrop…",
        "Remove Backdrop",
        "Group (Ctrl+G)",
        "Ungroup (Ctrl+Shift+G)",
        "Make Unique",
        "Enter Instance (Enter)",
        "Leave Instance (Backspace)",
    ]
    assert sum(t.startswith("&Undo") for t in texts) == 1
    assert "&Undo" in texts and not any("property" in t for t in texts), texts
    menu = viewer.context_menus()["graph"]
    assert viewer.qaction_for_undo() not in menu.actions()
    assert editor.undo_stack.count() == 0  # clicks select; they are no document edits
    assert editor.canvas.graph.undo_stack().count() == 0


def test_tab_search_lists_our_node_types_only(editor, ui, qtbot):
    ui.show_patch(editor, small_patch())
    viewer = editor.canvas.viewer()
    search = viewer._search_widget
    listed: list[str] = []
    found: list[str] = []

    def look() -> None:
        listed.extend(search._actions)
        QTest.keyClicks(search.line_edit, "Backdrop")
        found.extend(a.text() for a in search._searched_actions)
        search.close()

    QTimer.singleShot(200, look)
    QTimer.singleShot(5000, search.close)
    viewer.setFocus()
    QTest.keyClick(viewer, Qt.Key.Key_Tab)
    qtbot.waitUntil(lambda: bool(listed))
    # Typing matches summaries too, but never offers NodeGraphQt's own Backdrop type.
    assert not any(name.split(SEARCH_SEPARATOR)[0] == "Backdrop" for name in found)
    assert "Backdrop" not in listed
    listed_ids = {name.split(SEARCH_SEPARATOR)[0] for name in listed}
    assert listed_ids <= set(LIBRARY)
    assert "math.add" in listed_ids


def test_tab_search_shows_each_summary_and_matches_it(editor, ui, qtbot):
    ui.show_patch(editor, small_patch())
    viewer = editor.canvas.viewer()
    search = viewer._search_widget
    found: list[str] = []

    def look() -> None:
        QTest.keyClicks(search.line_edit, "Gaussian")
        found.extend(a.text() for a in search._searched_actions)
        search.close()

    QTimer.singleShot(200, look)
    QTimer.singleShot(5000, search.close)
    viewer.setFocus()
    QTest.keyClick(viewer, Qt.Key.Key_Tab)
    qtbot.waitUntil(lambda: bool(found))
    assert found[0] == f"gpu.blur{SEARCH_SEPARATOR}{LIBRARY['gpu.blur'].summary}"


# ------------------------------------------------------------------ backdrops
def test_backdrop_frames_the_selection_drags_its_nodes_and_undoes(editor, ui, qtbot):
    ui.show_patch(editor, small_patch())
    patch = editor.patch
    editor.canvas.select(["a", "b"])
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_B, Qt.KeyboardModifier.ControlModifier)
    (backdrop,) = patch.backdrops.values()
    assert editor.canvas.backdrops.nodes_inside(backdrop) == ["a", "b"]
    assert editor.undo_stack.count() == 1
    before = {n: patch.nodes[n].pos for n in patch.nodes}
    x, y, _, _ = backdrop.rect
    header = QPointF(x + 30.0, y + HEADER / 2)
    ui.drag(editor, header, header + QPointF(120.0, 80.0))
    moved = patch.backdrops[backdrop.id]
    dx, dy = moved.rect[0] - x, moved.rect[1] - y
    assert abs(dx - 120) < 2 and abs(dy - 80) < 2  # (screen pixels to scene units)
    for node_id in ("a", "b"):
        bx, by = before[node_id]
        assert patch.nodes[node_id].pos == (bx + dx, by + dy)
        assert tuple(editor.canvas.view_node(node_id).pos()) == (bx + dx, by + dy)
    assert patch.nodes["c"].pos == before["c"] and patch.nodes["d"].pos == before["d"]
    assert editor.undo_stack.count() == 2  # one step for the backdrop and its nodes
    ui.press(viewer, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert patch.backdrops[backdrop.id] == backdrop
    assert {n: patch.nodes[n].pos for n in patch.nodes} == before
    item = editor.canvas.backdrops.items[backdrop.id]
    assert item.pos() == QPointF(x, y)


def test_backdrop_rename_recolour_remove_are_undoable(editor, ui, qtbot):
    ui.show_patch(editor, small_patch())
    canvas = editor.canvas
    canvas.select(["d"])
    editor.edit_actions.add_backdrop()
    (backdrop_id,) = editor.patch.backdrops
    editor.edit_actions.ask_backdrop_title = lambda current: "Failure demo"
    x, y, _, _ = editor.patch.backdrops[backdrop_id].rect
    header = canvas.viewer().mapFromScene(QPointF(x + 30.0, y + HEADER / 2))
    QTest.mouseDClick(canvas.viewer().viewport(), Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier, header)  # fmt: skip
    assert editor.patch.backdrops[backdrop_id].title == "Failure demo"
    editor.edit_actions.ask_backdrop_color = lambda current: (200, 40, 40)
    canvas.menu_scene_pos = QPointF(x + 30.0, y + HEADER / 2)  # as a right-click there leaves it
    editor.edit_actions.recolor_backdrop(editor.edit_actions._menu_backdrop())
    assert editor.patch.backdrops[backdrop_id].color == (200, 40, 40)
    editor.edit_actions.remove_backdrop(backdrop_id)
    assert editor.patch.backdrops == {} and canvas.backdrops.items == {}
    for expected in ((200, 40, 40), (70, 90, 120)):
        editor.undo_stack.undo()
        assert editor.patch.backdrops[backdrop_id].color == expected
        assert canvas.backdrops.items[backdrop_id].backdrop.color == expected
    editor.undo_stack.undo()
    assert editor.patch.backdrops[backdrop_id].title == "Comment"


def test_backdrops_are_saved_as_layout_per_level_and_absent_when_none(tmp_path, editor, ui):
    patch = small_patch()
    assert "backdrops" not in json.dumps(patch_to_dict(patch))  # files without stay as they were
    body = Patch()
    body.add_node("math.add", None, (0, 0), node_id="x")
    patch.add_definition("blob", body)
    patch.set_backdrop(
        "backdrop1", Backdrop("backdrop1", "Sources", (10, 20, 30), (-40, -70, 500, 200))
    )
    body.set_backdrop("backdrop1", Backdrop("backdrop1", "Inside", (1, 2, 3), (0, 0, 300, 150)))
    path = tmp_path / "p.patchbay"
    save_patch(patch, path)
    again = load_patch(path)
    assert again.backdrops == patch.backdrops
    assert again.definition("blob").backdrops == body.backdrops
    ui.show_patch(editor, again)
    assert set(editor.canvas.backdrops.items) == {"backdrop1"}
    assert editor.canvas.backdrops.items["backdrop1"].backdrop.title == "Sources"


# ------------------------------------------------------------------ legend, titles, links, pins
def test_legend_is_shown_and_hidden_from_the_view_menu(editor):
    legend = editor.legend
    assert legend.isVisible()
    words = " ".join(legend.texts)
    for word in ("CONST", "USER", "HOT", "failed", "idle", "cached", "deferred", "deterministic",
                 "nondeterministic", "user_input"):  # fmt: skip
        assert word in words
    view_menu = next(a.menu() for a in editor.menuBar().actions() if a.text() == "&View")
    action = next(a for a in view_menu.actions() if a.text() == "&Legend")
    assert action is editor.view_actions.legend_action
    QTest.keyClick(editor, Qt.Key.Key_F1)
    assert not legend.isVisible() and not action.isChecked()
    action.trigger()
    assert legend.isVisible()
    QTest.mouseClick(legend.more_button, Qt.MouseButton.LeftButton)
    assert legend._labels[0][0].text().startswith("<b>CONST</b>: deterministic all the way up")


def test_titles_show_the_type_and_links_are_drawn_over_nodes(editor, ui):
    ui.show_patch(editor, small_patch())
    canvas = editor.canvas
    assert canvas.view_node("b").view.name == "b · math.add"
    click_node(editor, "b")  # a selected node is raised
    pipes = [p for p in canvas.viewer().all_pipes()]
    assert pipes
    nodes = [canvas.view_node(n).view for n in editor.patch.nodes]
    assert all(p.zValue() == PIPE_Z > n.zValue() for p in pipes for n in nodes)


def test_pin_tooltip_tells_type_doc_and_value(editor, ui, qtbot):
    patch = small_patch()
    patch.connect("b", "out", "c", "in")  # an output needs it: b runs
    ui.show_patch(editor, patch)
    assert played(editor).output("b", "out") == 3.0
    editor.view_actions.show_link_values(True)  # the engine reports the values its links carry
    ui.run_frames(editor)
    shown = editor.evaluator  # what the window was told
    assert (shown.output("a"), shown.output("b")) == (2.0, 3.0)
    canvas = editor.canvas
    viewer = canvas.viewer()
    add_docs = LIBRARY["math.add"].pin_docs
    for node_id, pin, output, wanted in (
        ("b", "a", False, ["input a: num", "value (from a.out): 2", add_docs["a"]]),
        ("b", "out", True, ["output out: num", "value: 3", add_docs["out"]]),
        ("b", "b", False, ["input b: num", "value: 1", add_docs["b"]]),
        ("d", "x", False, ["input x: num", LIBRARY["debug.fail"].pin_docs["x"]]),
    ):
        at = viewer.mapFromScene(canvas.port_scene_pos(node_id, pin, output))
        QToolTip.hideText()
        event = QHelpEvent(QEvent.Type.ToolTip, at, viewer.viewport().mapToGlobal(at))
        QApplication.sendEvent(viewer.viewport(), event)
        qtbot.waitUntil(QToolTip.isVisible)
        for part in wanted:
            assert part in QToolTip.text(), QToolTip.text()
        assert "single" not in QToolTip.text()


def test_demo_opens_with_readable_titles(qtbot, tmp_path, dialogs):
    window = open_editor(None, tmp_path / "state", LocalEngineLink())
    dialogs.install(window)
    qtbot.addWidget(window)
    window.resize(1400, 850)
    window.show()
    qtbot.waitExposed(window)
    stop_loop(window)  # the test turns it
    wait_built(window)
    run_frames(window)  # the engine plays the demo from its first frame
    assert window.evaluator.status("broken") == "failed"
    canvas = window.canvas
    text_item = canvas.view_node("broken").view._text_item
    on_screen = QFontMetricsF(text_item.font()).height() * canvas.viewer().transform().m11()
    assert on_screen >= READABLE_TITLE_PX - 0.01
    assert canvas.view_node("broken").view.name == "broken · debug.fail"
    run_frames(window, 2 * DECORATE_EVERY)  # node colours and previews follow the reports
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    assert window.grab().toImage().save(str(ARTIFACT))


# ------------------------------------------------------------------ keyboard and focus
def test_delete_and_backspace_in_fields_leave_nodes_alone(editor, ui):
    ui.show_patch(editor, small_patch())
    editor.canvas.select(["b"])
    field = editor.library.filter
    field.setFocus()
    QTest.keyClicks(field, "mat")
    for key in (Qt.Key.Key_Backspace, Qt.Key.Key_Home, Qt.Key.Key_Delete):
        ui.press(field, key)
    assert field.text() == "a"
    number = editor.inspector.pin_widget("b")
    number.setFocus()
    ui.press(number, Qt.Key.Key_Delete)
    ui.press(number, Qt.Key.Key_Backspace)
    tree = editor.library.tree  # no text to edit: the key still never reaches the canvas
    tree.setFocus()
    ui.press(tree, Qt.Key.Key_Delete)
    ui.press(tree, Qt.Key.Key_Backspace)
    assert set(editor.patch.nodes) == {"a", "b", "c", "d"}
    stack = editor.undo_stack
    assert [stack.text(i) for i in range(stack.count())] == ["set b.b"], "deleted the number only"
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    ui.press(viewer, Qt.Key.Key_Delete)  # with the canvas focused, Delete deletes
    assert "b" not in editor.patch.nodes


def test_one_typed_value_is_one_undo_step_and_ctrl_z_works_from_the_field(editor, ui):
    ui.show_patch(editor, small_patch())
    editor.canvas.select(["d"])
    field = editor.inspector.pin_widget("message")
    assert isinstance(field, QLineEdit)
    field.setFocus()
    field.selectAll()
    QTest.keyClicks(field, "boom")
    ui.press(field, Qt.Key.Key_Return)
    editor.library.filter.setFocus()  # leaving the field after Return
    QCoreApplication.processEvents()
    assert editor.patch.value("d", "message") == "boom"
    assert editor.undo_stack.count() == 1
    # Typing not applied yet: Ctrl+Z takes the typing back, the document is untouched.
    field = editor.inspector.pin_widget("message")
    field.setFocus()
    QTest.keyClicks(field, "xyz")
    ui.press(field, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert field.text() == "boom"
    assert editor.undo_stack.index() == 1
    # Nothing of its own to undo: Ctrl+Z in the field undoes the document.
    ui.press(field, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert editor.patch.value("d", "message") == "this node fails on purpose"
    shift_ctrl = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    field = editor.inspector.pin_widget("message")
    ui.press(field, Qt.Key.Key_Z, shift_ctrl)
    assert editor.patch.value("d", "message") == "boom"


def test_ctrl_z_in_a_number_field_undoes_the_document(editor, ui):
    ui.show_patch(editor, small_patch())
    editor.canvas.select(["b"])
    number = editor.inspector.pin_widget("b")
    number.setFocus()
    number.selectAll()
    QTest.keyClicks(number, "5")
    ui.press(number, Qt.Key.Key_Return)
    assert editor.patch.value("b", "b") == 5.0
    ui.press(editor.inspector.pin_widget("b"), Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert editor.patch.value("b", "b") == 1.0


def test_backdrops_belong_to_the_level_shown(editor, ui):
    patch = small_patch()
    body = Patch()
    body.add_node("math.add", None, (0, 0), node_id="x")
    patch.add_definition("blob", body)
    patch.add_node("subpatch", {"definition": "blob"}, (0, 400), node_id="blob1")
    ui.show_patch(editor, patch)
    canvas = editor.canvas
    assert canvas.enter("blob1")
    canvas.select(["x"])
    editor.edit_actions.add_backdrop()
    assert list(body.backdrops) == ["backdrop1"] and patch.backdrops == {}
    assert set(canvas.backdrops.items) == {"backdrop1"}
    ui.press(canvas.viewer(), Qt.Key.Key_Backspace)  # leave (the canvas has the focus)
    assert canvas.trail == [] and canvas.backdrops.items == {}
    editor.undo_stack.undo()  # the body's edit, undone from the top level
    assert body.backdrops == {}


def test_an_error_appearing_in_the_inspector_moves_no_field(editor, ui):
    ui.show_patch(editor, small_patch())
    editor.canvas.select(["b"])
    inspector = editor.inspector
    field = inspector.pin_widget("b")
    QCoreApplication.processEvents()  # laid out
    before = field.mapTo(inspector, field.rect().topLeft())
    inspector.set_state("USER", "failed", "a long error message " * 8)
    QCoreApplication.processEvents()
    assert inspector._error.isVisible()
    assert field.mapTo(inspector, field.rect().topLeft()) == before
