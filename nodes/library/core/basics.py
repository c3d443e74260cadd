"""The core node types: values, user inputs, time, noise, math, logic, arrays, outputs.

Compute functions are plain functions of their inputs; math works on floats and numpy arrays
alike. Nodes that allocate arrays from their values (`array.range`, `array.linspace`, math on
arrays that broadcast to a bigger shape) check the size against `Limits.array_elements` first, so a
small file cannot make a frame take gigabytes.

Nodes that depend on the clock take `ctx` (with `t`, `frame`, `dt`); stateful nodes keep their
state in the object returned by their `init_state`, owned by the evaluator's context.
"""

from __future__ import annotations

import math
import time
import zlib
from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np

from nodes.limits import active_limits
from nodes.spec import Array, Determinism, NodeContext, Num, Pin, node
from nodes.tempo import ON_BEAT, BeatClock

HOT = Determinism.NONDETERMINISTIC
USER = Determinism.USER_INPUT


def check_elements(count: int) -> None:
    """ValueError unless an array of `count` elements is within `Limits.array_elements`."""
    limit = active_limits().array_elements
    if count > limit:
        raise ValueError(f"{count} elements is above the limit array_elements = {limit}")


# Only operations on two or more arrays can make a bigger one (an outer product by broadcasting):
# math nodes check those, comparing types exactly, which costs a chain of floats next to nothing.
_ARRAY = np.ndarray


def check_broadcast(*values: Any) -> None:
    """ValueError unless the arrays among `values` broadcast to a shape within the limits."""
    shapes = [value.shape for value in values if isinstance(value, np.ndarray)]
    check_elements(math.prod(np.broadcast_shapes(*shapes)))


# ----------------------------------------------------------------------------- values and inputs


@node(
    "value.float",
    examples=(({"value": 2.5}, 2.5),),
    docs={"value": "The number to give.", "out": "The number, unchanged."},
)
def value_float(value: float = 0.0) -> float:
    """A constant number."""
    return value


@node(
    "value.array",
    examples=(({"value": [1.0, 2.0]}, np.array([1.0, 2.0])),),
    docs={"value": "The array to give.", "out": "The array, unchanged."},
)
def value_array(value: Array = np.zeros(0)) -> Array:  # noqa: B008 - immutable by convention
    """A constant array of numbers.

    Frozen patches store baked arrays here.
    """
    return value


@node("value.any", docs={"value": "The value to give.", "out": "The value, unchanged."})
def value_any(value: Any = None) -> Any:
    """A constant value of any kind.

    Frozen patches store baked results here.
    """
    return value


def _clamp_to_range(value: float, low: float | None, high: float | None) -> float:
    if low is not None and value < low:
        return low
    if high is not None and value > high:
        return high
    return value


@node(
    "input.float",
    determinism=USER,
    examples=(({"value": 0.5, "min": 0.0, "max": 1.0}, 0.5), ({"value": 3.0, "max": 1.0}, 1.0)),
    docs={"out": "The value, clamped between min and max."},
)
def input_float(
    value: Annotated[float, Pin(hint="slider", doc="The slider's position.")] = 0.0,
    min: Annotated[float, Pin(doc="The lowest value the slider gives.")] = 0.0,
    max: Annotated[float, Pin(doc="The highest value the slider gives.")] = 1.0,
) -> float:
    """A number the person sets live with a slider between min and max."""
    return _clamp_to_range(value, min, max) if min <= max else value


@node("input.toggle", determinism=USER, docs={"out": "True while the switch is on."})
def input_toggle(
    value: Annotated[bool, Pin(hint="toggle", doc="Whether the switch is on.")] = False,
) -> bool:
    """An on/off switch the person sets live."""
    return value


# ----------------------------------------------------------------------------- time and noise


@node("time.seconds", determinism=HOT, docs={"out": "Seconds since the patch started playing."})
def time_seconds(ctx: NodeContext) -> float:
    """Seconds on the frame clock."""
    return float(ctx.t)


@node("time.frame", determinism=HOT, docs={"out": "Frames played since the start, from 0."})
def time_frame(ctx: NodeContext) -> float:
    """The frame number on the frame clock."""
    return float(ctx.frame)


class LfoState:
    """Phase of an LFO, advanced by the clock time elapsed since the node last ran."""

    __slots__ = ("last_t", "phase")

    def __init__(self, path: str) -> None:
        self.phase = 0.0
        self.last_t: float | None = None


