"""Caching semantics shared by the lazy, flat and dual evaluators, counted with `nodes_run` and
per-node statuses; failure handling; node state across swaps and edits; the dual evaluator's
modes, builds and swaps."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from evaluators import DualEvaluator, FlatEvaluator, LazyEvaluator
from nodes import Patch
from tests.waiting import BUILD_TIMEOUT_S


class Runner:
    """Runs frames at 60 fps and reports how many compute calls each frame made."""

    def __init__(self, evaluator: Any) -> None:
        self.evaluator = evaluator
        self.frame = 0
        self.revision = -1  # of the patch at the last frame

    def run(self, count: int = 1) -> int:
        before = self.evaluator.nodes_run
        evaluator = self.evaluator
        for _ in range(count):
            if (
                isinstance(evaluator, DualEvaluator)
                and evaluator.mode == "lazy"
                and evaluator.patch.revision == self.revision
            ):
                # the first frame after a structural edit runs lazy; let the build land for the
                # following ones, so that both halves are exercised
                assert evaluator.wait_for_flat(BUILD_TIMEOUT_S)
            evaluator.run_frame(self.frame / 60, self.frame)
            self.revision = evaluator.patch.revision
            self.frame += 1
        return evaluator.nodes_run - before

    def statuses(self, patch: Patch) -> dict[str, str]:
        return {node_id: self.evaluator.status(node_id) for node_id in patch.nodes}


def sink_of(patch: Patch, node: str, pin: str = "out", dst: str = "in") -> str:
    sink = patch.add_node("output.value")
    patch.connect(node, pin, sink, dst)
    return sink


# ----------------------------------------------------------------------------- CONST / USER / HOT


def test_const_runs_once(make_evaluator) -> None:
    patch = Patch()
    value = patch.add_node("value.float", {"value": 2.0})
    add = patch.add_node("math.add", {"b": 3.0})
    patch.connect(value, "out", add, "a")
    sink = sink_of(patch, add)
    runner = Runner(make_evaluator(patch))
    assert runner.run() == 3
    assert runner.evaluator.output(sink) == 5.0
    assert runner.run(5) == 0
    assert runner.evaluator.output(sink) == 5.0
    assert runner.statuses(patch) == {value: "cached", add: "cached", sink: "cached"}
    assert {runner.evaluator.node_class(n) for n in patch.nodes} == {"CONST"}


def test_user_input_reruns_only_when_it_changes(make_evaluator) -> None:
    patch = Patch()
    slider = patch.add_node("input.float", {"value": 0.5})
    mul = patch.add_node("math.mul", {"b": 4.0})
    patch.connect(slider, "out", mul, "a")
    sink = sink_of(patch, mul)
    runner = Runner(make_evaluator(patch))
    assert runner.run() == 3
    assert runner.run(3) == 0
    assert runner.evaluator.node_class(sink) == "USER"
    patch.set_value(slider, "value", 0.25)
    assert runner.run() == 3
    assert runner.evaluator.output(sink) == 1.0
    assert runner.run(3) == 0
    # setting the same value again is an edit too, but only of that cone
    patch.set_value(slider, "max", 2.0)
    assert runner.run() == 3
    assert runner.evaluator.output(sink) == 1.0


def test_hot_runs_every_frame(make_evaluator) -> None:
    patch = Patch()
    seconds = patch.add_node("time.seconds")
    sin = patch.add_node("math.sin")
    patch.connect(seconds, "out", sin, "x")
    sink = sink_of(patch, sin)
    runner = Runner(make_evaluator(patch))
    for _ in range(4):
        assert runner.run() == 3
        assert runner.evaluator.output(sink) == math.sin((runner.frame - 1) / 60)
    assert runner.statuses(patch) == {seconds: "ok", sin: "ok", sink: "ok"}
    assert runner.evaluator.node_class(sin) == "HOT"


def test_mixed_patch_runs_only_its_hot_part(make_evaluator) -> None:
    patch = Patch()
    a = patch.add_node("value.float", {"value": 1.0})
    b = patch.add_node("value.float", {"value": 2.0})
    const = patch.add_node("math.mul")
    patch.connect(a, "out", const, "a")
    patch.connect(b, "out", const, "b")
    seconds = patch.add_node("time.seconds")
    add = patch.add_node("math.add")
    patch.connect(const, "out", add, "a")
    patch.connect(seconds, "out", add, "b")
    sink = sink_of(patch, add)
    runner = Runner(make_evaluator(patch))
    assert runner.run() == 6
    for _ in range(3):
        assert runner.run() == 3  # time, add, sink
        assert runner.evaluator.output(sink) == 2.0 + (runner.frame - 1) / 60
    statuses = runner.statuses(patch)
    assert statuses == {
        a: "cached",
        b: "cached",
        const: "cached",
        seconds: "ok",
        add: "ok",
        sink: "ok",
    }


@pytest.fixture
def cones() -> tuple[Patch, dict[str, str]]:
    """a, b -> A; c -> D; A, D -> C -> out; e -> E -> out2 (a second, independent sink)."""
    patch = Patch()
    n = {
        "a": patch.add_node("value.float", {"value": 1.0}),
        "b": patch.add_node("input.float", {"value": 0.5}),
        "c": patch.add_node("value.float", {"value": 0.0}),
        "A": patch.add_node("math.add"),
        "D": patch.add_node("math.cos"),
        "C": patch.add_node("math.mul"),
        "e": patch.add_node("input.float", {"value": 0.25}),
        "E": patch.add_node("math.abs"),
    }
    patch.connect(n["a"], "out", n["A"], "a")
    patch.connect(n["b"], "out", n["A"], "b")
    patch.connect(n["c"], "out", n["D"], "x")
    patch.connect(n["A"], "out", n["C"], "a")
    patch.connect(n["D"], "out", n["C"], "b")
    patch.connect(n["e"], "out", n["E"], "x")
    n["out"] = sink_of(patch, n["C"])
    n["out2"] = sink_of(patch, n["E"])
    return patch, n


def test_value_edit_reruns_exactly_the_downstream_cone(make_evaluator, cones) -> None:
    patch, n = cones
    runner = Runner(make_evaluator(patch))
    assert runner.run() == 10
    assert runner.evaluator.output(n["out"]) == 1.5
    for edited, cone in [
        ("b", {"b", "A", "C", "out"}),
        ("c", {"c", "D", "C", "out"}),
        ("e", {"e", "E", "out2"}),
        ("C", {"C", "out"}),
    ]:
        pin = "b" if edited == "C" else "value"
        patch.set_value(n[edited], pin, 0.75)
        assert runner.run() == len(cone), edited
        statuses = runner.statuses(patch)
        assert {k for k in n if statuses[n[k]] == "ok"} == cone, edited
        assert {k for k in n if statuses[n[k]] == "cached"} == set(n) - cone, edited
        assert runner.run() == 0
    assert runner.evaluator.output(n["out"]) == pytest.approx((1.0 + 0.75) * math.cos(0.75))
    assert runner.evaluator.output(n["out2"]) == 0.75


def test_structural_edit_keeps_cached_upstream_results(make_evaluator, cones) -> None:
    patch, n = cones
    runner = Runner(make_evaluator(patch))
    runner.run(2)
    # insert a node between C and out: only the new node and the sink run again
    patch.disconnect(n["C"], "out", n["out"], "in")
    neg = patch.add_node("math.sub", {"a": 0.0})
    patch.connect(n["C"], "out", neg, "b")
    patch.connect(neg, "out", n["out"], "in")
    assert runner.run() == 2
    assert runner.evaluator.output(n["out"]) == -1.5
    statuses = runner.statuses(patch)
    assert statuses[neg] == "ok" and statuses[n["out"]] == "ok"
    assert all(statuses[n[k]] == "cached" for k in ("a", "b", "c", "A", "D", "C", "e", "E"))
    # a new sink on an existing cached node runs only itself
    extra = sink_of(patch, n["A"])
    assert runner.run() == 1
    assert runner.evaluator.output(extra) == 1.5
    # removing an unrelated branch reruns nothing
    patch.remove_node(n["out2"])
    assert runner.run() == 0
    assert runner.statuses(patch)[n["E"]] == "idle"


def test_idle_nodes_are_not_run(make_evaluator) -> None:
    patch = Patch()
    seconds = patch.add_node("time.seconds")
    unused = patch.add_node("math.sin")
    patch.connect(seconds, "out", unused, "x")
    lonely = patch.add_node("value.float")
    value = patch.add_node("value.float", {"value": 3.0})
    sink = sink_of(patch, value)
    runner = Runner(make_evaluator(patch))
    assert runner.run(3) == 2
    statuses = runner.statuses(patch)
    assert statuses == {
        seconds: "idle",
        unused: "idle",
        lonely: "idle",
        value: "cached",
        sink: "cached",
    }
    assert runner.evaluator.output(sink) == 3.0


# ----------------------------------------------------------------------------- failures


def test_failing_node(make_evaluator) -> None:
    patch = Patch()
    seconds = patch.add_node("time.seconds")
    divisor = patch.add_node("input.float", {"value": 2.0, "min": -10.0, "max": 10.0})
    div = patch.add_node("math.div")
    patch.connect(seconds, "out", div, "a")
    patch.connect(divisor, "out", div, "b")
    out = sink_of(patch, div)
    other = sink_of(patch, seconds)
    fail = patch.add_node("debug.fail", {"message": "no luck\nsecond line"})
    patch.connect(seconds, "out", fail, "x")
    failed_sink = sink_of(patch, fail)
    runner = Runner(make_evaluator(patch))
    runner.run(2)
    evaluator = runner.evaluator
    assert evaluator.output(out) == (1 / 60) / 2
    assert evaluator.status(fail) == "failed"
    assert evaluator.error(fail) == "RuntimeError: no luck"
    assert evaluator.output(fail) == 0.0  # never ran: the output pin's default
    assert evaluator.status(failed_sink) == "ok"  # it still runs, on the default
    assert evaluator.error(div) is None
    patch.set_value(divisor, "value", 0.0)
    runner.run(2)  # never raises
    assert evaluator.status(div) == "failed"
    assert "ZeroDivisionError" in evaluator.error(div)
    assert evaluator.output(div) == (1 / 60) / 2  # last good value
    assert evaluator.output(out) == (1 / 60) / 2
    assert evaluator.output(other) == 3 / 60  # other nodes still run
    assert evaluator.status(other) == "ok"
    patch.set_value(divisor, "value", 1.0)
    runner.run()
    assert evaluator.status(div) == "ok"
    assert evaluator.error(div) is None
    assert evaluator.output(out) == 4 / 60


def test_failing_constant_is_cached_as_failed(make_evaluator) -> None:
    patch = Patch()
    a = patch.add_node("value.float", {"value": 1.0})
    b = patch.add_node("input.float", {"value": 2.0, "min": -1.0, "max": 10.0})
    div = patch.add_node("math.div")
    patch.connect(a, "out", div, "a")
    patch.connect(b, "out", div, "b")
    sink = sink_of(patch, div)
    runner = Runner(make_evaluator(patch))
    runner.run()
    assert runner.evaluator.output(sink) == 0.5
    patch.set_value(b, "value", 0.0)
    assert runner.run() == 3  # b, div (fails), sink (on the last good value)
    assert runner.evaluator.status(div) == "failed"
    assert runner.evaluator.output(div) == 0.5
    assert runner.evaluator.output(sink) == 0.5
    assert runner.run(3) == 0  # a failure is cached like a result
    assert runner.evaluator.status(div) == "failed"
    assert "ZeroDivisionError" in runner.evaluator.error(div)
    patch.set_value(b, "value", 4.0)
    assert runner.run() == 3
    assert runner.evaluator.status(div) == "cached" or runner.evaluator.status(div) == "ok"
    assert runner.evaluator.output(sink) == 0.25


# ----------------------------------------------------------------------------- state


def lfo_patch() -> tuple[Patch, str, str]:
    patch = Patch()
    lfo = patch.add_node("time.lfo", {"hz": 0.7, "shape": 2})
    return patch, lfo, sink_of(patch, lfo)


def reference_lfo(frames: int) -> list[float]:
    patch, _, sink = lfo_patch()
    evaluator = LazyEvaluator(patch)
    seen = []
    for frame in range(frames):
        evaluator.run_frame(frame / 60, frame)
        seen.append(evaluator.output(sink))
    return seen


def test_lfo_state_survives_unrelated_structural_edits(make_evaluator) -> None:
    patch, _, sink = lfo_patch()
    evaluator = make_evaluator(patch)
    expected = reference_lfo(40)
    seen = []
    for frame in range(40):
        if frame % 7 == 3:  # an edit in another corner of the patch
            value = patch.add_node("value.float", {"value": float(frame)})
            sink_of(patch, value)
        if frame % 11 == 5:
            patch.remove_node(next(n for n in patch.nodes if n.startswith("float")))
        evaluator.run_frame(frame / 60, frame)
        seen.append(evaluator.output(sink))
    assert seen == expected


def test_state_survives_dual_swaps() -> None:
    patch, lfo, sink = lfo_patch()
    delay = patch.add_node("util.frame_delay", {"init": 0.0})
    count = patch.add_node("math.add", {"b": 1.0})
    patch.connect(delay, "out", count, "a")
    patch.connect(count, "out", delay, "in")
    counter = sink_of(patch, count)
    dual = DualEvaluator(patch, debounce=0)
    expected = reference_lfo(30)
    modes = []
    try:
        for frame in range(30):
            if frame in (10, 20):
                sink_of(patch, patch.add_node("value.float"))  # back to lazy
                assert dual.mode == "lazy"
            dual.run_frame(frame / 60, frame)
            modes.append(dual.mode)
            assert dual.output(sink) == expected[frame], frame
            assert dual.output(counter) == frame + 1, frame
            if frame in (0, 12, 25):
                assert dual.wait_for_flat(BUILD_TIMEOUT_S)
        assert "flat" in modes and dual.swaps >= 3
        assert dual.status(lfo) == "ok"
    finally:
        dual.close()


def test_feedback_state_survives_a_swap_while_frames_run_during_the_build() -> None:
    """Lazy frames keep running while the background build compiles a large patch: the counter
    loop must not see a stale frame-delay value when the program is swapped in."""
    patch = Patch()
    previous = patch.add_node("value.float", {"value": 1.0})
    for _ in range(4000):
        node = patch.add_node("math.mul", {"b": 1.0})
        patch.connect(previous, "out", node, "a")
        previous = node
    sink_of(patch, previous)
    delay = patch.add_node("util.frame_delay", {"init": 0.0})
    count = patch.add_node("math.add", {"b": 1.0})
    patch.connect(delay, "out", count, "a")
    patch.connect(count, "out", delay, "in")
    counter = sink_of(patch, count)
    dual = DualEvaluator(patch, debounce=0)
    try:
        frame = 0
        deadline = time.monotonic() + BUILD_TIMEOUT_S
        while dual.swaps == 0 and time.monotonic() < deadline:
            dual.run_frame(frame / 60, frame)
            assert dual.output(counter) == frame + 1, (frame, dual.mode)
            frame += 1
            time.sleep(0.001)
        assert dual.swaps, "the background build never swapped in"
        for _ in range(5):
            dual.run_frame(frame / 60, frame)
            assert dual.mode == "flat"
            assert dual.output(counter) == frame + 1, (frame, dual.mode)
            frame += 1
    finally:
        dual.close()


# ----------------------------------------------------------------------------- dual evaluator


def test_dual_modes_builds_and_times() -> None:
    patch, lfo, sink = lfo_patch()
    dual = DualEvaluator(patch, debounce=0)
    try:
        assert dual.mode == "lazy"
        dual.run_frame(0.0, 0)
        assert dual.last_frame_seconds > 0
        assert dual.wait_for_flat(BUILD_TIMEOUT_S)
        assert dual.mode == "flat"
        assert dual.builds == 1 and dual.swaps == 1
        assert dual.last_build_seconds > 0
        dual.run_frame(1 / 60, 1)
        assert dual.mode == "flat"
        # a structural edit: lazy at once, and the very next frame shows it
        add = patch.add_node("math.add", {"b": 10.0})
        assert dual.mode == "lazy"
        patch.disconnect(lfo, "out", sink, "in")
        patch.connect(lfo, "out", add, "a")
        patch.connect(add, "out", sink, "in")
        dual.run_frame(2 / 60, 2)
        assert dual.output(sink) == pytest.approx(10.0 + (2 / 60 * 0.7) % 1.0)
        assert dual.wait_for_flat(BUILD_TIMEOUT_S)
        assert dual.mode == "flat"
        assert dual.program.revision == patch.revision
        builds = dual.builds
        # value edits never rebuild
        for frame in range(3, 13):
            patch.set_value(add, "b", float(frame))
            dual.run_frame(frame / 60, frame)
            assert dual.mode == "flat"
            assert dual.output(sink) == pytest.approx(frame + (frame / 60 * 0.7) % 1.0)
        assert dual.builds == builds
    finally:
        dual.close()


def test_dual_debounces_full_builds() -> None:
    patch, _, _ = lfo_patch()
    dual = DualEvaluator(patch, debounce=3600, incremental=False)
    try:
        dual.run_frame(0.0, 0)  # no edit yet: the first build starts at once
        assert dual.wait_for_flat(BUILD_TIMEOUT_S) and dual.builds == 1
        for frame in range(1, 6):
            patch.add_node("value.float")
            dual.run_frame(frame / 60, frame)
        assert dual.builds == 1 and dual.mode == "lazy"
    finally:
        dual.close()


def test_a_small_edit_is_built_from_the_stopped_program_on_the_next_frame() -> None:
    """The frame after a small structural edit builds the program from the one the edit
    stopped (no lazy frame, no debounce): it shows the edit, runs flat, and keeps the steps of
    every node the edit did not touch."""
    patch, _, sink = lfo_patch()
    dual = DualEvaluator(patch, debounce=3600)
    try:
        dual.run_frame(0.0, 0)
        assert dual.wait_for_flat(BUILD_TIMEOUT_S) and dual.builds == 1
        before = dual.program
        assert before is not None
        kept = {before.ir.ids[i]: steps for i, steps in before.node_steps.items()}
        link = next(link for link in patch.links if link.dst == sink)
        patch.disconnect(*link)
        added = patch.add_node("math.add", {"b": 100.0})
        patch.connect(link.src, link.src_pin, added, "a")
        patch.connect(added, "out", sink, "in")
        dual.run_frame(1 / 60, 1)
        assert dual.mode == "flat" and dual.derived_swaps == 1 and dual.builds == 2
        after = dual.program
        assert after is not None and after.derived
        assert all(after.node_steps[after.ir.index[k]] is s for k, s in kept.items() if k != sink)
        assert dual.output(sink) == dual.output(link.src, link.src_pin) + 100.0
    finally:
        dual.close()


def test_a_big_edit_runs_lazily_then_builds_in_the_background() -> None:
    """An edit touching more than a quarter of the patch: the next frame is lazy (it shows the
    edit), and the flat program comes from a background build after the debounce."""
    patch, _, _ = lfo_patch()
    dual = DualEvaluator(patch, debounce=0.0)
    try:
        dual.run_frame(0.0, 0)
        assert dual.wait_for_flat(BUILD_TIMEOUT_S)
        for _ in range(40):
            patch.add_node("value.float")
        dual.run_frame(1 / 60, 1)
        assert dual.mode == "lazy" and dual.derived_swaps == 0
        assert dual.wait_for_flat(BUILD_TIMEOUT_S)
        dual.run_frame(2 / 60, 2)
        assert dual.mode == "flat" and dual.program is not None and not dual.program.derived
    finally:
        dual.close()


def test_dual_does_not_swap_in_a_program_for_an_old_revision() -> None:
    patch, _, sink = lfo_patch()
    dual = DualEvaluator(patch, debounce=0)
    try:
        dual.run_frame(0.0, 0)  # asks for a build of this revision
        assert dual.builds == 1
        old_revision = patch.revision
        extra = sink_of(patch, patch.add_node("value.float", {"value": 5.0}))
        assert patch.revision != old_revision
        assert dual.wait_for_flat(BUILD_TIMEOUT_S)
        assert dual.program.revision == patch.revision
        assert dual.builds == 2 and dual.swaps == 1  # the first program was dropped
        dual.run_frame(1 / 60, 1)
        assert dual.output(extra) == 5.0
        assert dual.status(extra) in ("ok", "cached")
        assert dual.output(sink) == pytest.approx((1 / 60 * 0.7) % 1.0)
    finally:
        dual.close()


def test_dual_replays_value_edits_made_during_a_build() -> None:
    patch = Patch()
    slider = patch.add_node("input.float", {"value": 0.5})
    sink = sink_of(patch, slider)
    dual = DualEvaluator(patch, debounce=0)
    try:
        dual.run_frame(0.0, 0)  # build requested from this snapshot
        patch.set_value(slider, "value", 0.75)  # after the snapshot
        assert dual.wait_for_flat(BUILD_TIMEOUT_S)
        dual.run_frame(1 / 60, 1)
        assert dual.output(sink) == 0.75
    finally:
        dual.close()


def test_flat_nodes_run_counts_across_rebuilds() -> None:
    patch = Patch()
    seconds = patch.add_node("time.seconds")
    sink_of(patch, seconds)
    flat = FlatEvaluator(patch)
    runner = Runner(flat)
    assert runner.run(2) == 4
    sink_of(patch, patch.add_node("value.float"))
    assert runner.run() == 4  # time, its sink, the new value and its sink
    assert flat.nodes_run == 8


def test_watching_a_node_keeps_state_and_counts(make_evaluator) -> None:
    patch = Patch()
    delay = patch.add_node("util.frame_delay", {"init": 0.0})
    count = patch.add_node("math.add", {"b": 1.0})
    patch.connect(delay, "out", count, "a")
    patch.connect(count, "out", delay, "in")
    counter = sink_of(patch, count)
    seconds = patch.add_node("time.seconds")
    evaluator = make_evaluator(patch)
    runner = Runner(evaluator)
    assert runner.run(3) == 9
    assert evaluator.output(counter) == 3.0
    evaluator.watch([seconds])  # a preview of a node no sink needs
    assert runner.run() == 4
    assert evaluator.output(counter) == 4.0
    assert evaluator.output(seconds) == 3 / 60
    assert evaluator.nodes_run == 13
