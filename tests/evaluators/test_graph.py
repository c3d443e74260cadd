"""The graph IR: queries, traversals, topological order and cycle refusal, checked against
networkx; and a 100,000-node chain through the IR and both evaluators."""

from __future__ import annotations

import itertools
import random

import networkx as nx
import pytest

from evaluators import FlatEvaluator, GraphIR, LazyEvaluator, PatchSnapshot
from evaluators.graph.ir import EAGER, FEEDBACK, LAZY
from nodes import CycleError, InputOccupiedError, Patch

ALL_KINDS = frozenset({EAGER, LAZY, FEEDBACK})


def ir_of(patch: Patch) -> GraphIR:
    return GraphIR(PatchSnapshot.of(patch))


@pytest.fixture
def diamond() -> tuple[Patch, dict[str, str]]:
    """a -> b, a -> c, b -> d, c -> d, d -> out; a delay fed back from d; a lazy switch input."""
    patch = Patch()
    ids = {
        "a": patch.add_node("value.float", node_id="a"),
        "b": patch.add_node("math.sin", node_id="b"),
        "c": patch.add_node("math.cos", node_id="c"),
        "d": patch.add_node("math.add", node_id="d"),
        "out": patch.add_node("output.value", node_id="out"),
        "delay": patch.add_node("util.frame_delay", node_id="delay"),
        "sw": patch.add_node("logic.switch", node_id="sw"),
        "lonely": patch.add_node("value.float", node_id="lonely"),
    }
    patch.connect("a", "out", "b", "x")
    patch.connect("a", "out", "c", "x")
    patch.connect("b", "out", "d", "a")
    patch.connect("c", "out", "d", "b")
    patch.connect("d", "out", "sw", "in0")
    patch.connect("sw", "out", "out", "in")
    patch.connect("d", "out", "delay", "in")  # feedback
    patch.connect("delay", "out", "sw", "index")
    return patch, ids


def test_queries(diamond) -> None:
    patch, _ = diamond
    ir = ir_of(patch)
    n = ir.index
    assert len(ir) == 8
    assert ir.ids == list(patch.nodes)
    assert ir.in_degree(n["d"]) == 2 and ir.out_degree(n["d"]) == 2
    assert ir.in_degree(n["a"]) == 0 and ir.out_degree(n["a"]) == 2
    assert ir.in_degree(n["delay"]) == 1  # the feedback edge counts as an edge
    assert sorted(ir.predecessors(n["d"])) == sorted([n["b"], n["c"]])
    assert sorted(ir.successors(n["a"])) == sorted([n["b"], n["c"]])
    # feedback edges are left out of dependencies unless asked for
    assert ir.successors(n["d"]) == [n["sw"]]
    assert sorted(ir.successors(n["d"], ALL_KINDS)) == sorted([n["sw"], n["delay"]])
    assert ir.predecessors(n["delay"]) == []
    assert ir.predecessors(n["delay"], frozenset({FEEDBACK})) == [n["d"]]
    assert sorted(ir.predecessors(n["sw"])) == sorted([n["d"], n["delay"]])
    kinds = {(ir.ids[e.src], ir.ids[e.dst]): e.kind for edges in ir.out_edges for e in edges}
    assert kinds[("d", "sw")] == LAZY
    assert kinds[("delay", "sw")] == EAGER
    assert kinds[("d", "delay")] == FEEDBACK
    assert sorted(ir.ids[i] for i in ir.sources()) == ["a", "lonely"]
    assert sorted(ir.ids[i] for i in ir.sources_over(frozenset({EAGER, LAZY}))) == [
        "a",
        "delay",
        "lonely",
    ]
    assert [ir.ids[i] for i in ir.sinks()] == ["out"]
    assert ir.upstream([n["out"]], frozenset({EAGER, LAZY})) == {
        n[k] for k in ("out", "sw", "d", "b", "c", "a", "delay")
    }
    assert "digraph" in ir.to_dot()


def names(ir: GraphIR, visits) -> list[str]:
    return [ir.ids[i] for i in visits]


def test_traversal_first(diamond) -> None:
    patch, _ = diamond
    ir = ir_of(patch)
    a = ir.index["a"]
    assert names(ir, ir.traverse([a], order="dfs")) == ["a", "b", "d", "sw", "out", "c"]
    assert names(ir, ir.traverse([a], order="bfs")) == ["a", "b", "c", "d", "sw", "out"]
    up = names(ir, ir.traverse([ir.index["d"]], direction="up", order="bfs"))
    assert up == ["d", "b", "c", "a"]


