"""Which node a thread is computing right now, read from the thread's Python stack.

For a watchdog: when a frame runs far past its limit, another thread asks which node the frame
thread is inside, so that node can be bypassed when the engine restarts. Reading the stack costs
the evaluators nothing per node (no "current node" bookkeeping in the hot loops); the price is that
this module knows the loops that call compute functions and their locals: the step runtime's
(evaluators/run/steps.py, for flat programs and the lazy replay alike: the output slot `out` of the
step it runs, or the chunk `done` of generated code, whose frame's line gives the step) and the
lazy walk's one node at a time (`node_id`). Its tests run a hanging node in each evaluator.
"""

from __future__ import annotations

import sys
from types import FrameType

from evaluators.lazy import LazyEvaluator
from evaluators.run.steps import StepProgram

_LAZY_RUN = LazyEvaluator._run_node.__code__
# Step loops: the untimed one, its rest after a stale output, the timed copy and its rest, a
# range of a generated list, one node's steps.
_STEP_LOOPS = frozenset(
    method.__code__
    for method in (
        StepProgram.run_list,
        StepProgram._run_skipping,
        StepProgram.run_timed,
        StepProgram._run_timed_after,
        StepProgram._run_range,
        StepProgram.run_node_steps,
    )
)
# Generated code: a chunk called by `run_code` (the chunk's line gives the step).
_CHUNKS = StepProgram.run_code.__code__


def node_running_in(thread_id: int) -> str | None:
    """The id of the node whose compute the thread is inside (the innermost one), or None."""
    frame: FrameType | None = sys._current_frames().get(thread_id)
    inner: FrameType | None = None
    while frame is not None:
        code, local = frame.f_code, frame.f_locals
        program = local.get("self")
        if code in _STEP_LOOPS and isinstance(program, StepProgram) and "out" in local:
            return program.node_of_slot(local["out"])
        if code is _CHUNKS and isinstance(program, StepProgram) and inner is not None:
            hot = local.get("code")
            if hot is not None and "done" in local:
                step = hot.step_at(local["done"], inner.f_lineno)
                if 0 <= step < len(hot.steps):
                    return program.node_of_slot(hot.steps[step][2])
        if code is _LAZY_RUN:
            return str(local.get("node_id"))
        inner, frame = frame, frame.f_back
    return None
