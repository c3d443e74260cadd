"""Vector and colour nodes: build a `vec2` or a `color` from numbers, and split one into numbers.

`vec2` and `color` values are tuples of plain floats (see nodes.types): these nodes take single
numbers, and an array reaching one of their number pins fails the node with one line naming the
pin (a tuple of arrays would not be a vector any other node could use).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodes.spec import Color, Vec2, node


def _number(pin: str, value: Any) -> float:
    """`value` as one float, or ValueError naming `pin`."""
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise ValueError(f"{pin}: expected one number, got an array of shape {value.shape}")
        return float(value.reshape(()))
    return float(value)


@node(
    "vec2.make",
    examples=(({"x": 1.0, "y": 2.0}, (1.0, 2.0)),),
    docs={"x": "The first component.", "y": "The second component.", "out": "The vector (x, y)."},
)
def vec2_make(x: float = 0.0, y: float = 0.0) -> Vec2:
    """A 2D vector (a position, a size, a direction) made from two numbers."""
    return (_number("x", x), _number("y", y))


@node(
    "vec2.split",
    outputs={"x": "float", "y": "float"},
    examples=(({"v": (3.0, 4.0)}, (3.0, 4.0)),),
    docs={"v": "The vector to split.", "x": "Its first component.", "y": "Its second component."},
)
def vec2_split(v: Vec2 = (0.0, 0.0)) -> tuple[float, float]:
    """The two components of a 2D vector, as numbers."""
    return (float(v[0]), float(v[1]))


@node(
    "color.make",
    examples=(
        ({"r": 1.0, "g": 0.5, "b": 0.25}, (1.0, 0.5, 0.25, 1.0)),
        ({"r": 0.0, "g": 0.0, "b": 0.0, "a": 0.5}, (0.0, 0.0, 0.0, 0.5)),
    ),
    docs={
        "r": "Red, from 0 to 1.",
        "g": "Green, from 0 to 1.",
        "b": "Blue, from 0 to 1.",
        "a": "Opacity (alpha), from 0 (transparent) to 1 (opaque).",
        "out": "The colour (r, g, b, a).",
    },
)
def color_make(r: float = 0.0, g: float = 0.0, b: float = 0.0, a: float = 1.0) -> Color:
    """A colour made from red, green, blue and opacity numbers (0 to 1 each; not clamped)."""
    return (_number("r", r), _number("g", g), _number("b", b), _number("a", a))


@node(
    "color.split",
    outputs={"r": "float", "g": "float", "b": "float", "a": "float"},
    examples=(({"color": (0.1, 0.2, 0.3, 0.4)}, (0.1, 0.2, 0.3, 0.4)),),
    docs={
        "color": "The colour to split.",
        "r": "Its red component.",
        "g": "Its green component.",
        "b": "Its blue component.",
        "a": "Its opacity (alpha).",
    },
)
def color_split(color: Color = (0.0, 0.0, 0.0, 1.0)) -> tuple[float, float, float, float]:
    """The red, green, blue and opacity components of a colour, as numbers."""
    return (float(color[0]), float(color[1]), float(color[2]), float(color[3]))
