"""The lazy evaluator replays its last root phase while nothing changes: the replayed frames give
the flat evaluator's outputs, statuses and run counts, and edits, lost cache entries, failures
and time-budget bypasses are handled as a fresh walk would (a slow step as in a flat HOT list:
found by the next frame, timed step by step)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from app.bench.patches import hot_chain
from evaluators import DualEvaluator, FlatEvaluator, LazyEvaluator, NodeStatus, Profiler
from nodes import LIBRARY, Deferred, Determinism, Patch, node

stall_seconds = [0.0]  # how long test.stalls sleeps (not a pin: changing it is no edit)


@pytest.fixture(autouse=True)
def test_nodes() -> Iterator[None]:
    """`test.flaky`: a HOT node failing while its input is negative; `test.stalls`: a HOT
    node sleeping while `sleep` is set."""

    @node("test.flaky", determinism=Determinism.NONDETERMINISTIC)
    def flaky(x: float = 0.0) -> float:
        if x < 0:
            raise ValueError("negative")
        return x + 1.0

    @node("test.stalls", determinism=Determinism.NONDETERMINISTIC)
    def stalls(x: float = 0.0) -> float:
        if stall_seconds[0]:
            time.sleep(stall_seconds[0])
        return x * 3.0

    yield
    stall_seconds[0] = 0.0
    for type_id in ("test.flaky", "test.stalls"):
        del LIBRARY[type_id]


def test_replayed_frames_match_flat_and_follow_value_edits() -> None:
    patch = hot_chain(50)
    lazy, flat = LazyEvaluator(patch), FlatEvaluator(patch)
    for frame in range(6):
        if frame == 4:
            patch.set_value("gain", "value", 1.5)
        for evaluator in (lazy, flat):
            evaluator.run_frame(frame / 60.0, frame)
        assert lazy.output("sink") == flat.output("sink")
        assert lazy.status("gain") == NodeStatus.CACHED or frame in (0, 4)
        assert lazy.status("c11") == NodeStatus.OK
    assert lazy._schedule is not None  # the frames after the edit replay again
    runs = lazy.nodes_run
    lazy.run_frame(1.0, 6)
    assert lazy.nodes_run - runs == len(patch.nodes) - 1  # every node but the cached gain


def test_a_lost_cache_entry_stops_the_replay_and_the_walk_finishes_the_frame() -> None:
    patch = hot_chain(30)
    lazy, flat = LazyEvaluator(patch), FlatEvaluator(patch)
    for frame in range(3):
        lazy.run_frame(frame / 60.0, frame)
    lazy.ctx.cache.clear()
    lazy.ctx.shared.clear()
    lazy.run_frame(3 / 60.0, 3)
    flat.run_frame(3 / 60.0, 3)
    assert lazy.output("sink") == flat.output("sink")
    assert lazy.status("gain") == NodeStatus.OK  # it ran again
    assert lazy.status("sink") == NodeStatus.OK


def test_a_failure_during_a_replay_keeps_the_last_output_and_reports_it() -> None:
    patch = Patch()
    patch.add_node("time.seconds", node_id="time")
    patch.add_node("math.add", {"b": -1.0}, node_id="shift")
    patch.add_node("test.flaky", node_id="flaky")
    patch.add_node("output.value", node_id="sink")
    patch.connect("time", "out", "shift", "a")
    patch.connect("shift", "out", "flaky", "x")
    patch.connect("flaky", "out", "sink", "in")
    lazy = LazyEvaluator(patch)
    for frame, t in enumerate((1.5, 2.0, 2.5)):
        lazy.run_frame(t, frame)
    assert lazy.output("sink") == pytest.approx(2.5)
    lazy.run_frame(0.5, 3)  # replayed: flaky fails
    assert lazy.status("flaky") == NodeStatus.FAILED
    assert "negative" in (lazy.error("flaky") or "")
    assert lazy.output("sink") == pytest.approx(2.5)
    lazy.run_frame(3.0, 4)
    assert lazy.status("flaky") == NodeStatus.OK
    assert lazy.output("sink") == pytest.approx(3.0)


def test_a_replay_over_the_budget_times_the_next_one_step_by_step_which_bypasses_the_node() -> None:
    patch = Patch()
    patch.add_node("time.seconds", node_id="time")
    patch.add_node("test.stalls", node_id="stalls")
    patch.add_node("output.value", node_id="sink")
    patch.connect("time", "out", "stalls", "x")
    patch.connect("stalls", "out", "sink", "in")
    lazy = LazyEvaluator(patch)
    lazy.ctx.time_budget = 0.05
    for frame in range(3):
        lazy.run_frame(1.0 + frame, frame)
    assert lazy._schedule is not None
    stall_seconds[0] = 0.1
    lazy.run_frame(4.0, 3)  # replayed, timed as a whole: over the budget
    assert lazy.status("stalls") == NodeStatus.OK
    lazy.run_frame(5.0, 4)  # replayed step by step: the slow step is found
    assert lazy.status("stalls") == NodeStatus.FAILED
    assert "bypassed" in (lazy.error("stalls") or "")
    assert lazy.output("sink") == pytest.approx(15.0)
    runs = lazy.nodes_run
    lazy.run_frame(6.0, 5)
    assert lazy.status("stalls") == NodeStatus.FAILED
    assert lazy.output("sink") == pytest.approx(15.0)  # the last run's output (t = 5), kept
    assert lazy.nodes_run - runs == 1  # the sink: not the bypassed node, nor its input


def test_a_patch_with_a_bypassed_node_is_replayed_with_the_node_failed() -> None:
    patch = hot_chain(20)
    patch.add_node("test.stalls", node_id="stalls")
    patch.add_node("output.value", node_id="slow_sink")
    patch.connect("c3", "out", "stalls", "x")
    patch.connect("stalls", "out", "slow_sink", "in")
    lazy, flat = LazyEvaluator(patch), FlatEvaluator(patch)
    lazy.ctx.time_budget = 0.05
    stall_seconds[0] = 0.1
    lazy.run_frame(0.0, 0)  # walked: the stalling node is bypassed at once
    stall_seconds[0] = 0.0
    kept = lazy.output("slow_sink")
    for frame in range(1, 5):
        lazy.run_frame(frame / 60.0, frame)
        flat.run_frame(frame / 60.0, frame)
        assert lazy.status("stalls") == NodeStatus.FAILED
        assert "bypassed" in (lazy.error("stalls") or "")
        assert lazy.output("slow_sink") == kept
        assert lazy.output("sink") == flat.output("sink")
    assert lazy._schedule is not None  # the frames replay, the bypassed node in them


def test_outputs_a_replay_holds_are_written_when_the_context_is_read() -> None:
    patch = hot_chain(30)
    lazy, flat = LazyEvaluator(patch), FlatEvaluator(patch)
    for frame in range(5):
        lazy.run_frame(frame / 60.0, frame)
        flat.run_frame(frame / 60.0, frame)
        assert lazy.output("c7") == flat.output("c7")
        assert lazy.ctx.outputs["c12"] == (flat.output("c12"),)
    assert lazy._schedule is not None


def test_a_dual_swap_after_replayed_frames_starts_from_their_outputs() -> None:
    """A node failing in the flat program's first frame keeps the output the last lazy frame
    (a replay) gave it, as the program loaded it from the context."""
    patch = Patch()
    patch.add_node("time.seconds", node_id="time")
    patch.add_node("math.add", {"b": -1.0}, node_id="shift")
    patch.add_node("test.flaky", node_id="flaky")
    patch.add_node("output.value", node_id="sink")
    patch.connect("time", "out", "shift", "a")
    patch.connect("shift", "out", "flaky", "x")
    patch.connect("flaky", "out", "sink", "in")
    dual = DualEvaluator(patch, debounce=3600.0, background=False)
    patch.add_node("value.float", node_id="unused")  # a structural edit: no build for a while
    for frame, t in enumerate((1.5, 2.0, 2.5)):
        dual.run_frame(t, frame)
        assert dual.mode == "lazy"
    assert dual.lazy._schedule is not None  # the last two frames were replayed
    dual.debounce = 0.0
    dual.run_frame(3.0, 3)  # lazy, then the program is built
    dual.run_frame(0.5, 4)  # swapped in: flaky fails and keeps what it had
    assert dual.mode == "flat"
    assert dual.status("flaky") == NodeStatus.FAILED
    assert dual.output("sink") == pytest.approx(3.0)
    dual.close()


def test_replayed_runs_reach_the_profiler_as_a_hot_step_list() -> None:
    """A replayed frame hands its runs over as a flat program's HOT list does: counted every
    frame, with per-step times on the profiler's sampled frames."""
    patch = hot_chain(40)
    lazy = LazyEvaluator(patch)
    profiler = lazy.observer.profiler = Profiler(sample_every=4, max_overhead=None)
    for frame in range(8):
        lazy.run_frame(frame / 60.0, frame)
    assert lazy._schedule is not None
    walked, replayed = profiler.frames[1], profiler.frames[2]
    sampled = next(r for r in profiler.frames if r.hot is not None and r.hot_times is not None)
    assert replayed.hot is not None and sampled.frame > replayed.frame
    assert replayed.hot.node_ids == [run[0] for run in walked.runs()]
    assert replayed.hot.reasons.tolist() == [run[3] for run in walked.runs()]
    assert replayed.hot_times is None  # not sampled: the list's time as a whole
    assert sampled.hot_times is not None and len(sampled.hot_times) == len(walked.runs())
    assert (sampled.hot_times >= 0.0).all()
    assert replayed.reasons() == walked.reasons()
    assert profiler.counts("time") == {"non-deterministic": 8}
    assert profiler.counts("gain")["cache hit"] == 7
    assert "non-deterministic" in " ".join(lazy.explain("time"))
    assert profiler.medians(["c5"])["c5"] >= 0.0


