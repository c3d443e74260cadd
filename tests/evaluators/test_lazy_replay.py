"""The lazy evaluator replays its last root phase while nothing changes: the replayed frames give
the flat evaluator's outputs, statuses and run counts, and edits, lost cache entries, failures
and time-budget bypasses are handled as a fresh walk would."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from evaluators import FlatEvaluator, LazyEvaluator, NodeStatus
from evaluators.bench_patches import hot_chain
from nodes import LIBRARY, Determinism, Patch, node

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


def test_a_node_over_the_budget_during_a_replay_is_bypassed_from_the_next_frame() -> None:
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
    lazy.run_frame(4.0, 3)
    assert lazy.status("stalls") == NodeStatus.FAILED
    assert "bypassed" in (lazy.error("stalls") or "")
    lazy.run_frame(5.0, 4)
    assert lazy.status("stalls") == NodeStatus.FAILED
    assert lazy.output("sink") == pytest.approx(12.0)  # the slow run's output (t = 4), kept


def test_replayed_runs_reach_the_profiler_as_a_walked_frame_does() -> None:
    patch = hot_chain(40)
    lazy = LazyEvaluator(patch)
    for frame in range(4):
        lazy.run_frame(frame / 60.0, frame)
    assert lazy._schedule is not None
    profiler = lazy.observer.profiler
    walked, replayed = profiler.frames[1], profiler.frames[3]  # frame 1 recorded, 3 replayed
    assert [run[0] for run in replayed.runs()] == [run[0] for run in walked.runs()]
    assert [run[3] for run in replayed.runs()] == [run[3] for run in walked.runs()]
    assert {run[5] for run in replayed.runs()} == {"lazy"}
    assert all(run[2] >= 0.0 for run in replayed.runs())
    assert replayed.reasons() == walked.reasons()
    assert profiler.counts("time") == {"non-deterministic": 4}
    assert profiler.counts("gain")["cache hit"] == 3
    assert "non-deterministic" in " ".join(lazy.explain("time"))
