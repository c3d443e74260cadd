"""An editor killed while its engine plays loses no layout: a new editor that attaches shows every
node where the killed one showed it (backdrops and definitions' insides too), and is offered the
killed editor's autosave beside what the engine plays, never overwritten by its own.

Real processes: the first editor is layout_probe.py (the real window and, as `patchbay edit`
starts it, an engine process), killed with SIGKILL; the second is a window of this process
attaching to that engine. Waits are deadlines, never counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from app.engine.client import EngineProcess
from app.qt.actions.file import FileActions
from app.qt.launch import launch_editor
from app.session.session import Recovery
from nodes import load_patch
from tests.app.layout_probe import layout, shown
from tests.waiting import TIMEOUT_S, read_line

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("layout_probe.py")


@pytest.fixture
def state_dir(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "state"
    yield folder
    EngineProcess(folder / "engine").stop()  # a leftover engine and its supervisor


def killed_editor(state_dir: Path) -> dict[str, Any]:
    """Run the probe until it has built its patch and reported, then SIGKILL it."""
    paths = [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    probe = subprocess.Popen(
        [sys.executable, str(PROBE), str(state_dir)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10 * TIMEOUT_S  # an engine to start, then the building
        while line := read_line(probe, "the layout probe's report", deadline - time.monotonic()):
            if line.startswith("REPORT "):
                return dict(json.loads(line.removeprefix("REPORT ")))
        errors = probe.stderr.read()[-3000:] if probe.stderr else ""
        pytest.fail(f"the layout probe ended without a report:\n{errors}")
    finally:
        probe.kill()  # SIGKILL: no goodbye, no clean close of its session
        probe.wait()


@pytest.mark.parametrize("restore", [False, True], ids=["keep what plays", "restore"])
def test_an_editor_attaching_after_a_kill_shows_the_layout_and_offers_the_autosave(
    qtbot: Any, state_dir: Path, monkeypatch: pytest.MonkeyPatch, restore: bool
) -> None:
    built = killed_editor(state_dir)
    engine = EngineProcess(state_dir / "engine")
    assert engine.running_pid() == built["engine_pid"]  # the show plays on
    crashed = Path(built["recovery_file"])
    autosaved = crashed.read_bytes()

    offers: list[dict[str, Any]] = []

    def ask_restore(
        actions: FileActions, recoveries: list[Recovery], playing: str | None = None
    ) -> Recovery | None:
        window = actions.window
        # the new editor autosaves what it attached to meanwhile: a file of its own
        qtbot.waitUntil(window.session.recovery_file.exists, timeout=int(TIMEOUT_S * 1000))
        offers.append({
            "files": [recovery.patch_file for recovery in recoveries],
            "playing": playing,
            "untouched": crashed.read_bytes() == autosaved,
            "own": window.session.recovery_file,
        })  # fmt: skip
        return recoveries[0] if restore else None

    monkeypatch.setattr(FileActions, "ask_restore", ask_restore)
    assert layout(load_patch(crashed)) == built["layout"]  # the autosave has the layout too

    window = launch_editor(None, state_dir=state_dir)
    qtbot.addWidget(window)
    window.file_actions.ask_unsaved = lambda: "discard"  # type: ignore[method-assign]
    assert window.engine is not None and window.engine.attached
    assert window.engine.engine.running_pid() == built["engine_pid"]

    # the killed editor's work is offered, beside what plays, and its file was left alone
    assert len(offers) == 1
    [offer] = offers
    assert offer["files"] == [crashed] and offer["untouched"] and offer["own"] != crashed
    assert offer["playing"] == f"untitled ({len(built['layout']['positions'])} nodes)"

    # exactly what the killed editor showed: nodes, backdrops, a definition's inside
    assert layout(window.patch) == built["layout"]
    assert shown(window.canvas) == built["shown"] == built["layout"]["positions"]
    pair = built["definitions"]["pair"]
    assert layout(window.patch.definition("pair")) == pair["layout"]
    assert window.canvas.enter(built["instance"])
    assert shown(window.canvas) == pair["shown"] == pair["layout"]["positions"]
    window.canvas.leave()
    if restore:  # the work is this editor's now: the killed editor's file goes once it holds it
        qtbot.waitUntil(lambda: not crashed.exists(), timeout=int(TIMEOUT_S * 1000))
        assert layout(load_patch(window.session.recovery_file)) == built["layout"]
        remote = window.evaluator  # and the engine plays it
        qtbot.waitUntil(lambda: remote.nodes() == set(window.patch.nodes))
    else:  # declined: what was offered is gone, what plays stays
        assert not crashed.exists()
    assert window.modified and window.windowTitle().startswith("untitled *")
    window.close()
