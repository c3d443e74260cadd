"""Pin types: which links are allowed and which values a pin accepts.

Types are short strings so that they can be written to files and shown in the editor as is.
Numbers are forgiving: every numeric type (bool, int, float, num, array) links to every other one,
since math nodes accept floats and numpy arrays alike; a wrong shape at run time is a node failure,
not a refused link. Textures, strings and colors only link to their own kind (or to `any`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

NUMERIC_TYPES = frozenset({"bool", "int", "float", "num", "array"})
PIN_TYPES = NUMERIC_TYPES | {"str", "color", "texture", "any", "vec2"}


def types_compatible(src: str, dst: str) -> bool:
    """True if an output of type `src` may feed an input of type `dst`."""
    if src == "any" or dst == "any" or src == dst:
        return True
    return src in NUMERIC_TYPES and dst in NUMERIC_TYPES


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(
        value, bool | np.bool_
    )


def coerce_value(pin_type: str, value: Any) -> Any:
    """Return `value` converted for a pin of `pin_type`, or raise ValueError naming what was wrong.

    Stored values are plain Python (float, int, bool, str, tuples of floats) or numpy arrays.
    """
    try:
        return _coerce_value(pin_type, value)
    except OverflowError:  # int(inf), float(10**400): out of range, a bad value like any other
        raise ValueError("number out of range") from None


def _coerce_value(pin_type: str, value: Any) -> Any:
    if pin_type == "any":
        return value
    if pin_type == "float":
        if _is_number(value) or isinstance(value, bool):
            result = float(value)
            if math.isnan(result):
                raise ValueError("expected a number, got NaN")
            return result
        raise ValueError(f"expected a number, got {type(value).__name__}")
    if pin_type == "int":
        if isinstance(value, bool) or not _is_number(value) or float(value) != int(value):
            raise ValueError(f"expected an integer, got {value!r}")
        return int(value)
    if pin_type == "bool":
        if isinstance(value, bool | np.bool_):
            return bool(value)
        if _is_number(value) and value in (0, 1):
            return bool(value)
        raise ValueError(f"expected true or false, got {value!r}")
    if pin_type in ("num", "array"):
        if isinstance(value, np.ndarray):
            return value
        if _is_number(value) or isinstance(value, bool):
            return float(value)
        if isinstance(value, list | tuple) and all(_is_number(v) for v in value):
            return np.asarray(value, dtype=np.float64)
        raise ValueError(f"expected a number or an array, got {type(value).__name__}")
    if pin_type == "str":
        if isinstance(value, str):
            return value
        raise ValueError(f"expected text, got {type(value).__name__}")
    if pin_type in ("color", "vec2"):
        size = 4 if pin_type == "color" else 2
        if isinstance(value, list | tuple | np.ndarray) and len(value) in (
            (3, 4) if size == 4 else (2,)
        ):
            items = [float(v) for v in value if _is_number(v)]
            if len(items) == len(value):
                return tuple(items + [1.0] * (size - len(items)))
        raise ValueError(f"expected {size} numbers, got {value!r}")
    if pin_type == "texture":
        if value is None:
            return None
        raise ValueError("textures come from links, not from stored values")
    raise ValueError(f"unknown pin type {pin_type!r}")
