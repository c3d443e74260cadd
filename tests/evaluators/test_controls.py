"""The controls runtime (evaluators.controls.runtime) with fake control services: mapping and
curves, takeover (jump, pickup, scale), learn, coalescing and queueing, bounds, MIDI input nodes and
MIDI clock, and counted recomputes (a bound knob turn reruns only its cone, on every evaluator
kind).

The fake services stand for the OSC and MIDI services: what a test `send`s is handed over by
`take_controls()` on the next frame, as a service's drain does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import evaluators.controls.runtime as controls_module
from evaluators import Controls, ExecutionContext
from evaluators.controls.events import ControlEvent
from evaluators.services.registry import FACTORIES, ON, ServiceStatus
from nodes import LIBRARY, Patch
from nodes.document.bindings import Binding
from nodes.spec import Determinism, node
from nodes.tempo import BeatClock
from tests.evaluators.test_caching import Runner, sink_of


class FakeService:
    """A control service: events sent now are the next frame's `take_controls()`."""

    def __init__(self) -> None:
        self.waiting: list[ControlEvent] = []
        self.frame: list[ControlEvent] = []
        self.listened: set[str] = set()
        self.any = False
        self.wanted: set[str] = set()  # MIDI port patterns asked for
        self.bpm: float | None = None
        self.started = False
        self.closed = False

    def send(self, source: str, value: float | None, device: str = "") -> None:
        self.waiting.append(ControlEvent(source, value, device))

    def begin_frame(self) -> None:
        self.frame, self.waiting = self.waiting, []

    def status(self) -> ServiceStatus:
        return ServiceStatus(ON, "a test source")

    def take_controls(self) -> list[ControlEvent]:
        return self.frame

    def listen(self, address: str) -> None:
        self.listened.add(address)

    def listen_any(self, on: bool) -> None:
        self.any = on

    def want(self, device: str) -> None:
        self.wanted.add(device)

    def tempo(self) -> float | None:
        return self.bpm

    def take_transport(self) -> list[str]:
        started, self.started = self.started, False
        return ["start"] if started else []

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def osc(monkeypatch: pytest.MonkeyPatch) -> FakeService:
    fake = FakeService()
    monkeypatch.setitem(FACTORIES, "osc", lambda ctx: fake)
    return fake


@pytest.fixture
def midi(monkeypatch: pytest.MonkeyPatch) -> FakeService:
    fake = FakeService()
    monkeypatch.setitem(FACTORIES, "midi", lambda ctx: fake)
    return fake


class Rig:
    """A patch, a context and its controls; `frame()` applies the controls of one frame."""

    def __init__(self, patch: Patch, **callbacks: Any) -> None:
        self.patch = patch
        self.ctx = ExecutionContext()
        self.controls = Controls(patch, self.ctx, **callbacks)
        self.live_edits: list[tuple[str | None, str | None, Any]] = []
        patch.subscribe(
            lambda e: self.live_edits.append((e.node_id, e.pin, e.value)) if e.live else None
        )

    def frame(self) -> None:
        self.controls.before_frame()

    def value(self, node: str, pin: str = "value") -> Any:
        return self.patch.value(node, pin)


def knob(low: float = 0.0, high: float = 10.0, **options: Any) -> tuple[Patch, str]:
    """An input.float bound to OSC /knob with range low..high and `options`."""
    patch = Patch()
    node = patch.add_node("input.float", {"value": 0.0, "min": -1e6, "max": 1e6}, node_id="k")
    patch.set_binding("binding1", Binding("osc:/knob", node, "value", low, high, **options))
    return patch, node


# ----------------------------------------------------------------------------- mapping


