"""The instancing part of `patchbay bench` (`--only instancing`), on a standalone EGL context.

For 1,000 and 10,000 shapes, measured side by side (the counts take turns run by run, so the
machine's noise falls on both alike), medians in milliseconds:
- `draw_ms`: one instanced pass of circles (radius 0.01 of the height, random positions and
  colours, half transparent) into a 1280x720 target: `GLService.draw_instances` (clear, upload of
  the per-instance arrays, one draw call) and the GPU finishing it;
- `draw_1px_ms`: the same with circles of about one pixel: the cost of the instances themselves
  (upload, vertices) without the fill;
- `frame_ms`: a whole frame of a patch in the flat evaluator where a `gpu.instances` node draws a
  grid of that many circles whose sizes follow the clock (so it draws every frame), CPU nodes
  included, ending when the GPU is done (as the output window waits before it samples).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from evaluators import FlatEvaluator
from evaluators.services.gl import GLService
from nodes import Patch

COUNTS = (1000, 10_000)
SIZE = (1280, 720)


def grid_patch(count: int) -> Patch:
    """A patch drawing a grid of about `count` circles whose sizes ripple with the clock."""
    columns = round((count * SIZE[0] / SIZE[1]) ** 0.5)
    rows = count // columns
    patch = Patch()
    patch.update_settings(resolution=list(SIZE))
    grid = patch.add_node("array.grid", {"columns": columns, "rows": rows})
    index = patch.add_node("array.range", {"count": columns * rows})
    clock = patch.add_node("time.seconds")
    wave = patch.add_node("array.map_sin", {"freq": 0.05})
    patch.connect(index, "out", wave, "x")
    patch.connect(clock, "out", wave, "phase")
    radius = patch.add_node("math.mul", {"b": 0.3 / rows})
    patch.connect(wave, "out", radius, "a")
    size = patch.add_node("math.abs")
    patch.connect(radius, "out", size, "x")
    instances = patch.add_node("gpu.instances", {"background": (0.0, 0.0, 0.0, 1.0)})
    patch.connect(grid, "out", instances, "positions")
    patch.connect(size, "out", instances, "sizes")
    output = patch.add_node("gpu.output")
    patch.connect(instances, "out", output, "in")
    return patch


def _draw_run(gl: GLService, count: int, radius: float = 0.01) -> Callable[[], None]:
    rng = np.random.default_rng(count)
    positions = rng.random((count, 2), dtype=np.float32)
    sizes = np.full(count, radius, np.float32)
    colors = rng.random((count, 4), dtype=np.float32)
    colors[:, 3] = 0.5
    target = gl.acquire(SIZE)

    def run() -> None:
        with gl.frame():
            gl.draw_instances(target, positions, sizes, colors, background=(0, 0, 0, 1))

    return run


def _frame_run(gl: GLService, count: int, evaluators: list[Any]) -> Callable[[], None]:
    evaluator = FlatEvaluator(grid_patch(count), gpu=gl)
    evaluators.append(evaluator)
    frame = [0]

    def run() -> None:
        with gl.frame():
            evaluator.run_frame(frame[0] / 60.0, frame[0])
        frame[0] += 1

    return run


def _side_by_side(runs: dict[int, Callable[[], None]], repeats: int) -> dict[int, float]:
    """Median milliseconds per count; the counts take turns, in reverse every other round."""
    samples: dict[int, list[float]] = {count: [] for count in runs}
    order = list(runs.items())
    for round_index in range(repeats + 2):
        for count, run in order if round_index % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            run()
            if round_index >= 2:  # the first rounds compile and allocate
                samples[count].append(time.perf_counter() - started)
    return {count: statistics.median(values) * 1e3 for count, values in samples.items()}


def instancing_bench(quick: bool = False) -> dict[str, Any]:
    """Run the instancing benchmark; see the module note."""
    repeats = 5 if quick else 21
    gl = GLService.standalone(SIZE)
    evaluators: list[Any] = []
    try:
        info = gl.info
        draw = _side_by_side({count: _draw_run(gl, count) for count in COUNTS}, repeats)
        tiny = 0.75 / SIZE[1]
        draw_1px = _side_by_side({c: _draw_run(gl, c, tiny) for c in COUNTS}, repeats)
        frame = _side_by_side({c: _frame_run(gl, c, evaluators) for c in COUNTS}, repeats)
        return {
            "renderer": f"{info.get('GL_RENDERER')} | {info.get('GL_VERSION')}",
            "target": f"{SIZE[0]}x{SIZE[1]}",
            "draw_ms": {f"{count}_shapes": draw[count] for count in COUNTS},
            "draw_1px_ms": {f"{count}_shapes": draw_1px[count] for count in COUNTS},
            "frame_ms": {f"{count}_shapes": frame[count] for count in COUNTS},
        }
    finally:
        for evaluator in evaluators:
            evaluator.close()
            evaluator.ctx.release_all()
        gl.close()
