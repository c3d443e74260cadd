"""The node library: every spec's examples, and the behaviour of stateful, lazy and clock nodes."""

from __future__ import annotations

import math
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from evaluators import FlatEvaluator, LazyEvaluator
from nodes import LIBRARY, Determinism, NodeSpec, Patch, get_spec
from nodes.types import coerce_value

# ----------------------------------------------------------------------------- helpers


class FakePull:
    """A lazy input that counts how often it is pulled."""

    def __init__(self, value: Any, connected: bool = True) -> None:
        self.value = value
        self.connected = connected
        self.calls = 0

    def __call__(self) -> Any:
        self.calls += 1
        return self.value


def is_pure(spec: NodeSpec) -> bool:
    return not spec.uses_context and not spec.stateful and spec.dynamic_inputs is None


def call_pure(spec: NodeSpec, inputs: dict[str, Any]) -> Any:
    """Call a pure node's compute with `inputs` (coerced like stored values), defaults elsewhere."""
    args = []
    for pin in spec.inputs:
        value = coerce_value(pin.type, inputs[pin.name]) if pin.name in inputs else pin.default
        args.append(FakePull(value, connected=False) if pin.lazy else value)
    return spec.compute(*args)


def assert_same(actual: Any, expected: Any) -> None:
    if isinstance(expected, np.ndarray) or isinstance(actual, np.ndarray):
        assert isinstance(actual, np.ndarray), f"expected an array, got {actual!r}"
        np.testing.assert_allclose(actual, np.asarray(expected, dtype=float), rtol=1e-12)
    elif isinstance(expected, float):
        assert actual == pytest.approx(expected, rel=1e-12, abs=1e-12)
    else:
        assert actual == expected


EXAMPLES = [
    pytest.param(spec, inputs, expected, id=f"{spec.id}[{n}]")
    for spec in sorted(LIBRARY.values(), key=lambda s: s.id)
    for n, (inputs, expected) in enumerate(spec.examples)
]


def run_one(type_id: str, values: dict[str, Any], make: Callable[[Patch], Any]) -> Any:
    """Evaluate one node with `values` through a patch and an evaluator, read via a sink."""
    patch = Patch()
    node = patch.add_node(type_id, values)
    sink = patch.add_node("output.value")
    patch.connect(node, "out", sink, "in")
    evaluator = make(patch)
    evaluator.run_frame(0.0, 0)
    assert evaluator.status(node) in ("ok", "cached"), evaluator.error(node)
    return evaluator.output(sink)


# ----------------------------------------------------------------------------- examples


def test_every_example_belongs_to_a_pure_node() -> None:
    for spec in LIBRARY.values():
        if spec.examples:
            assert is_pure(spec), f"{spec.id} has examples but needs a context or state"


def test_core_library_has_examples() -> None:
    assert len(EXAMPLES) >= 15


@pytest.mark.parametrize(("spec", "inputs", "expected"), EXAMPLES)
def test_spec_examples(spec: NodeSpec, inputs: dict[str, Any], expected: Any) -> None:
    assert_same(call_pure(spec, dict(inputs)), expected)


# Read through a sink: single-output nodes that are not sinks themselves.
THROUGH_A_PATCH = [
    case for case in EXAMPLES if not case.values[0].sink and len(case.values[0].outputs) == 1
]


@pytest.mark.parametrize(("spec", "inputs", "expected"), THROUGH_A_PATCH)
def test_spec_examples_through_a_patch(
    spec: NodeSpec, inputs: dict[str, Any], expected: Any, make_evaluator
) -> None:
    assert_same(run_one(spec.id, dict(inputs), make_evaluator), expected)


