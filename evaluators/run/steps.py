"""The step runtime: how step lists run, for flat programs and the lazy replay alike.

A step is `(call, get, out)`: `slots[out] = call(*get(slots))`, `get` an itemgetter of argument
slots (evaluators/flat/program.py compiles a patch into such lists, the lazy replay in
evaluators/lazy.py records one). `StepProgram` is what both are: a slot list, which node owns
each output slot, and where a node's failure, deferral or bypass is reported. Its loops are the
only ones that run steps:

- `run_list`: the untimed loop. No per-step try: a step that raises leaves its slot untouched
  (the last good value), is reported (`record_failure`), and the loop resumes after it.
- Stale cone: when the failed node's last output went back to the texture pool (`stale_cone`
  says what it feeds), the rest of the list runs without the steps of that cone, which keep what
  they showed last (another node may have drawn into the target since).
- `run_timed`: the timed copy, one clock read a step, the differences taken afterwards; a node
  over `ctx.time_budget` is bypassed, unless the garbage collector ran during the list (then
  `timing` asks for another timed run instead).
- `run_code`: generated chunks (evaluators/flat/codegen.py); a chunk not generated yet, and the rest
  of a chunk after a failing step, run as the step loop.
- `run_node_steps`: one node's steps (a CONST/USER or lazily pulled node), stopping at a failure.

The watchdog (evaluators/run/watchdog.py) names a hung node from these loops alone: each holds the
output slot of the step it runs in the local `out` (generated chunks: the chunk in `done`, the
line of its frame gives the step) and `self` is the program, which maps the slot to its node.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from operator import itemgetter
from typing import Any

import numpy as np

from evaluators.flat.codegen import HotCode
from evaluators.protocol import NodeStatus
from evaluators.run.context import ExecutionContext, busy_clock, collector_seconds, error_text
from evaluators.run.observer import FrameObserver
from nodes import Deferred

Step = tuple[Callable[..., Any], Callable[[list[Any]], Any], int]
_OUT = itemgetter(2)


def step_indices(steps: list[Step]) -> dict[int, int]:
    """Output slot -> position of each step of a list."""
    return dict(zip(map(_OUT, steps), range(len(steps)), strict=True))


class StepProgram:
    """Runs step lists over `slots` (see the module note). A subclass holds `slots`, `ctx`,
    `observer` and `_step_index`, and says which node owns an output slot
    (`step_owners`), what the node is called (`step_node_id`), and what a deferred node means
    to it (`step_deferred`). Nodes are keys of the subclass's choosing."""

    # time the next run of a list step by step (the last one ran over the budget)
    __slots__ = ("timing",)

    slots: list[Any]
    ctx: ExecutionContext
    observer: FrameObserver
    timing: bool
    _step_index: dict[int, dict[int, int]]  # id of a list -> its `step_indices`

    # ------------------------------------------------------------ what a subclass says
    def step_owners(self) -> Mapping[int, Any]:
        """Output slot -> the node whose step writes it."""
        raise NotImplementedError

    def step_node_id(self, node: Any) -> str:
        raise NotImplementedError

    def step_deferred(self, node: Any) -> None:
        """The node raised `Deferred`: its value is not settled this frame."""

    def stale_cone(self, node: Any) -> set[Any]:
        """The nodes that must not run after `node` failed: what it feeds when its last output
        went back to the pool (none by default)."""
        return set()

    # ------------------------------------------------------------ reports
    def record_failure(self, node: Any, problem: Exception) -> None:
        node_id = self.step_node_id(node)
        if isinstance(problem, Deferred):
            self.observer.status[node_id] = NodeStatus.DEFERRED
            self.step_deferred(node)
        else:
            self.observer.status[node_id] = NodeStatus.FAILED
            self.observer.errors[node_id] = error_text(problem)

    def bypass(self, node: Any, seconds: float) -> None:
        """The node ran over the time budget: bypassed from the next frame on."""
        node_id = self.step_node_id(node)
        self.observer.status[node_id] = NodeStatus.FAILED
        self.observer.errors[node_id] = self.ctx.bypass(node_id, seconds)

    def node_of_slot(self, out: int) -> str:
        """The id of the node whose step writes slot `out` (for the watchdog)."""
        return self.step_node_id(self.step_owners()[out])

    def step_position(self, steps: list[Step], out: int) -> int:
        """Where the step writing `out` is in `steps` (indexed on the first failure in it)."""
        index = self._step_index.get(id(steps))
        if index is None:
            index = self._step_index[id(steps)] = step_indices(steps)
        return index[out]

    # ------------------------------------------------------------ the loops
    def run_list(self, steps: list[Step]) -> None:
        """Every step in order; a failing step is reported and the loop resumes after it."""
        slots = self.slots
        start = 0
        while True:
            try:
                for call, get, out in steps[start:] if start else steps:
                    slots[out] = call(*get(slots))
                return
            except Exception as problem:
                node = self.step_owners()[out]
                self.record_failure(node, problem)
                start = self.step_position(steps, out) + 1
                cone = self.stale_cone(node)
                if cone:
                    self._run_skipping(steps[start:], cone)
                    return

    def _run_skipping(self, steps: list[Step], skipped: set[Any]) -> None:
        """The rest of a list after a failed node with a stale output: the steps of `skipped`
        nodes (and of the stale cones of nodes failing meanwhile) do not run."""
        slots, owner = self.slots, self.step_owners()
        for call, get, out in steps:
            node = owner[out]
            if node in skipped:
                continue
            try:
                slots[out] = call(*get(slots))
            except Exception as problem:
                self.record_failure(node, problem)
                skipped |= self.stale_cone(node)

    def run_timed(self, steps: list[Step]) -> tuple[np.ndarray, np.ndarray]:
        """The loop with a clock read after each step: bypasses the nodes over the budget.
        Returns the start (on `busy_clock`) and the seconds of each step. Does nothing else per
        step until one raises (`_run_timed_after`)."""
        slots, clock = self.slots, time.perf_counter
        collected = collector_seconds()
        offset = busy_clock() - clock()
        stamps = [clock()]
        stamp = stamps.append
        try:
            for call, get, out in steps:
                slots[out] = call(*get(slots))
                stamp(clock())
        except Exception as problem:
            self._run_timed_after(steps, len(stamps) - 1, problem, stamps)
        ends = np.asarray(stamps)
        times = np.diff(ends)
        over = np.flatnonzero(times > self.ctx.time_budget)
        if over.size and collector_seconds() != collected:
            self.timing = True  # the collector ran: time the steps again
        elif over.size:
            owner = self.step_owners()
            for k in over.tolist():
                self.bypass(owner[steps[k][2]], float(times[k]))
        return ends[:-1] + offset, times

    def _run_timed_after(
        self, steps: list[Step], failed: int, problem: Exception, stamps: list[float]
    ) -> None:
        """The rest of a timed list from step `failed`, which raised `problem` (stale cones
        skipped as in `_run_skipping`); a clock read is appended to `stamps` after each step."""
        slots, clock, stamp = self.slots, time.perf_counter, stamps.append
        owner = self.step_owners()
        node = owner[steps[failed][2]]
        self.record_failure(node, problem)
        skipped = self.stale_cone(node)
        stamp(clock())
        for call, get, out in steps[failed + 1 :]:
            node = owner[out]
            if node not in skipped:
                try:
                    slots[out] = call(*get(slots))
                except Exception as raised:
                    self.record_failure(node, raised)
                    skipped |= self.stale_cone(node)
            stamp(clock())

    def run_code(self, code: HotCode) -> None:
        """Every step of `code`'s list in order, as its generated chunks (those missing run as
        the step loop); a step that raises is reported and the rest of its chunk runs as the
        step loop. The generated code is not made for lists with stale cones."""
        chunks: list[Any] = code.chunks
        starts, steps = code.starts, code.steps
        done = 0  # chunks finished
        while True:
            try:
                for chunk in chunks[done:] if done else chunks:
                    if chunk is None:
                        self._run_range(steps, starts[done], starts[done + 1])
                    else:
                        chunk(self.slots)
                    done += 1
                return
            except Exception as problem:
                n = code.failed_step(done, problem)
                self.record_failure(self.step_owners()[steps[n][2]], problem)
                self._run_range(steps, n + 1, starts[done + 1])
                done += 1

    def _run_range(self, steps: list[Step], start: int, end: int) -> None:
        """Steps `start` to `end` (excluded) of a list, a failing step reported."""
        slots = self.slots
        for n in range(start, end):
            call, get, out = steps[n]
            try:
                slots[out] = call(*get(slots))
            except Exception as problem:
                self.record_failure(self.step_owners()[out], problem)

    def run_node_steps(self, steps: list[Step]) -> Exception | None:
        """One node's steps; the first that raises is reported and ends them. Returns it."""
        slots = self.slots
        for call, get, out in steps:
            try:
                slots[out] = call(*get(slots))
            except Exception as problem:
                self.record_failure(self.step_owners()[out], problem)
                return problem
        return None
