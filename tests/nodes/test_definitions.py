"""Definitions and instances in the document: adding, removing and renaming definitions, the pins
instances derive from their definition, recursion and size refusals, group / ungroup /
make_unique, and the events a body edit sends to the document."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from nodes import (
    CycleError,
    Link,
    Patch,
    PatchError,
    PatchEvent,
    PatchFileError,
    PatchValueError,
    load_patch,
    patch_from_dict,
    patch_to_dict,
)
from nodes.limits import DEFAULT_LIMITS, active_limits, set_active_limits


def scale_body(factor: float = 2.0) -> Patch:
    """inlet x -> math.mul.a (b = factor) -> outlet y"""
    body = Patch()
    inlet = body.add_node("subpatch.inlet", {"name": "x", "default": 1.5}, node_id="x_in")
    mul = body.add_node("math.mul", {"b": factor}, node_id="mul")
    outlet = body.add_node("subpatch.outlet", {"name": "y"}, node_id="y_out")
    body.connect(inlet, "out", mul, "a")
    body.connect(mul, "out", outlet, "in")
    return body


def document_with_scale() -> Patch:
    patch = Patch()
    patch.add_definition("scale", scale_body())
    return patch


def pins_of(patch: Patch, node_id: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    instance = patch.node(node_id)
    inputs = [(pin.name, pin.type) for pin in instance.inputs]
    outputs = [(out.name, out.type) for out in instance.spec.outputs]
    return inputs, outputs


def dump(patch: Patch) -> str:
    return json.dumps(patch_to_dict(patch), sort_keys=True)


def snapshot(patch: Patch) -> tuple[str, int, int]:
    """What a refused edit must leave unchanged: the whole document and its revisions."""
    return dump(patch), patch.revision, patch.value_revision


def recorder(patch: Patch) -> list[PatchEvent]:
    events: list[PatchEvent] = []
    patch.subscribe(events.append)
    return events


# ----------------------------------------------------------------------------- definitions


def test_add_definition_keeps_the_live_body() -> None:
    patch = Patch()
    body = scale_body()
    patch.add_definition("scale", body)
    assert patch.definition("scale") is body
    assert dict(patch.definitions) == {"scale": body}
    assert body.owner is patch and body.name == "scale" and body.document is patch
    assert body.definitions["scale"] is body  # a body sees the document's definitions
    with pytest.raises(TypeError):
        patch.definitions["other"] = Patch()  # type: ignore[index]


@pytest.mark.parametrize("name", ["", "  ", "a/b", 3, None])
def test_bad_definition_names_are_refused(name: Any) -> None:
    patch = Patch()
    before = snapshot(patch)
    with pytest.raises(PatchValueError, match="bad definition name"):
        patch.add_definition(name, Patch())
    assert snapshot(patch) == before and not patch.definitions


def test_a_definition_name_is_taken_once_and_a_body_belongs_to_one_document() -> None:
    patch = document_with_scale()
    with pytest.raises(PatchValueError, match="'scale' already exists"):
        patch.add_definition("scale", Patch())
    with pytest.raises(PatchValueError, match="a patch of its own"):
        patch.add_definition("again", patch.definition("scale"))
    with pytest.raises(PatchValueError, match="a patch of its own"):
        patch.add_definition("itself", patch)
    other = Patch()
    with pytest.raises(PatchValueError, match="a patch of its own"):
        other.add_definition("stolen", patch.definition("scale"))
    assert list(patch.definitions) == ["scale"] and not other.definitions


def test_unknown_definition_is_one_line_naming_it() -> None:
    patch = Patch()
    for attempt in (
        lambda: patch.definition("nope"),
        lambda: patch.remove_definition("nope"),
        lambda: patch.rename_definition("nope", "yes"),
        lambda: patch.instances("nope"),
        lambda: patch.add_node("subpatch", {"definition": "nope"}),
    ):
        with pytest.raises(PatchValueError, match="no definition 'nope'") as caught:
            attempt()
        assert "\n" not in str(caught.value)


def test_remove_definition_returns_the_body_and_is_refused_while_instances_exist() -> None:
    patch = document_with_scale()
    patch.add_definition("outer", Patch())
    outer = patch.definition("outer")
    top = patch.add_node("subpatch", {"definition": "scale"})
    inner = outer.add_node("subpatch", {"definition": "scale"})
    assert patch.instances("scale") == [(patch, top), (outer, inner)]
    before = snapshot(patch)
    with pytest.raises(PatchValueError, match=r"used by 2 instance\(s\)") as caught:
        patch.remove_definition("scale")
    assert f"outer/{inner}" in str(caught.value) and top in str(caught.value)
    assert snapshot(patch) == before
    patch.remove_node(top)
    with pytest.raises(PatchValueError, match=f"outer/{inner}"):
        patch.remove_definition("scale")  # the nested instance still holds it
    outer.remove_node(inner)
    body = patch.remove_definition("scale")
    assert "scale" not in patch.definitions
    assert body.owner is None and body.name is None
    body.add_node("math.add")  # detached: no longer relayed to the document
    patch.add_definition("scale", body)  # and it can be kept again
    assert patch.definition("scale") is body


def test_remove_definition_from_inside_a_body_removes_it_from_the_document() -> None:
    patch = document_with_scale()
    patch.add_definition("other", Patch())
    patch.definition("other").remove_definition("scale")
    assert list(patch.definitions) == ["other"]


def test_rename_definition_carries_every_instance_and_survives_a_file() -> None:
    patch = document_with_scale()
    patch.add_definition("outer", Patch())
    outer = patch.definition("outer")
    top = patch.add_node("subpatch", {"definition": "scale", "x": 4.0})
    inner = outer.add_node("subpatch", {"definition": "scale"})
    out = patch.add_node("output.value")
    patch.connect(top, "y", out, "in")
    body = patch.definition("scale")
    patch.rename_definition("scale", "double")
    assert list(patch.definitions) == ["double", "outer"]  # keeps its place
    assert patch.definition("double") is body and body.name == "double"
    assert patch.value(top, "definition") == "double"
    assert outer.value(inner, "definition") == "double"
    assert patch.value(top, "x") == 4.0 and patch.link_into(out, "in") == Link(top, "y", out, "in")
    assert patch.instances("double") == [(patch, top), (outer, inner)]
    # Counts follow: the old name holds nothing, the new one is refused for removal.
    with pytest.raises(PatchValueError, match="used by 2"):
        patch.remove_definition("double")
    # The body's edits are relayed under its new name.
    events = recorder(patch)
    body.set_value("mul", "b", 3.0)
    assert events[-1].definition == "double"
    again = patch_from_dict(patch_to_dict(patch))
    assert dump(again) == dump(patch)
    assert again.value(top, "definition") == "double"


def test_rename_definition_refusals_change_nothing() -> None:
    patch = document_with_scale()
    patch.add_definition("other", Patch())
    before = snapshot(patch)
    with pytest.raises(PatchValueError, match="'other' already exists"):
        patch.rename_definition("scale", "other")
    with pytest.raises(PatchValueError, match="bad definition name"):
        patch.rename_definition("scale", "a/b")
    assert snapshot(patch) == before


# ----------------------------------------------------------------------------- pins


def test_instance_pins_follow_inlets_and_outlets_in_body_order() -> None:
    patch = document_with_scale()
    body = patch.definition("scale")
    body.add_node("subpatch.outlet", {"name": "raw"}, node_id="raw_out")
    body.add_node("subpatch.inlet", {"name": "loose"}, node_id="loose_in")
    body.connect("x_in", "out", "raw_out", "in")  # an inlet feeding an outlet: any -> any
    instance = patch.add_node("subpatch", {"definition": "scale"})
    inputs, outputs = pins_of(patch, instance)
    assert inputs == [("definition", "str"), ("x", "num"), ("loose", "float")]
    assert outputs == [("y", "num"), ("raw", "any")]
    assert patch.value(instance, "x") == 1.5  # the inlet's default
    assert patch.value(instance, "loose") == 0.0  # linked to nothing: a float, 0.0


def test_inlet_type_follows_its_first_link_inside() -> None:
    patch = Patch()
    body = Patch()
    inlet = body.add_node("subpatch.inlet", {"name": "v", "default": "text"})
    target = body.add_node("value.float")
    patch.add_definition("d", body)
    instance = patch.add_node("subpatch", {"definition": "d"})
    assert pins_of(patch, instance)[0][1] == ("v", "float")  # linked to nothing
    body.set_value(target, "value", 2.5)
    body.connect(inlet, "out", target, "value")
    pin = patch.node(instance).input("v")
    assert pin is not None and pin.type == "float"
    assert pin.default == 2.5  # "text" does not suit a float: what the pin it feeds held
    body.disconnect(inlet, "out", target, "value")
    assert pins_of(patch, instance)[0][1] == ("v", "float")


def test_an_inlet_feeding_a_choice_pin_gives_its_instances_the_choices() -> None:
    patch = Patch()
    body = Patch()
    inlet = body.add_node("subpatch.inlet", {"name": "align"})
    text = body.add_node("text.render")
    body.connect(inlet, "out", text, "align")
    patch.add_definition("d", body)
    instance = patch.add_node("subpatch", {"definition": "d"})
    pin = patch.node(instance).input("align")
    assert pin is not None and pin.type == "str" and pin.default == "center"
    assert pin.choices == ("left", "center", "right")


def test_wiring_a_new_inlet_in_keeps_each_instance_value_and_its_default_is_editable() -> None:
    patch = Patch()
    body = Patch()
    inlet = body.add_node("subpatch.inlet", {"name": "gain"}, node_id="gain_in")
    mul = body.add_node("math.mul", {"a": 2.0, "b": 1.0}, node_id="mul")
    patch.add_definition("d", body)
    first = patch.add_node("subpatch", {"definition": "d"})
    second = patch.add_node("subpatch", {"definition": "d"})
    assert body.value(inlet, "default") is None  # unset: follows what it feeds
    assert patch.value(first, "gain") == 0.0  # a float until wired in
    patch.set_value(second, "gain", 0.7)  # set on that instance
    body.connect(inlet, "out", mul, "b")
    # b held 1.0: instances nobody set give 1.0 (the picture stays), a set one keeps its value
    assert (patch.value(first, "gain"), patch.value(second, "gain")) == (1.0, 0.7)
    body.set_value(inlet, "default", 0.25)  # the inlet's default, edited
    assert patch.node(first).input("gain").default == 0.25
    assert (patch.value(first, "gain"), patch.value(second, "gain")) == (0.25, 0.7)
    body.set_value(inlet, "default", None)  # as an undo puts it back
    assert (patch.value(first, "gain"), patch.value(second, "gain")) == (1.0, 0.7)
    body.set_value(inlet, "default", 0.25)
    again = patch_from_dict(patch_to_dict(patch))
    assert again.definition("d").value(inlet, "default") == 0.25
    assert (again.value(first, "gain"), again.value(second, "gain")) == (0.25, 0.7)


def test_instances_are_rederived_everywhere_when_ports_change() -> None:
    patch = document_with_scale()
    patch.add_definition("outer", Patch())
    outer = patch.definition("outer")
    top = patch.add_node("subpatch", {"definition": "scale"})
    nested = outer.add_node("subpatch", {"definition": "scale"})
    body = patch.definition("scale")
    added = body.add_node("subpatch.inlet", {"name": "z"})
    for container, node_id in ((patch, top), (outer, nested)):
        assert [name for name, _ in pins_of(container, node_id)[0]] == ["definition", "x", "z"]
    body.remove_node("y_out")
    for container, node_id in ((patch, top), (outer, nested)):
        assert pins_of(container, node_id)[1] == []
    body.remove_node(added)
    for container, node_id in ((patch, top), (outer, nested)):
        assert [name for name, _ in pins_of(container, node_id)[0]] == ["definition", "x"]


def test_renaming_a_port_carries_links_and_values() -> None:
    patch = document_with_scale()
    source = patch.add_node("value.float", {"value": 3.0})
    first = patch.add_node("subpatch", {"definition": "scale", "x": 7.0})
    second = patch.add_node("subpatch", {"definition": "scale"})
    sink = patch.add_node("output.value")
    patch.connect(source, "out", second, "x")
    patch.connect(first, "y", sink, "in")
    body = patch.definition("scale")
    body.set_value("x_in", "name", "gain")
    body.set_value("y_out", "name", "result")
    assert [name for name, _ in pins_of(patch, first)[0]] == ["definition", "gain"]
    assert patch.value(first, "gain") == 7.0 and "x" not in patch.node(first).values
    assert patch.link_into(second, "gain") == Link(source, "out", second, "gain")
    assert patch.link_into(sink, "in") == Link(first, "result", sink, "in")
    assert len(patch.links) == 2


def test_removing_a_port_drops_its_links() -> None:
    patch = document_with_scale()
    source = patch.add_node("value.float")
    instance = patch.add_node("subpatch", {"definition": "scale"})
    sink = patch.add_node("output.value")
    patch.connect(source, "out", instance, "x")
    patch.connect(instance, "y", sink, "in")
    body = patch.definition("scale")
    body.remove_node("x_in")
    body.remove_node("y_out")
    assert patch.links == []
    assert "x" not in patch.node(instance).values


def test_port_names_are_unique_and_an_inlet_is_never_named_definition() -> None:
    body = Patch()
    first = body.add_node("subpatch.inlet", {"name": "a"})
    second = body.add_node("subpatch.inlet", {"name": "a"})
    third = body.add_node("subpatch.inlet", {"name": "definition"})
    out = body.add_node("subpatch.outlet", {"name": "a"})  # outlets are named apart from inlets
    names = [body.value(n, "name") for n in (first, second, third, out)]
    assert names == ["a", "a2", "definition2", "a"]
    with pytest.raises(PatchValueError, match="another inlet is already named 'a'"):
        body.set_value(second, "name", "a")
    with pytest.raises(PatchValueError, match="definition"):
        body.set_value(second, "name", "definition")
    body.set_value(second, "name", "a2")  # its own name again is fine
    patch = Patch()
    patch.add_definition("d", body)
    instance = patch.add_node("subpatch", {"definition": "d"})
    assert [name for name, _ in pins_of(patch, instance)[0]] == ["definition", "a", "a2",
                                                                 "definition2"]  # fmt: skip


def test_instance_values_belong_to_the_instance() -> None:
    patch = document_with_scale()
    first = patch.add_node("subpatch", {"definition": "scale", "x": 2.0})
    second = patch.add_node("subpatch", {"definition": "scale"})
    patch.set_value(second, "x", 9.0)
    assert patch.value(first, "x") == 2.0 and patch.value(second, "x") == 9.0
    assert patch.definition("scale").value("x_in", "default") == 1.5


# ----------------------------------------------------------------------------- recursion


def test_a_definition_holding_itself_is_refused() -> None:
    patch = document_with_scale()
    body = patch.definition("scale")
    before = snapshot(patch)
    with pytest.raises(CycleError, match="scale -> scale") as caught:
        body.add_node("subpatch", {"definition": "scale"})
    assert caught.value.cycle == ["scale", "scale"]
    assert snapshot(patch) == before


def test_definitions_holding_each_other_are_refused_naming_the_chain() -> None:
    patch = Patch()
    for name in ("a", "b", "c"):
        patch.add_definition(name, Patch())
    patch.definition("a").add_node("subpatch", {"definition": "b"})
    patch.definition("b").add_node("subpatch", {"definition": "c"})
    before = snapshot(patch)
    with pytest.raises(CycleError, match="c -> a -> b -> c") as caught:
        patch.definition("c").add_node("subpatch", {"definition": "a"})
    assert "\n" not in str(caught.value)
    assert snapshot(patch) == before


def test_switching_an_instance_to_a_definition_that_holds_it_is_refused() -> None:
    patch = Patch()
    for name in ("a", "b", "leaf"):
        patch.add_definition(name, Patch())
    patch.definition("a").add_node("subpatch", {"definition": "b"})
    switch = patch.definition("b").add_node("subpatch", {"definition": "leaf"})
    before = snapshot(patch)
    with pytest.raises(CycleError, match="b -> a -> b"):
        patch.definition("b").set_value(switch, "definition", "a")
    with pytest.raises(CycleError, match="b -> b"):
        patch.definition("b").set_value(switch, "definition", "b")
    assert snapshot(patch) == before
    assert patch.definition("b").instance_counts == {"leaf": 1}


def test_nesting_twenty_deep_works() -> None:
    patch = Patch()
    patch.add_definition("level0", scale_body())
    for depth in range(1, 21):
        body = Patch()
        body.owner = patch
        inlet = body.add_node("subpatch.inlet", {"name": "x"})
        inner = body.add_node("subpatch", {"definition": f"level{depth - 1}"})
        outlet = body.add_node("subpatch.outlet", {"name": "y"})
        body.connect(inlet, "out", inner, "x")
        body.connect(inner, "y", outlet, "in")
        body.owner = None
        patch.add_definition(f"level{depth}", body)
    top = patch.add_node("subpatch", {"definition": "level20"})
    assert pins_of(patch, top) == ([("definition", "str"), ("x", "num")], [("y", "num")])
    # A renamed port at the bottom keeps every link on the way up.
    patch.definition("level0").set_value("y_out", "name", "z")
    assert pins_of(patch, top)[1] == [("y", "num")]
    # A removed one reaches the top through twenty levels of re-derived pins.
    patch.definition("level0").remove_node("y_out")
    assert pins_of(patch, top)[1] == [("y", "any")]
    assert patch.definition("level1").links == [Link("inlet1", "out", "subpatch2", "x")]
    patch.definition("level0").disconnect("x_in", "out", "mul", "a")
    assert pins_of(patch, top)[0] == [("definition", "str"), ("x", "float")]
    again = patch_from_dict(patch_to_dict(patch))
    assert dump(again) == dump(patch)


# ----------------------------------------------------------------------------- expanded size


def tenfold_document(levels: int) -> dict[str, Any]:
    """A file of `levels` definitions, each holding ten instances of the one below."""
    definitions: dict[str, Any] = {"d0": {"nodes": [{"id": "n", "type": "math.add"}], "links": []}}
    for level in range(1, levels + 1):
        nodes = [
            {"id": f"i{k}", "type": "subpatch", "values": {"definition": f"d{level - 1}"}}
            for k in range(10)
        ]
        definitions[f"d{level}"] = {"nodes": nodes, "links": []}
    top = [{"id": "top", "type": "subpatch", "values": {"definition": f"d{levels}"}}]
    return {"format": "patchbay", "version": 2, "nodes": top, "links": [],
            "definitions": definitions}  # fmt: skip


def test_a_file_that_expands_past_the_node_limit_is_refused_naming_the_place() -> None:
    with pytest.raises(PatchFileError) as caught:
        patch_from_dict(tenfold_document(10), "big.patchbay")
    message = str(caught.value)
    assert "\n" not in message
    assert re.fullmatch(
        r"big\.patchbay: definitions: definition 'd\d+' expanded: \d+ is above the limit nodes"
        r" = 100000",
        message,
    ), message


def test_a_file_whose_own_instances_expand_past_the_node_limit_is_refused() -> None:
    document = tenfold_document(4)  # d4 expands to 21,110 nodes
    document["nodes"] += [
        {"id": f"more{k}", "type": "subpatch", "values": {"definition": "d4"}} for k in range(4)
    ]
    with pytest.raises(PatchFileError) as caught:
        patch_from_dict(document, "big.patchbay")
    assert str(caught.value) == (
        "big.patchbay: nodes: the patch expanded: 105555 is above the limit nodes = 100000"
    )


def chained_definitions(count: int, depth: int) -> dict[str, Any]:
    """A file of `count` definitions in chains `depth` long (each holding an instance of the one
    before it: inlet x -> instance -> outlet y; the first of a chain: x -> math.mul -> y, so the
    pins are numbers), listed outermost first; the top holds the last."""
    definitions: dict[str, Any] = {}
    for level in reversed(range(count)):
        nodes: list[Any] = [{"id": "i", "type": "subpatch.inlet", "values": {"name": "x"}},
                            {"id": "o", "type": "subpatch.outlet", "values": {"name": "y"}},
                            {"id": "m", "type": "math.mul"}]  # fmt: skip
        links = [
            {"from": ["i", "out"], "to": ["m", "a"]},
            {"from": ["m", "out"], "to": ["o", "in"]},
        ]
        if level % depth:
            nodes.pop()
            nodes.append({"id": "s", "type": "subpatch", "values": {"definition": f"d{level - 1}"}})
            links = [{"from": ["i", "out"], "to": ["s", "x"]},
                     {"from": ["s", "y"], "to": ["o", "in"]}]  # fmt: skip
        definitions[f"d{level}"] = {"nodes": nodes, "links": links}
    top = [{"id": "top", "type": "subpatch", "values": {"definition": f"d{count - 1}"}}]
    return {"format": "patchbay", "version": 2, "nodes": top, "links": [],
            "definitions": definitions}  # fmt: skip


def test_a_file_of_thousands_of_definitions_loads(tmp_path: Path) -> None:
    """Many nested definitions in a file are checked once, not once per node (minutes before)."""
    path = tmp_path / "many.patchbay"
    path.write_text(json.dumps(chained_definitions(3000, 60)))
    patch = load_patch(path)
    assert next(iter(patch.definitions)) == "d2999"  # the file's order is kept
    # Instances follow their definitions once loaded: a port renamed at the bottom carries links.
    bottom = patch.definition("d2940")
    bottom.set_value("o", "name", "z")
    assert patch.definition("d2941").link_into("o", "in") == Link("s", "z", "o", "in")
    bottom.add_node("subpatch.inlet", {"name": "extra"})
    assert [pin.name for pin in patch.node("top").inputs] == ["definition", "x"]
    assert [pin.name for pin in patch.definition("d2941").node("s").inputs][-1] == "extra"


def test_definitions_nest_at_most_64_deep(tmp_path: Path) -> None:
    patch = patch_from_dict(chained_definitions(64, 64))
    assert [out.type for out in patch.node("top").spec.outputs] == ["num"]
    patch.definition("d0").remove_node("o")  # reaches the top through every level
    assert [out.type for out in patch.node("top").spec.outputs] == ["any"]
    patch.add_definition("d64", Patch())
    before = snapshot(patch)
    with pytest.raises(
        PatchValueError, match="'d64' nests 65 definitions deep, above the most, 64"
    ):
        patch.definition("d64").add_node("subpatch", {"definition": "d63"})
    assert snapshot(patch) == before
    path = tmp_path / "deep.patchbay"
    path.write_text(json.dumps(chained_definitions(3000, 3000)))
    with pytest.raises(PatchFileError) as caught:
        load_patch(path)
    assert str(caught.value) == (
        f"{path}: definitions: definition 'd64' nests 65 definitions deep, above the most, 64"
    )


@pytest.fixture
def thousand_nodes() -> Any:
    """The limit `nodes` at 1000 for one test."""
    before = active_limits()
    set_active_limits(DEFAULT_LIMITS.replaced(nodes=1000))
    yield
    set_active_limits(before)


def test_edits_that_expand_past_the_node_limit_are_refused(thousand_nodes: None) -> None:
    patch = patch_from_dict(tenfold_document(2))  # d2 expands to 210 nodes; 211 in all
    for _ in range(3):
        patch.add_node("subpatch", {"definition": "d2"})  # 844
    before = snapshot(patch)
    with pytest.raises(PatchValueError, match="1055 is above the limit nodes = 1000") as caught:
        patch.add_node("subpatch", {"definition": "d2"})
    assert "\n" not in str(caught.value)
    # A node more in the innermost body is a hundred more in each of the four instances.
    with pytest.raises(PatchValueError, match="1244 is above the limit nodes"):
        patch.definition("d0").add_node("math.add")
    patch.definition("d2").add_node("subpatch", {"definition": "d1"})  # 928
    with pytest.raises(PatchValueError, match="1012 is above the limit nodes"):
        patch.definition("d2").add_node("subpatch", {"definition": "d1"})
    patch.definition("d2").remove_node("subpatch1")
    assert snapshot(patch)[0] == before[0]


def test_switching_to_a_bigger_definition_is_held_to_the_node_limit(thousand_nodes: None) -> None:
    patch = patch_from_dict(tenfold_document(2))
    patch.add_definition("small", Patch())
    smalls = [patch.add_node("subpatch", {"definition": "small"}) for _ in range(4)]
    for node_id in smalls[:3]:
        patch.set_value(node_id, "definition", "d2")
    with pytest.raises(PatchValueError, match="limit nodes"):
        patch.set_value(smalls[3], "definition", "d2")
    assert patch.value(smalls[3], "definition") == "small"


def test_a_definition_too_big_on_its_own_is_refused(thousand_nodes: None) -> None:
    patch = patch_from_dict(tenfold_document(2))
    patch.add_definition("d3", Patch())
    body = patch.definition("d3")
    for _ in range(4):
        body.add_node("subpatch", {"definition": "d2"})
    with pytest.raises(PatchValueError, match=r"'d3'.* 1055 is above the limit nodes"):
        body.add_node("subpatch", {"definition": "d2"})


# ----------------------------------------------------------------------------- group, ungroup


def normalized(patch: Patch) -> dict[str, Any]:
    """patch_to_dict with nodes by id and links as a set: what group then ungroup must keep
    (ungroup adds the nodes back at the end of the patch's order)."""
    document = patch_to_dict(patch)
    document["nodes"] = sorted(document["nodes"], key=lambda node: node["id"])
    document["links"] = sorted(json.dumps(link) for link in document["links"])
    document["definitions"] = {
        name: {
            "nodes": sorted(body["nodes"], key=lambda node: node["id"]),
            "links": sorted(json.dumps(link) for link in body["links"]),
        }
        for name, body in document.get("definitions", {}).items()
    }
    return document


def crossing_patch() -> Patch:
    """A selection (add, mul, delay, sub) with links in and out of it:
    v feeds add.a and mul.a (one source, two consumers inside); mul.out feeds out1 and out2 (one
    inner source, two consumers outside); add -> mul -> delay -(feedback)-> add inside; mul ->
    fd2 -(feedback)-> sub crosses the selection through an outside feedback input."""
    patch = Patch()
    patch.add_node("value.float", {"value": 3.0}, (0, 0), node_id="v")
    patch.add_node("math.add", {"b": 1.0}, (200, 0), node_id="add")
    patch.add_node("math.mul", {"a": 5.0}, (400, 10), node_id="mul")
    patch.add_node("util.frame_delay", {"init": 0.5}, (400, 200), node_id="delay")
    patch.add_node("math.sub", {"b": 0.25}, (300, 300), node_id="sub")
    patch.add_node("util.frame_delay", {}, (700, 300), node_id="fd2")
    for sink in ("out1", "out2", "out3", "out4"):
        patch.add_node("output.value", {}, (900, 100), node_id=sink)
    patch.connect("v", "out", "add", "a")
    patch.connect("v", "out", "mul", "a")
    patch.connect("add", "out", "mul", "b")
    patch.connect("mul", "out", "delay", "in")
    patch.connect("delay", "out", "add", "b")
    patch.connect("mul", "out", "out1", "in")
    patch.connect("mul", "out", "out2", "in")
    patch.connect("add", "out", "out3", "in")
    patch.connect("mul", "out", "fd2", "in")
    patch.connect("fd2", "out", "sub", "a")
    patch.connect("sub", "out", "out4", "in")
    return patch


SELECTION = ["add", "mul", "delay", "sub"]


def test_group_rewires_crossing_links_through_shared_inlets_and_outlets() -> None:
    patch = crossing_patch()
    instance = patch.group(SELECTION, "block")
    body = patch.definition("block")
    assert set(patch.nodes) == {"v", "fd2", "out1", "out2", "out3", "out4", instance}
    assert [n for n in body.nodes if n in SELECTION] == SELECTION
    inlets = {body.value(n, "name"): n for n in body.ports if n.startswith("inlet")}
    outlets = {body.value(n, "name"): n for n in body.ports if n.startswith("outlet")}
    assert len(inlets) == 2 and len(outlets) == 3  # v and fd2 in; mul, add and sub out
    into = {pin: (link.src, link.src_pin) for pin, link in patch.links_into(instance).items()}
    assert sorted(into.values()) == [("fd2", "out"), ("v", "out")]
    # One inlet for v, feeding both of its consumers inside.
    v_inlet = inlets[next(pin for pin, src in into.items() if src == ("v", "out"))]
    assert sorted((ln.dst, ln.dst_pin) for ln in body.links_out_of(v_inlet)) == [
        ("add", "a"),
        ("mul", "a"),
    ]
    # One outlet for mul, feeding out1, out2 and fd2 outside.
    mul_pin = next(name for name, n in outlets.items() if body.link_into(n, "in").src == "mul")
    assert sorted(ln.dst for ln in patch.links_out_of(instance) if ln.src_pin == mul_pin) == [
        "fd2",
        "out1",
        "out2",
    ]
    # The loop inside stays inside.
    assert Link("delay", "out", "add", "b") in body.links
    assert Link("mul", "out", "delay", "in") in body.links
    assert patch.eager_cycle() is None and body.eager_cycle() is None


def test_group_then_ungroup_gives_back_an_equal_patch() -> None:
    patch = crossing_patch()
    before = normalized(patch)
    instance = patch.group(SELECTION, "block")
    added = patch.ungroup(instance)
    assert sorted(added) == sorted(SELECTION)
    assert not patch.definitions
    assert normalized(patch) == before


def test_group_and_ungroup_inside_a_body() -> None:
    patch = Patch()
    patch.add_definition("outer", crossing_patch())
    outer = patch.definition("outer")
    top = patch.add_node("subpatch", {"definition": "outer"})
    before = normalized(patch)
    instance = outer.group(SELECTION, "inner")
    assert patch.definition("inner").owner is patch
    assert patch.instances("inner") == [(outer, instance)]
    with pytest.raises(PatchValueError, match="used by 1 instance"):
        patch.remove_definition("inner")
    assert patch.value(top, "definition") == "outer"
    outer.ungroup(instance)
    assert "inner" not in patch.definitions
    assert normalized(patch) == before


def test_group_that_would_close_a_cycle_is_refused_and_changes_nothing() -> None:
    patch = Patch()
    for node_id in ("a", "b", "c"):
        patch.add_node("math.add", node_id=node_id)
    patch.connect("a", "out", "b", "a")
    patch.connect("b", "out", "c", "a")
    before = snapshot(patch)
    with pytest.raises(CycleError, match="b") as caught:
        patch.group(["a", "c"], "loop")
    assert "\n" not in str(caught.value)
    assert snapshot(patch) == before and not patch.definitions


def test_group_refusals_change_nothing() -> None:
    patch = crossing_patch()
    patch.add_definition("taken", Patch())
    before = snapshot(patch)
    with pytest.raises(PatchValueError, match="'taken' already exists"):
        patch.group(["add"], "taken")
    with pytest.raises(PatchValueError, match="bad definition name"):
        patch.group(["add"], "a/b")
    with pytest.raises(PatchValueError, match="nothing to group"):
        patch.group([], "empty")
    with pytest.raises(PatchError, match="no node 'ghost'"):
        patch.group(["add", "ghost"], "ghosts")
    assert snapshot(patch) == before


def test_ungroup_hands_the_instance_values_to_the_inner_nodes() -> None:
    patch = document_with_scale()
    first = patch.add_node("subpatch", {"definition": "scale", "x": 4.0}, (100, 100))
    second = patch.add_node("subpatch", {"definition": "scale"})
    sink = patch.add_node("output.value", node_id="mul")  # its id is taken: ungroup picks another
    patch.connect(first, "y", sink, "in")
    added = patch.ungroup(first)
    assert len(added) == 1 and added[0] != "mul"
    assert patch.node(added[0]).type_id == "math.mul"
    assert patch.value(added[0], "a") == 4.0 and patch.value(added[0], "b") == 2.0
    assert patch.link_into(sink, "in") == Link(added[0], "out", sink, "in")
    assert patch.node(added[0]).pos == (100.0, 100.0)
    assert "scale" in patch.definitions  # the second instance still uses it
    patch.ungroup(second)
    assert not patch.definitions
    with pytest.raises(PatchValueError, match="not an instance"):
        patch.ungroup(sink)


def test_make_unique_detaches_one_instance() -> None:
    patch = document_with_scale()
    source = patch.add_node("value.float")
    first = patch.add_node("subpatch", {"definition": "scale"})
    second = patch.add_node("subpatch", {"definition": "scale", "x": 6.0})
    patch.connect(source, "out", second, "x")
    assert patch.make_unique(second, "scale_b") == "scale_b"
    assert patch.value(second, "definition") == "scale_b"
    assert patch.link_into(second, "x") == Link(source, "out", second, "x")
    copy_body, original = patch.definition("scale_b"), patch.definition("scale")
    assert copy_body is not original
    assert dump_body(copy_body) == dump_body(original)
    copy_body.set_value("mul", "b", 10.0)
    copy_body.add_node("subpatch.inlet", {"name": "extra"})
    assert original.value("mul", "b") == 2.0
    assert [name for name, _ in pins_of(patch, first)[0]] == ["definition", "x"]
    assert [name for name, _ in pins_of(patch, second)[0]] == ["definition", "x", "extra"]
    original.set_value("y_out", "name", "renamed")
    assert pins_of(patch, second)[1] == [("y", "num")]
    assert patch.instances("scale") == [(patch, first)]
    with pytest.raises(PatchValueError, match="not an instance"):
        patch.make_unique(source, "nope")


def dump_body(body: Patch) -> str:
    return json.dumps({k: v for k, v in patch_to_dict(body).items() if k in ("nodes", "links")})


# ----------------------------------------------------------------------------- events


def test_every_body_edit_reaches_the_document_with_its_definition() -> None:
    patch = document_with_scale()
    patch.add_definition("outer", Patch())
    body, outer = patch.definition("scale"), patch.definition("outer")
    events = recorder(patch)
    edits = [
        (body, lambda: body.add_node("math.add", node_id="extra"), "structural"),
        (body, lambda: body.connect("mul", "out", "extra", "a"), "structural"),
        (body, lambda: body.set_value("extra", "b", 2.0), "value"),
        (body, lambda: body.disconnect("mul", "out", "extra", "a"), "structural"),
        (body, lambda: body.set_position("extra", (5, 5)), "ui"),
        (body, lambda: body.remove_node("extra"), "structural"),
        (outer, lambda: outer.add_node("subpatch", {"definition": "scale"}), "structural"),
    ]
    for container, edit, kind in edits:
        revisions = (patch.revision, patch.value_revision)
        events.clear()
        edit()
        assert events and events[0].kind == kind
        assert {event.definition for event in events} == {container.name}
        if kind == "structural":
            assert patch.revision > revisions[0] and patch.value_revision == revisions[1]
        elif kind == "value":
            assert patch.value_revision > revisions[1] and patch.revision == revisions[0]
        else:
            assert (patch.revision, patch.value_revision) == revisions


def test_definition_ops_are_structural_events_of_the_document() -> None:
    patch = Patch()
    events = recorder(patch)
    revision = patch.revision
    patch.add_definition("d", Patch())
    patch.rename_definition("d", "e")
    patch.remove_definition("e")
    assert [(e.kind, e.op, e.value, e.definition) for e in events] == [
        ("structural", "add_definition", "d", None),
        ("structural", "rename_definition", ("d", "e"), None),
        ("structural", "remove_definition", "e", None),
    ]
    assert patch.revision == revision + 3


def test_a_port_edit_rederives_instances_with_events_for_their_containers() -> None:
    patch = document_with_scale()
    patch.add_definition("outer", Patch())
    outer = patch.definition("outer")
    top = patch.add_node("subpatch", {"definition": "scale"})
    nested = outer.add_node("subpatch", {"definition": "scale"})
    events = recorder(patch)
    patch.definition("scale").add_node("subpatch.inlet", {"name": "k"})
    pins = {(e.definition, e.node_id) for e in events if e.op == "pins"}
    assert pins == {(None, top), ("outer", nested)}


def test_a_refused_body_edit_sends_nothing() -> None:
    patch = document_with_scale()
    events = recorder(patch)
    before = snapshot(patch)
    body = patch.definition("scale")
    with pytest.raises(PatchError):
        body.connect("mul", "out", "mul", "a")  # a cycle
    with pytest.raises(PatchError):
        body.add_node("subpatch", {"definition": "scale"})
    with pytest.raises(PatchError):
        body.set_value("x_in", "name", "definition")
    assert events == [] and snapshot(patch) == before


def test_grouping_a_feedback_input_fed_from_outside_is_refused() -> None:
    """Inside, the loop passes a frame_delay's feedback input; the instance's pin is no feedback
    input, so outside the loop would be eager: refused, the patch unchanged."""
    patch = Patch()
    patch.add_node("util.frame_delay", node_id="d")
    patch.add_node("math.add", node_id="a")
    patch.connect("d", "out", "a", "a")
    patch.connect("a", "out", "d", "in")
    before = snapshot(patch)
    with pytest.raises(CycleError, match="d -> a -> d"):
        patch.group(["d"], "g")
    assert snapshot(patch) == before and not patch.definitions


def test_grouping_an_instance_nests_it() -> None:
    patch = document_with_scale()
    patch.add_node("value.float", {"value": 1.0}, node_id="v")
    patch.add_node("subpatch", {"definition": "scale"}, node_id="s")
    patch.add_node("output.value", node_id="o")
    patch.connect("v", "out", "s", "x")
    patch.connect("s", "y", "o", "in")
    before = normalized(patch)
    wrap = patch.group(["v", "s"], "wrap")
    assert patch.instances("scale") == [(patch.definition("wrap"), "s")]
    assert pins_of(patch, wrap) == ([("definition", "str")], [("y", "num")])
    with pytest.raises(PatchValueError, match=r"wrap/s"):
        patch.remove_definition("scale")
    patch.ungroup(wrap)
    assert normalized(patch) == before
