"""The editor and its engine as two real processes on a private X display (Xvfb): the output
window plays in the engine while the editor edits, pastes, zooms and undoes; the show survives a
kill -9 of the editor; a new editor attaches and survives a kill -9 of the engine.

Frames are read from the engine's frame log (`PATCHBAY_FRAME_LOG`). Tests assert that frames keep
coming and edits arrive, never how fast: intervals are the benchmark's (`patchbay bench --only
show`). Without Xvfb the tests skip, except with PATCHBAY_REQUIRE_GL=1 (CI), where they fail.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.engine.client import EngineClient, EngineProcess
from app.engine.engine import PLAYING_FILE
from app.engine.protocol.messages import PatchDocument, encode
from tests.waiting import TIMEOUT_S, poll_until, read_line
from tests.xvfb import private_display

pytestmark = pytest.mark.xvfb

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("engine_editor_probe.py")
EXAMPLE = ROOT / "resources" / "examples" / "noise_color.patchbay"
ARTIFACT = ROOT / "tests" / "artifacts" / "engine_editor.png"


def logged_frames(path: Path) -> list[tuple[float, int]]:
    if not path.exists():
        return []
    lines = [line.split() for line in path.read_text().splitlines()]
    return [(float(t), int(frame)) for t, frame in lines if len(lines) and frame]


def wait_for_frames(path: Path, count: int) -> bool:
    return poll_until(lambda: len(logged_frames(path)) >= count, TIMEOUT_S, interval=0.05)


def read_report(process: subprocess.Popen[str], timeout: float = 300.0) -> dict:
    """The probe's report; a probe that hangs is killed after `timeout` seconds (its own waits
    give up after TIMEOUT_S each) and fails the test with its stderr."""
    deadline = time.monotonic() + timeout
    while line := read_line(process, "the editor probe's report", deadline - time.monotonic()):
        if line.startswith("REPORT "):
            return json.loads(line.removeprefix("REPORT "))
    process.wait(timeout=60)
    errors = process.stderr.read()[-3000:] if process.stderr else ""
    pytest.fail(f"the editor probe ended without a report ({process.returncode}):\n{errors}")


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    """One show: the editor probe (then killed) and an attaching editor, with their reports."""
    folder = tmp_path_factory.mktemp("engine_editor")
    state_dir, log = folder / "state", folder / "frames.log"
    with private_display("1280x800x24", "640x480x24") as display:
        env = {**display, "PATCHBAY_FRAME_LOG": str(log)}
        ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
        editor = subprocess.Popen(
            [sys.executable, str(PROBE), "show", str(state_dir), str(EXAMPLE), str(ARTIFACT)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        result: dict = {"log": log}
        try:
            result["show"] = read_report(editor)
            result["frames_before_kill"] = len(logged_frames(log))
        finally:
            editor.kill()  # SIGKILL while the output plays
            editor.wait()
            result["editor_stderr"] = editor.stderr.read()[-3000:] if editor.stderr else ""
        result["killed_at"] = len(logged_frames(log))
        result["plays_on"] = wait_for_frames(log, result["killed_at"] + 60)
        engine = EngineProcess(state_dir / "engine")
        result["engine_after_editor_kill"] = engine.running_pid()
        attach = subprocess.run(
            [sys.executable, str(PROBE), "attach", str(state_dir)],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        lines = [ln for ln in attach.stdout.splitlines() if ln.startswith("REPORT ")]
        assert lines, f"attach probe failed ({attach.returncode}):\n{attach.stderr[-3000:]}"
        result["attach"] = json.loads(lines[0].removeprefix("REPORT "))
        result["frames_at_end"] = len(logged_frames(log))
        pid = engine.running_pid()
        if pid is not None:  # perform mode: the engine outlived the attached editor too
            result["engine_after_attach_closed"] = pid
            # and with no editor left, its supervisor brings a killed engine back, with the show
            # what plays is kept (on a worker thread) when the editor leaves: wait for it
            poll_until(lambda: (state_dir / "engine" / PLAYING_FILE).exists(), TIMEOUT_S)
            os.kill(pid, signal.SIGKILL)
            frames = len(logged_frames(log))
            result["resumed_frames"] = wait_for_frames(log, frames + 30)
            result["engine_after_crash"] = engine.running_pid()
            client = EngineClient(engine)
            if result["engine_after_crash"] is not None and client.start():
                client.send({"type": "get_patch"})
                patches: list[dict] = []

                def resumed() -> bool:
                    patches.extend(
                        encode(m) for m, _ in client.poll() if isinstance(m, PatchDocument)
                    )
                    return bool(patches) and bool(client.evaluator.output_fullscreen)

                poll_until(resumed, TIMEOUT_S, interval=0.05)
                result["resumed_patch"] = patches[0] if patches else None
                result["resumed_output"] = (
                    client.evaluator.output_open,
                    client.evaluator.output_screen,
                    client.evaluator.output_fullscreen,
                )
                client.close(stop_engine=True)
            engine.stop()
        yield result


def test_the_editor_and_the_engine_are_separate_processes(session: dict) -> None:
    show = session["show"]
    assert show["engine_pid"] not in (None, show["editor_pid"])
    assert show["playing"], session["editor_stderr"]


def test_the_output_goes_fullscreen_on_the_screen_asked_for(session: dict) -> None:
    assert session["show"]["output_on"] == "1: screen (640x480)"  # --screen 1 --fullscreen


def test_statuses_pictures_and_thumbnails_come_back_from_the_engine(session: dict) -> None:
    show = session["show"]
    assert show["classes"] == {"time": "HOT", "noise": "HOT", "contrast": "USER",
                               "colorize": "HOT", "output": "HOT"}  # fmt: skip
    assert set(show["statuses"].values()) <= {"ok", "cached"}
    assert show["thumbnail"] and show["preview_picture"] and show["output_picture"]


def test_values_on_links_come_from_the_engine(session: dict) -> None:
    """View > Show Values on Links with the engine: floats with a sparkline, textures with the
    engine's thumbnail of their source; the screenshot is tests/artifacts/live_values.png."""
    show = session["show"]
    assert show["link_labels_live"], show["link_labels"]
    labels = show["link_labels"]
    assert labels["time->noise.time"][0] == "sparkline"
    assert labels["contrast->colorize.contrast"][:2] == ["text", "2.5"]
    assert labels["noise->colorize.noise"][0] == "picture"
    assert labels["noise->colorize.noise"][1].startswith("texture ")  # and its size
    assert set(show["link_values_asked"]) == {"time", "noise", "contrast", "colorize"}
    assert (ARTIFACT.parent / "live_values.png").exists()


