"""A node that runs too long in one frame is bypassed on later frames, in every evaluator, until
it is retried; the rest of the patch keeps running on its last output."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from evaluators import DualEvaluator, FlatEvaluator, LazyEvaluator, node_running_in
from evaluators.run.context import NODE_TIME_BUDGET_SECONDS
from nodes import LIBRARY, Determinism, Patch, node

SLEEP_SECONDS = 0.3
BUDGET_SECONDS = 0.1  # well under the sleep: a sleep never returns early
calls: list[str] = []
waiting = threading.Event()  # test.waits blocks while this is set ...
released = threading.Event()  # ... until this is


@pytest.fixture(autouse=True)
def slow_nodes() -> Iterator[None]:
    """Two test node types that sleep while `asleep` is set, one HOT and one CONST."""
    for type_id, determinism in (("test.slow_hot", Determinism.NONDETERMINISTIC),
                                 ("test.slow_const", Determinism.DETERMINISTIC)):  # fmt: skip

        @node(type_id, determinism=determinism)
        def slow(x: float = 1.0, asleep: bool = True, _type_id: str = type_id) -> float:
            calls.append(_type_id)
            if asleep:
                time.sleep(SLEEP_SECONDS)
            return x * 2.0

    @node("test.collects", determinism=Determinism.NONDETERMINISTIC)
    def collects(x: float = 1.0) -> float:
        import gc

        calls.append("test.collects")
        gc.collect()
        return x

    @node("test.waits", determinism=Determinism.NONDETERMINISTIC)
    def waits(x: float = 1.0) -> float:
        if waiting.is_set():
            released.wait(30)
        return x

    @node("test.fails", determinism=Determinism.NONDETERMINISTIC)
    def fails(x: float = 1.0) -> float:
        raise ValueError("fails every frame")

    calls.clear()
    waiting.clear()
    released.clear()
    yield
    for type_id in ("test.slow_hot", "test.slow_const", "test.collects", "test.waits"):
        del LIBRARY[type_id]
    del LIBRARY["test.fails"]


def make_evaluator(kind: type, patch: Patch) -> Any:
    if kind is DualEvaluator:
        evaluator = DualEvaluator(patch, background=False, debounce=0.0)
    else:
        evaluator = kind(patch)
    evaluator.ctx.time_budget = BUDGET_SECONDS
    return evaluator


def run_until(evaluator: Any, done: Any, start: int = 0) -> int:
    """Run frames until `done()`, by a deadline; returns the next frame number."""
    frame = start
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline, "gave up waiting"
        evaluator.run_frame(frame / 60.0, frame)
        frame += 1
    return frame


@pytest.mark.parametrize("type_id", ["test.slow_hot", "test.slow_const"])
@pytest.mark.parametrize("kind", [LazyEvaluator, FlatEvaluator, DualEvaluator])
def test_a_slow_node_is_bypassed_until_retried(kind: type, type_id: str) -> None:
    patch = Patch()
    seconds = patch.add_node("time.seconds", node_id="t")
    slow = patch.add_node(type_id, {"x": 21.0}, node_id="slow")
    after = patch.add_node("math.add", {"b": 1.0}, node_id="after")
    sink = patch.add_node("output.value", node_id="sink")
    clock = patch.add_node("output.value", node_id="clock")
    patch.connect(slow, "out", after, "a")
    patch.connect(after, "out", sink, "in")
    patch.connect(seconds, "out", clock, "in")
    evaluator = make_evaluator(kind, patch)
    frame = run_until(evaluator, lambda: evaluator.status(slow) == "failed")
    message = evaluator.error(slow)
    assert message.startswith("took 0.") and "bypassed" in message and "retry" in message
    assert evaluator.output(sink) == 43.0  # what it computed, slowly, is kept and used
    ran = len(calls)
    for _ in range(3):
        evaluator.run_frame(frame / 60.0, frame)
        frame += 1
    assert len(calls) == ran  # bypassed: not run again
    assert evaluator.status(slow) == "failed" and evaluator.error(slow) == message
    assert evaluator.output(clock) == pytest.approx((frame - 1) / 60.0)  # the rest runs
    patch.set_value(slow, "asleep", False)
    evaluator.retry(slow)
    evaluator.run_frame(frame / 60.0, frame)
    run_until(evaluator, lambda: evaluator.status(slow) in ("ok", "cached"), frame + 1)
    assert len(calls) > ran
    assert evaluator.error(slow) is None and evaluator.output(sink) == 43.0


@pytest.mark.parametrize("kind", [LazyEvaluator, FlatEvaluator])
def test_time_in_the_garbage_collector_is_no_nodes_fault(kind: type) -> None:
    """A collection that runs during a node (here one made slow on purpose) is left out."""
    import gc

    def slow_collection(phase: str, info: dict) -> None:
        if phase == "start":
            time.sleep(SLEEP_SECONDS)

    patch = Patch()
    collecting = patch.add_node("test.collects", node_id="collects")
    patch.connect(collecting, "out", patch.add_node("output.value"), "in")
    evaluator = make_evaluator(kind, patch)
    gc.callbacks.append(slow_collection)
    try:
        evaluator.run_frame(0.0, 0)
        evaluator.run_frame(1 / 60, 1)
    finally:
        gc.callbacks.remove(slow_collection)
    assert calls.count("test.collects") == 2
    assert evaluator.status(collecting) == "ok"


@pytest.mark.parametrize("after_a_failure", [False, True])
@pytest.mark.parametrize("caching", [True, False])
def test_the_watchdog_names_a_node_stuck_in_the_timed_loop(
    caching: bool, after_a_failure: bool
) -> None:
    """After a frame over the budget the flat program times its HOT steps one by one: a node that
    then hangs is still named for the engine's watchdog, also in the rest of the loop that runs
    after a failing step."""
    patch = Patch()
    stuck = patch.add_node("test.waits", node_id="stuck")
    patch.connect(stuck, "out", patch.add_node("output.value"), "in")
    if after_a_failure:
        patch.connect(patch.add_node("test.fails", node_id="fails"), "out", stuck, "x")
    evaluator = FlatEvaluator(patch, caching=caching)
    evaluator.run_frame(0.0, 0)
    assert evaluator.program is not None
    evaluator.program.timing = True  # as after a frame over the budget
    waiting.set()
    worker = threading.Thread(target=evaluator.run_frame, args=(1 / 60, 1))
    worker.start()
    named = None
    deadline = time.monotonic() + 30
    while named is None and time.monotonic() < deadline:
        named = node_running_in(worker.ident or 0)
        time.sleep(0.005)
    released.set()
    worker.join()
    evaluator.close()
    assert named == "stuck"


def test_the_default_budget_is_one_second() -> None:
    assert NODE_TIME_BUDGET_SECONDS == 1.0
    patch = Patch()
    patch.add_node("output.value")
    assert LazyEvaluator(patch).ctx.time_budget == NODE_TIME_BUDGET_SECONDS


@pytest.mark.parametrize("kind", [LazyEvaluator, FlatEvaluator, DualEvaluator])
def test_an_edit_of_a_bypassed_node_gives_it_another_chance(kind: type) -> None:
    patch = Patch()
    patch.add_node("time.frame", None, node_id="frame")
    patch.add_node("debug.sleep", {"seconds": 2 * BUDGET_SECONDS}, node_id="slow")
    patch.add_node("output.value", None, node_id="out")
    patch.connect("frame", "out", "slow", "x")
    patch.connect("slow", "out", "out", "in")
    evaluator = kind(patch)
    evaluator.ctx.time_budget = BUDGET_SECONDS
    frame = 0
    while "slow" not in evaluator.ctx.bypassed and frame < 5:
        evaluator.run_frame(frame / 60, frame)
        frame += 1
    assert evaluator.status("slow") == "failed"
    patch.set_value("slow", "seconds", 0.0)  # the person fixes it
    assert "slow" not in evaluator.ctx.bypassed
    for step in range(3):
        evaluator.run_frame((frame + step) / 60, frame + step)
    assert evaluator.status("slow") == "ok" and evaluator.output("out") == frame + 2
    evaluator.close()
