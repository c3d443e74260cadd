"""Control sources: the families of live controls (OSC, MIDI) that the controls runtime
(evaluators.controls.runtime) plays, as plug-ins registered by name.

A source is registered with the factory of its service (`_services.FACTORIES`, under the
source's name), and its name is the prefix of the control names it reports (`osc:/fader/1`,
`midi:cc:1:7`; the grammar of those names is registered by the source's node module in
nodes/library, so files are checked without the runtime). It says which input node types it
drives and which of their pins it writes, and each frame it does its part of
`Controls.before_frame`: tell its service what the patch listens to (everything while
learning), turn its events into control positions for bindings, drive its input nodes, and after
the frame send feedback. Every `Controls` makes one instance of each registered source, which
holds that runtime's state for the source (queued notes, pending triggers, the ports it asked
for). OSC (evaluators.controls.osc) and MIDI (evaluators.controls.midi) are the two built in,
registered when `evaluators` is imported.

A new family of controls (a game controller, say) is its service, one module with its
`ControlSource` subclass and `register_control_source` call, and its input nodes with their
grammar in nodes/library; the runtime holds no type id of its own.

Assumes the frame thread, as the runtime and the services do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from evaluators.services.registry import FACTORIES, Service
from nodes import Patch
from nodes.document.bindings import Binding

BindingsBySource = Mapping[str, list[tuple[str, Binding]]]


@dataclass
class ControlFrame:
    """One frame's control events as the sources hand them to the runtime."""

    # Continuous positions (0..1), the latest per control and device, in arrival order.
    positions: dict[tuple[str, str], float] = field(default_factory=dict)
    # Controls sent without a number: they only recall `@preset` bindings.
    triggered: set[str] = field(default_factory=set)


class ControlRuntime(Protocol):
    """What a source may ask of the runtime that plays it (evaluators.controls.runtime.Controls)."""

    ctx: Any
    dropped: int

    @property
    def patch(self) -> Patch: ...

    @property
    def learning(self) -> bool: ...

    def set_live(self, node_id: str, pin: str, value: Any) -> None: ...


InputNodes = list[tuple[str, Any]]
"""(node id, node) of the input nodes a source drives, in the patch's order."""


def input_value(instance: Any, pin: str) -> Any:
    """An input node's value for `pin` (its default when it has none)."""
    found = instance.input(pin)
    return instance.values.get(pin, None if found is None else found.default)


class ControlSource:
    """One family of live controls in one runtime; see the module note. The base does nothing:
    a source overrides what it takes part in."""

    #: Its service's name and the prefix (before ":") of the control names it reports.
    name = ""
    #: The node types it drives, and the pins of those it writes (not people).
    input_types: frozenset[str] = frozenset()
    live_pins: frozenset[str] = frozenset()

    def __init__(self, runtime: ControlRuntime) -> None:
        self.runtime = runtime

    def plan(self, patch: Patch, bindings: BindingsBySource, inputs: InputNodes) -> bool:
        """Work out what `patch` asks of this source (its input nodes, `inputs`: the nodes of
        its `input_types`, found by the runtime in one pass over the patch for all sources; its
        bindings: the controls named `<name>:...` in `bindings`); True when that needs its
        service."""
        return False

    def wanted_anyway(self) -> bool:
        """Whether its service is needed although no node or binding asks for it."""
        return False

    def follow(self, service: Any) -> None:
        """Tell the service what to listen to this frame (all it can while learning)."""

    def idle(self, service: Any) -> None:
        """The service exists but is not used this frame."""

    def take(self, event: Any, frame: ControlFrame) -> None:
        """One event of its service, in arrival order: note what it moves in `frame`."""

    def settle(self, frame: ControlFrame) -> None:
        """After the frame's events: add what it queued from earlier frames to `frame`."""

    def drive_inputs(self) -> None:
        """Drive its input nodes from the events it took (before any binding applies)."""

    def drive_at(self, control: str, device: str, x: float) -> None:
        """Drive its input nodes that follow `control` (from `device`) at position `x`."""

    def feedback_on(self) -> bool:
        """Whether pins bound to its controls send their changes back."""
        return False

    def after_frame(self, service: Any, changed: set[tuple[str, str]]) -> None:
        """After the events applied (`service`: None when not used this frame): send the pins
        in `changed` (changed by other means than their controls) back to the controllers."""


#: name -> source class, in the order sources are opened and their events taken.
CONTROL_SOURCES: dict[str, Callable[[ControlRuntime], ControlSource]] = {}


def register_control_source(source: type[ControlSource], service: Callable[[Any], Service]) -> None:
    """Add a control source and the factory of its service (`_services.FACTORIES`, under the
    source's name; it should import its I/O library only when called). Names are unique."""
    if source.name in CONTROL_SOURCES or source.name in FACTORIES:
        raise ValueError(f"control source {source.name!r} is registered twice")
    CONTROL_SOURCES[source.name] = source
    FACTORIES[source.name] = service