def test_edits_reach_the_engine_while_it_plays(session: dict) -> None:
    show = session["show"]
    assert show["added_arrives"] and show["undo_arrives"]
    assert show["pasted_in_editor"] == 1005 and show["paste_arrives"]
    assert show["frames_during_paste"] > 0 and show["zoomed_out"] and show["frames_during_zoom"]
    assert show["undo_steps_arrive"]
    assert show["frames_during_pan"] > 0
    assert show["open_arrives"] and show["frames_during_open"] > 0
    assert show["saved"] and show["sidecar_mb"] > 0.5 and show["array_arrives"]
    assert show["frames_during_save"] > 0
    assert "Engine" not in show["resyncs_or_errors"]


def test_the_output_window_presents_frames_and_survives_a_killed_editor(session: dict) -> None:
    assert session["frames_before_kill"] > 30
    assert session["plays_on"]  # 60 more frames presented after the editor's SIGKILL
    assert session["engine_after_editor_kill"] == session["show"]["engine_pid"]
    frames = logged_frames(session["log"])
    times = [t for t, _ in frames]
    assert times == sorted(times)


def test_a_new_editor_attaches_and_brings_a_killed_engine_back(session: dict) -> None:
    attach = session["attach"]
    assert attach["attached"] and attach["engine_pid"] == session["show"]["engine_pid"]
    assert attach["nodes"] == session["show"]["final_nodes"] == 2001 and attach["same_nodes"]
    # the file name came with the patch; what plays may not be saved
    assert attach["title"].startswith("engine_editor_saved.patchbay *")
    assert attach["restarted"] and attach["new_engine_pid"] != attach["engine_pid"]
    assert attach["new_engine_plays"]
    assert attach["nodes_after_restart"] and attach["output_open_after_restart"]
    assert attach["output_after_restart"] == "1: screen (640x480)"  # where it was
    assert session["frames_at_end"] > session["killed_at"] + 60
    # perform mode: closing the attached editor with the output open left the show playing
    assert session.get("engine_after_attach_closed") == attach["new_engine_pid"]


def test_with_no_editor_left_a_killed_engine_comes_back_playing_the_show(session: dict) -> None:
    assert session["engine_after_crash"] not in (None, session["engine_after_attach_closed"])
    assert session["resumed_frames"]  # its supervisor restarted it, output window and all
    patch = session["resumed_patch"]
    assert patch is not None and len(patch["document"]["nodes"]) == 2001
    assert patch["path"].endswith("engine_editor_saved.patchbay")
    assert session["resumed_output"] == (True, "1: screen (640x480)", True)
