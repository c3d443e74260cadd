"""The pin type registry: each type's coercion, zero, links, blend, GLSL uniform and picture flag
come from its one `PinType`, and the places that used to keep their own tables ask it. The vec3
type is the worked example of a type added in one place."""

from __future__ import annotations

import numpy as np
import pytest

from nodes import (
    PIN_TYPES,
    Patch,
    PatchValueError,
    PinType,
    is_bindable,
    is_picture,
    pin_type,
    register_pin_type,
)
from nodes.document.presets import blend
from nodes.library.gpu.glsl import uniform_declarations
from nodes.library.gpu.sources import shader_pins
from nodes.spec import LIBRARY, Vec3, collecting_specs, node
from nodes.types import coerce_value, pin_type_of_uniform, types_compatible, zero_of


def test_vec3_coerces_three_numbers_and_refuses_anything_else() -> None:
    assert coerce_value("vec3", [1, 2.5, np.float32(3)]) == (1.0, 2.5, 3.0)
    assert coerce_value("vec3", np.array([0.0, 1.0, 2.0])) == (0.0, 1.0, 2.0)
    for bad in ((1.0, 2.0), (1.0, 2.0, 3.0, 4.0), (1.0, "2", 3.0), 1.0, "1 2 3", None):
        with pytest.raises(ValueError, match="expected 3 numbers"):
            coerce_value("vec3", bad)


def test_vec3_zero_is_the_origin_and_every_output_gets_its_own() -> None:
    assert zero_of("vec3") == (0.0, 0.0, 0.0)
    assert zero_of("array") is not zero_of("array")  # a fresh array per output
    assert zero_of("no such type") is None


def test_vec3_links_to_itself_and_any_only() -> None:
    assert types_compatible("vec3", "vec3")
    assert types_compatible("vec3", "any") and types_compatible("any", "vec3")
    for other in ("vec2", "color", "float", "array", "texture", "str"):
        assert not types_compatible("vec3", other)
        assert not types_compatible(other, "vec3")


def test_numbers_link_as_one_family_and_unknown_types_link_to_any_only() -> None:
    numbers = ("bool", "int", "float", "num", "array")
    assert all(types_compatible(a, b) for a in numbers for b in numbers)
    assert not types_compatible("float", "color")
    assert types_compatible("mystery", "any") and not types_compatible("mystery", "float")


def test_vec3_blends_componentwise_in_presets() -> None:
    assert blend("vec3", [(0.0, 2.0, -4.0), (1.0, 4.0, 4.0)], [0.75, 0.25]) == pytest.approx(
        (0.25, 2.5, -2.0)
    )


def test_blend_follows_each_types_rules() -> None:
    assert blend("int", [0, 3], [0.5, 0.5]) == 2  # rounded
    assert blend("num", [np.zeros(2), 1.0], [0.3, 0.7]) == 1.0  # arrays switch: the heaviest
    assert blend("str", ["a", "b"], [0.6, 0.4]) == "a"
    grey = blend("color", [(0.0, 0.0, 0.0, 1.0), (1.0, 1.0, 1.0, 0.0)], [0.5, 0.5])
    assert grey[3] == 0.5 and 0.3 < grey[0] < 0.5  # OKLab's mid grey, not sRGB 0.5


def test_vec3_names_its_uniform_but_shader_vec3_uniforms_stay_colour_pins() -> None:
    assert pin_type("vec3").uniform == "vec3"
    assert pin_type_of_uniform("vec3") is pin_type("color")
    pins = shader_pins({"source": "uniform vec3 tint = vec3(0.5);\nuniform vec2 at;"})
    assert [(p.name, p.type, p.default) for p in pins] == [
        ("tint", "color", (0.5, 0.5, 0.5, 1.0)),
        ("at", "vec2", (0.0, 0.0)),
    ]


def test_the_shader_parser_reports_the_uniform_types_a_pin_type_exposes() -> None:
    exposed = {glsl for kind in PIN_TYPES.values() for glsl in kind.exposes}
    assert exposed == {"float", "int", "bool", "vec2", "vec3", "vec4", "sampler2D"}
    source = "uniform mat4 m;\nuniform float a;\nuniform sampler2D img;"
    assert [d.type for d in uniform_declarations(source)] == ["float", "sampler2D"]


def test_only_textures_are_pictures() -> None:
    assert [name for name in PIN_TYPES if is_picture(name)] == ["texture"]
    assert not is_picture(None) and not is_picture("no such type")


def test_controls_drive_the_plain_numbers_only() -> None:
    assert sorted(name for name in PIN_TYPES if is_bindable(name)) == [
        "bool",
        "float",
        "int",
        "num",
    ]
    assert not is_bindable(None) and not is_bindable("no such type")


def test_a_node_declares_a_vec3_pin_with_its_annotation() -> None:
    with collecting_specs() as specs:

        @node("test.offset")
        def offset(at: Vec3 = (1.0, 2.0, 3.0), by: float = 1.0) -> Vec3:
            return tuple(c + by for c in at)

    (spec,) = specs
    assert spec.input("at") is not None and spec.input("at").type == "vec3"
    assert spec.outputs[0].type == "vec3" and spec.outputs[0].default == (0.0, 0.0, 0.0)
    assert "test.offset" not in LIBRARY


def test_a_patch_stores_and_refuses_vec3_values() -> None:
    with collecting_specs() as specs:

        @node("test.point")
        def point(at: Vec3 = (0.0, 0.0, 0.0)) -> Vec3:
            return at

    LIBRARY["test.point"] = specs[0]
    try:
        patch = Patch()
        patch.add_node("test.point", None, (0, 0), node_id="p")
        patch.set_value("p", "at", [1, 2, 3])
        assert patch.value("p", "at") == (1.0, 2.0, 3.0)
        with pytest.raises(PatchValueError, match=r"p\.at: expected 3 numbers"):
            patch.set_value("p", "at", (1.0, 2.0))
    finally:
        del LIBRARY["test.point"]


def test_names_and_annotations_are_registered_once() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register_pin_type(PinType("vec3", "Vec3Again", tuple))
    with pytest.raises(ValueError, match="annotation 'Vec3' is taken"):
        register_pin_type(PinType("point3", "Vec3", tuple))
    assert "point3" not in PIN_TYPES
    with pytest.raises(ValueError, match="unknown pin type"):
        pin_type("point3")
