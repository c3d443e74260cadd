"""The graph IR: an immutable, index-based picture of a patch that evaluators compile from.

A `PatchSnapshot` copies what evaluation needs out of the live patch, a `PatchGraph` (taken on the
thread that edits, cheap: shallow copies), so a background thread can build a program while the
person keeps editing. `GraphIR` numbers the snapshot's nodes 0..n-1 and keeps edges as integer
adjacency lists, with the queries of a graph library (in/out degree, predecessors, successors,
sources, sinks).

Edges have a kind: `EAGER` (evaluated before the node), `LAZY` (pulled by the node on demand) and
`FEEDBACK` (read from the previous frame). Feedback edges are the only ones allowed in cycles, so
every traversal that follows dependencies skips them and stays acyclic.

Traversals are iterative (no Python recursion: a 100,000-node chain is fine), depth-first or
breadth-first, with three strategies: `first` visits a node when first reached, `last` when the
last of its parents (over the traversed edges) has been visited, which is a topological order, and
`all` on every edge that reaches it.

`GraphIR.derived` makes the graph of a newer patch from an older graph in time proportional to
what changed (evaluators/flat/incremental.py): kept nodes keep their indices, removed ones stay as
`dead` indices with no edges (left out of sources and sinks), added ones are appended, and only the
input links of the nodes whose stamps changed are read again.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from evaluators.flat.build_steps import STEP_ITEMS, BuildSteps, finish
from evaluators.graph.patch_graph import PatchGraph
from nodes import Link, NodeSpec, PinSpec

EAGER, LAZY, FEEDBACK = 0, 1, 2


class NodeSnapshot(NamedTuple):
    id: str
    spec: NodeSpec
    values: dict[str, Any]
    inputs: tuple[PinSpec, ...]
    stamp: int


@dataclass(frozen=True)
class PatchSnapshot:
    """What evaluation needs from a patch at one revision; never changes after creation."""

    revision: int
    value_revision: int
    nodes: tuple[NodeSnapshot, ...]
    links: tuple[Link, ...]

    @classmethod
    def of(cls, patch: PatchGraph) -> PatchSnapshot:
        # No copies: the Patch replaces a node's values dict on every edit, never changes it.
        nodes = tuple(
            NodeSnapshot(n.id, n.spec, n.values, n.inputs, n.stamp) for n in patch.nodes.values()
        )
        return cls(patch.revision, patch.value_revision, nodes, tuple(patch.links))


def _pin_named(pins: tuple[PinSpec, ...], name: str) -> PinSpec:
    for pin in pins:
        if pin.name == name:
            return pin
    raise KeyError(name)


class Edge(NamedTuple):
    src: int
    src_pin: str
    dst: int
    dst_pin: str
    kind: int


class GraphIR:
    """Integer-indexed nodes and typed edges of a snapshot, plus traversal."""

    def __init__(self, snapshot: PatchSnapshot) -> None:
        finish(self._filling(snapshot))

    @classmethod
    def building(cls, snapshot: PatchSnapshot) -> BuildSteps[GraphIR]:
        """The graph of `snapshot`, made by steps (evaluators/flat/build_steps.py)."""
        ir = cls.__new__(cls)
        yield from ir._filling(snapshot)
        return ir

    def _filling(self, snapshot: PatchSnapshot) -> BuildSteps[None]:
        self.links: Collection[Link] = snapshot.links
        self.nodes: Sequence[NodeSnapshot] = snapshot.nodes
        self.ids = [node.id for node in snapshot.nodes]
        self.index = {node_id: i for i, node_id in enumerate(self.ids)}
        self.in_edges: list[list[Edge]] = [[] for _ in self.ids]
        self.out_edges: list[list[Edge]] = [[] for _ in self.ids]
        self.dead: frozenset[int] = frozenset()  # indices of removed nodes (derived graphs)
        self.not_eager = 0  # how many lazy and feedback edges there are
        for count, link in enumerate(snapshot.links, 1):
            if count % STEP_ITEMS == 0:
                yield
            edge = self._edge(link)
            self.in_edges[edge.dst].append(edge)
            self.out_edges[edge.src].append(edge)
            self.not_eager += edge.kind != EAGER

    def _edge(self, link: Link) -> Edge:
        dst = self.index[link.dst]
        pin = _pin_named(self.nodes[dst].inputs, link.dst_pin)
        kind = FEEDBACK if pin.feedback else LAZY if pin.lazy else EAGER
        return Edge(self.index[link.src], link.src_pin, dst, link.dst_pin, kind)

    @classmethod
    def derived(
        cls,
        previous: GraphIR,
        links: Collection[Link],
        changed: dict[int, NodeSnapshot],
        renewed: dict[int, NodeSnapshot],
        added: list[NodeSnapshot],
        removed: list[int],
        links_into: dict[str, list[Link]],
    ) -> GraphIR:
        """The graph of a newer patch with these `links`, made from `previous` (see the module
        note): `changed` maps
        kept indices whose links may differ to their new node snapshots, `renewed` those whose
        links are the same, `added` lists new nodes, `removed` the indices that are gone, and
        `links_into` the links into every changed or added node (by id)."""
        ir = cls.__new__(cls)
        ir.links = links
        nodes = ir.nodes = list(previous.nodes)
        ids, index = ir.ids, ir.index = list(previous.ids), dict(previous.index)
        in_edges, out_edges = ir.in_edges, ir.out_edges = (
            list(previous.in_edges),
            list(previous.out_edges),
        )
        ir.not_eager = previous.not_eager
        dropped: dict[int, set[Edge]] = {}  # per source node, out-edges that are gone
        made: dict[int, list[Edge]] = {}  # per source node, new out-edges
        for i in removed:
            del index[ids[i]]
            for edge in in_edges[i]:
                dropped.setdefault(edge.src, set()).add(edge)
            ir.not_eager -= sum(edge.kind != EAGER for edge in in_edges[i])
            in_edges[i] = []
            out_edges[i] = []  # what they fed was relinked: those nodes are in `changed`
        for i, node in (changed | renewed).items():
            nodes[i] = node
        for node in added:
            index[node.id] = len(ids)
            ids.append(node.id)
            nodes.append(node)
            in_edges.append([])
            out_edges.append([])
        ir.dead = previous.dead.union(removed)
        for i in [*changed, *range(len(previous.ids), len(ids))]:
            for edge in in_edges[i]:
                dropped.setdefault(edge.src, set()).add(edge)
            ir.not_eager -= sum(edge.kind != EAGER for edge in in_edges[i])
            edges = in_edges[i] = [ir._edge(link) for link in links_into.get(ids[i], ())]
            for edge in edges:
                made.setdefault(edge.src, []).append(edge)
            ir.not_eager += sum(edge.kind != EAGER for edge in edges)
        for src in dropped.keys() | made.keys():
            gone = dropped.get(src, set())
            out_edges[src] = [e for e in out_edges[src] if e not in gone] + made.get(src, [])
        return ir

    def __len__(self) -> int:
        return len(self.ids)

    def in_degree(self, node: int) -> int:
        return len(self.in_edges[node])

    def out_degree(self, node: int) -> int:
        return len(self.out_edges[node])

    def predecessors(
        self, node: int, kinds: frozenset[int] = frozenset({EAGER, LAZY})
    ) -> list[int]:
        return [edge.src for edge in self.in_edges[node] if edge.kind in kinds]

    def successors(self, node: int, kinds: frozenset[int] = frozenset({EAGER, LAZY})) -> list[int]:
        return [edge.dst for edge in self.out_edges[node] if edge.kind in kinds]

    def sources(self) -> list[int]:
        """Nodes with no incoming links."""
        dead = self.dead
        return [i for i in range(len(self)) if not self.in_edges[i] and i not in dead]

    def sinks(self) -> list[int]:
        """Nodes whose spec is a sink (outputs, previews, side effects)."""
        dead = self.dead
        return [i for i, node in enumerate(self.nodes) if node.spec.sink and i not in dead]

    def traverse(
        self,
        roots: Iterable[int],
        *,
        direction: Literal["up", "down"] = "down",
        order: Literal["dfs", "bfs"] = "dfs",
        strategy: Literal["first", "last", "all"] = "first",
        kinds: frozenset[int] = frozenset({EAGER, LAZY}),
    ) -> Iterator[int]:
        """Visit nodes reachable from `roots` along edges of `kinds`.

        `direction="down"` follows links from outputs to inputs, `"up"` goes against them.
        With `strategy="last"` a node is visited once all of its parents within the traversed
        region were visited: a topological order (reversed dependencies when going up).
        Feedback edges are left out by default, so the traversal always terminates.
        """
        forward = self.out_edges if direction == "down" else self.in_edges
        backward = self.in_edges if direction == "down" else self.out_edges

        def next_of(edge: Edge) -> int:
            return edge.dst if direction == "down" else edge.src

        root_list = list(dict.fromkeys(roots))
        waiting: dict[int, int] = {}
        if strategy == "last":
            region = set(self.traverse(root_list, direction=direction, kinds=kinds))
            for node in region:
                waiting[node] = sum(
                    1
                    for edge in backward[node]
                    if edge.kind in kinds
                    and (edge.src if direction == "down" else edge.dst) in region
                )
            root_list = [node for node in root_list if waiting[node] == 0]
        frontier: deque[int] = deque(root_list)
        pop = frontier.pop if order == "dfs" else frontier.popleft
        seen: set[int] = set(root_list)
        while frontier:
            node = pop()
            yield node
            following = [next_of(e) for e in forward[node] if e.kind in kinds]
            if order == "dfs":
                following.reverse()
            for nxt in following:
                if strategy == "all":
                    frontier.append(nxt)
                elif strategy == "first":
                    if nxt not in seen:
                        seen.add(nxt)
                        frontier.append(nxt)
                else:
                    waiting[nxt] -= 1
                    if waiting[nxt] == 0:
                        frontier.append(nxt)

    def topological_order(self, kinds: frozenset[int] = frozenset({EAGER, LAZY})) -> list[int]:
        """All nodes, every node after the sources of its links of `kinds` (Kahn's algorithm)."""
        return list(self.topological_traversal(kinds))

    def topological_traversal(
        self, kinds: frozenset[int] = frozenset({EAGER, LAZY})
    ) -> Iterator[int]:
        """`topological_order`, node by node."""
        return self.traverse(self.sources_over(kinds), strategy="last", kinds=kinds)

    def sources_over(self, kinds: frozenset[int]) -> list[int]:
        dead = self.dead
        return [
            i
            for i in range(len(self))
            if i not in dead and not any(e.kind in kinds for e in self.in_edges[i])
        ]

    def upstream(self, roots: Iterable[int], kinds: frozenset[int]) -> set[int]:
        """Roots and every node they depend on through edges of `kinds`."""
        return set(self.traverse(roots, direction="up", kinds=kinds))

    def to_dot(self) -> str:
        """Graphviz text of the graph, for debugging."""
        style = {EAGER: "solid", LAZY: "dashed", FEEDBACK: "dotted"}
        lines = ["digraph patch {"]
        lines += [
            f'  n{i} [label="{node.id}\\n{node.spec.id}"];'
            for i, node in enumerate(self.nodes)
            if i not in self.dead
        ]
        for edges in self.out_edges:
            lines += [
                f'  n{e.src} -> n{e.dst} [label="{e.src_pin}->{e.dst_pin}" style={style[e.kind]}];'
                for e in edges
            ]
        return "\n".join([*lines, "}"])
