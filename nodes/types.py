"""Pin types: one `PinType` object per type, in one registry, asked by every layer.

A pin type is a short name (files and the editor show it as is) and an object that says everything
the core knows about it: how a stored value is coerced, what an output reads before its node ever
ran, which types it links to, how presets blend it, which GLSL uniforms it stands for, whether
it is a picture and whether a control (MIDI, OSC) can drive it. The editor's half (colour,
widget) lives in app/qt/pin_types.py, keyed by the same name. A new type is one
`register_pin_type(PinType(...))` here plus one widget there.

Numbers are forgiving: every type of the `number` family (bool, int, float, num, array) links to
every other one, since math nodes accept floats and numpy arrays alike; a wrong shape at run time
is a node failure, not a refused link. Other types only link to their own kind or to `any`.

Stored values are plain Python (float, int, bool, str, tuples of floats) or numpy arrays, so the
file format encodes every type without help from here. The registry is filled at import and
read-only afterwards (no lock): register types at import time, as node packs register nodes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from nodes.oklab import oklab_to_srgb, srgb_to_oklab

# Annotation names node functions use (with postponed annotations they arrive as text).
Num = float | np.ndarray
Array = np.ndarray
Color = tuple[float, float, float, float]
Vec2 = tuple[float, float]
Vec3 = tuple[float, float, float]
Texture = Any

#: The hints a pin may carry (`PinSpec.hint`), each chosen by the editor's widget table: "slider",
#: "toggle", "color", "code", "file"; "live": a value the controls runtime writes from MIDI/OSC
#: (the inspector shows it read-only, presets leave it alone).
PIN_HINTS = frozenset({"slider", "toggle", "color", "code", "file", "live"})

Blend = Callable[[Sequence[Any], Sequence[float]], Any]


def _always(_values: Sequence[Any]) -> bool:
    return True


@dataclass(frozen=True, eq=False)
class PinType:
    """What the core knows about one pin type; see the module note."""

    name: str
    # The annotation that declares a pin of this type in a node function ("float", "Color").
    annotation: str
    # A stored value converted for a pin of this type, or ValueError naming what was wrong.
    coerce: Callable[[Any], Any]
    # A fresh value an output of this type reads before its node ever ran.
    zero: Callable[[], Any] = lambda: None
    # Types of one family link to each other (the numbers); None: only to itself and `any`.
    family: str | None = None
    # Links to and from every type (`any`).
    wildcard: bool = False
    # Presets: the weighted mean of values of this type (weights sum to 1), for values that
    # `blendable` accepts; other values (and types without a blend) switch from one to the next.
    blend: Blend | None = None
    blendable: Callable[[Sequence[Any]], bool] = _always
    # GLSL: the uniform type that holds a value of this type, and the uniform types a shader
    # declares that gpu.shader exposes as pins of this type, with the default and hint they get.
    uniform: str | None = None
    exposes: tuple[str, ...] = ()
    exposed_default: Any = None
    exposed_hint: str | None = None
    # Its values are pictures (textures): thumbnails, previews, GPU-only in freezing.
    is_picture: bool = False
    # A control (MIDI, OSC) can drive an input of this type: a number a binding maps its range to.
    bindable: bool = False

    def links_to(self, other: PinType) -> bool:
        """True if an output of this type may feed an input of type `other`."""
        if self.wildcard or other.wildcard or self is other:
            return True
        return self.family is not None and self.family == other.family

    def interpolates(self, values: Sequence[Any]) -> bool:
        """True if presets blend these values of this type (else they switch)."""
        return self.blend is not None and self.blendable(values)


PIN_TYPES: dict[str, PinType] = {}


def register_pin_type(kind: PinType) -> PinType:
    """Add a pin type to the registry; names and annotations are unique."""
    if kind.name in PIN_TYPES:
        raise ValueError(f"pin type {kind.name!r} is registered twice")
    if any(other.annotation == kind.annotation for other in PIN_TYPES.values()):
        raise ValueError(f"pin type {kind.name!r}: annotation {kind.annotation!r} is taken")
    PIN_TYPES[kind.name] = kind
    return kind


def pin_type(name: str) -> PinType:
    """The registered type `name`, or ValueError."""
    kind = PIN_TYPES.get(name)
    if kind is None:
        raise ValueError(f"unknown pin type {name!r}")
    return kind


def pin_type_of_annotation(annotation: str) -> PinType | None:
    """The type a node function's annotation (as text: "float", "Color") declares, or None."""
    return next((k for k in PIN_TYPES.values() if k.annotation == annotation), None)