@node(
    "time.lfo",
    determinism=HOT,
    init_state=LfoState,
    docs={
        "hz": "Cycles per second.",
        "shape": "The wave: 0 sine, 1 triangle, 2 saw, 3 square.",
        "out": "The wave's value, from 0 to 1.",
    },
)
def time_lfo(ctx: NodeContext, state: LfoState, hz: float = 1.0, shape: int = 0) -> float:
    """A slow oscillator that sweeps between 0 and 1 in a sine, triangle, saw or square wave.

    Shape 0 is a sine, 1 a triangle, 2 a saw, 3 a square. The phase accumulates, so changing `hz`
    live bends the wave instead of jumping.
    """
    t = ctx.t
    if state.last_t is not None:
        state.phase = (state.phase + hz * (t - state.last_t)) % 1.0
    state.last_t = t
    phase = state.phase
    if shape == 1:
        return 1.0 - abs(2.0 * phase - 1.0)
    if shape == 2:
        return phase
    if shape == 3:
        return 1.0 if phase < 0.5 else 0.0
    return 0.5 - 0.5 * math.cos(2.0 * math.pi * phase)


@node(
    "time.beat",
    determinism=HOT,
    init_state=BeatClock,
    outputs={"phase": "float", "beat": "int", "bar": "int", "pulse": "bool"},
    ranges={"beats_per_bar": (1, 64)},
    docs={
        "beats_per_bar": "How many beats make a bar.",
        "phase": "How far into the current beat, from 0 to 1.",
        "beat": "The beat count, from 0.",
        "bar": "The bar count, from 0.",
        "pulse": "True on the frame a beat starts.",
    },
)
def time_beat(
    ctx: NodeContext, state: BeatClock, beats_per_bar: int = 4
) -> tuple[float, int, int, bool]:
    """Counts beats and bars at the patch tempo.

    The tempo is the patch's `bpm` setting (default 120), on the frame clock: `phase` goes 0..1
    within a beat, `beat` and `bar` count from 0 (`beats_per_bar` beats a bar), `pulse` is true on
    the frame a beat starts.

    A tempo change goes on from the current phase instead of jumping; renders at a fixed fps give
    the same beats every run.
    """
    beat, pulse = state.advance(ctx.t, ctx.bpm, beats_per_bar)
    count = math.floor(beat + ON_BEAT)
    return max(0.0, beat - count), count, count // max(1, beats_per_bar), pulse


_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _path_seed(path: str) -> int:
    return zlib.crc32(path.encode("utf-8"))


@node(
    "noise.random",
    determinism=HOT,
    init_state=_path_seed,
    docs={
        "seed": "Picks another repeatable sequence.",
        "out": "This frame's random number, from 0 up to 1.",
    },
)
def noise_random(ctx: NodeContext, state: int, seed: int = 0) -> float:
    """A new random number between 0 and 1 every frame.

    It is seeded by the node's path and `seed`: reruns of the same patch give the same sequence,
    whatever evaluator runs it."""
    return _splitmix64((state << 32) ^ (seed << 20) ^ int(ctx.frame)) / 2.0**64


# ----------------------------------------------------------------------------- math


@node(
    "math.add",
    examples=(({"a": 1.0, "b": 2.0}, 3.0),),
    docs={
        "a": "The first operand: a number or an array.",
        "b": "The second operand: a number or an array.",
        "out": "a + b, elementwise for arrays.",
    },
)
def math_add(a: Num = 0.0, b: Num = 0.0) -> Num:
    """Adds two numbers or arrays."""
    if type(a) is _ARRAY and type(b) is _ARRAY:
        check_broadcast(a, b)
    return a + b


@node(
    "math.sub",
    examples=(({"a": 1.0, "b": 2.0}, -1.0),),
    docs={
        "a": "The first operand: a number or an array.",
        "b": "The second operand: a number or an array.",
        "out": "a - b, elementwise for arrays.",
    },
)
def math_sub(a: Num = 0.0, b: Num = 0.0) -> Num:
    """Subtracts b from a."""
    if type(a) is _ARRAY and type(b) is _ARRAY:
        check_broadcast(a, b)
    return a - b


@node(
    "math.mul",
    examples=(({"a": 3.0, "b": 2.0}, 6.0),),
    docs={
        "a": "The first operand: a number or an array.",
        "b": "The second operand: a number or an array.",
        "out": "a * b, elementwise for arrays.",
    },
)
def math_mul(a: Num = 1.0, b: Num = 1.0) -> Num:
    """Multiplies two numbers or arrays."""
    if type(a) is _ARRAY and type(b) is _ARRAY:
        check_broadcast(a, b)
    return a * b


