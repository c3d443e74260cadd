"""Graph queries written once: why a node runs (`explain`) and where its HOT class comes from.

The queries read a `QueryView`: a node's spec, the sources of its non-feedback inputs and its
class. The lazy evaluator answers from the live patch and its analysis (`PatchView`), a flat
program from its graph IR and the classes it computed (`ProgramView`); the texts are the same
wherever a node runs (the dual evaluator asks whichever half runs the node).

Each view keeps its own order of a node's sources (the live patch: input pin order; a program:
its edges' order), which decides the chain `explain` shows when a node has several HOT sources.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from evaluators.graph.analysis import OWN_CLASS, LiveAnalysis
from evaluators.graph.ir import FEEDBACK, GraphIR
from evaluators.graph.patch_graph import PatchGraph
from evaluators.insight.profiler import hot_chain
from evaluators.protocol import NodeClass, NodeStatus
from evaluators.run.context import HOT, ExecutionContext
from evaluators.run.observer import FrameObserver
from nodes import NodeSpec


class QueryView(Protocol):
    """What the queries read of a graph."""

    def spec(self, node_id: str) -> NodeSpec: ...

    def sources(self, node_id: str) -> Iterable[str]:
        """What feeds the node's linked inputs other than feedback ones, in the view's order."""
        ...

    def node_class(self, node_id: str) -> NodeClass: ...


class PatchView:
    """A live patch graph and its analysis (the lazy evaluator)."""

    def __init__(self, patch: PatchGraph, analysis: LiveAnalysis) -> None:
        self.patch = patch
        self.analysis = analysis

    def spec(self, node_id: str) -> NodeSpec:
        return self.patch.nodes[node_id].spec

    def sources(self, node_id: str) -> Iterable[str]:
        links = self.patch.links_into(node_id)
        for pin in self.patch.nodes[node_id].inputs:
            link = links.get(pin.name)
            if link is not None and not pin.feedback:
                yield link.src

    def node_class(self, node_id: str) -> NodeClass:
        return self.analysis.node_class(node_id)


class ProgramView:
    """A flat program's graph IR and classes."""

    def __init__(self, ir: GraphIR, classes: Sequence[NodeClass]) -> None:
        self.ir = ir
        self.classes = classes

    def spec(self, node_id: str) -> NodeSpec:
        return self.ir.nodes[self.ir.index[node_id]].spec

    def sources(self, node_id: str) -> Iterable[str]:
        ids = self.ir.ids
        return [ids[e.src] for e in self.ir.in_edges[self.ir.index[node_id]] if e.kind != FEEDBACK]

    def node_class(self, node_id: str) -> NodeClass:
        return self.classes[self.ir.index[node_id]]


def hot_sources(view: QueryView, node_id: str) -> list[str]:
    """The HOT nodes feeding `node_id` (feedback inputs left out)."""
    return [src for src in view.sources(node_id) if view.node_class(src) == HOT]


def own_hot(view: QueryView, node_id: str) -> bool:
    """True when the node is HOT by itself (non-deterministic), not through its sources."""
    return OWN_CLASS[view.spec(node_id).determinism] == HOT


def explain(
    view: QueryView,
    node_id: str,
    status: NodeStatus,
    observer: FrameObserver,
    ctx: ExecutionContext,
) -> list[str]:
    """Why the node runs (or is served from its cache), in plain words: its class (for a HOT
    node, the chain from the non-deterministic source to it), its last run and its reason (see
    `Profiler.explain`)."""
    cls = view.node_class(node_id)
    if cls == HOT:
        chain = hot_chain(
            node_id, lambda node: hot_sources(view, node), lambda node: own_hot(view, node)
        )
    else:
        chain = [node_id]
    return observer.profiler.explain(
        node_id, cls, chain, view.spec(chain[0]).id, status, ctx.bypassed.get(node_id), ctx.frame
    )
