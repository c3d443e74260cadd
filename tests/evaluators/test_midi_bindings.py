"""MIDI through the binding layer with real mido messages: the real MIDI service (made by the
execution context on the frame thread, on a fake port backend as in tests/evaluators/test_midi.py)
receives messages through its port callback, the controls runtime maps them onto bound pins,
`midi.cc` / `midi.note` nodes and the preset deck, and every evaluator kind runs the result.
MIDI feedback goes out through fake output ports.

Frames are played as the engine plays them: controls before the frame, then the deck, then the
evaluator. Waits for the service's scanner thread are by deadline (`poll_until`).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any

import mido
import pytest

from evaluators import Controls
from evaluators.services.midi import MidiService
from evaluators.services.registry import FACTORIES
from nodes import Patch, PresetDeck
from nodes.document.bindings import Binding
from tests.evaluators.test_midi import KEYS, KNOBS, FakeBackend
from tests.waiting import poll_until


def cc(control: int, value: int, channel: int = 0) -> mido.Message:
    return mido.Message("control_change", channel=channel, control=control, value=value)


def note_on(note: int, velocity: int, channel: int = 0) -> mido.Message:
    return mido.Message("note_on", channel=channel, note=note, velocity=velocity)


def note_off(note: int, channel: int = 0) -> mido.Message:
    return mido.Message("note_off", channel=channel, note=note, velocity=0)


def played_patch() -> Patch:
    """A slider bound to CC 7 on channel 1 (0..10) feeding a sink; a `midi.cc` on CC 7 and a
    `midi.note` on note 36 (channel 1, the nanoKONTROL2) with sinks; a note bound to preset B;
    presets A (knob 1) and B (knob 9)."""
    patch = Patch()
    patch.add_node("input.float", {"value": 0.0, "max": 10.0}, node_id="knob")
    patch.add_node("midi.cc", {"device": "nano", "channel": 1, "control": 7}, node_id="cc")
    patch.add_node("midi.note", {"device": "nano", "channel": 1, "note": 36}, node_id="pad")
    for source, pin in (("knob", "out"), ("cc", "out"), ("pad", "gate")):
        patch.add_node("output.value", node_id=f"sink_{source}")
        patch.connect(source, pin, f"sink_{source}", "in")
    patch.set_binding("binding1", Binding("midi:cc:1:7", "knob", "value", 0.0, 10.0))
    patch.set_binding("binding2", Binding("midi:note:1:40", "@preset", "B"))
    patch.set_preset("A", {("knob", "value"): 1.0})
    patch.set_preset("B", {("knob", "value"): 9.0})
    return patch


class Player:
    """A patch played frame by frame as the engine plays it, and its MIDI ports' callbacks."""

    def __init__(self, make_evaluator: Callable[..., Any], patch: Patch, backend: FakeBackend):
        self.patch, self.backend = patch, backend
        self.evaluator = make_evaluator(patch)
        self.evaluator.watch([n for n in patch.nodes if n.startswith("sink_")])
        self.deck = PresetDeck(patch)
        self.controls = Controls(
            patch, self.evaluator.ctx, on_preset=self.deck.recall,
            on_crossfade=self.deck.set_crossfade,
        )  # fmt: skip
        self.frames = 0
        self.step()  # the first frame makes the service; nodes and bindings ask for ports
        assert poll_until(lambda: self.service.inputs_matching("nano") is not None)
        # a binding of any device ("") opens every port, not only the nodes' nanoKONTROL2
        assert poll_until(lambda: set(backend.opened) == {KNOBS, KEYS})
        self.step()

    @property
    def service(self) -> MidiService:
        return self.evaluator.ctx.service("midi")

    def step(self) -> None:
        t = self.frames / 60.0
        self.controls.before_frame()
        self.deck.step(t, 120.0)
        self.evaluator.run_frame(t, self.frames)
        self.frames += 1

    def send(self, *messages: mido.Message, port: str = KNOBS) -> None:
        """Messages from a port, as its thread hands them to the service's callback."""
        for message in messages:
            self.backend.opened[port].callback(message)

    def sink(self, source: str) -> Any:
        return self.evaluator.output(f"sink_{source}", "out")


class FakeOutput:
    def __init__(self, name: str) -> None:
        self.name = name
        self.sent: list[mido.Message] = []
        self.closed = False

    def send(self, message: mido.Message) -> None:
        self.sent.append(message)

    def close(self) -> None:
        self.closed = True


