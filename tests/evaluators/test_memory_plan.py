"""The flat program's HOT list in memory order: it keeps every dependency of the steps, including
what a lazily pulled sub-program reads of a HOT node, and it is planned with measured sizes."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.bench.patches import layered_dag
from evaluators import ExecutionContext, FlatEvaluator, FlatProgram, GraphIR, PatchSnapshot
from evaluators.flat import memory_plan
from evaluators.flat.memory_plan import hot_dependencies
from nodes import Patch
from tests.evaluators.test_equivalence import play_random


def test_a_node_pulling_a_sub_program_runs_after_the_hot_nodes_it_reads() -> None:
    """switch pulls `doubled` (outside the main program), which reads the HOT `clock`: the
    switch depends on the clock although no link joins them."""
    patch = Patch()
    clock = patch.add_node("time.seconds")
    doubled = patch.add_node("math.add")
    patch.connect(clock, "out", doubled, "a")
    patch.connect(clock, "out", doubled, "b")
    switch = patch.add_node("logic.switch", {"index": 1.0})
    patch.connect(doubled, "out", switch, "in1")
    sink = patch.add_node("output.value")
    patch.connect(switch, "out", sink, "in")
    shown = patch.add_node("output.value")  # the clock is in the main program too
    patch.connect(clock, "out", shown, "in")
    program = FlatProgram(PatchSnapshot.of(patch), ExecutionContext())
    ir = program.ir
    assert ir.index[doubled] not in program.main and ir.index[clock] in program.main
    hot = [i for i in program.in_order if program.classes[i] == "HOT"]
    dependencies = hot_dependencies(ir, hot)
    assert ir.index[switch] in dependencies[ir.index[clock]]
    program.validate()
    evaluator = FlatEvaluator(patch)
    evaluator.run_frame(0.5, 30)
    assert evaluator.output(sink) == 1.0


def test_validate_finds_a_hot_node_before_a_pulled_input_it_depends_on() -> None:
    patch = Patch()
    clock = patch.add_node("time.seconds")
    doubled = patch.add_node("math.add")
    patch.connect(clock, "out", doubled, "a")
    switch = patch.add_node("logic.switch", {"index": 1.0})
    patch.connect(doubled, "out", switch, "in1")
    sink = patch.add_node("output.value")
    patch.connect(switch, "out", sink, "in")
    shown = patch.add_node("output.value")
    patch.connect(clock, "out", shown, "in")
    program = FlatProgram(PatchSnapshot.of(patch), ExecutionContext())
    program.hot_steps.sort(key=lambda step: program.owner[step[2]] != program.ir.index[switch])
    with pytest.raises(ValueError, match="out of topological order"):
        program.validate()


def test_the_hot_order_is_planned_again_with_measured_sizes() -> None:
    patch = layered_dag(300)
    evaluator = FlatEvaluator(patch)
    evaluator.run_frame(0.0, 0)
    program = evaluator.program
    assert program is not None
    program.validate()
    hot = [i for i in program.in_order if program.classes[i] == "HOT"]
    assert sorted(program.sizes) == sorted(program.main)
    for i in hot:
        value = program.slots[program.node_slots[i][0]]
        expected = value.nbytes if isinstance(value, np.ndarray) else 1
        assert program.sizes[i] == max(expected, 1)
    evaluator.run_frame(1 / 60, 1)
    program.validate()
    assert len({program.owner[out] for _, _, out in program.hot_steps}) == len(hot)
    assert GraphIR(PatchSnapshot.of(patch)).topological_order()  # the patch is a DAG


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_evaluators_agree_with_every_hot_list_in_memory_order(data: st.DataObject) -> None:
    """The equivalence property with every HOT list reordered by memory_order, whatever its
    sizes (random patches hold small values, which are otherwise left in their order)."""
    with mock.patch.object(memory_plan, "WORTH_ORDERING", 0.0):
        play_random(data, subpatches=data.draw(st.booleans()))
