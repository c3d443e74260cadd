"""The profiler, on every evaluator kind: reasons counted per node run, cache hits, the frame-budget
capture, the costliest-node ranking, `explain(node_id)` texts and the trace."""

from __future__ import annotations

import json
from typing import Any

import pytest

from evaluators import Profiler
from evaluators.insight.profiler import REASON_TEXT
from nodes import Patch, UnknownNodeError

SLOW_SECONDS = 0.02  # over the default 1/60 s frame budget


def two_branches() -> Patch:
    """t -> a (+k) -> b (+j) -> sink: k and j are CONST, a and b HOT; and a USER cone
    u -> m -> c feeding b's sibling h, which adds t."""
    patch = Patch()
    patch.add_node("time.seconds", node_id="t")
    patch.add_node("value.float", {"value": 1.0}, node_id="k")
    patch.add_node("value.float", {"value": 2.0}, node_id="j")
    patch.add_node("math.add", node_id="a")
    patch.connect("k", "out", "a", "a")
    patch.connect("t", "out", "a", "b")
    patch.add_node("math.add", node_id="b")
    patch.connect("j", "out", "b", "a")
    patch.connect("a", "out", "b", "b")
    patch.add_node("input.float", {"value": 0.5}, node_id="u")
    patch.add_node("math.mul", {"b": 2.0}, node_id="m")
    patch.connect("u", "out", "m", "a")
    patch.add_node("math.add", node_id="c")
    patch.connect("m", "out", "c", "a")
    patch.connect("k", "out", "c", "b")
    patch.add_node("math.add", node_id="h")
    patch.connect("c", "out", "h", "a")
    patch.connect("b", "out", "h", "b")
    patch.add_node("output.value", node_id="sink")
    patch.connect("h", "out", "sink", "in")
    return patch


def run(evaluator: Any, frames: range) -> None:
    for frame in frames:
        evaluator.run_frame(frame / 60.0, frame)


def settled(evaluator: Any) -> None:
    """Run until the dual evaluator runs its flat program (the others: a few frames)."""
    run(evaluator, range(3))
    if hasattr(evaluator, "wait_for_flat"):
        assert evaluator.wait_for_flat()
    run(evaluator, range(3, 5))


def last_reasons(evaluator: Any) -> dict[str, str]:
    return evaluator.observer.profiler.frames[-1].reasons()


def test_first_frame_reasons(make_evaluator) -> None:
    evaluator = make_evaluator(two_branches())
    run(evaluator, range(1))
    reasons = last_reasons(evaluator)
    assert reasons["t"] == "non-deterministic"
    assert reasons["a"] == reasons["b"] == reasons["h"] == reasons["sink"] == "HOT"
    assert {reasons[n] for n in ("k", "j", "u", "m", "c")} == {"first run"}


def test_const_node_logs_a_hit_after_an_unrelated_edit(make_evaluator) -> None:
    patch = two_branches()
    evaluator = make_evaluator(patch)
    settled(evaluator)
    profiler = evaluator.observer.profiler
    hits_before = profiler.counts("k")["cache hit"]
    patch.set_value("j", "value", 3.0)
    run(evaluator, range(5, 6))
    reasons = last_reasons(evaluator)
    assert reasons["k"] == "cache hit"
    assert reasons["j"] == "value edited"
    assert profiler.counts("k")["cache hit"] == hits_before + 1
    assert profiler.counts("k").get("first run") == 1
    assert sum(n for r, n in profiler.counts("k").items() if r != "cache hit") == 1
    assert profiler.counts("j").get("value edited") == 1


def test_live_edit_logs_user_input_changed_only_in_the_user_cone(make_evaluator) -> None:
    patch = two_branches()
    evaluator = make_evaluator(patch)
    settled(evaluator)
    patch.set_value("u", "value", 0.7, live=True)
    run(evaluator, range(5, 6))
    reasons = last_reasons(evaluator)
    changed = {node for node, reason in reasons.items() if reason == "user input changed"}
    assert changed == {"u", "m", "c"}
    assert reasons["k"] == reasons["j"] == "cache hit"
    assert reasons["h"] == "HOT"  # downstream, but HOT: it runs every frame anyway
    runs = {run[0]: run[4] for run in evaluator.observer.profiler.frames[-1].runs()}
    assert runs["u"] == "value" and runs["m"] == "a from u" and runs["c"] == "a from m"


