"""Everyday CPU nodes (nodes.library.control.stateful, shaping, vector): triggers, edges, smoothers,
the ADSR envelope, the random walk, easing, text formatting, logic and vectors, called directly and
through every evaluator kind where state across frames matters."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from nodes import LIBRARY, Determinism, Patch, get_spec
from nodes.library.control import shaping
from nodes.library.control import stateful as control
from nodes.library.control.shaping import EASING_CURVES
from nodes.library.core import vector
from nodes.limits import active_limits, set_active_limits

# ----------------------------------------------------------------------------- helpers


class Runner:
    """One instance of a node type, called frame after frame with its own state."""

    def __init__(self, type_id: str, path: str = "/node1") -> None:
        self.spec = get_spec(type_id)
        assert self.spec is not None
        self.state = self.spec.init_state(path) if self.spec.init_state else None

    def __call__(self, t: float = 0.0, frame: int = 0, **inputs: Any) -> Any:
        args: list[Any] = []
        if self.spec.uses_context:
            args.append(SimpleNamespace(t=t, frame=frame, dt=0.0))
        if self.state is not None:
            args.append(self.state)
        args += [inputs.get(pin.name, pin.default) for pin in self.spec.inputs]
        return self.spec.compute(*args)


def over(runner: Runner, pin: str, values: Iterable[Any], fps: float = 60.0, **fixed: Any) -> list:
    """The outputs of `runner` fed `values` on `pin`, one a frame at `fps`."""
    return [runner(n / fps, n, **{pin: v}, **fixed) for n, v in enumerate(values)]


def call(type_id: str, **inputs: Any) -> Any:
    return Runner(type_id)(**inputs)


def play(
    make_evaluator: Callable[..., Any],
    patch: Patch,
    sink: str,
    frames: int,
    fps: float = 60.0,
    before: Callable[[int], None] | None = None,
) -> list[Any]:
    """Run `frames` frames at `fps`, calling `before(frame)` first each time; the sink's outputs."""
    evaluator = make_evaluator(patch)
    seen = []
    for n in range(frames):
        if before is not None:
            before(n)
        evaluator.run_frame(n / fps, n)
        seen.append(evaluator.output(sink))
    return seen


def driven(type_id: str, values: dict[str, Any] | None = None, pin: str = "trigger"):
    """A patch where an input.toggle feeds `pin` of one `type_id` node read by a sink."""
    patch = Patch()
    toggle = patch.add_node("input.toggle")
    node = patch.add_node(type_id, values or {})
    sink = patch.add_node("output.value")
    patch.connect(toggle, "out", node, pin)
    patch.connect(node, "out", sink, "in")
    return patch, toggle, node, sink


MODULES = (control, shaping, vector)
OURS = sorted(
    (spec for spec in LIBRARY.values() if spec.compute.__module__ in {m.__name__ for m in MODULES}),
    key=lambda spec: spec.id,
)

# ----------------------------------------------------------------------------- the library


def test_the_nodes_are_registered_with_docs_for_every_pin() -> None:
    assert len(OURS) == 28
    for spec in OURS:
        assert spec.summary.endswith("."), spec.id
        pins = {pin.name for pin in spec.inputs} | {out.name for out in spec.outputs}
        assert set(spec.pin_docs) == pins, spec.id
        assert all(text.strip().endswith(".") for text in spec.pin_docs.values()), spec.id


def test_stateful_nodes_are_nondeterministic_and_pure_ones_have_examples() -> None:
    for spec in OURS:
        if spec.stateful:
            assert spec.determinism is Determinism.NONDETERMINISTIC, spec.id
        else:
            assert spec.determinism is Determinism.DETERMINISTIC, spec.id
            assert spec.examples, spec.id


# ----------------------------------------------------------------------------- triggers


