"""The flat program's memory plan on real GPU nodes: HOT outputs go back to the texture pool after
their last consumer in the frame, so a long chain needs a few render targets; what must survive
a frame keeps its own; and a node that fails after giving its target back stops its cone."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from evaluators import FlatEvaluator, LazyEvaluator
from evaluators.flat.memory_plan import hot_order, value_bytes
from evaluators.graph.ir import GraphIR, PatchSnapshot
from evaluators.services.gl import GLService
from nodes import Patch

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]

PASSES = 50


def gpu_chain(passes: int = PASSES) -> tuple[Patch, list[str], str]:
    """Animated noise, `passes` partial inverts, a `gpu.output`: (patch, pass ids, output id)."""
    patch = Patch()
    patch.update_settings(resolution=[64, 64])
    clock = patch.add_node("time.seconds")
    previous = patch.add_node("gpu.noise", {"scale": 5.0})
    patch.connect(clock, "out", previous, "time")
    steps = []
    for k in range(passes):
        step = patch.add_node("gpu.invert", {"amount": 1.0 if k % 10 else 0.9})
        patch.connect(previous, "out", step, "in")
        steps.append(previous := step)
    output = patch.add_node("gpu.output")
    patch.connect(previous, "out", output, "in")
    return patch, steps, output


def run(gl: GLService, evaluator: FlatEvaluator | LazyEvaluator, frames: range) -> None:
    for frame in frames:
        with gl.frame():
            evaluator.run_frame(frame / 60.0, frame)


@pytest.fixture
def fresh_gl(gl: GLService) -> Iterator[GLService]:
    """The module's GL service with an empty pool, so its counts are this test's."""
    gl.trim()
    yield gl
    gl.trim()


def test_a_long_gpu_chain_needs_a_few_targets_and_renders_the_same_pixels(
    fresh_gl: GLService,
) -> None:
    gl = fresh_gl
    patch, _, output = gpu_chain()
    flat = FlatEvaluator(patch, gpu=gl)
    run(gl, flat, range(4))
    allocated = gl.pool_stats()["allocated"]
    assert allocated <= 4  # the noise's, two passes' in turn, the last pass's
    run(gl, flat, range(4, 8))
    assert gl.pool_stats()["allocated"] == allocated  # reused frame after frame
    flat_pixels = gl.readback(flat.output(output))
    assert len(np.unique(flat_pixels[..., 0])) > 10  # the noise shows through the chain
    flat.close()
    flat.ctx.release_all()

    reference_patch, _, reference_output = gpu_chain()
    lazy = LazyEvaluator(reference_patch, gpu=gl)  # keeps one target per node
    run(gl, lazy, range(8))
    assert gl.pool_stats()["in_use"] >= PASSES
    np.testing.assert_array_equal(gl.readback(lazy.output(reference_output)), flat_pixels)
    lazy.close()
    lazy.ctx.release_all()


def test_watched_passes_keep_their_own_targets(fresh_gl: GLService) -> None:
    gl = fresh_gl
    patch, steps, _ = gpu_chain(10)
    flat = FlatEvaluator(patch, gpu=gl)
    flat.watch([steps[4]])
    run(gl, flat, range(3))
    watched = gl.readback(flat.output(steps[4]))
    released = flat.program.released if flat.program is not None else {}
    assert flat.program is not None
    assert flat.program.ir.index[steps[4]] not in released
    assert flat.program.ir.index[steps[3]] in released

    lazy_patch, lazy_steps, _ = gpu_chain(10)
    lazy = LazyEvaluator(lazy_patch, gpu=gl)
    run(gl, lazy, range(3))
    np.testing.assert_array_equal(gl.readback(lazy.output(lazy_steps[4])), watched)
    for evaluator in (flat, lazy):
        evaluator.close()
        evaluator.ctx.release_all()


def test_a_pass_failing_after_giving_its_target_back_stops_its_cone(fresh_gl: GLService) -> None:
    gl = fresh_gl
    patch, steps, output = gpu_chain(6)
    broken = patch.add_node("gpu.blend", {"mode": "mix", "opacity": 0.5})
    patch.disconnect(steps[3], "out", steps[4], "in")
    patch.connect(steps[3], "out", broken, "a")
    patch.connect(broken, "out", steps[4], "in")
    patch.connect(steps[1], "out", broken, "b")
    flat = FlatEvaluator(patch, gpu=gl)
    run(gl, flat, range(3))
    assert flat.program is not None and flat.program.ir.index[broken] in flat.program.released
    shown = gl.readback(flat.output(output))
    assert len(np.unique(shown[..., 0])) > 10
    patch.set_value(broken, "mode", "no such mode")
    run(gl, flat, range(100, 103))  # the noise moves on; what follows the blend does not run
    assert "unknown blend mode" in (flat.error(broken) or "")
    np.testing.assert_array_equal(gl.readback(flat.output(output)), shown)
    patch.set_value(broken, "mode", "mix")
    run(gl, flat, range(300, 301))
    assert flat.error(broken) is None
    assert not np.array_equal(gl.readback(flat.output(output)), shown)
    flat.close()
    flat.ctx.release_all()


def test_a_bypassed_pass_that_gave_its_target_back_stops_its_cone(fresh_gl: GLService) -> None:
    """A pass over the time budget is bypassed after the frame it ran in, by then its target
    went back to the pool: what follows it keeps what it showed until the pass is retried."""
    gl = fresh_gl
    patch, steps, output = gpu_chain(6)
    flat = FlatEvaluator(patch, gpu=gl)
    run(gl, flat, range(3))
    shown = gl.readback(flat.output(output))
    assert len(np.unique(shown[..., 0])) > 10
    flat.ctx.bypass(steps[2], 1.0)
    run(gl, flat, range(100, 103))
    assert flat.status(steps[2]) == "failed"
    np.testing.assert_array_equal(gl.readback(flat.output(output)), shown)
    flat.retry(steps[2])
    run(gl, flat, range(300, 301))
    assert flat.status(steps[2]) == "ok"
    assert not np.array_equal(gl.readback(flat.output(output)), shown)
    flat.close()
    flat.ctx.release_all()


def test_output_sizes_in_bytes(gl: GLService) -> None:
    target = gl.acquire((32, 16), components=4, dtype="f2")
    assert value_bytes(target) == 32 * 16 * 4 * 2
    gl.release(target)
    assert value_bytes(np.zeros((10, 3), np.float32)) == 120
    assert value_bytes(3.5) == value_bytes(None) == 1


def test_the_hot_order_keeps_dependencies_and_frees_big_branches_early() -> None:
    """Two branches off one source, each a big texture narrowed down to a small value, then
    joined: memory order finishes one branch before starting the other."""
    patch = Patch()
    source = patch.add_node("time.seconds")
    ends = []
    for _ in range(2):
        big = patch.add_node("math.add")
        small = patch.add_node("math.add")
        patch.connect(source, "out", big, "a")
        patch.connect(big, "out", small, "a")
        ends.append((big, small))
    join = patch.add_node("math.add")
    patch.connect(ends[0][1], "out", join, "a")
    patch.connect(ends[1][1], "out", join, "b")
    ir = GraphIR(PatchSnapshot.of(patch))
    hot = [ir.index[n] for n in (source, ends[0][0], ends[1][0], ends[0][1], ends[1][1], join)]
    sizes = {ir.index[big]: 1e6 for big, _ in ends}
    order = hot_order(ir, hot, sizes)
    position = {i: n for n, i in enumerate(order)}
    for i in hot:
        for e in ir.out_edges[i]:
            assert position[i] < position[e.dst]
    first_big, second_big = sorted((ir.index[big] for big, _ in ends), key=position.__getitem__)
    first_small = next(ir.index[s] for b, s in ends if ir.index[b] == first_big)
    assert position[first_small] < position[second_big]  # not both big outputs at once


def test_the_gpu_memory_bench_counts_targets_of_both_evaluators() -> None:
    from app.bench.gpu_memory import PASSES as BENCH_PASSES
    from app.bench.gpu_memory import gpu_memory_bench

    report = gpu_memory_bench(quick=True)
    assert report["flat"]["targets_allocated"] <= 4
    assert report["lazy"]["targets_allocated"] == BENCH_PASSES + 1  # the noise and every pass
    assert report["flat"]["frame_ms"] > 0 and report["lazy"]["frame_ms"] > 0