class FeedbackBackend(FakeBackend):
    """Input ports and output ports of the same names (as a controller has both)."""

    def __init__(self, names: list[str]) -> None:
        super().__init__(names)
        self.outputs: dict[str, FakeOutput] = {}

    def output_names(self) -> list[str]:
        return list(self.names)

    def open_output(self, name: str) -> FakeOutput:
        port = self.outputs[name] = FakeOutput(name)
        return port

    def sent(self, name: str = KNOBS) -> list[tuple[int, int, int]]:
        """(channel 0-15, control, value) of the control changes sent to output `name`."""
        port = self.outputs.get(name)
        return [(m.channel, m.control, m.value) for m in port.sent] if port is not None else []


@pytest.fixture
def player_of(
    make_evaluator: Any, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[Patch], Player]]:
    made: list[Player] = []
    backend = FeedbackBackend([KNOBS, KEYS])
    monkeypatch.setitem(
        FACTORIES, "midi", lambda ctx: MidiService(backend, log=io.StringIO(), scan_seconds=60)
    )

    def make(patch: Patch) -> Player:
        made.append(Player(make_evaluator, patch, backend))
        return made[-1]

    yield make
    for player in made:
        player.evaluator.ctx.release_all()


@pytest.fixture
def player(player_of: Callable[[Patch], Player]) -> Player:
    return player_of(played_patch())


def test_a_cc_drives_its_binding_and_its_midi_cc_node(player: Player) -> None:
    assert isinstance(player.service, MidiService)  # the real service, made by the context
    player.send(cc(7, 64))
    player.step()
    assert player.patch.value("knob", "value") == pytest.approx(64 / 127 * 10)
    assert player.sink("knob") == pytest.approx(64 / 127 * 10)
    assert player.sink("cc") == pytest.approx(64 / 127)
    player.send(cc(7, 0), cc(7, 127))  # coalesced: the latest of the frame wins
    player.step()
    assert (player.sink("knob"), player.sink("cc")) == (10.0, 1.0)
    player.send(cc(7, 20, channel=1))  # channel 2: neither the binding nor the node
    player.send(cc(8, 20))  # another controller
    player.step()
    assert (player.sink("knob"), player.sink("cc")) == (10.0, 1.0)
    player.send(cc(7, 0), port=KEYS)  # another device: the binding (any device), not the node
    player.step()
    assert (player.sink("knob"), player.sink("cc")) == (0.0, 1.0)


def test_a_midi_note_gate_follows_note_on_and_off(player: Player) -> None:
    player.send(note_on(36, 100))
    player.step()
    assert player.patch.value("pad", "velocity") == pytest.approx(100 / 127)
    assert player.sink("pad") is True
    player.send(note_off(36))
    player.step()
    assert player.sink("pad") is False
    player.send(note_on(36, 90), note_on(36, 0))  # on and off in one frame: a gate for a frame
    player.step()
    assert player.sink("pad") is True
    player.step()
    assert player.sink("pad") is False


def test_a_note_bound_to_a_preset_recalls_it(player: Player) -> None:
    player.send(cc(7, 0))
    player.step()
    assert player.sink("knob") == 0.0
    player.send(note_on(40, 127))
    player.step()
    assert player.patch.value("knob", "value") == 9.0
    assert player.sink("knob") == 9.0
    player.send(cc(7, 127))  # the knob moves the value again (jump)
    player.step()
    assert player.sink("knob") == 10.0
    player.send(note_on(40, 64))  # held: no second recall
    player.step()
    assert player.sink("knob") == 10.0
    player.send(note_off(40))
    player.step()
    player.send(note_on(40, 30))  # velocity below half: not "on"
    player.step()
    assert player.sink("knob") == 10.0
    player.send(note_off(40), note_on(40, 100))  # released, pressed: recalled again
    player.step()  # the note-off's frame
    player.step()  # the note-on's frame (notes queue one a frame)
    assert player.sink("knob") == 9.0


