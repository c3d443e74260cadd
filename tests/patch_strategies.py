"""Hypothesis building blocks shared by the property tests: random patches over the core nodes
(user inputs, time, LFOs, noise, switches, gates, frame delays with feedback, failing nodes,
arrays), random edits, and exact comparison of outputs."""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

from nodes import Patch, PatchError

CORE_TYPES = [
    "value.float",
    "value.array",
    "input.float",
    "input.toggle",
    "time.seconds",
    "time.frame",
    "time.lfo",
    "noise.random",
    "math.add",
    "math.sub",
    "math.mul",
    "math.div",
    "math.sin",
    "math.cos",
    "math.abs",
    "math.clamp",
    "math.mix",
    "logic.switch",
    "logic.switch",
    "logic.gate",
    "util.frame_delay",
    "array.linspace",
    "array.map_sin",
    "array.sum",
    "array.range",
    "debug.fail",
]


def same(a: Any, b: Any) -> bool:
    """Exactly equal: same type, floats equal (NaN matches NaN), arrays array_equal."""
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def sinks_of(patch: Patch) -> list[str]:
    return [node.id for node in patch.nodes.values() if node.spec.sink]


def random_value(data: st.DataObject, pin_type: str) -> Any:
    if pin_type == "bool":
        return data.draw(st.booleans())
    if pin_type == "int":
        return data.draw(st.integers(0, 6))
    if pin_type == "str":
        return "boom"
    if pin_type in ("num", "array") and data.draw(st.integers(0, 4)) == 0:
        size = data.draw(st.integers(0, 4))
        items = st.lists(st.sampled_from([0.0, 1.5, -2.0]), min_size=size, max_size=size)
        return np.asarray(data.draw(items), dtype=np.float64)
    return data.draw(st.sampled_from([0.0, 1.0, -2.5, 0.5, 3.0, 7.25]))


def random_patch(data: st.DataObject) -> Patch:
    """A random DAG over core nodes, with feedback loops through frame delays, closed by one to
    three sinks."""
    patch = Patch()
    count = data.draw(st.integers(2, 14))
    for _ in range(count):
        type_id = data.draw(st.sampled_from(CORE_TYPES))
        node_id = patch.add_node(type_id)
        for pin in patch.nodes[node_id].inputs:
            if pin.type == "str":
                continue
            existing = [other for other in patch.nodes if other != node_id]
            if existing and not pin.feedback and data.draw(st.integers(0, 2)) > 0:
                source = data.draw(st.sampled_from(existing))
                try:
                    patch.connect(source, "out", node_id, pin.name)
                    continue
                except PatchError:
                    pass
            with contextlib.suppress(PatchError):
                patch.set_value(node_id, pin.name, random_value(data, pin.type))
    ids = list(patch.nodes)
    for node_id in ids:
        if patch.nodes[node_id].type_id == "util.frame_delay" and data.draw(st.booleans()):
            with contextlib.suppress(PatchError):
                patch.connect(data.draw(st.sampled_from(ids)), "out", node_id, "in")
    for _ in range(data.draw(st.integers(1, 3))):
        sink = patch.add_node("output.value")
        patch.connect(data.draw(st.sampled_from(ids)), "out", sink, "in")
    return patch


def random_edit(data: st.DataObject, patch: Patch) -> None:
    """One random value or structural edit; edits the patch refuses leave it as it was."""
    ids = list(patch.nodes)
    kind = data.draw(st.sampled_from(["value", "value", "add", "remove", "connect", "disconnect"]))
    with contextlib.suppress(PatchError):
        if kind == "value" and ids:
            node_id = data.draw(st.sampled_from(ids))
            pins = patch.nodes[node_id].inputs
            if pins:
                pin = data.draw(st.sampled_from(pins))
                patch.set_value(node_id, pin.name, random_value(data, pin.type))
        elif kind == "add":
            new = patch.add_node(data.draw(st.sampled_from(CORE_TYPES)))
            if ids:
                _connect_somewhere(data, patch, data.draw(st.sampled_from(ids)), new)
        elif kind == "remove" and len(ids) > 1:
            patch.remove_node(data.draw(st.sampled_from(ids)))
        elif kind == "connect" and len(ids) > 1:
            src, dst = data.draw(st.sampled_from(ids)), data.draw(st.sampled_from(ids))
            _connect_somewhere(data, patch, src, dst)
        elif kind == "disconnect" and patch.links:
            patch.disconnect(*data.draw(st.sampled_from(patch.links)))


def _connect_somewhere(data: st.DataObject, patch: Patch, src: str, dst: str) -> None:
    pins = [pin.name for pin in patch.nodes[dst].inputs if patch.link_into(dst, pin.name) is None]
    if pins:
        patch.connect(src, "out", dst, data.draw(st.sampled_from(pins)))
