"""File > Export Frozen… in the editor: ask where, freeze with a progress bar, show a summary.

The work is `app.engine.export.export_frozen` (Qt-free); this module only wraps it in dialogs.
Freezing runs on the GUI thread: it evaluates the patch's constant part once, which for the patches
the editor holds takes well under a second, and the progress dialog repaints between stages. The
questions and the summary go through callables so tests can answer them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox, QProgressDialog, QWidget

from app.engine.export import export_frozen
from nodes import Patch, PatchError

FROZEN_FILTER = "Frozen patch (*.patchbay);;All files (*)"


def ask_frozen_path(parent: QWidget, source: Path | None) -> str | None:
    """A save dialog proposing `<source>.frozen.patchbay` next to the source."""
    suggestion = "" if source is None else str(source.with_suffix(".frozen.patchbay"))
    path, _ = QFileDialog.getSaveFileName(parent, "Export frozen patch", suggestion, FROZEN_FILTER)
    return path or None


def show_summary(parent: QWidget, summary: dict[str, Any]) -> None:
    lines = [
        f"Nodes: {summary['nodes_before']} → {summary['nodes_after']} "
        f"({summary['dropped']} not needed by any output)",
        f"Constants baked: {summary['constants_baked']} ({summary['bytes_stored']} bytes), "
        f"{summary['user_inputs_frozen']} user inputs frozen",
        f"Kept to run once at start: {summary['run_once']}; every frame: {summary['every_frame']}",
    ]
    if summary.get("sidecar"):
        lines.append(f"Large arrays: {Path(summary['sidecar']).name}")
    box = QMessageBox(QMessageBox.Icon.Information, "Frozen export", f"Wrote {summary['file']}",
                      QMessageBox.StandardButton.Ok, parent)  # fmt: skip
    box.setInformativeText("\n".join(lines))
    box.exec()


def export_frozen_dialog(
    parent: QWidget,
    patch: Patch,
    source: Path | None,
    *,
    saved: bool = True,
    ask_path: Callable[[], str | None] | None = None,
    report_error: Callable[[str], None] | None = None,
    summarize: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any] | None:
    """Export `patch` (with its live values) as a frozen patch; returns the summary, or None if
    the person cancelled or the export failed (reported through `report_error`).

    `source` is the patch's file; the frozen meta records its hash when the patch is `saved`,
    else the hash of the live patch (the file on disk is not what was frozen)."""

    def fail(message: str) -> None:
        if report_error is not None:
            report_error(message)
        else:
            QMessageBox.warning(parent, "patchbay", message)

    path = (ask_path or (lambda: ask_frozen_path(parent, source)))()
    if not path:
        return None
    target = Path(path)
    if not target.suffix:
        target = target.with_suffix(".patchbay")
    if source is not None and source.resolve() == target.resolve():
        fail(f"{target}: refusing to overwrite the source patch with a frozen one")
        return None
    dialog = QProgressDialog("Freezing…", "", 0, 100, parent)
    dialog.setWindowTitle("Export frozen patch")
    dialog.setCancelButton(None)
    dialog.setWindowModality(Qt.WindowModality.WindowModal)
    dialog.setMinimumDuration(0)

    def progress(fraction: float, stage: str) -> None:
        dialog.setLabelText(stage[:1].upper() + stage[1:] + "…")
        dialog.setValue(round(100 * fraction))
        QApplication.processEvents()

    try:
        summary = export_frozen(
            patch, target, source_path=source if saved else None, progress=progress
        )
    except (PatchError, OSError, ValueError) as error:
        dialog.close()
        fail(f"{target}: cannot export: {error}")
        return None
    dialog.close()
    (summarize or (lambda found: show_summary(parent, found)))(summary)
    return summary
