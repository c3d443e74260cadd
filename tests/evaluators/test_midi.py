"""MIDI input: mido messages through the service's receive path, MIDI clock, port scanning with a
fake backend, the service without mido or without an ALSA sequencer, and the midi.cc / midi.note
nodes in every evaluator.

The receive path is what a port's callback calls (`receive(message, device)`), so most tests call it
directly with mido messages; the clock takes an injected clock function instead of sleeping. A
real round trip through a virtual port runs where the platform has one (rtmidi with an ALSA
sequencer, or CoreMIDI); on Linux without `/dev/snd/seq` the test of that case checks that opening
ports is one clear line instead. Waits are by deadline (`poll_until`).
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import mido
import pytest

from evaluators import ExecutionContext, NodeStatus
from evaluators.controls.events import ControlEvent
from evaluators.services import midi as midi_service
from evaluators.services.midi import (
    MAX_ERRORS,
    MAX_QUEUED,
    NO_SEQUENCER,
    NO_SEQUENCER_ACCESS,
    UNAVAILABLE,
    MidiService,
    default_backend,
)
from evaluators.services.registry import FACTORIES
from nodes import LIBRARY, Determinism, Patch
from tests.waiting import poll_until

KNOBS = "nanoKONTROL2:nanoKONTROL2 MIDI 1 20:0"
KEYS = "Launchkey Mini:Launchkey Mini MIDI 1 24:0"


class FakePort:
    def __init__(self, name: str, callback: Callable[[Any], None]) -> None:
        self.name = name
        self.callback = callback
        self.closed = False

    def close(self) -> None:
        self.closed = True


class FakeBackend:
    """Ports by name, as mido would list and open them; counts the listings."""

    def __init__(self, names: list[str], refuse: frozenset[str] = frozenset()) -> None:
        self.names = list(names)
        self.refuse = refuse
        self.listings = 0
        self.opened: dict[str, FakePort] = {}

    def input_names(self) -> list[str]:
        self.listings += 1
        return list(self.names)

    def open_input(self, name: str, callback: Callable[[Any], None]) -> FakePort:
        if name in self.refuse:
            raise OSError(f"unknown port {name!r}")
        port = self.opened[name] = FakePort(name, callback)
        return port


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def services() -> Iterator[Callable[..., MidiService]]:
    made: list[MidiService] = []

    def make(*args: Any, **kwargs: Any) -> MidiService:
        kwargs.setdefault("log", io.StringIO())
        service = MidiService(*args, **kwargs)
        made.append(service)
        return service

    yield make
    for service in made:
        service.close()


@pytest.fixture
def service(services: Callable[..., MidiService]) -> MidiService:
    """A service on a fake backend with no ports (no scanner runs unless a test wants one)."""
    return services(FakeBackend([]))


def frame(service: MidiService) -> list[ControlEvent]:
    service.begin_frame()
    return service.take_controls()


# ----------------------------------------------------------------------------- receiving


def test_control_changes_become_control_events_on_the_next_frame(service: MidiService) -> None:
    service.receive(mido.Message("control_change", channel=0, control=7, value=127), KNOBS)
    service.receive(mido.Message("control_change", channel=15, control=1, value=64), KNOBS)
    assert service.take_controls() == []  # nothing before the frame drains
    assert frame(service) == [
        ControlEvent("midi:cc:1:7", 1.0, KNOBS),
        ControlEvent("midi:cc:16:1", 64 / 127, KNOBS),
    ]
    assert frame(service) == []  # drained once


def test_the_frame_events_stay_until_the_next_frame(service: MidiService) -> None:
    service.receive(mido.Message("control_change", channel=2, control=20, value=0), KNOBS)
    service.begin_frame()
    first = list(service.take_controls())
    assert first == [ControlEvent("midi:cc:3:20", 0.0, KNOBS)]
    assert service.take_controls() == first  # asking twice in a frame gives the same events
    service.begin_frame()
    assert service.take_controls() == []


def test_notes_give_velocity_and_zero_when_released(service: MidiService) -> None:
    service.receive(mido.Message("note_on", channel=9, note=36, velocity=100), KEYS)
    service.receive(mido.Message("note_off", channel=9, note=36, velocity=64), KEYS)
    service.receive(mido.Message("note_on", channel=0, note=60, velocity=127), KEYS)
    service.receive(mido.Message("note_on", channel=0, note=60, velocity=0), KEYS)  # = note off
    assert frame(service) == [
        ControlEvent("midi:note:10:36", 100 / 127, KEYS),
        ControlEvent("midi:note:10:36", 0.0, KEYS),
        ControlEvent("midi:note:1:60", 1.0, KEYS),
        ControlEvent("midi:note:1:60", 0.0, KEYS),
    ]


def test_events_keep_their_order_across_kinds_and_devices(service: MidiService) -> None:
    sent = []
    for n in range(50):
        if n % 2:
            message = mido.Message("note_on", channel=n % 16, note=n, velocity=n)
            sent.append(ControlEvent(f"midi:note:{n % 16 + 1}:{n}", n / 127, KEYS))
            service.receive(message, KEYS)
        else:
            message = mido.Message("control_change", channel=n % 16, control=n, value=n)
            sent.append(ControlEvent(f"midi:cc:{n % 16 + 1}:{n}", n / 127, KNOBS))
            service.receive(message, KNOBS)
    assert frame(service) == sent


def test_a_flood_is_bounded_counted_and_dropped(service: MidiService) -> None:
    message = mido.Message("control_change", channel=0, control=1, value=5)
    for _ in range(MAX_QUEUED + 100):
        service.receive(message, KNOBS)
    assert service.dropped == 100
    assert len(frame(service)) == MAX_QUEUED
    service.receive(mido.Message("control_change", channel=0, control=1, value=6), KNOBS)
    assert frame(service) == [ControlEvent("midi:cc:1:1", 6 / 127, KNOBS)]  # flows again


def test_sysex_and_other_messages_are_ignored(service: MidiService) -> None:
    for message in (
        mido.Message("sysex", data=[0x7E, 0x7F, 0x06, 0x01]),
        mido.Message("pitchwheel", channel=0, pitch=1000),
        mido.Message("program_change", channel=0, program=3),
        mido.Message("aftertouch", channel=0, value=3),
        mido.Message("active_sensing"),
    ):
        service.receive(message, KNOBS)
    assert frame(service) == []
    assert service.take_transport() == []
    assert service.tempo() is None
    assert (service.malformed, service.dropped) == (0, 0)


@pytest.mark.parametrize(
    "garbage",
    [
        None,
        b"\xb0\x07\x7f",
        SimpleNamespace(type="control_change", channel=16, control=1, value=1),
        SimpleNamespace(type="control_change", channel=0, control=1, value=300),
        SimpleNamespace(type="note_on", channel=0, note=-1, velocity=1),
        SimpleNamespace(type="note_on", channel=0, note=60, velocity=1.5),
        SimpleNamespace(type="control_change", channel=0),
    ],
)
def test_malformed_messages_are_counted_and_dropped(service: MidiService, garbage: Any) -> None:
    service.receive(garbage, KNOBS)
    service.receive(mido.Message("control_change", channel=0, control=2, value=127), KNOBS)
    assert service.malformed == 1
    assert frame(service) == [ControlEvent("midi:cc:1:2", 1.0, KNOBS)]


# ----------------------------------------------------------------------------- clock and transport


def send_ticks(service: MidiService, clock: FakeClock, count: int, bpm: float) -> None:
    for _ in range(count):
        clock.now += 60.0 / bpm / 24
        service.receive(mido.Message("clock"), KNOBS)


def test_midi_clock_at_120_bpm_gives_120(services: Callable[..., MidiService]) -> None:
    clock = FakeClock()
    service = services(FakeBackend([]), clock=clock)
    assert service.tempo() is None
    send_ticks(service, clock, 48, 120.0)
    service.begin_frame()
    assert service.tempo() == pytest.approx(120.0, abs=0.5)
    assert service.take_controls() == []  # ticks are no control events


def test_midi_clock_tempo_follows_a_change_within_a_beat(
    services: Callable[..., MidiService],
) -> None:
    clock = FakeClock()
    service = services(FakeBackend([]), clock=clock)
    send_ticks(service, clock, 48, 120.0)
    send_ticks(service, clock, 24, 140.0)  # one beat at the new tempo
    service.begin_frame()
    assert service.tempo() == pytest.approx(140.0, abs=0.5)


def test_midi_clock_with_jitter_is_smoothed(services: Callable[..., MidiService]) -> None:
    clock = FakeClock()
    service = services(FakeBackend([]), clock=clock)
    tick = 0.5 / 24
    for n in range(96):  # each tick 2 ms early or late, alternately: 10% of the interval
        clock.now = 100.0 + n * tick + (0.002 if n % 2 else -0.002)
        service.receive(mido.Message("clock"), KNOBS)
    service.begin_frame()
    assert service.tempo() == pytest.approx(120.0, abs=0.5)


def test_no_clock_for_two_seconds_gives_no_tempo(services: Callable[..., MidiService]) -> None:
    clock = FakeClock()
    service = services(FakeBackend([]), clock=clock)
    send_ticks(service, clock, 30, 120.0)
    service.begin_frame()
    clock.now += 1.9
    assert service.tempo() == pytest.approx(120.0, abs=0.5)
    clock.now += 0.2
    assert service.tempo() is None
    send_ticks(service, clock, 30, 90.0)  # the clock comes back at another tempo
    service.begin_frame()
    assert service.tempo() == pytest.approx(90.0, abs=0.5)


def test_start_continue_and_stop_are_this_frames_transport(service: MidiService) -> None:
    for kind in ("start", "stop", "continue"):
        service.receive(mido.Message(kind), KNOBS)
    service.receive(mido.Message("songpos", pos=16), KNOBS)
    service.begin_frame()
    assert service.take_transport() == ["start", "stop", "continue"]
    assert service.take_transport() == ["start", "stop", "continue"]
    service.begin_frame()
    assert service.take_transport() == []


# ----------------------------------------------------------------------------- ports


def test_want_opens_the_matching_ports_and_their_messages_arrive(
    services: Callable[..., MidiService],
) -> None:
    backend = FakeBackend([KNOBS, KEYS])
    service = services(backend)
    service.want("nanoKONTROL")
    assert poll_until(lambda: service.inputs_matching("nanoKONTROL") is not None)
    assert service.inputs_matching("nanoKONTROL") == [KNOBS]
    assert list(backend.opened) == [KNOBS]
    assert service.ports() == [KNOBS, KEYS]
    backend.opened[KNOBS].callback(mido.Message("control_change", channel=0, control=3, value=0))
    assert frame(service) == [ControlEvent("midi:cc:1:3", 0.0, KNOBS)]
    service.want("")
    assert poll_until(lambda: service.inputs_matching("") is not None)
    assert sorted(backend.opened) == sorted([KNOBS, KEYS])
    service.close()
    assert all(port.closed for port in backend.opened.values())


def test_ports_are_listed_at_most_every_scan_interval(
    services: Callable[..., MidiService],
) -> None:
    backend = FakeBackend([KNOBS, KEYS])
    service = services(backend, scan_seconds=3600.0)
    service.want("nano")
    assert poll_until(lambda: service.inputs_matching("nano") is not None)
    for _ in range(200):  # frames asking again; a new pattern then opens from the last listing
        service.want("nano")
        service.begin_frame()
    service.want("Launchkey")
    assert poll_until(lambda: service.inputs_matching("Launchkey") is not None)
    assert sorted(backend.opened) == sorted([KNOBS, KEYS])
    assert backend.listings == 1


def test_a_port_plugged_in_later_opens_and_an_unplugged_one_closes(
    services: Callable[..., MidiService],
) -> None:
    backend = FakeBackend([KEYS])
    service = services(backend, scan_seconds=0.05)
    service.want("nano")
    assert poll_until(lambda: service.inputs_matching("nano") is not None)
    assert service.inputs_matching("nano") == []
    backend.names.append(KNOBS)
    assert poll_until(lambda: service.inputs_matching("nano") == [KNOBS])
    first = backend.opened[KNOBS]
    backend.names.remove(KNOBS)
    assert poll_until(lambda: first.closed and service.inputs_matching("nano") == [])
    backend.names.append(KNOBS)  # plugged in again: a new port
    assert poll_until(lambda: service.inputs_matching("nano") == [KNOBS])
    assert backend.opened[KNOBS] is not first


def test_a_port_that_cannot_open_is_one_line_once(services: Callable[..., MidiService]) -> None:
    log = io.StringIO()
    backend = FakeBackend([KNOBS], refuse=frozenset({KNOBS}))
    service = services(backend, log=log, scan_seconds=0.01)
    service.want("")
    assert poll_until(lambda: backend.listings >= 5)  # tried again and again
    assert service.errors == [f"MIDI input '{KNOBS}' cannot be opened: unknown port '{KNOBS}'"]
    assert log.getvalue().count("\n") == 1
    assert service.inputs_matching("") == []


def test_problems_kept_are_bounded(services: Callable[..., MidiService]) -> None:
    names = [f"broken {n}" for n in range(MAX_ERRORS + 30)]
    log = io.StringIO()
    backend = FakeBackend(names, refuse=frozenset(names))
    service = services(backend, log=log)
    service.want("broken")
    assert poll_until(lambda: service.inputs_matching("broken") is not None)
    assert len(service.errors) == MAX_ERRORS
    assert log.getvalue().count("\n") == MAX_ERRORS


def test_want_after_close_opens_nothing(services: Callable[..., MidiService]) -> None:
    backend = FakeBackend([KNOBS])
    service = services(backend)
    service.close()
    service.want("")
    assert backend.listings == 0
    assert backend.opened == {}


# ----------------------------------------------------------------------------- without MIDI


def test_without_mido_the_service_says_so_once_and_gives_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "mido", None)  # `import mido` raises ImportError
    log = io.StringIO()
    service = MidiService(log=log)
    service.want("")
    service.want("nano")
    service.receive(mido.Message("control_change", channel=0, control=1, value=1), KNOBS)
    service.begin_frame()
    assert service.errors == [UNAVAILABLE]
    assert log.getvalue() == f"patchbay: {UNAVAILABLE}\n"
    assert service.inputs_matching("nano") == []
    assert service.ports() == []
    assert service.tempo() is None
    assert service.take_transport() == []
    service.close()


def test_without_mido_the_context_still_makes_the_service(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "mido", None)
    ctx = ExecutionContext()
    ctx.services.frame_started()
    try:
        midi = ctx.service("midi")
        midi.want("")
        ctx.services.frame_started()
        assert midi.take_controls() == []
        assert ctx.service("midi") is midi  # made once: said once
    finally:
        ctx.release_all()
    assert capsys.readouterr().err == f"patchbay: {UNAVAILABLE}\n"


SEQUENCER_MISSING = sys.platform.startswith("linux") and not os.path.exists("/dev/snd/seq")
VIRTUAL_PORTS = sys.platform == "darwin" or (
    sys.platform.startswith("linux") and os.path.exists("/dev/snd/seq")
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ALSA is Linux's")
def test_linux_without_a_usable_alsa_sequencer_has_no_backend(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    monkeypatch.setattr(midi_service, "ALSA_SEQUENCER", str(tmp_path / "seq"))
    assert default_backend() == (None, NO_SEQUENCER)
    (tmp_path / "seq").touch()
    monkeypatch.setattr(midi_service.os, "access", lambda path, mode: False)
    assert default_backend() == (None, NO_SEQUENCER_ACCESS)
    monkeypatch.setattr(midi_service.os, "access", lambda path, mode: True)
    backend, unavailable = default_backend()
    assert unavailable is None
    assert isinstance(backend, midi_service.MidoBackend)


@pytest.mark.skipif(not SEQUENCER_MISSING, reason="this machine has an ALSA sequencer")
def test_without_an_alsa_sequencer_opening_ports_is_one_clear_line(
    capfd: pytest.CaptureFixture[str],
) -> None:
    backend, unavailable = default_backend()
    assert (backend, unavailable) == (None, NO_SEQUENCER)
    service = MidiService()
    service.want("")
    service.begin_frame()
    service.close()
    err = capfd.readouterr().err  # what reached file descriptor 2, ALSA's own messages included
    assert err == f"patchbay: {NO_SEQUENCER}\n"
    assert service.errors == [NO_SEQUENCER]
    assert service.inputs_matching("") == []


@pytest.mark.skipif(not VIRTUAL_PORTS, reason="no virtual MIDI ports here (no ALSA sequencer)")
def test_virtual_port_round_trip() -> None:
    name = f"patchbay-test-{os.getpid()}"
    with mido.open_output(name, virtual=True) as output:
        service = MidiService(scan_seconds=0.1)
        try:
            service.want(name)
            assert poll_until(lambda: bool(service.inputs_matching(name))), service.errors
            (device,) = service.inputs_matching(name) or []
            output.send(mido.Message("control_change", channel=4, control=74, value=127))
            output.send(mido.Message("note_on", channel=4, note=64, velocity=0))
            received: list[ControlEvent] = []

            def two_arrived() -> bool:
                received.extend(frame(service))
                return len(received) >= 2

            assert poll_until(two_arrived)
            assert received == [
                ControlEvent("midi:cc:5:74", 1.0, device),
                ControlEvent("midi:note:5:64", 0.0, device),
            ]
        finally:
            service.close()


# ----------------------------------------------------------------------------- nodes


def test_midi_nodes_are_user_inputs_with_live_pins() -> None:
    cc, note = LIBRARY["midi.cc"], LIBRARY["midi.note"]
    assert cc.determinism is note.determinism is Determinism.USER_INPUT
    assert [(pin.name, pin.type) for pin in cc.inputs] == [
        ("device", "str"),
        ("channel", "int"),
        ("control", "int"),
        ("value", "float"),
    ]
    assert [(pin.name, pin.type) for pin in note.inputs] == [
        ("device", "str"),
        ("channel", "int"),
        ("note", "int"),
        ("velocity", "float"),
    ]
    assert [pin.name for pin in cc.inputs if pin.hint == "live"] == ["value"]
    assert [pin.name for pin in note.inputs if pin.hint == "live"] == ["velocity"]
    assert [(out.name, out.type) for out in cc.outputs] == [("out", "float")]
    assert [(out.name, out.type) for out in note.outputs] == [
        ("velocity", "float"),
        ("gate", "bool"),
    ]


def test_midi_nodes_without_services_give_their_values() -> None:
    no_services = SimpleNamespace()
    assert LIBRARY["midi.cc"].compute(no_services, "", 0, 1, 0.5) == 0.5
    assert LIBRARY["midi.note"].compute(no_services, "", 0, 60, 0.25) == (0.25, True)
    assert LIBRARY["midi.note"].compute(no_services, "", 0, 60, 0.0) == (0.0, False)


class MidiPlayer:
    """An evaluator on a patch with MIDI nodes and a plain value beside them, on a fake backend."""

    def __init__(self, make_evaluator: Any, backend: FakeBackend, device: str) -> None:
        self.patch = Patch()
        self.cc = self.patch.add_node("midi.cc", {"device": device, "control": 7}, node_id="cc")
        self.note = self.patch.add_node("midi.note", {"device": device}, node_id="note")
        self.other = self.patch.add_node("value.float", {"value": 3.0}, node_id="other")
        for source, pin in ((self.cc, "out"), (self.note, "gate"), (self.other, "out")):
            sink = self.patch.add_node("output.value", node_id=f"sink_{source}")
            self.patch.connect(source, pin, sink, "in")
        self.evaluator = make_evaluator(self.patch)
        self.evaluator.watch([self.cc, self.note, self.other])
        self.frames = 0
        self.step()  # the first frame makes the service; the nodes ask for their device

    @property
    def service(self) -> MidiService:
        return self.evaluator.ctx.service("midi")

    def step(self) -> None:
        self.evaluator.run_frame(self.frames / 60.0, self.frames)
        self.frames += 1

    def step_until_looked(self) -> None:
        device = self.patch.value("cc", "device")
        assert poll_until(lambda: self.service.inputs_matching(device) is not None)
        self.step()

    def outputs(self) -> tuple[Any, ...]:
        output = self.evaluator.output
        return output(self.cc, "out"), output(self.note, "velocity"), output(self.note, "gate")


@pytest.fixture
def player_of(
    make_evaluator: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., MidiPlayer]]:
    made: list[MidiPlayer] = []

    def make(backend: FakeBackend, device: str) -> MidiPlayer:
        monkeypatch.setitem(
            FACTORIES, "midi", lambda ctx: MidiService(backend, log=io.StringIO(), scan_seconds=60)
        )
        player = MidiPlayer(make_evaluator, backend, device)
        made.append(player)
        return player

    yield make
    for player in made:
        player.evaluator.ctx.release_all()


def test_midi_cc_opens_its_device_and_follows_its_value_pin(
    player_of: Callable[..., MidiPlayer],
) -> None:
    backend = FakeBackend([KNOBS, KEYS])
    player = player_of(backend, "nano")
    player.step_until_looked()
    assert list(backend.opened) == [KNOBS]  # the nodes asked for their device
    assert player.evaluator.status(player.cc) in (NodeStatus.OK, NodeStatus.CACHED)
    assert player.outputs() == (0.0, 0.0, False)
    for value in (0.25, 1.0, 0.0):
        player.patch.set_value(player.cc, "value", value, live=True)
        player.step()
        assert player.outputs()[0] == value


def test_midi_note_gate_follows_velocity(player_of: Callable[..., MidiPlayer]) -> None:
    player = player_of(FakeBackend([KEYS]), "")
    player.step_until_looked()
    player.patch.set_value(player.note, "velocity", 100 / 127, live=True)
    player.step()
    assert player.outputs()[1:] == (100 / 127, True)
    player.patch.set_value(player.note, "velocity", 0.0, live=True)
    player.step()
    assert player.outputs()[1:] == (0.0, False)


def test_no_matching_port_fails_the_node_in_one_line_and_the_rest_plays(
    player_of: Callable[..., MidiPlayer],
) -> None:
    player = player_of(FakeBackend([KNOBS, KEYS]), "Korg")
    player.step_until_looked()
    for node in (player.cc, player.note):
        assert player.evaluator.status(node) == NodeStatus.FAILED
        error = player.evaluator.error(node) or ""
        assert error == f"ValueError: no MIDI input matching 'Korg' (ports: {KNOBS}, {KEYS})"
    assert player.evaluator.output(player.other, "out") == 3.0
    player.patch.set_value(player.cc, "device", "Launchkey")  # another device: it plays
    player.step()  # asks for it
    assert player.evaluator.status(player.cc) in (NodeStatus.DEFERRED, NodeStatus.OK)
    assert poll_until(lambda: player.service.inputs_matching("Launchkey") is not None)
    player.step()
    player.patch.set_value(player.cc, "value", 0.5, live=True)
    player.step()
    assert player.evaluator.status(player.cc) in (NodeStatus.OK, NodeStatus.CACHED)
    assert player.outputs()[0] == 0.5


def test_without_mido_the_nodes_fail_saying_why(
    make_evaluator: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "mido", None)
    monkeypatch.setitem(FACTORIES, "midi", lambda ctx: MidiService(log=io.StringIO()))
    patch = Patch()
    cc = patch.add_node("midi.cc", {"device": "nano"})
    sink = patch.add_node("output.value")
    patch.connect(cc, "out", sink, "in")
    evaluator = make_evaluator(patch)
    evaluator.watch([cc])
    evaluator.run_frame(0.0, 0)
    assert evaluator.status(cc) == NodeStatus.FAILED
    assert evaluator.error(cc) == (
        f"ValueError: no MIDI input matching 'nano' (ports: none); {UNAVAILABLE}"
    )