@node(
    "math.div",
    examples=(({"a": 3.0, "b": 2.0}, 1.5),),
    docs={
        "a": "The first operand: a number or an array.",
        "b": "The second operand: a number or an array.",
        "out": "a / b, elementwise for arrays.",
    },
)
def math_div(a: Num = 0.0, b: Num = 1.0) -> Num:
    """Divides a by b.

    Dividing by zero fails the node (its output keeps the last good value).
    """
    if isinstance(b, np.ndarray) and not np.all(b):
        raise ZeroDivisionError("division by zero in b")
    if type(a) is _ARRAY and type(b) is _ARRAY:
        check_broadcast(a, b)
    return a / b


@node(
    "math.sin",
    examples=(({"x": 0.0}, 0.0),),
    docs={
        "x": "The angle in radians: a number or an array.",
        "out": "sin(x), elementwise for arrays.",
    },
)
def math_sin(x: Num = 0.0) -> Num:
    """The sine of an angle in radians."""
    return np.sin(x) if isinstance(x, np.ndarray) else math.sin(x)


@node(
    "math.cos",
    examples=(({"x": 0.0}, 1.0),),
    docs={
        "x": "The angle in radians: a number or an array.",
        "out": "cos(x), elementwise for arrays.",
    },
)
def math_cos(x: Num = 0.0) -> Num:
    """The cosine of an angle in radians."""
    return np.cos(x) if isinstance(x, np.ndarray) else math.cos(x)


@node(
    "math.abs",
    examples=(({"x": -2.0}, 2.0),),
    docs={"x": "A number or an array.", "out": "x without its sign."},
)
def math_abs(x: Num = 0.0) -> Num:
    """The absolute value of a number or array."""
    return np.abs(x) if isinstance(x, np.ndarray) else abs(x)


@node(
    "math.clamp",
    examples=(({"x": 2.0, "low": 0.0, "high": 1.0}, 1.0),),
    docs={
        "x": "The value to limit: a number or an array.",
        "low": "The smallest value let through.",
        "high": "The largest value let through.",
        "out": "x, raised to low or lowered to high where it is outside.",
    },
)
def math_clamp(x: Num = 0.0, low: Num = 0.0, high: Num = 1.0) -> Num:
    """Keeps a value between a low and a high bound."""
    if isinstance(x, np.ndarray) or isinstance(low, np.ndarray) or isinstance(high, np.ndarray):
        check_broadcast(x, low, high)
        return np.clip(x, low, high)
    return min(max(x, low), high)


@node(
    "math.mix",
    examples=(({"a": 0.0, "b": 10.0, "t": 0.25}, 2.5),),
    docs={
        "a": "The value at t = 0.",
        "b": "The value at t = 1.",
        "t": "How far from a towards b.",
        "out": "a + (b - a) * t.",
    },
)
def math_mix(a: Num = 0.0, b: Num = 1.0, t: Num = 0.5) -> Num:
    """Linear interpolation from a (t = 0) to b (t = 1)."""
    if (type(a) is _ARRAY) + (type(b) is _ARRAY) + (type(t) is _ARRAY) > 1:
        check_broadcast(a, b, t)
    return a + (b - a) * t


# ----------------------------------------------------------------------------- logic


def switch_branch(index: float, connected: Sequence[bool]) -> int:
    """The input a switch passes on: `index` floored and clamped to the range up to the highest
    connected input (all inputs when none is connected)."""
    linked = [k for k, is_linked in enumerate(connected) if is_linked]
    highest = linked[-1] if linked else len(connected) - 1
    return min(max(math.floor(index), 0), highest)


@node(
    "logic.switch",
    lazy=("in0", "in1", "in2", "in3"),
    docs={
        "index": "Which input to pass on, from 0 (floored, clamped to the connected inputs).",
        "in0": "The value passed on when index is 0.",
        "in1": "The value passed on when index is 1.",
        "in2": "The value passed on when index is 2.",
        "in3": "The value passed on when index is 3.",
        "out": "The chosen input's value.",
    },
)
def logic_switch(index: float = 0.0, in0: Any = 0.0, in1: Any = 0.0, in2: Any = 0.0,
                 in3: Any = 0.0) -> Any:  # fmt: skip
    """Passes on one of four inputs, chosen by an index.

    The index is floored and clamped to the connected inputs; only the chosen branch is
    evaluated."""
    pulls = (in0, in1, in2, in3)
    return pulls[switch_branch(index, [pull.connected for pull in pulls])]()


class GateState:
    __slots__ = ("last",)

    def __init__(self, path: str) -> None:
        self.last: Any = 0.0


