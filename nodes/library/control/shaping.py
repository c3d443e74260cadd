"""Pure value-shaping nodes: comparisons, logic, selection, range mapping, quantising, easing
curves and text formatting.

Every node here is a function of its inputs alone (DETERMINISTIC, with examples). Numbers may be
floats or numpy arrays, as with the math nodes: on arrays the work is elementwise, and two arrays
must broadcast to a shape within `Limits.array_elements`. A number counts as true above 0.5
(`true` itself is 1), so an LFO from 0 to 1 drives logic like a square wave.

`string.format` takes its template from the patch file, which may be hostile: fields may only name
the node's inputs (no attribute or index lookups), widths are capped and the text it makes stops at
`Limits.string_chars`, so a template cannot read the program's internals or fill the memory.
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable
from typing import Any

import numpy as np

from nodes.library.core.basics import check_broadcast
from nodes.limits import active_limits
from nodes.spec import Num, node

#: A number counts as true above this (booleans are 0 and 1).
TRUE_ABOVE = 0.5


def _is_array(*values: Any) -> bool:
    return any(isinstance(value, np.ndarray) for value in values)


def _truth(value: Any) -> Any:
    """`value` as a boolean (elementwise for an array)."""
    if isinstance(value, np.ndarray):
        return value > TRUE_ABOVE
    return bool(value > TRUE_ABOVE)


def _elementwise(
    scalar: Callable[[Any, Any], bool], vector: Callable[[Any, Any], Any]
) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        if _is_array(a, b):
            check_broadcast(a, b)
            return vector(a, b)
        return scalar(a, b)

    return apply


#: Comparisons and logic give a bool, or an array of them from arrays.
BOOL_OUT = {"out": "bool"}

_A_B_DOCS = {"a": "The first number (or array).", "b": "The second number (or array)."}

# ----------------------------------------------------------------------------- comparisons


_less = _elementwise(lambda a, b: bool(a < b), np.less)
_greater = _elementwise(lambda a, b: bool(a > b), np.greater)
_equal = _elementwise(lambda a, b: bool(a == b), np.equal)


@node(
    "compare.less",
    outputs=BOOL_OUT,
    examples=(({"a": 1.0, "b": 2.0}, True), ({"a": 2.0, "b": 2.0}, False)),
    docs={**_A_B_DOCS, "out": "True where a is less than b."},
)
def compare_less(a: Num = 0.0, b: Num = 0.0) -> Any:
    """True when a < b (elementwise for arrays)."""
    return _less(a, b)


@node(
    "compare.greater",
    outputs=BOOL_OUT,
    examples=(({"a": 3.0, "b": 2.0}, True), ({"a": 2.0, "b": 2.0}, False)),
    docs={**_A_B_DOCS, "out": "True where a is greater than b."},
)
def compare_greater(a: Num = 0.0, b: Num = 0.0) -> Any:
    """True when a > b (elementwise for arrays)."""
    return _greater(a, b)


@node(
    "compare.equal",
    outputs=BOOL_OUT,
    examples=(({"a": 2.0, "b": 2.0}, True), ({"a": 2.0, "b": 2.5}, False)),
    docs={**_A_B_DOCS, "out": "True where a equals b exactly."},
)
def compare_equal(a: Num = 0.0, b: Num = 0.0) -> Any:
    """True when a == b exactly (elementwise for arrays). Use `compare.within` for computed
    numbers, which rarely match to the last digit."""
    return _equal(a, b)


@node(
    "compare.within",
    outputs=BOOL_OUT,
    examples=(
        ({"a": 1.0, "b": 1.05, "tolerance": 0.1}, True),
        ({"a": 1.0, "b": 1.5, "tolerance": 0.1}, False),
    ),
    docs={
        **_A_B_DOCS,
        "tolerance": "The largest difference that still counts as equal.",
        "out": "True where a and b differ by at most the tolerance.",
    },
)
def compare_within(a: Num = 0.0, b: Num = 0.0, tolerance: float = 1e-6) -> Any:
    """True when a and b differ by at most `tolerance` (elementwise for arrays)."""
    if _is_array(a, b):
        check_broadcast(a, b)
        return np.abs(np.subtract(a, b)) <= tolerance
    return abs(float(a) - float(b)) <= tolerance


# ----------------------------------------------------------------------------- logic


_and = _elementwise(lambda a, b: a and b, np.logical_and)
_or = _elementwise(lambda a, b: a or b, np.logical_or)
_xor = _elementwise(lambda a, b: a != b, np.logical_xor)

_LOGIC_DOCS = {
    "a": "The first condition (a number counts as true above 0.5).",
    "b": "The second condition (a number counts as true above 0.5).",
}


@node(
    "logic.and",
    outputs=BOOL_OUT,
    examples=(({"a": True, "b": True}, True), ({"a": True, "b": False}, False)),
    docs={**_LOGIC_DOCS, "out": "True when both conditions are true."},
)
def logic_and(a: bool = False, b: bool = False) -> Any:
    """True when both a and b are true (elementwise for arrays)."""
    return _and(_truth(a), _truth(b))


@node(
    "logic.or",
    outputs=BOOL_OUT,
    examples=(({"a": False, "b": True}, True), ({"a": False, "b": False}, False)),
    docs={**_LOGIC_DOCS, "out": "True when at least one condition is true."},
)
def logic_or(a: bool = False, b: bool = False) -> Any:
    """True when a or b (or both) is true (elementwise for arrays)."""
    return _or(_truth(a), _truth(b))


@node(
    "logic.xor",
    outputs=BOOL_OUT,
    examples=(({"a": True, "b": False}, True), ({"a": True, "b": True}, False)),
    docs={**_LOGIC_DOCS, "out": "True when exactly one condition is true."},
)
def logic_xor(a: bool = False, b: bool = False) -> Any:
    """True when exactly one of a and b is true (elementwise for arrays)."""
    return _xor(_truth(a), _truth(b))


@node(
    "logic.not",
    outputs=BOOL_OUT,
    examples=(({"a": True}, False), ({"a": False}, True)),
    docs={"a": _LOGIC_DOCS["a"], "out": "True when the condition is false."},
)
def logic_not(a: bool = False) -> Any:
    """True when a is false (elementwise for arrays)."""
    truth = _truth(a)
    return np.logical_not(truth) if isinstance(truth, np.ndarray) else not truth


@node(
    "logic.select",
    examples=(
        ({"condition": True, "if_true": 1.0, "if_false": 2.0}, 1.0),
        ({"condition": False, "if_true": 1.0, "if_false": 2.0}, 2.0),
    ),
    docs={
        "condition": "Which value to pass on (a number counts as true above 0.5; an array "
        "chooses element by element).",
        "if_true": "The value passed on while the condition is true.",
        "if_false": "The value passed on while the condition is false.",
        "out": "The chosen value.",
    },
)
def logic_select(condition: bool = False, if_true: Any = 1.0, if_false: Any = 0.0) -> Any:
    """Passes on `if_true` while the condition holds, else `if_false`. An array condition picks
    elementwise between two numbers or arrays."""
    truth = _truth(condition)
    if isinstance(truth, np.ndarray):
        check_broadcast(truth, if_true, if_false)
        return np.where(truth, if_true, if_false)
    return if_true if truth else if_false


# ----------------------------------------------------------------------------- ranges and steps


@node(
    "math.map_range",
    examples=(
        ({"x": 5.0, "from_low": 0.0, "from_high": 10.0, "to_low": 0.0, "to_high": 1.0}, 0.5),
        ({"x": 0.25, "to_low": 100.0, "to_high": 200.0}, 125.0),
        ({"x": 2.0, "clamp": True}, 1.0),
        ({"x": [0.0, 0.5, 1.0], "to_low": 1.0, "to_high": -1.0}, np.array([1.0, 0.0, -1.0])),
    ),
    docs={
        "x": "The number (or array) to map.",
        "from_low": "The input value that maps to to_low.",
        "from_high": "The input value that maps to to_high.",
        "to_low": "Where from_low lands.",
        "to_high": "Where from_high lands.",
        "clamp": "Keep the result between to_low and to_high.",
        "out": "x mapped linearly from one range to the other.",
    },
)
def math_map_range(
    x: Num = 0.0,
    from_low: float = 0.0,
    from_high: float = 1.0,
    to_low: float = 0.0,
    to_high: float = 1.0,
    clamp: bool = False,
) -> Num:
    """Maps x from one range to another. Linearly from from_low..from_high to to_low..to_high
    (either may be reversed), optionally clamped to the target range."""
    if from_low == from_high:
        raise ValueError(f"from_low and from_high are both {from_low:g}: the range is empty")
    result = to_low + (x - from_low) * ((to_high - to_low) / (from_high - from_low))
    if clamp:
        low, high = min(to_low, to_high), max(to_low, to_high)
        result = np.clip(result, low, high) if _is_array(result) else min(max(result, low), high)
    return result


@node(
    "math.quantize",
    examples=(
        ({"x": 0.3, "step": 0.25}, 0.25),
        ({"x": 0.4, "step": 0.25}, 0.5),
        ({"x": [1.4, -1.6, 2.5], "step": 1.0}, np.array([1.0, -2.0, 3.0])),
    ),
    docs={
        "x": "The number (or array) to quantise.",
        "step": "The grid size: results are whole multiples of it.",
        "out": "x rounded to the nearest multiple of step (halves round up).",
    },
)
def math_quantize(x: Num = 0.0, step: float = 0.25) -> Num:
    """Rounds x to the nearest multiple of `step` (halfway values round up), for stepped motion
    and snapping to a grid."""
    if not step > 0.0:
        raise ValueError(f"step must be above 0, got {step:g}")
    if isinstance(x, np.ndarray):
        return np.floor(x / step + 0.5) * step
    steps = x / step + 0.5
    return math.floor(steps) * step if math.isfinite(steps) else x  # inf and NaN stay as they are


# ----------------------------------------------------------------------------- easing

_BACK = 1.70158


def _out_bounce(t: np.ndarray) -> np.ndarray:
    n, d = 7.5625, 2.75
    return np.select(
        [t < 1 / d, t < 2 / d, t < 2.5 / d],
        [n * t * t, n * (t - 1.5 / d) ** 2 + 0.75, n * (t - 2.25 / d) ** 2 + 0.9375],
        n * (t - 2.625 / d) ** 2 + 0.984375,
    )


# Curves from 0 at t = 0 to 1 at t = 1 (after Robert Penner's easing equations); t is in [0, 1].
EASING_CURVES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "linear": lambda t: t,
    "in_quad": lambda t: t * t,
    "out_quad": lambda t: 1 - (1 - t) ** 2,
    "in_out_quad": lambda t: np.where(t < 0.5, 2 * t * t, 1 - (2 - 2 * t) ** 2 / 2),
    "in_cubic": lambda t: t**3,
    "out_cubic": lambda t: 1 - (1 - t) ** 3,
    "in_out_cubic": lambda t: np.where(t < 0.5, 4 * t**3, 1 - (2 - 2 * t) ** 3 / 2),
    "in_sine": lambda t: 1 - np.cos(t * np.pi / 2),
    "out_sine": lambda t: np.sin(t * np.pi / 2),
    "in_out_sine": lambda t: (1 - np.cos(np.pi * t)) / 2,
    "in_expo": lambda t: np.where(t <= 0, 0.0, 2.0 ** (10 * t - 10)),
    "out_expo": lambda t: np.where(t >= 1, 1.0, 1 - 2.0 ** (-10 * t)),
    "in_out_expo": lambda t: np.select(
        [t <= 0, t >= 1, t < 0.5],
        [0.0, 1.0, 2.0 ** (20 * t - 10) / 2],
        (2 - 2.0 ** (10 - 20 * t)) / 2,
    ),
    "smoothstep": lambda t: t * t * (3 - 2 * t),
    "smootherstep": lambda t: t**3 * (t * (6 * t - 15) + 10),
    # These overshoot (back) or bounce: not monotonic.
    "in_back": lambda t: (_BACK + 1) * t**3 - _BACK * t * t,
    "out_back": lambda t: 1 + (_BACK + 1) * (t - 1) ** 3 + _BACK * (t - 1) ** 2,
    "out_bounce": _out_bounce,
    "in_bounce": lambda t: 1 - _out_bounce(1 - t),
}


@node(
    "math.ease",
    choices={"curve": tuple(EASING_CURVES)},
    examples=(
        ({"t": 0.5, "curve": "in_quad"}, 0.25),
        ({"t": 0.5, "curve": "in_out_cubic"}, 0.5),
        ({"t": 2.0, "curve": "out_cubic"}, 1.0),
        ({"t": [0.0, 0.5, 1.0], "curve": "smoothstep"}, np.array([0.0, 0.5, 1.0])),
    ),
    docs={
        "t": "Progress from 0 to 1 (or an array of them); clamped to that range.",
        "curve": "The curve's name: linear, in_quad, out_quad, in_out_quad, in_cubic, out_cubic, "
        "in_out_cubic, in_sine, out_sine, in_out_sine, in_expo, out_expo, in_out_expo, "
        "smoothstep, smootherstep, in_back, out_back, in_bounce or out_bounce.",
        "out": "The eased progress: 0 at t = 0, 1 at t = 1.",
    },
)
def math_ease(t: Num = 0.0, curve: str = "in_out_cubic") -> Num:
    """Shapes a 0..1 progress with an easing curve. Curves slow in, slow out, overshoot or bounce,
    for motion that starts and stops smoothly."""
    shape = EASING_CURVES.get(curve)
    if shape is None:
        raise ValueError(f"unknown curve {curve[:40]!r}; one of: {', '.join(EASING_CURVES)}")
    result = shape(np.clip(np.asarray(t, dtype=np.float64), 0.0, 1.0))
    return result if isinstance(t, np.ndarray) else float(result)


# ----------------------------------------------------------------------------- text

FORMAT_FIELDS = ("a", "b", "c", "d")
#: The widest a field may be formatted (its width or precision).
MAX_FIELD_WIDTH = 1000
_SPEC_NUMBERS = re.compile(r"\d+")
_CONVERSIONS: dict[str | None, Callable[[Any], Any]] = {
    None: lambda value: value,
    "s": str,
    "r": repr,
    "a": ascii,
}

#: A parsed template: (literal text, field name or None, format spec, conversion) per part.
Template = list[tuple[str, str | None, str, str | None]]


def checked_template(template: str) -> Template:
    """`template` parsed, or ValueError (one line, starting with "template:") unless it is a
    format string whose fields name only a, b, c, d (or their positions 0-3, or {} in turn), with
    no attribute or index lookups, no nested fields and widths up to MAX_FIELD_WIDTH."""
    try:
        parts = [
            (literal, field, spec or "", conversion)
            for literal, field, spec, conversion in string.Formatter().parse(template)
        ]
    except ValueError as exc:
        raise ValueError(f"template: {exc}") from None
    for _literal, field, spec, conversion in parts:
        if field is None:
            continue
        if field not in FORMAT_FIELDS and field not in ("", "0", "1", "2", "3"):
            raise ValueError(f"template: unknown field {{{field[:40]}}}; use {{a}} to {{d}}")
        if "{" in spec:
            raise ValueError(f"template: nested fields are not allowed in {{{field}:{spec[:40]}}}")
        if conversion not in _CONVERSIONS:
            raise ValueError(
                f"template: unknown conversion !{str(conversion)[:20]}; use !s, !r or !a"
            )
        if any(int(n) > MAX_FIELD_WIDTH for n in _SPEC_NUMBERS.findall(spec)):
            raise ValueError(f"template: widths above {MAX_FIELD_WIDTH} are not allowed")
    return parts


def filled_template(parts: Template, values: tuple[Any, ...]) -> str:
    """The checked template `parts` with `values` (for a, b, c, d) filled in, or ValueError (one
    line) when a value does not take its format or the text grows past `Limits.string_chars`
    (a short template repeating a long value must not fill the memory)."""
    limit = active_limits().string_chars
    pieces: list[str] = []
    length = 0
    next_auto = 0
    for literal, field, spec, conversion in parts:
        pieces.append(literal)
        length += len(literal)
        if field is None:
            continue
        if field == "":
            index, next_auto = next_auto, next_auto + 1
        else:
            index = FORMAT_FIELDS.index(field) if field in FORMAT_FIELDS else int(field)
        if index >= len(values):
            raise ValueError(f"template: more {{}} fields than the {len(values)} values")
        try:
            piece = format(_CONVERSIONS[conversion](values[index]), spec)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"template: {exc}") from None
        pieces.append(piece)
        length += len(piece)
        if length > limit:
            raise ValueError(f"template: the text grows past the limit string_chars = {limit}")
    return "".join(pieces)


@node(
    "string.format",
    examples=(
        ({"template": "beat {a}", "a": 3}, "beat 3"),
        ({"template": "{a:.2f} / {b:03d}", "a": 0.125, "b": 7}, "0.12 / 007"),
        ({"template": "{} and {}", "a": "x", "b": "y"}, "x and y"),
    ),
    docs={
        "template": "Text with fields in Python format syntax: {a} to {d}, optionally with a "
        "format such as {a:.2f}.",
        "a": "The value of the field {a} (also {0}).",
        "b": "The value of the field {b} (also {1}).",
        "c": "The value of the field {c} (also {2}).",
        "d": "The value of the field {d} (also {3}).",
        "out": "The template with its fields filled in.",
    },
)
def string_format(
    template: str = "{a}", a: Any = 0.0, b: Any = 0.0, c: Any = 0.0, d: Any = 0.0
) -> str:
    """Text made from a template with up to four values filled in, e.g. "bar {a} beat {b}"."""
    return filled_template(checked_template(template), (a, b, c, d))
