"""Services say what they are doing (`ServiceStatus`): OSC listening or off on a taken port (a real
one, held by a socket of the test), MIDI off without a backend and why, audio off with its
failure; and `Services` restarts only the service a changed setting or option concerns."""

from __future__ import annotations

import io
import socket
import threading
from collections.abc import Iterator

import pytest

from evaluators import ExecutionContext
from evaluators.services.audio import AudioService
from evaluators.services.midi import NO_SEQUENCER, MidiService
from evaluators.services.osc import OscService
from evaluators.services.registry import OFF, ON, WAITING, ServiceStatus
from nodes.errors import Deferred
from tests.evaluators.test_osc import free_udp_port
from tests.waiting import poll_until


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as other:
        other.bind(("127.0.0.1", 0))
        yield int(other.getsockname()[1])


def test_osc_says_where_it_listens_or_why_it_cannot(taken_port: int) -> None:
    free = free_udp_port()
    listening = OscService("127.0.0.1", free, False, log=io.StringIO())
    assert listening.status().state == WAITING  # nothing listened to yet
    listening.listen("/a")
    assert listening.status().state == ON
    assert listening.status().text == f"listening on 127.0.0.1:{free}"
    assert listening.status().address == f"127.0.0.1:{free}"
    listening.close()
    refused = OscService("127.0.0.1", taken_port, False, log=io.StringIO())
    refused.listen("/a")
    status = refused.status()
    assert status.state == OFF
    assert status.text.startswith(f"cannot listen on 127.0.0.1:{taken_port} (")
    assert "Settings" in status.advice
    refused.close()
    off = OscService("127.0.0.1", 0, False, log=io.StringIO())
    off.listen("/a")
    assert off.status().state == OFF and "port 0" in off.status().text


def test_closing_osc_wakes_its_thread_and_frees_the_port_at_once() -> None:
    port = free_udp_port()
    others = set(threading.enumerate())  # services other tests left running
    service = OscService("127.0.0.1", port, False, log=io.StringIO())
    service.listen("/a")
    service.close()
    alive = [t for t in threading.enumerate() if t.name == "patchbay-osc" and t not in others]
    assert not [t for t in alive if t.is_alive()]
    again = OscService("127.0.0.1", port, False, log=io.StringIO())
    again.listen("/a")
    assert again.status().state == ON
    again.close()


def test_midi_and_audio_say_why_they_are_off() -> None:
    midi = MidiService(None, NO_SEQUENCER, log=io.StringIO())
    assert midi.status().state == OFF
    assert midi.status().text == NO_SEQUENCER
    assert "ALSA sequencer" in midi.status().advice
    audio = AudioService(None, "no audio input: no PortAudio here")
    assert audio.status().state == WAITING

    def refused() -> bool:
        try:
            audio.capture("", 0.0)
        except Deferred:
            return False
        except RuntimeError:
            return True
        return False

    assert poll_until(refused)
    assert audio.status() == ServiceStatus(
        OFF,
        "no audio input: no PortAudio here",
        "connect an input device, or pick another in the node",
    )
    audio.close()


def test_a_changed_port_restarts_only_osc_and_wins_over_the_option(taken_port: int) -> None:
    ctx = ExecutionContext()
    ctx.settings = {"osc_port": free_udp_port()}
    services = ctx.services
    services.options["osc_port"] = taken_port  # as --osc-port
    services.prepare_frame()  # this thread is the frame thread
    osc = ctx.service("osc")
    osc.listen("/a")
    assert osc.status().state == OFF
    midi = ctx.service("midi")
    services.settings_changed(["bpm"])
    assert ctx.service("osc") is osc  # a setting OSC does not read: nothing restarts
    services.settings_changed(["osc_port"])
    assert "osc_port" not in services.options
    fresh = ctx.service("osc")
    assert fresh is not osc and ctx.service("midi") is midi
    fresh.listen("/a")
    assert fresh.status().text == f"listening on 127.0.0.1:{ctx.settings['osc_port']}"
    services.set_option("osc_host", "127.0.0.3")
    moved = ctx.service("osc")
    moved.listen("/a")
    assert moved.status().text == f"listening on 127.0.0.3:{ctx.settings['osc_port']}"
    services.close()
