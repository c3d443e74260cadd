"""The editor's pin-type table: every registered type has a colour and an editor entry, hints pick
their widgets over the type's, and the vec3 type's editor (three number fields) edits a node's
vec3 input in the inspector like any other pin: an edit emits the whole vector, a stored value
shows without echo."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QLineEdit, QSpinBox

from app.qt.panels.inspector import QtInspector
from app.qt.pin_types import (
    HINT_EDITORS,
    PIN_LOOKS,
    QtSliderField,
    QtVectorField,
    editor_for,
    pin_color,
)
from nodes import PIN_HINTS, PIN_TYPES, Patch, PinSpec
from nodes.spec import LIBRARY, Vec3, collecting_specs, node


@pytest.fixture
def vec3_node() -> Iterator[str]:
    with collecting_specs() as specs:

        @node("test.move", docs={"by": "How far.", "out": "Where it lands."})
        def move(by: Vec3 = (1.0, 2.0, 3.0), label: str = "", scale: float = 1.0) -> Vec3:
            return tuple(scale * c for c in by)

    LIBRARY["test.move"] = specs[0]
    yield "test.move"
    del LIBRARY["test.move"]


def test_every_pin_type_has_a_look_and_every_hint_editor_a_known_hint() -> None:
    assert set(PIN_LOOKS) == set(PIN_TYPES)
    assert set(HINT_EDITORS) <= PIN_HINTS
    assert pin_color("vec3") == PIN_LOOKS["vec3"].color
    assert pin_color("no such type") is None


def test_hints_and_bounds_pick_the_widget_over_the_type() -> None:
    def kind(pin: PinSpec) -> str:
        return editor_for(pin).__name__

    assert kind(PinSpec("x", "float")) == "_float"
    assert kind(PinSpec("x", "float", minimum=0.0, maximum=1.0)) == "_slider"
    assert kind(PinSpec("x", "float", hint="live", minimum=0.0, maximum=1.0)) == "_live"
    assert kind(PinSpec("x", "int", hint="toggle")) == "_check_box"
    assert kind(PinSpec("x", "color", hint="color")) == "_color"
    assert kind(PinSpec("x", "color")) == "_color"
    assert kind(PinSpec("x", "vec2")) == "_vector2"
    assert kind(PinSpec("x", "str", hint="file")) == "_file"
    assert kind(PinSpec("x", "str", choices=("left", "right"))) == "_choice"
    assert kind(PinSpec("x", "str")) == "_text"
    assert kind(PinSpec("x", "texture")) == "shown_in_words"
    assert kind(PinSpec("x", "no such type")) == "shown_in_words"


def test_the_inspector_edits_a_vec3_pin_with_three_number_fields(qtbot, vec3_node) -> None:
    patch = Patch()
    patch.add_node(vec3_node, None, (0, 0), node_id="m")
    inspector = QtInspector()
    qtbot.addWidget(inspector)
    edits: list[tuple[str, str, object, object]] = []
    inspector.value_edited.connect(lambda *edit: edits.append(edit))
    inspector.set_node(patch, "m")

    field = inspector.pin_widget("by")
    assert isinstance(field, QtVectorField)
    assert field.value() == (1.0, 2.0, 3.0)  # the stored value, shown without an edit
    assert edits == []
    assert isinstance(inspector.pin_widget("label"), QLineEdit)
    assert isinstance(inspector.pin_widget("scale"), QDoubleSpinBox)

    field.fields[1].setValue(5.5)
    assert edits == [("m", "by", (1.0, 5.5, 3.0), None)]

    patch.set_value("m", "by", (7.0, 8.0, 9.0))  # an undo, say: shown, not echoed
    inspector.refresh_values()
    assert field.value() == (7.0, 8.0, 9.0)
    assert len(edits) == 1


def test_the_inspector_keeps_its_widgets_for_the_other_types(qtbot) -> None:
    patch = Patch()
    patch.add_node("input.float", None, (0, 0), node_id="f")
    patch.add_node("input.toggle", None, (0, 100), node_id="t")
    patch.add_node("trigger.counter", None, (0, 200), node_id="c")
    inspector = QtInspector()
    qtbot.addWidget(inspector)
    inspector.set_node(patch, "f")
    assert isinstance(inspector.pin_widget("value"), QtSliderField)
    inspector.set_node(patch, "t")
    assert isinstance(inspector.pin_widget("value"), QCheckBox)
    inspector.set_node(patch, "c")
    assert isinstance(inspector.pin_widget("reset"), QCheckBox)
    assert isinstance(inspector.pin_widget("modulo"), QSpinBox)
