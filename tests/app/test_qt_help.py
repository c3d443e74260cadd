"""Node help in the editor: F1 opens the help of the selected node (or of the library entry
pointed at) with its pins' sentences, "Open example" opens a small patch using the node, the
library shows summaries, and File > Examples opens every bundled example as an untitled document.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QPointF, QRectF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QMenu

from app.engine.engine import THUMBNAIL_SIZE
from app.qt.canvas.canvas import THUMBNAIL_GAP
from app.qt.panels.help import determinism_words
from app.qt.panels.library import TYPE_ROLE
from app.session.node_examples import example_patch, example_paths
from nodes import LIBRARY, Patch, load_patch
from tests.app.conftest import played, run_frames

ROOT = Path(__file__).resolve().parents[2]
ARTIFACT = ROOT / "tests" / "artifacts" / "node_help.png"


def lfo_patch() -> Patch:
    patch = Patch()
    patch.add_node("time.lfo", {"hz": 0.5}, (0, 0), node_id="wobble")
    patch.add_node("output.value", None, (300, 0), node_id="out")
    patch.connect("wobble", "out", "out", "in")
    return patch


def types_used(patch: Patch) -> set[str]:
    """The node types of a patch and of its document's definitions."""
    bodies = [patch, *(patch.definition(name) for name in patch.definitions)]
    return {inst.type_id for body in bodies for inst in body.nodes.values()}


def click_node(editor, node_id: str) -> None:
    item = editor.canvas.view_node(node_id).view
    viewer = editor.canvas.viewer()
    at = viewer.mapFromScene(item.mapToScene(QPointF(20.0, 8.0)))
    QTest.mouseClick(viewer.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     at)  # fmt: skip
    QCoreApplication.processEvents()


def library_item(editor, type_id: str):
    tree = editor.library.tree
    for index in range(tree.topLevelItemCount()):
        group = tree.topLevelItem(index)
        for child in range(group.childCount()):
            if group.child(child).data(0, TYPE_ROLE) == type_id:
                return group.child(child)
    raise LookupError(type_id)


def test_f1_opens_the_help_of_the_selected_node(editor, ui, qtbot):
    ui.show_patch(editor, lfo_patch())
    click_node(editor, "wobble")
    assert editor.canvas.selected_ids() == ["wobble"]
    assert not editor.node_help.isVisible()
    legend_shown = editor.legend.isVisible()
    QTest.keyClick(editor, Qt.Key.Key_F1)
    help_window = editor.node_help
    qtbot.waitUntil(help_window.isVisible)
    assert help_window.type_id == "time.lfo"
    assert editor.legend.isVisible() == legend_shown  # F1 on a node leaves the legend alone
    text = help_window.text()
    spec = LIBRARY["time.lfo"]
    assert "time.lfo" in text and spec.summary in text
    assert "the phase accumulates" in text.lower()  # the doc after its first sentence
    for pin in ("hz", "shape", "out"):
        assert spec.pin_docs[pin] in text
    assert determinism_words(spec) in text
    assert "Example" in text and "hz_source (input.float).out" in text


def test_f1_without_a_node_toggles_the_legend(editor, ui):
    ui.show_patch(editor, lfo_patch())
    assert editor.legend.isVisible()
    QTest.keyClick(editor, Qt.Key.Key_F1)
    assert not editor.legend.isVisible() and not editor.node_help.isVisible()


def test_open_example_makes_an_untitled_patch_with_the_node(editor, ui, qtbot):
    ui.show_patch(editor, lfo_patch())
    click_node(editor, "wobble")
    editor.view_actions.help_for_context()
    help_window = editor.node_help
    qtbot.waitUntil(help_window.isVisible)
    help_window.resize(620, 700)
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    assert help_window.grab().save(str(ARTIFACT))
    QTest.mouseClick(help_window.open_example_button, Qt.MouseButton.LeftButton)
    patch = editor.patch
    assert editor.path is None
    assert editor.windowTitle().startswith("time.lfo (example)")
    lfos = [n for n in patch.nodes.values() if n.type_id == "time.lfo"]
    assert len(lfos) == 1
    (lfo,) = lfos
    assert patch.link_into(lfo.id, "hz") is not None  # a slider feeds it
    assert any(link.src == lfo.id for link in patch.links)  # and its output goes somewhere
    run_frames(editor)  # the engine plays the example from its next frame
    assert played(editor).status(lfo.id) != "idle"
    assert played(editor).status(lfo.id) != "failed"


