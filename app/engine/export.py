"""Exporting frozen runtime patches: `patchbay freeze FILE -o OUT` and the editor's export hook.

`export_frozen` is what both the command line and the editor call: freeze (evaluators.freeze),
then save atomically with nodes.save_patch, which puts arrays above its sidecar threshold in a
`.npz` next to the JSON, so the file itself stays readable. It takes a `progress(fraction, stage)`
callback and imports no Qt, so the editor can drive a progress bar from it and show the summary
it returns. (What freezing buys is measured by `patchbay bench`, in app/bench/main.py.)
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from app.engine.options.exit_codes import EXIT_BAD_INPUT
from evaluators import Progress, freeze
from nodes import Patch, PatchError, load_patch, save_patch


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