def test_library_has_the_required_node_types() -> None:
    required = {
        "value.float": Determinism.DETERMINISTIC,
        "input.float": Determinism.USER_INPUT,
        "input.toggle": Determinism.USER_INPUT,
        "time.seconds": Determinism.NONDETERMINISTIC,
        "time.frame": Determinism.NONDETERMINISTIC,
        "time.lfo": None,
        "noise.random": Determinism.NONDETERMINISTIC,
        "math.add": Determinism.DETERMINISTIC,
        "math.sub": Determinism.DETERMINISTIC,
        "math.mul": Determinism.DETERMINISTIC,
        "math.div": Determinism.DETERMINISTIC,
        "math.sin": Determinism.DETERMINISTIC,
        "math.cos": Determinism.DETERMINISTIC,
        "math.abs": Determinism.DETERMINISTIC,
        "math.clamp": Determinism.DETERMINISTIC,
        "math.mix": Determinism.DETERMINISTIC,
        "logic.switch": None,
        "logic.gate": None,
        "util.frame_delay": None,
        "array.linspace": Determinism.DETERMINISTIC,
        "array.map_sin": Determinism.DETERMINISTIC,
        "array.sum": Determinism.DETERMINISTIC,
        "output.value": Determinism.DETERMINISTIC,
        "debug.fail": None,
    }
    for type_id, determinism in required.items():
        spec = get_spec(type_id)
        assert spec is not None, type_id
        if determinism is not None:
            assert spec.determinism is determinism, type_id
        assert [out.name for out in spec.outputs] == ["out"], type_id
    assert get_spec("output.value").sink
    pins = {type_id: [p.name for p in get_spec(type_id).inputs] for type_id in required}
    assert pins["math.add"] == ["a", "b"]
    assert pins["math.sin"] == ["x"]
    assert pins["time.lfo"] == ["hz", "shape"]
    assert pins["logic.switch"] == ["index", "in0", "in1", "in2", "in3"]
    assert pins["logic.gate"] == ["open", "in"]
    assert set(pins["util.frame_delay"]) == {"init", "in"}
    switch, gate = get_spec("logic.switch"), get_spec("logic.gate")
    delay = get_spec("util.frame_delay")
    assert not switch.input("index").lazy
    assert all(switch.input(f"in{k}").lazy for k in range(4))
    assert gate.input("in").lazy and not gate.input("open").lazy
    assert delay.input("in").feedback and not delay.input("init").feedback


# ----------------------------------------------------------------------------- math


FLOAT_CASES = {
    "math.add": ({"a": 1.5, "b": 2.0}, 3.5),
    "math.sub": ({"a": 1.5, "b": 2.0}, -0.5),
    "math.mul": ({"a": 1.5, "b": 2.0}, 3.0),
    "math.div": ({"a": 1.5, "b": 2.0}, 0.75),
    "math.sin": ({"x": 0.5}, math.sin(0.5)),
    "math.cos": ({"x": 0.5}, math.cos(0.5)),
    "math.abs": ({"x": -0.5}, 0.5),
    "math.clamp": ({"x": -0.5, "low": 0.0, "high": 1.0}, 0.0),
    "math.mix": ({"a": 2.0, "b": 4.0, "t": 0.75}, 3.5),
}


@pytest.mark.parametrize("type_id", sorted(FLOAT_CASES))
def test_math_on_floats(type_id: str) -> None:
    inputs, expected = FLOAT_CASES[type_id]
    result = call_pure(get_spec(type_id), inputs)
    assert not isinstance(result, np.ndarray)
    assert result == pytest.approx(expected)


ARRAY_CASES = {
    "math.add": (lambda a, b: a + b, ("a", "b")),
    "math.sub": (lambda a, b: a - b, ("a", "b")),
    "math.mul": (lambda a, b: a * b, ("a", "b")),
    "math.div": (lambda a, b: a / b, ("a", "b")),
    "math.sin": (np.sin, ("x",)),
    "math.cos": (np.cos, ("x",)),
    "math.abs": (np.abs, ("x",)),
    "math.clamp": (lambda x, low, high: np.clip(x, low, high), ("x", "low", "high")),
    "math.mix": (lambda a, b, t: a + (b - a) * t, ("a", "b", "t")),
}


@pytest.mark.parametrize("type_id", sorted(ARRAY_CASES))
@pytest.mark.parametrize("scalar_second", [False, True])
def test_math_on_arrays(type_id: str, scalar_second: bool) -> None:
    oracle, pins = ARRAY_CASES[type_id]
    x = np.array([-1.5, -0.25, 0.5, 2.0])
    values = [x, np.array([0.5, 1.0, 2.0, 4.0]), np.array([0.25, 0.5, 0.75, 1.0])]
    if scalar_second:
        values[1], values[2] = 0.5, 0.75
    inputs = dict(zip(pins, values, strict=False))
    result = call_pure(get_spec(type_id), inputs)
    assert isinstance(result, np.ndarray)
    np.testing.assert_allclose(result, oracle(*[inputs[p] for p in pins]))


