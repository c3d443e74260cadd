"""How a patch runs: graph IR, analysis, the lazy / flat / dual evaluators, freezing.

Never imports Qt or NodeGraphQt.
"""

from evaluators._context import (
    CONST,
    HOT,
    USER,
    ExecutionContext,
    NodeBypassed,
    bind_compute,
)
from evaluators._dual import DualEvaluator
from evaluators._flat import FlatEvaluator, FlatProgram
from evaluators._freeze import Progress, freeze
from evaluators._graph import GraphIR, PatchSnapshot
from evaluators._lazy import LazyEvaluator
from evaluators._running import node_running_in

__all__ = [
    "CONST",
    "HOT",
    "USER",
    "DualEvaluator",
    "ExecutionContext",
    "FlatEvaluator",
    "FlatProgram",
    "GraphIR",
    "LazyEvaluator",
    "NodeBypassed",
    "PatchSnapshot",
    "Progress",
    "bind_compute",
    "freeze",
    "node_running_in",
]
