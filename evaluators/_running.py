"""Which node a thread is computing right now, read from the thread's Python stack.

For a watchdog: when a frame runs far past its limit, another thread asks which node the frame
thread is inside, so that node can be bypassed when the engine restarts. Reading the stack costs
the evaluators nothing per node (no "current node" bookkeeping in the hot loops); the price is that
this module knows the names of the evaluators' run methods (generated HOT code included) and
their locals, so it lives beside them and its test runs a hanging node in each evaluator.
"""

from __future__ import annotations

import sys
from types import FrameType

from evaluators._codegen import HotCode
from evaluators._flat import FlatProgram
from evaluators._lazy import LazyEvaluator, _Replay

_LAZY_RUN = LazyEvaluator._run_node.__code__
# A lazy frame replayed as a step list, and its timed copy.
_LAZY_REPLAY = (_Replay._run.__code__, _Replay._run_timed.__code__)
# The HOT loop, and its timed copy that runs after a frame over the time budget.
_FLAT_LIST = (FlatProgram._run_list.__code__, FlatProgram._run_timed.__code__)
_FLAT_SINGLE = (
    FlatProgram._run_cold.__code__,
    FlatProgram.pull.__code__,
    FlatProgram._run_steps_timed.__code__,
)
# The generated HOT code: a chunk (called by `run`, the chunk's line gives the step) and the
# step loop that finishes a chunk after a failure.
_HOT_RUN, _HOT_LOOP = HotCode.run.__code__, HotCode._run_loop.__code__


def node_running_in(thread_id: int) -> str | None:
    """The id of the node whose compute the thread is inside (the innermost one), or None."""
    frame: FrameType | None = sys._current_frames().get(thread_id)
    inner: FrameType | None = None
    while frame is not None:
        code, local = frame.f_code, frame.f_locals
        hot = local.get("self")
        if code in (_HOT_RUN, _HOT_LOOP) and isinstance(hot, HotCode):
            program = hot.owner
            if code is _HOT_RUN and inner is not None and "done" in local:
                step = hot.step_at(local["done"], inner.f_lineno)
            else:
                step = local.get("n", -1)
            if isinstance(program, FlatProgram) and 0 <= step < len(hot.steps):
                return program.ir.ids[program.owner[hot.steps[step][2]]]
        if code is _LAZY_RUN:
            return str(local.get("node_id"))
        if code in _LAZY_REPLAY and isinstance(hot, _Replay) and "out" in local:
            return hot._failure_map()[0].get(local["out"])
        program = local.get("self")
        if code in _FLAT_LIST and isinstance(program, FlatProgram) and "out" in local:
            return program.ir.ids[program.owner[local["out"]]]
        if code in _FLAT_SINGLE and isinstance(program, FlatProgram) and "i" in local:
            return program.ir.ids[local["i"]]
        inner, frame = frame, frame.f_back
    return None
