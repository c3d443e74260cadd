"""Builds that advance by steps: a long build is a generator that yields between bounded steps.

Compiling a flat program (evaluators/flat/program.py, _incremental.py, the graph IR and the analysis
it makes) is written as generators that `yield` after each bounded piece of work (`STEP_ITEMS`
nodes or links, a chunk of generated code) and return what they built. Who drives a build
decides what happens between its steps: a synchronous build runs them back to back (`finish`);
the dual evaluator's builder thread waits for its turn between them (evaluators/dual.py), so a
frame that wants the interpreter gets it quickly. The graph code itself knows nothing about
threads or turns.

Downside: a few steps are bigger than the others and are not cut (the region a topological
traversal counts before its first node, the memory order of the HOT list, the cones an
incremental build mends); a frame that starts meanwhile shares the interpreter until it ends.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from typing import TypeVar

T = TypeVar("T")

BuildSteps = Generator[None, None, T]
"""A build that yields between its steps and returns what it built."""

#: Nodes (or links) handled between two steps of a build; a step stays well under a millisecond.
STEP_ITEMS = 8


def finish(build: BuildSteps[T], between: Callable[[], None] | None = None) -> T:
    """Run a build to its end, calling `between()` after each of its steps; returns its result."""
    while True:
        try:
            next(build)
        except StopIteration as done:
            result: T = done.value
            return result
        if between is not None:
            between()


def gathered(items: Iterable[T]) -> BuildSteps[list[T]]:
    """The items of a long iteration (e.g. a traversal) in a list, a step every `STEP_ITEMS`."""
    found: list[T] = []
    add = found.append
    for count, item in enumerate(items, 1):
        add(item)
        if count % STEP_ITEMS == 0:
            yield
    return found
