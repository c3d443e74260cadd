"""The engine's copy of a patch follows an editor's document of definitions: every edit of the
document (definitions added, renamed and removed, edits inside bodies, port renames that carry
links along, group, ungroup, make_unique) is replayed as `edits` ops onto a copy made from the
`patch` message, and the copy stays equal to the document with the same revisions."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from app.engine.protocol.channel import EditBatch, apply_edits, patch_from_message, patch_message
from app.engine.protocol.messages import TO_ENGINE, decode, encode
from nodes import Patch, PatchFileError, patch_from_dict, patch_to_dict
from nodes.limits import active_limits, set_active_limits


def through_json(message: Any) -> Any:
    """`message` as the engine receives it: encoded, through JSON text, decoded."""
    return decode(json.loads(json.dumps(encode(message))), TO_ENGINE)


def without_positions(patch: Patch) -> dict[str, Any]:
    """patch_to_dict without node positions (UI-only: edits never carry them)."""
    document = patch_to_dict(patch)
    bodies = [document, *document.get("definitions", {}).values()]
    for body in bodies:
        for node in body["nodes"]:
            node.pop("pos")
    return document


def scale_body() -> Patch:
    body = Patch()
    inlet = body.add_node("subpatch.inlet", {"name": "x", "default": 1.5}, node_id="x_in")
    mul = body.add_node("math.mul", {"b": 2.0}, node_id="mul")
    outlet = body.add_node("subpatch.outlet", {"name": "y"}, node_id="y_out")
    body.connect(inlet, "out", mul, "a")
    body.connect(mul, "out", outlet, "in")
    return body


def starting_patch() -> Patch:
    patch = Patch()
    patch.add_node("time.frame", node_id="frame")
    patch.add_node("math.add", {"b": 1.0}, node_id="add")
    patch.add_node("math.mul", {"b": 3.0}, node_id="mul")
    patch.add_node("util.frame_delay", node_id="delay")
    patch.add_node("output.value", node_id="out")
    patch.add_node("output.value", node_id="out2")
    patch.connect("frame", "out", "add", "a")
    patch.connect("add", "out", "mul", "a")
    patch.connect("mul", "out", "delay", "in")
    patch.connect("delay", "out", "add", "b")
    patch.connect("mul", "out", "out", "in")
    patch.connect("add", "out", "out2", "in")
    return patch


def add_scale(patch: Patch) -> None:
    patch.add_definition("scale", scale_body())


def use_scale(patch: Patch) -> None:
    first = patch.add_node("subpatch", {"definition": "scale", "x": 4.0}, node_id="s1")
    patch.add_node("subpatch", {"definition": "scale"}, node_id="s2")
    patch.connect("frame", "out", first, "x")
    patch.add_node("output.value", node_id="out3")
    patch.connect("s2", "y", "out3", "in")


def edit_body(patch: Patch) -> None:
    body = patch.definition("scale")
    body.set_value("mul", "b", 5.0)
    extra = body.add_node("math.add", {"b": 0.5}, node_id="bias")
    body.disconnect("mul", "out", "y_out", "in")
    body.connect("mul", "out", extra, "a")
    body.connect(extra, "out", "y_out", "in")


def rename_ports(patch: Patch) -> None:
    body = patch.definition("scale")
    body.set_value("x_in", "name", "gain")
    body.set_value("y_out", "name", "result")
    body.add_node("subpatch.inlet", {"name": "offset", "default": 1.0}, node_id="off_in")
    body.connect("off_in", "out", "bias", "b")


def nest(patch: Patch) -> None:
    patch.add_definition("outer", Patch())
    outer = patch.definition("outer")
    inner = outer.add_node("subpatch", {"definition": "scale"}, node_id="inner")
    inlet = outer.add_node("subpatch.inlet", {"name": "x"})
    outlet = outer.add_node("subpatch.outlet", {"name": "y"})
    outer.connect(inlet, "out", inner, "gain")
    outer.connect(inner, "result", outlet, "in")
    patch.add_node("subpatch", {"definition": "outer"}, node_id="o1")
    patch.definition("scale").remove_node("off_in")  # re-derives the instance inside outer


def group(patch: Patch) -> None:
    patch.group(["add", "mul", "delay"], "loop")


def group_in_body(patch: Patch) -> None:
    patch.definition("loop").group(["mul"], "just_mul")


def make_unique(patch: Patch) -> None:
    patch.make_unique("s2", "scale_copy")
    patch.definition("scale_copy").set_value("mul", "b", 7.0)


def ungroup(patch: Patch) -> None:
    instance = next(n for n in patch.nodes if patch.nodes[n].values.get("definition") == "loop")
    patch.ungroup(instance)


def rename_definition(patch: Patch) -> None:
    patch.rename_definition("scale", "scaled")
    patch.definition("outer").set_value("inner", "gain", 2.0)


def remove_definition(patch: Patch) -> None:
    patch.remove_node("s2")
    patch.remove_definition("scale_copy")
    patch.remove_node("o1")
    patch.remove_definition("outer")


STEPS: list[Callable[[Patch], None]] = [
    add_scale,
    use_scale,
    edit_body,
    rename_ports,
    nest,
    group,
    group_in_body,
    make_unique,
    ungroup,
    rename_definition,
    remove_definition,
]


@pytest.mark.parametrize("batched", [False, True], ids=["step by step", "one batch"])
def test_replayed_edits_keep_the_engine_copy_equal(batched: bool) -> None:
    document = starting_patch()
    message, blobs = patch_message(document)
    copy = patch_from_message(through_json(message), blobs)
    edits = EditBatch(document)
    document.subscribe(edits.add)

    def replay(step: str) -> None:
        batch = edits.take()
        assert batch is not None, step
        sent, sent_blobs = batch
        assert apply_edits(copy, through_json(sent), sent_blobs), step
        assert (copy.revision, copy.value_revision) == (document.revision, document.value_revision)
        assert without_positions(copy) == without_positions(document), step

    for step in STEPS:
        step(document)
        if not batched:
            replay(step.__name__)
    if batched:
        replay("all steps")
    assert list(copy.definitions) == ["scaled", "just_mul"]  # loop was ungrouped, its insides kept


def test_a_body_with_a_node_type_not_installed_arrives_as_a_placeholder() -> None:
    """A definition an editor adds goes through the file format: a node whose type is not
    installed here becomes a placeholder keeping its values, as in a file (no resync)."""
    document, copy = Patch(), Patch()
    edits = EditBatch(document)
    document.subscribe(edits.add)
    body = patch_from_dict({
        "format": "patchbay", "version": 1, "links": [],
        "nodes": [{"id": "ghost", "type": "no.such", "values": {"level": 0.5}, "pos": [1, 2]}],
    })  # fmt: skip
    document.add_definition("haunted", body)
    batch = edits.take()
    assert batch is not None
    sent, blobs = batch
    assert apply_edits(copy, through_json(sent), blobs)  # the revisions agree: no resync
    ghost = copy.definition("haunted").nodes["ghost"]
    assert ghost.spec.missing and ghost.type_id == "no.such"
    assert ghost.values == {"level": 0.5} and ghost.pos == (1.0, 2.0)


def test_a_body_over_the_limits_is_refused_in_one_line() -> None:
    document, copy = Patch(), Patch()
    edits = EditBatch(document)
    document.subscribe(edits.add)
    body = Patch()
    for index in range(3):
        body.add_node("value.float", {"value": float(index)}, node_id=f"v{index}")
    document.add_definition("big", body)
    batch = edits.take()
    assert batch is not None
    before = active_limits()
    set_active_limits(before.replaced(nodes=2))
    try:
        with pytest.raises(PatchFileError) as refused:
            apply_edits(copy, through_json(batch[0]), batch[1])
    finally:
        set_active_limits(before)
    assert "nodes" in str(refused.value) and "\n" not in str(refused.value)
    assert "big" not in copy.definitions


def test_array_values_in_a_body_travel_as_blobs() -> None:
    document, copy = Patch(), Patch()
    edits = EditBatch(document)
    document.subscribe(edits.add)
    ramp = np.arange(10_000, dtype=np.float32)
    body = Patch()
    body.add_node("value.array", {"value": ramp}, node_id="ramp")
    document.add_definition("ramped", body)
    batch = edits.take()
    assert batch is not None
    sent, blobs = batch
    assert [len(blob) for blob in blobs] == [ramp.nbytes]  # raw bytes, not JSON numbers
    assert apply_edits(copy, through_json(sent), blobs)
    arrived = copy.definition("ramped").nodes["ramp"].values["value"]
    assert arrived.dtype == np.float32 and np.array_equal(arrived, ramp)
