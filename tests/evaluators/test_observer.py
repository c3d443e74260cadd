"""The frame observer: one place for statuses, errors and run counts; the lazy walker, flat
programs and both halves of the dual evaluator report into it."""

from __future__ import annotations

from evaluators import DualEvaluator, FlatEvaluator, LazyEvaluator, NodeStatus
from evaluators.run.observer import FrameObserver, unreported_status
from nodes import Patch

IDLE, OK, CACHED = NodeStatus.IDLE, NodeStatus.OK, NodeStatus.CACHED
FAILED, DEFERRED = NodeStatus.FAILED, NodeStatus.DEFERRED


def test_a_bypassed_node_is_failed_whatever_it_reported() -> None:
    observer = FrameObserver()
    observer.status["a"] = OK
    observer.status["b"] = DEFERRED
    assert observer.reported("a", {"a": "took 2.0 s, bypassed"}) == FAILED
    assert observer.reported("b", {}) == DEFERRED
    assert observer.reported("c", {}) is None
    observer.derived["c"] = CACHED
    assert observer.reported("c", {}) == CACHED
    observer.begin_frame()
    assert observer.reported("b", {}) is None and observer.reported("c", {}) is None


def test_unreported_nodes_are_idle_cached_failed_or_ok() -> None:
    assert unreported_status(needed=False, cold=True, failed=True) == IDLE
    assert unreported_status(needed=False, cold=False, failed=False) == IDLE
    assert unreported_status(needed=True, cold=True, failed=False) == CACHED
    assert unreported_status(needed=True, cold=True, failed=True) == FAILED
    assert unreported_status(needed=True, cold=False, failed=False) == OK


def test_an_error_is_the_bypass_message_then_the_reported_then_the_cached_one() -> None:
    observer = FrameObserver()
    assert observer.error("a", OK, {"a": "bypassed"}, "cached") is None
    assert observer.error("a", FAILED, {"a": "bypassed"}, "cached") == "bypassed"
    assert observer.error("a", FAILED, {}, "cached") == "cached"
    observer.errors["a"] = "reported"
    assert observer.error("a", FAILED, {}, "cached") == "reported"
    observer.forget()
    assert observer.errors == {} and observer.error("a", FAILED, {}, None) is None


def _failing_chain() -> Patch:
    """time -> add -> sink, and a constant branch that fails into a second sink."""
    patch = Patch()
    patch.add_node("time.seconds", node_id="time")
    patch.add_node("math.add", {"b": 1.0}, node_id="add")
    patch.add_node("output.value", node_id="sink")
    patch.add_node("debug.fail", {"message": "broken on purpose"}, node_id="fail")
    patch.add_node("output.value", node_id="sink2")
    patch.connect("time", "out", "add", "a")
    patch.connect("add", "out", "sink", "in")
    patch.connect("fail", "out", "sink2", "in")
    return patch


def test_the_dual_evaluator_reports_both_halves_into_one_observer() -> None:
    patch = _failing_chain()
    dual = DualEvaluator(patch, debounce=0.0, background=False)
    lazy = LazyEvaluator(_failing_chain())
    try:
        assert dual.lazy.observer is dual.observer
        dual.run_frame(0.0, 0)  # lazy: every node runs once
        lazy.run_frame(0.0, 0)
        assert dual.mode == "lazy" and dual.nodes_run == lazy.nodes_run == 5
        assert dual.error("fail") == "RuntimeError: broken on purpose"
        assert dual.wait_for_flat()
        assert dual.program is not None and dual.program.observer is dual.observer
        for frame in (1, 2):
            dual.run_frame(frame / 60, frame)
            lazy.run_frame(frame / 60, frame)
            assert dual.mode == "flat"
            assert dual.nodes_run == lazy.nodes_run  # HOT nodes again, cached ones not
            for node_id in patch.nodes:
                assert dual.status(node_id) == lazy.status(node_id), node_id
                assert dual.error(node_id) == lazy.error(node_id), node_id
        assert dual.status("fail") == FAILED and dual.status("time") == OK
    finally:
        dual.close()
        lazy.close()


def test_a_flat_evaluator_counts_runs_over_every_program_it_builds() -> None:
    patch = _failing_chain()
    flat = FlatEvaluator(patch)
    try:
        flat.run_frame(0.0, 0)
        first = flat.program
        assert first is not None and first.observer is flat.observer
        assert flat.nodes_run == 5
        patch.add_node("time.seconds", node_id="time2")  # a rebuild on the next frame
        patch.connect("time2", "out", "add", "b")
        flat.run_frame(1 / 60, 1)
        assert flat.program is not first
        assert flat.nodes_run == 5 + 4  # time, time2, add, sink; fail stays cached
        assert flat.error("fail") == "RuntimeError: broken on purpose"
        assert flat.status("fail") == FAILED
    finally:
        flat.close()
