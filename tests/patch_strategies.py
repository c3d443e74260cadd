"""Hypothesis building blocks shared by the property tests: random patches over the core nodes
(user inputs, time, LFOs, noise, switches, gates, frame delays with feedback, failing nodes,
arrays), optionally with definitions and (nested) instances, random edits (inside definitions
too), and exact comparison of outputs."""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np
from hypothesis import strategies as st

from nodes import Patch, PatchError, PinSpec

SUBPATCH, INLET, OUTLET = "subpatch", "subpatch.inlet", "subpatch.outlet"
PORT_NAMES = ["x", "y", "z"]

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


def random_patch(data: st.DataObject, subpatches: bool = False) -> Patch:
    """A random DAG over core nodes, with feedback loops through frame delays, closed by one to
    three sinks. With `subpatches`, first up to three definitions (inlets, core nodes, instances
    of the definitions made before, outlets), whose instances then mix with the core nodes."""
    patch = Patch()
    if subpatches:
        for index in range(data.draw(st.integers(0, 3))):
            _random_definition(data, patch, f"d{index}")
    _fill(data, patch, data.draw(st.integers(2, 14)))
    ids = list(patch.nodes)
    for _ in range(data.draw(st.integers(1, 3))):
        sink = patch.add_node("output.value")
        source = _random_output(data, patch, ids)
        if source is not None:
            patch.connect(*source, sink, "in")
    return patch


def _random_definition(data: st.DataObject, patch: Patch, name: str) -> None:
    patch.add_definition(name, Patch())
    body = patch.definition(name)
    for _ in range(data.draw(st.integers(0, 2))):
        default = random_value(data, "float")
        body.add_node(INLET, {"name": data.draw(st.sampled_from(PORT_NAMES)), "default": default})
    _fill(data, body, data.draw(st.integers(1, 6)))
    for _ in range(data.draw(st.integers(1, 2))):
        outlet = body.add_node(OUTLET, {"name": data.draw(st.sampled_from(PORT_NAMES))})
        source = _random_output(
            data, body, [node_id for node_id in body.nodes if node_id != outlet]
        )
        if source is not None:
            with contextlib.suppress(PatchError):
                body.connect(*source, outlet, "in")


def _types_for(container: Patch) -> list[str]:
    """What a random node added to `container` may be: core nodes, instances when the document
    has definitions, and inlets and outlets inside a definition."""
    types = list(CORE_TYPES)
    if container.definitions:
        types += [SUBPATCH] * 3
    if container.name is not None:
        types += [INLET, OUTLET]
    return types


def _add(data: st.DataObject, container: Patch, type_id: str) -> str:
    """Add a node; an instance names a random definition (PatchError if that would recurse)."""
    if type_id == SUBPATCH:
        name = data.draw(st.sampled_from(sorted(container.definitions)))
        return container.add_node(SUBPATCH, {"definition": name})
    if type_id in (INLET, OUTLET):
        return container.add_node(type_id, {"name": data.draw(st.sampled_from(PORT_NAMES))})
    return container.add_node(type_id)


def _fill(data: st.DataObject, container: Patch, count: int) -> None:
    """Add `count` random nodes, each input linked from an earlier node or given a value, then
    close feedback loops through some frame delays."""
    types = [t for t in _types_for(container) if t not in (INLET, OUTLET)]
    for _ in range(count):
        try:
            node_id = _add(data, container, data.draw(st.sampled_from(types)))
        except PatchError:
            continue
        for pin in container.nodes[node_id].inputs:
            if pin.type == "str" or pin.name == "definition":
                continue
            existing = [other for other in container.nodes if other != node_id]
            if existing and not pin.feedback and data.draw(st.integers(0, 2)) > 0:
                source = _random_output(data, container, existing)
                try:
                    if source is not None:
                        container.connect(*source, node_id, pin.name)
                        continue
                except PatchError:
                    pass
            with contextlib.suppress(PatchError):
                container.set_value(node_id, pin.name, random_value(data, pin.type))
    ids = list(container.nodes)
    for node_id in ids:
        if container.nodes[node_id].type_id == "util.frame_delay" and data.draw(st.booleans()):
            source = _random_output(data, container, ids)
            if source is not None:
                with contextlib.suppress(PatchError):
                    container.connect(*source, node_id, "in")


def _random_output(
    data: st.DataObject, container: Patch, candidates: list[str]
) -> tuple[str, str] | None:
    """A random (node, output pin) among `candidates` (None: none of them has an output)."""
    with_outputs = [node_id for node_id in candidates if container.nodes[node_id].spec.outputs]
    if not with_outputs:
        return None
    node_id = data.draw(st.sampled_from(with_outputs))
    outputs = container.nodes[node_id].spec.outputs
    return node_id, data.draw(st.sampled_from([out.name for out in outputs]))