def test_linear_and_exponential_curves() -> None:
    linear = Binding("osc:/a", "n", "p", 2.0, 12.0)
    assert [controls_module.mapped(linear, x) for x in (0, 0.5, 1)] == [2.0, 7.0, 12.0]
    geometric = Binding("osc:/a", "n", "p", 20.0, 2000.0, "exponential")
    assert controls_module.mapped(geometric, 0.5) == pytest.approx(200.0)
    assert controls_module.mapped(geometric, 0.0) == pytest.approx(20.0)
    assert controls_module.mapped(geometric, 1.0) == pytest.approx(2000.0)
    negative = Binding("osc:/a", "n", "p", -1.0, -100.0, "exponential")
    assert controls_module.mapped(negative, 0.5) == pytest.approx(-10.0)
    through_zero = Binding("osc:/a", "n", "p", 0.0, 8.0, "exponential")  # no ratio: x squared
    assert controls_module.mapped(through_zero, 0.5) == 2.0
    for binding in (linear, geometric, negative, through_zero):
        for x in (0.0, 0.25, 0.5, 1.0):
            value = controls_module.mapped(binding, x)
            assert controls_module.position_of(binding, value) == pytest.approx(x)


def test_osc_positions_clamp_and_map_onto_the_pin(osc: FakeService) -> None:
    patch, node = knob(0.0, 10.0)
    rig = Rig(patch)
    rig.frame()
    assert osc.listened == {"/knob"}
    for sent, expected in ((0.25, 2.5), (float("nan"), 2.5), (7.0, 10.0), (-3.0, 0.0)):
        osc.send("osc:/knob", sent)
        rig.frame()
        assert rig.value(node) == expected


def test_int_pins_round_and_clamp_to_the_pin_range_bool_pins_switch_at_half(
    osc: FakeService,
) -> None:
    patch = Patch()
    beat = patch.add_node("time.beat", node_id="beat")  # beats_per_bar: int from 1 to 64
    toggle = patch.add_node("input.toggle", node_id="toggle")
    patch.set_binding("b1", Binding("osc:/bars", beat, "beats_per_bar", 0.0, 100.0))
    patch.set_binding("b2", Binding("osc:/on", toggle, "value"))
    rig = Rig(patch)
    steps = [((0.333, 0.49), (33, False)), ((1.0, 0.5), (64, True)), ((0.0, 0.2), (1, False))]
    for (bars, on), expected in steps:
        osc.send("osc:/bars", bars)
        osc.send("osc:/on", on)
        rig.frame()
        assert (rig.value(beat, "beats_per_bar"), rig.value(toggle)) == expected
    assert isinstance(rig.value(beat, "beats_per_bar"), int)


# ----------------------------------------------------------------------------- takeover


def test_pickup_ignores_a_control_until_it_crosses_the_value(osc: FakeService) -> None:
    patch, node = knob(takeover="pickup")
    patch.set_value(node, "value", 5.0)
    rig = Rig(patch)
    for x in (0.1, 0.2, 0.3, 0.45):
        osc.send("osc:/knob", x)
        rig.frame()
        assert rig.value(node) == 5.0
    osc.send("osc:/knob", 0.6)  # from 0.45 to 0.6: crosses 5.0
    rig.frame()
    assert rig.value(node) == 6.0
    osc.send("osc:/knob", 0.2)  # picked up: follows
    rig.frame()
    assert rig.value(node) == 2.0
    patch.set_value(node, "value", 9.0)  # an inspector edit (or a preset) moves it away
    osc.send("osc:/knob", 0.3)
    rig.frame()
    assert rig.value(node) == 9.0  # to be picked up again
    osc.send("osc:/knob", 0.9)  # touches it
    rig.frame()
    assert rig.value(node) == 9.0
    osc.send("osc:/knob", 0.7)
    rig.frame()
    assert rig.value(node) == 7.0


def test_a_bool_pin_with_pickup_switches_once_its_control_agrees_or_switches(
    osc: FakeService,
) -> None:
    patch = Patch()
    toggle = patch.add_node("input.toggle", {"value": True}, node_id="toggle")
    patch.set_binding("b1", Binding("osc:/button", toggle, "value", takeover="pickup"))
    rig = Rig(patch)
    osc.send("osc:/button", 0.0)  # the release of the button just learned: ignored
    rig.frame()
    assert rig.value(toggle) is True
    osc.send("osc:/button", 1.0)  # pressed: it switched, so it drives the pin from now on
    rig.frame()
    osc.send("osc:/button", 0.0)
    rig.frame()
    assert rig.value(toggle) is False
    patch.set_value(toggle, "value", True)  # an edit elsewhere: picked up again
    osc.send("osc:/button", 0.0)
    rig.frame()
    assert rig.value(toggle) is True
    osc.send("osc:/button", 1.0)  # agrees with the value: picked up
    rig.frame()
    osc.send("osc:/button", 0.0)
    rig.frame()
    assert rig.value(toggle) is False