def test_counter_counts_rising_edges_and_resets() -> None:
    counter = Runner("trigger.counter")
    triggers = [0, 1, 1, 0, 1, 0, 0, 1, 1, 1]
    assert over(counter, "trigger", triggers) == [0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert counter(trigger=True, reset=True) == 0
    assert counter(trigger=False) == 0
    assert counter(trigger=True) == 1


def test_counter_wraps_at_its_modulo() -> None:
    counter = Runner("trigger.counter")
    assert over(counter, "trigger", [1, 0] * 4, modulo=3)[::2] == [1, 2, 0, 1]


def test_counter_counts_a_trigger_high_on_the_first_frame() -> None:
    assert over(Runner("trigger.counter"), "trigger", [1, 1, 0, 1]) == [1, 1, 1, 2]


def test_counter_takes_numbers_above_half_as_high() -> None:
    counter = Runner("trigger.counter")
    assert over(counter, "trigger", [0.0, 0.4, 0.6, 0.9, 0.2, 1.0]) == [0, 0, 1, 1, 1, 2]


def test_counter_refuses_an_array_trigger_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^trigger: expected one value, got an array"):
        call("trigger.counter", trigger=np.ones(3))


def test_counter_through_every_evaluator(make_evaluator) -> None:
    patch, toggle, _counter, sink = driven("trigger.counter")
    pattern = [False, True, True, False, True, False, True, True, False, False]

    def before(n: int) -> None:
        patch.set_value(toggle, "value", pattern[n])

    seen = play(make_evaluator, patch, sink, len(pattern), before=before)
    assert seen == [0, 1, 1, 1, 2, 2, 3, 3, 3, 3]


def test_counters_keep_their_own_state(make_evaluator) -> None:
    patch = Patch()
    fast = patch.add_node("time.lfo", {"hz": 4.0, "shape": 3})
    slow = patch.add_node("time.lfo", {"hz": 1.0, "shape": 3})
    sinks = []
    for lfo in (fast, slow):
        counter = patch.add_node("trigger.counter")
        sinks.append(patch.add_node("output.value"))
        patch.connect(lfo, "out", counter, "trigger")
        patch.connect(counter, "out", sinks[-1], "in")
    evaluator = make_evaluator(patch)
    for n in range(121):  # 2 s at 60 fps: square waves high from each cycle's start
        evaluator.run_frame(n / 60, n)
    assert evaluator.output(sinks[0]) == 9  # 4 Hz: cycles start at 0, 0.25, ..., 2.0
    assert evaluator.output(sinks[1]) == 3  # 1 Hz: 0, 1, 2


def test_toggle_flips_on_rising_edges_only() -> None:
    toggle = Runner("trigger.toggle")
    triggers = [0, 1, 1, 1, 0, 0, 1, 0, 1]
    assert over(toggle, "trigger", triggers) == [
        False,
        True,
        True,
        True,
        True,
        True,
        False,
        False,
        True,
    ]
    assert toggle(trigger=True, reset=True) is False


def test_toggle_through_every_evaluator(make_evaluator) -> None:
    patch, toggle, _node, sink = driven("trigger.toggle")
    pattern = [True, True, False, True, False, True]

    def before(n: int) -> None:
        patch.set_value(toggle, "value", pattern[n])

    assert play(make_evaluator, patch, sink, 6, before=before) == [
        True,
        True,
        True,
        False,
        False,
        True,
    ]


def test_sample_and_hold_keeps_the_value_at_each_trigger() -> None:
    hold = Runner("trigger.sample_hold")
    frames = [(1.0, 0), (2.0, 0), (3.0, 1), (4.0, 1), (5.0, 0), (6.0, 1), (7.0, 0)]
    assert [hold(n / 60, n, **{"in": v, "trigger": g}) for n, (v, g) in enumerate(frames)] == [
        1.0,
        1.0,
        3.0,
        3.0,
        3.0,
        6.0,
        6.0,
    ]


def test_sample_and_hold_copies_arrays() -> None:
    hold = Runner("trigger.sample_hold")
    source = np.array([1.0, 2.0])
    held = hold(**{"in": source, "trigger": True})
    source[0] = 9.0  # a misbehaving upstream writing into its last output
    np.testing.assert_array_equal(hold(**{"in": source, "trigger": True}), [1.0, 2.0])
    assert held is not source


def test_sample_and_hold_through_every_evaluator(make_evaluator) -> None:
    patch = Patch()
    seconds = patch.add_node("time.seconds")
    beat = patch.add_node("time.beat")
    hold = patch.add_node("trigger.sample_hold")
    sink = patch.add_node("output.value")
    patch.connect(seconds, "out", hold, "in")
    patch.connect(beat, "pulse", hold, "trigger")
    patch.connect(hold, "out", sink, "in")
    seen = play(make_evaluator, patch, sink, 100, fps=50.0)  # 120 bpm: a beat every 0.5 s
    assert seen[0] == 0.0 and seen[24] == 0.0
    assert seen[25] == pytest.approx(0.5) and seen[49] == pytest.approx(0.5)
    assert seen[50] == pytest.approx(1.0) and seen[99] == pytest.approx(1.5)


# ----------------------------------------------------------------------------- edges


def test_rising_and_falling_edges_fire_on_the_crossing_frames() -> None:
    signal = [0.0, 0.2, 0.7, 0.9, 0.5, 0.1, 0.8, 0.8, 0.3]
    rising = over(Runner("edge.rising"), "in", signal)
    falling = over(Runner("edge.falling"), "in", signal)
    assert [n for n, fired in enumerate(rising) if fired] == [2, 6]
    assert [n for n, fired in enumerate(falling) if fired] == [4, 8]
    assert all(type(fired) is bool for fired in rising + falling)


def test_edges_use_their_threshold_and_an_input_high_at_the_start_rises() -> None:
    assert over(Runner("edge.rising"), "in", [5.0, 5.0, 1.0, 3.0], threshold=2.0) == [
        True,
        False,
        False,
        True,
    ]
    assert over(Runner("edge.falling"), "in", [0.0, 0.0]) == [False, False]


def test_edges_work_elementwise_on_arrays() -> None:
    rising = Runner("edge.rising")
    first = rising(**{"in": np.array([0.0, 1.0, 0.0])})
    second = rising(**{"in": np.array([1.0, 1.0, 0.0])})
    np.testing.assert_array_equal(first, [False, True, False])
    np.testing.assert_array_equal(second, [True, False, False])


def test_changed_fires_when_the_value_differs_from_the_last_frame() -> None:
    changed = Runner("edge.changed")
    values = [1.0, 1.0, 2.0, 2.0, "x", "x", np.array([1.0]), np.array([1.0]), np.array([2.0])]
    assert over(changed, "in", values) == [
        False,
        False,
        True,
        False,
        True,
        False,
        True,
        False,
        True,
    ]


def test_edges_through_every_evaluator(make_evaluator) -> None:
    patch = Patch()
    lfo = patch.add_node("time.lfo", {"hz": 1.0, "shape": 2})  # a saw from 0 to 1 each second
    rising = patch.add_node("edge.rising", {"threshold": 0.5})
    counter = patch.add_node("trigger.counter")
    sink = patch.add_node("output.value")
    patch.connect(lfo, "out", rising, "in")
    patch.connect(rising, "out", counter, "trigger")
    patch.connect(counter, "out", sink, "in")
    seen = play(make_evaluator, patch, sink, 200, fps=40.0)  # 5 s: the saw passes 0.5 five times
    assert seen[20] == 0 and seen[21] == 1  # 0.5 is not above 0.5; 0.525 is
    assert seen[-1] == 5


# ----------------------------------------------------------------------------- smoothing


def step_response(type_id: str, fps: float, seconds: float = 1.0, **values: Any) -> Any:
    """The output `seconds` after `in` jumps from 0 (at t = 0) to 1 (from the next frame on)."""
    node = Runner(type_id)
    out = node(0.0, 0, **{"in": 0.0}, **values)
    for n in range(1, round(seconds * fps) + 1):
        out = node(n / fps, n, **{"in": 1.0}, **values)
    return out


def test_damp_converges_at_a_frame_rate_independent_speed() -> None:
    at30 = step_response("smooth.damp", 30.0, half_life=0.25)
    at60 = step_response("smooth.damp", 60.0, half_life=0.25)
    at144 = step_response("smooth.damp", 144.0, half_life=0.25)
    assert at30 == pytest.approx(1 - 2**-4) and at60 == pytest.approx(1 - 2**-4)
    assert at144 == pytest.approx(at60, abs=1e-9)
    assert step_response("smooth.damp", 60.0, seconds=0.25, half_life=0.25) == pytest.approx(0.5)


def test_damp_with_no_half_life_follows_at_once_and_smooths_arrays() -> None:
    assert step_response("smooth.damp", 60.0, seconds=1 / 60, half_life=0.0) == 1.0
    damp = Runner("smooth.damp")
    damp(0.0, **{"in": np.zeros(2)})
    out = damp(0.5, **{"in": np.array([1.0, -2.0])}, half_life=0.5)
    np.testing.assert_allclose(out, [0.5, -1.0])


def test_slew_limits_speed_independently_of_frame_rate() -> None:
    at30 = step_response("smooth.slew", 30.0, seconds=1.0, rise=0.5, fall=2.0)
    at60 = step_response("smooth.slew", 60.0, seconds=1.0, rise=0.5, fall=2.0)
    assert at30 == pytest.approx(0.5) and at60 == pytest.approx(0.5)
    assert step_response("smooth.slew", 60.0, seconds=3.0, rise=0.5) == pytest.approx(1.0)
    slew = Runner("smooth.slew")
    slew(0.0, **{"in": 1.0})
    assert slew(0.25, **{"in": 0.0}, fall=2.0) == pytest.approx(0.5)  # down at its own speed
    assert slew(0.5, **{"in": 0.0}, fall=0.0) == 0.0  # 0: no limit


def test_smoothers_through_every_evaluator_agree_at_30_and_60_fps(make_evaluator) -> None:
    ends = {}
    for fps in (30.0, 60.0):
        patch = Patch()
        source = patch.add_node("input.float", {"value": 0.0, "max": 1.0})
        damp = patch.add_node("smooth.damp", {"half_life": 0.2})
        slew = patch.add_node("smooth.slew", {"rise": 0.4})
        both = patch.add_node("math.add")
        sink = patch.add_node("output.value")
        patch.connect(source, "out", damp, "in")
        patch.connect(source, "out", slew, "in")
        patch.connect(damp, "out", both, "a")
        patch.connect(slew, "out", both, "b")
        patch.connect(both, "out", sink, "in")

        def before(n: int, patch: Patch = patch, source: str = source) -> None:
            if n == 1:
                patch.set_value(source, "value", 1.0)

        seen = play(make_evaluator, patch, sink, round(fps) + 1, fps=fps, before=before)
        ends[fps] = seen[-1]
        assert seen[0] == 0.0
        assert 0.0 < seen[1] < seen[2] < seen[-1]
    # 1 s after the step (from the frame after t = 0 on): damp 1 - 2**-5, slew 0.4
    assert ends[30.0] == pytest.approx(1 - 2**-5 + 0.4, abs=1e-9)
    assert ends[60.0] == pytest.approx(1 - 2**-5 + 0.4, abs=1e-9)


def test_one_euro_reduces_jitter_of_a_noisy_constant() -> None:
    rng = np.random.default_rng(1)
    noisy = 0.5 + rng.normal(0.0, 0.05, 600)
    filtered = over(Runner("smooth.one_euro"), "in", noisy, min_cutoff=1.0, beta=0.1)
    settled = np.asarray(filtered[60:])
    assert np.std(settled) < np.std(noisy[60:]) / 4
    assert abs(np.mean(settled) - 0.5) < 0.01


def test_one_euro_follows_a_step() -> None:
    euro = Runner("smooth.one_euro")
    outputs = over(euro, "in", [0.0] * 30 + [1.0] * 60, min_cutoff=1.0, beta=0.5)
    assert outputs[29] == 0.0
    assert 0.0 < outputs[30] < 1.0  # smoothed, not a jump
    assert outputs[-1] == pytest.approx(1.0, abs=0.01)  # caught up within a second
    lagging = over(Runner("smooth.one_euro"), "in", [0.0] * 30 + [1.0] * 6, min_cutoff=1.0)
    assert outputs[35] > lagging[-1]  # beta makes it follow faster while the input moves


def test_one_euro_holds_when_the_clock_pauses_and_works_on_arrays() -> None:
    euro = Runner("smooth.one_euro")
    euro(0.0, **{"in": np.array([0.0, 1.0])})
    moved = euro(0.1, **{"in": np.array([1.0, 1.0])})
    np.testing.assert_array_equal(euro(0.1, **{"in": np.array([5.0, 5.0])}), moved)
    assert 0.0 < moved[0] < 1.0 and moved[1] == 1.0


def test_smoothers_start_afresh_when_the_clock_goes_back() -> None:
    damp = Runner("smooth.damp")
    damp(0.0, **{"in": 0.0})
    assert damp(1.0, **{"in": 1.0}) < 1.0
    assert damp(0.0, **{"in": 7.0}) == 7.0


@pytest.mark.parametrize("type_id", ["smooth.damp", "smooth.slew", "smooth.one_euro"])
def test_smoothers_recover_after_a_nan(type_id: str) -> None:
    node = Runner(type_id)
    node(0.0, **{"in": 1.0})
    assert np.isnan(node(0.1, **{"in": float("nan")}))
    assert node(0.2, **{"in": 2.0}) == 2.0  # starts afresh from a finite input
    assert node(0.3, **{"in": 2.0}) == 2.0


# ----------------------------------------------------------------------------- envelope

ADSR = {"attack": 0.5, "decay": 0.5, "sustain": 0.6, "release": 1.0}


def test_adsr_levels_at_known_times() -> None:
    env = Runner("envelope.adsr")
    levels = {}
    for n in range(301):  # 5 s at 60 fps; the gate is held for the first 2 s
        t = n / 60
        levels[n] = env(t, n, gate=t < 2.0, **ADSR)
    assert levels[0] == 0.0
    assert levels[15] == pytest.approx(0.5)  # half way up the attack
    assert levels[30] == pytest.approx(1.0)  # attack end
    assert levels[45] == pytest.approx(0.8)  # half way down the decay
    assert levels[60] == pytest.approx(0.6) and levels[119] == pytest.approx(0.6)  # sustain
    assert levels[120] == pytest.approx(0.6)  # released here
    assert levels[150] == pytest.approx(0.3)
    assert levels[180] == 0.0 and levels[300] == 0.0
    assert max(levels.values()) == pytest.approx(1.0)


def test_adsr_plays_a_whole_note_from_a_one_frame_trigger_with_hold() -> None:
    env = Runner("envelope.adsr")
    levels = [env(n / 60, n, gate=n == 0, hold=1.0, **ADSR) for n in range(150)]
    assert levels[30] == pytest.approx(1.0) and levels[60] == pytest.approx(0.6)
    assert levels[90] == pytest.approx(0.3)  # released after the 1 s hold
    assert levels[120] == 0.0
    without_hold = Runner("envelope.adsr")
    short = [without_hold(n / 60, n, gate=n == 0, **ADSR) for n in range(10)]
    assert max(short) < 0.05  # released on the second frame


def test_adsr_retriggers_from_its_current_level() -> None:
    env = Runner("envelope.adsr")
    for n in range(121):
        env(n / 60, n, gate=n < 90, **ADSR)  # released at 1.5 s, at 0.6; 0.3 at 2.0 s
    released = 0.6 * (1 - 31 / 60)  # 31 frames into the 1 s release
    assert env(121 / 60, 121, gate=True, **ADSR) == pytest.approx(released)
    assert env(122 / 60, 122, gate=True, **ADSR) == pytest.approx(
        released + (1 - released) * (1 / 60) / 0.5
    )


def test_adsr_through_every_evaluator(make_evaluator) -> None:
    patch, toggle, _env, sink = driven("envelope.adsr", ADSR, pin="gate")

    def before(n: int) -> None:
        patch.set_value(toggle, "value", n < 120)

    seen = play(make_evaluator, patch, sink, 200, before=before)
    assert seen[30] == pytest.approx(1.0)
    assert seen[90] == pytest.approx(0.6)
    assert seen[150] == pytest.approx(0.3)
    assert seen[199] == 0.0


# ----------------------------------------------------------------------------- random walk


def walk(path: str = "/walk1", frames: int = 600, fps: float = 60.0, **values: Any) -> list:
    node = Runner("noise.random_walk", path)
    return [node(n / fps, n, **values) for n in range(frames)]


def test_random_walk_is_reproducible_per_path_and_seed() -> None:
    first = walk(seed=3)
    assert first == walk(seed=3)
    assert first != walk(seed=4)
    assert first != walk("/walk2", seed=3)
    assert first[0] == 0.5  # from the middle
    assert len(set(first)) > 500  # it moves


@pytest.mark.parametrize(("low", "high", "speed"), [(0.0, 1.0, 0.5), (-2.0, -1.5, 20.0)])
def test_random_walk_stays_within_its_limits(low: float, high: float, speed: float) -> None:
    values = walk(frames=3000, low=low, high=high, speed=speed)
    assert all(low <= v <= high for v in values)
    assert max(values) - min(values) > (high - low) / 3  # it wanders across the range


def test_random_walk_spreads_like_brownian_motion_in_seconds() -> None:
    # steps of speed * sqrt(dt): after 1 s the spread is `speed`, at any frame rate
    spread = {}
    for fps in (30.0, 120.0):
        ends = [
            walk(f"/w{k}", int(fps) + 1, fps, low=-100.0, high=100.0, speed=1.0)[-1]
            for k in range(400)
        ]
        spread[fps] = float(np.std(ends))
    assert spread[30.0] == pytest.approx(1.0, rel=0.15)
    assert spread[120.0] == pytest.approx(1.0, rel=0.15)


def test_random_walk_survives_unusable_limits_and_speeds() -> None:
    node = Runner("noise.random_walk")
    assert node(0.0, low=1.0, high=0.0) == 1.0  # an empty range: stays at low
    assert node(0.1, speed=float("inf")) == 0.0  # thrown out of the range: back to low
    assert all(0.0 <= node(0.1 * n) <= 1.0 for n in range(2, 50))  # and on from there


def test_random_walk_is_the_same_in_every_evaluator(make_evaluator) -> None:
    patch = Patch()
    node = patch.add_node("noise.random_walk", {"seed": 9})
    sink = patch.add_node("output.value")
    patch.connect(node, "out", sink, "in")
    seen = play(make_evaluator, patch, sink, 60)
    assert seen == walk("/" + node, frames=60, seed=9)


# ----------------------------------------------------------------------------- easing

MONOTONIC = [name for name in EASING_CURVES if "back" not in name and "bounce" not in name]


@pytest.mark.parametrize("curve", sorted(EASING_CURVES))
def test_easing_goes_from_0_to_1(curve: str) -> None:
    ease = get_spec("math.ease").compute
    assert ease(0.0, curve) == pytest.approx(0.0, abs=1e-12)
    assert ease(1.0, curve) == pytest.approx(1.0, abs=1e-12)
    assert ease(-3.0, curve) == pytest.approx(0.0, abs=1e-12)  # clamped
    assert type(ease(0.3, curve)) is float


@pytest.mark.parametrize("curve", MONOTONIC)
def test_standard_easing_curves_are_monotonic(curve: str) -> None:
    values = get_spec("math.ease").compute(np.linspace(0.0, 1.0, 1001), curve)
    assert np.all(np.diff(values) >= -1e-12)
    assert np.all((values >= 0.0) & (values <= 1.0))


def test_back_easing_overshoots_and_unknown_curves_fail_in_one_line() -> None:
    ease = get_spec("math.ease").compute
    assert ease(0.2, "in_back") < 0.0 and ease(0.8, "out_back") > 1.0
    with pytest.raises(ValueError, match=r"^unknown curve 'wobble'; one of: linear, in_quad"):
        ease(0.5, "wobble")


# ----------------------------------------------------------------------------- text


def test_string_format_fills_fields_by_name_and_position() -> None:
    fmt = get_spec("string.format").compute
    assert fmt("bar {a} beat {b}", 2, 3, 0, 0) == "bar 2 beat 3"
    assert fmt("{0}-{1}-{2}-{3} {d!r}", 1, 2, 3, "x") == "1-2-3-x 'x'"
    assert fmt("{a:>5.1f}|{{literal}}", 2.25, 0, 0, 0) == "  2.2|{literal}"


@pytest.mark.parametrize(
    ("template", "message"),
    [
        ("{e}", "template: unknown field {e}; use {a} to {d}"),
        ("{a.__class__}", "template: unknown field {a.__class__}; use {a} to {d}"),
        ("{a[0]}", "template: unknown field {a[0]}; use {a} to {d}"),
        ("{a:{b}}", "template: nested fields are not allowed in {a:{b}}"),
        ("{a:99999999}", "template: widths above 1000 are not allowed"),
        ("{a:.99999999f}", "template: widths above 1000 are not allowed"),
        ("value {a", "template: expected '}' before end of string"),
        ("}", "template: Single '}' encountered in format string"),
        ("{a:d}", "template: Unknown format code 'd' for object of type 'float'"),
        ("{a!x}", "template: unknown conversion !x; use !s, !r or !a"),
        ("{} {} {} {} {}", "template: more {} fields than the 4 values"),
    ],
)
def test_string_format_refuses_bad_templates_in_one_line(template: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        get_spec("string.format").compute(template, 1.5, 0, 0, 0)
    assert str(caught.value) == message


def test_string_format_stops_at_the_string_limit() -> None:
    fmt = get_spec("string.format").compute
    limits = active_limits()
    try:
        set_active_limits(dataclasses.replace(limits, string_chars=10_000))
        assert len(fmt("{a}" * 10, "x" * 1000, 0, 0, 0)) == 10_000
        with pytest.raises(ValueError, match=r"^template: the text grows past the limit "):
            fmt("{a}" * 11, "x" * 1000, 0, 0, 0)
        with pytest.raises(ValueError, match=r"^template: the text grows past the limit "):
            fmt("{a:1000}" * 11, 1.0, 0, 0, 0)
    finally:
        set_active_limits(limits)


def test_a_bad_template_fails_only_its_node(make_evaluator) -> None:
    patch = Patch()
    bad = patch.add_node("string.format", {"template": "{a.__init__}"})
    good = patch.add_node("string.format", {"template": "ok {a}", "a": 1})
    sinks = [patch.add_node("output.value") for _ in range(2)]
    patch.connect(bad, "out", sinks[0], "in")
    patch.connect(good, "out", sinks[1], "in")
    evaluator = make_evaluator(patch)
    evaluator.run_frame(0.0, 0)
    assert evaluator.status(bad) == "failed"
    assert "unknown field {a.__init__}" in evaluator.error(bad)
    assert "\n" not in evaluator.error(bad)
    assert evaluator.output(sinks[1]) == "ok 1"


# ----------------------------------------------------------------------------- pure nodes


def test_comparisons_and_logic_work_elementwise_on_arrays() -> None:
    a, b = np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 2.0])
    np.testing.assert_array_equal(call("compare.less", a=a, b=b), [True, False, False])
    np.testing.assert_array_equal(call("compare.greater", a=a, b=2.0), [False, False, True])
    np.testing.assert_array_equal(call("compare.equal", a=a, b=b), [False, True, False])
    np.testing.assert_array_equal(
        call("compare.within", a=a, b=b, tolerance=1.0), [True, True, True]
    )
    low, high = np.array([0.0, 0.0, 1.0, 1.0]), np.array([0.0, 1.0, 0.0, 1.0])
    np.testing.assert_array_equal(call("logic.and", a=low, b=high), [False, False, False, True])
    np.testing.assert_array_equal(call("logic.or", a=low, b=high), [False, True, True, True])
    np.testing.assert_array_equal(call("logic.xor", a=low, b=high), [False, True, True, False])
    np.testing.assert_array_equal(call("logic.not", a=low), [True, True, False, False])
    assert call("logic.and", a=0.75, b=1.0) is True and call("logic.or", a=0.5, b=0.0) is False


