"""The Patch document: edits, ids, revisions, events and every refusal."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from nodes import (
    CycleError,
    DuplicateNodeError,
    InputOccupiedError,
    Link,
    Patch,
    PatchError,
    PatchEvent,
    PatchValueError,
    PinTypeError,
    UnknownNodeError,
    UnknownNodeTypeError,
    UnknownPinError,
)


def state_of(patch: Patch) -> dict[str, Any]:
    """Everything a refused edit must leave unchanged."""
    return {
        "nodes": {
            node_id: (n.type_id, copy.deepcopy(n.values), n.pos, n.stamp, n.inputs)
            for node_id, n in patch.nodes.items()
        },
        "links": list(patch.links),
        "revision": patch.revision,
        "value_revision": patch.value_revision,
        "settings": copy.deepcopy(patch.settings),
    }


def same_state(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return repr(a) == repr(b)


@pytest.fixture
def chain() -> tuple[Patch, str, str, str]:
    """value.float -> math.add.a -> output.value.in"""
    patch = Patch()
    value = patch.add_node("value.float", {"value": 2.0})
    add = patch.add_node("math.add", {"b": 1.0})
    out = patch.add_node("output.value")
    patch.connect(value, "out", add, "a")
    patch.connect(add, "out", out, "in")
    return patch, value, add, out


def recorder(patch: Patch) -> list[PatchEvent]:
    events: list[PatchEvent] = []
    patch.subscribe(events.append)
    return events


# ----------------------------------------------------------------------------- nodes


def test_add_node_fills_defaults_and_returns_readable_unique_ids() -> None:
    patch = Patch()
    a = patch.add_node("math.add", {"a": 3}, pos=(10, 20))
    b = patch.add_node("math.add")
    assert a != b
    assert a.startswith("add") and b.startswith("add")
    node = patch.nodes[a]
    assert node.type_id == "math.add"
    assert node.values == {"a": 3.0, "b": 0.0}
    assert isinstance(node.values["a"], float)
    assert node.pos == (10.0, 20.0)
    assert patch.nodes[b].pos == (0.0, 0.0)
    assert list(patch.nodes) == [a, b]


def test_add_node_with_given_id() -> None:
    patch = Patch()
    assert patch.add_node("value.float", node_id="speed") == "speed"
    assert "speed" in patch.nodes
    # fresh ids never collide with given ones
    given = patch.add_node("value.float", node_id="float1")
    fresh = patch.add_node("value.float")
    assert fresh not in ("speed", given)


def test_ids_are_stable_across_edits() -> None:
    patch = Patch()
    ids = [patch.add_node("value.float") for _ in range(3)]
    out = patch.add_node("output.value")
    patch.connect(ids[2], "out", out, "in")
    patch.remove_node(ids[0])
    patch.set_value(ids[1], "value", 5.0)
    patch.disconnect(ids[2], "out", out, "in")
    assert list(patch.nodes) == [ids[1], ids[2], out]
    new = patch.add_node("value.float")
    assert new not in ids  # a removed node's id is not handed out again
    assert patch.nodes[ids[1]].values["value"] == 5.0


def test_remove_node_returns_removed_links(chain) -> None:
    patch, value, add, out = chain
    removed = patch.remove_node(add)
    assert set(removed) == {Link(value, "out", add, "a"), Link(add, "out", out, "in")}
    assert add not in patch.nodes
    assert patch.links == []
    assert patch.links_into(out) == {}
    assert list(patch.links_out_of(value)) == []
    # the removed links can be put back (undo) once the node is back
    patch.add_node("math.add", {"b": 1.0}, node_id=add)
    for link in removed:
        patch.connect(*link)
    assert set(patch.links) == set(removed)


def test_remove_node_with_a_feedback_self_loop() -> None:
    patch = Patch()
    delay = patch.add_node("util.frame_delay")
    link = patch.connect(delay, "out", delay, "in")
    assert patch.remove_node(delay) == [link]
    assert patch.links == [] and patch.nodes == {}


def test_remove_node_without_links_returns_empty_list() -> None:
    patch = Patch()
    node = patch.add_node("value.float")
    assert patch.remove_node(node) == []
    assert patch.nodes == {}


def test_connect_and_disconnect(chain) -> None:
    patch, value, add, out = chain
    assert patch.link_into(add, "a") == Link(value, "out", add, "a")
    assert patch.links == [Link(value, "out", add, "a"), Link(add, "out", out, "in")]
    patch.disconnect(value, "out", add, "a")
    assert patch.link_into(add, "a") is None
    assert patch.links == [Link(add, "out", out, "in")]
    # the input is free again
    patch.connect(value, "out", add, "a")
    assert patch.link_into(add, "a") is not None


def test_one_output_feeds_many_inputs() -> None:
    patch = Patch()
    value = patch.add_node("value.float")
    add = patch.add_node("math.add")
    patch.connect(value, "out", add, "a")
    patch.connect(value, "out", add, "b")
    assert len(list(patch.links_out_of(value))) == 2


def test_set_value_coerces_and_set_position() -> None:
    patch = Patch()
    add = patch.add_node("math.add")
    patch.set_value(add, "a", 4)
    assert patch.value(add, "a") == 4.0 and isinstance(patch.value(add, "a"), float)
    patch.set_value(add, "b", [1, 2, 3])
    assert isinstance(patch.value(add, "b"), np.ndarray)
    np.testing.assert_array_equal(patch.value(add, "b"), [1.0, 2.0, 3.0])
    patch.set_position(add, (3.5, -2))
    assert patch.nodes[add].pos == (3.5, -2.0)


def test_set_value_changes_the_stamp_only_of_that_node(chain) -> None:
    patch, value, add, out = chain
    stamps = {node_id: n.stamp for node_id, n in patch.nodes.items()}
    patch.set_value(value, "value", 9.0)
    assert patch.nodes[value].stamp != stamps[value]
    assert patch.nodes[add].stamp == stamps[add]
    assert patch.nodes[out].stamp == stamps[out]


# ----------------------------------------------------------------------------- revisions and events


def test_revision_bumps_only_on_structural_edits(chain) -> None:
    patch, value, add, out = chain
    revision, value_revision = patch.revision, patch.value_revision
    patch.set_value(value, "value", 3.0)
    assert patch.revision == revision
    assert patch.value_revision == value_revision + 1
    patch.set_position(value, (1, 1))
    assert (patch.revision, patch.value_revision) == (revision, value_revision + 1)
    patch.disconnect(add, "out", out, "in")
    assert patch.revision > revision
    revision = patch.revision
    patch.connect(add, "out", out, "in")
    assert patch.revision > revision
    revision = patch.revision
    patch.add_node("value.float")
    assert patch.revision > revision
    revision = patch.revision
    patch.remove_node(value)
    assert patch.revision > revision
    assert patch.value_revision == value_revision + 1


def test_event_kinds(chain) -> None:
    patch, value, add, _out = chain
    events = recorder(patch)
    new = patch.add_node("value.float")
    patch.connect(new, "out", add, "b")
    patch.set_value(value, "value", 1.5)
    patch.set_position(value, (5, 5))
    patch.disconnect(new, "out", add, "b")
    patch.remove_node(new)
    assert [(e.kind, e.op) for e in events] == [
        ("structural", "add_node"),
        ("structural", "connect"),
        ("value", "set_value"),
        ("ui", "move"),
        ("structural", "disconnect"),
        ("structural", "remove_node"),
    ]
    assert events[0].node_id == new
    assert events[1].link == Link(new, "out", add, "b")
    assert (events[2].node_id, events[2].pin, events[2].value) == (value, "value", 1.5)
    assert events[4].link == Link(new, "out", add, "b")


def test_remove_node_reports_its_links_as_disconnects_first(chain) -> None:
    patch, value, add, out = chain
    events = recorder(patch)
    patch.remove_node(add)
    assert [e.op for e in events] == ["disconnect", "disconnect", "remove_node"]
    assert {e.link for e in events[:2]} == {
        Link(value, "out", add, "a"),
        Link(add, "out", out, "in"),
    }


def test_unsubscribe_stops_events() -> None:
    patch = Patch()
    events: list[PatchEvent] = []
    unsubscribe = patch.subscribe(events.append)
    patch.add_node("value.float")
    unsubscribe()
    patch.add_node("value.float")
    assert len(events) == 1


# ----------------------------------------------------------------------------- refusals


def refused(patch: Patch, error: type[PatchError], edit, *args: Any) -> PatchError:
    """Apply an edit that must be refused with exactly `error`, the patch left as it was and no
    event sent."""
    before = state_of(patch)
    events = recorder(patch)
    with pytest.raises(error) as caught:
        edit(*args)
    assert type(caught.value) is error
    assert isinstance(caught.value, PatchError)
    assert same_state(state_of(patch), before)
    assert events == []
    assert str(caught.value) and "\n" not in str(caught.value)
    return caught.value


def test_refuses_unknown_node_type(chain) -> None:
    patch = chain[0]
    error = refused(patch, UnknownNodeTypeError, patch.add_node, "math.addd")
    assert "math.addd" in str(error)


def test_refuses_duplicate_and_bad_ids(chain) -> None:
    patch, value, _, _ = chain
    refused(patch, DuplicateNodeError, patch.add_node, "math.add", None, None, value)
    refused(patch, PatchValueError, patch.add_node, "math.add", None, None, "a/b")
    refused(patch, PatchValueError, patch.add_node, "math.add", None, None, "")


def test_refuses_bad_values_on_add(chain) -> None:
    patch = chain[0]
    refused(patch, UnknownPinError, patch.add_node, "math.add", {"c": 1.0})
    error = refused(patch, PatchValueError, patch.add_node, "math.add", {"a": "one"})
    assert ".a" in str(error)


def test_refuses_edits_of_unknown_nodes(chain) -> None:
    patch, value, add, _out = chain
    refused(patch, UnknownNodeError, patch.remove_node, "nope")
    refused(patch, UnknownNodeError, patch.set_value, "nope", "a", 1.0)
    refused(patch, UnknownNodeError, patch.set_position, "nope", (0, 0))
    refused(patch, UnknownNodeError, patch.connect, "nope", "out", add, "b")
    refused(patch, UnknownNodeError, patch.connect, value, "out", "nope", "in")


def test_refuses_unknown_pins(chain) -> None:
    patch, value, add, _ = chain
    error = refused(patch, UnknownPinError, patch.connect, value, "result", add, "b")
    assert "result" in str(error)
    error = refused(patch, UnknownPinError, patch.connect, value, "out", add, "c")
    assert "'c'" in str(error)
    refused(patch, UnknownPinError, patch.set_value, add, "c", 1.0)
    # an output is not an input
    refused(patch, UnknownPinError, patch.connect, value, "out", add, "out")
    refused(patch, UnknownPinError, patch.disconnect, value, "out", add, "b")


def test_refuses_wrong_value_type(chain) -> None:
    patch, value, add, _ = chain
    error = refused(patch, PatchValueError, patch.set_value, value, "value", "fast")
    assert value in str(error) and "value" in str(error)
    refused(patch, PatchValueError, patch.set_value, value, "value", float("nan"))
    refused(patch, PatchValueError, patch.set_value, add, "a", {"x": 1})
    linspace = patch.add_node("array.linspace")
    refused(patch, PatchValueError, patch.set_value, linspace, "count", 2.5)
    refused(patch, PatchValueError, patch.set_value, linspace, "count", "3")


def test_refuses_non_finite_value_for_an_integer_pin() -> None:
    patch = Patch()
    linspace = patch.add_node("array.linspace")
    refused(patch, PatchValueError, patch.set_value, linspace, "count", float("inf"))
    refused(patch, PatchValueError, patch.set_value, linspace, "count", float("nan"))
    refused(patch, PatchValueError, patch.set_value, linspace, "count", 10**400)
    refused(patch, PatchValueError, patch.add_node, "value.float", {"value": 10**400})
    error = refused(patch, PatchValueError, patch.add_node, "input.float", {"max": -(10**400)})
    assert ".max" in str(error)


def test_refuses_incompatible_pin_types() -> None:
    patch = Patch()
    # there is no str output in the core library; a str input fed by a number is refused
    value = patch.add_node("value.float")
    fail = patch.add_node("debug.fail")
    error = refused(patch, PinTypeError, patch.connect, value, "out", fail, "message")
    assert "float" in str(error) and "str" in str(error)
    # numbers link to numbers of every kind
    add = patch.add_node("math.add")
    linspace = patch.add_node("array.linspace")
    patch.connect(linspace, "out", add, "a")
    patch.connect(value, "out", linspace, "count")


def test_refuses_second_link_into_an_input(chain) -> None:
    patch, value, add, _ = chain
    other = patch.add_node("value.float")
    error = refused(patch, InputOccupiedError, patch.connect, other, "out", add, "a")
    assert f"{add}.a" in str(error) and value in str(error)
    # even the very same link
    refused(patch, InputOccupiedError, patch.connect, value, "out", add, "a")


def test_refuses_a_cycle_and_names_it() -> None:
    patch = Patch()
    a = patch.add_node("math.add")
    b = patch.add_node("math.mul")
    c = patch.add_node("math.sin")
    patch.connect(a, "out", b, "a")
    patch.connect(b, "out", c, "x")
    error = refused(patch, CycleError, patch.connect, c, "out", a, "b")
    assert error.cycle == [a, b, c, a]
    assert f"{a} -> {b} -> {c} -> {a}" in str(error)


def test_refuses_a_self_loop() -> None:
    patch = Patch()
    add = patch.add_node("math.add")
    error = refused(patch, CycleError, patch.connect, add, "out", add, "a")
    assert error.cycle == [add, add]


def test_refuses_a_cycle_through_a_lazy_input() -> None:
    patch = Patch()
    switch = patch.add_node("logic.switch")
    add = patch.add_node("math.add")
    patch.connect(switch, "out", add, "a")
    error = refused(patch, CycleError, patch.connect, add, "out", switch, "in1")
    assert error.cycle == [switch, add, switch]


def test_feedback_input_may_close_a_loop() -> None:
    patch = Patch()
    delay = patch.add_node("util.frame_delay")
    add = patch.add_node("math.add", {"b": 1.0})
    patch.connect(delay, "out", add, "a")
    link = patch.connect(add, "out", delay, "in")
    assert link in patch.links
    # a node may even feed its own feedback input
    own = patch.add_node("util.frame_delay")
    patch.connect(own, "out", own, "in")
    # but the loop may not be closed a second time without the feedback input
    error = refused(patch, CycleError, patch.connect, add, "out", delay, "init")
    assert error.cycle == [delay, add, delay]


def test_cycle_detection_ignores_loops_already_broken_by_feedback() -> None:
    patch = Patch()
    delay = patch.add_node("util.frame_delay")
    a = patch.add_node("math.add")
    b = patch.add_node("math.add")
    patch.connect(delay, "out", a, "a")
    patch.connect(a, "out", delay, "in")
    # b -> a is fine: the only way back from a to b would be through the feedback input
    patch.connect(b, "out", a, "b")
    assert len(patch.links) == 3


def test_check_link_changes_nothing(chain) -> None:
    patch, value, add, _ = chain
    before = state_of(patch)
    assert patch.check_link(value, "out", add, "b") == Link(value, "out", add, "b")
    assert same_state(state_of(patch), before)


def test_copy_is_detached_and_shares_values() -> None:
    patch = Patch()
    big = np.arange(1000.0)
    a = patch.add_node("value.array", {"value": big}, (10.0, 20.0))
    b = patch.add_node("array.sum")
    patch.connect(a, "out", b, "x")
    patch.update_settings(resolution=[320, 200])
    twin = patch.copy()
    assert twin.value(a, "value") is big  # arrays are not copied
    assert twin.links == patch.links and twin.settings == patch.settings
    seen = []
    twin.subscribe(seen.append)
    patch.remove_node(b)
    patch.set_position(a, (0.0, 0.0))
    patch.update_settings(resolution=[64, 64])
    assert set(twin.nodes) == {a, b} and twin.links_into(b)
    assert twin.nodes[a].pos == (10.0, 20.0) and twin.settings["resolution"] == [320, 200]
    assert seen == []
    twin.set_value(a, "value", np.zeros(3))
    assert patch.value(a, "value") is big


def test_an_unsubscribed_listener_leaves_no_reference_cycle_behind() -> None:
    import gc
    import weakref

    class Listener:
        def __init__(self, patch: Patch) -> None:
            self.unsubscribe = patch.subscribe(self.on_event)

        def on_event(self, event) -> None:
            pass

    patch = Patch()
    listener = Listener(patch)
    patch.add_node("value.float")
    listener.unsubscribe()
    gone = weakref.ref(listener)
    gc.disable()
    try:
        del listener
        assert gone() is None  # freed by reference counting alone, no collection needed
    finally:
        gc.enable()
