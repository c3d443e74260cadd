"""The background build is never starved: frames that run back to back grant the builder slices.

The turns themselves are tested with a fake clock that moves a fixed step at every reading (time
passes only as code runs), so a slice is counted in clock readings, not measured in seconds.
"""

from __future__ import annotations

import threading
import time

from app.bench.patches import hot_chain
from evaluators import DualEvaluator, FlatEvaluator
from evaluators.dual import _Turns
from evaluators.flat.incremental import MAX_CHANGED, MAX_CHANGED_BACKGROUND
from nodes import Patch
from tests.waiting import BUILD_TIMEOUT_S


class StepClock:
    """A clock that moves `step` seconds at every reading, whichever thread reads it."""

    def __init__(self, step: float = 1e-4) -> None:
        self.now = 0.0
        self.step = step
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            self.now += self.step
            return self.now


def test_a_granted_slice_lets_the_builder_run_until_it_is_used_then_hands_the_turn_back():
    clock = StepClock(step=1e-3)
    turns = _Turns(clock)
    turns.work_added()
    turns.frame_started()  # a frame holds the turn: the builder waits
    steps = []
    stop = threading.Event()

    def builder() -> None:
        while not stop.is_set():
            turns.wait_for_turn()
            steps.append(clock.now)

    thread = threading.Thread(target=builder, daemon=True)
    thread.start()
    time.sleep(0.05)
    assert steps == []  # never during a frame

    ran = turns.grant(0.010, real_limit=BUILD_TIMEOUT_S)  # ten readings of the clock
    assert 0.010 <= ran < 0.020
    taken = len(steps)
    assert 5 <= taken <= 12
    time.sleep(0.05)
    assert len(steps) == taken  # the slice is used up: it waits for the frame to end

    turns.frame_ended()  # between frames the builder runs freely
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    while len(steps) < taken + 100 and time.monotonic() < deadline:
        time.sleep(0.001)
    assert len(steps) >= taken + 100
    stop.set()
    turns.stop()
    thread.join(timeout=BUILD_TIMEOUT_S)
    assert not thread.is_alive()


def test_a_grant_returns_at_once_when_the_builder_has_no_work():
    turns = _Turns(StepClock())
    assert turns.grant(1.0, real_limit=BUILD_TIMEOUT_S) == 0.0


def frames_until_flat(dual: DualEvaluator, idle_s: float = 0.0) -> int:
    """Run frames until `dual` runs flat (by a generous deadline), each followed by `idle_s` of
    idle time; returns the number of frames run."""
    frame = 0
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    while dual.mode != "flat" and time.monotonic() < deadline:
        dual.run_frame(frame / 60, frame)
        frame += 1
        time.sleep(idle_s)
    assert dual.mode == "flat"
    return frame


def test_frames_back_to_back_reach_flat_through_the_slices_they_grant():
    dual = DualEvaluator(hot_chain(3000), debounce=0.0)
    try:
        frame = frames_until_flat(dual)  # back to back: no idle time
        assert dual.granted_seconds > 0
        # Once the build and its code are done, frames grant nothing more.
        deadline = time.monotonic() + BUILD_TIMEOUT_S
        while dual._builder is not None and dual._builder.turns.busy:
            assert time.monotonic() < deadline
            dual.run_frame(frame / 60, frame)
            frame += 1
        granted = dual.granted_seconds
        for _ in range(5):
            dual.run_frame(frame / 60, frame)
            frame += 1
        assert dual.granted_seconds == granted
        assert dual.program is not None and dual.program.hot_code is not None
        assert dual.program.hot_code.ready
    finally:
        dual.close()


def test_frames_with_idle_time_between_them_grant_nothing():
    dual = DualEvaluator(hot_chain(3000), debounce=0.0)
    try:
        # Idle time at least the longest slice a frame would grant: it is always enough.
        frames_until_flat(dual, idle_s=DualEvaluator.MAX_BUILD_GRANT)
        assert dual.granted_seconds == 0.0
    finally:
        dual.close()


def add_branch(patch: Patch, count: int) -> None:
    """A structural edit of `count` new nodes: a chain from the clock to a second sink."""
    previous = "time"
    for index in range(count):
        node_id = patch.add_node("math.add", {"b": 0.5}, node_id=f"branch{index}")
        patch.connect(previous, "out", node_id, "a")
        previous = node_id
    patch.add_node("output.value", node_id="branch_sink")
    patch.connect(previous, "out", "branch_sink", "in")


def test_back_to_back_a_big_edit_is_derived_before_the_next_frame_with_idle_time_it_is_not():
    """An edit touching more than MAX_CHANGED (but at most MAX_CHANGED_BACKGROUND) of the patch:
    frames back to back derive it between frames (the next frame runs flat); frames with idle
    time run lazily meanwhile, and the background build derives it."""
    touched = {}
    for rhythm, idle in (("back to back", 0.0), ("paced", 0.01)):
        clock = StepClock(step=1e-6)  # frames ~1e-5 apart on it unless idle time is added
        patch = hot_chain(400)
        dual = DualEvaluator(patch, debounce=0.0, clock=clock)
        try:
            frame = 0
            deadline = time.monotonic() + BUILD_TIMEOUT_S  # by time: a busy machine's builder
            while dual.mode != "flat" or frame < 3:  # thread may get few turns for a while
                assert time.monotonic() < deadline
                dual.run_frame(frame / 60, frame)
                clock.now += idle
                frame += 1
            assert dual.frames_back_to_back is (rhythm == "back to back")
            derived = dual.derived_swaps
            add_branch(patch, 180)  # 181 of 581 nodes: 31%
            touched[rhythm] = 181 / len(patch.nodes)
            dual.prepare()
            if rhythm == "back to back":
                assert dual.mode == "flat" and dual.derived_swaps == derived + 1
            else:
                assert dual.mode == "lazy" and dual.derived_swaps == derived
                deadline = time.monotonic() + BUILD_TIMEOUT_S
                while dual.mode != "flat":
                    assert time.monotonic() < deadline
                    dual.run_frame(frame / 60, frame)
                    clock.now += idle
                    frame += 1
                    time.sleep(0.001)  # idle time in real time too, for the builder
                assert dual.program is not None and dual.program.derived
            dual.run_frame(frame / 60, frame)
            expected = FlatEvaluator(patch)
            expected.run_frame(frame / 60, frame)
            assert dual.output("branch_sink") == expected.output("branch_sink")
            assert dual.output("sink") == expected.output("sink")
            expected.close()
        finally:
            dual.close()
    assert all(MAX_CHANGED < share <= MAX_CHANGED_BACKGROUND for share in touched.values())
