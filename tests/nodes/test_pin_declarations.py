"""A pin declared in one place: `Annotated[T, Pin(...)]` gives the same spec as the decorator's
dicts, with postponed annotations (text) and without (objects); names that are no pin, unknown
hints, unknown `Pin` keys, a fact given twice and outputs of no known type are refused at
registration with one line naming the node and the pin."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import pytest

from evaluators import ExecutionContext
from nodes import LIBRARY, NodeContext, NodeSpec, Pin, PinSpec, Pull
from nodes.spec import Color, collecting_specs, node


def declared(type_id: str, fn: Callable[..., Any], **options: Any) -> NodeSpec:
    """The spec `@node(type_id, **options)` makes of `fn`, kept out of the library."""
    with collecting_specs() as specs:
        node(type_id, **options)(fn)
    (spec,) = specs
    return spec


def test_pin_facts_in_the_annotation_make_the_spec_the_dicts_make() -> None:
    def with_dicts(level: float = 0.5, tint: Color = (1.0, 1.0, 1.0, 1.0), in_: Any = 0.0,
                   loop: Any = 0.0) -> float:  # fmt: skip
        return level

    def with_pins(
        level: Annotated[float, Pin(min=0.0, max=1.0, hint="slider", doc="How much.")] = 0.5,
        tint: Annotated[Color, Pin(hint="color", doc="The colour.")] = (1.0, 1.0, 1.0, 1.0),
        in_: Annotated[Any, Pin(lazy=True)] = 0.0,
        loop: Annotated[Any, Pin(feedback=True)] = 0.0,
    ) -> float:
        return level

    dicts = declared(
        "test.dicts",
        with_dicts,
        ranges={"level": (0.0, 1.0)},
        hints={"level": "slider", "tint": "color"},
        docs={"level": "How much.", "tint": "The colour."},
        lazy=("in",),
        feedback=("loop",),
    )
    pins = declared("test.pins", with_pins)
    assert pins.inputs == dicts.inputs
    assert pins.pin_docs == dicts.pin_docs
    level = pins.input("level")
    assert level is not None and (level.minimum, level.maximum, level.hint) == (0.0, 1.0, "slider")
    assert "test.pins" not in LIBRARY


def test_a_pulled_pin_may_carry_its_facts_too() -> None:
    def choose(a: Annotated[Pull[float], Pin(doc="Pulled when needed.")] = 0.0) -> float:
        return a()

    spec = declared("test.pulled", choose)
    assert spec.input("a") == PinSpec("a", "float", 0.0, lazy=True)
    assert spec.pin_docs == {"a": "Pulled when needed."}


def test_annotation_objects_work_as_text_does() -> None:
    def scale(x: float = 1.0, y: float = 0.0) -> float:
        return x

    # What a node pack without postponed annotations hands over: the Annotated objects.
    scale.__annotations__["x"] = Annotated[float, Pin(min=0.0, doc="The value.")]
    scale.__annotations__["y"] = Annotated[float, Pin(lazy=True, doc="Pulled.")]
    spec = declared("test.objects", scale)
    x, y = spec.inputs
    assert (x.type, x.minimum, x.maximum) == ("float", 0.0, None)
    assert (y.type, y.lazy) == ("float", True)
    assert spec.pin_docs == {"x": "The value.", "y": "Pulled."}


def test_pin_facts_and_dicts_combine_when_they_say_different_things() -> None:
    def mix(a: Annotated[float, Pin(min=0.0)] = 0.0, b: float = 0.0) -> float:
        return a + b

    spec = declared("test.mix", mix, ranges={"b": (None, 2.0)}, docs={"a": "First."})
    assert spec.input("a").minimum == 0.0 and spec.input("b").maximum == 2.0
    assert spec.pin_docs == {"a": "First."}


def plain(a: float = 0.0, in_: Any = 0.0) -> float:
    return a


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"hints": {"b": "slider"}}, "test.bad: hints= names pin 'b', which the node has not"),
        ({"hints": {"in": "slider"}}, "test.bad: hints= names pin 'in', which the node has not"),
        ({"ranges": {"b": (0, 1)}}, "test.bad: ranges= names pin 'b', which the node has not"),
        ({"docs": {"b": "B."}}, "test.bad: docs= names pin 'b', which the node has not"),
        ({"lazy": ("b",)}, "test.bad: lazy= names pin 'b', which the node has not"),
        ({"feedback": ("in_",)}, "test.bad: feedback= names pin 'in_', which the node has not"),
        ({"hints": {"a": "knob"}}, "test.bad: pin 'a': unknown hint 'knob' (hints: code, "),
        ({"outputs": {"out": "flaot"}}, "test.bad: output 'out' has no known type ('flaot')"),
    ],
)
def test_the_decorator_refuses_what_would_be_silently_ignored(
    options: dict[str, Any], problem: str
) -> None:
    with pytest.raises(TypeError) as refused:
        declared("test.bad", plain, **options)
    assert str(refused.value).startswith(problem)
    assert "\n" not in str(refused.value)


def test_a_pin_refuses_unknown_keys_unknown_hints_and_facts_given_twice() -> None:
    def stepped(a: Annotated[float, Pin(min=0.0, step=0.1)] = 0.0) -> float:
        return a

    with pytest.raises(TypeError, match=r"^test\.bad: pin 'a': unknown Pin key step \(keys: "):
        declared("test.bad", stepped)

    def knob(a: Annotated[float, Pin(hint="knob")] = 0.0) -> float:
        return a

    with pytest.raises(TypeError, match=r"^test\.bad: pin 'a': unknown hint 'knob'"):
        declared("test.bad", knob)

    def twice(a: Annotated[float, Pin(min=0.0, doc="A.")] = 0.0) -> float:
        return a

    with pytest.raises(TypeError, match=r"^test\.bad: pin 'a': min, doc given both in Pin"):
        declared("test.bad", twice, ranges={"a": (0.0, 1.0)}, docs={"a": "A."})


def test_library_nodes_declared_with_pins_keep_their_facts() -> None:
    value = LIBRARY["input.float"].input("value")
    assert value is not None and value.hint == "slider"
    assert LIBRARY["input.float"].pin_docs["value"] == "The slider's position."
    gate = LIBRARY["logic.gate"].input("in")
    assert gate is not None and gate.lazy
    delay = LIBRARY["util.frame_delay"].input("in")
    assert delay is not None and delay.feedback
    level = LIBRARY["gpu.threshold"].input("level")
    assert level is not None and (level.minimum, level.maximum) == (0.0, 1.0)


def test_the_execution_context_is_what_compute_functions_are_typed_against() -> None:
    assert isinstance(ExecutionContext(), NodeContext)


def test_choices_are_declared_either_way_and_not_twice() -> None:
    def with_dicts(align: str = "center") -> str:
        return align

    def with_pin(align: Annotated[str, Pin(choices=("left", "center", "right"))] = "center") -> str:
        return align

    dicts = declared(
        "test.choices_dict", with_dicts, choices={"align": ("left", "center", "right")}
    )
    pins = declared("test.choices_pin", with_pin)
    assert dicts.inputs == pins.inputs
    assert dicts.input("align").choices == ("left", "center", "right")
    assert LIBRARY["text.render"].input("align").choices == ("left", "center", "right")
    with pytest.raises(TypeError, match=r"^test\.twice: pin 'align': choices given both"):
        declared("test.twice", with_pin, choices={"align": ("left",)})
    with pytest.raises(TypeError, match=r"^test\.nopin: choices= names pin 'mode'"):
        declared("test.nopin", with_dicts, choices={"mode": ("a",)})