def test_math_mixes_floats_and_arrays_through_a_patch() -> None:
    patch = Patch()
    space = patch.add_node("array.linspace", {"start": 0.0, "stop": 1.0, "count": 5})
    mul = patch.add_node("math.mul", {"b": 2.0})
    total = patch.add_node("array.sum")
    sink = patch.add_node("output.value")
    patch.connect(space, "out", mul, "a")
    patch.connect(mul, "out", total, "x")
    patch.connect(total, "out", sink, "in")
    for evaluator_type in (LazyEvaluator, FlatEvaluator):
        evaluator = evaluator_type(patch)
        evaluator.run_frame(0.0, 0)
        np.testing.assert_allclose(evaluator.output(mul), [0.0, 0.5, 1.0, 1.5, 2.0])
        assert evaluator.output(sink) == pytest.approx(5.0)


def test_div_by_zero_fails_for_floats_and_arrays() -> None:
    spec = get_spec("math.div")
    with pytest.raises(ZeroDivisionError):
        call_pure(spec, {"a": 1.0, "b": 0.0})
    with pytest.raises(ZeroDivisionError):
        call_pure(spec, {"a": np.ones(3), "b": np.array([1.0, 0.0, 2.0])})


def test_array_nodes() -> None:
    np.testing.assert_allclose(
        call_pure(get_spec("array.map_sin"), {"x": [0.0, 1.0], "freq": 2.0, "phase": 0.5}),
        np.sin(np.array([0.0, 1.0]) * 2.0 + 0.5),
    )
    assert call_pure(get_spec("array.sum"), {"x": [0.5, 1.5]}) == 2.0
    assert isinstance(call_pure(get_spec("array.sum"), {"x": [0.5, 1.5]}), float)
    np.testing.assert_array_equal(call_pure(get_spec("array.range"), {"count": 3}), [0, 1, 2])
    with pytest.raises(ValueError):
        call_pure(get_spec("array.linspace"), {"count": -1})


def test_input_float_clamps_to_its_range() -> None:
    spec = get_spec("input.float")
    assert call_pure(spec, {"value": -1.0, "min": 0.0, "max": 1.0}) == 0.0
    assert call_pure(spec, {"value": 0.25, "min": 0.0, "max": 1.0}) == 0.25
    assert call_pure(spec, {"value": 7.0, "min": 0.0, "max": 5.0}) == 5.0


def test_debug_fail_raises_its_message() -> None:
    with pytest.raises(RuntimeError, match="boom"):
        call_pure(get_spec("debug.fail"), {"message": "boom"})


# ----------------------------------------------------------------------------- time


def clock(t: float, frame: int = 0) -> SimpleNamespace:
    return SimpleNamespace(t=t, frame=frame, dt=0.0)


def lfo_run(samples: list[tuple[float, float, int]]) -> list[float]:
    """Run one LFO's compute over (t, hz, shape) samples with one state."""
    spec = get_spec("time.lfo")
    state = spec.init_state("/lfo1")
    return [spec.compute(clock(t), state, hz, shape) for t, hz, shape in samples]


def test_lfo_shapes() -> None:
    ts = [0.0, 0.125, 0.25, 0.5, 0.75]
    saw = lfo_run([(t, 1.0, 2) for t in ts])
    assert saw == pytest.approx([0.0, 0.125, 0.25, 0.5, 0.75])
    sine = lfo_run([(t, 1.0, 0) for t in ts])
    assert sine == pytest.approx([0.5 - 0.5 * math.cos(2 * math.pi * t) for t in ts])
    assert sine[0] == pytest.approx(0.0) and sine[3] == pytest.approx(1.0)
    triangle = lfo_run([(t, 1.0, 1) for t in ts])
    assert triangle == pytest.approx([0.0, 0.25, 0.5, 1.0, 0.5])
    square = lfo_run([(t, 1.0, 3) for t in ts])
    assert square == [1.0, 1.0, 1.0, 0.0, 0.0]
    for values in (saw, sine, triangle, square):
        assert all(0.0 <= v <= 1.0 for v in values)


def test_lfo_phase_accumulates_when_hz_changes() -> None:
    # 0.5 s at 1 Hz, then 0.125 s at 2 Hz: phase 0.5 + 0.25, no jump to 2 * 0.625
    values = lfo_run([(0.0, 1.0, 2), (0.5, 1.0, 2), (0.625, 2.0, 2), (0.75, 2.0, 2)])
    assert values == pytest.approx([0.0, 0.5, 0.75, 0.0], abs=1e-12)


def test_lfo_wraps_phase() -> None:
    values = lfo_run([(0.0, 3.0, 2), (0.5, 3.0, 2), (1.0, 3.0, 2)])
    assert values == pytest.approx([0.0, 0.5, 0.0], abs=1e-12)


