"""`patchbay bench --only load`: the flat program under load, when frames run back to back.

A background build only progresses in the time frames leave it. These measurements, side by side
in one run on a 10,000-node HOT chain (app/bench/patches.py), show that it always does:

- render: `patchbay run FILE --headless --frames N` (no `--realtime`: a render, which builds its
  flat program before frame 1) as a whole process, its mean frame from frame 1 on (read from
  PATCHBAY_FRAME_LOG), against a FlatEvaluator's steady (median) frame of the same patch stepped
  in this process at the same time (only its frames within the render's count: a shared
  machine's slow phases, which last seconds and double frame times, then hit both alike), and
  against a DualEvaluator stepped back to back from load as a render ran before (lazy frames
  while its build waits for turns). Target: render within 1.2x of flat.
- back_to_back: an Engine stepped back to back (no idle time): seconds from creating it (a load,
  which builds before its first frame) to its first flat frame, and from a structural edit
  touching more than a quarter of the patch (a branch of 40% new nodes, 29% of the patch after
  it; with frames back to back up to half is derived between frames) from when it is applied to
  the first flat frame; frames meanwhile and the slices they granted the builder. Target: each
  within 0.5 s.
- paced: the same engine at 60 fps with idle time. A small edit (as bench `live_edit`, rebuilt
  between frames): the longest frame from the edit on against a normal flat frame (target at
  most 1.5x), and the time deriving its program held the loop between two frames. A big
  edit: its frames until the flat program swaps in (how many, median, longest). And the
  slices frames granted the builder (none while lazy frames leave 2 ms of idle time or more,
  `DualEvaluator.BACK_TO_BACK_GAP`; on a machine too slow for that, some).

Timings are for reading by people, never asserted in tests.
"""

from __future__ import annotations

import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from app.bench.patches import hot_chain
from app.engine.engine import FRAME_LOG_ENV, Engine
from evaluators import DualEvaluator, FlatEvaluator
from nodes import Patch, save_patch

Report = dict[str, Any]
LOAD_TIMEOUT_S = 60.0
#: The render's ratios (the target is the first: every frame from frame 1 counted, against the
#: flat evaluator's steady frame); means suffer from other processes on a busy machine.
RENDER_RATIOS = {
    "render_mean_vs_flat_median": ("render_frame_mean_ms", "flat_frame_median_ms"),
    "render_mean_vs_flat_mean": ("render_frame_mean_ms", "flat_frame_mean_ms"),
    "render_median_vs_flat_median": ("render_frame_median_ms", "flat_frame_median_ms"),
    "dual_back_to_back_mean_vs_flat_mean": (
        "dual_back_to_back_frame_mean_ms",
        "flat_frame_mean_ms",
    ),
}


def load_section(size: int, frames: int, repeats: int) -> Report:
    """The three measurements of the module note, `repeats` times each, alternating."""
    renders: list[Report] = []
    back_to_back: list[Report] = []
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "hot_chain.patchbay"
        save_patch(hot_chain(size), path)
        for _ in range(repeats):
            renders.append(_render(path, size, frames))
            back_to_back.append(_engine_back_to_back(size))
    paced = _engine_paced(size)
    return {
        "nodes": size,
        "render": _medians(renders, RENDER_RATIOS),
        "back_to_back": _medians(back_to_back),
        "paced": paced,
    }


def _medians(runs: list[Report], ratios: dict[str, tuple[str, str]] | None = None) -> Report:
    report = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    for name, (part, whole) in (ratios or {}).items():
        report[name] = report[part] / max(report[whole], 1e-9)
    return report


def _render(path: Path, size: int, frames: int) -> Report:
    """The render as a whole process, and a FlatEvaluator of the same patch stepped in this
    process at the same time (side by side on two cores: the phases of a shared machine slow
    both alike), its frames taken while the render's ran; then a DualEvaluator stepped back to
    back from load, as a render ran before."""
    flat = FlatEvaluator(hot_chain(size))  # built here, as the render builds before frame 1
    flat.run_frame(0.0, 0)
    flat_frames: list[tuple[float, float]] = []  # (monotonic end, seconds)
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "frames.log"
        command = [sys.executable, "-m", "app.cli.main", "run", str(path), "--headless"]
        command += ["--frames", str(frames)]
        render = subprocess.Popen(
            command, env={**os.environ, FRAME_LOG_ENV: str(log)}, stdout=subprocess.DEVNULL
        )
        try:
            frame = 1
            while render.poll() is None:
                started = time.perf_counter()
                flat.run_frame(frame / 60, frame)
                flat_frames.append((time.monotonic(), time.perf_counter() - started))
                frame += 1
            render.wait(timeout=LOAD_TIMEOUT_S * 4)
        finally:
            if render.poll() is None:
                render.kill()
        if render.returncode != 0:
            raise RuntimeError(f"render of {path} failed with exit status {render.returncode}")
        times = [float(line.split()[0]) for line in log.read_text(encoding="ascii").splitlines()]
    flat.close()
    render_frames = [later - earlier for earlier, later in itertools.pairwise(times)]  # 1 .. N-1
    samples = [seconds for ended, seconds in flat_frames if times[0] < ended <= times[-1]]
    side_by_side = len(samples)
    samples = samples or [seconds for _, seconds in flat_frames]  # a render too short to overlap

    dual = DualEvaluator(hot_chain(size))  # how a render ran before: lazy until its build swaps
    dual.run_frame(0.0, 0)
    started = time.perf_counter()
    for frame in range(1, frames):
        dual.run_frame(frame / 60, frame)
    dual_frame = (time.perf_counter() - started) / (frames - 1)
    dual.close()
    return {
        "render_frame_mean_ms": statistics.fmean(render_frames) * 1e3,
        "render_frame_median_ms": statistics.median(render_frames) * 1e3,
        "flat_frame_mean_ms": statistics.fmean(samples) * 1e3,
        "flat_frame_median_ms": statistics.median(samples) * 1e3,
        "flat_frames_side_by_side": side_by_side,
        "dual_back_to_back_frame_mean_ms": dual_frame * 1e3,
    }


