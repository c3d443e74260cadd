"""The engine as a real process (Qt's offscreen platform, GL through EGL) and its editors: edits
arrive, reports come back, and the show survives a kill -9 of either side and a hung node.

The editor here is an `EngineClient` driven by the test, as `QtEditorWindow` drives it; the tests
under Xvfb (test_engine_editor.py) run the real editor window. Waits are deadlines, never counts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from app.engine.client import EngineClient, EngineProcess, Restarted, pid_alive
from app.engine.protocol.channel import EditBatch, patch_from_message, patch_message
from app.engine.protocol.messages import Error, PatchDocument, ResyncNeeded
from nodes import Patch
from tests.waiting import TIMEOUT_S, read_line
from tests.waiting import poll_until as wait_for

ROOT = Path(__file__).resolve().parents[2]


def show_patch() -> Patch:
    patch = Patch()
    patch.add_node("time.frame", None, node_id="frame")
    patch.add_node("debug.sleep", None, node_id="slow")
    patch.add_node("output.value", None, node_id="out")
    patch.connect("frame", "out", "slow", "x")
    patch.connect("slow", "out", "out", "in")
    return patch


class Editor:
    """What the editor window does with its client: send the patch, its edits, its watches."""

    def __init__(self, client: EngineClient, patch: Patch) -> None:
        self.client = client
        self.patch = patch
        self.edits = EditBatch(patch)
        patch.subscribe(self.edits.add)
        self.messages: list = []

    def send_patch(self) -> None:
        self.edits.clear()
        self.client.send(*patch_message(self.patch))
        self.client.send({"type": "watch", "nodes": ["out"]})

    def send_edits(self) -> None:
        batch = self.edits.take()
        if batch is not None:
            self.client.send(*batch)

    def pump(self) -> bool:
        """One turn of the editor's loop; resends the patch after a restart."""
        self.send_edits()
        for message, _ in self.client.poll():
            self.messages.append(message)
            if isinstance(message, Restarted | ResyncNeeded):
                self.send_patch()
        return True

    def wait(self, condition: Callable[[], object], timeout: float = TIMEOUT_S) -> bool:
        return wait_for(lambda: self.pump() and condition(), timeout)