def test_library_shows_summaries_and_f1_opens_the_entry_pointed_at(editor, ui, qtbot):
    ui.show_patch(editor, lfo_patch())
    item = library_item(editor, "gpu.blur")
    assert LIBRARY["gpu.blur"].summary in item.toolTip(0)
    tree = editor.library.tree
    tree.scrollToItem(item)
    QTest.mouseMove(tree.viewport(), tree.visualItemRect(item).center())
    qtbot.waitUntil(lambda: "Gaussian" in editor.library.description.text())
    assert editor.library.help_type() == "gpu.blur"
    QTest.keyClick(editor, Qt.Key.Key_F1)
    qtbot.waitUntil(editor.node_help.isVisible)
    assert editor.node_help.type_id == "gpu.blur"
    assert LIBRARY["gpu.blur"].pin_docs["radius"] in editor.node_help.text()


def test_library_context_menu_asks_for_help(editor):
    asked: list[str] = []
    editor.library.help_requested.connect(asked.append)
    item = library_item(editor, "math.mix")
    tree = editor.library.tree
    tree.scrollToItem(item)
    editor.library._context_menu(tree.visualItemRect(item).center())
    menu = editor.library.findChildren(QMenu)[-1]
    (help_action,) = [a for a in menu.actions() if a.text() == "Help"]
    help_action.trigger()
    assert asked == ["math.mix"]
    menu.close()


def test_inspector_pin_names_carry_their_sentence(editor, ui):
    ui.show_patch(editor, lfo_patch())
    click_node(editor, "wobble")
    inspector = editor.inspector
    assert inspector.pin_label("hz").toolTip() == LIBRARY["time.lfo"].pin_docs["hz"]
    assert LIBRARY["time.lfo"].summary in inspector._title.text()


LIBRARY_TYPES = sorted(
    type_id
    for type_id, spec in LIBRARY.items()
    if spec.compute.__module__.startswith("nodes.library")
)


@pytest.mark.parametrize("type_id", LIBRARY_TYPES)
def test_generated_examples_open_tidy(editor, ui, type_id):
    patch = example_patch(type_id)
    assert type_id in types_used(patch)
    ui.show_patch(editor, patch)
    canvas = editor.canvas
    rects = {}
    for node_id, inst in patch.nodes.items():
        rect = canvas.view_node(node_id).view.sceneBoundingRect()
        if any(out.type == "texture" for out in inst.spec.outputs):
            rect = rect.united(QRectF(rect.left(), rect.bottom(), THUMBNAIL_SIZE[0],
                                      THUMBNAIL_GAP + THUMBNAIL_SIZE[1]))  # fmt: skip
        rects[node_id] = rect
    names = sorted(rects)
    overlapping = [
        (one, other)
        for i, one in enumerate(names)
        for other in names[i + 1 :]
        if rects[one].intersects(rects[other])
    ]
    assert overlapping == []


def test_file_menu_lists_and_opens_every_example(editor, qtbot):
    file_menu = next(a.menu() for a in editor.menuBar().actions() if a.text() == "&File")
    (examples,) = [a.menu() for a in file_menu.actions() if a.text() == "E&xamples"]
    paths = example_paths()
    assert len(paths) >= 4
    assert [a.text() for a in examples.actions()] == [path.stem for path in paths]
    for action, path in zip(examples.actions(), paths, strict=True):
        action.trigger()
        assert editor.path is None, path  # a new document: Save asks for a name
        assert editor.windowTitle().startswith(f"{path.stem} (example) "), path  # named
        assert set(editor.patch.nodes) == set(load_patch(path).nodes), path
