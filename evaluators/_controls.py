"""The controls runtime: live controls (OSC, MIDI) move input nodes and bound pins, once a frame.

`Controls.before_frame()` is called by the frame loop before the evaluator runs a frame. It lets
the services drain their queues (`Services.prepare_frame`), opens those the patch needs (`osc` for
`osc.in` nodes and `osc:` bindings, `midi` for `midi.*` nodes and `midi:` bindings, when a MIDI
service exists), takes the frame's control events (evaluators._control_events) and applies them to
the patch as live value edits (`Patch.set_value(..., live=True)`): the same path as an inspector
edit, so evaluators rerun only the cone of what changed, and a pin whose value does not change is
not touched at all.

- Input nodes: `osc.in` gets `value` (the latest number sent to its address), `arrived` (messages
  taken this frame) and `pending` (triggers still to fire: one per frame, none lost); `midi.cc`
  gets `value`, `midi.note` `velocity` (0..1, 0 for note-off), matched by channel (0: any),
  number and device (a substring of the port name, "": any).
- Continuous controls (OSC values, MIDI CC) coalesce: the latest event per source and device in a
  frame applies. Notes are queued, one per source per frame, so a note-on and its note-off in the
  same frame still show as a gate for one frame; at most `MAX_QUEUED_NOTES` wait per source.
- Bindings (nodes._bindings) map a control's position x onto their pin: OSC numbers clamped to
  0..1, MIDI as sent (0..1). Linear: low + (high - low) * x. Exponential: low * (high / low) ** x
  (equal ratios for equal moves, the curve for frequencies and sizes) when low and high are
  non-zero with the same sign, else low + (high - low) * x ** 2. Int pins round, bool pins are
  on for x >= 0.5 (range and curve unused), and the pin's own min/max clamp. An OSC message with
  no number has no position: it only recalls an `@preset` binding.
- Takeover, when the control and the pin's value disagree (after a preset recall or an inspector
  edit moved the value): `jump` sets the value at once; `pickup` ignores the control until it
  crosses or touches the value, then follows; `scale` moves the value by the control's move scaled
  to the travel left on that side (both reach the end together), until they meet, then follows.
  A value changed by anything else than its binding makes the binding take over again.
- `@preset` bindings call `on_preset(name)` when the control goes on (x >= 0.5 after < 0.5);
  `@crossfader` bindings call `on_crossfade(position)` with the mapped value clamped to 0..1. A
  PatchError these raise (a preset since deleted) skips that binding only.
- A binding whose target node or pin is missing, or whose pin cannot be bound, is skipped.
- Learn: `learn(node, pin)` arms it (and listens to every OSC address and opens every MIDI
  input); the next event of any source wins, `take_learned()` returns it once. As soon as every
  source has said whether it works (`ServiceStatus`) and none does (OSC off: its port is taken;
  no MIDI here), `take_learn_problem()` says so once, with what to do; learn stays armed, so a
  source fixed meanwhile (another port) is still learned.
- MIDI ports: the service opens the inputs MIDI bindings name by their `device` ("": every
  port; `midi.*` nodes ask for their own), and every input while learning or following the
  MIDI clock.
- MIDI clock: with the patch setting `tempo_source` = "midi" (which opens the MIDI service), the
  tempo the MIDI service measures (`tempo()`, None until it knows; held to MIN_BPM..MAX_BPM)
  becomes `ctx.live_bpm`; a MIDI start (in `take_transport()`) makes the next frame the downbeat of
  every `time.beat`. When the clock stops or is no longer followed, the tempo it set is cleared;
  a live tempo set by something else (an `audio.beat` node) is left alone.
- MIDI feedback (motor faders, LED rings), when the patch setting `midi_feedback` is true: a pin
  bound to a MIDI CC that changes by other means than its control (an inspector edit, a preset
  recall) sends its position back as that CC (same channel and number, 0..127) to the output
  ports named by the binding's device, at the end of the next `before_frame` (the latest value
  per pin). Sending is the MIDI service's (`send_control`): it never waits for a device.
- At most `MAX_EVENTS_PER_FRAME` events are handled a frame; more are counted (`dropped`).

Assumes it runs on the frame thread, as the services do. Only the document's own nodes are driven
and bound (nodes inside definitions are not).
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evaluators._services import FACTORIES, ON, WAITING
from nodes import EditOp, Patch, PatchError, PatchEvent, resync_beats
from nodes._bindings import BINDABLE_TYPES, CROSSFADER_TARGET, PRESET_TARGET, Binding
from nodes._tempo import MAX_BPM, MIN_BPM

MAX_EVENTS_PER_FRAME = 65536
MAX_QUEUED_NOTES = 1024
TOUCH = 1.0 / 512  # positions this close (of the whole travel) touch: pickup and scale meet
INPUT_TYPES = frozenset({"osc.in", "midi.cc", "midi.note"})
LIVE_PINS = frozenset({"value", "arrived", "pending", "velocity"})  # set here, not by people
_OSC_PREFIX = "osc:"


def _call(callback: Callable[[Any], None] | None, argument: Any) -> None:
    """A preset or crossfader callback; a target it refuses (PatchError) is skipped."""
    if callback is None:
        return
    try:
        callback(argument)
    except PatchError:
        return


def mapped(binding: Binding, x: float) -> float:
    """The value a control at position `x` (0..1) gives, by the binding's range and curve."""
    low, high = binding.low, binding.high
    if binding.curve == "exponential":
        if low * high > 0:
            return float(low * (high / low) ** x)
        return low + (high - low) * x * x
    return low + (high - low) * x


