"""How often the profiler times a flat HOT list step by step: the period stretches so that the
timed frames cost at most `max_overhead` of the untimed ones, within a quarter of the ring, and the
per-node times worked out from the sampled frames stay right. The frames here are fed to the
profiler with given seconds (no clock is asserted); one test runs real busy nodes for the ranking.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from evaluators import FlatEvaluator, Profiler
from evaluators.insight.profiler import HOT_RUN, HotSteps
from nodes import Patch

NODES = ["big", "small", "cheap"]
PER_STEP = np.array([0.004, 0.001, 0.0])  # what each step takes, timed one by one


def feed(profiler: Profiler, frames: int, untimed: float, timed: float) -> list[int]:
    """Run `frames` frames of the three-step list (a whole list takes `untimed` seconds, or
    `timed` when timed step by step) and return the frames that were timed."""
    steps = HotSteps(NODES, [HOT_RUN] * len(NODES))  # interned by the profiler that sees it
    sampled = []
    for _ in range(frames):
        frame = profiler.frame + 1
        profiler.begin(frame)
        if profiler.timing:
            sampled.append(frame)
            starts = np.cumsum(np.r_[0.0, PER_STEP[:-1]])
            profiler.hot_ran(steps, 0.0, timed, starts, PER_STEP.copy())
        else:
            profiler.hot_ran(steps, 0.0, untimed)
        profiler.end()
    return sampled


def test_costly_timing_stretches_the_period_to_the_overhead_target() -> None:
    profiler = Profiler(sample_every=32, max_overhead=0.03)
    sampled = feed(profiler, 1000, untimed=0.001, timed=0.004)
    wanted = math.ceil((0.004 - 0.001) / (0.03 * 0.001))  # 100 frames
    assert profiler.sample_period() == wanted
    assert sampled == list(range(0, 1000, wanted))  # the first frame, then every 100th
    extra = len(sampled) * (0.004 - 0.001)  # what timing added, against the untimed lists
    assert extra / (1000 * 0.001) == pytest.approx(0.03)


def test_the_period_never_goes_below_sample_every_nor_over_a_quarter_of_the_ring() -> None:
    cheap = Profiler(sample_every=8)
    feed(cheap, 100, untimed=0.01, timed=0.01)  # busy nodes: timing costs nothing extra
    assert cheap.sample_period() == 8
    costly = Profiler(frames=200, sample_every=8)
    sampled = feed(costly, 400, untimed=0.001, timed=0.1)
    assert costly.sample_period() == 50
    assert sum(frame >= 200 for frame in sampled) == 4  # the last 200 frames keep 4 samples


def test_fixed_period_without_an_overhead_target_and_every_frame_with_sample_every_one() -> None:
    fixed = Profiler(sample_every=4, max_overhead=None)
    assert feed(fixed, 12, untimed=0.001, timed=0.01) == [0, 4, 8]
    every = Profiler(sample_every=1)  # what `patchbay profile` asks: never an untimed frame
    assert feed(every, 10, untimed=0.001, timed=0.01) == list(range(10))


def test_per_node_times_from_the_sampled_frames_are_the_steps_times() -> None:
    profiler = Profiler(sample_every=32)
    sampled = feed(profiler, 1000, untimed=0.001, timed=0.004)
    rows = {row["node"]: row for row in profiler.report()}
    assert [row["node"] for row in profiler.report()][:2] == ["big", "small"]
    for node, seconds in zip(NODES, PER_STEP.tolist(), strict=True):
        row = rows[node]
        assert row["runs"] == 1000 and row["timed_runs"] == len(sampled)
        assert row["measured_seconds"] / row["timed_runs"] == pytest.approx(seconds)
        assert row["total_seconds"] == pytest.approx(seconds * 1000)
        assert row["median_seconds"] == pytest.approx(seconds)  # sampled frames in the ring


def test_busy_nodes_rank_by_their_time_in_a_flat_program() -> None:
    patch = Patch()
    patch.add_node("time.seconds", node_id="t")
    # A hundredfold apart: a busy machine's late wake-ups (milliseconds) never swap them.
    patch.add_node("debug.sleep", {"seconds": 0.0002}, node_id="small")
    patch.add_node("debug.sleep", {"seconds": 0.02}, node_id="big")
    patch.connect("t", "out", "small", "x")
    patch.connect("small", "out", "big", "x")
    patch.add_node("output.value", node_id="sink")
    patch.connect("big", "out", "sink", "in")
    evaluator = FlatEvaluator(patch)
    evaluator.observer.profiler.sample_every = 4
    try:
        for frame in range(24):
            evaluator.run_frame(frame / 60.0, frame)
        rows = evaluator.observer.profiler.report()
    finally:
        evaluator.close()
    assert [row["node"] for row in rows][:2] == ["big", "small"]
    assert rows[0]["runs"] == rows[1]["runs"] == 24
    assert 2 <= rows[0]["timed_runs"] == rows[1]["timed_runs"] <= 24


def test_frames_the_system_held_up_do_not_bring_the_period_down_to_sample_every() -> None:
    profiler = Profiler(sample_every=32)
    feed(profiler, 50, untimed=0.001, timed=0.004)
    assert profiler.sample_period() == 100
    feed(profiler, 3, untimed=0.05, timed=0.004)  # three frames preempted for 50 ms
    assert profiler.sample_period() > 60
    feed(profiler, 40, untimed=0.001, timed=0.004)
    assert profiler.sample_period() == 100
