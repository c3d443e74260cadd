"""The controls runtime: live controls move input nodes and bound pins, once a frame.

The families of controls (OSC, MIDI) are control sources, plug-ins registered by name
(evaluators.controls.sources, with evaluators.controls.osc and evaluators.controls.midi): each
knows its service, the names of its controls, its input nodes, what learning asks of it and its
feedback. This runtime knows none of them by name; it plays every registered source.

`Controls.before_frame()` is called by the frame loop before the evaluator runs a frame. It lets
the services drain their queues (`Services.prepare_frame`), opens those the patch needs (a
source's service when its input nodes or bindings are in the patch, or when it asks to be open
anyway, as MIDI does to follow its clock), takes the frame's control events
(evaluators.controls.events) and applies them to the patch as live value edits
(`Patch.set_value(..., live=True)`): the same path as an inspector edit, so evaluators rerun only
the cone of what changed, and a pin whose value does not change is not touched at all.

- Each source turns its events into positions (0..1) per control and device, the latest of a
  frame applying (it may queue some, as MIDI notes are) and drives its input nodes.
- Bindings (nodes.document.bindings) map a control's position x onto their pin. Linear:
  low + (high - low) * x. Exponential: low * (high / low) ** x (equal ratios for equal moves, the
  curve for frequencies and sizes) when low and high are non-zero with the same sign, else
  low + (high - low) * x ** 2. Int pins round, bool pins are on for x >= 0.5 (range and curve
  unused), and the pin's own min/max clamp. A control sent without a position (an OSC message
  with no number) only recalls an `@preset` binding.
- Takeover, when the control and the pin's value disagree (after a preset recall or an inspector
  edit moved the value): `jump` sets the value at once; `pickup` ignores the control until it
  crosses or touches the value, then follows; `scale` moves the value by the control's move scaled
  to the travel left on that side (both reach the end together), until they meet, then follows.
  A value changed by anything else than its binding makes the binding take over again. A bool pin
  with `pickup` or `scale` ignores its control until the control agrees with it or switches, so
  the first message after a binding is made (say, the release of the button just learned) never
  switches it.
- `@preset` bindings call `on_preset(name)` when the control goes on (x >= 0.5 after < 0.5);
  `@crossfader` bindings call `on_crossfade(position)` with the mapped value clamped to 0..1. A
  PatchError these raise (a preset since deleted) skips that binding only.
- A binding whose target node or pin is missing, or whose pin cannot be bound, is skipped.
- Learn: `learn(node, pin)` arms it (and opens every source, each listening to all it can); the
  next event of any source wins, `take_learned()` returns it once. As soon as every source has
  said whether it works (`ServiceStatus`) and none does (OSC off: its port is taken; no MIDI
  here), `take_learn_problem()` says so once, with what to do; learn stays armed, so a source
  fixed meanwhile (another port) is still learned.
- Feedback: pins changed by other means than their controls (an inspector edit, a preset recall)
  are handed to the sources after the next frame's events, for those that send them back.
- At most `MAX_EVENTS_PER_FRAME` events are handled a frame; more are counted (`dropped`).

Assumes it runs on the frame thread, as the services do. Only the document's own nodes are driven
and bound (nodes inside definitions are not).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evaluators.controls.sources import CONTROL_SOURCES, ControlFrame, ControlSource, InputNodes
from evaluators.services.registry import FACTORIES, ON, WAITING
from nodes import EditOp, Patch, PatchError, PatchEvent, is_bindable
from nodes.document.bindings import CROSSFADER_TARGET, PRESET_TARGET, Binding

MAX_EVENTS_PER_FRAME = 65536
TOUCH = 1.0 / 512  # positions this close (of the whole travel) touch: pickup and scale meet


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
        self.dropped = 0  # events beyond MAX_EVENTS_PER_FRAME, and what sources could not queue
        # Every registered source, by name (the prefix of its controls' names).
        self._sources: dict[str, ControlSource] = {
            name: make(self) for name, make in CONTROL_SOURCES.items()
        }
        self._input_types = frozenset().union(*(s.input_types for s in self._sources.values()))
        self._live_pins = frozenset().union(*(s.live_pins for s in self._sources.values()))
        self._bindings: dict[str, list[tuple[str, Binding]]] = {}  # by control name
        self._services: tuple[str, ...] = ()  # the sources whose services the patch needs
        self._plan_stale = True
        # The nodes the plan holds (input nodes, bound nodes): removing another one leaves it.
        self._planned_nodes: set[str] = set()
        self._unsubscribe: Callable[[], None] | None = None
        self._patch = patch
        self.patch = patch
        self._learning: tuple[str, str] | None = None
        self._learned: dict[str, Any] | None = None
        self._learn_checked = False  # whether the sources were asked if they reach this learn
        self._learn_problem: dict[str, Any] | None = None
        self._takeovers: dict[str, _Takeover] = {}
        self._preset_x: dict[str, float] = {}  # @preset binding -> its control's last position
        self._writing = False  # while this runtime sets a pin (no feedback for that)
        self._feedback_due: set[tuple[str, str]] = set()  # pins changed by other means

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
        Note the pins changed by other means, for the sources that send feedback."""
        if (
            event.op == EditOp.SET_VALUE
            and event.definition is None
            and not self._writing
            and any(source.feedback_on() for source in self._sources.values())
        ):
            self._feedback_due.add((event.node_id or "", event.pin or ""))
        if event.definition is not None or self._plan_stale:
            return
        if event.op == EditOp.BINDING or event.node_id is None:
            self._plan_stale = True
        elif event.op == EditOp.REMOVE_NODE:
            # A source's plan holds its input nodes and the nodes bound to its controls.
            self._plan_stale = event.node_id in self._planned_nodes
        elif event.op in (EditOp.ADD_NODE, EditOp.PINS) or (
            event.op == EditOp.SET_VALUE and event.pin not in self._live_pins
        ):
            instance = self._patch.nodes.get(event.node_id)
            self._plan_stale = event.node_id in self._planned_nodes or (
                instance is not None and instance.type_id in self._input_types
            )
        # Links do not change a plan: input nodes are read by their own values.

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
        self._update_plan()
        events: list[Any] = []
        opened: dict[str, Any] = {}  # source name -> its service, used this frame
        names = self._services
        if self._learning is not None:
            names = tuple(name for name in self._sources if name in FACTORIES)
        else:
            names += tuple(
                name
                for name, source in self._sources.items()
                if name not in names and name in FACTORIES and source.wanted_anyway()
            )
        for name in names:
            made = name in self.ctx.services
            service = opened[name] = self.ctx.service(name)
            if not made:
                service.begin_frame()  # made after the drain: its first drain is now
            self._sources[name].follow(service)
            events += service.take_controls()
        for name, source in self._sources.items():
            if name not in names and name in self.ctx.services:
                source.idle(self.ctx.service(name))
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
        self._apply(events)
        changed, self._feedback_due = self._feedback_due, set()
        for name, source in self._sources.items():
            source.after_frame(opened.get(name), changed)

    def _source_of(self, control: str) -> ControlSource | None:
        """The source whose controls are named `<its name>:...`."""
        return self._sources.get(control.split(":", 1)[0])

    def _apply(self, events: list[Any]) -> None:
        frame = ControlFrame()
        for event in events:
            source = self._source_of(event.source)
            if source is not None:
                source.take(event, frame)
        for source in self._sources.values():
            source.settle(frame)
        for source in self._sources.values():
            source.drive_inputs()
        for (control, device), x in frame.positions.items():
            source = self._source_of(control)
            if source is not None:
                source.drive_at(control, device, x)
            for binding_id, binding in self._bindings.get(control, ()):
                if not binding.device or binding.device in device:
                    self._apply_binding(binding_id, binding, x)
        for control in frame.triggered:
            for _, binding in self._bindings.get(control, ()):
                if binding.node == PRESET_TARGET:
                    _call(self.on_preset, binding.pin)

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
        if pin is None or not is_bindable(pin.type):
            return
        current = instance.values.get(binding.pin, pin.default)  # type: ignore[union-attr]
        state = self._takeovers.get(binding_id)
        if state is None:
            state = self._takeovers[binding_id] = _Takeover()
        if pin.type == "bool":
            if self._switch_taken_over(binding, state, x >= 0.5, current):
                self.set_live(binding.node, binding.pin, x >= 0.5)
                state.wrote = instance.values.get(binding.pin)  # type: ignore[union-attr]
            return
        if isinstance(current, bool) or not isinstance(current, int | float):
            return
        target = self._taken_over(binding, state, x, float(current))
        if target is None:
            return
        if pin.minimum is not None:
            target = max(pin.minimum, target)
        if pin.maximum is not None:
            target = min(pin.maximum, target)
        value: float | int = round(target) if pin.type == "int" else target
        self.set_live(binding.node, binding.pin, value)
        state.wrote = instance.values.get(binding.pin)  # type: ignore[union-attr]

    def _switch_taken_over(
        self, binding: Binding, state: _Takeover, on: bool, current: Any
    ) -> bool:
        """Whether a bool binding's control, now `on`, sets the pin: always with `jump`; else
        once it agrees with the value or switches (pick-up, as `scale`), then it follows."""
        last_x, state.last_x = state.last_x, float(on)
        if state.engaged and state.wrote != current:
            state.engaged = False  # something else switched the value: take over again
        switched = last_x is not None and (last_x >= 0.5) != on
        if binding.takeover == "jump" or state.engaged or on == current or switched:
            state.engaged = True
        return state.engaged

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

    def set_live(self, node_id: str, pin: str, value: Any) -> None:
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

    # ------------------------------------------------------------------ the plan
    def _update_plan(self) -> None:
        """Work out what the patch asks of the sources again, when it may have changed."""
        if not self._plan_stale:
            return
        self._plan_stale = False
        self._bindings = {}
        for binding_id, binding in self.patch.bindings.items():
            self._bindings.setdefault(binding.source, []).append((binding_id, binding))
        # One pass over the patch for every source (at 10,000 nodes, one pass per source made
        # the frame after each structural edit 15 ms longer).
        inputs: dict[str, InputNodes] = {name: [] for name in self._sources}
        owner = {t: name for name, source in self._sources.items() for t in source.input_types}
        for node_id, instance in self._patch.nodes.items():
            name = owner.get(instance.type_id)
            if name is not None:
                inputs[name].append((node_id, instance))
        self._planned_nodes = {node_id for nodes in inputs.values() for node_id, _ in nodes}
        self._planned_nodes.update(binding.node for binding in self._patch.bindings.values())
        self._services = tuple(
            name
            for name, source in self._sources.items()
            if source.plan(self._patch, self._bindings, inputs[name]) and name in FACTORIES
        )
        live = set(self._patch.bindings)
        for table in (self._takeovers, self._preset_x):
            for gone in [binding_id for binding_id in table if binding_id not in live]:
                del table[gone]