def test_jump_follows_at_once(osc: FakeService) -> None:
    patch, node = knob(takeover="jump")
    patch.set_value(node, "value", 5.0)
    rig = Rig(patch)
    osc.send("osc:/knob", 0.1)
    rig.frame()
    assert rig.value(node) == 1.0


def test_scale_moves_the_value_over_the_travel_left_until_they_meet(osc: FakeService) -> None:
    patch, node = knob(takeover="scale")
    patch.set_value(node, "value", 8.0)
    rig = Rig(patch)
    osc.send("osc:/knob", 0.2)  # where the control is: nothing moves yet
    rig.frame()
    assert rig.value(node) == 8.0
    osc.send("osc:/knob", 0.3)  # up 0.1 of the 0.8 left: the value goes 0.1 of its 0.2 left
    rig.frame()
    assert rig.value(node) == pytest.approx(8.25)
    osc.send("osc:/knob", 0.1)  # down 2/3 of the way to 0: so does the value
    rig.frame()
    assert rig.value(node) == pytest.approx(8.25 / 3)
    osc.send("osc:/knob", 0.0)  # both at the end: they meet
    rig.frame()
    assert rig.value(node) == pytest.approx(0.0)
    osc.send("osc:/knob", 0.5)  # and the value follows from then on
    rig.frame()
    assert rig.value(node) == 5.0


# ----------------------------------------------------------------------------- events


def test_continuous_controls_coalesce_latest_wins(osc: FakeService, midi: FakeService) -> None:
    patch, node = knob()
    patch.set_binding("binding2", Binding("midi:cc:1:7", node, "value", 0.0, 100.0))
    rig = Rig(patch)
    for value in (0.1, 0.2, 0.3):
        osc.send("osc:/knob", value)
    rig.frame()
    assert rig.live_edits == [(node, "value", 3.0)]  # one edit, one rerun of the cone
    for value in (0.5, 0.25):
        midi.send("midi:cc:1:7", value)
    rig.frame()
    assert rig.live_edits[1:] == [(node, "value", 25.0)]
    midi.send("midi:cc:1:7", 0.25)  # the value it has already: no edit
    rig.frame()
    assert len(rig.live_edits) == 2


@pytest.fixture
def midi_nodes() -> Iterator[None]:
    """`midi.cc` and `midi.note` as the contract has them, for as long as a test runs, when the
    library has none yet (the MIDI nodes live in nodes/library/live/midi.py)."""
    made = []
    if "midi.cc" not in LIBRARY:

        @node("midi.cc", determinism=Determinism.USER_INPUT, hints={"value": "live"})
        def midi_cc(device: str = "", channel: int = 0, control: int = 0,
                    value: float = 0.0) -> float:  # fmt: skip
            return value

        made.append("midi.cc")
    if "midi.note" not in LIBRARY:

        @node("midi.note", determinism=Determinism.USER_INPUT, hints={"velocity": "live"},
              outputs={"velocity": "float", "gate": "bool"})  # fmt: skip
        def midi_note(device: str = "", channel: int = 0, note: int = 60,
                      velocity: float = 0.0) -> tuple[float, bool]:  # fmt: skip
            return velocity, velocity > 0

        made.append("midi.note")
    yield
    for type_id in made:
        del LIBRARY[type_id]


@pytest.mark.usefixtures("midi_nodes")
def test_midi_input_nodes_match_channel_number_and_device(midi: FakeService) -> None:
    patch = Patch()
    any_channel = patch.add_node("midi.cc", {"channel": 0, "control": 7}, node_id="any")
    second = patch.add_node("midi.cc", {"channel": 2, "control": 7}, node_id="second")
    nano = patch.add_node("midi.cc", {"device": "nano", "control": 7}, node_id="nano")
    rig = Rig(patch)
    midi.send("midi:cc:1:7", 0.5, "Launch Control")
    midi.send("midi:cc:1:8", 1.0, "Launch Control")
    rig.frame()
    assert [rig.value(n) for n in (any_channel, second, nano)] == [0.5, 0.0, 0.0]
    midi.send("midi:cc:2:7", 0.25, "nanoKONTROL2")
    rig.frame()
    assert [rig.value(n) for n in (any_channel, second, nano)] == [0.25, 0.25, 0.25]


