"""Patches for benchmarks: a HOT chain, a mostly-constant patch and a layered DAG with fan-in,
used by `patchbay bench` for the evaluators and for frozen exports.

Each builder returns a Patch with one `output.value` sink (id "sink") and a node count close to
`size`. They are deterministic (seeded), so runs compare like with like.
"""

from __future__ import annotations

import random

from nodes import Patch

CHAIN_TYPES = ("math.add", "math.mul", "math.sin")


def _chain(patch: Patch, head: str, length: int, prefix: str) -> str:
    """`length` math nodes after `head`, cycling add / mul / sin; returns the last id."""
    previous = head
    for index in range(length):
        type_id = CHAIN_TYPES[index % len(CHAIN_TYPES)]
        values = {"b": 1.0001} if type_id != "math.sin" else None
        node_id = patch.add_node(type_id, values, node_id=f"{prefix}{index}")
        patch.connect(previous, "out", node_id, "a" if type_id != "math.sin" else "x")
        previous = node_id
    return previous


def _merge(patch: Patch, heads: list[str], prefix: str) -> str:
    """A balanced tree of math.add over `heads`; returns its root."""
    level = 0
    while len(heads) > 1:
        merged = []
        for index in range(0, len(heads) - 1, 2):
            node_id = patch.add_node("math.add", node_id=f"{prefix}{level}_{index}")
            patch.connect(heads[index], "out", node_id, "a")
            patch.connect(heads[index + 1], "out", node_id, "b")
            merged.append(node_id)
        if len(heads) % 2:
            merged.append(heads[-1])
        heads = merged
        level += 1
    return heads[0]


def hot_chain(size: int) -> Patch:
    """(a) time.seconds -> a chain of math nodes -> sink: everything is HOT but one user-input
    gain, which feeds every tenth node of the chain."""
    patch = Patch()
    patch.add_node("time.seconds", node_id="time")
    patch.add_node("input.float", {"value": 0.5, "max": 2.0}, node_id="gain")
    last = _chain(patch, "time", size - 3, "c")
    for index in range(0, size - 3, 10):
        if CHAIN_TYPES[index % len(CHAIN_TYPES)] != "math.sin":
            patch.connect("gain", "out", f"c{index}", "b")
    patch.add_node("output.value", node_id="sink")
    patch.connect(last, "out", "sink", "in")
    return patch


def mostly_constant(size: int, hot_share: float = 0.1, branches: int = 10) -> Patch:
    """(b) 90% of the nodes in constant chains, 10% in a HOT chain, merged into one sink."""
    patch = Patch()
    hot_length = max(1, int(size * hot_share) - 1)
    patch.add_node("time.seconds", node_id="time")
    heads = [_chain(patch, "time", hot_length, "h")]
    const_length = max(1, (size - hot_length - 2 - branches * 2) // branches - 1)
    for branch in range(branches):
        patch.add_node("value.float", {"value": 0.5 + branch}, node_id=f"k{branch}")
        heads.append(_chain(patch, f"k{branch}", const_length, f"k{branch}_"))
    root = _merge(patch, heads, "m")
    patch.add_node("output.value", node_id="sink")
    patch.connect(root, "out", "sink", "in")
    return patch


def layered_dag(size: int, width: int = 50, seed: int = 4) -> Patch:
    """(c) Layers of `width` math.add nodes, each fed by two nodes of earlier layers (fan-in),
    from a first layer of time and constants; every node of the last layer merged into the sink."""
    rng = random.Random(seed)
    patch = Patch()
    layers = [[patch.add_node("time.seconds", node_id="time")]]
    layers[0] += [
        patch.add_node("value.float", {"value": float(i)}, node_id=f"v{i}")
        for i in range(width - 1)
    ]
    depth = max(1, (size - width - width) // width)
    for level in range(1, depth + 1):
        current = []
        for index in range(width):
            node_id = patch.add_node("math.add", node_id=f"l{level}_{index}")
            previous = layers[-1]
            earlier = layers[rng.randrange(max(0, level - 3), level)]
            patch.connect(previous[rng.randrange(len(previous))], "out", node_id, "a")
            patch.connect(earlier[rng.randrange(len(earlier))], "out", node_id, "b")
            current.append(node_id)
        layers.append(current)
    root = _merge(patch, layers[-1], "m")
    patch.add_node("output.value", node_id="sink")
    patch.connect(root, "out", "sink", "in")
    return patch


CASES = {"hot_chain": hot_chain, "mostly_constant": mostly_constant, "layered_dag": layered_dag}


GRID_COLUMNS = 40
GRID_SPACING = (220.0, 130.0)


def grid_chain(size: int) -> Patch:
    """`size` nodes: time.seconds -> math.add -> ... -> output.value, laid out in rows on the
    canvas (for the editor and show benchmarks)."""
    patch = Patch()

    def pos(i: int) -> tuple[float, float]:
        return (i % GRID_COLUMNS) * GRID_SPACING[0], (i // GRID_COLUMNS) * GRID_SPACING[1]

    previous = patch.add_node("time.seconds", pos=pos(0), node_id="n0")
    for i in range(1, size - 1):
        current = patch.add_node("math.add", {"b": 1.0}, pos=pos(i), node_id=f"n{i}")
        patch.connect(previous, "out", current, "a")
        previous = current
    sink = patch.add_node("output.value", pos=pos(size - 1), node_id=f"n{size - 1}")
    patch.connect(previous, "out", sink, "in")
    return patch


def subpatch_chains(instances: int, body_size: int) -> Patch:
    """time.seconds -> `instances` instances of definition "chain" -> one sink each (`s<k>`).
    The body is `body_size` nodes: inlet `x`, a chain of math nodes (add / mul / sin, ending in
    a mul, `c<index>`), outlet `y`. Everything is HOT."""
    length = _chain_length(body_size)
    body = Patch()
    body.add_node("subpatch.inlet", {"name": "x", "default": 0.0}, node_id="inx")
    last = _chain(body, "inx", length, "c")
    body.add_node("subpatch.outlet", {"name": "y"}, node_id="outy")
    body.connect(last, "out", "outy", "in")
    patch = Patch()
    patch.add_definition("chain", body)
    patch.add_node("time.seconds", node_id="time")
    for k in range(instances):
        patch.add_node("subpatch", {"definition": "chain"}, node_id=f"i{k}")
        patch.connect("time", "out", f"i{k}", "x")
        patch.add_node("output.value", node_id=f"s{k}")
        patch.connect(f"i{k}", "y", f"s{k}", "in")
    return patch


def subpatch_chains_inlined(instances: int, body_size: int) -> Patch:
    """`subpatch_chains` written out by hand: each instance's chain as plain nodes at its path
    (`i<k>/c<index>`), fed by time.seconds, feeding its sink."""
    length = _chain_length(body_size)
    patch = Patch()
    patch.allow_path_ids = True
    patch.add_node("time.seconds", node_id="time")
    for k in range(instances):
        last = _chain(patch, "time", length, f"i{k}/c")
        patch.add_node("output.value", node_id=f"s{k}")
        patch.connect(last, "out", f"s{k}", "in")
    return patch


def _chain_length(body_size: int) -> int:
    """Math nodes in a body of `body_size` nodes (inlet and outlet), rounded down to end in a
    mul (every third node from the second)."""
    length = max(2, body_size - 2)
    while length % len(CHAIN_TYPES) != 2:
        length -= 1
    return length
