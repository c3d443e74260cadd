"""Analysis: which nodes run every frame (HOT), on user edits (USER) or once (CONST), and the
cache key of every node that is not HOT.

- HOT: the node or an ancestor is non-deterministic (time, noise, streams).
- USER: depends on user inputs (and constants) only.
- CONST: deterministic all the way up.

Ancestors are reached through eager and lazy links; feedback links are left out (a node with a
feedback input is non-deterministic itself, so it is HOT anyway).

A cache key is a hash of the node's type, its `stamp` (which changes on every value edit of the
node and every link made or removed at its inputs) and, per input pin, the key and pin of what is
linked to it. Equal keys mean the same inputs since the node last changed, so a structural edit
elsewhere keeps a subgraph's cached results, and a value edit changes exactly the keys of the
edited node's downstream cone. (Keys never repeat after an edit, even one an undo reverts: what a
stateful node did in between is part of its result.) The key of a node that keeps state also
holds its id, its execution path: nodes of identical instances share stamps, hence keys
(evaluators/graph/view.py), but not state, so nothing downstream of a stateful node is served
another instance's result (each instance's stateful node runs and keeps its own memory).

`node_info` is the rule for one node, and the only place it is written: `LiveAnalysis` answers
for a live patch graph (what the lazy walker reads), memoizing per node and forgetting only the
downstream cone of what an edit touched; `analyze` computes everything at once for a snapshot
(flat programs). Both call `node_info`.
"""

from __future__ import annotations

from collections.abc import Iterable

from evaluators.flat.build_steps import STEP_ITEMS, BuildSteps, finish
from evaluators.graph.ir import EAGER, FEEDBACK, LAZY, GraphIR
from evaluators.graph.patch_graph import PatchGraph
from evaluators.protocol import NodeClass
from evaluators.run.context import CLASS_RANK, CONST, HOT, USER
from nodes import Determinism, EditOp, PatchEvent

OWN_CLASS = {
    Determinism.DETERMINISTIC: CONST,
    Determinism.USER_INPUT: USER,
    Determinism.NONDETERMINISTIC: HOT,
}
_BY_RANK = {rank: name for name, rank in CLASS_RANK.items()}


def node_key(type_id: str, stamp: int, inputs: tuple[object, ...]) -> int:
    return hash((type_id, stamp, inputs))


def analyze(ir: GraphIR, order: list[int]) -> tuple[list[NodeClass], list[int]]:
    """Class and cache key of every node of `ir`, given a topological `order`."""
    return finish(analyzing(ir, order))


def analyzing(ir: GraphIR, order: list[int]) -> BuildSteps[tuple[list[NodeClass], list[int]]]:
    """`analyze`, by steps (evaluators/flat/build_steps.py)."""
    classes = [CONST] * len(ir)
    keys = [0] * len(ir)
    for count, i in enumerate(order, 1):
        if count % STEP_ITEMS == 0:
            yield
        classes[i], keys[i] = ir_node_info(ir, i, classes, keys)
    return classes, keys


def node_info(
    type_id: str,
    determinism: Determinism,
    stamp: int,
    sources: Iterable[tuple[NodeClass, int, str] | None],
    state_path: str | None = None,
) -> tuple[NodeClass, int]:
    """The rule, for every evaluator: class and cache key of a node from its type, determinism and
    stamp and, per input pin in order, `(class, key, src_pin)` of what its non-feedback link comes
    from, or None (no link, or a feedback one). `state_path`: the node's id if it keeps state."""
    rank = CLASS_RANK[OWN_CLASS[determinism]]
    inputs: list[tuple[int, str] | None] = []
    for source in sources:
        if source is None:
            inputs.append(None)
        else:
            src_class, src_key, src_pin = source
            src_rank = CLASS_RANK[src_class]
            if src_rank > rank:
                rank = src_rank
            inputs.append((src_key, src_pin))
    cls = _BY_RANK[rank]
    if cls == HOT:
        return cls, 0
    own = stamp if state_path is None else hash((stamp, state_path))
    return cls, node_key(type_id, own, tuple(inputs))


def ir_node_info(
    ir: GraphIR, i: int, classes: list[NodeClass], keys: list[int], stamp: int | None = None
) -> tuple[NodeClass, int]:
    """Class and key of node `i` from those of its sources (and its stamp, by default the one
    in the snapshot)."""
    node = ir.nodes[i]
    by_pin = {e.dst_pin: e for e in ir.in_edges[i] if e.kind != FEEDBACK}
    sources = [
        None if edge is None else (classes[edge.src], keys[edge.src], edge.src_pin)
        for edge in map(by_pin.get, [pin.name for pin in node.inputs])
    ]
    stamp = node.stamp if stamp is None else stamp
    state_path = node.id if node.spec.stateful else None
    return node_info(node.spec.id, node.spec.determinism, stamp, sources, state_path)


class LiveAnalysis:
    """Class and key per node of a live patch, kept up to date through its change events."""

    def __init__(self, patch: PatchGraph) -> None:
        self.patch = patch
        # Invariant: if a node is memoized, so are all of its ancestors.
        self.memo: dict[str, tuple[NodeClass, int]] = {}

    def info(self, node_id: str) -> tuple[NodeClass, int]:
        found = self.memo.get(node_id)
        if found is not None:
            return found
        memo, patch = self.memo, self.patch
        stack = [node_id]
        while stack:
            current = stack[-1]
            if current in memo:
                stack.pop()
                continue
            instance = patch.nodes[current]
            links = patch.links_into(current)
            missing = [
                link.src
                for pin in instance.inputs
                if not pin.feedback
                and (link := links.get(pin.name)) is not None
                and link.src not in memo
            ]
            if missing:
                stack.extend(missing)
                continue
            sources = [
                None
                if pin.feedback or (link := links.get(pin.name)) is None
                else (*memo[link.src], link.src_pin)
                for pin in instance.inputs
            ]
            spec = instance.spec
            state_path = current if spec.stateful else None
            memo[current] = node_info(
                spec.id, spec.determinism, instance.stamp, sources, state_path
            )
            stack.pop()
        return memo[node_id]

    def node_class(self, node_id: str) -> NodeClass:
        return self.info(node_id)[0]

    def forget_cone(self, node_id: str) -> None:
        """Forget the node and everything downstream of it (stopping where nothing is memoized)."""
        memo, patch = self.memo, self.patch
        stack = [node_id]
        while stack:
            current = stack.pop()
            if memo.pop(current, None) is None:
                continue
            stack.extend(link.dst for link in patch.links_out_of(current))

    def on_event(self, event: PatchEvent) -> None:
        if event.op in (EditOp.SET_VALUE, EditOp.PINS) and event.node_id is not None:
            self.forget_cone(event.node_id)
        elif event.op in (EditOp.CONNECT, EditOp.DISCONNECT) and event.link is not None:
            self.forget_cone(event.link.dst)
        elif event.op == EditOp.REMOVE_NODE and event.node_id is not None:
            self.memo.pop(event.node_id, None)


__all__ = ["EAGER", "FEEDBACK", "LAZY", "LiveAnalysis", "analyze", "node_info", "node_key"]
