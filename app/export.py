"""Exporting frozen runtime patches: `patchbay freeze FILE -o OUT`, the editor's export hook and
the freeze benchmark.

`export_frozen` is what both the command line and the editor call: freeze (evaluators.freeze),
then save atomically with nodes.save_patch, which puts arrays above its sidecar threshold in a
`.npz` next to the JSON, so the file itself stays readable. It takes a `progress(fraction, stage)`
callback and imports no Qt, so the editor can drive a progress bar from it and show the summary
it returns.

`freeze_bench` measures what freezing buys on benchmark-like patches: per-frame time and work
(`nodes_run`) of the editable patch under the flat evaluator against the frozen one, and the time
from process start to the first frame of `patchbay run --headless` on the bundled examples.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from evaluators import FlatEvaluator, Progress, freeze
from evaluators.bench_patches import CASES
from nodes import Patch, PatchError, load_patch, save_patch

EXIT_BAD_INPUT = 2


def export_frozen(
    patch: Patch,
    target: str | Path,
    *,
    source_path: str | Path | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Freeze `patch` and write it to `target` (plus a `.npz` sidecar for large arrays).

    Returns the frozen patch's summary with `file`, `sidecar` (None if none) and `text` (one line,
    for a status bar or a dialog). Raises PatchError or OSError; writes nothing on failure.
    """
    report: Progress = progress or (lambda fraction, stage: None)
    target = Path(target)
    if source_path is not None and Path(source_path).resolve() == target.resolve():
        raise PatchError(f"{target}: refusing to overwrite the source patch with a frozen one")
    frozen = freeze(
        patch,
        source_path=source_path,
        progress=lambda fraction, stage: report(0.9 * fraction, stage),
    )
    report(0.9, "saving")
    sidecar = save_patch(frozen, target)
    summary: dict[str, Any] = dict(frozen.meta["summary"])
    summary["file"] = str(target)
    summary["sidecar"] = str(sidecar) if sidecar is not None else None
    summary["text"] = summary_text(summary)
    report(1.0, "done")
    return summary


def summary_text(summary: dict[str, Any]) -> str:
    """One line saying what a freeze did."""
    text = (
        f"{summary['file']}: frozen, {summary['nodes_before']} -> {summary['nodes_after']} nodes, "
        f"{summary['constants_baked']} constants baked ({_size(summary['bytes_stored'])}), "
        f"{summary['run_once']} kept to run once, {summary['every_frame']} every frame, "
        f"{summary['dropped']} dropped"
    )
    if summary.get("sidecar"):
        text += f", arrays in {Path(summary['sidecar']).name}"
    return text


def _size(count: int) -> str:
    if count < 1024:
        return f"{count} B"
    if count < 1 << 20:
        return f"{count / 1024:.1f} KiB"
    return f"{count / (1 << 20):.1f} MiB"


def freeze_command(source: str, target: str) -> int:
    """`patchbay freeze FILE -o OUT`: exit 0 and a one-line summary, or 2 and a one-line reason."""
    try:
        patch = load_patch(source)
        summary = export_frozen(patch, target, source_path=source)
    except PatchError as error:
        print(error, file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as error:
        print(f"{target}: cannot write: {error.strerror or error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(summary["text"])
    return 0


# ----------------------------------------------------------------------------- benchmark


def _frame_times(patch: Patch, frames: int) -> tuple[float, int, int]:
    """Median frame time after the first frame, nodes run on the first frame, per later frame."""
    evaluator = FlatEvaluator(patch)
    evaluator.run_frame(0.0, 0)
    first = evaluator.nodes_run
    times = []
    for frame in range(1, frames + 1):
        started = time.perf_counter()
        evaluator.run_frame(frame / 60.0, frame)
        times.append(time.perf_counter() - started)
    per_frame = (evaluator.nodes_run - first) // frames
    evaluator.close()
    return statistics.median(times), first, per_frame


def _startup(path: Path, sink: str, repeats: int) -> float | None:
    """Median seconds from starting `patchbay run --headless` to reading its first frame, or None
    if it does not play."""
    command = [sys.executable, "-m", "app.cli", "run", str(path), "--headless", "--frames", "1"]
    command += ["--print", f"{sink}.out"]
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        ) as process:
            assert process.stdout is not None
            first_line = process.stdout.readline()
            elapsed = time.perf_counter() - started
            process.communicate()
        if not first_line or process.returncode != 0:
            return None
        times.append(elapsed)
    return statistics.median(times)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3


def freeze_bench(quick: bool, log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Frozen against editable flat evaluation on benchmark-like patches, and player startup.

    Returns {"cases": [...], "startup": [...]}; times in milliseconds (medians)."""
    say = log or (lambda line: None)
    sizes = (1_000,) if quick else (1_000, 10_000)
    frames = 20 if quick else 100
    cases = []
    for name, make in CASES.items():
        for size in sizes:
            patch = make(size)
            started = time.perf_counter()
            frozen = freeze(patch)
            freeze_seconds = time.perf_counter() - started
            editable_time, editable_first, editable_per = _frame_times(patch, frames)
            frozen_time, frozen_first, frozen_per = _frame_times(frozen, frames)
            row = {
                "case": name,
                "nodes": len(patch.nodes),
                "frozen_nodes": len(frozen.nodes),
                "freeze_ms": freeze_seconds * 1e3,
                "editable_frame_ms": editable_time * 1e3,
                "frozen_frame_ms": frozen_time * 1e3,
                "editable_first_frame_nodes_run": editable_first,
                "frozen_first_frame_nodes_run": frozen_first,
                "editable_nodes_run_per_frame": editable_per,
                "frozen_nodes_run_per_frame": frozen_per,
            }
            cases.append(row)
            say(
                f"freeze {name:<16} {size:>6} nodes -> {row['frozen_nodes']:>6}: frame "
                f"{row['editable_frame_ms']:.3f} ms editable, {row['frozen_frame_ms']:.3f} ms "
                f"frozen; first frame runs {editable_first} / {frozen_first} nodes"
            )
    startup = []
    repeats = 3 if quick else 7
    examples = resources.files("resources") / "examples"
    with tempfile.TemporaryDirectory() as folder:
        for entry in sorted(examples.iterdir(), key=lambda item: item.name):
            if not entry.name.endswith(".patchbay"):
                continue
            with resources.as_file(entry) as source:
                patch = load_patch(source)
                sinks = [node.id for node in patch.nodes.values() if node.spec.sink]
                if not sinks:
                    continue
                frozen_path = Path(folder) / entry.name
                save_patch(freeze(patch, source_path=source), frozen_path)
                row = {
                    "example": entry.name,
                    "editable_startup_ms": _ms(_startup(source, sinks[0], repeats)),
                    "frozen_startup_ms": _ms(_startup(frozen_path, sinks[0], repeats)),
                }
            startup.append(row)
            say(
                f"startup {entry.name}: {row['editable_startup_ms']} ms editable, "
                f"{row['frozen_startup_ms']} ms frozen (process start to first frame)"
            )
    return {"cases": cases, "startup": startup}
