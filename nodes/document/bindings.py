"""Bindings: which live control (an OSC address, a MIDI CC or note) drives which input pin.

A `Binding` targets a node id and an input pin (ids are stable: renaming or moving a node keeps
its bindings) and says how a control's position maps onto the pin: the range `low`..`high`, the
`curve` (linear or exponential) and the `takeover` mode when control and value disagree (jump at
once, pick up once the control crosses the value, or scale the rest of the travel). Two targets
are not nodes: `@preset` with a preset's name as pin (recalled when the control goes on), and
`@crossfader` with pin `position` (the presets panel's crossfader).

Sources are strings, the same that the control services report (evaluators.controls.events):
`osc:/fader/1`, `midi:cc:<channel 1-16>:<controller 0-127>`, `midi:note:<channel>:<note 0-127>`.
Each family's grammar is registered by the node module of its input nodes
(`register_source_grammar`, nodes/library/live/osc.py and midi.py), so a new family of controls adds
its own. `device` narrows a MIDI binding to ports whose name contains it ("" = any port).

A patch keeps its bindings in `Patch.bindings` (id -> Binding) and changes them with
`Patch.set_binding`, an edit like any other (undo and the engine's copy follow its event). A
binding whose node is removed stays (an undo brings the node back); files keep only bindings whose
target exists. Plain Python: the mapping of control values lives with the runtime
(evaluators.controls.runtime).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from nodes.errors import PatchValueError

Curve = Literal["linear", "exponential"]
Takeover = Literal["jump", "pickup", "scale"]
CURVES: tuple[Curve, ...] = ("linear", "exponential")
TAKEOVERS: tuple[Takeover, ...] = ("jump", "pickup", "scale")
PRESET_TARGET = "@preset"
CROSSFADER_TARGET = "@crossfader"
MAX_SOURCE = 200

#: Control families' grammars: prefix (`osc`) -> (whether a name with that prefix is one of its
#: controls, how its names are written, for errors).
SOURCE_GRAMMARS: dict[str, tuple[Callable[[str], bool], str]] = {}


def register_source_grammar(prefix: str, check: Callable[[str], bool], forms: str) -> None:
    """Accept binding sources `<prefix>:...` for which `check` is true; `forms` says how they
    are written (e.g. "osc:/address"). Prefixes are unique."""
    if prefix in SOURCE_GRAMMARS:
        raise ValueError(f"binding sources {prefix!r} are registered twice")
    SOURCE_GRAMMARS[prefix] = (check, forms)


def checked_source(source: object) -> str:
    """`source` if it names a control (see the module note), else PatchValueError."""
    if not isinstance(source, str) or not source or len(source) > MAX_SOURCE:
        raise PatchValueError(f"binding source: expected a control name, got {source!r}"[:200])
    grammar = SOURCE_GRAMMARS.get(source.split(":", 1)[0])
    if grammar is not None and grammar[0](source):
        return source
    forms = ", ".join(forms for _, forms in SOURCE_GRAMMARS.values())
    raise PatchValueError(f"binding source {source!r}: expected {forms}"[:300])


@dataclass(frozen=True)
class Binding:
    """One control driving one pin: see the module note."""

    source: str
    node: str
    pin: str
    low: float = 0.0
    high: float = 1.0
    curve: Curve = "linear"
    takeover: Takeover = "jump"
    device: str = ""

    def __post_init__(self) -> None:
        checked_source(self.source)
        for name in ("node", "pin"):
            text = getattr(self, name)
            if not isinstance(text, str) or not text or len(text) > MAX_SOURCE:
                raise PatchValueError(f"binding {name}: expected a name, got {text!r}"[:200])
        for name in ("low", "high"):
            number = getattr(self, name)
            if isinstance(number, bool) or not isinstance(number, int | float) or number != number:
                raise PatchValueError(f"binding {name}: expected a number, got {number!r}"[:200])
            if abs(number) == float("inf"):
                raise PatchValueError(f"binding {name}: must be finite")
        if self.curve not in CURVES:
            raise PatchValueError(f"binding curve {self.curve!r}: expected one of {CURVES}")
        if self.takeover not in TAKEOVERS:
            raise PatchValueError(
                f"binding takeover {self.takeover!r}: expected one of {TAKEOVERS}"
            )
        if not isinstance(self.device, str) or len(self.device) > MAX_SOURCE:
            raise PatchValueError(f"binding device: expected a name, got {self.device!r}"[:200])

    def to_dict(self) -> dict[str, Any]:
        """The binding as plain data (files, the engine protocol)."""
        return {
            "source": self.source,
            "node": self.node,
            "pin": self.pin,
            "range": [self.low, self.high],
            "curve": self.curve,
            "takeover": self.takeover,
            "device": self.device,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Binding:
        """The binding `to_dict` gave; PatchValueError naming the problem for anything else."""
        if not isinstance(data, dict):
            raise PatchValueError(f"binding: expected an object, got {type(data).__name__}")
        span = data.get("range", [0.0, 1.0])
        if not isinstance(span, list | tuple) or len(span) != 2:
            raise PatchValueError(f"binding range: expected [low, high], got {span!r}"[:200])
        return cls(
            source=data.get("source"),  # type: ignore[arg-type]  # checked in __post_init__
            node=data.get("node"),  # type: ignore[arg-type]
            pin=data.get("pin"),  # type: ignore[arg-type]
            low=span[0],
            high=span[1],
            curve=data.get("curve", "linear"),
            takeover=data.get("takeover", "jump"),
            device=data.get("device", ""),
        )
