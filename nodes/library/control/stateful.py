"""Stateful control nodes: triggers (counter, toggle, sample and hold), edge detectors, smoothers
(damp, slew, one-euro filter), an ADSR envelope and a seeded random walk.

All of them keep per-instance state (the evaluator's context keys it by node path, so two nodes of
one type never share it) and are NONDETERMINISTIC: they run every frame. They see time only
through the patch clock, `ctx.t`: each state remembers the time it last ran, so time-based nodes
(smoothers, the envelope, the random walk) move by the seconds elapsed since their own last run
(`ctx.dt` when they run every frame, more after frames where nothing needed them). That makes them
frame-rate independent, and a headless render at a fixed fps gives the same values every run. When
the clock goes back (a restart from 0) those nodes start afresh, as on their first frame.

Triggers and edges react to a rising edge: the frame an input goes from low to high (a number
counts as high above 0.5, or above an edge node's `threshold`). Before a node's first frame its
input counts as low, so a trigger that is already high when the patch starts fires once. Edge and
smoothing nodes work on floats and numpy arrays (elementwise; an array that changes shape starts
the node afresh); counters, toggles and the envelope take one value.
"""

from __future__ import annotations

import math
import zlib
from typing import Any

import numpy as np

from nodes.library.control.shaping import TRUE_ABOVE
from nodes.spec import Determinism, NodeContext, Num, node

HOT = Determinism.NONDETERMINISTIC


def _flag(pin: str, value: Any) -> bool:
    """`value` (a bool or one number) as high or low, or ValueError naming `pin`."""
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ValueError(f"{pin}: expected one value, got an array of shape {value.shape}")
        value = value.reshape(())
    return bool(value > TRUE_ABOVE)


class Elapsed:
    """Seconds on the patch clock since the node's last run."""

    __slots__ = ("last_t",)

    def __init__(self) -> None:
        self.last_t: float | None = None

    def since_last(self, t: float) -> float | None:
        """Seconds since the previous call; None on the first call or when the clock went back."""
        last, self.last_t = self.last_t, t
        if last is None or t < last:
            return None
        return t - last


def _is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray)