def test_traversal_last_is_topological(diamond) -> None:
    patch, _ = diamond
    ir = ir_of(patch)
    for order in ("dfs", "bfs"):
        visits = names(ir, ir.traverse([ir.index["a"]], order=order, strategy="last"))
        assert sorted(visits) == sorted(["a", "b", "c", "d", "sw", "out"])
        assert visits.index("d") > max(visits.index("b"), visits.index("c"))
        assert visits.index("out") == len(visits) - 1
        # going up, a node comes after everything that depends on it
        up = names(ir, ir.traverse([ir.index["out"]], direction="up", order=order, strategy="last"))
        assert up[0] == "out" and up.index("a") > max(up.index("b"), up.index("c"))
        assert up.index("sw") < min(up.index("d"), up.index("delay"))


def test_traversal_all_visits_once_per_path(diamond) -> None:
    patch, _ = diamond
    ir = ir_of(patch)
    for order in ("dfs", "bfs"):
        visits = names(ir, ir.traverse([ir.index["a"]], order=order, strategy="all"))
        # two paths reach d, and everything after it
        assert sorted(visits) == sorted(["a", "b", "c", "d", "d", "sw", "sw", "out", "out"])
    assert names(ir, ir.traverse([ir.index["a"]], order="bfs", strategy="all"))[:3] == [
        "a",
        "b",
        "c",
    ]


def test_traversals_terminate_with_feedback_edges(diamond) -> None:
    patch, _ = diamond
    ir = ir_of(patch)
    for order in ("dfs", "bfs"):
        for strategy in ("first", "last", "all"):
            visits = list(ir.traverse([ir.index["a"]], order=order, strategy=strategy))
            assert ir.index["delay"] not in visits  # only reached through the feedback edge
        # following feedback edges too, visit-first still terminates on the loop
        visits = names(ir, ir.traverse([ir.index["a"]], order=order, kinds=ALL_KINDS))
        assert sorted(visits) == sorted(["a", "b", "c", "d", "sw", "out", "delay"])


def test_traversal_with_several_roots_and_duplicate_edges() -> None:
    patch = Patch()
    a = patch.add_node("value.float")
    b = patch.add_node("value.float")
    add = patch.add_node("math.add")
    mul = patch.add_node("math.mul")
    patch.connect(a, "out", add, "a")
    patch.connect(a, "out", add, "b")  # two edges between the same nodes
    patch.connect(add, "out", mul, "a")
    patch.connect(b, "out", mul, "b")
    ir = ir_of(patch)
    for order in ("dfs", "bfs"):
        visits = names(ir, ir.traverse([ir.index[b], ir.index[a]], order=order, strategy="last"))
        assert sorted(visits) == sorted([a, b, add, mul])
        assert visits[-1] == mul
        first = names(ir, ir.traverse([ir.index[a], ir.index[a]], order=order))
        assert sorted(first) == sorted([a, add, mul])


# ----------------------------------------------------------------------------- random DAGs


RANDOM_TYPES = ["value.float", "math.add", "math.mix", "logic.switch", "util.frame_delay"]


def random_patch(rng: random.Random, size: int) -> tuple[Patch, list[str]]:
    """A random DAG of math/logic nodes, plus frame delays fed back from later nodes."""
    patch = Patch()
    ids: list[str] = []
    for _ in range(size):
        node = patch.add_node(rng.choice(RANDOM_TYPES))
        pins = [p.name for p in patch.nodes[node].inputs if not p.feedback]
        for pin in pins:
            if ids and rng.random() < 0.6:
                patch.connect(rng.choice(ids), "out", node, pin)
        ids.append(node)
    # feedback edges from later nodes into earlier delays: loops, but only through feedback
    for node in ids:
        if patch.nodes[node].type_id == "util.frame_delay" and rng.random() < 0.8:
            later = ids[ids.index(node) :]
            patch.connect(rng.choice(later), "out", node, "in")
    return patch, ids


def networkx_graph(patch: Patch, feedback: bool = False) -> nx.MultiDiGraph:
    graph = nx.MultiDiGraph()
    graph.add_nodes_from(patch.nodes)
    for link in patch.links:
        pin = patch.nodes[link.dst].input(link.dst_pin)
        if feedback or not pin.feedback:
            graph.add_edge(link.src, link.dst)
    return graph


