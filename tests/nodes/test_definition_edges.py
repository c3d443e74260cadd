"""Definitions at the edges the random property tests found: array-typed pins, and outlets whose
output is used inside the body."""

from __future__ import annotations

import numpy as np
import pytest

from nodes import OutputSpec, Patch, PinSpec, PinTypeError


def test_pins_with_array_defaults_compare_by_value() -> None:
    assert OutputSpec("y", "array", np.zeros(0)) == OutputSpec("y", "array", np.zeros(0))
    assert PinSpec("x", "array", np.ones(2)) != PinSpec("x", "array", np.zeros(2))
    assert PinSpec("x", "array", np.ones(2)) != PinSpec("x", "array", (1.0, 1.0))


def test_a_definition_with_an_array_outlet_takes_further_ports() -> None:
    patch = Patch()
    patch.add_definition("arrays", Patch())
    body = patch.definition("arrays")
    body.add_node("value.array", node_id="values")
    body.add_node("subpatch.outlet", {"name": "y"}, node_id="outy")
    body.connect("values", "out", "outy", "in")
    patch.add_node("subpatch", {"definition": "arrays"}, node_id="a1")
    body.add_node("subpatch.outlet", {"name": "z"}, node_id="outz")  # the pins are derived again
    assert [out.name for out in patch.nodes["a1"].spec.outputs] == ["y", "z"]
    assert patch.nodes["a1"].spec.outputs[0].type == "array"


def test_ungroup_follows_an_outlet_whose_output_feeds_the_body() -> None:
    """Inside, `outy` (an outlet) also feeds `double`: once ungrouped, `double` is fed by what fed
    the outlet."""
    patch = Patch()
    patch.add_definition("blob", Patch())
    body = patch.definition("blob")
    body.add_node("value.float", {"value": 3.0}, node_id="three")
    body.add_node("subpatch.outlet", {"name": "y"}, node_id="outy")
    body.add_node("math.mul", {"b": 2.0}, node_id="double")
    body.add_node("subpatch.outlet", {"name": "z"}, node_id="outz")
    body.connect("three", "out", "outy", "in")
    body.connect("outy", "out", "double", "a")
    body.connect("double", "out", "outz", "in")
    patch.add_node("subpatch", {"definition": "blob"}, node_id="b1")
    patch.add_node("output.value", node_id="sink")
    patch.connect("b1", "z", "sink", "in")
    added = patch.ungroup("b1")
    assert sorted(added) == ["double", "three"]
    assert patch.link_into("double", "a") == ("three", "out", "double", "a")
    assert patch.link_into("sink", "in") == ("double", "out", "sink", "in")


def test_an_instance_definition_is_chosen_not_linked() -> None:
    patch = Patch()
    body = Patch()
    body.add_node("subpatch.inlet", {"name": "x"}, node_id="inx")
    patch.add_definition("d", body)
    patch.add_node("subpatch", {"definition": "d"}, node_id="inst")
    patch.add_node("value.any", {"value": "d"}, node_id="name")
    with pytest.raises(PinTypeError, match=r"inst\.definition is chosen, not linked"):
        patch.connect("name", "out", "inst", "definition")
    assert patch.links == []
