"""Random layered DAGs shaped like computation graphs, for testing and benchmarking
`memory_order` (the generator of seed 004's appendix, with parameters of our own).

A graph of `size` nodes is cut into layers: a width factor drawn per graph sets the target
number of layers (0 would be a chain, 1 one wide layer) and each layer's size varies around
the target. Adjacent layers are linked with a budget of edges between the minimum that gives
every node an input and an output and the full bipartite graph; the budget is spread evenly
over the larger layer and each of its nodes links to the nodes of the other layer roughly
below it. Skip connections then jump at least one layer, landing roughly below their source.
Output and scratch sizes are drawn per layer from a mixture of Gaussians kept positive, so the
nodes of a layer share a shape, as tiled computation graphs do.

Deterministic for a given seed.
"""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass

_SIZE_MIXTURE = ((0.5, 1.0, 0.3), (0.3, 4.0, 1.5), (0.2, 16.0, 6.0))  # weight, mean, deviation


@dataclass(frozen=True)
class LayeredGraph:
    """A DAG as `memory_order` takes it: consumers per node, output and scratch sizes."""

    successors: dict[str, list[str]]
    output_bytes: dict[str, float]
    scratch_bytes: dict[str, float]
    layers: list[list[str]]


def _positive_size(rng: random.Random) -> float:
    weights = [weight for weight, _, _ in _SIZE_MIXTURE]
    _, mean, deviation = rng.choices(_SIZE_MIXTURE, weights)[0]
    return max(0.05, abs(rng.gauss(mean, deviation)))


def _layer_sizes(rng: random.Random, size: int, variability: float) -> list[int]:
    width_factor = rng.uniform(0.25, 0.75)
    target_layers = max(1, math.ceil(size ** (1.0 - width_factor)))
    per_layer = size / target_layers
    low = max(1, math.floor((1.0 - variability) * per_layer))
    high = max(low, math.ceil((1.0 + variability) * per_layer))
    sizes: list[int] = []
    while sum(sizes) < size:
        sizes.append(min(rng.randint(low, high), size - sum(sizes)))
    return sizes


def _below(index: int, count: int, other_count: int) -> int:
    """The node of a layer of `other_count` nodes straight below node `index` of `count`."""
    return min(other_count - 1, int((index + 0.5) * other_count / count))


def _link_layers(
    rng: random.Random, upper: list[str], lower: list[str], density: float
) -> list[tuple[str, str]]:
    larger, smaller = (upper, lower) if len(upper) >= len(lower) else (lower, upper)
    fewest = len(larger)
    budget = fewest + round(density * (len(larger) * len(smaller) - fewest))
    per_node = [budget // len(larger)] * len(larger)
    for index in rng.sample(range(len(larger)), budget % len(larger)):
        per_node[index] += 1
    pairs: list[tuple[str, str]] = []
    for index, count in enumerate(per_node):
        centre = _below(index, len(larger), len(smaller))
        targets: list[int] = []
        offset = 0
        while len(targets) < min(count, len(smaller)):
            for candidate in (centre + offset, centre - offset):
                if 0 <= candidate < len(smaller) and candidate not in targets:
                    targets.append(candidate)
            offset += 1
        for target in targets[:count]:
            pair = (larger[index], smaller[target])
            pairs.append(pair if larger is upper else (pair[1], pair[0]))
    return pairs


def layered_graph(
    size: int,
    seed: int,
    variability: float = 0.5,
    edge_density: float = 0.05,
    skip_density: float = 0.1,
) -> LayeredGraph:
    """A layered DAG of `size` nodes (names "n0".."n{size-1}", layer by layer)."""
    rng = random.Random(seed)
    layers: list[list[str]] = []
    next_name = 0
    for count in _layer_sizes(rng, size, variability):
        layers.append([f"n{next_name + i}" for i in range(count)])
        next_name += count
    successors: dict[str, list[str]] = {name: [] for layer in layers for name in layer}
    edges: set[tuple[str, str]] = set()
    for upper, lower in itertools.pairwise(layers):
        edges.update(_link_layers(rng, upper, lower, edge_density))
    skips = round(skip_density * len(edges)) if len(layers) >= 3 else 0
    for _ in range(skips):
        source_layer = rng.randrange(len(layers) - 2)
        target_layer = rng.randint(source_layer + 2, len(layers) - 1)
        source, target = layers[source_layer], layers[target_layer]
        index = rng.randrange(len(source))
        edges.add((source[index], target[_below(index, len(source), len(target))]))
    for source_name, target_name in sorted(edges, key=lambda e: (int(e[0][1:]), int(e[1][1:]))):
        successors[source_name].append(target_name)
    output_bytes: dict[str, float] = {}
    scratch_bytes: dict[str, float] = {}
    for layer in layers:
        output, scratch = _positive_size(rng), _positive_size(rng)
        for name in layer:
            output_bytes[name] = output
            scratch_bytes[name] = scratch
    return LayeredGraph(successors, output_bytes, scratch_bytes, layers)
