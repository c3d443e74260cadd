"""The document's layout travels to the engine: positions, backdrops and definitions' layouts
reach its copy as edits, cost it no rebuild, and come back whole to an editor that attaches.

The editor is played through a pipe, as in test_engine.py; the real processes (an editor killed,
another attaching) are in test_layout_reattach.py.
"""

from __future__ import annotations

import pytest

from app.engine.engine import Engine
from app.engine.protocol.channel import EditBatch, ProtocolError, apply_edits, patch_message
from app.engine.protocol.messages import Edits
from nodes import Backdrop, Patch
from tests.app.test_engine import EditorEnd, chain_patch
from tests.waiting import TIMEOUT_S, poll_until


def document(patch: Patch) -> dict:
    return patch_message(patch)[0].document


def double_body() -> Patch:
    body = Patch()
    body.add_node("subpatch.inlet", {"name": "x"}, (-200.0, 10.0), node_id="inx")
    body.add_node("math.mul", {"b": 2.0}, (0.0, 10.0), node_id="gain")
    body.add_node("subpatch.outlet", {"name": "y"}, (200.0, 10.0), node_id="outy")
    body.connect("inx", "out", "gain", "a")
    body.connect("gain", "out", "outy", "in")
    body.set_backdrop(
        "backdrop1", Backdrop("backdrop1", "inside", (10, 20, 30), (-250, -40, 500, 120))
    )
    return body


def test_layout_edits_reach_the_engines_copy_without_a_rebuild() -> None:
    patch = chain_patch()
    engine = Engine(Patch())
    editor = EditorEnd(engine, patch)
    editor.read_until("report", lambda m: "out" in m["nodes"])
    assert poll_until(lambda: engine.step() or engine.evaluator.mode == "flat", TIMEOUT_S)
    running = engine.evaluator.program
    revisions = (engine.patch.revision, engine.patch.value_revision)

    patch.set_position("frame", (-320.5, 40.25))
    patch.set_position("add", (0.0, -75.0))
    patch.set_backdrop(
        "backdrop1", Backdrop("backdrop1", "Clock", (200, 80, 40), (-400, -100, 600, 300))
    )
    patch.set_backdrop("backdrop1", patch.backdrops["backdrop1"]._replace(title="The clock"))
    editor.send_edits()
    assert poll_until(lambda: engine.step() or engine.patch.backdrops, TIMEOUT_S)
    assert engine.patch.node("frame").pos == (-320.5, 40.25)
    assert engine.patch.backdrops == patch.backdrops
    assert engine.evaluator.program is running  # stored, never rebuilt
    assert (engine.patch.revision, engine.patch.value_revision) == revisions

    # a node made at a place, a definition with its own layout, edits inside it
    patch.add_node("value.float", {"value": 1.0}, (480.0, 120.0), node_id="one")
    patch.add_definition("double", double_body())
    patch.add_node("subpatch", {"definition": "double", "x": 3.0}, (700.0, 0.0), node_id="d1")
    body = patch.definition("double")
    body.set_position("gain", (5.5, 60.0))
    body.add_node("math.add", {"b": 1.0}, (90.0, 160.0), node_id="plus")
    body.set_backdrop("backdrop2", Backdrop("backdrop2", "new", (1, 2, 3), (0, 0, 10, 10)))
    body.set_backdrop("backdrop1", None)
    patch.set_backdrop("backdrop1", None)
    editor.read_until("report", lambda m: m["rev"] == patch.revision and "d1" in m["nodes"])
    assert document(engine.patch) == document(patch)
    assert not any(m["type"] in ("resync", "error") for m in editor.received)

    # an editor that attaches gets it all
    editor.channel.send({"type": "get_patch"})
    sent = editor.read_until("patch")
    assert sent["document"] == document(patch)
    engine.close()


def test_a_drag_is_sent_as_where_each_node_ends() -> None:
    patch = chain_patch()
    batch = EditBatch(patch)
    patch.subscribe(batch.add)
    for step in range(100):
        patch.set_position("frame", (float(step), 0.0))
        patch.set_position("add", (0.0, float(step)))
    message = batch.take()
    assert message is not None
    assert message[0].ops == [
        {"op": "move", "node": "frame", "pos": [99.0, 0.0]},
        {"op": "move", "node": "add", "pos": [0.0, 99.0]},
    ]


def test_layout_ops_never_move_across_the_edits_between_them() -> None:
    """A node moved, removed, made again (an undo) and moved: the engine ends where the editor
    does."""
    patch = chain_patch()
    copy = chain_patch()
    batch = EditBatch(patch)
    patch.subscribe(batch.add)
    patch.set_position("add", (10.0, 10.0))
    patch.remove_node("add")
    patch.add_node("math.add", {"b": 10.0}, (50.0, 50.0), node_id="add")
    patch.set_position("add", (70.0, 70.0))
    patch.set_position("add", (90.0, 90.0))
    message = batch.take()
    assert message is not None
    assert apply_edits(copy, *message)
    assert copy.node("add").pos == (90.0, 90.0)
    assert [op["op"] for op in message[0].ops][-2:] == ["add_node", "move"]


@pytest.mark.parametrize(
    "op",
    [
        {"op": "move", "node": "add", "pos": [float("inf"), 0.0]},
        {"op": "move", "node": "add", "pos": [1e9, 0.0]},
        {"op": "move", "node": "add", "pos": ["1", 0.0]},
        {
            "op": "backdrop",
            "id": "b",
            "backdrop": {"title": "t", "color": [300, 0, 0], "rect": [0, 0, 1, 1]},
        },
        {
            "op": "backdrop",
            "id": "b",
            "backdrop": {"title": "t", "color": [0, 0, 0], "rect": [0, 0, -1, 1]},
        },
        {"op": "backdrop", "id": "b", "backdrop": {"title": 3}},
    ],
)
def test_a_layout_the_file_format_would_refuse_is_refused(op: dict) -> None:
    with pytest.raises(ProtocolError):
        apply_edits(chain_patch(), Edits(1, 0, 0, [op]), [])
