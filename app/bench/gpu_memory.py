"""The `gpu_memory` part of `patchbay bench`: render targets a long GPU chain needs.

A 50-pass chain (animated `gpu.noise`, then 50 `gpu.invert` passes, then `gpu.output`) at
512x512, run by the flat evaluator (HOT outputs go back to the texture pool after their last
consumer in the frame) and by the lazy evaluator (every node keeps its own target) side by side
on one standalone EGL context: targets the pool allocated, targets in use after a frame, the
megabytes they hold (RGBA8), and the median frame time. Timings are for reading, not asserting.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from evaluators import FlatEvaluator, LazyEvaluator
from evaluators.services.gl import GLService
from nodes import Patch

PASSES = 50
SIZE = (512, 512)


def gpu_chain(passes: int = PASSES, size: tuple[int, int] = SIZE) -> Patch:
    """Animated noise, `passes` inverts (every tenth partial), a `gpu.output`."""
    patch = Patch()
    patch.update_settings(resolution=list(size))
    clock = patch.add_node("time.seconds")
    previous = patch.add_node("gpu.noise", {"scale": 5.0})
    patch.connect(clock, "out", previous, "time")
    for k in range(passes):
        step = patch.add_node("gpu.invert", {"amount": 1.0 if k % 10 else 0.9})
        patch.connect(previous, "out", step, "in")
        previous = step
    output = patch.add_node("gpu.output")
    patch.connect(previous, "out", output, "in")
    return patch


def _run(gl: GLService, evaluator: Any, frames: int) -> dict[str, float]:
    gl.trim()
    times = []
    for frame in range(frames + 1):
        started = time.perf_counter()
        with gl.frame():
            evaluator.run_frame(frame / 60.0, frame)
        if frame:  # the first frame compiles shaders and fills the pool
            times.append(time.perf_counter() - started)
    stats = gl.pool_stats()
    evaluator.close()
    evaluator.ctx.release_all()
    width, height = SIZE
    return {
        "targets_allocated": stats["allocated"],
        "targets_in_use": stats["in_use"],
        "allocated_mb": stats["allocated"] * width * height * 4 / 2**20,
        "frame_ms": statistics.median(times) * 1e3,
    }


def gpu_memory_bench(quick: bool = False) -> dict[str, Any]:
    """Run the section; see the module note."""
    frames = 5 if quick else 30
    gl = GLService.standalone(SIZE)
    try:
        flat = _run(gl, FlatEvaluator(gpu_chain(), gpu=gl), frames)
        lazy = _run(gl, LazyEvaluator(gpu_chain(), gpu=gl), frames)
    finally:
        gl.close()
    return {
        "passes": PASSES,
        "size": f"{SIZE[0]}x{SIZE[1]}",
        "flat": flat,
        "lazy": lazy,
        "flat_vs_lazy_targets": flat["targets_allocated"] / lazy["targets_allocated"],
    }