def position_of(binding: Binding, value: float) -> float:
    """The control position (0..1) that gives `value`: `mapped` inverted, clamped to 0..1."""
    low, high = binding.low, binding.high
    if low == high:
        return 0.0
    if binding.curve == "exponential":
        if low * high > 0:
            ratio = value / low
            x = math.log(ratio) / math.log(high / low) if ratio > 0 else 0.0
        else:
            x = math.sqrt(max(0.0, (value - low) / (high - low)))
    else:
        x = (value - low) / (high - low)
    return min(1.0, max(0.0, x))


@dataclass
class _Takeover:
    """Per binding: where its control was, and whether it drives the value now."""

    last_x: float | None = None
    engaged: bool = False
    wrote: Any = None  # the value it set last: another value means something else moved it


@dataclass
class _Plan:
    """What the patch asks of the controls, worked out again when the patch changes."""

    osc_inputs: dict[str, list[str]] = field(default_factory=dict)  # address -> osc.in ids
    cc_inputs: dict[int, list[tuple[str, str, int]]] = field(default_factory=dict)
    note_inputs: dict[int, list[tuple[str, str, int]]] = field(default_factory=dict)
    bindings: dict[str, list[tuple[str, Binding]]] = field(default_factory=dict)  # by source
    osc_addresses: frozenset[str] = frozenset()  # of input nodes and bindings
    midi_devices: frozenset[str] = frozenset()  # the port patterns of MIDI bindings
    cc_bindings: dict[tuple[str, str], list[Binding]] = field(default_factory=dict)  # by pin
    services: tuple[str, ...] = ()