def pin_type_of_uniform(glsl_type: str) -> PinType | None:
    """The type of the pin gpu.shader makes for a uniform of `glsl_type`, or None."""
    return next((k for k in PIN_TYPES.values() if glsl_type in k.exposes), None)


def types_compatible(src: str, dst: str) -> bool:
    """True if an output of type `src` may feed an input of type `dst`."""
    if src == dst:
        return True
    kinds = (PIN_TYPES.get(src), PIN_TYPES.get(dst))
    if any(kind is not None and kind.wildcard for kind in kinds):
        return True
    source, target = kinds
    return source is not None and target is not None and source.links_to(target)


def is_picture(name: str | None) -> bool:
    """True if values of the type `name` are pictures (an unknown type, or none, is not)."""
    kind = None if name is None else PIN_TYPES.get(name)
    return kind is not None and kind.is_picture


def is_bindable(name: str | None) -> bool:
    """True if a control can drive an input of the type `name` (an unknown type, or none, not)."""
    kind = None if name is None else PIN_TYPES.get(name)
    return kind is not None and kind.bindable


def zero_of(name: str) -> Any:
    """What an output of the type `name` reads before its node ever ran (None: unknown type)."""
    kind = PIN_TYPES.get(name)
    return None if kind is None else kind.zero()


def coerce_value(name: str, value: Any) -> Any:
    """Return `value` converted for a pin of type `name`, or raise ValueError naming what was
    wrong."""
    try:
        return pin_type(name).coerce(value)
    except OverflowError:  # int(inf), float(10**400): out of range, a bad value like any other
        raise ValueError("number out of range") from None


# ----------------------------------------------------------------------------- coercion


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(
        value, bool | np.bool_
    )


def _any(value: Any) -> Any:
    return value


def _float(value: Any) -> float:
    if _is_number(value) or isinstance(value, bool):
        result = float(value)
        if math.isnan(result):
            raise ValueError("expected a number, got NaN")
        return result
    raise ValueError(f"expected a number, got {type(value).__name__}")


def _int(value: Any) -> int:
    if isinstance(value, bool) or not _is_number(value) or float(value) != int(value):
        raise ValueError(f"expected an integer, got {value!r}")
    return int(value)


def _bool(value: Any) -> bool:
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if _is_number(value) and value in (0, 1):
        return bool(value)
    raise ValueError(f"expected true or false, got {value!r}")


