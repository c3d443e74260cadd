"""The MIDI control source: `midi.cc` / `midi.note` nodes, `midi:` bindings, the MIDI clock and
feedback, played by the controls runtime (evaluators.controls.runtime; see
evaluators.controls.sources for what a source does).

- `midi.cc` gets `value`, `midi.note` `velocity` (0..1, 0 for note-off), matched by channel
  (0: any), number and device (a substring of the port name, "": any). CCs coalesce (the latest
  per control and device in a frame applies); notes are queued, one per control per frame, so a
  note-on and its note-off in the same frame still show as a gate for one frame; at most
  `MAX_QUEUED_NOTES` wait per control (more are counted in the runtime's `dropped`).
- Ports: the service opens the inputs MIDI bindings name by their `device` ("": every port;
  `midi.*` nodes ask for their own), and every input while learning or following the clock.
- Clock: with the patch setting `tempo_source` = "midi" (which opens the service), the tempo it
  measures (`tempo()`, None until it knows; held to MIN_BPM..MAX_BPM) becomes `ctx.live_bpm`; a
  MIDI start (in `take_transport()`) makes the next frame the downbeat of every `time.beat`. When
  the clock stops or is no longer followed, the tempo it set is cleared; a live tempo set by
  something else (an `audio.beat` node) is left alone.
- Feedback (motor faders, LED rings), with the patch setting `midi_feedback` true: a pin bound to
  a CC that changed by other means than its control is sent back as that CC (same channel and
  number, 0..127) to the output ports named by the binding's device, at the end of the next
  frame's controls (the latest value per pin), by the service's `send_control`, which never
  waits for a device.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from evaluators.controls.runtime import position_of
from evaluators.controls.sources import (
    BindingsBySource,
    ControlFrame,
    ControlRuntime,
    ControlSource,
    InputNodes,
    input_value,
    register_control_source,
)
from evaluators.services.registry import Service
from nodes import Patch, resync_beats
from nodes.document.bindings import Binding
from nodes.tempo import MAX_BPM, MIN_BPM

MAX_QUEUED_NOTES = 1024


class MidiControls(ControlSource):
    """MIDI in one runtime: see the module note."""

    name = "midi"
    input_types = frozenset({"midi.cc", "midi.note"})
    live_pins = frozenset({"value", "velocity"})
    _NOTE = "midi:note:"

    def __init__(self, runtime: ControlRuntime) -> None:
        super().__init__(runtime)
        self._cc_inputs: dict[int, list[tuple[str, str, int]]] = {}  # number -> id, device, ch
        self._note_inputs: dict[int, list[tuple[str, str, int]]] = {}
        self._devices: frozenset[str] = frozenset()  # the port patterns of MIDI bindings
        self._cc_bindings: dict[tuple[str, str], list[Binding]] = {}  # by pin
        self._note_queues: dict[tuple[str, str], deque[float]] = {}
        self._wanted_ports: tuple[Any, frozenset[str]] = (None, frozenset())  # service, devices
        self._clock_bpm: float | None = None  # the live tempo the MIDI clock set last

    def plan(self, patch: Patch, bindings: BindingsBySource, inputs: InputNodes) -> bool:
        self._cc_inputs, self._note_inputs = {}, {}
        for node_id, instance in inputs:
            number_pin = "control" if instance.type_id == "midi.cc" else "note"
            table = self._cc_inputs if number_pin == "control" else self._note_inputs
            number = input_value(instance, number_pin)
            channel, device = input_value(instance, "channel"), input_value(instance, "device")
            if isinstance(number, int) and isinstance(channel, int) and isinstance(device, str):
                table.setdefault(number, []).append((node_id, device, channel))
        mine = [b for b in patch.bindings.values() if b.source.startswith("midi:")]
        self._devices = frozenset(binding.device for binding in mine)
        self._cc_bindings = {}
        for binding in mine:
            if binding.source.startswith("midi:cc:") and binding.node in patch.nodes:
                self._cc_bindings.setdefault((binding.node, binding.pin), []).append(binding)
        return bool(self._cc_inputs or self._note_inputs or mine)

    def _follows_clock(self) -> bool:
        return bool(self.runtime.patch.settings.get("tempo_source") == "midi")

    def wanted_anyway(self) -> bool:
        return self._follows_clock()

    def follow(self, service: Any) -> None:
        devices = self._devices
        if self.runtime.learning or self._follows_clock():
            devices = devices | {""}
        if self._wanted_ports != (service, devices):
            for device in devices:
                service.want(device)
            self._wanted_ports = (service, devices)

    def take(self, event: Any, frame: ControlFrame) -> None:
        control, value, device = event
        if not control.startswith(self._NOTE):
            frame.positions[(control, device)] = 0.0 if value is None else value
            return
        queue = self._note_queues.get((control, device))
        if queue is None:
            queue = self._note_queues[(control, device)] = deque(maxlen=MAX_QUEUED_NOTES)
        elif len(queue) == MAX_QUEUED_NOTES:
            self.runtime.dropped += 1
        queue.append(0.0 if value is None else value)

    def settle(self, frame: ControlFrame) -> None:
        for key in list(self._note_queues):
            queue = self._note_queues[key]
            frame.positions[key] = queue.popleft()
            if not queue:
                del self._note_queues[key]

    def drive_at(self, control: str, device: str, x: float) -> None:
        kind, channel_text, number_text = control.split(":")[1:]
        channel, number = int(channel_text), int(number_text)
        table, pin = (self._cc_inputs, "value") if kind == "cc" else (self._note_inputs, "velocity")
        for node_id, wanted_device, wanted_channel in table.get(number, ()):
            if wanted_channel in (0, channel) and wanted_device in device:
                self.runtime.set_live(node_id, pin, x)

    def feedback_on(self) -> bool:
        return self.runtime.patch.settings.get("midi_feedback") is True

    def after_frame(self, service: Any, changed: set[tuple[str, str]]) -> None:
        self._follow_clock(service)
        if changed and service is not None and self.feedback_on():
            self._send_feedback(service, changed)

    def _send_feedback(self, midi: Any, changed: set[tuple[str, str]]) -> None:
        for node_id, pin in changed:
            bindings = self._cc_bindings.get((node_id, pin))
            instance = self.runtime.patch.nodes.get(node_id)
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

    def _follow_clock(self, midi: Any) -> None:
        ctx = self.runtime.ctx
        tempo = midi.tempo() if midi is not None and self._follows_clock() else None
        if tempo and math.isfinite(tempo):
            ctx.live_bpm = self._clock_bpm = min(MAX_BPM, max(MIN_BPM, tempo))
        elif self._clock_bpm is not None:  # the clock stopped: give back the tempo it set
            if ctx.live_bpm == self._clock_bpm:
                ctx.live_bpm = None
            self._clock_bpm = None
        if midi is not None and "start" in midi.take_transport():
            resync_beats(ctx.states.values())


def _service(ctx: Any) -> Service:
    from evaluators.services.midi import MidiService

    return MidiService.for_context(ctx)


register_control_source(MidiControls, _service)
