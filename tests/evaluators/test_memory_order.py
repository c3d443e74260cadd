"""memory_order and its cost model: valid topological orders on random DAGs (networkx as the
oracle), cycles refused by name, never worse than DFS order on layered graphs, known optima on
hand-made graphs, and peak_memory worked out by hand on tiny cases."""

from __future__ import annotations

import re

import networkx as nx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.bench.layered_graphs import layered_graph
from evaluators import memory_order, peak_memory
from evaluators.flat.memory_order import beam_order, bfs_order, dfs_order

Successors = dict[str, list[str]]


@st.composite
def dags(
    draw: st.DrawFn, max_nodes: int = 30, min_nodes: int = 0
) -> tuple[Successors, dict[str, float]]:
    """A random DAG: edges only go from a lower to a higher rank of a shuffled naming; some
    nodes appear only as consumers (no key of their own); sizes may be 0."""
    count = draw(st.integers(min_nodes, max_nodes))
    names = draw(st.permutations([f"v{i}" for i in range(count)]))
    pairs = [(i, j) for i in range(count) for j in range(i + 1, count)]
    edges = draw(st.lists(st.sampled_from(pairs), max_size=3 * count)) if pairs else []
    successors: Successors = {}
    for i, name in enumerate(names):
        consumers = [names[j] for a, j in edges if a == i]
        if consumers or draw(st.booleans()):
            successors[name] = consumers
    sizes = {name: draw(st.floats(0, 100, allow_nan=False, allow_infinity=False)) for name in names}
    return successors, sizes


def graph_of(successors: Successors) -> nx.DiGraph:
    graph = nx.DiGraph()
    for node, consumers in successors.items():
        graph.add_node(node)
        graph.add_edges_from((node, consumer) for consumer in consumers)
    return graph


def assert_topological(order: list[str], graph: nx.DiGraph) -> None:
    assert sorted(order) == sorted(graph.nodes)
    assert len(order) == len(set(order))
    position = {node: index for index, node in enumerate(order)}
    for source, target in graph.edges:
        assert position[source] < position[target], (source, target)


def networkx_dfs_order(graph: nx.DiGraph) -> list[str]:
    return list(reversed(list(nx.dfs_postorder_nodes(graph))))


def optimum(successors: Successors, output: dict[str, float], scratch: dict[str, float]) -> float:
    return min(
        peak_memory(order, successors, output, scratch)
        for order in nx.all_topological_sorts(graph_of(successors))
    )


@settings(max_examples=150, deadline=None)
@given(dags())
def test_orders_are_topological_orders_of_every_node(dag: tuple[Successors, dict]) -> None:
    successors, sizes = dag
    graph = graph_of(successors)
    assert nx.is_directed_acyclic_graph(graph)
    scratch = {name: size / 2 for name, size in sizes.items()}
    assert_topological(memory_order(successors, sizes, scratch), graph)
    assert_topological(memory_order(successors, sizes), graph)
    assert_topological(dfs_order(successors), graph)
    assert_topological(bfs_order(successors), graph)
    assert_topological(beam_order(successors, sizes, scratch, width=4), graph)


@settings(max_examples=100, deadline=None)
@given(dags(max_nodes=15, min_nodes=1), st.data())
def test_a_cycle_is_refused_naming_a_node_on_it(dag: tuple[Successors, dict], data) -> None:
    successors, sizes = dag
    graph = graph_of(successors)
    graph.add_nodes_from(sizes)  # nodes named nowhere in successors join through the new edge
    path_end = data.draw(st.sampled_from(sorted(graph.nodes)))
    ancestors = sorted(nx.ancestors(graph, path_end) | {path_end})
    back_to = data.draw(st.sampled_from(ancestors))
    successors.setdefault(path_end, []).append(back_to)  # closes a cycle (or a self-loop)
    cyclic = graph_of(successors)
    on_cycles = {node for node in cyclic if cyclic.has_edge(node, node)}
    for component in nx.strongly_connected_components(cyclic):
        if len(component) > 1:
            on_cycles |= component
    for order_of in (lambda: memory_order(successors, sizes), lambda: bfs_order(successors),
                     lambda: dfs_order(successors)):  # fmt: skip
        with pytest.raises(ValueError, match="cycle") as raised:
            order_of()
        named = re.search(r"'([^']+)'", str(raised.value))
        assert named is not None and named.group(1) in on_cycles


@pytest.mark.parametrize("seed", range(12))
def test_never_worse_than_dfs_order_on_layered_graphs(seed: int) -> None:
    graph = layered_graph(300, seed)
    args = (graph.successors, graph.output_bytes, graph.scratch_bytes)
    order = memory_order(*args)
    assert_topological(order, graph_of(graph.successors))
    peak = peak_memory(order, *args)
    assert peak <= peak_memory(dfs_order(graph.successors), *args)
    assert peak <= peak_memory(networkx_dfs_order(graph_of(graph.successors)), *args)
    assert peak < peak_memory(bfs_order(graph.successors), *args)


def test_layered_graphs_have_layers_linked_in_order_and_skips() -> None:
    graph = layered_graph(500, 3)
    assert sum(len(layer) for layer in graph.layers) == 500
    layer_of = {name: index for index, layer in enumerate(graph.layers) for name in layer}
    jumps = [layer_of[t] - layer_of[s] for s, ts in graph.successors.items() for t in ts]
    assert min(jumps) >= 1 and max(jumps) >= 2  # adjacent layers plus skip connections
    for index, layer in enumerate(graph.layers):
        for name in layer:  # every inner node has an input and a consumer
            if index < len(graph.layers) - 1:
                assert graph.successors[name]
            if index > 0:
                assert any(name in ts for ts in graph.successors.values())
    for layer in graph.layers:  # sizes are drawn per layer
        assert len({graph.output_bytes[name] for name in layer}) == 1
    assert graph == layered_graph(500, 3)


