"""The patch-wide memory budget (`limits.memory_bytes`): a node whose result would bring what the
patch holds over it fails with one line naming the budget and its use, what already plays keeps
its outputs and the frames go on, in every evaluator alike; removing a node gives its bytes back."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from evaluators import ExecutionContext
from evaluators.run.memory_budget import MemoryMeter, result_bytes, shown_bytes
from nodes import LIBRARY, Determinism, Patch, node
from nodes.limits import DEFAULT_LIMITS, MIB, active_limits, set_active_limits

COUNT = MIB  # elements of each big array: 8 MiB of float64
BUDGET = 20 * MIB  # room for two of them, not three


@pytest.fixture(autouse=True)
def small_budget() -> Iterator[None]:
    """The budget as `--limit memory_bytes=...` sets it, and a HOT node making a big array."""

    @node("test.big_hot", determinism=Determinism.NONDETERMINISTIC)
    def big_hot(count: int = 16) -> np.ndarray:
        return np.zeros(count)

    before = active_limits()
    set_active_limits(DEFAULT_LIMITS.replaced(memory_bytes=BUDGET))
    yield
    set_active_limits(before)
    del LIBRARY["test.big_hot"]


def big_patch(bigs: int) -> Patch:
    """`bigs` arrays of COUNT numbers, each summed into a sink, beside a clock that plays."""
    patch = Patch()
    patch.add_node("time.frame", None, node_id="clock")
    patch.add_node("output.value", None, node_id="shown")
    patch.connect("clock", "out", "shown", "in")
    for k in range(1, bigs + 1):
        add_big(patch, f"big{k}")
    return patch


def add_big(patch: Patch, name: str, type_id: str = "array.range") -> None:
    patch.add_node(type_id, {"count": COUNT}, node_id=name)
    patch.add_node("array.sum", None, node_id=f"{name}_sum")
    patch.add_node("output.value", None, node_id=f"{name}_out")
    patch.connect(name, "out", f"{name}_sum", "x")
    patch.connect(f"{name}_sum", "out", f"{name}_out", "in")


def run(evaluator: Any, frames: range) -> None:
    for frame in frames:
        evaluator.run_frame(frame / 60, frame)


SUM = COUNT * (COUNT - 1) / 2
OVER = (
    "memory budget: result of 8.00 MiB would bring use to 24.0 MiB of 20.0 MiB "
    "(limits.memory_bytes); bypassed, retry to run it again"
)


def test_the_node_that_would_pass_the_budget_fails_and_the_rest_plays_on(
    make_evaluator: Callable[..., Any],
) -> None:
    patch = big_patch(2)
    evaluator = make_evaluator(patch)
    run(evaluator, range(3))
    assert evaluator.output("big1_out") == evaluator.output("big2_out") == SUM
    assert evaluator.ctx.memory.use == 16 * MIB
    add_big(patch, "big3")  # a third would pass the budget
    run(evaluator, range(3, 10))
    assert evaluator.status("big3") == "failed"
    assert evaluator.error("big3") == OVER
    assert evaluator.output("big1_out") == evaluator.output("big2_out") == SUM
    assert evaluator.output("big3_out") == 0.0  # never got the array
    assert evaluator.output("shown") == 9  # the clock kept playing to the last frame
    assert evaluator.ctx.memory.use == 16 * MIB
    patch.remove_node("big1")  # gives its 8 MiB back: the third fits when it runs again
    patch.set_value("big3", "count", COUNT - 1)  # an edit gives a bypassed node another chance
    run(evaluator, range(10, 13))
    assert evaluator.error("big3") is None
    assert evaluator.output("big3_out") == (COUNT - 1) * (COUNT - 2) / 2
    assert evaluator.ctx.memory.use == 16 * MIB - 8


def test_a_hot_node_that_would_pass_the_budget_is_bypassed_in_every_evaluator(
    make_evaluator: Callable[..., Any],
) -> None:
    patch = big_patch(2)
    evaluator = make_evaluator(patch)
    run(evaluator, range(3))
    add_big(patch, "hot", "test.big_hot")
    run(evaluator, range(3, 10))
    assert evaluator.status("hot") == "failed"
    assert evaluator.error("hot") == OVER
    assert evaluator.output("big1_out") == evaluator.output("big2_out") == SUM
    assert evaluator.output("shown") == 9
    assert evaluator.ctx.memory.use == 16 * MIB


def test_an_edit_that_makes_a_result_smaller_gives_the_difference_back(
    make_evaluator: Callable[..., Any],
) -> None:
    patch = big_patch(2)
    evaluator = make_evaluator(patch)
    run(evaluator, range(2))
    patch.set_value("big2", "count", COUNT // 4)
    run(evaluator, range(2, 4))
    assert evaluator.ctx.memory.use == 10 * MIB
    add_big(patch, "big3")  # fits now
    run(evaluator, range(4, 8))
    assert evaluator.output("big3_out") == SUM
    assert evaluator.ctx.memory.use == 18 * MIB


def test_the_meter_counts_arrays_only_and_refuses_without_changing_anything() -> None:
    meter = MemoryMeter(budget=100)
    assert result_bytes((np.zeros(4), 3.0, "text", np.zeros(2, np.uint8))) == 34
    assert meter.charge("a", (np.zeros(10),)) is None and meter.use == 80
    assert meter.charge("b", (np.zeros(4),)) == (
        "memory budget: result of 32 bytes would bring use to 112 bytes of 100 bytes "
        "(limits.memory_bytes)"
    )
    assert meter.use == 80 and "b" not in meter.held
    assert meter.charge("a", (np.zeros(2),)) is None and meter.use == 16  # replaced: smaller
    meter.release("a")
    assert meter.use == 0 and meter.held == {}
    assert shown_bytes(3 * 1024**3 // 2) == "1.50 GiB"


def test_the_default_budget_is_half_the_machine_s_memory() -> None:
    import os

    ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert DEFAULT_LIMITS.memory_bytes == ram // 2
    assert ExecutionContext().memory.budget == BUDGET  # the limits in force


def test_a_context_keeping_only_the_live_nodes_gives_back_what_the_others_held() -> None:
    ctx = ExecutionContext()
    ctx.memory.charge("gone", (np.zeros(4),))  # e.g. a HOT node whose outputs a program held
    ctx.memory.charge("kept", (np.zeros(2),))
    ctx.keep_only({"kept"})  # a new patch without it
    assert ctx.memory.held == {"kept": 16} and ctx.memory.use == 16
