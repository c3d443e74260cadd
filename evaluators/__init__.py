"""How a patch runs: graph IR, analysis, the lazy / flat / dual evaluators, freezing.

Clients hold an `Evaluator` (the protocol every strategy satisfies) made by `make_evaluator`.

Never imports Qt or NodeGraphQt.
"""

from evaluators._context import (
    CONST,
    HOT,
    USER,
    ExecutionContext,
    bind_compute,
)
from evaluators._controls import Controls
from evaluators._dual import DualEvaluator
from evaluators._factory import EVALUATOR_KINDS, EvaluatorKind, make_evaluator
from evaluators._flat import FlatEvaluator, FlatProgram
from evaluators._freeze import Progress, freeze
from evaluators._graph import GraphIR, PatchSnapshot
from evaluators._lazy import LazyEvaluator
from evaluators._memory_order import memory_order, peak_memory
from evaluators._observer import FrameObserver
from evaluators._patch_graph import PatchGraph
from evaluators._path import NodePath
from evaluators._profiler import Profiler
from evaluators._protocol import Evaluator, EvaluatorMode, NodeClass, NodeStatus
from evaluators._running import node_running_in
from evaluators._services import ServiceStatus
from evaluators._view import ExpandedPatch, inlined

# The built-in control sources register themselves, in the order their services are opened and
# their events taken: OSC, then MIDI.
from evaluators import _osc_controls  # noqa: F401  # isort: skip
from evaluators import _midi_controls  # noqa: F401  # isort: skip

__all__ = [
    "CONST",
    "EVALUATOR_KINDS",
    "HOT",
    "USER",
    "Controls",
    "DualEvaluator",
    "Evaluator",
    "EvaluatorKind",
    "EvaluatorMode",
    "ExecutionContext",
    "ExpandedPatch",
    "FlatEvaluator",
    "FlatProgram",
    "FrameObserver",
    "GraphIR",
    "LazyEvaluator",
    "NodeClass",
    "NodePath",
    "NodeStatus",
    "PatchGraph",
    "PatchSnapshot",
    "Profiler",
    "Progress",
    "ServiceStatus",
    "bind_compute",
    "freeze",
    "inlined",
    "make_evaluator",
    "memory_order",
    "node_running_in",
    "peak_memory",
]
