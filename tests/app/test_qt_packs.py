"""Node packs in the editor: a file with a type that is not installed opens with a placeholder
(ports kept, failing in one line, saved back unchanged), and a pack edited while the editor runs
reaches its canvas and its running patch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from nodes import LIBRARY, load_packs
from tests.app.conftest import played, run_frames
from tests.nodes.test_packs import (  # noqa: F401  (library: a fixture)
    PLACEHOLDER_FILE,
    library,
    scale_patch,
    write_pack,
)


@pytest.fixture
def nodes_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, library: None) -> Path:  # noqa: F811
    folder = tmp_path / "user-nodes"
    folder.mkdir()
    monkeypatch.setenv("PATCHBAY_NODES_DIR", str(folder))
    return folder


def listed(editor, type_id: str) -> bool:
    """Whether the library panel lists the node type."""
    flags = Qt.MatchFlag.MatchExactly | Qt.MatchFlag.MatchRecursive
    return bool(editor.library.tree.findItems(type_id, flags))


def test_a_placeholder_opens_with_its_ports_fails_in_one_line_and_saves_unchanged(
    editor, qtbot, tmp_path: Path, nodes_dir: Path
) -> None:
    source = tmp_path / "ghost.patchbay"
    source.write_text(PLACEHOLDER_FILE)
    assert editor.file_actions.open_path(source)
    view = editor.canvas.view_node("ghost")
    assert [port.name() for port in view.inputs().values()] == ["x", "mode", "table", "extra"]
    assert [port.name() for port in view.outputs().values()] == ["out"]
    run_frames(editor)  # the engine plays the file from its next frame
    assert played(editor).status("ghost") == "failed"
    assert played(editor).error("ghost") == (
        "MissingNodeTypeError: node type 'mypack.scale' is not installed (missing pack?)"
    )
    assert editor.file_actions.save()  # over the file it came from
    saved, original = json.loads(source.read_text()), json.loads(PLACEHOLDER_FILE)
    assert saved["nodes"][1] == original["nodes"][1] and saved["links"] == original["links"]
    assert not listed(editor, "mypack.scale")
    # the pack arrives: the placeholder becomes the real node, and runs; the library lists it
    write_pack(nodes_dir, 3.0)
    assert load_packs() == []
    run_frames(editor)  # the window and the engine swap the pack in between two frames
    assert played(editor).output("out") == 15.0
    assert listed(editor, "mypack.scale")
    assert editor.patch.nodes["ghost"].spec is LIBRARY["mypack.scale"]
    assert [port.name() for port in view.inputs().values()] == ["x"]


@pytest.mark.live_loop  # the pack watcher's thread stages the edits: frames run meanwhile
def test_a_pack_edited_while_the_editor_runs_reaches_its_patch(
    editor, ui, qtbot, nodes_dir: Path
) -> None:
    write_pack(nodes_dir, 2.0)
    assert load_packs() == []
    patch, out = scale_patch()
    ui.show_patch(editor, patch)
    editor.watch_packs()
    assert played(editor).output(out) == 10.0
    write_pack(nodes_dir, 3.0)
    qtbot.waitUntil(lambda: played(editor).output(out) == 15.0)
    (nodes_dir / "mypack.py").write_text("def (\n")
    qtbot.waitUntil(lambda: "node pack 'mypack' not loaded" in editor.statusBar().currentMessage())
    editor.tick()
    assert played(editor).output(out) == 15.0


def test_deleting_a_placeholder_is_undone_with_its_values_and_links(
    editor, qtbot, tmp_path: Path, nodes_dir: Path
) -> None:
    source = tmp_path / "ghost.patchbay"
    source.write_text(PLACEHOLDER_FILE)
    assert editor.file_actions.open_path(source)
    values = dict(editor.patch.nodes["ghost"].values)
    editor.canvas.select(["ghost"])
    editor.edit_actions.delete_selection()
    assert "ghost" not in editor.patch.nodes and editor.patch.links == []
    editor.undo_stack.undo()
    ghost = editor.patch.nodes["ghost"]
    assert ghost.spec.missing and ghost.values == values
    assert editor.patch.links == [("v", "out", "ghost", "x"), ("ghost", "out", "out", "in")]