def test_finishes_one_branch_before_starting_the_other() -> None:
    """r feeds two branches that each make a big value and shrink it; running them one after
    the other needs 12, interleaving them 21."""
    successors = {"r": ["x1", "y1"], "x1": ["x2"], "y1": ["y2"], "x2": ["j"], "y2": ["j"]}
    output = {"r": 1, "x1": 10, "x2": 1, "y1": 10, "y2": 1, "j": 1}
    assert peak_memory(["r", "x1", "y1", "x2", "y2", "j"], successors, output) == 21
    assert optimum(successors, output, {}) == 12
    assert peak_memory(memory_order(successors, output), successors, output) == 12


def test_runs_a_node_with_big_scratch_while_little_is_live() -> None:
    """k needs 100 of scratch; running it before p makes its 50-byte output live costs 102,
    after it 152."""
    successors = {"s": ["p", "k"], "p": ["j"], "k": ["j"]}
    output = {"s": 1, "p": 50, "k": 1, "j": 1}
    scratch = {"k": 100}
    assert peak_memory(["s", "p", "k", "j"], successors, output, scratch) == 152
    assert optimum(successors, output, scratch) == 102
    assert memory_order(successors, output, scratch) == ["s", "k", "p", "j"]


@settings(max_examples=60, deadline=None)
@given(dags(max_nodes=7, min_nodes=1))
def test_the_beam_and_memory_order_find_the_optimum_on_tiny_graphs(
    dag: tuple[Successors, dict],
) -> None:
    """With state collapsing and a beam as wide as the number of node sets, the beam search is
    the exact dynamic programme; brute force over every topological order agrees. On graphs
    this small memory_order runs such a beam too, so it finds the optimum."""
    successors, sizes = dag
    best = optimum(successors, sizes, {})
    order = beam_order(successors, sizes, width=1 << 10)
    assert peak_memory(order, successors, sizes) == pytest.approx(best)
    # memory_order's own beam is wider than the 35 node sets a 7-node graph can have per step
    assert peak_memory(memory_order(successors, sizes), successors, sizes) == pytest.approx(best)


def test_peak_memory_of_a_chain() -> None:
    successors = {"a": ["b"], "b": ["c"]}
    output = {"a": 1, "b": 2, "c": 3}
    # a: 1; b: a + b = 3 (a freed after); c: b + c = 5 (c has no consumer, freed at once)
    assert peak_memory(["a", "b", "c"], successors, output) == 5
    # b's scratch counts only while b runs: 1 + 2 + 10
    assert peak_memory(["a", "b", "c"], successors, output, {"b": 10}) == 13


def test_an_output_without_consumers_is_freed_at_once() -> None:
    successors = {"a": ["b"], "z": []}
    output = {"a": 1, "b": 2, "z": 4}
    assert peak_memory(["z", "a", "b"], successors, output) == 4  # z: 4, a: 1, b: 1 + 2
    assert peak_memory(["a", "z", "b"], successors, output) == 5  # z runs while a is live
    assert peak_memory(memory_order(successors, output), successors, output) == 4


def test_an_output_lives_until_its_last_consumer_has_run() -> None:
    successors = {"a": ["b", "c"], "b": ["d"]}
    output = {"a": 2, "b": 1, "c": 5, "d": 1}
    # a: 2; b: 2 + 1 = 3; c: a 2 + b 1 + c 5 = 8 (a freed after c); d: b 1 + d 1 = 2
    assert peak_memory(["a", "b", "c", "d"], successors, output) == 8
    # a: 2; b: 3; d: 3 + 1 = 4 (b freed); c: a 2 + 5 = 7
    assert peak_memory(["a", "b", "d", "c"], successors, output) == 7
    assert peak_memory(memory_order(successors, output), successors, output) == 7


def test_consumer_only_nodes_duplicates_and_empty_graphs() -> None:
    assert memory_order({"a": ["b"]}, {"a": 1, "b": 1}) == ["a", "b"]
    assert memory_order({}, {}) == []
    # a consumer listed twice is one edge: a is freed once, after b
    assert peak_memory(["a", "b"], {"a": ["b", "b"]}, {"a": 3, "b": 1}) == 4


@pytest.mark.parametrize(
    ("order", "problem"),
    [
        (["b", "a"], "runs 'b' before its input 'a'"),
        (["a"], "every node of the graph exactly once"),
        (["a", "b", "b"], "every node of the graph exactly once"),
        (["a", "x"], "'x', which is not in the graph"),
    ],
)
def test_peak_memory_refuses_an_order_that_is_not_topological(
    order: list[str], problem: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        peak_memory(order, {"a": ["b"]}, {"a": 1, "b": 1})


def test_ten_thousand_nodes() -> None:
    graph = layered_graph(10_000, 1)
    args = (graph.successors, graph.output_bytes, graph.scratch_bytes)
    order = memory_order(*args)
    assert_topological(order, graph_of(graph.successors))
    assert peak_memory(order, *args) <= peak_memory(dfs_order(graph.successors), *args)