def test_lfo_state_is_per_node_through_an_evaluator() -> None:
    patch = Patch()
    slow = patch.add_node("time.lfo", {"hz": 1.0, "shape": 2})
    fast = patch.add_node("time.lfo", {"hz": 2.0, "shape": 2})
    for lfo in (slow, fast):
        patch.connect(lfo, "out", patch.add_node("output.value"), "in")
    evaluator = LazyEvaluator(patch)
    for frame, t in enumerate([0.0, 0.1, 0.2]):
        evaluator.run_frame(t, frame)
    assert evaluator.output(slow) == pytest.approx(0.2)
    assert evaluator.output(fast) == pytest.approx(0.4)


def test_time_nodes_read_the_clock() -> None:
    assert get_spec("time.seconds").compute(clock(1.25, 3)) == 1.25
    assert get_spec("time.frame").compute(clock(1.25, 3)) == 3.0


# ----------------------------------------------------------------------------- noise


def noise_sequence(path: str, frames: int, seed: int = 0) -> list[float]:
    spec = get_spec("noise.random")
    state = spec.init_state(path)
    return [spec.compute(clock(f / 60, f), state, seed) for f in range(frames)]


def test_noise_is_reproducible_per_path() -> None:
    first = noise_sequence("/random1", 200)
    assert first == noise_sequence("/random1", 200)
    assert first != noise_sequence("/random2", 200)
    assert first != noise_sequence("/random1", 200, seed=1)
    assert len(set(first)) == len(first)  # it varies from frame to frame


def test_noise_is_in_unit_interval() -> None:
    values = noise_sequence("/random1", 2000) + noise_sequence("/x", 2000, seed=123456)
    assert all(0.0 <= v < 1.0 for v in values)
    assert 0.4 < float(np.mean(values)) < 0.6
    assert min(values) < 0.05 and max(values) > 0.95


def test_noise_is_the_same_in_every_evaluator_and_run() -> None:
    def play(evaluator_type) -> list[float]:
        patch = Patch()
        noise = patch.add_node("noise.random", {"seed": 7})
        sink = patch.add_node("output.value")
        patch.connect(noise, "out", sink, "in")
        evaluator = evaluator_type(patch)
        seen = []
        for frame in range(20):
            evaluator.run_frame(frame / 60, frame)
            seen.append(evaluator.output(sink))
        return seen

    lazy = play(LazyEvaluator)
    assert lazy == play(LazyEvaluator) == play(FlatEvaluator)
    assert lazy == noise_sequence("/random1", 20, seed=7)


# ----------------------------------------------------------------------------- logic.switch


def switch(index: float, pulls: list[FakePull]) -> Any:
    return get_spec("logic.switch").compute(index, *pulls)


@pytest.mark.parametrize(
    ("index", "chosen"),
    [(0.0, 0), (0.99, 0), (1.0, 1), (1.5, 1), (2.999, 2), (3.0, 3), (-0.5, 0), (-7.0, 0), (9.0, 3)],
)
def test_switch_floors_and_clamps_the_index(index: float, chosen: int) -> None:
    pulls = [FakePull(f"in{k}") for k in range(4)]
    assert switch(index, pulls) == f"in{chosen}"
    assert [p.calls for p in pulls] == [1 if k == chosen else 0 for k in range(4)]


@pytest.mark.parametrize(("index", "chosen"), [(1.0, 1), (2.0, 1), (5.0, 1), (0.2, 0)])
def test_switch_clamps_to_the_highest_connected_input(index: float, chosen: int) -> None:
    pulls = [FakePull("in0"), FakePull("in1"), FakePull("in2", False), FakePull("in3", False)]
    assert switch(index, pulls) == f"in{chosen}"


def test_switch_with_nothing_connected_uses_the_stored_values() -> None:
    pulls = [FakePull(float(k), connected=False) for k in range(4)]
    assert switch(2.0, pulls) == 2.0
    assert switch(10.0, pulls) == 3.0


def test_switch_evaluates_only_the_chosen_branch() -> None:
    patch = Patch()
    index = patch.add_node("input.float", {"value": 1.0, "max": 3.0})
    sw = patch.add_node("logic.switch")
    failing = patch.add_node("debug.fail")
    chosen = patch.add_node("time.seconds")
    sink = patch.add_node("output.value")
    patch.connect(index, "out", sw, "index")
    patch.connect(failing, "out", sw, "in0")
    patch.connect(chosen, "out", sw, "in1")
    patch.connect(sw, "out", sink, "in")
    for evaluator_type in (LazyEvaluator, FlatEvaluator):
        evaluator = evaluator_type(patch)
        evaluator.run_frame(0.5, 0)
        assert evaluator.output(sink) == 0.5
        assert evaluator.status(failing) == "idle"
        assert evaluator.status(chosen) == "ok"
        before = evaluator.nodes_run
        evaluator.run_frame(0.75, 1)
        # time, switch, sink; the unchosen branch never runs
        assert evaluator.nodes_run - before == 3
        assert evaluator.output(sink) == 0.75
        evaluator.close()