def test_pickup_ignores_a_cc_until_it_crosses_the_value(player: Player) -> None:
    patch = player.patch
    patch.set_binding("binding1", Binding("midi:cc:1:7", "knob", "value", 0.0, 10.0,
                                          takeover="pickup"))  # fmt: skip
    patch.set_value("knob", "value", 5.0)  # where an inspector edit left it: CC 63.5 of 127
    player.step()
    for value in (0, 20, 40, 60):  # below the value: ignored
        player.send(cc(7, value))
        player.step()
        assert player.sink("knob") == 5.0
    player.send(cc(7, 70))  # crossed it: followed from here
    player.step()
    assert player.sink("knob") == pytest.approx(70 / 127 * 10)
    player.send(cc(7, 10))
    player.step()
    assert player.sink("knob") == pytest.approx(10 / 127 * 10)
    patch.set_value("knob", "value", 8.0)  # moved by something else: picked up again
    player.step()
    for value in (30, 90):
        player.send(cc(7, value))
        player.step()
        assert player.sink("knob") == 8.0
    player.send(cc(7, 110))  # crossed 8.0 (101.6 of 127) on the way up
    player.step()
    assert player.sink("knob") == pytest.approx(110 / 127 * 10)


# ----------------------------------------------------------------------------- feedback


def test_feedback_sends_a_cc_to_the_matching_output_ports_once_asked() -> None:
    backend = FeedbackBackend([KNOBS, KEYS])
    log = io.StringIO()
    service = MidiService(backend, log=log, scan_seconds=60)
    try:
        service.send_control("nano", 1, 7, 64)
        service.send_control("", 16, 1, 127)
        assert poll_until(lambda: len(backend.sent(KNOBS)) == 2)
        assert backend.sent(KNOBS) == [(0, 7, 64), (15, 1, 127)]
        assert poll_until(lambda: backend.sent(KEYS) == [(15, 1, 127)])
        assert backend.listings == 1 and backend.opened == {}  # no input was asked for
        for _ in range(2):
            service.send_control("Korg", 1, 7, 0)
        line = f"MIDI feedback: no output port matching 'Korg' (outputs: {KNOBS}, {KEYS})"
        assert poll_until(lambda: service.errors == [line])
        service.send_control("nano", 1, 7, 1)  # sent after both Korg ones: they were handled
        assert poll_until(lambda: len(backend.sent(KNOBS)) == 3)
        assert log.getvalue() == f"patchbay: {line}\n"  # said once
    finally:
        service.close()
    assert all(port.closed for port in backend.outputs.values())


def fed_back_patch(feedback: bool) -> Patch:
    patch = played_patch()
    patch.set_binding("binding1", Binding("midi:cc:1:7", "knob", "value", 0.0, 10.0,
                                          device="nano"))  # fmt: skip
    patch.add_node("input.toggle", node_id="switch")
    patch.set_binding("binding3", Binding("midi:cc:2:64", "switch", "value", device="nano"))
    patch.update_settings(midi_feedback=feedback)
    return patch


def test_a_bound_pin_changed_by_other_means_moves_the_controller(
    player_of: Callable[[Patch], Player],
) -> None:
    player = player_of(fed_back_patch(True))
    backend: FeedbackBackend = player.backend  # type: ignore[assignment]
    player.patch.set_value("knob", "value", 5.0)  # an inspector edit
    player.patch.set_value("switch", "value", True)
    player.step()
    assert poll_until(lambda: len(backend.sent()) == 2)
    assert sorted(backend.sent()) == [(0, 7, 64), (1, 64, 127)]  # 5 of 0..10: 63.5 -> 64
    assert backend.sent(KEYS) == []  # the binding names the nanoKONTROL2
    player.send(note_on(40, 127))  # recalls preset B (knob 9) on this frame's deck step
    player.step()
    player.step()
    assert poll_until(lambda: len(backend.sent()) == 3)
    assert backend.sent()[-1] == (0, 7, round(0.9 * 127))
    player.send(cc(7, 20))  # the control's own move: nothing goes back
    player.step()
    player.step()
    assert player.sink("knob") == pytest.approx(20 / 127 * 10)
    player.patch.set_value("knob", "value", 0.0)
    player.step()
    assert poll_until(lambda: backend.sent()[-1:] == [(0, 7, 0)])
    assert len(backend.sent()) == 4  # nothing came between


def test_no_feedback_unless_the_patch_asks(player_of: Callable[[Patch], Player]) -> None:
    player = player_of(fed_back_patch(False))
    backend: FeedbackBackend = player.backend  # type: ignore[assignment]
    player.patch.set_value("knob", "value", 5.0)
    player.step()
    player.patch.update_settings(midi_feedback=True)
    player.patch.set_value("knob", "value", 10.0)
    player.step()
    assert poll_until(lambda: backend.sent() == [(0, 7, 127)])  # only the edit made after