def _step_until_flat(engine: Engine, started: float) -> tuple[float, int]:
    """Step `engine` back to back until a frame ran flat: (seconds since `started`, frames)."""
    frames = 0
    while time.perf_counter() - started < LOAD_TIMEOUT_S:
        engine.step(engine.frame / 60)
        frames += 1
        if engine.evaluator.mode == "flat":
            break
    return time.perf_counter() - started, frames


def _big_edit(patch: Patch, size: int) -> None:
    """A structural edit touching more than a quarter of the patch: a new branch of 40% of its
    size, from the clock to a second sink."""
    previous = "time"
    for index in range(int(size * 0.4)):
        node_id = patch.add_node("math.add", {"b": 0.001}, node_id=f"branch{index}")
        patch.connect(previous, "out", node_id, "a")
        previous = node_id
    patch.add_node("output.value", node_id="branch_sink")
    patch.connect(previous, "out", "branch_sink", "in")


def _engine_back_to_back(size: int) -> Report:
    patch = hot_chain(size)
    started = time.perf_counter()
    engine = Engine(patch)
    try:
        load_seconds, load_frames = _step_until_flat(engine, started)
        if engine.evaluator.mode != "flat":
            load_frames = 0  # never reached
        granted_at_load = engine.evaluator.granted_seconds
        for _ in range(30):  # its generated code, before the edit
            engine.step(engine.frame / 60)
        _big_edit(engine.patch, size)  # as the engine applies an editor's edits
        started = time.perf_counter()
        engine.between_frames()
        edit_seconds, edit_frames = _step_until_flat(engine, started)
        return {
            "load_and_edit_reached_flat": int(engine.evaluator.mode == "flat" and load_frames > 0),
            "load_to_flat_ms": load_seconds * 1e3,
            "load_to_flat_frames": load_frames,
            "granted_after_load_ms": granted_at_load * 1e3,
            "big_edit_to_flat_ms": edit_seconds * 1e3,
            "big_edit_to_flat_frames": edit_frames,
            "granted_after_edit_ms": (engine.evaluator.granted_seconds - granted_at_load) * 1e3,
        }
    finally:
        engine.close()


def _engine_paced(size: int, fps: float = 60.0) -> Report:
    """At `fps` with idle time: a small edit (a node inserted before the sink), rebuilt between
    frames, its longest frame from the edit on against normal flat frames; then a big edit
    (`_big_edit`) and its frames until the flat program swaps in."""
    patch = hot_chain(size)
    engine = Engine(patch)
    period = 1.0 / fps

    def tick() -> float:
        started = time.perf_counter()
        engine.step(engine.frame / fps)
        spent = time.perf_counter() - started
        time.sleep(max(0.0, period - spent))
        return spent

    try:
        deadline = time.monotonic() + LOAD_TIMEOUT_S
        while engine.evaluator.mode != "flat" and time.monotonic() < deadline:
            tick()
        flat = [tick() for _ in range(60)]
        granted_before = engine.evaluator.granted_seconds
        last = next(link for link in engine.patch.links if link.dst == "sink")
        engine.patch.disconnect(*last)
        engine.patch.add_node("math.add", {"b": 1.0}, node_id="edit")
        engine.patch.connect(last.src, "out", "edit", "a")
        engine.patch.connect("edit", "out", "sink", "in")
        started = time.perf_counter()
        engine.between_frames()  # derives the program for the edit, before the next frame
        derive = time.perf_counter() - started
        after = [tick() for _ in range(60)]
        flat_after_edit = engine.evaluator.mode == "flat"

        _big_edit(engine.patch, size)
        engine.between_frames()
        first_lazy = tick()  # the first frame after it walks the patch
        during_build = []
        while engine.evaluator.mode != "flat" and time.monotonic() < deadline:
            during_build.append(tick())
        normal = statistics.median(flat)
        return {
            "normal_flat_frame_ms": normal * 1e3,
            "normal_flat_longest_ms": max(flat) * 1e3,  # what noise alone does to a frame
            "small_edit_longest_frame_ms": max(after) * 1e3,
            "small_edit_longest_vs_flat": max(after) / max(normal, 1e-9),
            "small_edit_flat": flat_after_edit,
            # The time the edit held the loop between two frames (deriving its program).
            "small_edit_between_frames_ms": derive * 1e3,
            "big_edit_first_frame_ms": first_lazy * 1e3,
            "big_edit_frames_until_flat": len(during_build),
            "big_edit_median_frame_until_flat_ms": statistics.median(during_build or [0.0]) * 1e3,
            "big_edit_longest_frame_until_flat_ms": max(during_build, default=0.0) * 1e3,
            "granted_ms": (engine.evaluator.granted_seconds - granted_before) * 1e3,
        }
    finally:
        engine.close()