# ----------------------------------------------------------------------------- logic.gate


def test_gate_passes_while_open_and_keeps_the_last_value_while_closed() -> None:
    spec = get_spec("logic.gate")
    state = spec.init_state("/gate1")
    source = FakePull(1.0)
    assert spec.compute(state, True, source) == 1.0
    source.value = 2.0
    assert spec.compute(state, True, source) == 2.0
    assert source.calls == 2
    source.value = 3.0
    assert spec.compute(state, False, source) == 2.0
    assert spec.compute(state, False, source) == 2.0
    assert source.calls == 2  # not pulled while closed
    assert spec.compute(state, True, source) == 3.0


def test_gate_starts_at_zero_when_closed() -> None:
    spec = get_spec("logic.gate")
    source = FakePull(5.0)
    assert spec.compute(spec.init_state("/g"), False, source) == 0.0
    assert source.calls == 0


# Counts compute calls per frame: a dual evaluator could swap to flat in the middle.
@pytest.mark.parametrize("evaluator_type", [LazyEvaluator, FlatEvaluator])
def test_gate_does_not_evaluate_its_input_while_closed(evaluator_type) -> None:
    patch = Patch()
    toggle = patch.add_node("input.toggle", {"value": True})
    seconds = patch.add_node("time.seconds")
    gate = patch.add_node("logic.gate")
    sink = patch.add_node("output.value")
    patch.connect(toggle, "out", gate, "open")
    patch.connect(seconds, "out", gate, "in")
    patch.connect(gate, "out", sink, "in")
    evaluator = evaluator_type(patch)
    evaluator.run_frame(1.0, 0)
    assert evaluator.output(sink) == 1.0
    patch.set_value(toggle, "value", False)
    evaluator.run_frame(2.0, 1)
    assert evaluator.output(sink) == 1.0
    assert evaluator.status(seconds) == "idle"
    before = evaluator.nodes_run
    evaluator.run_frame(3.0, 2)
    assert evaluator.output(sink) == 1.0
    assert evaluator.status(seconds) == "idle"
    assert evaluator.nodes_run - before == 2  # gate and sink, not time.seconds
    patch.set_value(toggle, "value", True)
    evaluator.run_frame(4.0, 3)
    assert evaluator.output(sink) == 4.0


# ----------------------------------------------------------------------------- util.frame_delay


def test_frame_delay_outputs_the_previous_frame(make_evaluator) -> None:
    patch = Patch()
    frame = patch.add_node("time.frame")
    delay = patch.add_node("util.frame_delay", {"init": -1.0})
    sink = patch.add_node("output.value")
    patch.connect(frame, "out", delay, "in")
    patch.connect(delay, "out", sink, "in")
    evaluator = make_evaluator(patch)
    seen = []
    for n in range(5):
        evaluator.run_frame(n / 60, n)
        seen.append(evaluator.output(sink))
    assert seen == [-1.0, 0.0, 1.0, 2.0, 3.0]


def test_frame_delay_closes_a_counting_loop(make_evaluator) -> None:
    patch = Patch()
    delay = patch.add_node("util.frame_delay", {"init": 10.0})
    add = patch.add_node("math.add", {"b": 1.0})
    sink = patch.add_node("output.value")
    patch.connect(delay, "out", add, "a")
    patch.connect(add, "out", delay, "in")
    patch.connect(add, "out", sink, "in")
    evaluator = make_evaluator(patch)
    seen = []
    for n in range(4):
        evaluator.run_frame(n / 60, n)
        seen.append(evaluator.output(sink))
    assert seen == [11.0, 12.0, 13.0, 14.0]


def test_frame_delay_compute() -> None:
    spec = get_spec("util.frame_delay")
    state = spec.init_state("/d")
    assert spec.compute(state, 5.0, 1.0) == 5.0  # init on the first frame
    assert spec.compute(state, 5.0, 1.0) == 1.0
    assert spec.compute(state, 5.0, 2.0) == 2.0
