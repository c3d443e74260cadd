"""Nothing silent in the window: a taken OSC port shows in the status bar and in Messages (whose
tab counts what is unread), and is changed in the Settings dialog, live (the engine process plays
on; OSC then listens and a message sent there plays the patch), as one undo step. The other news
(a node's first failure, the engine restarting, learn no source can reach, sending refused) is
played by a fake engine, as in tests/app/test_qt_bindings.py.

The taken port is a real one: the test binds a UDP socket and points the patch's OSC at it."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pythonosc.udp_client import SimpleUDPClient

from app.engine.client import EngineProcess, Restarted
from app.qt.launch import launch_editor
from app.qt.panels.bindings import LEARN_TEXT
from app.qt.window import QtEditorWindow
from nodes import Patch, save_patch
from tests.app.conftest import ScriptedDialogs, make_editor, run_frames, show_patch, stop_loop
from tests.app.test_qt_bindings import FakeEngine, choose, inspect
from tests.evaluators.test_osc import free_udp_port

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A UDP port another program holds."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other:
        other.bind(("127.0.0.1", 0))
        yield int(other.getsockname()[1])


def osc_patch(port: int) -> Patch:
    patch = Patch()
    patch.update_settings(osc_port=port)
    patch.add_node("osc.in", {"address": "/knob"}, (0, 0), node_id="knob")
    patch.add_node("output.value", None, (300, 0), node_id="out")
    patch.connect("knob", "out", "out", "in")
    return patch


def test_a_taken_osc_port_shows_in_the_window_and_is_changed_there(
    qtbot: Any, tmp_path: Path, taken_port: int
) -> None:
    save_patch(osc_patch(taken_port), tmp_path / "osc.patchbay")
    window = launch_editor(str(tmp_path / "osc.patchbay"), state_dir=tmp_path)
    qtbot.addWidget(window)
    window.file_actions.ask_unsaved = lambda: "discard"
    try:
        window.docks["Bindings"].raise_()  # Messages behind another tab: news counts unread
        off = f"OSC off: cannot listen on 127.0.0.1:{taken_port} ("
        qtbot.waitUntil(lambda: window.service_status.text("osc").startswith(off))
        assert off in window.messages.text()
        assert "choose another OSC port in Settings" in window.messages.text()
        qtbot.waitUntil(lambda: window.docks["Messages"].windowTitle() != "Messages")
        assert window.docks["Messages"].windowTitle() == f"Messages ({window.messages.unread})"
        indicator = window.service_status.indicators["osc"]
        qtbot.waitUntil(lambda: indicator.width() >= indicator.sizeHint().width())  # laid out
        ARTIFACTS.mkdir(exist_ok=True)
        window.grab().save(str(ARTIFACTS / "service_status_off.png"))

        dialog = window.file_actions.open_settings()
        assert dialog.osc_port.value() == taken_port
        assert dialog.osc_host.text() == "127.0.0.1"
        assert off in dialog.osc_status.text()
        dialog.grab().save(str(ARTIFACTS / "settings_dialog.png"))
        port = free_udp_port()
        dialog.osc_port.setValue(port)
        QTest.mouseClick(dialog.ok_button, Qt.MouseButton.LeftButton)
        listening = f"OSC: listening on 127.0.0.1:{port}"
        qtbot.waitUntil(lambda: window.service_status.text("osc") == listening)
        assert listening in window.messages.text()
        assert window.patch.settings["osc_port"] == port  # saved with the file
        assert window.engine is not None and window.engine.restarts == 0  # the engine played on
        window.grab().save(str(ARTIFACTS / "service_status_on.png"))

        window.canvas.select(["out"])  # watched: its value comes back in reports
        sender = SimpleUDPClient("127.0.0.1", port)

        def played() -> bool:
            sender.send_message("/knob", 0.5)
            return bool(window.evaluator.output("out") == 0.5)

        qtbot.waitUntil(played)
        window.docks["Messages"].raise_()
        assert window.docks["Messages"].windowTitle() == "Messages"  # read

        window.undo_stack.undo()  # one step: the taken port again
        qtbot.waitUntil(lambda: window.service_status.text("osc").startswith(off))
        assert window.patch.settings["osc_port"] == taken_port
    finally:
        window.close()
        EngineProcess(tmp_path / "engine").stop()


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine()


@pytest.fixture
def remote(qtbot: Any, tmp_path: Path, dialogs: ScriptedDialogs, engine: FakeEngine) -> Iterator:
    """An editor window with the fake engine; its loop turns when the test turns it."""
    window = make_editor(qtbot, tmp_path / "state", dialogs, engine)
    stop_loop(window)
    yield window
    dialogs.unsaved_answer = "discard"
    window.close()


def test_node_failures_restarts_and_refused_sending_reach_messages(
    remote: QtEditorWindow, engine: FakeEngine, dialogs: ScriptedDialogs, qtbot: Any
) -> None:
    engine.deliver({"type": "node_failed", "node": "ratio", "error": "ZeroDivisionError: x"})
    engine.incoming.append((Restarted("the engine stopped", "slow"), []))  # the client's own
    run_frames(remote)
    text = remote.messages.text()
    assert "node: ratio failed: ZeroDivisionError: x" in text
    assert "engine: restarted (the engine stopped; slow bypassed)" in text
    patch = Patch()
    patch.add_node("osc.out", {"host": "127.0.0.1", "port": 9999}, node_id="send")
    show_patch(remote, patch)
    dialogs.allow_send = False
    remote.live_control.offer_allow_send()
    assert "osc.out nodes send nothing to 127.0.0.1:9999" in remote.messages.text()


def test_learn_says_when_no_source_can_reach_it_and_stays_armed(
    remote: QtEditorWindow, engine: FakeEngine, qtbot: Any
) -> None:
    patch = Patch()
    patch.add_node("input.float", None, (0, 0), node_id="knob")
    show_patch(remote, patch)
    inspect(remote, "knob")
    choose(remote, remote.inspector.pin_label("value"), LEARN_TEXT)
    engine.deliver(
        {"type": "learn_unreachable", "node": "knob", "pin": "value",
         "reason": "OSC cannot listen on 127.0.0.1:9000 (Address already in use); MIDI "
                   "unavailable: no ALSA sequencer",
         "advice": "choose another OSC port in Settings"}
    )  # fmt: skip
    run_frames(remote)
    assert "learn: nothing can reach knob.value: OSC cannot listen" in remote.messages.text()
    assert "Settings" in remote.statusBar().currentMessage()
    assert remote.live_control.learn.target == ("knob", "value")


def test_settings_change_tempo_and_midi_as_one_undo_step(remote: QtEditorWindow) -> None:
    dialog = remote.file_actions.open_settings()
    assert "Not in use" in dialog.osc_status.text()
    dialog.bpm.setValue(128.0)
    dialog.tempo_source.setCurrentIndex(dialog.tempo_source.findData("midi"))
    dialog.midi_feedback.setChecked(True)
    dialog.osc_host.setText("nowhere")
    QTest.mouseClick(dialog.apply_button, Qt.MouseButton.LeftButton)
    assert "not an IP address" in dialog.problem.text()
    assert remote.undo_stack.count() == 0
    dialog.osc_host.setText("0.0.0.0")
    QTest.mouseClick(dialog.ok_button, Qt.MouseButton.LeftButton)
    settings = remote.patch.settings
    assert (settings["bpm"], settings["tempo_source"], settings["midi_feedback"]) == (
        128.0, "midi", True
    )  # fmt: skip
    assert remote.undo_stack.count() == 1
    assert {"type": "services", "osc_host": "0.0.0.0"} in engine_sent(remote)
    remote.undo_stack.undo()
    assert (settings["bpm"], settings["tempo_source"], settings["midi_feedback"]) == (
        120.0, "internal", False
    )  # fmt: skip


def engine_sent(window: QtEditorWindow) -> list[dict[str, Any]]:
    engine = window.engine
    assert isinstance(engine, FakeEngine)
    return engine.sent