@node(
    "logic.gate",
    init_state=GateState,
    docs={"out": "in while open, the last value passed while closed."},
)
def logic_gate(
    state: GateState,
    open: Annotated[bool, Pin(doc="Whether values pass.")] = True,
    in_: Annotated[Any, Pin(lazy=True, doc="The value to pass while open.")] = 0.0,
) -> Any:
    """Passes a value while open and holds the last one while closed.

    While closed it does not evaluate `in` at all."""
    if open:
        state.last = in_()
    return state.last


# ----------------------------------------------------------------------------- utilities


class DelayState:
    __slots__ = ("primed",)

    def __init__(self, path: str) -> None:
        self.primed = False


@node(
    "util.frame_delay",
    determinism=HOT,
    init_state=DelayState,
    docs={"out": "The value in had on the previous frame."},
)
def util_frame_delay(
    state: DelayState,
    init: Annotated[Any, Pin(doc="What the node gives on the first frame.")] = 0.0,
    in_: Annotated[
        Any, Pin(feedback=True, doc="The value to delay; it may come from downstream.")
    ] = 0.0,
) -> Any:
    """Gives the value its input had on the previous frame.

    It gives `init` on the first frame. Its `in` may be fed from downstream: this is how a patch
    closes a loop."""
    if not state.primed:
        state.primed = True
        return init
    return in_


# ----------------------------------------------------------------------------- arrays


@node(
    "array.linspace",
    examples=(({"start": 0.0, "stop": 1.0, "count": 3}, np.array([0, 0.5, 1])),),
    docs={
        "start": "The first number.",
        "stop": "The last number.",
        "count": "How many numbers.",
        "out": "count numbers evenly spaced from start to stop.",
    },
)
def array_linspace(start: float = 0.0, stop: float = 1.0, count: int = 16) -> Array:
    """Evenly spaced numbers from start to stop, both included."""
    if count < 0:
        raise ValueError("count must not be negative")
    check_elements(count)
    return np.linspace(start, stop, count)


@node(
    "array.map_sin",
    docs={
        "x": "A number or an array.",
        "freq": "What x is multiplied by.",
        "phase": "What is added after multiplying.",
        "out": "sin(x * freq + phase), elementwise.",
    },
)
def array_map_sin(x: Num = 0.0, freq: float = 1.0, phase: float = 0.0) -> Num:
    """The sine of every element, scaled by a frequency and shifted by a phase."""
    return np.sin(np.asarray(x) * freq + phase)


@node(
    "array.sum",
    examples=(({"x": [1.0, 2.0, 3.0]}, 6.0),),
    docs={"x": "The array to add up.", "out": "The sum of its elements."},
)
def array_sum(x: Num = 0.0) -> float:
    """Adds up the elements of an array."""
    return float(np.sum(x))


@node(
    "array.range",
    docs={"count": "How many numbers.", "out": "0, 1, ..., count - 1."},
)
def array_range(count: int = 16) -> Array:
    """The whole numbers from 0 up to count, as an array."""
    check_elements(count)
    return np.arange(count, dtype=np.float64)


@node(
    "array.mean",
    examples=(({"x": [1.0, 2.0, 3.0]}, 2.0),),
    docs={"x": "The array to average.", "out": "The mean of its elements."},
)
def array_mean(x: Num = 0.0) -> float:
    """The average of the elements of an array."""
    return float(np.mean(x))


# ----------------------------------------------------------------------------- sinks and debug


@node(
    "output.value",
    sink=True,
    examples=(({"in": 4.0}, 4.0),),
    docs={"in": "The value the patch computes.", "out": "The value received, for reading."},
)
def output_value(in_: Any = 0.0) -> Any:
    """A sink that marks a value as a result of the patch.

    It is what the patch is for: its `out` passes on what it received, so it can be read."""
    return in_


@node(
    "debug.fail",
    docs={
        "x": "Ignored: something to link.",
        "message": "The error message.",
        "out": "Never given: the node always fails.",
    },
)
def debug_fail(x: Num = 0.0, message: str = "this node fails on purpose") -> Num:
    """A node that always fails, for tests and demos of failure handling."""
    raise RuntimeError(message)


@node(
    "debug.sleep",
    determinism=HOT,
    docs={
        "x": "The value to pass on.",
        "seconds": "How long to wait every frame.",
        "out": "x, after the wait.",
    },
)
def debug_sleep(x: Num = 0.0, seconds: float = 0.0) -> Num:
    """Waits a while every frame, then passes its input on.

    For tests and demos of slow or hung nodes (a watchdog, time budgets)."""
    time.sleep(max(0.0, seconds))
    return x