def test_select_chooses_a_value_or_elementwise() -> None:
    assert call("logic.select", condition=True, if_true="yes", if_false="no") == "yes"
    picked = call(
        "logic.select", condition=np.array([1.0, 0.0]), if_true=np.array([1.0, 2.0]), if_false=-1.0
    )
    np.testing.assert_array_equal(picked, [1.0, -1.0])


def test_map_range_and_quantize_refuse_empty_ranges_and_steps() -> None:
    with pytest.raises(ValueError, match=r"^from_low and from_high are both 2: the range is empty"):
        call("math.map_range", x=1.0, from_low=2.0, from_high=2.0)
    with pytest.raises(ValueError, match=r"^step must be above 0, got 0"):
        call("math.quantize", x=1.0, step=0.0)
    assert call("math.quantize", x=float("inf"), step=0.5) == float("inf")
    assert call("math.map_range", x=-1.0, to_low=1.0, to_high=0.0, clamp=True) == 1.0
    np.testing.assert_allclose(
        call("math.map_range", x=np.array([-1.0, 0.5, 2.0]), clamp=True), [0.0, 0.5, 1.0]
    )


def test_vectors_and_colours_refuse_arrays_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^y: expected one number, got an array of shape \(3,\)"):
        call("vec2.make", x=1.0, y=np.ones(3))
    assert call("color.make", r=np.array([0.5]), g=0.0, b=1.0) == (0.5, 0.0, 1.0, 1.0)


def test_vector_and_colour_round_trip_through_every_evaluator(make_evaluator) -> None:
    patch = Patch()
    make = patch.add_node("color.make", {"r": 0.25, "g": 0.5, "b": 0.75, "a": 1.0})
    split = patch.add_node("color.split")
    pos = patch.add_node("vec2.make")
    sink = patch.add_node("output.value")
    patch.connect(make, "out", split, "color")
    patch.connect(split, "b", pos, "x")
    patch.connect(split, "r", pos, "y")
    patch.connect(pos, "out", sink, "in")
    assert play(make_evaluator, patch, sink, 1) == [(0.75, 0.25)]
