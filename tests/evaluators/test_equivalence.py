"""The central property: lazy, flat and dual evaluation give the same sink values every frame,
on random patches, under random value and structural edits between frames."""

from __future__ import annotations

import contextlib
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluators import DualEvaluator, FlatEvaluator, LazyEvaluator
from nodes import Patch, PatchError

SCALAR_TYPES = [
    "value.float",
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
    "logic.gate",
    "util.frame_delay",
    "array.linspace",
    "array.map_sin",
    "array.sum",
    "debug.fail",
    "output.value",
]


def same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and np.array_equal(a, b, equal_nan=True)
        )
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def random_value(data: st.DataObject, pin_type: str) -> Any:
    if pin_type == "bool":
        return data.draw(st.booleans())
    if pin_type == "int":
        return data.draw(st.integers(0, 5))
    if pin_type == "str":
        return data.draw(st.sampled_from(["boom", "fail"]))
    return data.draw(st.sampled_from([0.0, 1.0, -2.5, 0.5, 3.0, 7.25]))


def random_edit(data: st.DataObject, patch: Patch) -> None:
    """One random edit; edits the patch refuses are fine (the patch stays as it was)."""
    ids = list(patch.nodes)
    kind = data.draw(st.sampled_from(["value", "value", "add", "remove", "connect", "disconnect"]))
    try:
        if kind == "value" and ids:
            node_id = data.draw(st.sampled_from(ids))
            pins = patch.nodes[node_id].inputs
            if pins:
                pin = data.draw(st.sampled_from(pins))
                patch.set_value(node_id, pin.name, random_value(data, pin.type))
        elif kind == "add":
            new = patch.add_node(data.draw(st.sampled_from(SCALAR_TYPES)))
            if ids:
                connect_random(data, patch, data.draw(st.sampled_from(ids)), new)
        elif kind == "remove" and len(ids) > 1:
            patch.remove_node(data.draw(st.sampled_from(ids)))
        elif kind == "connect" and len(ids) > 1:
            src, dst = data.draw(st.sampled_from(ids)), data.draw(st.sampled_from(ids))
            connect_random(data, patch, src, dst)
        elif kind == "disconnect" and patch.links:
            patch.disconnect(*data.draw(st.sampled_from(patch.links)))
    except PatchError:
        pass


def connect_random(data: st.DataObject, patch: Patch, src: str, dst: str) -> None:
    pins = [pin.name for pin in patch.nodes[dst].inputs if patch.link_into(dst, pin.name) is None]
    if pins:
        patch.connect(src, "out", dst, data.draw(st.sampled_from(pins)))


def random_patch(data: st.DataObject) -> Patch:
    patch = Patch()
    count = data.draw(st.integers(2, 14))
    for _ in range(count):
        type_id = data.draw(st.sampled_from(SCALAR_TYPES))
        node_id = patch.add_node(type_id)
        for pin in patch.nodes[node_id].inputs:
            if data.draw(st.booleans()):
                patch.set_value(node_id, pin.name, random_value(data, pin.type))
    ids = list(patch.nodes)
    for _ in range(data.draw(st.integers(count, count * 3))):
        # Mostly forward links (deep chains), some backward ones (refused cycles, feedback).
        first = data.draw(st.integers(0, len(ids) - 1))
        second = data.draw(st.integers(0, len(ids) - 1))
        src, dst = ids[min(first, second)], ids[max(first, second)]
        if data.draw(st.integers(0, 4)) == 0:
            src, dst = dst, src
        with contextlib.suppress(PatchError):
            connect_random(data, patch, src, dst)
    for src in data.draw(st.lists(st.sampled_from(ids), min_size=1, max_size=3)):
        patch.connect(src, "out", patch.add_node("output.value"), "in")
    return patch


def sink_values(evaluator: Any, patch: Patch) -> dict[str, Any]:
    return {n.id: evaluator.output(n.id) for n in patch.nodes.values() if n.spec.sink}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_lazy_flat_dual_agree_every_frame(data: st.DataObject) -> None:
    patch = random_patch(data)
    evaluators = [
        LazyEvaluator(patch),
        FlatEvaluator(patch),
        FlatEvaluator(patch, caching=False),
        DualEvaluator(patch, debounce=0.0, background=False),
        DualEvaluator(patch, debounce=0.0),
    ]
    try:
        frames = data.draw(st.integers(1, 12))
        for frame in range(frames):
            for evaluator in evaluators:
                evaluator.run_frame(frame / 60.0, frame)
            reference = sink_values(evaluators[0], patch)
            for evaluator in evaluators[1:]:
                values = sink_values(evaluator, patch)
                for node_id, expected in reference.items():
                    assert same(values[node_id], expected), (
                        f"frame {frame}: {type(evaluator).__name__} {node_id} = "
                        f"{values[node_id]!r}, lazy says {expected!r}"
                    )
            for _ in range(data.draw(st.integers(0, 2))):
                random_edit(data, patch)
    finally:
        for evaluator in evaluators:
            evaluator.close()


def test_stateful_node_back_to_an_earlier_shape_is_not_served_stale() -> None:
    """A gate that ran HOT in between must not get its old CONST result back after an undo."""
    patch = Patch()
    switch = patch.add_node("logic.switch")
    gate = patch.add_node("logic.gate")
    noise = patch.add_node("noise.random")
    sink = patch.add_node("output.value")
    patch.connect(switch, "out", gate, "open")
    patch.connect(switch, "out", gate, "in")
    patch.connect(gate, "out", sink, "in")
    evaluators = [LazyEvaluator(patch), FlatEvaluator(patch), DualEvaluator(patch, debounce=0.0)]
    for frame in range(3):
        if frame == 1:
            patch.connect(noise, "out", switch, "in0")
        if frame == 2:
            patch.disconnect(noise, "out", switch, "in0")
        for evaluator in evaluators:
            evaluator.run_frame(frame / 60.0, frame)
    sampled = evaluators[0].output(sink)
    assert sampled != 0.0  # the gate held the noise value it saw while open
    assert all(evaluator.output(sink) == sampled for evaluator in evaluators)