@pytest.fixture
def run_dir(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "engine"
    yield folder
    EngineProcess(folder).stop()  # a leftover engine and its supervisor


@pytest.fixture
def editor(run_dir: Path) -> Iterator[Editor]:
    client = EngineClient(EngineProcess(run_dir))
    assert client.start() is False  # nothing was running: started
    editor = Editor(client, show_patch())
    editor.send_patch()
    yield editor
    client.close()


def test_edits_arrive_and_reports_come_back_from_another_process(editor: Editor) -> None:
    remote = editor.client.evaluator
    engine_pid = editor.client.engine.running_pid()
    assert engine_pid is not None and engine_pid != os.getpid()
    assert editor.client.hello.pid == engine_pid
    assert editor.wait(lambda: (remote.output("out") or 0) > 5)
    assert remote.node_class("out") == "HOT" and remote.status("out") in ("ok", "cached")
    editor.patch.add_node("value.float", {"value": 2.5}, node_id="const")
    editor.patch.disconnect("slow", "out", "out", "in")
    editor.patch.connect("const", "out", "out", "in")
    assert editor.wait(lambda: remote.output("out") == 2.5)
    assert remote.node_class("out") == "CONST"
    editor.patch.set_value("const", "value", -1.0)
    assert editor.wait(lambda: remote.output("out") == -1.0)
    assert editor.wait(lambda: remote.mode == "flat")  # built in the engine's background
    assert not [m for m in editor.messages if isinstance(m, ResyncNeeded | Error)]


def test_a_killed_engine_is_restarted_and_gets_the_patch_again(editor: Editor) -> None:
    remote = editor.client.evaluator
    assert editor.wait(lambda: remote.frame > 3)
    first = editor.client.engine.running_pid()
    assert first is not None
    os.kill(first, signal.SIGKILL)
    assert editor.wait(lambda: any(isinstance(m, Restarted) for m in editor.messages))
    second = editor.client.engine.running_pid()
    assert second not in (None, first)
    assert editor.wait(lambda: (remote.output("out") or 0) > 3)  # playing the patch again


def test_an_engine_frozen_where_its_watchdog_cannot_act_is_restarted_by_the_editor(
    editor: Editor,
) -> None:
    remote = editor.client.evaluator
    assert editor.wait(lambda: remote.frame > 3)
    frozen = editor.client.engine.running_pid()
    assert frozen is not None
    os.kill(frozen, signal.SIGSTOP)  # no frame, no report, no heartbeat
    assert editor.wait(lambda: any(isinstance(m, Restarted) for m in editor.messages))
    assert editor.client.engine.running_pid() not in (None, frozen)
    assert not pid_alive(frozen) or Path(f"/proc/{frozen}/stat").read_text().split()[2] == "Z"
    assert editor.wait(lambda: (remote.output("out") or 0) > 3)  # playing the patch again


def test_a_hung_node_restarts_the_engine_with_that_node_bypassed(editor: Editor) -> None:
    remote = editor.client.evaluator
    assert editor.wait(lambda: remote.frame > 3)
    editor.patch.set_value("slow", "seconds", 60.0)  # one frame would take a minute
    assert editor.wait(lambda: remote.status("slow") == "failed")
    restarted = [m for m in editor.messages if isinstance(m, Restarted)]
    assert restarted and restarted[0].bypassed == "slow"
    assert remote.error("slow") == "stopped: took longer than 2 s"
    frame = remote.frame
    assert editor.wait(lambda: remote.frame > frame + 10)  # the rest plays on
    editor.patch.set_value("slow", "seconds", 0.0)  # edited: it gets another chance
    assert editor.wait(lambda: remote.status("slow") == "ok")
    assert remote.bypassed == {}


EDITOR_SCRIPT = textwrap.dedent(
    """
    import dataclasses, sys, time
    from pathlib import Path
    from app.engine.client import EngineClient, EngineProcess
    from app.engine.protocol.channel import patch_message
    from nodes import Patch
    client = EngineClient(EngineProcess(Path(sys.argv[1])))
    client.start()
    patch = Patch()
    patch.add_node("time.frame", None, node_id="clock")
    patch.add_node("output.value", None, node_id="shown")
    patch.connect("clock", "out", "shown", "in")
    message, blobs = patch_message(patch)
    client.send(dataclasses.replace(message, path="/shows/tonight.patchbay"), blobs)
    print("READY", flush=True)
    time.sleep(600)
    """
)


def frames_logged(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_the_engine_plays_on_when_its_editor_is_killed_and_a_new_one_attaches(
    run_dir: Path, tmp_path: Path
) -> None:
    log = tmp_path / "frames.log"
    env = {**os.environ, "PATCHBAY_FRAME_LOG": str(log)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    first = subprocess.Popen(
        [sys.executable, "-c", EDITOR_SCRIPT, str(run_dir)],
        env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # longer than the client's own 30 s to start the engine, so that its error is what shows
        line = read_line(first, "the editor process to start its engine", timeout=2 * TIMEOUT_S)
        assert line.strip() == "READY", f"the editor process did not start ({line!r})"
        engine = EngineProcess(run_dir)
        engine_pid = engine.running_pid()
        assert engine_pid not in (None, first.pid)
        assert wait_for(lambda: frames_logged(log) > 10)
    finally:
        first.kill()  # SIGKILL: no goodbye
        first.wait()
    killed_at = frames_logged(log)
    assert wait_for(lambda: frames_logged(log) > killed_at + 60)  # a second later: still playing
    assert engine.running_pid() == engine_pid

    client = EngineClient(engine)
    assert client.start() is True  # attached to the running engine, not a new one
    assert client.send({"type": "get_patch"})
    replies: list = []
    assert wait_for(lambda: replies.extend(client.poll()) or replies)
    message, blobs = replies[0]
    assert isinstance(message, PatchDocument) and message.path == "/shows/tonight.patchbay"
    attached = patch_from_message(message, blobs)
    assert sorted(attached.nodes) == ["clock", "shown"]
    assert attached.revision == message.rev
    client.close(stop_engine=True)
    assert wait_for(lambda: engine.running_pid() is None)


def test_with_its_editor_gone_a_killed_engine_comes_back_playing_what_it_played(
    run_dir: Path,
) -> None:
    env = {**os.environ}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    first = subprocess.Popen(
        [sys.executable, "-c", EDITOR_SCRIPT, str(run_dir)], env=env, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert read_line(first, "the editor's READY").strip() == "READY"
    finally:
        first.kill()  # the editor goes: the engine keeps what it plays
        first.wait()
    assert wait_for(lambda: (run_dir / "playing.show").exists())
    engine = EngineProcess(run_dir)
    crashed = engine.running_pid()
    assert crashed is not None and engine.supervisor_pid() is not None
    os.kill(crashed, signal.SIGKILL)
    assert wait_for(lambda: engine.running_pid() not in (None, crashed))  # its supervisor
    client = EngineClient(engine)
    assert client.start() is True
    assert client.send({"type": "get_patch"})
    replies: list = []
    assert wait_for(lambda: replies.extend(client.poll()) or replies)
    message, blobs = replies[0]
    assert message.path == "/shows/tonight.patchbay"
    assert sorted(patch_from_message(message, blobs).nodes) == ["clock", "shown"]
    assert wait_for(lambda: client.evaluator.frame > 5)  # playing
    client.close(stop_engine=True)
    assert wait_for(lambda: engine.running_pid() is None and engine.supervisor_pid() is None)
    assert not (run_dir / "playing.show").exists()  # a show that ended is not resumed


def test_patchbay_run_restarts_a_hung_engine_with_the_node_bypassed(tmp_path: Path) -> None:
    patch = show_patch()
    patch.set_value("slow", "seconds", 30.0)
    from nodes import save_patch

    save_patch(patch, tmp_path / "hangs.patchbay")
    env = {**os.environ, "PATCHBAY_STATE_DIR": str(tmp_path / "state")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "app.cli.main", "run", str(tmp_path / "hangs.patchbay"),
               "--frames", "20"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "restarting the engine (slow hung, bypassed)" in done.stderr
    assert EngineProcess(tmp_path / "state" / "engine").running_pid() is None


def test_the_engine_checks_what_editors_send_against_the_limits_it_was_given(
    run_dir: Path,
) -> None:
    client = EngineClient(EngineProcess(run_dir, ["--limit", "nodes=2"]))
    client.start()
    editor = Editor(client, show_patch())  # three nodes: one over the limit
    editor.send_patch()
    assert editor.wait(lambda: any(isinstance(m, Error) for m in editor.messages))
    error = next(m for m in editor.messages if isinstance(m, Error)).message
    assert "nodes" in error and "\n" not in error and len(error) <= 300
    assert client.evaluator.nodes() == set()  # the engine plays what it had: nothing
    client.close()


def seconds_patch() -> Patch:
    patch = Patch()
    patch.add_node("time.seconds", None, node_id="seconds")
    patch.add_node("output.value", None, node_id="shown")
    patch.connect("seconds", "out", "shown", "in")
    return patch


def editor_window(qtbot: Any, patch: Patch, folder: Path) -> Any:
    """The real editor window (offscreen) on `patch` saved in `folder`, with its engine in
    `folder`/engine, as `patchbay edit FILE` opens it."""
    from app.qt.launch import launch_editor
    from nodes import save_patch

    save_patch(patch, folder / "next.patchbay")
    window = launch_editor(str(folder / "next.patchbay"), state_dir=folder)
    qtbot.addWidget(window)
    window.file_actions.ask_unsaved = lambda: "discard"
    return window


def test_the_editor_window_resends_its_patch_when_the_engine_asks_for_it(
    qtbot: Any, run_dir: Path
) -> None:
    window = editor_window(qtbot, seconds_patch(), run_dir.parent)
    remote = window.evaluator
    qtbot.waitUntil(lambda: remote.nodes() == {"seconds", "shown"})
    sent: list[int] = []
    send_patch = window.send_patch
    window.send_patch = lambda: sent.append(1) or send_patch()
    # edits that do not fit the engine's copy (as after a lost message): it asks for the patch
    assert window.engine.send({"type": "edits", "seq": 0, "rev": 10**6, "vrev": 0, "ops": []})
    qtbot.waitUntil(lambda: sent == [1])  # the window answered with its whole patch
    window.patch.add_node("value.float", {"value": 4.0}, node_id="four")
    window.patch.disconnect("seconds", "out", "shown", "in")
    window.patch.connect("four", "out", "shown", "in")
    qtbot.waitUntil(lambda: remote.nodes() == {"seconds", "shown", "four"})
    qtbot.waitUntil(lambda: remote.node_class("shown") == "CONST")  # edits apply again
    assert sent == [1]
    window.close()


def test_an_editor_opening_a_file_joins_the_running_engine_instead_of_starting_another(
    qtbot: Any, run_dir: Path
) -> None:
    first = EngineClient(EngineProcess(run_dir))
    assert first.start() is False
    Editor(first, show_patch()).send_patch()
    engine_pid = first.engine.running_pid()
    first.close(stop_engine=False)  # an editor that went away: the engine plays on

    window = editor_window(qtbot, seconds_patch(), run_dir.parent)
    assert window.engine is not None and window.engine.attached
    assert window.engine.engine.running_pid() == engine_pid  # no second engine beside it
    assert set(window.patch.nodes) == {"seconds", "shown"}  # the file, not the engine's patch
    qtbot.waitUntil(lambda: window.evaluator.nodes() == {"seconds", "shown"})  # sent to it
    window.close()
    assert wait_for(lambda: EngineProcess(run_dir).running_pid() is None)


def start_player(tmp_path: Path, frames: int) -> tuple[subprocess.Popen[str], int]:
    """`patchbay run` on a small playing patch, with its own state folder; returns the player
    process and the pid of its engine once that listens."""
    from nodes import save_patch

    save_patch(show_patch(), tmp_path / "show.patchbay")
    env = {**os.environ, "PATCHBAY_STATE_DIR": str(tmp_path / "state")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "app.cli.main", "run", str(tmp_path / "show.patchbay"),
               "--frames", str(frames)]  # fmt: skip
    player = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    engine = EngineProcess(tmp_path / "state" / "engine")
    if not wait_for(lambda: engine.running_pid() is not None or player.poll() is not None):
        player.kill()
    pid = engine.running_pid()
    if pid is None:
        _, errors = player.communicate(timeout=60)
        pytest.fail(f"patchbay run did not start its engine:\n{errors[-3000:]}")
    return player, pid


def test_patchbay_run_kills_and_restarts_an_engine_whose_frame_loop_stopped(
    tmp_path: Path,
) -> None:
    player, frozen = start_player(tmp_path, 120)
    try:
        os.kill(frozen, signal.SIGSTOP)  # stuck where its own watchdog cannot run
        _, errors = player.communicate(timeout=300)
    finally:
        player.kill()
    assert player.returncode == 0, errors[-3000:]
    assert "restarting the engine (no frame for" in errors  # killed by the supervisor
    assert not pid_alive(frozen)


def test_an_editor_leaves_restarting_a_patchbay_run_engine_to_its_supervisor(
    tmp_path: Path,
) -> None:
    player, _ = start_player(tmp_path, 100_000)
    try:
        client = EngineClient(EngineProcess(tmp_path / "state" / "engine"))
        assert client.start() is True and client.hello.supervised is True
        editor = Editor(client, show_patch())
        editor.send_patch()
        assert editor.wait(lambda: client.evaluator.frame > 3)
        first = client.engine.running_pid()
        assert first is not None
        os.kill(first, signal.SIGKILL)
        assert editor.wait(lambda: any(isinstance(m, Restarted) for m in editor.messages))
        second = client.engine.running_pid()
        assert second not in (None, first) and client.hello.pid == second
        assert editor.wait(lambda: (client.evaluator.output("out") or 0) > 3)  # playing again
        assert player.poll() is None  # the supervisor still runs: its engine was not replaced
        client.close()  # stops the engine: the supervisor ends with it
        _, errors = player.communicate(timeout=120)
    finally:
        player.kill()
    assert errors.count("restarting the engine") == 1, errors[-3000:]
