"""File > Export Frozen…: the dialog helper freezes the live patch with a progress bar and shows
a summary; cancelling writes nothing; failures are reported, not raised."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtWidgets import QWidget

from app.qt.dialogs.export import export_frozen_dialog
from nodes import load_patch

DEMO = Path(str(resources.files("resources") / "examples" / "demo.patchbay"))


def test_export_writes_a_frozen_patch_with_live_values(qtbot: Any, tmp_path: Path) -> None:
    parent = QWidget()
    qtbot.addWidget(parent)
    patch = load_patch(DEMO)
    patch.set_value("speed", "value", 2.0)  # a live edit, not saved
    summaries: list[dict[str, Any]] = []
    target = tmp_path / "show"
    summary = export_frozen_dialog(
        parent,
        patch,
        DEMO,
        saved=False,
        ask_path=lambda: str(target),
        report_error=pytest.fail,
        summarize=summaries.append,
    )
    assert summary is not None and summaries == [summary]
    frozen = load_patch(tmp_path / "show.patchbay")
    assert frozen.frozen
    assert frozen.nodes["speed"].values["value"] == 2.0
    assert frozen.meta["source"]["file"] is None  # the live patch, not the file, was frozen


def test_cancel_and_failures_write_nothing(qtbot: Any, tmp_path: Path) -> None:
    parent = QWidget()
    qtbot.addWidget(parent)
    patch = load_patch(DEMO)
    errors: list[str] = []
    assert export_frozen_dialog(parent, patch, DEMO, ask_path=lambda: None) is None
    source = tmp_path / "demo.patchbay"
    source.write_bytes(DEMO.read_bytes())
    result = export_frozen_dialog(
        parent, patch, source, ask_path=lambda: str(source), report_error=errors.append
    )
    assert result is None and "refusing to overwrite" in errors[0]
    assert source.read_bytes() == DEMO.read_bytes()
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    result = export_frozen_dialog(
        parent, patch, None, ask_path=lambda: str(blocked / "x.patchbay"),
        report_error=errors.append,
    )  # fmt: skip
    assert result is None and "cannot export" in errors[1]