@pytest.mark.usefixtures("midi_nodes")
def test_notes_are_queued_none_lost(midi: FakeService) -> None:
    patch = Patch()
    toggle = patch.add_node("input.toggle", node_id="toggle")
    note = patch.add_node("midi.note", {"channel": 10, "note": 36}, node_id="note")
    patch.set_binding("b", Binding("midi:note:10:36", toggle, "value"))
    rig = Rig(patch)
    midi.send("midi:note:10:36", 100 / 127)  # a drum hit: on and off within one frame
    midi.send("midi:note:10:36", 0.0)
    midi.send("midi:note:10:37", 1.0)  # another note: its own queue
    rig.frame()
    assert (rig.value(toggle), rig.value(note, "velocity")) == (True, 100 / 127)
    rig.frame()
    assert (rig.value(toggle), rig.value(note, "velocity")) == (False, 0.0)
    rig.frame()
    assert (rig.value(toggle), rig.value(note, "velocity")) == (False, 0.0)


def test_midi_bindings_open_the_ports_they_name_and_learn_opens_every_port(
    midi: FakeService,
) -> None:
    patch = Patch()
    node = patch.add_node("input.float", node_id="k")
    patch.set_binding("b1", Binding("midi:cc:1:7", node, "value", device="nano"))
    patch.set_binding("b2", Binding("midi:cc:1:8", node, "value", device="Launch"))
    rig = Rig(patch)
    rig.frame()
    assert midi.wanted == {"nano", "Launch"}
    rig.controls.learn(node, "value")
    rig.frame()
    assert midi.wanted == {"nano", "Launch", ""}


def test_midi_bindings_narrow_by_device(midi: FakeService) -> None:
    patch, node = knob()
    patch.set_binding("binding1", Binding("midi:cc:2:1", node, "value", 0, 10, device="nano"))
    rig = Rig(patch)
    midi.send("midi:cc:2:1", 0.5, "Launch Control XL")
    rig.frame()
    assert rig.value(node) == 0.0
    midi.send("midi:cc:2:1", 0.5, "nanoKONTROL2 MIDI 1")
    rig.frame()
    assert rig.value(node) == 5.0


