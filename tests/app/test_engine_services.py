"""What the engine tells its editor about services and failures: a taken OSC port is a `service`
message (and listening again is another once the port is changed by a settings edit, the OSC
service alone restarting), learn with no source that can reach it says so at once, the first
failure of each node is one `node_failed` message, and a new editor hears of them again.

A taken port is a real one: the test binds a UDP socket on a free port and points the engine's
OSC at it. The editor is played by the test through a pipe (tests/app/test_engine.py)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from pythonosc.udp_client import SimpleUDPClient

from app.engine.engine import Engine
from app.engine.protocol.channel import ProtocolError
from evaluators.services.midi import MidiService
from evaluators.services.registry import FACTORIES
from nodes import Patch
from tests.app.test_engine import EditorEnd
from tests.evaluators.test_osc import free_udp_port
from tests.waiting import poll_until


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A UDP port another program holds."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other:
        other.bind(("127.0.0.1", 0))
        yield int(other.getsockname()[1])


@pytest.fixture
def no_midi(monkeypatch: pytest.MonkeyPatch) -> None:
    """MIDI off as on a machine without an ALSA sequencer, whatever this one has."""
    monkeypatch.setitem(
        FACTORIES, "midi", lambda ctx: MidiService(None, "MIDI unavailable: no ALSA sequencer")
    )


def osc_patch(port: int) -> Patch:
    patch = Patch()
    patch.update_settings(osc_port=port)
    patch.add_node("osc.in", {"address": "/knob"}, node_id="knob")
    patch.add_node("output.value", node_id="out")
    patch.connect("knob", "out", "out", "in")
    return patch


def connected(engine: Engine, document: Patch) -> EditorEnd:
    before = engine.patch
    editor = EditorEnd(engine, document)
    assert poll_until(lambda: (engine.step(), engine.patch is not before)[1])
    return editor


def test_a_taken_port_is_said_and_a_new_port_applies_live(taken_port: int) -> None:
    engine = Engine(osc_patch(taken_port))
    try:
        document = osc_patch(taken_port)
        editor = connected(engine, document)
        said = editor.read_until("service", lambda m: m["name"] == "osc" and m["state"] == "off")
        assert f"cannot listen on 127.0.0.1:{taken_port}" in said["text"]
        assert "choose another OSC port in Settings" in said["advice"]
        frame = engine.frame
        port = free_udp_port()
        document.update_settings(osc_port=port)  # the window's Settings, as an edit
        listening = editor.read_until("service", lambda m: m["state"] == "on")
        assert listening["text"] == f"listening on 127.0.0.1:{port}"
        assert engine.frame > frame  # the frame loop went on: no engine restart
        sender = SimpleUDPClient("127.0.0.1", port)

        def played() -> bool:
            sender.send_message("/knob", 0.5)
            engine.step()
            return bool(engine.evaluator.output("out") == 0.5)

        assert poll_until(played)
    finally:
        engine.close()


def test_a_port_set_in_the_window_wins_over_the_command_line(taken_port: int) -> None:
    engine = Engine(osc_patch(9000), services={"osc_port": taken_port})
    try:
        document = osc_patch(9000)
        editor = connected(engine, document)
        editor.read_until("service", lambda m: m["state"] == "off")
        port = free_udp_port()
        document.update_settings(osc_port=port)
        said = editor.read_until("service", lambda m: m["state"] == "on")
        assert said["text"] == f"listening on 127.0.0.1:{port}"
    finally:
        engine.close()


def test_the_osc_host_changes_live_and_must_be_an_address() -> None:
    port = free_udp_port()
    engine = Engine(osc_patch(port))
    try:
        editor = connected(engine, osc_patch(port))
        editor.read_until("service", lambda m: m["text"] == f"listening on 127.0.0.1:{port}")
        editor.channel.send({"type": "services", "osc_host": "127.0.0.2"})
        editor.read_until("service", lambda m: m["text"] == f"listening on 127.0.0.2:{port}")
        editor.channel.send({"type": "services", "osc_host": "example.com"})
        error = editor.read_until("error")
        assert "not an IP address" in error["message"]
        with pytest.raises(ProtocolError):
            engine.set_osc_host(None)
    finally:
        engine.close()


def knob_patch(port: int) -> Patch:
    patch = Patch()
    patch.update_settings(osc_port=port)
    patch.add_node("input.float", node_id="knob")
    return patch


def test_learn_says_at_once_when_no_source_can_reach_it(taken_port: int, no_midi: None) -> None:
    engine = Engine(knob_patch(taken_port))
    try:
        document = knob_patch(taken_port)
        editor = connected(engine, document)
        editor.channel.send({"type": "learn", "node": "knob", "pin": "value"})
        problem = editor.read_until("learn_unreachable")
        assert (problem["node"], problem["pin"]) == ("knob", "value")
        assert f"OSC cannot listen on 127.0.0.1:{taken_port}" in problem["reason"]
        assert "MIDI unavailable: no ALSA sequencer" in problem["reason"]
        assert "Settings" in problem["advice"]
        assert engine.controls.learning  # still armed: a port fixed meanwhile is learned
        port = free_udp_port()
        document.update_settings(osc_port=port)
        editor.read_until("service", lambda m: m["name"] == "osc" and m["state"] == "on")
        sender = SimpleUDPClient("127.0.0.1", port)

        def sent_and_learned(_report: dict) -> bool:
            sender.send_message("/fader", 0.3)
            return any(m["type"] == "learned" for m in editor.received)

        editor.read_until("report", sent_and_learned)
        learned = next(m for m in editor.received if m["type"] == "learned")
        assert (learned["node"], learned["source"]) == ("knob", "osc:/fader")
    finally:
        engine.close()


def test_learn_that_osc_can_reach_says_nothing(no_midi: None) -> None:
    port = free_udp_port()
    engine = Engine(knob_patch(port))
    try:
        editor = connected(engine, knob_patch(port))
        editor.channel.send({"type": "learn", "node": "knob", "pin": "value"})
        editor.read_until("service", lambda m: m["name"] == "osc" and m["state"] == "on")
        editor.read_until("service", lambda m: m["name"] == "midi" and m["state"] == "off")
        for _ in range(3):
            editor.read_until("report")
        assert not [m for m in editor.received if m["type"] == "learn_unreachable"]
    finally:
        engine.close()


def failing_patch() -> Patch:
    patch = Patch()
    patch.add_node("input.float", {"value": 0.0}, node_id="den")
    patch.add_node("math.div", {"a": 1.0}, node_id="ratio")
    patch.add_node("output.value", node_id="shown")
    patch.connect("den", "out", "ratio", "b")
    patch.connect("ratio", "out", "shown", "in")
    return patch


def test_the_first_failure_of_each_node_is_said_once_and_again_to_a_new_editor() -> None:
    engine = Engine(Patch())
    try:
        editor = connected(engine, failing_patch())
        failed = editor.read_until("node_failed")
        assert failed["node"] == "ratio" and "ZeroDivisionError" in failed["error"]
        for _ in range(5):
            editor.read_until("report")
        assert [m["node"] for m in editor.received if m["type"] == "node_failed"] == ["ratio"]
        again = EditorEnd(engine, failing_patch())
        assert again.read_until("node_failed")["node"] == "ratio"
    finally:
        engine.close()
