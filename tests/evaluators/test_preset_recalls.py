"""Recalling a preset is an edit of USER values like an inspector's: counted per frame, only the
cones of the inputs whose value changes rerun, and CONST nodes keep their cache."""

from __future__ import annotations

from typing import Any

from nodes import Patch, PresetPlayer, capture, morph
from tests.evaluators.test_caching import Runner, sink_of


def knobs_and_a_constant() -> tuple[Patch, dict[str, str]]:
    """Two sliders, each feeding a multiplication and a sink, and a constant branch."""
    patch = Patch()
    ids: dict[str, Any] = {}
    for name in ("a", "b"):
        ids[name] = patch.add_node("input.float", {"value": 1.0, "max": 100.0})
        ids[f"mul_{name}"] = patch.add_node("math.mul", {"b": 2.0})
        patch.connect(ids[name], "out", ids[f"mul_{name}"], "a")
        ids[f"sink_{name}"] = sink_of(patch, ids[f"mul_{name}"])
    ids["const"] = patch.add_node("value.float", {"value": 3.0})
    ids["sink_const"] = sink_of(patch, ids["const"])
    patch.presets["low"] = capture(patch)
    patch.presets["high"] = {**capture(patch), (ids["a"], "value"): 50.0}  # only `a` differs
    return patch, ids


def test_jump_reruns_only_the_cone_of_the_changed_input(make_evaluator) -> None:
    patch, ids = knobs_and_a_constant()
    runner = Runner(make_evaluator(patch))
    assert runner.run() == 8
    assert runner.run(2) == 0
    PresetPlayer(patch).jump("high")
    assert runner.run() == 3  # a, mul_a, sink_a; b's cone and the constant stay cached
    assert runner.evaluator.output(ids["sink_a"]) == 100.0
    assert runner.evaluator.status(ids["const"]) == "cached"
    assert runner.evaluator.node_class(ids["const"]) == "CONST"
    PresetPlayer(patch).jump("high")  # nothing differs: nothing reruns
    assert runner.run() == 0


def test_transition_reruns_one_cone_per_frame_until_it_ends(make_evaluator) -> None:
    patch, ids = knobs_and_a_constant()
    runner = Runner(make_evaluator(patch))
    runner.run()
    player = PresetPlayer(patch)
    player.transition("high", 0.5)
    counts = []
    for _ in range(32):
        player.step(runner.frame / 60)
        counts.append(runner.run())
    # a half-second transition: at its first frame the values are still the start's
    assert counts == [0] + [3] * 30 + [0]
    assert runner.evaluator.output(ids["sink_a"]) == 100.0
    morph(patch, {"low": 1.0, "high": 1.0})
    assert runner.run() == 3
    assert runner.evaluator.output(ids["sink_a"]) == 51.0
