"""`patchbay profile FILE [--frames N] [--json] [--trace OUT.json]`: where a patch spends its time.

Plays the patch headless as `patchbay run --headless` does (the engine, app.engine.engine, stepped
by a fixed clock t = frame / fps, with a standalone EGL context when the patch has GPU nodes), with
the evaluator's profiler (evaluators/insight/profiler.py) timing every node run of every frame, and
then prints the costliest nodes: runs, cache hits, estimated total and median self time, and why
they ran. `--json` prints the same as one JSON document; `--trace OUT.json` writes the frames as a
Chrome / Perfetto trace (Trace Event Format: open it in ui.perfetto.dev or chrome://tracing).
Frames longer than `--budget` seconds (default 1/60) are counted and listed.

GPU time: with a GL context, each node's draws are timed by GL timer queries in every frame (the
profiler here samples every frame), read a few frames late (evaluators/insight/gpu_timer.py): the
"gpu ms" column (JSON `gpu_ms`, per node) is the mean GPU time per frame, blank for nodes that do
not draw; the trace has a "gpu" track. When the draws cannot be timed (no GL context, or no timer
queries) the column reads "n/a" and `gpu_status` says why.

Only the last `TRACE_FRAMES` frames are kept for medians and the trace (which holds the latest of
them that fit in about a million events); counts and totals cover every frame. A file that cannot
be loaded or a trace that cannot be written is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from app.engine.engine import Engine
from app.engine.options.exit_codes import EXIT_BAD_INPUT
from app.engine.reports.patch_info import uses_gpu
from app.engine.reports.profile_costs import gpu_status
from evaluators import Profiler
from nodes import PatchError, load_patch

TRACE_FRAMES = 2000


def profile_patch(
    path: str, frames: int, fps: float = 60.0, budget: float = 1.0 / 60.0
) -> tuple[Profiler, dict[str, Any]]:
    """Play `frames` frames of the patch at `path` headless with every node run timed; returns
    the profiler and a summary of the frames (count, budget, frames over it, median and
    slowest frame seconds). PatchError for a file that does not load or bad options."""
    if frames < 1:
        raise PatchError("--frames must be at least 1")
    if fps <= 0 or budget <= 0:
        raise PatchError("--fps and --budget must be positive")
    patch = load_patch(path)
    gl = None
    if uses_gpu(patch):
        size = tuple(patch.settings.get("resolution", (640, 360)))
        try:
            from evaluators.services.gl import GLService

            gl = GLService.standalone((int(size[0]), int(size[1])))
        except Exception as error:  # no EGL: values still play, GPU nodes report it
            print(f"warning: no OpenGL, GPU nodes will fail: {error}", file=sys.stderr)
    engine = Engine(patch, gpu=gl)
    profiler = Profiler(frames=min(frames, TRACE_FRAMES), budget=budget, sample_every=1)
    engine.evaluator.observer.profiler = profiler
    try:
        for frame in range(frames):
            engine.step(frame / fps)
    finally:
        engine.evaluator.close()
        engine.ctx.release_all()
        if gl is not None:
            gl.close()
    seconds = [record.seconds for record in profiler.frames]
    slowest = max(profiler.frames, key=lambda record: record.seconds)
    summary = {
        "file": str(path),
        "frames": frames,
        "budget_seconds": budget,
        "over_budget_frames": [record.frame for record in profiler.over_budget],
        "median_frame_seconds": statistics.median(seconds),
        "slowest_frame": {"frame": slowest.frame, "seconds": slowest.seconds},
        "gpu_status": gpu_status(profiler),
    }
    return profiler, summary


def _text(summary: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    over = summary["over_budget_frames"]
    lines = [
        f"{summary['file']}: {summary['frames']} frames, median "
        f"{summary['median_frame_seconds'] * 1e3:.3f} ms, slowest "
        f"{summary['slowest_frame']['seconds'] * 1e3:.3f} ms (frame "
        f"{summary['slowest_frame']['frame']}), {len(over)} over the "
        f"{summary['budget_seconds'] * 1e3:.1f} ms budget",
        f"{'node':<24} {'runs':>6} {'hits':>6} {'total ms':>10} {'median ms':>10} "
        f"{'gpu ms':>8}  reasons",
    ]
    status = summary["gpu_status"]
    for row in rows:
        reasons = ", ".join(f"{reason} {count}" for reason, count in row["reasons"].items())
        gpu = "n/a" if status else "" if row["gpu_ms"] is None else f"{row['gpu_ms']:.3f}"
        lines.append(
            f"{row['node']:<24} {row['runs']:>6} {row['hits']:>6} "
            f"{row['total_seconds'] * 1e3:>10.3f} {row['median_seconds'] * 1e3:>10.4f} "
            f"{gpu:>8}  {reasons or '-'}"
        )
    if status:
        lines.append(f"gpu ms: n/a ({status})")
    else:
        lines.append("gpu ms: mean GPU time per frame (GL timer queries)")
    return "\n".join(lines)


def profile_command(options: argparse.Namespace) -> int:
    try:
        profiler, summary = profile_patch(options.file, options.frames, options.fps, options.budget)
    except PatchError as error:
        print(error, file=sys.stderr)
        return EXIT_BAD_INPUT
    rows = profiler.report(max(0, options.top))
    if options.trace is not None:
        try:
            Path(options.trace).write_text(json.dumps(profiler.trace()), encoding="utf-8")
        except OSError as error:
            print(f"patchbay profile: cannot write {options.trace}: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
    if options.json:
        print(json.dumps({**summary, "nodes": rows}, indent=1))
    else:
        print(_text(summary, rows))
    return 0
