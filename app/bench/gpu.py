"""The GPU part of `patchbay bench`, on a standalone EGL context (no window, no Qt).

Measures, with the flat evaluator and a frame = `with gl.frame(): run_frame` (whose end waits for
the GPU to finish, as the output window does before it samples):
- `chain_1080p`: frames per second of a 10-pass chain at 1920x1080 (ten `gpu.transform` passes,
  each rotating the one before by the clock, after a cached gradient);
- `per_pass_ms`: the same chain at 64x64, 512x512 and 1920x1080, frame time divided by 10;
- `readbacks_per_frame`: GPU -> CPU reads per frame of that chain (0: textures stay on the GPU),
  and of the chain with a `gpu.readback` node (1);
- `pool_after_edits`: textures allocated by the pool before, after 100 and after 1,000 edit cycles
  (a value edit, a resolution override toggled, a node added, linked and removed), and in use;
- `gpu_timing`: the cost of timing each node's draws with GL timer queries
  (evaluators/insight/gpu_timer.py), on the 10-pass chain at 64x64 (where a query weighs most
  against its draw) and 512x512: median frame ms with the profiler off, on as it always is (its
  sampled frames, 1 in 32, are timed), and sampling every frame (as `patchbay profile` does) without
  and with the GPU queries; measured in alternating blocks of frames in one run; and the GPU ms per
  frame the passes were given.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterator
from typing import Any

from evaluators import FlatEvaluator
from evaluators.services.gl import GLService
from nodes import Patch

PASSES = 10
SIZES = ((64, 64), (512, 512), (1920, 1080))


def chain_patch(size: tuple[int, int], passes: int = PASSES) -> tuple[Patch, str]:
    """A constant gradient, then `passes` HOT transform passes; returns (patch, last pass id)."""
    patch = Patch()
    patch.update_settings(resolution=list(size))
    clock = patch.add_node("time.seconds")
    previous = patch.add_node("gpu.gradient", {"color_a": (1, 0, 0, 1), "color_b": (0, 0, 1, 1)})
    for _ in range(passes):
        step = patch.add_node("gpu.transform", {"scale": 0.99})
        patch.connect(previous, "out", step, "in")
        patch.connect(clock, "out", step, "rotate")
        previous = step
    output = patch.add_node("gpu.output")
    patch.connect(previous, "out", output, "in")
    return patch, previous


def _frame_times(gl: GLService, evaluator: Any, frames: int) -> list[float]:
    times = []
    for frame in range(frames + 1):
        started = time.perf_counter()
        with gl.frame():
            evaluator.run_frame(frame / 60.0, frame)
        if frame:  # the first frame compiles shaders and fills the pool
            times.append(time.perf_counter() - started)
    return times


def _chain(gl: GLService, size: tuple[int, int], frames: int) -> dict[str, float]:
    patch, _ = chain_patch(size)
    evaluator = FlatEvaluator(patch, gpu=gl)
    times = _frame_times(gl, evaluator, frames)
    readbacks = gl.last_frame_readbacks
    evaluator.close()
    evaluator.ctx.release_all()
    median = statistics.median(times)
    return {
        "frame_ms": median * 1e3,
        "fps": 1.0 / median,
        "per_pass_ms": median * 1e3 / PASSES,
        "readbacks_per_frame": readbacks,
    }


def _readback_chain(gl: GLService, frames: int) -> int:
    patch, last = chain_patch((64, 64))
    readback = patch.add_node("gpu.readback")
    patch.connect(last, "out", readback, "in")
    sink = patch.add_node("output.value")
    patch.connect(readback, "out", sink, "in")
    evaluator = FlatEvaluator(patch, gpu=gl)
    _frame_times(gl, evaluator, frames)
    count = gl.last_frame_readbacks
    evaluator.close()
    evaluator.ctx.release_all()
    return count


def _pool_after_edits(gl: GLService, cycles: int = 1000) -> dict[str, int]:
    patch, last = chain_patch((256, 256), passes=2)
    blend = patch.add_node("gpu.blend", {"mode": "screen"})
    patch.connect(last, "out", blend, "a")
    gradient = next(n.id for n in patch.nodes.values() if n.type_id == "gpu.gradient")
    evaluator = FlatEvaluator(patch, gpu=gl)
    _frame_times(gl, evaluator, 2)
    gl.trim()  # count only this patch's textures, not what earlier sections left in the pool
    before = gl.pool_stats()["allocated"]
    after_100 = before
    for cycle in range(cycles):
        patch.set_value(gradient, "angle", cycle * 0.01)
        patch.set_value(gradient, "resolution", (128, 128) if cycle % 2 else (0, 0))
        solid = patch.add_node("gpu.solid", {"color": (cycle % 5 / 5, 0.2, 0.4, 1.0)})
        patch.connect(solid, "out", blend, "b")
        _frame_times(gl, evaluator, 1)
        patch.remove_node(solid)
        _frame_times(gl, evaluator, 1)
        if cycle == 99:
            after_100 = gl.pool_stats()["allocated"]
    stats = gl.pool_stats()
    evaluator.close()
    evaluator.ctx.release_all()
    return {
        "edits": cycles,
        "allocated_before": before,
        "allocated_after_100_edits": after_100,
        "allocated_after": stats["allocated"],
        "in_use_after": stats["in_use"],
        "free_after": stats["free"],
    }


@contextlib.contextmanager
def _without_gpu_queries(gl: GLService) -> Iterator[None]:
    """The profiler runs as usual but the service times no draw (for a side-by-side cost)."""
    gl.time_nodes(None)
    setattr(gl, "time_nodes", lambda token: None)  # noqa: B010 (an instance override, undone)
    try:
        yield
    finally:
        delattr(gl, "time_nodes")


def _gpu_timing(gl: GLService, size: tuple[int, int], frames: int, rounds: int) -> dict[str, Any]:
    patch, _ = chain_patch(size)
    evaluator = FlatEvaluator(patch, gpu=gl)
    profiler = evaluator.observer.profiler
    sampling = profiler.sample_every
    modes = ("profiler_off", "profiler_on", "every_frame_without_gpu_queries", "every_frame")
    times: dict[str, list[float]] = {mode: [] for mode in modes}
    _frame_times(gl, evaluator, 2)
    for _ in range(rounds):
        for mode in modes:
            profiler.enabled = mode != "profiler_off"
            profiler.sample_every = 1 if mode.startswith("every_frame") else sampling
            quiet = _without_gpu_queries(gl) if mode == modes[2] else contextlib.nullcontext()
            with quiet:
                times[mode] += _frame_times(gl, evaluator, frames)
    gpu_ms = profiler.gpu_ms()
    evaluator.close()
    evaluator.ctx.release_all()
    medians = {mode: statistics.median(values) * 1e3 for mode, values in times.items()}
    off = medians["profiler_off"]
    return {
        **{f"{mode}_frame_ms": ms for mode, ms in medians.items()},
        "gpu_queries_cost_percent_every_frame": (medians["every_frame"] / medians[modes[2]] - 1.0)
        * 100.0,
        "profiler_cost_percent": (medians["profiler_on"] / off - 1.0) * 100.0,
        "gpu_ms_per_frame_of_passes": sum(gpu_ms.values()),
        "timed_nodes": len(gpu_ms),
    }


def gpu_bench(quick: bool = False) -> dict[str, Any]:
    """Run the GPU benchmark; see the module note. Times in milliseconds (medians)."""
    frames = 5 if quick else 30
    gl = GLService.standalone((1920, 1080))
    try:
        info = gl.info
        per_size = {f"{w}x{h}": _chain(gl, (w, h), frames) for w, h in SIZES}
        full = per_size["1920x1080"]
        return {
            "renderer": f"{info.get('GL_RENDERER')} | {info.get('GL_VERSION')}",
            "chain_1080p": {
                "passes": PASSES,
                "fps": full["fps"],
                "frame_ms": full["frame_ms"],
            },
            "per_pass_ms": {size: row["per_pass_ms"] for size, row in per_size.items()},
            "readbacks_per_frame": {
                "chain": full["readbacks_per_frame"],
                "chain_with_readback_node": _readback_chain(gl, 3),
            },
            "pool_after_edits": _pool_after_edits(gl, 1000),
            "gpu_timing": {
                f"{w}x{h}": _gpu_timing(gl, (w, h), frames, 2 if quick else 6)
                for w, h in ((64, 64), (512, 512))
            },
        }
    finally:
        gl.close()
