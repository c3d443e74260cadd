"""Subpatches evaluated: instances run as their definition inlined at their path, with state of
their own, in every evaluator and frozen."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from evaluators import DualEvaluator, Evaluator, LazyEvaluator, NodePath, freeze
from evaluators.graph.view import inlined
from nodes import Patch, patch_from_dict, patch_to_dict
from tests.evaluator_kinds import EVALUATOR_KINDS, evaluator_for_tests

SINKS = ("o1", "o2", "o3")


def counter_body() -> Patch:
    """A counter (a frame delay closing a loop through +1) plus the inlet `x` times a gain."""
    body = Patch()
    body.add_node("subpatch.inlet", {"name": "x", "default": 1.0}, node_id="inx")
    body.add_node("util.frame_delay", {"init": 0.0}, node_id="delay")
    body.add_node("math.add", {"b": 1.0}, node_id="inc")
    body.add_node("math.mul", {"b": 2.0}, node_id="gain")
    body.add_node("math.add", node_id="sum")
    body.add_node("subpatch.outlet", {"name": "y"}, node_id="outy")
    body.connect("delay", "out", "inc", "a")
    body.connect("inc", "out", "delay", "in")
    body.connect("inx", "out", "gain", "a")
    body.connect("gain", "out", "sum", "a")
    body.connect("inc", "out", "sum", "b")
    body.connect("sum", "out", "outy", "in")
    return body


def three_instances() -> Patch:
    patch = Patch()
    patch.add_definition("blob", counter_body())
    for i in (1, 2, 3):
        patch.add_node("subpatch", {"definition": "blob", "x": float(i)}, node_id=f"b{i}")
        patch.add_node("output.value", node_id=f"o{i}")
        patch.connect(f"b{i}", "y", f"o{i}", "in")
    return patch


def hand_inlined(gain: float = 2.0, inputs: tuple[float, ...] = (1.0, 2.0, 3.0)) -> Patch:
    """The same patch written out by hand, node ids as the paths the instances run at."""
    patch = Patch()
    patch.allow_path_ids = True
    for i, x in zip((1, 2, 3), inputs, strict=True):
        p = f"b{i}/"
        patch.add_node("value.float", {"value": x}, node_id=p + "inx")
        patch.add_node("util.frame_delay", {"init": 0.0}, node_id=p + "delay")
        patch.add_node("math.add", {"b": 1.0}, node_id=p + "inc")
        patch.add_node("math.mul", {"b": gain}, node_id=p + "gain")
        patch.add_node("math.add", node_id=p + "sum")
        patch.add_node("output.value", node_id=f"o{i}")
        patch.connect(p + "delay", "out", p + "inc", "a")
        patch.connect(p + "inc", "out", p + "delay", "in")
        patch.connect(p + "inx", "out", p + "gain", "a")
        patch.connect(p + "gain", "out", p + "sum", "a")
        patch.connect(p + "inc", "out", p + "sum", "b")
        patch.connect(p + "sum", "out", f"o{i}", "in")
    return patch


def sinks(evaluator: Evaluator) -> tuple[Any, ...]:
    return tuple(evaluator.output(sink) for sink in SINKS)


@pytest.mark.parametrize("kind", EVALUATOR_KINDS)
def test_instances_equal_the_hand_inlined_patch_every_frame(kind: Any) -> None:
    patch, reference = three_instances(), hand_inlined()
    ours, theirs = evaluator_for_tests(kind, patch), LazyEvaluator(reference)
    try:
        for frame in range(6):
            ours.run_frame(frame / 60, frame)
            theirs.run_frame(frame / 60, frame)
            assert sinks(ours) == sinks(theirs)
        assert sinks(ours) == (2.0 + 6, 4.0 + 6, 6.0 + 6)  # the counters count per instance
    finally:
        ours.close()
        theirs.close()


def test_the_frozen_patch_plays_like_the_editable_one() -> None:
    patch = three_instances()
    frozen = freeze(patch)
    assert not frozen.definitions
    assert not any(node.type_id.startswith("subpatch") for node in frozen.nodes.values())
    assert "b2/delay" in frozen.nodes  # HOT nodes keep their paths, so state is keyed alike
    loaded = patch_from_dict(json.loads(json.dumps(patch_to_dict(frozen))))
    editable, played = LazyEvaluator(patch), LazyEvaluator(loaded)
    for frame in range(5):
        editable.run_frame(frame / 60, frame)
        played.run_frame(frame / 60, frame)
        assert sinks(played) == sinks(editable)


@pytest.mark.parametrize("kind", EVALUATOR_KINDS)
def test_editing_the_definition_changes_every_instance_and_no_counter_resets(kind: Any) -> None:
    patch = three_instances()
    evaluator = evaluator_for_tests(kind, patch)
    try:
        for frame in range(3):
            evaluator.run_frame(frame / 60, frame)
        assert sinks(evaluator) == (2.0 + 3, 4.0 + 3, 6.0 + 3)
        patch.definition("blob").set_value("gain", "b", 10.0)
        evaluator.run_frame(3 / 60, 3)
        assert sinks(evaluator) == (10.0 + 4, 20.0 + 4, 30.0 + 4)
        # A structural edit inside: every instance gets the new node, the counters go on.
        body = patch.definition("blob")
        body.add_node("math.add", {"b": 100.0}, node_id="extra")
        body.disconnect("sum", "out", "outy", "in")
        body.connect("sum", "out", "extra", "a")
        body.connect("extra", "out", "outy", "in")
        evaluator.run_frame(4 / 60, 4)
        assert sinks(evaluator) == (115.0, 125.0, 135.0)
        assert evaluator.output("b3/delay") == 4.0
    finally:
        evaluator.close()


@pytest.mark.parametrize("kind", EVALUATOR_KINDS)
def test_an_instance_input_changes_that_instance_only(kind: Any) -> None:
    patch = three_instances()
    evaluator = evaluator_for_tests(kind, patch)
    try:
        evaluator.run_frame(0.0, 0)
        patch.set_value("b2", "x", 50.0)
        evaluator.run_frame(1 / 60, 1)
        assert sinks(evaluator) == (2.0 + 2, 100.0 + 2, 6.0 + 2)
    finally:
        evaluator.close()


@pytest.mark.parametrize("kind", EVALUATOR_KINDS)
def test_a_detached_copy_does_not_follow_its_old_definition(kind: Any) -> None:
    patch = three_instances()
    evaluator = evaluator_for_tests(kind, patch)
    try:
        evaluator.run_frame(0.0, 0)
        patch.make_unique("b3", "blob_b3")
        patch.definition("blob").set_value("gain", "b", 10.0)
        evaluator.run_frame(1 / 60, 1)
        assert sinks(evaluator) == (10.0 + 2, 20.0 + 2, 6.0 + 2)
        patch.definition("blob_b3").set_value("gain", "b", 0.0)
        evaluator.run_frame(2 / 60, 2)
        assert sinks(evaluator) == (10.0 + 3, 20.0 + 3, 0.0 + 3)
    finally:
        evaluator.close()


def shared_constant_patch() -> tuple[Patch, list[int]]:
    """Two instances fed the same constant; their inner CONST node counts its runs."""
    runs: list[int] = []
    body = Patch()
    body.add_node("subpatch.inlet", {"name": "x"}, node_id="inx")
    body.add_node("math.mul", {"b": 3.0}, node_id="triple")
    body.add_node("subpatch.outlet", {"name": "y"}, node_id="outy")
    body.connect("inx", "out", "triple", "a")
    body.connect("triple", "out", "outy", "in")
    patch = Patch()
    patch.add_definition("triple", body)
    patch.add_node("value.float", {"value": 2.0}, node_id="two")
    for i in (1, 2):
        patch.add_node("subpatch", {"definition": "triple"}, node_id=f"t{i}")
        patch.connect("two", "out", f"t{i}", "x")
        patch.add_node("output.value", node_id=f"o{i}")
        patch.connect(f"t{i}", "y", f"o{i}", "in")
    return patch, runs


@pytest.mark.parametrize("kind", EVALUATOR_KINDS)
def test_identical_instances_compute_a_const_inner_node_once(
    kind: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nodes.library.core.basics as core

    calls: list[Any] = []
    real = core.math_mul

    def counted(a: Any, b: Any) -> Any:
        calls.append((a, b))
        return real(a, b)

    patch, _ = shared_constant_patch()
    for container in (patch, patch.definition("triple")):
        for node in container.nodes.values():
            if node.type_id == "math.mul":
                monkeypatch.setattr(node, "spec", _with_compute(node.spec, counted))
    evaluator = evaluator_for_tests(kind, patch)
    try:
        evaluator.run_frame(0.0, 0)
        evaluator.run_frame(1 / 60, 1)
        if isinstance(evaluator, DualEvaluator):
            assert evaluator.wait_for_flat(30)
            evaluator.run_frame(2 / 60, 2)
        assert (evaluator.output("o1"), evaluator.output("o2")) == (6.0, 6.0)
        assert calls == [(2.0, 3.0)]
        assert {evaluator.status("t1/triple"), evaluator.status("t2/triple")} <= {"ok", "cached"}
    finally:
        evaluator.close()


def _with_compute(spec: Any, compute: Any) -> Any:
    import dataclasses

    return dataclasses.replace(spec, compute=compute)


@pytest.mark.parametrize("kind", EVALUATOR_KINDS)
def test_identical_instances_keep_their_own_state_behind_shared_results(kind: Any) -> None:
    """Two instances of a gate fed the same constants have equal inputs, but each gate keeps its
    own memory: what comes after a stateful node is not taken from the other instance, so both
    gates run, and both hold what they passed once they are closed."""
    body = Patch()
    body.add_node("subpatch.inlet", {"name": "open", "default": True}, node_id="inopen")
    body.add_node("subpatch.inlet", {"name": "x", "default": 0.0}, node_id="inx")
    body.add_node("logic.gate", node_id="gate")
    body.add_node("subpatch.outlet", {"name": "y"}, node_id="outy")
    body.connect("inopen", "out", "gate", "open")
    body.connect("inx", "out", "gate", "in")
    body.connect("gate", "out", "outy", "in")
    patch = Patch()
    patch.add_definition("held", body)
    for i in (1, 2):
        patch.add_node("subpatch", {"definition": "held", "open": True, "x": 5.0}, node_id=f"g{i}")
        patch.add_node("output.value", node_id=f"o{i}")
        patch.connect(f"g{i}", "y", f"o{i}", "in")
    evaluator = evaluator_for_tests(kind, patch)
    try:
        evaluator.run_frame(0.0, 0)
        assert (evaluator.output("o1"), evaluator.output("o2")) == (5.0, 5.0)
        for i in (1, 2):  # closed, with inputs that differ: each gate runs on its own now
            patch.set_value(f"g{i}", "open", False)
            patch.set_value(f"g{i}", "x", 6.0 + i)
        evaluator.run_frame(1 / 60, 1)
        assert (evaluator.output("o1"), evaluator.output("o2")) == (5.0, 5.0)
    finally:
        evaluator.close()


@pytest.mark.parametrize("kind", EVALUATOR_KINDS)
def test_one_definition_is_const_in_one_instance_and_hot_in_another(kind: Any) -> None:
    patch, _ = shared_constant_patch()
    patch.add_node("time.seconds", node_id="clock")
    patch.disconnect("two", "out", "t2", "x")
    patch.connect("clock", "out", "t2", "x")
    evaluator = evaluator_for_tests(kind, patch)
    try:
        evaluator.run_frame(0.5, 30)
        assert evaluator.node_class("t1/triple") == "CONST"
        assert evaluator.node_class("t2/triple") == "HOT"
        assert evaluator.output("o2") == pytest.approx(1.5)
    finally:
        evaluator.close()


@pytest.mark.parametrize("kind", EVALUATOR_KINDS)
def test_state_is_keyed_by_the_execution_path_at_any_depth(kind: Any) -> None:
    """Sixteen definitions, each holding an instance of the next; the innermost holds a counter:
    it runs at a path sixteen levels deep and keeps its own state."""
    patch = Patch()
    patch.add_definition("level16", counter_body())
    for level in range(15, 0, -1):
        body = Patch()
        patch.add_definition(f"level{level}", body)
        body.add_node("subpatch.inlet", {"name": "x"}, node_id="inx")
        body.add_node("subpatch", {"definition": f"level{level + 1}"}, node_id="deeper")
        body.add_node("subpatch.outlet", {"name": "y"}, node_id="outy")
        body.connect("inx", "out", "deeper", "x")
        body.connect("deeper", "y", "outy", "in")
    patch.add_node("value.float", {"value": 1.0}, node_id="one")
    for i in (1, 2):
        patch.add_node("subpatch", {"definition": "level1"}, node_id=f"top{i}")
        patch.connect("one", "out", f"top{i}", "x")
        patch.add_node("output.value", node_id=f"o{i}")
        patch.connect(f"top{i}", "y", f"o{i}", "in")
    evaluator = evaluator_for_tests(kind, patch)
    try:
        for frame in range(3):
            evaluator.run_frame(frame / 60, frame)
        assert (evaluator.output("o1"), evaluator.output("o2")) == (5.0, 5.0)
        deep = "top2/" + "deeper/" * 15 + "delay"
        assert evaluator.output(deep) == 2.0
        ctx = getattr(evaluator, "ctx", None)
        if ctx is not None:
            path = NodePath.of(deep)
            assert path in ctx.states and len(path.parts) == 17 and path.leaf == "delay"
    finally:
        evaluator.close()


@pytest.mark.parametrize("incremental", [False, True])
def test_a_structural_edit_inside_reaches_every_instance_at_once(incremental: bool) -> None:
    """Without incremental builds the frame after the edit is lazy; with them it is flat at
    once (built from the stopped program); both show the edit in every instance."""
    patch = three_instances()
    dual = DualEvaluator(patch, debounce=0.0, background=False, incremental=incremental)
    try:
        dual.run_frame(0.0, 0)
        assert dual.wait_for_flat(30)
        dual.run_frame(1 / 60, 1)
        assert dual.mode == "flat"
        body = patch.definition("blob")
        body.set_value("inc", "b", 2.0)  # a value edit: stays flat
        dual.run_frame(2 / 60, 2)
        assert dual.mode == "flat"
        body.remove_node("gain")  # a structural one: the next frame shows it
        dual.run_frame(3 / 60, 3)
        assert dual.mode == ("flat" if incremental else "lazy")
        assert sinks(dual) == (6.0, 6.0, 6.0)
        assert dual.wait_for_flat(30)
        dual.run_frame(4 / 60, 4)
        assert dual.mode == "flat"
        assert sinks(dual) == (8.0, 8.0, 8.0)
        assert dual.program is not None and dual.program.derived == incremental
        assert not any(node_id.endswith("/gain") for node_id in dual.program.ir.index)
    finally:
        dual.close()


@pytest.mark.parametrize("kind", EVALUATOR_KINDS)
def test_an_outlet_added_while_running_gives_the_instance_a_second_output(kind: Any) -> None:
    """The instance's node in the view changes shape (one output, then two) under the same id:
    outputs kept from the old shape must not be given to the new one."""
    patch = three_instances()
    evaluator = evaluator_for_tests(kind, patch)
    try:
        for frame in range(2):
            evaluator.run_frame(frame / 60, frame)
        body = patch.definition("blob")
        body.add_node("subpatch.outlet", {"name": "count"}, node_id="outcount")
        body.connect("inc", "out", "outcount", "in")
        patch.add_node("output.value", node_id="o4")
        patch.connect("b1", "count", "o4", "in")
        for frame in range(2, 4):
            evaluator.run_frame(frame / 60, frame)
        assert sinks(evaluator) == (2.0 + 4, 4.0 + 4, 6.0 + 4)
        assert evaluator.output("o4") == 4.0
    finally:
        evaluator.close()


@pytest.mark.parametrize("kind", EVALUATOR_KINDS)
def test_arrays_set_on_an_instance_pin_reach_its_inlet(kind: Any) -> None:
    body = Patch()
    body.add_node("subpatch.inlet", {"name": "x"}, node_id="inx")
    body.add_node("array.sum", node_id="total")
    body.add_node("subpatch.outlet", {"name": "y"}, node_id="outy")
    body.connect("inx", "out", "total", "x")
    body.connect("total", "out", "outy", "in")
    patch = Patch()
    patch.add_definition("summed", body)
    patch.add_node("subpatch", {"definition": "summed", "x": np.ones(3)}, node_id="s1")
    patch.add_node("output.value", node_id="o1")
    patch.connect("s1", "y", "o1", "in")
    evaluator = evaluator_for_tests(kind, patch)
    try:
        evaluator.run_frame(0.0, 0)
        assert evaluator.output("o1") == 3.0
        patch.set_value("s1", "x", np.full(3, 2.0))
        evaluator.run_frame(1 / 60, 1)
        assert evaluator.output("o1") == 6.0
        patch.set_value("s1", "x", np.full(3, 2.0))  # an equal array: the same cache key
        evaluator.run_frame(2 / 60, 2)
        assert evaluator.output("o1") == 6.0
    finally:
        evaluator.close()


@pytest.mark.parametrize("kind", EVALUATOR_KINDS)
def test_removing_an_outlet_moves_the_others_and_their_consumers_follow(kind: Any) -> None:
    """`y` goes: `z`, read by the sink, becomes the instance's first output."""
    body = Patch()
    body.add_node("value.float", {"value": 1.0}, node_id="one")
    body.add_node("value.float", {"value": 2.0}, node_id="two")
    body.add_node("subpatch.outlet", {"name": "y"}, node_id="outy")
    body.add_node("subpatch.outlet", {"name": "z"}, node_id="outz")
    body.connect("one", "out", "outy", "in")
    body.connect("two", "out", "outz", "in")
    patch = Patch()
    patch.add_definition("pair", body)
    patch.add_node("subpatch", {"definition": "pair"}, node_id="p1")
    patch.add_node("output.value", node_id="o1")
    patch.connect("p1", "z", "o1", "in")
    evaluator = evaluator_for_tests(kind, patch)
    try:
        evaluator.run_frame(0.0, 0)
        assert evaluator.output("o1") == 2.0
        patch.definition("pair").remove_node("outy")
        evaluator.run_frame(1 / 60, 1)
        assert evaluator.output("o1") == 2.0
        assert evaluator.output("p1", "z") == 2.0
    finally:
        evaluator.close()