def test_editor_edit_logs_value_edited_then_input_changed(make_evaluator) -> None:
    patch = two_branches()
    evaluator = make_evaluator(patch)
    settled(evaluator)
    patch.set_value("u", "value", 0.7)
    run(evaluator, range(5, 6))
    reasons = last_reasons(evaluator)
    assert reasons["u"] == "value edited"
    assert reasons["m"] == reasons["c"] == "input changed"
    assert "user input changed" not in reasons.values()


def test_retry_logs_forced(make_evaluator) -> None:
    evaluator = make_evaluator(two_branches())
    settled(evaluator)
    evaluator.ctx.bypass("j", 2.0)
    run(evaluator, range(5, 6))
    assert any(line.startswith("bypassed: took 2.0 s") for line in evaluator.explain("j"))
    evaluator.retry("j")
    run(evaluator, range(6, 7))
    assert last_reasons(evaluator)["j"] == "forced"
    assert "ran at frame 6: forced" in evaluator.explain("j")


def test_dropped_cache_logs_cache_evicted(make_evaluator) -> None:
    patch = two_branches()
    evaluator = make_evaluator(patch)
    settled(evaluator)
    patch.update_settings(resolution=[320, 200])  # cache keys leave settings out: all dropped
    run(evaluator, range(5, 6))
    reasons = last_reasons(evaluator)
    assert {reasons[node] for node in ("k", "j", "u", "m", "c")} == {"cache evicted"}


def test_unrelated_structural_edit_keeps_cached_nodes(make_evaluator) -> None:
    patch = two_branches()
    evaluator = make_evaluator(patch)
    settled(evaluator)
    patch.add_node("value.float", {"value": 9.0}, node_id="z")
    run(evaluator, range(5, 6))
    if hasattr(evaluator, "wait_for_flat"):
        assert evaluator.wait_for_flat()
        run(evaluator, range(6, 7))  # the new program's first frame
    reasons = last_reasons(evaluator)
    assert reasons["k"] == reasons["j"] == reasons["c"] == "cache hit"
    assert "z" not in reasons  # nothing needs it


def test_slow_node_triggers_the_frame_capture_and_ranks_first(make_evaluator) -> None:
    patch = two_branches()
    patch.add_node("debug.sleep", {"seconds": SLOW_SECONDS}, node_id="slow")
    patch.disconnect("h", "out", "sink", "in")
    patch.connect("h", "out", "slow", "x")
    patch.connect("slow", "out", "sink", "in")
    evaluator = make_evaluator(patch)
    profiler = evaluator.observer.profiler = Profiler(budget=1.0 / 60.0, keep_over_budget=3)
    settled(evaluator)
    assert profiler.over_budget, "no frame was captured"
    assert len(profiler.over_budget) == 3  # the last ones only
    assert all(record.seconds > profiler.budget for record in profiler.over_budget)
    assert [record.frame for record in profiler.over_budget] == [2, 3, 4]
    ranking = profiler.report()
    # By median self time, which one run of another node held up by a busy machine cannot
    # turn (the ranking by total time can, once in a while).
    slowest = max(ranking, key=lambda row: row["median_seconds"])
    assert slowest["node"] == "slow" and slowest["total_seconds"] >= 5 * SLOW_SECONDS
    assert slowest["runs"] == 5 and slowest["reasons"] == {"non-deterministic": 5}
    assert slowest["timed_runs"] >= 1