def test_events_beyond_the_frame_bound_are_counted_and_dropped(
    osc: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(controls_module, "MAX_EVENTS_PER_FRAME", 3)
    patch, node = knob()
    rig = Rig(patch)
    for value in (0.1, 0.2, 0.3, 0.4, 0.5):
        osc.send("osc:/knob", value)
    rig.frame()
    assert rig.controls.dropped == 2
    assert rig.value(node) == 3.0


def test_bindings_that_cannot_apply_are_skipped(osc: FakeService) -> None:
    patch, node = knob()
    sender = patch.add_node("osc.out", node_id="send")
    patch.set_binding("ghost", Binding("osc:/knob", "ghost", "value"))
    patch.set_binding("text", Binding("osc:/knob", sender, "address"))
    patch.set_binding("nopin", Binding("osc:/knob", node, "nope"))
    rig = Rig(patch)
    osc.send("osc:/knob", 0.5)
    rig.frame()
    assert rig.value(node) == 5.0
    assert rig.value(sender, "address") == "/out"


def test_preset_and_crossfader_targets(osc: FakeService, midi: FakeService) -> None:
    patch = Patch()
    recalled: list[str] = []
    faded: list[float] = []
    patch.set_binding("p", Binding("midi:note:1:60", "@preset", "A"))
    patch.set_binding("t", Binding("osc:/go/B", "@preset", "B"))
    patch.set_binding("x", Binding("midi:cc:1:1", "@crossfader", "position", 0.0, 2.0))
    rig = Rig(patch, on_preset=recalled.append, on_crossfade=faded.append)
    midi.send("midi:note:1:60", 1.0)
    midi.send("midi:cc:1:1", 0.25)
    rig.frame()
    midi.send("midi:note:1:60", 0.8)  # still on: no second recall
    midi.send("midi:cc:1:1", 0.75)
    rig.frame()
    midi.send("midi:note:1:60", 0.0)
    osc.send("osc:/go/B", None)  # a bare OSC message: a trigger
    rig.frame()
    midi.send("midi:note:1:60", 0.6)
    rig.frame()
    assert recalled == ["A", "B", "A"]
    assert faded == [0.5, 1.0]  # mapped onto 0..2, then clamped to the crossfader's 0..1


# ----------------------------------------------------------------------------- learn


def test_learn_takes_the_next_event_of_any_source(osc: FakeService, midi: FakeService) -> None:
    patch, node = knob()
    rig = Rig(patch)
    rig.frame()
    assert not osc.any
    rig.controls.learn(node, "min")
    rig.frame()
    assert osc.any  # every address, not just the bound ones
    assert rig.controls.take_learned() is None
    midi.send("midi:cc:3:74", 0.5, "nanoKONTROL2")
    rig.frame()
    assert rig.controls.take_learned() == {
        "node": node, "pin": "min", "source": "midi:cc:3:74", "device": "nanoKONTROL2"
    }  # fmt: skip
    rig.frame()
    assert not osc.any  # learned: back to the bound addresses


def test_learn_is_won_by_the_first_event_and_given_once(osc: FakeService) -> None:
    patch, node = knob()
    rig = Rig(patch)
    rig.controls.learn(node, "value")
    osc.send("osc:/first", 0.1)
    osc.send("osc:/second", 0.2)
    rig.frame()
    learned = rig.controls.take_learned()
    assert learned == {"node": node, "pin": "value", "source": "osc:/first", "device": ""}
    assert rig.controls.take_learned() is None
    osc.send("osc:/third", 0.3)
    rig.frame()
    assert rig.controls.take_learned() is None
    rig.controls.learn(node, "value")
    rig.controls.cancel_learn()
    osc.send("osc:/fourth", 0.3)
    rig.frame()
    assert rig.controls.take_learned() is None


# ----------------------------------------------------------------------------- MIDI clock


def test_midi_clock_sets_the_tempo_and_a_start_resyncs_the_beat(midi: FakeService) -> None:
    patch = Patch()
    patch.add_node("time.beat", node_id="beat")
    patch.set_binding("b", Binding("midi:cc:1:1", "@crossfader", "position"))  # opens MIDI
    rig = Rig(patch)
    clock = BeatClock()
    rig.ctx.states["beat"] = clock
    midi.bpm = 133.0
    rig.frame()
    assert rig.ctx.bpm == 120.0  # the tempo follows the clock only when the patch says so
    patch.set_binding("b", None)  # the setting alone opens the MIDI service
    patch.update_settings(tempo_source="midi")
    rig.frame()
    assert rig.ctx.bpm == 133.0
    assert not clock.resyncing
    midi.started = True
    rig.frame()
    assert clock.resyncing
    midi.bpm = 5000.0  # beyond any tempo: held to the highest
    rig.frame()
    assert rig.ctx.bpm == 999.0
    midi.bpm = None  # the clock stopped: the patch's own tempo again
    rig.frame()
    assert rig.ctx.bpm == 120.0


# ----------------------------------------------------------------------------- recomputes


def knob_cone_and_a_constant() -> tuple[Patch, dict[str, str]]:
    patch = Patch()
    ids = {"knob": patch.add_node("input.float", {"value": 1.0, "max": 100.0})}
    ids["mul"] = patch.add_node("math.mul", {"b": 2.0})
    patch.connect(ids["knob"], "out", ids["mul"], "a")
    ids["sink"] = sink_of(patch, ids["mul"])
    ids["const"] = patch.add_node("value.float", {"value": 3.0})
    ids["sink_const"] = sink_of(patch, ids["const"])
    patch.set_binding("b", Binding("osc:/knob", ids["knob"], "value", 0.0, 100.0))
    return patch, ids


def test_a_bound_knob_turn_reruns_only_its_cone(make_evaluator: Any, osc: FakeService) -> None:
    patch, ids = knob_cone_and_a_constant()
    evaluator = make_evaluator(patch)
    controls = Controls(patch, evaluator.ctx)
    runner = Runner(evaluator)

    def frame() -> int:
        controls.before_frame()
        return runner.run()

    assert frame() == 5
    assert frame() == 0
    counts = []
    for x in (0.25, 0.5, 0.75):
        osc.send("osc:/knob", x)
        counts.append(frame())
    assert counts == [3, 3, 3]  # knob, mul, sink
    assert evaluator.output(ids["sink"]) == 150.0
    assert evaluator.status(ids["const"]) == "cached"
    assert evaluator.node_class(ids["const"]) == "CONST"
    assert frame() == 0  # the control rests: nothing runs


def test_the_controls_follow_edits_of_addresses_and_bindings(osc: FakeService) -> None:
    patch = Patch()
    listener = patch.add_node("osc.in", {"address": "/a"}, node_id="in")
    slider = patch.add_node("input.float", {"max": 10.0}, node_id="slider")
    rig = Rig(patch)
    rig.frame()
    patch.set_value(listener, "address", "/b")
    osc.send("osc:/a", 0.25)
    osc.send("osc:/b", 0.5)
    rig.frame()
    assert (rig.value(listener), rig.value(listener, "arrived")) == (0.5, 1)
    assert osc.listened == {"/a", "/b"}
    patch.set_binding("binding1", Binding("osc:/a", slider, "value", 0.0, 10.0))
    osc.send("osc:/a", 0.25)
    rig.frame()
    assert rig.value(slider) == 2.5
    assert rig.value(listener, "arrived") == 0  # the frame after: nothing arrived for /b
    patch.set_binding("binding1", None)
    osc.send("osc:/a", 0.75)
    rig.frame()
    assert rig.value(slider) == 2.5


def test_the_plan_follows_the_edits_that_change_it_and_only_those(
    osc: FakeService, midi: FakeService, monkeypatch: pytest.MonkeyPatch
) -> None:
    patch = Patch()
    a = patch.add_node("math.add", node_id="a")
    slider = patch.add_node("input.float", {"max": 10.0}, node_id="slider")
    rig = Rig(patch)
    plans: list[str] = []
    osc_source = rig.controls._sources["osc"]
    plan = osc_source.plan
    monkeypatch.setattr(osc_source, "plan", lambda *args: plans.append("osc") or plan(*args))
    rig.frame()
    assert plans == ["osc"]
    # Edits of other nodes and of links leave the plan (at 10,000 nodes a plan is a pass).
    b = patch.add_node("math.add", node_id="b")
    patch.connect(a, "out", b, "a")
    patch.set_value(b, "b", 2.0)
    patch.remove_node(b)
    rig.frame()
    assert plans == ["osc"]
    # An input node added, its address edited, removed: each is planned again.
    listener = patch.add_node("osc.in", {"address": "/a"}, node_id="in")
    rig.frame()
    osc.send("osc:/a", 0.5)
    rig.frame()
    assert rig.value(listener) == 0.5
    patch.set_value(listener, "address", "/b")
    osc.send("osc:/b", 0.25)
    rig.frame()
    assert rig.value(listener) == 0.25
    patch.remove_node(listener)
    rig.frame()
    assert plans == ["osc"] * 4
    # A bound node removed and added back (an undo): MIDI binds it again.
    patch.set_binding("binding1", Binding("midi:cc:1:7", slider, "value", 0.0, 10.0))
    patch.remove_node(slider)
    rig.frame()
    patch.add_node("input.float", {"max": 10.0}, node_id="slider")
    rig.frame()
    midi.send("midi:cc:1:7", 0.5)
    rig.frame()
    assert rig.value(slider) == 5.0


def test_live_pins_saved_in_a_file_settle_on_the_first_frame(osc: FakeService) -> None:
    patch = Patch()
    listener = patch.add_node("osc.in", {"address": "/go", "arrived": 3, "pending": 2})
    rig = Rig(patch)
    rig.frame()
    assert (rig.value(listener, "arrived"), rig.value(listener, "pending")) == (0, 0)