def _random_pin_value(data: st.DataObject, container: Patch, node_id: str, pin: PinSpec) -> Any:
    node = container.nodes[node_id]
    if node.type_id == SUBPATCH and pin.name == "definition":
        return data.draw(st.sampled_from(sorted(container.definitions)))
    if node.type_id in (INLET, OUTLET) and pin.name == "name":
        return data.draw(st.sampled_from(PORT_NAMES))
    return random_value(data, pin.type)


def _fresh_name(patch: Patch) -> str:
    index = len(patch.definitions)
    while f"g{index}" in patch.definitions:
        index += 1
    return f"g{index}"


EDITS = ["value", "value", "add", "remove", "connect", "disconnect"]
SUBPATCH_EDITS = ["port", "port", "group", "ungroup", "make_unique"]


def random_edit(data: st.DataObject, patch: Patch, subpatches: bool = False) -> None:
    """One random value or structural edit; edits the patch refuses leave it as it was. With
    `subpatches`, the edit may be made inside a definition (its body edits every instance) and
    may also add, rename or remove ports, group a selection, ungroup or detach an instance;
    values set on an instance's pins include switching its definition."""
    container = patch
    if subpatches and patch.definitions and data.draw(st.booleans()):
        container = patch.definition(data.draw(st.sampled_from(sorted(patch.definitions))))
    ids = list(container.nodes)
    kind = data.draw(st.sampled_from(EDITS + SUBPATCH_EDITS if subpatches else EDITS))
    instances = [node_id for node_id in ids if container.nodes[node_id].type_id == SUBPATCH]
    with contextlib.suppress(PatchError):
        if kind == "value" and ids:
            node_id = data.draw(st.sampled_from(ids))
            pins = container.nodes[node_id].inputs
            if pins:
                pin = data.draw(st.sampled_from(pins))
                value = _random_pin_value(data, container, node_id, pin)
                container.set_value(node_id, pin.name, value)
        elif kind == "add":
            new = _add(data, container, data.draw(st.sampled_from(_types_for(container))))
            if ids:
                _connect_somewhere(data, container, data.draw(st.sampled_from(ids)), new)
        elif kind == "remove" and len(ids) > 1:
            container.remove_node(data.draw(st.sampled_from(ids)))
        elif kind == "connect" and len(ids) > 1:
            src, dst = data.draw(st.sampled_from(ids)), data.draw(st.sampled_from(ids))
            _connect_somewhere(data, container, src, dst)
        elif kind == "disconnect" and container.links:
            container.disconnect(*data.draw(st.sampled_from(container.links)))
        elif kind == "port" and container.name is not None:
            _port_edit(data, container)
        elif kind == "group" and ids:
            chosen = data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=4, unique=True))
            container.group(chosen, _fresh_name(patch))
        elif kind == "ungroup" and instances:
            container.ungroup(data.draw(st.sampled_from(instances)))
        elif kind == "make_unique" and instances:
            container.make_unique(data.draw(st.sampled_from(instances)), _fresh_name(patch))


def _port_edit(data: st.DataObject, body: Patch) -> None:
    """Add an inlet or an outlet (linked inside), rename a port or remove one."""
    ports = list(body.ports)
    action = data.draw(st.sampled_from(["inlet", "outlet", "rename", "remove"]))
    if action in ("inlet", "outlet"):
        others = list(body.nodes)
        port = _add(data, body, INLET if action == "inlet" else OUTLET)
        if others:
            other = data.draw(st.sampled_from(others))
            if action == "inlet":
                _connect_somewhere(data, body, port, other)
            else:
                _connect_somewhere(data, body, other, port)
    elif action == "rename" and ports:
        body.set_value(
            data.draw(st.sampled_from(ports)), "name", data.draw(st.sampled_from(PORT_NAMES))
        )
    elif action == "remove" and ports:
        body.remove_node(data.draw(st.sampled_from(ports)))


def _connect_somewhere(data: st.DataObject, patch: Patch, src: str, dst: str) -> None:
    pins = [pin.name for pin in patch.nodes[dst].inputs if patch.link_into(dst, pin.name) is None]
    pins = [name for name in pins if name != "definition"]
    source = _random_output(data, patch, [src])
    if pins and source is not None:
        patch.connect(*source, dst, data.draw(st.sampled_from(pins)))
