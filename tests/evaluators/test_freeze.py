"""Freezing: a frozen patch plays exactly like its editable source (sink outputs frame by frame,
after a save/load round trip), does no more work, and keeps what it must (sinks, HOT nodes, large
or GPU results); on the bundled examples and on random patches."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluators import FlatEvaluator, LazyEvaluator, freeze
from nodes import Patch, load_patch, save_patch
from tests.patch_strategies import random_patch, same, sinks_of

FRAMES = 8


def play(patch: Patch, frames: int = FRAMES) -> tuple[list[dict[str, Any]], list[int]]:
    """Sink outputs and the running nodes_run count after each frame, with the flat evaluator."""
    evaluator = FlatEvaluator(patch)
    sinks = sinks_of(patch)
    outputs, work = [], []
    for frame in range(frames):
        evaluator.run_frame(frame / 60.0, frame)
        outputs.append({sink: evaluator.output(sink) for sink in sinks})
        work.append(evaluator.nodes_run)
    evaluator.close()
    return outputs, work


def round_trip(patch: Patch, folder: Path) -> Patch:
    path = folder / "frozen.patchbay"
    save_patch(patch, path)
    return load_patch(path)


def assert_equivalent(source: Patch, frozen: Patch) -> tuple[list[int], list[int]]:
    expected, editable_work = play(source)
    got, frozen_work = play(frozen)
    for frame, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert set(have) == set(want), f"frame {frame}: sinks differ"
        for sink, value in want.items():
            assert same(value, have[sink]), f"frame {frame}, {sink}: {value!r} != {have[sink]!r}"
    return editable_work, frozen_work


def assert_no_more_work(editable: list[int], frozen: list[int]) -> None:
    """By every frame, the frozen patch has run no more nodes than the editable one. (Compared
    cumulatively: a constant the editable patch computes in the first frame because a pruned link
    needed it may be computed by the frozen patch on its first pull, a frame later.)"""
    for frame, (done_frozen, done_editable) in enumerate(zip(frozen, editable, strict=True)):
        assert done_frozen <= done_editable, f"frame {frame}: {done_frozen} > {done_editable}"


# ----------------------------------------------------------------------------- examples


def _examples() -> list[Path]:
    folder = resources.files("resources") / "examples"
    return [Path(str(entry)) for entry in folder.iterdir() if entry.name.endswith(".patchbay")]


def _has_gpu(patch: Patch) -> bool:
    return any(node.type_id.startswith("gpu.") for node in patch.nodes.values())


# GPU examples are compared pixel by pixel in tests/gl/test_freeze_gpu.py.
CPU_EXAMPLES = [path for path in _examples() if not _has_gpu(load_patch(path))]


@pytest.mark.parametrize("path", CPU_EXAMPLES, ids=lambda path: path.name)
def test_examples_freeze_to_equivalent_patches(path: Path, tmp_path: Path) -> None:
    source = load_patch(path)
    frozen = round_trip(freeze(source, source_path=path), tmp_path)
    editable_work, frozen_work = assert_equivalent(source, frozen)
    assert_no_more_work(editable_work, frozen_work)
    summary = frozen.meta["summary"]
    if summary["nodes_after"] < summary["nodes_before"]:
        assert frozen_work[-1] < editable_work[-1]


def test_demo_freezes_inputs_prunes_the_switch_and_drops_unused_nodes() -> None:
    source = load_patch(_examples_by_name()["demo.patchbay"])
    frozen = freeze(source)
    assert frozen.nodes["speed"].type_id == "value.float"
    assert frozen.nodes["speed"].values["value"] == 1.5
    assert frozen.nodes["shape"].type_id == "value.array"
    # use_lfo is off: the switch keeps only its wave branch; the lfo stays for `breathing`.
    assert frozen.link_into("switch", "in1") is None
    assert frozen.link_into("switch", "index") is None
    assert "use_lfo" not in frozen.nodes
    assert {"spare", "unused_idea", "angles"}.isdisjoint(frozen.nodes)
    assert set(sinks_of(frozen)) == set(sinks_of(source))
    assert frozen.meta["schedule"]["once"] == ["speed", "shape"]


def _examples_by_name() -> dict[str, Path]:
    return {path.name: path for path in _examples()}


# ----------------------------------------------------------------------------- specific cases


def test_source_is_untouched_and_meta_is_complete(tmp_path: Path) -> None:
    patch = Patch()
    patch.add_node("input.float", {"value": 0.25}, node_id="knob")
    patch.add_node("math.mul", {"b": 4.0}, node_id="scale")
    patch.add_node("output.value", node_id="out")
    patch.connect("knob", "out", "scale", "a")
    patch.connect("scale", "out", "out", "in")
    before = (patch.revision, patch.value_revision, dict(patch.nodes), patch.links)
    path = tmp_path / "source.patchbay"
    save_patch(patch, path)

    frozen = freeze(patch, source_path=path)

    assert (patch.revision, patch.value_revision, dict(patch.nodes), patch.links) == before
    assert frozen.frozen and not patch.frozen
    meta = frozen.meta
    assert meta["patchbay_version"]
    assert meta["source"]["file"] == "source.patchbay"
    assert len(meta["source"]["sha256"]) == 64
    assert meta["summary"] == {
        "nodes_before": 3,
        "nodes_after": 2,
        "constants_baked": 1,
        "bytes_stored": 8,
        "user_inputs_frozen": 1,
        "run_once": 1,
        "every_frame": 0,
        "dropped": 1,
    }
    # The whole constant chain became one value feeding the sink, which kept its id.
    assert frozen.nodes["scale"].type_id == "value.float"
    assert frozen.nodes["scale"].values["value"] == 1.0
    assert frozen.nodes["out"].type_id == "output.value"
    assert meta["schedule"] == {"once": ["scale", "out"], "every_frame": []}


def test_failing_constant_freezes_to_its_default_output() -> None:
    patch = Patch()
    patch.add_node("debug.fail", node_id="broken")
    patch.add_node("math.add", {"b": 2.0}, node_id="plus")
    patch.add_node("time.seconds", node_id="t")
    patch.add_node("math.add", node_id="hot")
    patch.add_node("output.value", node_id="out")
    patch.connect("broken", "out", "plus", "a")
    patch.connect("plus", "out", "hot", "a")
    patch.connect("t", "out", "hot", "b")
    patch.connect("hot", "out", "out", "in")
    frozen = freeze(patch)
    assert frozen.nodes["plus"].values["value"] == 2.0
    assert "broken" not in frozen.nodes
    assert_equivalent(patch, frozen)


def test_large_results_are_kept_to_run_once(tmp_path: Path) -> None:
    patch = Patch()
    patch.add_node("array.linspace", {"count": 1000}, node_id="big")
    patch.add_node("time.seconds", node_id="t")
    patch.add_node("math.mul", node_id="wave")
    patch.add_node("output.value", node_id="out")
    patch.connect("big", "out", "wave", "a")
    patch.connect("t", "out", "wave", "b")
    patch.connect("wave", "out", "out", "in")
    kept = freeze(patch, threshold_bytes=1000)
    assert kept.nodes["big"].type_id == "array.linspace"
    assert kept.meta["schedule"]["once"] == ["big"]
    assert kept.meta["summary"]["run_once"] == 1
    baked = freeze(patch, threshold_bytes=8000)
    assert baked.nodes["big"].type_id == "value.array"
    for frozen in (kept, baked):
        assert_equivalent(patch, round_trip(frozen, tmp_path))


def test_values_a_file_cannot_hold_exactly_keep_their_producer() -> None:
    patch = Patch()
    patch.add_node("array.map_sin", {"x": 0.5}, node_id="scalar")  # a numpy scalar, not a float
    patch.add_node("time.seconds", node_id="t")
    patch.add_node("math.add", node_id="sum")
    patch.add_node("output.value", node_id="out")
    patch.connect("scalar", "out", "sum", "a")
    patch.connect("t", "out", "sum", "b")
    patch.connect("sum", "out", "out", "in")
    frozen = freeze(patch)
    assert frozen.nodes["scalar"].type_id == "array.map_sin"
    assert_equivalent(patch, frozen)


def test_feedback_from_a_constant_and_a_hot_switch_index() -> None:
    patch = Patch()
    patch.add_node("value.float", {"value": 3.0}, node_id="c")
    patch.add_node("math.mul", {"b": 2.0}, node_id="doubled")
    patch.add_node("util.frame_delay", {"init": -1.0}, node_id="delay")
    patch.add_node("time.frame", node_id="frame")
    patch.add_node("math.div", {"b": 2.0}, node_id="half")
    patch.add_node("logic.switch", node_id="switch")
    patch.add_node("output.value", node_id="out")
    patch.connect("c", "out", "doubled", "a")
    patch.connect("doubled", "out", "delay", "in")
    patch.connect("frame", "out", "half", "a")
    patch.connect("half", "out", "switch", "index")
    patch.connect("delay", "out", "switch", "in0")
    patch.connect("doubled", "out", "switch", "in1")
    patch.connect("switch", "out", "out", "in")
    frozen = freeze(patch)
    assert frozen.link_into("delay", "in") is not None
    assert frozen.link_into("switch", "in1") is not None  # the index is HOT: nothing pruned
    assert_equivalent(patch, frozen)


def test_progress_reports_rise_to_one() -> None:
    patch = load_patch(_examples_by_name()["demo.patchbay"])
    seen: list[tuple[float, str]] = []
    freeze(patch, progress=lambda fraction, stage: seen.append((fraction, stage)))
    fractions = [fraction for fraction, _ in seen]
    assert fractions == sorted(fractions)
    assert fractions[0] == 0.0 and fractions[-1] == 1.0
    assert all(isinstance(stage, str) and stage for _, stage in seen)


def test_freezing_a_frozen_patch_changes_nothing_it_plays(tmp_path: Path) -> None:
    source = load_patch(_examples_by_name()["demo.patchbay"])
    once = round_trip(freeze(source), tmp_path)
    twice = freeze(once)
    assert set(twice.nodes) == set(once.nodes)
    assert_equivalent(source, twice)


# ----------------------------------------------------------------------------- random patches


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_patches_freeze_to_equivalent_patches(data: st.DataObject, tmp_path_factory) -> None:
    patch = random_patch(data)
    threshold = data.draw(st.sampled_from([0, 16, 1 << 20]))
    frozen = round_trip(freeze(patch, threshold_bytes=threshold), tmp_path_factory.mktemp("f"))
    editable_work, frozen_work = assert_equivalent(patch, frozen)
    assert_no_more_work(editable_work, frozen_work)
    assert set(sinks_of(frozen)) == set(sinks_of(patch))
    assert frozen.frozen
    summary = frozen.meta["summary"]
    assert summary["nodes_after"] == len(frozen.nodes) <= summary["nodes_before"]


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_frozen_patches_play_the_same_lazily(data: st.DataObject) -> None:
    patch = random_patch(data)
    frozen = freeze(patch)
    expected, _ = play(patch)
    evaluator = LazyEvaluator(frozen)
    for frame, want in enumerate(expected):
        evaluator.run_frame(frame / 60.0, frame)
        for sink, value in want.items():
            assert same(value, evaluator.output(sink)), (frame, sink)