def test_an_outlet_nothing_feeds_gives_the_same_when_inlined() -> None:
    """Unfed, the outlet `y` gives its own value (None) to the sink: in the inlined patch too."""
    body = Patch()
    body.add_node("subpatch.outlet", {"name": "y"}, node_id="outy")
    patch = Patch()
    patch.add_definition("empty", body)
    patch.add_node("subpatch", {"definition": "empty"}, node_id="e1")
    patch.add_node("output.value", {"in": 5.0}, node_id="o1")
    patch.connect("e1", "y", "o1", "in")
    editable, played = LazyEvaluator(patch), LazyEvaluator(inlined(patch))
    try:
        editable.run_frame(0.0, 0)
        played.run_frame(0.0, 0)
        assert editable.output("o1") is None
        assert played.output("o1") is None
    finally:
        editable.close()
        played.close()


def test_inlets_outlets_and_instances_cost_the_flat_program_no_step() -> None:
    patch = three_instances()
    patch.add_node("time.seconds", node_id="clock")
    for i in (1, 2, 3):
        patch.connect("clock", "out", f"b{i}", "x")
    dual = DualEvaluator(patch, debounce=0.0, background=False)
    try:
        dual.run_frame(0.0, 0)
        assert dual.wait_for_flat(30)
        program = dual.program
        assert program is not None
        passing = {f"b{i}/{port}" for i in (1, 2, 3) for port in ("inx", "outy")}
        passing |= {"b1", "b2", "b3"}
        assert {program.ir.ids[i] for i in program.aliases} == passing
        stepped = {program.ir.ids[program.owner[out]] for _, _, out in program.hot_steps}
        assert not stepped & passing
        program.validate()
        for frame in range(1, 4):
            dual.run_frame(frame / 60, frame)
        assert dual.mode == "flat"
        seconds = 3 / 60
        assert sinks(dual) == tuple(2.0 * seconds + 4 for _ in (1, 2, 3))
        assert dual.output("b2/inx") == seconds
        assert dual.status("b2") == "ok"
    finally:
        dual.close()