def test_explain_hot_chain_cached_and_edited(make_evaluator) -> None:
    patch = two_branches()
    evaluator = make_evaluator(patch)
    settled(evaluator)
    patch.set_value("j", "value", 5.0)
    run(evaluator, range(5, 7))
    assert evaluator.explain("b")[0] == (
        "HOT because it depends on time.seconds, which runs every frame: t -> a -> this node"
    )
    assert evaluator.explain("a")[0] == (
        "HOT because it depends on time.seconds, which runs every frame: t -> this node"
    )
    assert evaluator.explain("b")[1] == "ran at frame 6: HOT"
    assert evaluator.explain("t")[0] == "non-deterministic: time.seconds runs every frame"
    k = evaluator.explain("k")
    assert k[0] == "CONST: runs once, then its cached result is served"
    assert "ran at frame 0: first run" in k
    assert "cached: inputs unchanged since frame 0" in k
    j = evaluator.explain("j")
    assert "ran at frame 5: value edited (value)" in j
    assert "cached: inputs unchanged since frame 5" in j
    assert evaluator.explain("m")[0].startswith("USER")
    with pytest.raises(UnknownNodeError):
        evaluator.explain("nope")


def test_ring_keeps_the_last_frames_and_can_be_switched_off(make_evaluator) -> None:
    evaluator = make_evaluator(two_branches())
    profiler = evaluator.observer.profiler = Profiler(frames=4)
    run(evaluator, range(10))
    assert [record.frame for record in profiler.frames] == [6, 7, 8, 9]
    assert profiler.counts("t")["non-deterministic"] == 10
    profiler.enabled = False
    run(evaluator, range(10, 13))
    assert [record.frame for record in profiler.frames] == [6, 7, 8, 9]
    assert evaluator.output("sink") == pytest.approx(1.0 + 12 / 60.0 + 2.0 + (0.5 * 2.0 + 1.0))


def test_trace_is_valid_trace_event_json(make_evaluator) -> None:
    evaluator = make_evaluator(two_branches())
    evaluator.observer.profiler = Profiler(sample_every=1)
    run(evaluator, range(4))
    trace = json.loads(json.dumps(evaluator.observer.profiler.trace()))
    events = trace["traceEvents"]
    complete = [e for e in events if e["ph"] == "X"]
    assert {e["name"] for e in complete} >= {"t", "a", "b", "h", "frame 0", "frame 3"}
    for event in complete:
        assert {"name", "ph", "ts", "dur", "pid", "tid"} <= set(event)
        assert event["dur"] >= 0
    assert {e["args"]["name"] for e in events if e["ph"] == "M"} >= {"frame", "hot", "lazy"}
    assert set(REASON_TEXT) >= {e["args"]["reason"] for e in complete if "reason" in e["args"]}
    small = evaluator.observer.profiler.trace(max_events=1)  # the latest frame only
    assert {e["args"]["frame"] for e in small["traceEvents"] if e["ph"] == "X"} == {3}


def test_time_a_switch_pulls_is_the_pulled_nodes_not_the_switchs(make_evaluator) -> None:
    """Self times: the 20 ms node behind a lazy input ranks first, not the switch pulling it."""
    patch = Patch()
    patch.add_node("time.seconds", node_id="t")
    patch.add_node("debug.sleep", {"seconds": SLOW_SECONDS}, node_id="slow")
    patch.connect("t", "out", "slow", "x")
    patch.add_node("logic.switch", {"index": 0.0}, node_id="switch")
    patch.connect("slow", "out", "switch", "in0")
    patch.add_node("output.value", node_id="sink")
    patch.connect("switch", "out", "sink", "in")
    evaluator = make_evaluator(patch)
    profiler = evaluator.observer.profiler
    settled(evaluator)
    ranking = [row["node"] for row in profiler.report()]
    assert ranking[0] == "slow"
    assert profiler.counts("slow") == {"non-deterministic": 5}
    assert profiler.counts("switch") == {"HOT": 5}
    pulled = [run for record in profiler.frames for run in record.runs() if run[0] == "slow"]
    assert {run[5] for run in pulled} <= {"lazy", "pulled"} and len(pulled) == 5
