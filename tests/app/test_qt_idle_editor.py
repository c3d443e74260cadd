"""An idle editor with an engine costs the engine little: it asks for the pictures of the Output
and Preview panels only while they show, and redraws node colours only when a report changed a
status (reports of an idle show repeat the same ones)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.engine.client import RemoteEvaluator
from app.engine.protocol.messages import PROTOCOL_VERSION, EngineHello, Message, Report, encode
from app.qt.window import DECORATE_EVERY
from nodes import Patch
from tests.app.conftest import (
    ScriptedDialogs,
    make_editor,
    run_frames,
    run_until,
    show_patch,
    stop_loop,
)


class QuietEngine:
    """Stands in for `EngineClient`: records what the editor sends; reports are fed to its
    evaluator by the test."""

    def __init__(self) -> None:
        self.hello = EngineHello(schema=PROTOCOL_VERSION, pid=0, rev=0, vrev=0, gl=True)
        self.evaluator = RemoteEvaluator()
        self.sent: list[dict[str, Any]] = []

    def send(self, message: Message, blobs: list[bytes] | None = None) -> bool:
        self.sent.append(encode(message))  # as the channel carries it
        return True

    def poll(self) -> list[tuple[dict[str, Any], list[bytes]]]:
        return []

    def close(self, **_options: Any) -> None:
        """Nothing to stop."""


def textured_patch() -> Patch:
    patch = Patch()
    patch.add_node("gpu.noise", None, (0.0, 0.0), node_id="noise")
    patch.add_node("gpu.output", None, (250.0, 0.0), node_id="output")
    patch.connect("noise", "out", "output", "in")
    return patch


@pytest.fixture
def engine() -> QuietEngine:
    return QuietEngine()


@pytest.fixture
def editor(qtbot: Any, tmp_path: Path, dialogs: ScriptedDialogs, engine: QuietEngine) -> Iterator:
    """A window with the quiet engine, showing a textured patch; its loop turns when the test
    turns it (`run_frames`)."""
    window = make_editor(qtbot, tmp_path / "state", dialogs, engine)
    stop_loop(window)
    show_patch(window, textured_patch())
    yield window
    dialogs.unsaved_answer = "discard"
    window.close()


def last_previews(engine: QuietEngine) -> list[list[str]] | None:
    """The previews of the last `images` request the editor sent (None before the first)."""
    requests = [m for m in engine.sent if m["type"] == "images"]
    return requests[-1]["previews"] if requests else None


def test_the_output_panel_picture_is_asked_for_only_while_it_shows(editor, engine, qtbot):
    run_frames(editor)
    assert last_previews(engine) == [["output", "out"]]
    editor.docks["Output"].hide()
    run_frames(editor)
    assert last_previews(engine) == []
    editor.docks["Output"].show()
    run_frames(editor)
    assert last_previews(engine) == [["output", "out"]]


def test_node_colours_are_redrawn_only_when_a_status_changes(editor, engine, qtbot, monkeypatch):
    decorated: list[str] = []
    decorate = editor.canvas.decorate

    def counted(node_id: str, *state: Any) -> None:
        decorated.append(node_id)
        decorate(node_id, *state)

    monkeypatch.setattr(editor.canvas, "decorate", counted)
    remote = engine.evaluator
    statuses = {"noise": ["HOT", "ok", None], "output": ["HOT", "ok", None]}
    remote.update(Report(ids=["noise", "output"], nodes=statuses), [])
    # Node colours follow the reports every DECORATE_EVERY turns of the window's loop.
    run_until(editor, lambda: len(decorated) == 2, "both nodes coloured", DECORATE_EVERY)
    for _ in range(20):  # an idle show: the same statuses, report after report
        reports = remote.reports
        remote.update(Report(nodes=statuses), [])
        run_until(
            editor, lambda reports=reports: editor.report_views.reports_decorated > reports,
            "the report looked at", DECORATE_EVERY,
        )  # fmt: skip
    assert len(decorated) == 2
    remote.update(Report(nodes={"noise": ["HOT", "failed", "boom"]}), [])
    run_until(editor, lambda: len(decorated) == 4, "both nodes coloured again", DECORATE_EVERY)
    assert editor.canvas.body_color("noise") != editor.canvas.body_color("output")
