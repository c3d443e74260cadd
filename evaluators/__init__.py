"""How a patch runs: graph IR, analysis, the lazy / flat / dual evaluators, freezing.

Clients hold an `Evaluator` (the protocol every strategy satisfies) made by `make_evaluator`.

Never imports Qt or NodeGraphQt.
"""

from evaluators.controls.runtime import Controls
from evaluators.dual import DualEvaluator
from evaluators.factory import EVALUATOR_KINDS, EvaluatorKind, make_evaluator
from evaluators.flat.memory_order import memory_order, peak_memory
from evaluators.flat.program import FlatEvaluator, FlatProgram
from evaluators.freezing import Progress, freeze
from evaluators.graph.ir import GraphIR, PatchSnapshot
from evaluators.graph.patch_graph import PatchGraph
from evaluators.graph.path import NodePath
from evaluators.graph.view import ExpandedPatch, inlined
from evaluators.insight.profiler import Profiler
from evaluators.lazy import LazyEvaluator
from evaluators.protocol import Evaluator, EvaluatorMode, NodeClass, NodeStatus
from evaluators.run.context import CONST, HOT, USER, ExecutionContext, bind_compute
from evaluators.run.observer import FrameObserver
from evaluators.run.watchdog import node_running_in
from evaluators.services.registry import ServiceStatus

# The built-in control sources register themselves, in the order their services are opened and
# their events taken: OSC, then MIDI.
from evaluators.controls import osc  # noqa: F401  # isort: skip
from evaluators.controls import midi  # noqa: F401  # isort: skip

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
