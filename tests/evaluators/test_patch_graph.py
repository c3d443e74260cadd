"""Evaluation reads a patch only through `PatchGraph`: a Patch-shaped object that is no Patch (it
offers the protocol's members and nothing else) is analysed, snapshotted and compiled as the
patch it shows, edits included."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluators import ExecutionContext, FlatProgram, PatchGraph, PatchSnapshot
from evaluators.flat.program import program_output
from evaluators.graph.analysis import LiveAnalysis
from evaluators.graph.view import ExpandedPatch, _Expansion
from nodes import Link, NodeInstance, Patch, PatchEvent
from tests.patch_strategies import random_edit, random_patch


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


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_analysis_and_snapshots_read_the_graph_only_view_as_they_read_the_patch(
    data: st.DataObject,
) -> None:
    patch = random_patch(data)
    graph = GraphOnly(patch)
    over_patch, over_view = LiveAnalysis(patch), LiveAnalysis(graph)
    unsubscribe = [patch.subscribe(over_patch.on_event), graph.subscribe(over_view.on_event)]
    try:
        for _ in range(data.draw(st.integers(1, 4))):
            assert PatchSnapshot.of(graph) == PatchSnapshot.of(patch)
            for node_id in patch.nodes:
                assert over_view.info(node_id) == over_patch.info(node_id), node_id
            for _ in range(data.draw(st.integers(1, 3))):
                random_edit(data, patch)
    finally:
        for stop in unsubscribe:
            stop()


def test_a_flat_program_compiled_from_the_view_takes_value_edits_through_it() -> None:
    patch = Patch()
    patch.add_node("math.add", {"a": 2.0, "b": 3.0}, node_id="add")
    patch.add_node("output.value", node_id="sink")
    patch.connect("add", "out", "sink", "in")
    graph: PatchGraph = GraphOnly(patch)
    program = FlatProgram(PatchSnapshot.of(graph), ExecutionContext())
    program.run()
    assert program_output(graph, program.ctx, program, "sink", "out") == 5.0
    patch.set_value("add", "b", 10.0)
    program.refresh_values(graph, ["add"])
    program.run()
    assert program_output(graph, program.ctx, program, "sink", "out") == 12.0
    program.release()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_view_of_a_patch_without_instances_is_the_patch_and_follows_its_edits(
    data: st.DataObject,
) -> None:
    """A document with no instance is taken over as it is (no expansion); its view has exactly
    the nodes and links the expanding path makes, before and after edits."""
    patch = random_patch(data, False)
    plain = ExpandedPatch(patch)
    expanding = ExpandedPatch(patch)  # the same document, through the general path
    expanding.nodes.clear()
    expanding._links, expanding._links_in, expanding._links_out = {}, {}, {}
    built = _Expansion()
    built.nodes.update(patch.nodes)
    built.links.extend(patch.links)
    expanding._apply(built, (), emit=False)
    try:
        edits = data.draw(st.integers(0, 5))
        for count in range(edits + 1):
            if count:
                random_edit(data, patch, False)
            for view in (plain, expanding):
                assert view.nodes == patch.nodes
                assert view.links == patch.links
                for node_id in patch.nodes:
                    assert dict(view.links_into(node_id)) == dict(patch.links_into(node_id))
                    assert list(view.links_out_of(node_id)) == list(patch.links_out_of(node_id))
    finally:
        plain.close()
        expanding.close()
