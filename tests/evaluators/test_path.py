"""NodePath: execution paths made from graph ids and taken apart, at any depth; node state is keyed
by them."""

from __future__ import annotations

import pytest

from evaluators import ExecutionContext, LazyEvaluator, NodePath
from evaluators.graph.path import ROOT
from nodes import Patch


def test_a_top_level_path_is_slash_and_the_node_id() -> None:
    path = NodePath.of("lfo3")
    assert path == "/lfo3" and isinstance(path, str)
    assert hash(path) == hash("/lfo3")
    assert {"/lfo3": 1}[path] == 1
    assert path.parts == ("lfo3",)
    assert path.leaf == "lfo3"
    assert path.node_id == "lfo3"
    assert path.parent == ROOT == "" and isinstance(path.parent, NodePath)


def test_a_nested_graph_id_gives_a_nested_path() -> None:
    path = NodePath.of("scene/blob2/lfo3")
    assert path == "/scene/blob2/lfo3"
    assert path.parts == ("scene", "blob2", "lfo3")
    assert path.leaf == "lfo3"
    assert path.parent == "/scene/blob2"
    assert path.parent.parent.child("blob1") == "/scene/blob1"
    assert path.node_id == "scene/blob2/lfo3"
    assert NodePath.of(path.node_id) == path


def test_paths_twenty_deep_go_down_and_back_up() -> None:
    ids = [f"inst{depth}" for depth in range(20)] + ["lfo1"]
    path = ROOT
    for node_id in ids:
        path = path.child(node_id)
        assert isinstance(path, NodePath)
    assert path == "/" + "/".join(ids)
    assert path.parts == tuple(ids)
    assert path.node_id == "/".join(ids)
    assert NodePath.of("/".join(ids)) == path
    assert NodePath(str(path)) == path
    climbed = []
    while path:
        climbed.append(path.leaf)
        path = path.parent
    assert climbed == ids[::-1]
    assert path == ROOT and path.parts == ()


@pytest.mark.parametrize("bad", ["", "/a", "a/", "a//b"])
def test_bad_node_ids_are_refused_by_name(bad: str) -> None:
    with pytest.raises(ValueError, match=r"NodePath\.of"):
        NodePath.of(bad)


@pytest.mark.parametrize("bad", ["", "a/b", "/"])
def test_a_child_is_one_node_id(bad: str) -> None:
    with pytest.raises(ValueError, match=r"NodePath\.child"):
        NodePath.of("blob1").child(bad)


@pytest.mark.parametrize("bad", ["a", "/", "/a/", "//a"])
def test_bad_path_text_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="node path"):
        NodePath(bad)


def test_the_root_has_no_parent_leaf_or_node() -> None:
    for name in ("parent", "leaf", "node_id"):
        with pytest.raises(ValueError, match="root"):
            getattr(ROOT, name)


def test_node_state_is_kept_and_released_by_path() -> None:
    patch = Patch()
    patch.add_node("time.lfo", node_id="lfo1")
    patch.add_node("output.value", node_id="sink")
    patch.connect("lfo1", "out", "sink", "in")
    ctx = ExecutionContext()
    evaluator = LazyEvaluator(patch, ctx)
    evaluator.run_frame(0.0, 0)
    assert list(ctx.states) == [NodePath.of("lfo1")]
    assert all(isinstance(path, NodePath) for path in ctx.states)
    ctx.keep_only({"sink"})
    assert ctx.states == {}
    evaluator.close()