@pytest.mark.parametrize("seed", range(30))
def test_topological_order_against_networkx(seed: int) -> None:
    rng = random.Random(seed)
    patch, ids = random_patch(rng, rng.randint(1, 60))
    graph = networkx_graph(patch)
    assert nx.is_directed_acyclic_graph(graph)
    full = networkx_graph(patch, feedback=True)
    ir = ir_of(patch)
    order = names(ir, ir.topological_order())
    assert sorted(order) == sorted(ids)  # every node exactly once
    position = {node: k for k, node in enumerate(order)}
    for src, dst in graph.edges():
        assert position[src] < position[dst]
    # the same through a traversal from the sources, both orders
    for how in ("dfs", "bfs"):
        sources = ir.sources_over(frozenset({EAGER, LAZY}))
        visits = names(ir, ir.traverse(sources, order=how, strategy="last"))
        assert sorted(visits) == sorted(ids)
        position = {node: k for k, node in enumerate(visits)}
        assert all(position[s] < position[d] for s, d in graph.edges())
        # visit-first reaches exactly what networkx reaches
        root = rng.choice(ids)
        reached = set(names(ir, ir.traverse([ir.index[root]], order=how)))
        assert reached == {root} | nx.descendants(graph, root)
        up = set(names(ir, ir.traverse([ir.index[root]], order=how, direction="up")))
        assert up == {root} | nx.ancestors(graph, root)
        with_feedback = set(names(ir, ir.traverse([ir.index[root]], order=how, kinds=ALL_KINDS)))
        assert with_feedback == {root} | nx.descendants(full, root)


@pytest.mark.parametrize("seed", range(30))
def test_cycle_refusal_against_networkx(seed: int) -> None:
    rng = random.Random(1000 + seed)
    patch, ids = random_patch(rng, rng.randint(2, 40))
    for _ in range(60):
        src, dst = rng.choice(ids), rng.choice(ids)
        free = [
            p
            for p in patch.nodes[dst].inputs
            if patch.link_into(dst, p.name) is None and p.type in ("float", "num", "any")
        ]
        if not free:
            continue
        pin = rng.choice(free)
        graph = networkx_graph(patch)
        closes_cycle = not pin.feedback and nx.has_path(graph, dst, src)
        links_before = patch.links
        if closes_cycle:
            with pytest.raises(CycleError) as caught:
                patch.connect(src, "out", dst, pin.name)
            cycle = caught.value.cycle
            assert cycle[0] == dst and cycle[-1] == dst and cycle[-2] == src
            assert all(graph.has_edge(u, v) for u, v in itertools.pairwise(cycle[:-1]))
            assert patch.links == links_before
        else:
            patch.connect(src, "out", dst, pin.name)
            assert nx.is_directed_acyclic_graph(networkx_graph(patch))
            with pytest.raises(InputOccupiedError):
                patch.connect(src, "out", dst, pin.name)


# ----------------------------------------------------------------------------- long chains

CHAIN = 100_000


@pytest.fixture(scope="module")
def long_chain() -> tuple[Patch, list[str]]:
    patch = Patch()
    ids = [patch.add_node("value.float", {"value": 0.5})]
    for _ in range(CHAIN - 2):
        node = patch.add_node("math.add", {"b": 1.0})
        patch.connect(ids[-1], "out", node, "a")
        ids.append(node)
    sink = patch.add_node("output.value")
    patch.connect(ids[-1], "out", sink, "in")
    ids.append(sink)
    return patch, ids


def test_long_chain_topological_order(long_chain) -> None:
    patch, ids = long_chain
    ir = ir_of(patch)
    assert names(ir, ir.topological_order()) == ids
    assert names(ir, ir.traverse([ir.index[ids[-1]]], direction="up")) == ids[::-1]
    assert len(ir.upstream([ir.index[ids[-1]]], frozenset({EAGER}))) == CHAIN


@pytest.mark.parametrize("evaluator_type", [LazyEvaluator, FlatEvaluator])
def test_long_chain_evaluates(long_chain, evaluator_type) -> None:
    patch, ids = long_chain
    evaluator = evaluator_type(patch)
    try:
        evaluator.run_frame(0.0, 0)
        assert evaluator.output(ids[-1]) == 0.5 + (CHAIN - 2)
        assert evaluator.status(ids[-1]) == "ok"
        assert evaluator.nodes_run == CHAIN
        # a value edit at the top reruns the whole chain, iteratively
        patch.set_value(ids[0], "value", 1.5)
        evaluator.run_frame(1 / 60, 1)
        assert evaluator.output(ids[-1]) == 1.5 + (CHAIN - 2)
        assert evaluator.nodes_run == 2 * CHAIN
        evaluator.run_frame(2 / 60, 2)
        assert evaluator.nodes_run == 2 * CHAIN
    finally:
        evaluator.close()
        patch.set_value(ids[0], "value", 0.5)
