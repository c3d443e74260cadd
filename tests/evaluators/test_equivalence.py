"""The central property: lazy, flat and dual evaluation give the same sink values every frame,
on random patches, under random value and structural edits between frames; with definitions
and instances, edits inside definitions included."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluators import DualEvaluator, FlatEvaluator, LazyEvaluator
from evaluators.graph.view import inlined
from nodes import Patch
from tests.evaluator_kinds import EVALUATOR_KINDS, evaluator_for_tests
from tests.patch_strategies import random_edit, random_patch, same


def sink_values(evaluator: Any, patch: Patch) -> dict[str, Any]:
    return {n.id: evaluator.output(n.id) for n in patch.nodes.values() if n.spec.sink}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_lazy_flat_dual_agree_every_frame(data: st.DataObject) -> None:
    play_random(data, subpatches=False)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_lazy_flat_dual_agree_every_frame_with_subpatches(data: st.DataObject) -> None:
    """Random definitions, nested instances and edits inside definitions; until the first edit,
    the patch inlined by hand (instances' nodes at their paths) plays the same too."""
    play_random(data, subpatches=True)


def play_random(data: st.DataObject, subpatches: bool) -> None:
    """Run a random patch in every evaluator side by side, with random edits between frames;
    the sinks must agree every frame, and every flat program must be valid. With `subpatches`,
    a lazy evaluator of `inlined(patch)` made at the start must agree until the first edit."""
    patch = random_patch(data, subpatches)
    evaluators = [
        *(evaluator_for_tests(kind, patch) for kind in EVALUATOR_KINDS),
        FlatEvaluator(patch, caching=False),
        FlatEvaluator(patch, codegen=False),  # the step loop, not generated code
        DualEvaluator(patch, debounce=0.0, background=False),
    ]
    inlined_reference = LazyEvaluator(inlined(patch)) if subpatches else None
    try:
        frames = data.draw(st.integers(1, 12))
        for frame in range(frames):
            for evaluator in evaluators:
                evaluator.run_frame(frame / 60.0, frame)
                program = getattr(evaluator, "program", None)
                if program is not None:
                    program.validate()
            reference = sink_values(evaluators[0], patch)
            others = list(evaluators[1:])
            if inlined_reference is not None:
                inlined_reference.run_frame(frame / 60.0, frame)
                others.append(inlined_reference)
            for evaluator in others:
                values = sink_values(evaluator, patch)
                for node_id, expected in reference.items():
                    name = "inlined" if evaluator is inlined_reference else type(evaluator).__name__
                    assert same(values[node_id], expected), (
                        f"frame {frame}: {name} {node_id} = {values[node_id]!r}, "
                        f"lazy says {expected!r}"
                    )
            edits = data.draw(st.integers(0, 2))
            if edits and inlined_reference is not None:
                inlined_reference.close()
                inlined_reference = None
            for _ in range(edits):
                random_edit(data, patch, subpatches)
    finally:
        for evaluator in evaluators:
            evaluator.close()
        if inlined_reference is not None:
            inlined_reference.close()


def play_three_ways(
    patch: Patch, sink: str, frames: int, edits: dict[int, Callable[[], object]]
) -> list[Any]:
    """Run every evaluator kind side by side, making `edits[frame]()` before that frame; they
    must agree on the sink every frame. Returns the sink's value per frame."""
    evaluators = [evaluator_for_tests(kind, patch) for kind in EVALUATOR_KINDS]
    seen = []
    try:
        for frame in range(frames):
            if frame in edits:
                edits[frame]()
            for evaluator in evaluators:
                evaluator.run_frame(frame / 60.0, frame)
            seen.append(evaluators[0].output(sink))
            assert all(same(evaluator.output(sink), seen[-1]) for evaluator in evaluators), frame
    finally:
        for evaluator in evaluators:
            evaluator.close()
    return seen


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
    edits = {
        1: lambda: patch.connect(noise, "out", switch, "in0"),
        2: lambda: patch.disconnect(noise, "out", switch, "in0"),
    }
    sampled = play_three_ways(patch, sink, 3, edits)[-1]
    assert sampled != 0.0  # the gate held the noise value it saw while open


def test_a_delay_first_run_while_capturing_also_captures_its_own_input() -> None:
    """`late` runs only when `early` captures its feedback input at the end of a frame; its own
    feedback input must be captured too, in that same frame."""
    patch = Patch()
    early = patch.add_node("util.frame_delay", node_id="early")
    late = patch.add_node("util.frame_delay", {"in": 1.0}, node_id="a_late")
    counter = patch.add_node("time.frame")
    sink = patch.add_node("output.value")
    patch.connect(late, "out", early, "in")
    patch.connect(early, "out", sink, "in")
    seen = play_three_ways(patch, sink, 6, {2: lambda: patch.connect(counter, "out", late, "in")})
    assert seen == [0.0, 0.0, 1.0, 1.0, 2.0, 3.0]


def test_a_value_edit_upstream_of_a_hot_node_does_not_run_it_before_its_hot_inputs() -> None:
    """An LFO whose shape comes from a constant and whose rate comes from time: editing the
    constant must not run the LFO early, with last frame's rate."""
    patch = Patch()
    shape = patch.add_node("value.float")
    clock = patch.add_node("time.seconds")
    lfo = patch.add_node("time.lfo")
    sink = patch.add_node("output.value")
    patch.connect(clock, "out", lfo, "hz")
    patch.connect(shape, "out", lfo, "shape")
    patch.connect(lfo, "out", sink, "in")
    seen = play_three_ways(patch, sink, 4, {1: lambda: patch.set_value(shape, "value", 0.0)})
    assert seen[-1] > 0.0
