"""Memory plan of a flat program's HOT list: its order and when HOT outputs go back to the pool.

Order: the HOT nodes of the main program run in `memory_order` (evaluators/flat/memory_order.py)
over the HOT subgraph, each node's output counted with its size in bytes (`value_bytes`:
textures width x height x channels x bytes per channel, arrays their nbytes, anything else 1).
Sizes are measured on the program's outputs; before a node has an output, it counts 1. Only
a HOT list with an output of at least `WORTH_ORDERING` bytes is reordered. The
order keeps every dependency the steps have: eager links, lazy links from a node of the main
program (the pull reads what the source computed this frame), and what a lazily pulled
sub-program outside the HOT list reads of it.

Release: a HOT node whose output is a render target it took from the GL service's pool (its
state has `release_output`, as `GPUTargets` has) gives that target back after its last consumer
in the frame ran, and takes one from the pool again at its next run, so a long chain of GPU
passes needs a few targets, not one per node. Kept, never released: outputs that must survive
the frame (roots: sinks, watched and previewed nodes; CONST/USER results, which are not HOT),
sources of feedback and lazy links, nodes read by something outside the HOT main program or by a
pass-through node (which shares their slot), and nodes with several outputs. A release is a step
like any other, placed right after the last consumer's steps; it checks that the target is
still the node's own and that no consumer passed it on unchanged. The state remembers what it
gave back (`gave_back`): the flat program does not let anything read that target as the node's
last output.

Assumes: node indices are those of the program's `GraphIR`; `hot` lists HOT nodes of the main
program in a topological order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from evaluators.flat.memory_order import memory_order
from evaluators.graph.ir import EAGER, LAZY, GraphIR

_DEPENDS = frozenset({EAGER, LAZY})
# Outputs smaller than this many bytes do not make a memory order worth its cost (memory_order
# takes about 30 ms on a thousand nodes, on the build thread, holding the interpreter).
WORTH_ORDERING = 64 * 1024
_SCALARS = frozenset({float, int, bool, str, type(None)})
_CHANNEL_BYTES = {"f1": 1, "f2": 2, "f4": 4, "u1": 1, "u2": 2, "u4": 4, "i1": 1, "i2": 2, "i4": 4}


def value_bytes(value: Any) -> float:
    """The memory an output holds: a texture's pixels, an array's bytes, else 1."""
    if type(value) in _SCALARS:  # most outputs: no attribute lookups
        return 1.0
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int):
        return float(max(nbytes, 1))
    size, components = getattr(value, "size", None), getattr(value, "components", None)
    if isinstance(components, int) and isinstance(size, tuple) and len(size) == 2:
        width, height = size
        channel = _CHANNEL_BYTES.get(str(getattr(value, "dtype", "f1")), 1)
        return float(max(width * height * components * channel, 1))
    return 1.0


def hot_dependencies(ir: GraphIR, hot: Collection[int]) -> dict[int, list[int]]:
    """Per HOT node, the HOT nodes that must run after it: its eager and lazy consumers, and
    the nodes that pull it through a lazy input from outside `hot` (a guarded sub-program
    reading its slot when it is pulled)."""
    members = set(hot)
    successors = {
        i: [e.dst for e in ir.out_edges[i] if e.kind in _DEPENDS and e.dst in members] for i in hot
    }
    for i in hot:
        outside = [e.src for e in ir.in_edges[i] if e.kind == LAZY and e.src not in members]
        if outside:
            for j in ir.traverse(outside, direction="up", kinds=_DEPENDS):
                if j in members and j != i and i not in successors[j]:
                    successors[j].append(i)
    return successors


def hot_order(ir: GraphIR, hot: Sequence[int], sizes: Mapping[int, float]) -> list[int]:
    """The HOT nodes in `memory_order` with output `sizes` (missing: 1). The order stays as it
    is when no output is worth it (all under `WORTH_ORDERING` bytes: scalars, small arrays) and
    for a chain (no node with two consumers or two HOT inputs): there is nothing to choose."""
    if max(sizes.values(), default=1.0) < WORTH_ORDERING or not any(
        sizes.get(i, 1.0) >= WORTH_ORDERING for i in hot
    ):
        return list(hot)
    successors = hot_dependencies(ir, hot)
    if all(len(consumers) <= 1 for consumers in successors.values()):
        inputs = [0] * len(ir)
        for consumers in successors.values():
            for j in consumers:
                inputs[j] += 1
        if all(inputs[i] <= 1 for i in hot):
            return list(hot)
    names = {str(i): i for i in hot}
    order = memory_order(
        {str(i): [str(j) for j in consumers] for i, consumers in successors.items()},
        {str(i): sizes.get(i, 1.0) for i in hot},
    )
    return [names[name] for name in order]


def releasable(
    ir: GraphIR,
    hot: Collection[int],
    roots: Collection[int],
    aliases: Collection[int],
    single_output: Callable[[int], bool],
    state_of: Callable[[int], Any],
) -> dict[int, Callable[[Any], Any]]:
    """The HOT nodes whose output may go back to the pool after their last consumer, with the
    state method that does it (`release_output`)."""
    members = set(hot)
    found: dict[int, Callable[[Any], Any]] = {}
    for i in hot:
        if i in roots or i in aliases or not single_output(i):
            continue
        edges = ir.out_edges[i]
        if not edges or any(
            e.kind != EAGER or e.dst not in members or e.dst in aliases for e in edges
        ):
            continue
        method = getattr(state_of(i), "release_output", None)
        if callable(method):
            found[i] = method
    return found


def last_consumers(ir: GraphIR, order: Sequence[int], nodes: Collection[int]) -> dict[int, int]:
    """Per node of `nodes`, its consumer that runs last in `order`."""
    position = {i: n for n, i in enumerate(order)}
    return {i: max((e.dst for e in ir.out_edges[i]), key=position.__getitem__) for i in nodes}


def release_call(method: Callable[[Any], Any]) -> Callable[..., None]:
    """A release step's function, called with the node's output and its consumers' outputs:
    gives the node's target back unless a consumer returned it unchanged (it is still in use)."""

    def release(value: Any, *consumer_values: Any) -> None:
        if not any(found is value for found in consumer_values):
            method(value)

    return release
