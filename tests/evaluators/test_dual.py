"""The dual evaluator's life cycle: what a click, a removal, a failing build and closing do."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest

from evaluators import DualEvaluator, FlatProgram
from evaluators import dual as _dual
from nodes import Patch
from tests.waiting import BUILD_TIMEOUT_S


def small_patch() -> Patch:
    patch = Patch()
    patch.add_node("time.seconds", node_id="t")
    patch.add_node("math.sin", node_id="wave")
    patch.add_node("value.array", {"value": np.zeros(100_000)}, node_id="big")
    patch.add_node("array.sum", node_id="total")
    patch.add_node("math.add", node_id="mix")
    patch.add_node("output.value", node_id="out")
    patch.connect("t", "out", "wave", "x")
    patch.connect("big", "out", "total", "x")
    patch.connect("wave", "out", "mix", "a")
    patch.connect("total", "out", "mix", "b")
    patch.connect("mix", "out", "out", "in")
    return patch


def flat_dual(patch: Patch, background: bool = True) -> DualEvaluator:
    dual = DualEvaluator(patch, debounce=0.0, background=background)
    dual.run_frame(0.0, 0)
    assert dual.wait_for_flat(BUILD_TIMEOUT_S)
    dual.run_frame(1 / 60, 1)
    return dual


def test_a_closed_evaluator_is_collected_with_everything_it_held() -> None:
    contexts = []
    for _ in range(3):
        dual = flat_dual(small_patch())
        assert dual.mode == "flat"
        contexts.append(weakref.ref(dual.ctx))
        dual.close()
        del dual
    gc.collect()
    assert [ref() for ref in contexts] == [None, None, None]


def test_watching_a_node_the_program_already_runs_does_not_rebuild() -> None:
    dual = flat_dual(small_patch())
    builds = dual.builds
    dual.watch(["wave"])
    assert dual.mode == "flat" and dual.builds == builds
    dual.watch([])
    assert dual.mode == "flat"
    dual.close()


def test_watching_a_node_no_sink_needs_rebuilds_to_compute_it() -> None:
    patch = small_patch()
    patch.add_node("math.cos", node_id="aside")
    patch.connect("t", "out", "aside", "x")
    dual = flat_dual(patch)
    dual.watch(["aside"])
    assert dual.mode == "lazy"
    dual.run_frame(0.5, 2)
    assert dual.output("aside") == pytest.approx(np.cos(0.5))
    assert dual.wait_for_flat(BUILD_TIMEOUT_S)
    dual.run_frame(0.75, 3)
    assert dual.output("aside") == pytest.approx(np.cos(0.75))
    dual.close()


def test_a_removed_node_leaves_nothing_in_the_context() -> None:
    patch = small_patch()
    dual = flat_dual(patch)
    patch.remove_node("total")
    assert "total" not in dual.ctx.outputs and "total" not in dual.ctx.cache
    dual.run_frame(2 / 60, 2)
    assert "total" not in dual.ctx.outputs
    dual.close()


@pytest.mark.parametrize("background", [True, False])
def test_a_program_that_fails_to_compile_keeps_the_patch_running_lazily(
    monkeypatch: pytest.MonkeyPatch, background: bool
) -> None:
    def broken(*args: object, **options: object) -> None:
        raise RuntimeError("compiler bug")

    monkeypatch.setattr(FlatProgram, "_building", broken)  # at once or by steps, every build
    patch = small_patch()
    dual = DualEvaluator(patch, debounce=0.0, background=background)
    for frame in range(5):
        dual.run_frame(frame / 60, frame)  # never raises
    assert not dual.wait_for_flat(timeout=0.5)
    assert dual.mode == "lazy"
    assert dual.last_build_error == "RuntimeError: compiler bug"
    assert dual.builds == 1  # the same patch is not compiled again and again
    assert dual.output("out") == pytest.approx(np.sin(4 / 60))
    dual.close()


def test_a_swapped_in_program_never_waits_for_the_builder(monkeypatch: pytest.MonkeyPatch) -> None:
    """The builder's yield point lets frames run first while it compiles; the program it hands
    over runs on the frame thread, where waiting for the builder would stall frames (many value
    edits at once walk the program's graph long enough to reach it)."""
    frame_thread = threading.get_ident()
    waits_on_frame_thread = []
    builder_yield = _dual._Builder._yield

    def counted(builder: object) -> None:
        if threading.get_ident() == frame_thread:
            waits_on_frame_thread.append(1)
        builder_yield(builder)

    monkeypatch.setattr(_dual._Builder, "_yield", counted)
    patch = Patch()
    knobs = [patch.add_node("input.float") for _ in range(300)]
    for knob in knobs:
        patch.connect(knob, "out", patch.add_node("output.value"), "in")
    dual = flat_dual(patch)
    assert dual.mode == "flat"
    for frame in range(2, 5):
        for knob in knobs:
            patch.set_value(knob, "value", float(frame))
        dual.run_frame(frame / 60, frame)
    assert dual.mode == "flat"
    assert waits_on_frame_thread == []
    dual.close()
