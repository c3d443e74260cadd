"""The OSC control source: `osc.in` nodes and `osc:` bindings, played by the controls runtime
(evaluators.controls.runtime; see evaluators.controls.sources for what a source does).

`osc.in` nodes get `value` (the latest number sent to their address), `arrived` (messages taken
this frame) and `pending` (triggers still to fire: one per frame, none lost). A binding's position
is the number sent, clamped to 0..1; a message without a number has none and only recalls an
`@preset` binding. While learning, the service listens to every address.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

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
from nodes import Patch


class OscControls(ControlSource):
    """OSC in one runtime: see the module note."""

    name = "osc"
    input_types = frozenset({"osc.in"})
    live_pins = frozenset({"value", "arrived", "pending"})
    _PREFIX = "osc:"

    def __init__(self, runtime: ControlRuntime) -> None:
        super().__init__(runtime)
        self._inputs: dict[str, list[str]] = {}  # address -> osc.in ids
        self._addresses: frozenset[str] = frozenset()  # of input nodes and bindings
        self._pending: dict[str, int] = {}  # address -> triggers still to fire
        self._active: set[str] = set()  # addresses whose live pins may need resetting
        self._listened: tuple[Any, frozenset[str]] = (None, frozenset())  # service, addresses
        self._values: dict[str, float] = {}  # this frame's latest number per address
        self._arrived: Counter[str] = Counter()  # this frame's messages per address

    def plan(self, patch: Patch, bindings: BindingsBySource, inputs: InputNodes) -> bool:
        self._inputs = {}
        for node_id, instance in inputs:
            address = input_value(instance, "address")
            if isinstance(address, str) and address.startswith("/"):
                self._inputs.setdefault(address, []).append(node_id)
        bound = [s[len(self._PREFIX) :] for s in bindings if s.startswith(self._PREFIX)]
        self._addresses = frozenset((*self._inputs, *bound))
        self._active = set(self._inputs)  # loaded live pins settle to now
        return bool(self._addresses)

    def follow(self, service: Any) -> None:
        if self._listened != (service, self._addresses):
            for address in self._addresses:
                service.listen(address)
            self._listened = (service, self._addresses)
        service.listen_any(self.runtime.learning)

    def idle(self, service: Any) -> None:
        service.listen_any(False)  # learned: back to the listened addresses

    def take(self, event: Any, frame: ControlFrame) -> None:
        control, value, device = event
        address = control[len(self._PREFIX) :]
        self._arrived[address] += 1
        if value is None:
            frame.triggered.add(control)
        else:
            self._values[address] = value
            if value == value:  # a NaN has no position
                frame.positions[(control, device)] = min(1.0, max(0.0, value))

    def drive_inputs(self) -> None:
        values, arrived = self._values, self._arrived
        self._values, self._arrived = {}, Counter()
        active = self._active | arrived.keys()
        self._active = set()
        for address in active:
            nodes = self._inputs.get(address)
            if not nodes:
                self._pending.pop(address, None)
                continue
            count = arrived.get(address, 0)
            pending = self._pending.get(address, 0) + count
            for node_id in nodes:
                if address in values:
                    self.runtime.set_live(node_id, "value", values[address])
                self.runtime.set_live(node_id, "arrived", count)
                self.runtime.set_live(node_id, "pending", pending)
            if pending > 1:
                self._pending[address] = pending - 1  # one fires on this frame
            else:
                self._pending.pop(address, None)
            if count or pending:
                self._active.add(address)  # the next frame resets what this one set


def _service(ctx: Any) -> Service:
    from evaluators.services.osc import OscService

    return OscService.for_context(ctx)


register_control_source(OscControls, _service)
