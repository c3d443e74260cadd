"""`patchbay bench --only autosave`: how long autosaving a patch with a large array holds up the
editor's GUI thread.

A loop that ticks every millisecond stands for the GUI thread's timers (frames, repaints). Two
ways of autosaving a patch holding a 100 MB float64 array (20 MB with `--quick`):
- on the GUI thread, as the editor did every 30 s: `save_patch` runs between two ticks, so the
  gap is the whole save;
- the session's autosave (app.session.session): the GUI thread takes a copy of the document and
  ticks on while a worker thread writes; the gap is the longest wait between ticks meanwhile (the
  copy, and whatever the worker does without letting go of the interpreter).
Each is measured into a fresh folder (the array is written, not found already saved), `repeats`
times; medians are reported, with the target: a gap under one 60 Hz frame period.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from app.session.session import EditorSession
from nodes import Patch, save_patch

FRAME_PERIOD_MS = 1000 / 60
TICK_S = 0.001


def patch_with_array(megabytes: int) -> Patch:
    patch = Patch()
    data = np.arange(megabytes * (1 << 20) // 8, dtype=np.float64)
    array = patch.add_node("value.array", {"value": data}, node_id="data")
    total = patch.add_node("array.sum", node_id="total")
    patch.connect(array, "out", total, "x")
    patch.connect(total, "out", patch.add_node("output.value"), "in")
    return patch


def _gui_thread_save_ms(patch: Patch, folder: Path) -> float:
    started = time.perf_counter()
    save_patch(patch, folder / "recovery.patchbay")
    return (time.perf_counter() - started) * 1000


def _worker_autosave_ms(patch: Patch, folder: Path) -> tuple[float, float]:
    """(longest gap between ticks, time until the file was written), in ms."""
    session = EditorSession(folder)
    try:
        session.set_document(patch, None, unsaved=True)
        last = started = time.perf_counter()
        writing = session.autosave()
        assert writing is not None
        longest = 0.0
        while not writing.done():
            time.sleep(TICK_S)
            now = time.perf_counter()
            longest, last = max(longest, now - last), now
        written = time.perf_counter() - started
        problems = session.wait_for_autosave()
        if problems:
            raise RuntimeError(problems[0])
        return longest * 1000, written * 1000
    finally:
        session.close()


def autosave_bench(
    quick: bool = False, repeats: int = 3, megabytes: int | None = None
) -> dict[str, Any]:
    """The section's report; `megabytes` overrides the array size (100, or 20 when quick)."""
    if megabytes is None:
        megabytes = 20 if quick else 100
    patch = patch_with_array(megabytes)
    old, gaps, writes = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as folder:
            old.append(_gui_thread_save_ms(patch, Path(folder)))
        with tempfile.TemporaryDirectory() as folder:
            gap, written = _worker_autosave_ms(patch, Path(folder))
            gaps.append(gap)
            writes.append(written)
    gap_ms = statistics.median(gaps)
    return {
        "array_mb": megabytes,
        "repeats": repeats,
        "gui_thread_save_gap_ms": statistics.median(old),
        "worker_autosave_longest_gap_ms": gap_ms,
        "worker_autosave_written_ms": statistics.median(writes),
        "frame_period_ms": FRAME_PERIOD_MS,
        "under_one_frame": gap_ms < FRAME_PERIOD_MS,
    }
