"""Evaluators read a patch only through `PatchGraph`: a Patch-shaped object that is no Patch (it
offers the protocol's members and nothing else) runs the same in every evaluator, edits included."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluators import DualEvaluator, FlatEvaluator, LazyEvaluator, PatchGraph, PatchSnapshot
from nodes import Link, NodeInstance, Patch, PatchEvent
from tests.patch_strategies import random_edit, random_patch, same


class GraphOnly:
    """Exactly the members of `PatchGraph`, answered by a Patch it hides."""

    def __init__(self, patch: Patch) -> None:
        self._patch = patch

    @property
    def nodes(self) -> Mapping[str, NodeInstance]:
        return self._patch.nodes

    @property
    def links(self) -> Sequence[Link]:
        return self._patch.links

    def links_into(self, node_id: str) -> Mapping[str, Link]:
        return self._patch.links_into(node_id)

    def links_out_of(self, node_id: str) -> Iterable[Link]:
        return self._patch.links_out_of(node_id)

    def node(self, node_id: str) -> NodeInstance:
        return self._patch.node(node_id)

    def subscribe(self, listener: Callable[[PatchEvent], None]) -> Callable[[], None]:
        return self._patch.subscribe(listener)

    @property
    def settings(self) -> dict[str, Any]:
        return self._patch.settings

    @property
    def folder(self) -> Path | None:
        return self._patch.folder

    @property
    def revision(self) -> int:
        return self._patch.revision

    @property
    def value_revision(self) -> int:
        return self._patch.value_revision


def test_a_patch_and_the_graph_only_view_make_equal_snapshots() -> None:
    patch = Patch()
    patch.add_node("math.add", {"a": 2.0}, node_id="add")
    patch.add_node("output.value", node_id="sink")
    patch.connect("add", "out", "sink", "in")
    graph: PatchGraph = GraphOnly(patch)
    assert PatchSnapshot.of(graph) == PatchSnapshot.of(patch)


def _pairs(patch: Patch, graph: GraphOnly) -> list[tuple[Any, Any]]:
    """Each evaluator kind twice: over the patch, and over the view of it."""
    makers: list[Callable[[Any], Any]] = [
        LazyEvaluator,
        FlatEvaluator,
        lambda source: FlatEvaluator(source, caching=False),
        lambda source: DualEvaluator(source, debounce=0.0, background=False),
    ]
    return [(make(patch), make(graph)) for make in makers]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_every_evaluator_runs_the_graph_only_view_as_it_runs_the_patch(
    data: st.DataObject,
) -> None:
    patch = random_patch(data)
    pairs = _pairs(patch, GraphOnly(patch))
    try:
        for frame in range(data.draw(st.integers(1, 8))):
            for over_patch, over_view in pairs:
                over_patch.run_frame(frame / 60.0, frame)
                over_view.run_frame(frame / 60.0, frame)
                name = type(over_view).__name__
                for node_id in patch.nodes:
                    expected, value = over_patch.output(node_id), over_view.output(node_id)
                    assert same(value, expected), (
                        f"frame {frame}: {name} over the view: {node_id} = {value!r}, "
                        f"over the patch {expected!r}"
                    )
                    assert over_view.status(node_id) == over_patch.status(node_id), name
                    assert over_view.node_class(node_id) == over_patch.node_class(node_id)
            for _ in range(data.draw(st.integers(0, 2))):
                random_edit(data, patch)
    finally:
        for pair in pairs:
            for evaluator in pair:
                evaluator.close()