class Controls:
    """Live controls of one patch in one execution context: see the module note."""

    def __init__(
        self,
        patch: Patch,
        ctx: Any,
        *,
        on_preset: Callable[[str], None] | None = None,
        on_crossfade: Callable[[float], None] | None = None,
    ) -> None:
        self.ctx = ctx
        self.on_preset = on_preset
        self.on_crossfade = on_crossfade
        self.dropped = 0  # events beyond MAX_EVENTS_PER_FRAME, notes beyond MAX_QUEUED_NOTES
        self._plan = _Plan()
        self._plan_stale = True
        self._unsubscribe: Callable[[], None] | None = None
        self._patch = patch
        self.patch = patch
        self._learning: tuple[str, str] | None = None
        self._learned: dict[str, Any] | None = None
        self._learn_checked = False  # whether the sources were asked if they reach this learn
        self._learn_problem: dict[str, Any] | None = None
        self._osc_pending: dict[str, int] = {}  # address -> triggers still to fire
        self._osc_active: set[str] = set()  # addresses whose live pins may need resetting
        self._note_queues: dict[tuple[str, str], deque[float]] = {}
        self._takeovers: dict[str, _Takeover] = {}
        self._preset_x: dict[str, float] = {}  # @preset binding -> its control's last position
        self._listened: tuple[Any, frozenset[str]] = (None, frozenset())  # OSC service, addresses
        self._wanted_ports: tuple[Any, frozenset[str]] = (None, frozenset())  # MIDI, devices
        self._writing = False  # while this runtime sets a pin (no feedback for that)
        self._feedback_due: set[tuple[str, str]] = set()  # pins changed by other means
        self._clock_bpm: float | None = None  # the live tempo the MIDI clock set last

    @property
    def patch(self) -> Patch:
        return self._patch

    @patch.setter
    def patch(self, patch: Patch) -> None:
        """Play `patch` from the next frame on (the engine's new copy); takeover and queued
        triggers of bindings and addresses that go on are kept."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._patch = patch
        self._unsubscribe = patch.subscribe(self._on_patch_event)
        self._plan_stale = True

    def _on_patch_event(self, event: PatchEvent) -> None:
        """Work the plan out again when what it holds may have changed: nodes, links, bindings,
        or the pins that pick an input node's messages (not the live pins this runtime sets).
        Note the pins changed by other means, for MIDI feedback."""
        if (
            event.op == EditOp.SET_VALUE
            and event.definition is None
            and not self._writing
            and self._feedback_on()
        ):
            self._feedback_due.add((event.node_id or "", event.pin or ""))
        if event.definition is not None or self._plan_stale:
            return
        if event.kind == "structural" or event.op == EditOp.BINDING:
            self._plan_stale = True
        elif event.op == EditOp.SET_VALUE and event.pin not in LIVE_PINS:
            instance = self._patch.nodes.get(event.node_id or "")
            self._plan_stale = instance is not None and instance.type_id in INPUT_TYPES

    # ------------------------------------------------------------------ learn
    def learn(self, node: str, pin: str) -> None:
        """The next control event of any source is learned for `node`.`pin`."""
        self._learning = (node, pin)
        self._learned = None
        self._learn_checked = False
        self._learn_problem = None

    def cancel_learn(self) -> None:
        self._learning = None
        self._learn_problem = None

    @property
    def learning(self) -> bool:
        return self._learning is not None

    def take_learned(self) -> dict[str, Any] | None:
        """`{"node", "pin", "source", "device"}` of the control learned since the last call."""
        learned, self._learned = self._learned, None
        return learned

    def take_learn_problem(self) -> dict[str, Any] | None:
        """`{"node", "pin", "reason", "advice"}` once no source can reach the armed learn (see
        the module note), once; None otherwise."""
        problem, self._learn_problem = self._learn_problem, None
        return problem

    def _check_learn_reach(self, names: tuple[str, ...]) -> None:
        """Once every learn source has said whether it works: note it when none does."""
        statuses = self.ctx.services.statuses()
        found = [(name, statuses[name]) for name in names if name in statuses]
        if any(status.state == WAITING for _, status in found):
            return  # asked again next frame (MIDI is still looking for ports)
        self._learn_checked = True
        if self._learning is None or any(status.state == ON for _, status in found):
            return
        node, pin = self._learning
        reason = "; ".join(f"{name.upper()} {status.text}" for name, status in found)
        advice = next((status.advice for _, status in found if status.advice), "")
        self._learn_problem = {"node": node, "pin": pin, "reason": reason, "advice": advice}

    # ------------------------------------------------------------------ frames
    def before_frame(self) -> None:
        """Drain the services and apply the frame's control events (see the module note)."""
        self.ctx.services.prepare_frame()
        plan = self._current_plan()
        events: list[Any] = []
        midi = None
        names = plan.services
        if self._learning is not None:
            names = tuple(name for name in ("osc", "midi") if name in FACTORIES)
        elif "midi" not in names and "midi" in FACTORIES and self._follows_midi_clock():
            names = (*names, "midi")
        for name in names:
            opened = name in self.ctx.services
            service = self.ctx.service(name)
            if not opened:
                service.begin_frame()  # made after the drain: its first drain is now
            if name == "osc":
                self._listen(service, plan.osc_addresses)
            elif name == "midi":
                midi = service
                self._want_ports(service, plan.midi_devices)
            events += service.take_controls()
        if "osc" not in names and "osc" in self.ctx.services:
            self.ctx.service("osc").listen_any(False)  # learned: back to the listened addresses
        if len(events) > MAX_EVENTS_PER_FRAME:
            self.dropped += len(events) - MAX_EVENTS_PER_FRAME
            del events[MAX_EVENTS_PER_FRAME:]
        if self._learning is not None and not self._learn_checked:
            self._check_learn_reach(names)
        if events and self._learning is not None:
            node, pin = self._learning
            first = events[0]
            self._learned = {"node": node, "pin": pin, "source": first.source,
                             "device": first.device}  # fmt: skip
            self._learning = None
        self._apply(plan, events)
        self._follow_midi_clock(midi)
        self._send_feedback(plan, midi)

    def _want_ports(self, midi: Any, devices: frozenset[str]) -> None:
        """Have the MIDI service open the ports bindings name (every port while learning or
        following the MIDI clock); the `midi.*` nodes ask for their own."""
        if self._learning is not None or self._follows_midi_clock():
            devices = devices | {""}
        if self._wanted_ports != (midi, devices):
            for device in devices:
                midi.want(device)
            self._wanted_ports = (midi, devices)

    def _listen(self, osc: Any, addresses: frozenset[str]) -> None:
        if self._listened != (osc, addresses):
            for address in addresses:
                osc.listen(address)
            self._listened = (osc, addresses)
        osc.listen_any(self._learning is not None)

    def _apply(self, plan: _Plan, events: list[Any]) -> None:
        osc_values: dict[str, float] = {}
        osc_arrived: Counter[str] = Counter()
        positions: dict[tuple[str, str], float] = {}  # coalesced continuous controls
        triggered: set[str] = set()  # OSC sources sent without a number
        for source, value, device in events:
            if source.startswith(_OSC_PREFIX):
                address = source[len(_OSC_PREFIX) :]
                osc_arrived[address] += 1
                if value is None:
                    triggered.add(source)
                else:
                    osc_values[address] = value
                    if value == value:  # a NaN has no position
                        positions[(source, device)] = min(1.0, max(0.0, value))
            elif source.startswith("midi:note:"):
                queue = self._note_queues.get((source, device))
                if queue is None:
                    queue = self._note_queues[(source, device)] = deque(maxlen=MAX_QUEUED_NOTES)
                elif len(queue) == MAX_QUEUED_NOTES:
                    self.dropped += 1
                queue.append(0.0 if value is None else value)
            else:
                positions[(source, device)] = 0.0 if value is None else value
        for key in list(self._note_queues):
            queue = self._note_queues[key]
            positions[key] = queue.popleft()
            if not queue:
                del self._note_queues[key]
        self._drive_osc_inputs(plan, osc_values, osc_arrived)
        for (source, device), x in positions.items():
            if source.startswith("midi:"):
                self._drive_midi_inputs(plan, source, device, x)
            for binding_id, binding in plan.bindings.get(source, ()):
                if not binding.device or binding.device in device:
                    self._apply_binding(binding_id, binding, x)
        for source in triggered:
            for _, binding in plan.bindings.get(source, ()):
                if binding.node == PRESET_TARGET:
                    _call(self.on_preset, binding.pin)

    def _drive_osc_inputs(
        self, plan: _Plan, values: dict[str, float], arrived: Counter[str]
    ) -> None:
        active = self._osc_active | arrived.keys()
        self._osc_active = set()
        for address in active:
            nodes = plan.osc_inputs.get(address)
            if not nodes:
                self._osc_pending.pop(address, None)
                continue
            count = arrived.get(address, 0)
            pending = self._osc_pending.get(address, 0) + count
            for node_id in nodes:
                if address in values:
                    self._set_live(node_id, "value", values[address])
                self._set_live(node_id, "arrived", count)
                self._set_live(node_id, "pending", pending)
            if pending > 1:
                self._osc_pending[address] = pending - 1  # one fires on this frame
            else:
                self._osc_pending.pop(address, None)
            if count or pending:
                self._osc_active.add(address)  # the next frame resets what this one set

    def _drive_midi_inputs(self, plan: _Plan, source: str, device: str, x: float) -> None:
        kind, channel_text, number_text = source.split(":")[1:]
        channel, number = int(channel_text), int(number_text)
        table, pin = (plan.cc_inputs, "value") if kind == "cc" else (plan.note_inputs, "velocity")
        for node_id, wanted_device, wanted_channel in table.get(number, ()):
            if wanted_channel in (0, channel) and wanted_device in device:
                self._set_live(node_id, pin, x)

    def _apply_binding(self, binding_id: str, binding: Binding, x: float) -> None:
        if binding.node == PRESET_TARGET:
            last = self._preset_x.get(binding_id)
            self._preset_x[binding_id] = x
            if x >= 0.5 and (last is None or last < 0.5):
                _call(self.on_preset, binding.pin)
            return
        if binding.node == CROSSFADER_TARGET:
            if binding.pin == "position":
                _call(self.on_crossfade, min(1.0, max(0.0, mapped(binding, x))))
            return
        instance = self.patch.nodes.get(binding.node)
        pin = instance.input(binding.pin) if instance is not None else None
        if pin is None or pin.type not in BINDABLE_TYPES:
            return
        if pin.type == "bool":
            self._set_live(binding.node, binding.pin, x >= 0.5)
            return
        current = instance.values.get(binding.pin, pin.default)  # type: ignore[union-attr]
        if isinstance(current, bool) or not isinstance(current, int | float):
            return
        state = self._takeovers.get(binding_id)
        if state is None:
            state = self._takeovers[binding_id] = _Takeover()
        target = self._taken_over(binding, state, x, float(current))
        if target is None:
            return
        if pin.minimum is not None:
            target = max(pin.minimum, target)
        if pin.maximum is not None:
            target = min(pin.maximum, target)
        value: float | int = round(target) if pin.type == "int" else target
        self._set_live(binding.node, binding.pin, value)
        state.wrote = instance.values.get(binding.pin)  # type: ignore[union-attr]

    def _taken_over(
        self, binding: Binding, state: _Takeover, x: float, current: float
    ) -> float | None:
        """The value the binding sets for a control at `x` (None: the control is ignored)."""
        last_x, state.last_x = state.last_x, x
        if state.engaged and state.wrote != current:
            state.engaged = False  # something else moved the value: take over again
        if binding.takeover == "jump" or state.engaged:
            state.engaged = True
            return mapped(binding, x)
        value_x = position_of(binding, current)
        touching = abs(x - value_x) <= TOUCH
        crossed = last_x is not None and (last_x - value_x) * (x - value_x) <= 0
        if touching or crossed:
            state.engaged = True
            return mapped(binding, x)
        if binding.takeover == "pickup" or last_x is None or x == last_x:
            return None
        if x > last_x:  # the value covers what is left above it as the control does
            value_x += (x - last_x) * (1.0 - value_x) / (1.0 - last_x)
        else:
            value_x -= (last_x - x) * value_x / last_x
        return mapped(binding, value_x)

    def _set_live(self, node_id: str, pin: str, value: Any) -> None:
        """Set a pin as a live edit, unless it already has that value; what cannot be set is
        skipped (a live control never stops a frame)."""
        instance = self.patch.nodes.get(node_id)
        if instance is None or instance.values.get(pin) == value:
            return
        self._writing = True
        try:
            self.patch.set_value(node_id, pin, value, live=True)
        except PatchError:
            return
        finally:
            self._writing = False

    def _feedback_on(self) -> bool:
        return self._patch.settings.get("midi_feedback") is True

    def _send_feedback(self, plan: _Plan, midi: Any) -> None:
        """Send the position of pins bound to a MIDI CC that changed by other means back to
        the controller (see the module note)."""
        due, self._feedback_due = self._feedback_due, set()
        if not due or midi is None or not self._feedback_on():
            return
        for node_id, pin in due:
            bindings = plan.cc_bindings.get((node_id, pin))
            instance = self.patch.nodes.get(node_id)
            if not bindings or instance is None:
                continue
            value = instance.values.get(pin)
            if not isinstance(value, int | float):
                continue
            for binding in bindings:
                if isinstance(value, bool):
                    x = 1.0 if value else 0.0
                else:
                    x = position_of(binding, float(value))
                channel, control = binding.source.split(":")[2:]
                midi.send_control(binding.device, int(channel), int(control), round(x * 127))

    def _follows_midi_clock(self) -> bool:
        return bool(self._patch.settings.get("tempo_source") == "midi")

    def _follow_midi_clock(self, midi: Any) -> None:
        ctx = self.ctx
        tempo = midi.tempo() if midi is not None and self._follows_midi_clock() else None
        if tempo and math.isfinite(tempo):
            ctx.live_bpm = self._clock_bpm = min(MAX_BPM, max(MIN_BPM, tempo))
        elif self._clock_bpm is not None:  # the clock stopped: give back the tempo it set
            if ctx.live_bpm == self._clock_bpm:
                ctx.live_bpm = None
            self._clock_bpm = None
        if midi is not None and "start" in midi.take_transport():
            resync_beats(ctx.states.values())

    # ------------------------------------------------------------------ the plan
    def _current_plan(self) -> _Plan:
        if self._plan_stale:
            self._plan_stale = False
            self._plan = self._make_plan()
            self._osc_active = set(self._plan.osc_inputs)  # loaded live pins settle to now
            live = set(self._patch.bindings)
            for table in (self._takeovers, self._preset_x):
                for gone in [binding_id for binding_id in table if binding_id not in live]:
                    del table[gone]
        return self._plan

    def _make_plan(self) -> _Plan:
        plan = _Plan()
        for node_id, instance in self.patch.nodes.items():
            if instance.type_id not in INPUT_TYPES:
                continue

            def value(pin: str, instance: Any = instance) -> Any:
                found = instance.input(pin)
                return instance.values.get(pin, None if found is None else found.default)

            if instance.type_id == "osc.in":
                address = value("address")
                if isinstance(address, str) and address.startswith("/"):
                    plan.osc_inputs.setdefault(address, []).append(node_id)
                continue
            number_pin = "control" if instance.type_id == "midi.cc" else "note"
            table = plan.cc_inputs if number_pin == "control" else plan.note_inputs
            number, channel, device = value(number_pin), value("channel"), value("device")
            if isinstance(number, int) and isinstance(channel, int) and isinstance(device, str):
                table.setdefault(number, []).append((node_id, device, channel))
        for binding_id, binding in self.patch.bindings.items():
            plan.bindings.setdefault(binding.source, []).append((binding_id, binding))
        bound = [s[len(_OSC_PREFIX) :] for s in plan.bindings if s.startswith(_OSC_PREFIX)]
        plan.osc_addresses = frozenset((*plan.osc_inputs, *bound))
        plan.midi_devices = frozenset(
            b.device for b in self.patch.bindings.values() if b.source.startswith("midi:")
        )
        for binding in self.patch.bindings.values():
            if binding.source.startswith("midi:cc:") and binding.node in self.patch.nodes:
                plan.cc_bindings.setdefault((binding.node, binding.pin), []).append(binding)
        wants_osc = bool(plan.osc_addresses)
        wants_midi = bool(plan.cc_inputs or plan.note_inputs) or any(
            s.startswith("midi:") for s in plan.bindings
        )
        plan.services = tuple(
            name
            for name, wanted in (("osc", wants_osc), ("midi", wants_midi))
            if wanted and name in FACTORIES
        )
        return plan