def _number_or_array(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value
    if _is_number(value) or isinstance(value, bool):
        return float(value)
    if isinstance(value, list | tuple) and all(_is_number(v) for v in value):
        return np.asarray(value, dtype=np.float64)
    raise ValueError(f"expected a number or an array, got {type(value).__name__}")


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise ValueError(f"expected text, got {type(value).__name__}")


def _vector(size: int, lengths: tuple[int, ...]) -> Callable[[Any], tuple[float, ...]]:
    """Coercion to a tuple of `size` floats from a sequence of one of `lengths` numbers; a
    shorter one is padded with 1.0 (an RGB colour gets an opaque alpha)."""

    def coerce(value: Any) -> tuple[float, ...]:
        if isinstance(value, list | tuple | np.ndarray) and len(value) in lengths:
            items = [float(v) for v in value if _is_number(v)]
            if len(items) == len(value):
                return tuple(items + [1.0] * (size - len(items)))
        raise ValueError(f"expected {size} numbers, got {value!r}")

    return coerce


def _texture(value: Any) -> None:
    if value is None:
        return None
    raise ValueError("textures come from links, not from stored values")


# ----------------------------------------------------------------------------- blending


def _plain_numbers(values: Sequence[Any]) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def _mean(values: Sequence[Any], weights: Sequence[float]) -> float:
    return sum(w * float(v) for w, v in zip(weights, values, strict=True))


def _rounded_mean(values: Sequence[Any], weights: Sequence[float]) -> int:
    return round(_mean(values, weights))


def _componentwise(size: int) -> Blend:
    def blend(values: Sequence[Any], weights: Sequence[float]) -> tuple[float, ...]:
        return tuple(
            sum(w * v[i] for w, v in zip(weights, values, strict=True)) for i in range(size)
        )

    return blend


def _oklab_blend(values: Sequence[Any], weights: Sequence[float]) -> tuple[float, ...]:
    """Colours blend in OKLab (perceptually even), alpha linearly; the result is clamped."""
    labs = [srgb_to_oklab(v[:3]) for v in values]
    lab = [sum(w * c[i] for w, c in zip(weights, labs, strict=True)) for i in range(3)]
    alpha = sum(w * v[3] for w, v in zip(weights, values, strict=True))
    return (*(min(1.0, max(0.0, c)) for c in oklab_to_srgb(lab)), alpha)


# ----------------------------------------------------------------------------- the types

NUMBER = "number"

register_pin_type(
    PinType("bool", "bool", _bool, lambda: False, family=NUMBER, uniform="bool",
            exposes=("bool",), exposed_default=False, exposed_hint="toggle", bindable=True)
)  # fmt: skip
register_pin_type(
    PinType("int", "int", _int, lambda: 0, family=NUMBER, blend=_rounded_mean,
            blendable=_plain_numbers, uniform="int", exposes=("int",), exposed_default=0,
            bindable=True)
)  # fmt: skip
register_pin_type(
    PinType("float", "float", _float, lambda: 0.0, family=NUMBER, blend=_mean,
            blendable=_plain_numbers, uniform="float", exposes=("float",), exposed_default=0.0,
            bindable=True)
)  # fmt: skip
register_pin_type(
    PinType("num", "Num", _number_or_array, lambda: 0.0, family=NUMBER, blend=_mean,
            blendable=_plain_numbers, bindable=True)
)  # fmt: skip
register_pin_type(PinType("array", "Array", _number_or_array, lambda: np.zeros(0), family=NUMBER))
register_pin_type(PinType("str", "str", _str, lambda: ""))
register_pin_type(
    PinType("color", "Color", _vector(4, (3, 4)), lambda: (0.0, 0.0, 0.0, 1.0),
            blend=_oklab_blend, uniform="vec4", exposes=("vec3", "vec4"),
            exposed_default=(1.0, 1.0, 1.0, 1.0), exposed_hint="color")
)  # fmt: skip
register_pin_type(
    PinType("vec2", "Vec2", _vector(2, (2,)), lambda: (0.0, 0.0), blend=_componentwise(2),
            uniform="vec2", exposes=("vec2",), exposed_default=(0.0, 0.0))
)  # fmt: skip
# A point or direction in 3D. A shader's `vec3` uniforms stay colour pins (as saved patches
# hold them), so it exposes none.
register_pin_type(
    PinType("vec3", "Vec3", _vector(3, (3,)), lambda: (0.0, 0.0, 0.0), blend=_componentwise(3),
            uniform="vec3")
)  # fmt: skip
register_pin_type(
    PinType("texture", "Texture", _texture, uniform="sampler2D", exposes=("sampler2D",),
            is_picture=True)
)  # fmt: skip
register_pin_type(PinType("any", "Any", _any, wildcard=True))