def test_replayed_nodes_with_several_outputs_or_deferred_match_flat() -> None:
    waiting = [False]

    @node(
        "test.split",
        determinism=Determinism.NONDETERMINISTIC,
        outputs={"lo": "float", "hi": "float"},
    )
    def split(x: float = 0.0) -> tuple[float, float]:
        if waiting[0]:
            raise Deferred("not ready")
        return (x - 1.0, x + 1.0)

    try:
        patch = Patch()
        patch.add_node("time.seconds", node_id="time")
        patch.add_node("test.split", node_id="split")
        patch.add_node("math.mul", node_id="product")
        patch.add_node("output.value", node_id="sink")
        patch.connect("time", "out", "split", "x")
        patch.connect("split", "lo", "product", "a")
        patch.connect("split", "hi", "product", "b")
        patch.connect("product", "out", "sink", "in")
        lazy, flat = LazyEvaluator(patch), FlatEvaluator(patch)
        for frame in range(8):
            waiting[0] = frame in (4, 5)
            for evaluator in (lazy, flat):
                evaluator.run_frame(1.0 + frame, frame)
            assert lazy.output("sink") == flat.output("sink")
            assert lazy.output("split", "hi") == flat.output("split", "hi")
            expected = NodeStatus.DEFERRED if waiting[0] else NodeStatus.OK
            assert lazy.status("split") == flat.status("split") == expected
        assert lazy.output("sink") == pytest.approx(7.0 * 9.0)
        assert lazy._schedule is not None
    finally:
        del LIBRARY["test.split"]