def _finite(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return bool(np.isfinite(value).all())
    return math.isfinite(value)


def _same_shape(a: Any, b: Any) -> bool:
    """True if a and b are both floats, or arrays of one shape."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.shape == b.shape
    return True


def _as_output(value: Any) -> Any:
    """A float for a 0-d result, the array otherwise."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return float(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


# ----------------------------------------------------------------------------- triggers


class TriggerState:
    """Whether the trigger was high on the last run, and what the node holds."""

    __slots__ = ("held", "was_high")

    def __init__(self, path: str) -> None:
        self.was_high = False
        self.held: Any = None

    def rose(self, high: bool) -> bool:
        rose = high and not self.was_high
        self.was_high = high
        return rose


@node(
    "trigger.counter",
    determinism=HOT,
    init_state=TriggerState,
    outputs={"out": "int"},
    ranges={"modulo": (0, None)},
    docs={
        "trigger": "Each rising edge (low to high, a number counts as high above 0.5) counts one.",
        "reset": "While high, the count goes back to 0 (and triggers are not counted).",
        "modulo": "When above 0, the count wraps to 0 on reaching it; 0 counts on forever.",
        "out": "The number of triggers counted since the start or the last reset.",
    },
)
def trigger_counter(
    state: TriggerState, trigger: bool = False, reset: bool = False, modulo: int = 0
) -> int:
    """Counts the rising edges of `trigger`, back to 0 while `reset` is high."""
    rose = state.rose(_flag("trigger", trigger))
    count = int(state.held or 0)
    if _flag("reset", reset):
        count = 0
    elif rose:
        count += 1
    if modulo > 0:
        count %= modulo
    state.held = count
    return count


@node(
    "trigger.toggle",
    determinism=HOT,
    init_state=TriggerState,
    docs={
        "trigger": "Each rising edge (low to high, a number counts as high above 0.5) flips the "
        "output.",
        "reset": "While high, the output is held false.",
        "out": "On or off, flipped by every trigger.",
    },
)
def trigger_toggle(state: TriggerState, trigger: bool = False, reset: bool = False) -> bool:
    """An on/off switch that flips on each rising edge of `trigger`, starting off."""
    rose = state.rose(_flag("trigger", trigger))
    on = bool(state.held)
    if _flag("reset", reset):
        on = False
    elif rose:
        on = not on
    state.held = on
    return on


@node(
    "trigger.sample_hold",
    determinism=HOT,
    init_state=TriggerState,
    outputs={"out": "any"},
    docs={
        "in": "The value to sample: a number, an array or any other value.",
        "trigger": "Each rising edge (low to high, a number counts as high above 0.5) takes a "
        "new sample.",
        "out": "The value `in` had at the last trigger (at the first frame before any).",
    },
)
def trigger_sample_hold(state: TriggerState, in_: Any = 0.0, trigger: bool = False) -> Any:
    """Holds the value `in` had at the last rising edge of `trigger` (sample and hold). It samples
    on its first frame too, so it never outputs a value `in` never had."""
    rose = state.rose(_flag("trigger", trigger))
    if rose or state.held is None:
        state.held = np.array(in_) if isinstance(in_, np.ndarray) else in_
    return state.held


# ----------------------------------------------------------------------------- edges


class EdgeState:
    """What the input was on the last run (None before the first)."""

    __slots__ = ("previous",)

    def __init__(self, path: str) -> None:
        self.previous: Any = None


def _unchanged(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.shape == b.shape
            and bool(np.array_equal(a, b))
        )
    if a is b:
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # values that do not compare (e.g. a tuple holding arrays)
        return False


@node(
    "edge.changed",
    determinism=HOT,
    init_state=EdgeState,
    docs={
        "in": "The value to watch: a number, an array, a vector, text or any other value.",
        "out": "True on the frames where `in` differs from the frame before.",
    },
)
def edge_changed(state: EdgeState, in_: Any = 0.0) -> bool:
    """True on each frame where `in` differs from its value on the previous frame (never on the
    first frame)."""
    changed = state.previous is not None and not _unchanged(state.previous, in_)
    state.previous = np.array(in_) if isinstance(in_, np.ndarray) else in_
    return changed


def _crossed(state: EdgeState, value: Num, threshold: float, rising: bool) -> Any:
    high = np.asarray(value) > threshold
    previous = state.previous
    if previous is None or previous.shape != high.shape:
        previous = np.zeros_like(high)  # before the first frame the input counts as low
    state.previous = high
    edge = high & ~previous if rising else previous & ~high
    return bool(edge) if edge.ndim == 0 else edge


_EDGE_DOCS = {
    "in": "The number (or array, watched elementwise) to watch.",
    "threshold": "The level the input crosses.",
}


@node(
    "edge.rising",
    determinism=HOT,
    init_state=EdgeState,
    docs={**_EDGE_DOCS, "out": "True on the frame `in` goes from at or below to above threshold."},
)
def edge_rising(state: EdgeState, in_: Num = 0.0, threshold: float = 0.5) -> bool:
    """True on the frame `in` rises above `threshold` (a one-frame trigger). An input already
    above it on the first frame counts as rising."""
    return _crossed(state, in_, threshold, rising=True)


@node(
    "edge.falling",
    determinism=HOT,
    init_state=EdgeState,
    docs={**_EDGE_DOCS, "out": "True on the frame `in` goes from above to at or below threshold."},
)
def edge_falling(state: EdgeState, in_: Num = 0.0, threshold: float = 0.5) -> bool:
    """True on the frame `in` falls back to `threshold` or below (a one-frame trigger)."""
    return _crossed(state, in_, threshold, rising=False)


# ----------------------------------------------------------------------------- smoothing


class SmoothState:
    """The smoothed value, the time of the last run and, for the one-euro filter, the smoothed
    rate of change."""

    __slots__ = ("clock", "rate", "value")

    def __init__(self, path: str) -> None:
        self.clock = Elapsed()
        self.value: Any = None
        self.rate: Any = 0.0

    def start(self, dt: float | None, target: Any) -> bool:
        """True (and the value set to `target`) when the node starts afresh: its first run, a
        clock gone back, an input that changed between float and array or changed shape, or a
        value that is no longer finite."""
        if (
            dt is None
            or self.value is None
            or not _same_shape(self.value, target)
            or not _finite(self.value)  # a NaN or infinity that came in once would stay forever
        ):
            self.value = np.array(target, dtype=np.float64) if _is_array(target) else target
            self.rate = 0.0
            return True
        return False


_IN_DOC = "The number (or array, smoothed elementwise) to follow."


@node(
    "smooth.damp",
    determinism=HOT,
    init_state=SmoothState,
    ranges={"half_life": (0.0, None)},
    docs={
        "in": _IN_DOC,
        "half_life": "Seconds to close half the distance to `in`; 0 follows it at once.",
        "out": "The smoothed value.",
    },
)
def smooth_damp(
    ctx: NodeContext, state: SmoothState, in_: Num = 0.0, half_life: float = 0.25
) -> Num:
    """Follows `in` smoothly, at a speed that does not depend on the frame rate. It closes half
    the distance every `half_life` seconds (exponential smoothing)."""
    dt = state.clock.since_last(ctx.t)
    if state.start(dt, in_):
        return _as_output(state.value)
    assert dt is not None
    follow = 1.0 if half_life <= 0.0 else 1.0 - 2.0 ** (-dt / half_life)
    state.value = state.value + (in_ - state.value) * follow
    return _as_output(state.value)


@node(
    "smooth.slew",
    determinism=HOT,
    init_state=SmoothState,
    ranges={"rise": (0.0, None), "fall": (0.0, None)},
    docs={
        "in": _IN_DOC,
        "rise": "The fastest the output may go up, in units per second; 0: no limit.",
        "fall": "The fastest the output may go down, in units per second; 0: no limit.",
        "out": "The rate-limited value.",
    },
)
def smooth_slew(
    ctx: NodeContext, state: SmoothState, in_: Num = 0.0, rise: float = 1.0, fall: float = 1.0
) -> Num:
    """Follows `in` at a limited speed (units per second, up and down separately): jumps become
    ramps."""
    dt = state.clock.since_last(ctx.t)
    if state.start(dt, in_):
        return _as_output(state.value)
    assert dt is not None
    up = math.inf if rise <= 0.0 else rise * dt
    down = math.inf if fall <= 0.0 else fall * dt
    step = np.clip(in_ - state.value, -down, up)
    state.value = state.value + step
    return _as_output(state.value)


def _smoothing_factor(dt: float, cutoff: Any) -> Any:
    """The weight of a new sample in a low-pass filter with this cutoff (Hz) over dt seconds."""
    tau = 1.0 / (2.0 * math.pi * np.maximum(cutoff, 1e-9))
    return 1.0 / (1.0 + tau / dt)


@node(
    "smooth.one_euro",
    determinism=HOT,
    init_state=SmoothState,
    ranges={"min_cutoff": (0.0, None), "beta": (0.0, None), "d_cutoff": (0.0, None)},
    docs={
        "in": "The noisy number (or array, filtered elementwise), e.g. a sensor or a tracked "
        "position.",
        "min_cutoff": "The cutoff in Hz while `in` holds still: lower removes more jitter.",
        "beta": "How much faster the filter follows while `in` moves: higher lags less.",
        "d_cutoff": "The cutoff in Hz of the speed estimate that drives `beta`.",
        "out": "The filtered value.",
    },
)
def smooth_one_euro(
    ctx: NodeContext,
    state: SmoothState,
    in_: Num = 0.0,
    min_cutoff: float = 1.0,
    beta: float = 0.0,
    d_cutoff: float = 1.0,
) -> Num:
    """The one-euro filter: jitter smoothed away with little lag. After Casiez et al., 2012:
    strong smoothing while the input holds still, little lag when it moves fast."""
    dt = state.clock.since_last(ctx.t)
    if state.start(dt, in_):
        return _as_output(state.value)
    assert dt is not None
    if dt <= 0.0:  # the same time again (a paused clock): nothing new to filter
        return _as_output(state.value)
    rate = (in_ - state.value) / dt
    state.rate = state.rate + _smoothing_factor(dt, d_cutoff) * (rate - state.rate)
    cutoff = min_cutoff + beta * np.abs(state.rate)
    state.value = state.value + _smoothing_factor(dt, cutoff) * (in_ - state.value)
    return _as_output(state.value)


# ----------------------------------------------------------------------------- envelope


class EnvelopeState:
    """An ADSR envelope's stage times on the patch clock (None: not started / not released)."""

    __slots__ = ("clock", "gate_was_high", "held", "off_level", "off_t", "on_t", "start_level")

    def __init__(self, path: str) -> None:
        self.clock = Elapsed()
        self.gate_was_high = False
        self.held = False
        self.on_t: float | None = None
        self.start_level = 0.0
        self.off_t: float | None = None
        self.off_level = 0.0

    def restart(self) -> None:
        """Back to silence, as before the first run (the first run, or the clock went back)."""
        self.gate_was_high = self.held = False
        self.on_t = self.off_t = None

    def level(self, t: float, attack: float, decay: float, sustain: float, release: float) -> float:
        if self.on_t is None:
            return 0.0
        if self.held or self.off_t is None:
            since = t - self.on_t
            if since < attack:
                return self.start_level + (1.0 - self.start_level) * since / attack
            since -= attack
            if since < decay:
                return 1.0 + (sustain - 1.0) * since / decay
            return sustain
        since = t - self.off_t
        if since >= release:
            return 0.0
        return self.off_level * (1.0 - since / release)


@node(
    "envelope.adsr",
    determinism=HOT,
    init_state=EnvelopeState,
    ranges={
        "attack": (0.0, None),
        "decay": (0.0, None),
        "sustain": (0.0, 1.0),
        "release": (0.0, None),
        "hold": (0.0, None),
    },
    docs={
        "gate": "High (a number counts as high above 0.5) holds a note: its rising edge starts "
        "the attack, its fall the release.",
        "attack": "Seconds to rise to 1.",
        "decay": "Seconds to fall from 1 to the sustain level.",
        "sustain": "The level held while the gate stays high, from 0 to 1.",
        "release": "Seconds to fall to 0 once the gate is released.",
        "hold": "The least seconds a note lasts, so a one-frame trigger (a beat pulse) plays the "
        "whole envelope; 0: exactly as long as the gate.",
        "out": "The envelope level, from 0 to 1.",
    },
)
def envelope_adsr(
    ctx: NodeContext,
    state: EnvelopeState,
    gate: bool = False,
    attack: float = 0.01,
    decay: float = 0.2,
    sustain: float = 0.7,
    release: float = 0.5,
    hold: float = 0.0,
) -> float:
    """An attack-decay-sustain-release envelope. Times are seconds on the patch clock; a gate or
    a trigger starts it (linear segments; a new trigger restarts the attack from the current
    level)."""
    t = ctx.t
    if state.clock.since_last(t) is None:
        state.restart()
    times = (max(0.0, attack), max(0.0, decay), min(max(sustain, 0.0), 1.0), max(0.0, release))
    high = _flag("gate", gate)
    if high and not state.gate_was_high:
        state.start_level = state.level(t, *times)
        state.on_t, state.off_t, state.held = t, None, True
    state.gate_was_high = high
    if state.held and not high and state.on_t is not None and t - state.on_t >= hold:
        state.off_level = state.level(t, *times)
        state.off_t, state.held = t, False
    return state.level(t, *times)


# ----------------------------------------------------------------------------- random walk


class WalkState:
    """A random walk's generator (seeded by the node's path and its `seed`), position and clock."""

    __slots__ = ("clock", "path_seed", "rng", "seed", "value")

    def __init__(self, path: str) -> None:
        self.path_seed = zlib.crc32(path.encode("utf-8"))
        self.clock = Elapsed()
        self.seed: int | None = None
        self.rng = np.random.default_rng(0)
        self.value = 0.0


def _reflected(value: float, low: float, high: float) -> float:
    """`value` folded back into [low, high] as if it bounced off the limits (`low` when the range
    is empty or not finite)."""
    span = high - low
    if not 0.0 < span < math.inf or not math.isfinite(value):
        return low
    folded = (value - low) % (2.0 * span)
    return low + (2.0 * span - folded if folded > span else folded)


@node(
    "noise.random_walk",
    determinism=HOT,
    init_state=WalkState,
    ranges={"speed": (0.0, None)},
    docs={
        "speed": "How far it wanders: the typical distance covered in one second.",
        "low": "The lowest value; the walk bounces off it.",
        "high": "The highest value; the walk bounces off it (at or below low, it stays at low).",
        "seed": "Picks another walk; the same seed gives the same walk on every run.",
        "out": "The walk's position, from low to high.",
    },
)
def noise_random_walk(
    ctx: NodeContext,
    state: WalkState,
    speed: float = 0.5,
    low: float = 0.0,
    high: float = 1.0,
    seed: int = 0,
) -> float:
    """A value that wanders at random between `low` and `high`. It is Brownian motion on the patch
    clock, starting from the middle; seeded by the node's path and `seed`, so reruns and headless
    renders at the same fps give the same walk."""
    dt = state.clock.since_last(ctx.t)
    if dt is None or seed != state.seed or not math.isfinite(state.value):
        state.seed = seed
        state.rng = np.random.default_rng([state.path_seed, seed % 2**64])
        state.value = (low + high) / 2.0
    elif dt > 0.0:
        step = max(0.0, speed) * math.sqrt(dt) * float(state.rng.standard_normal())
        state.value += step
    state.value = _reflected(state.value, low, high)
    return state.value
