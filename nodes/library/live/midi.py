"""MIDI nodes: `midi.cc` (a controller's knob or fader) and `midi.note` (a key or pad).

Both are USER inputs and pure functions of their value pins: the controls runtime
(evaluators.controls.runtime) writes the live pin (`value`, `velocity`, PinSpec hint "live") with
`set_value(..., live=True)` when a matching message arrives, so only the node's cone reruns, as
after an inspector edit. `device` is a substring of the input port's name ("" = any port),
`channel` 1-16 (0 = any), `control` / `note` 0-127.

Running, a node asks the MIDI service (`ctx.service("midi")`, evaluators.services.midi) to open the
ports its `device` names, so a patch with MIDI nodes opens its controllers by itself. The service's
scanner opens them on its own thread: until it has looked, the node is deferred (it keeps its last
outputs); then, when no open port matches, the node fails with one line naming the pattern and the
ports there are, and the rest of the patch plays on. With no service at all (a context without
services), the node gives its values.

The module also registers the grammar of `midi:` binding sources (nodes.document.bindings); the
runtime's side of MIDI is evaluators.controls.midi.

A USER node's result, its failure included, is cached until one of its values changes: a node that
failed because its controller was not plugged in stays failed until the first message from it
arrives (the scanner opens the port within a couple of seconds, the runtime then writes the live
pin) or until the node is edited.
"""

from __future__ import annotations

import re

from nodes.document.bindings import register_source_grammar
from nodes.errors import Deferred
from nodes.spec import Determinism, NodeContext, node

USER = Determinism.USER_INPUT
_MIDI_SOURCE = re.compile(r"midi:(cc|note):([1-9]|1[0-6]):([0-9]{1,3})")


def _is_midi_source(source: str) -> bool:
    """`midi:cc:<channel 1-16>:<controller 0-127>` or `midi:note:<channel>:<note 0-127>`."""
    match = _MIDI_SOURCE.fullmatch(source)
    return match is not None and int(match.group(3)) <= 127


register_source_grammar(
    "midi",
    _is_midi_source,
    "midi:cc:CHANNEL:NUMBER or midi:note:CHANNEL:NUMBER (channel 1-16, number 0-127)",
)


def ask_for_device(ctx: NodeContext, device: str) -> None:
    """Have the MIDI service open the ports `device` matches; Deferred while it looks, ValueError
    (one line) when none matches."""
    service = getattr(ctx, "service", None)
    if service is None:
        return
    try:
        midi = service("midi")
    except (KeyError, RuntimeError):  # no MIDI service here, or not on the frame thread
        return
    midi.want(device)
    found = midi.inputs_matching(device)
    if found is None:
        raise Deferred(f"looking for MIDI inputs matching {device!r}")
    if not found:
        ports = ", ".join(midi.ports()) or "none"
        reasons = "".join(f"; {line}" for line in midi.errors)
        raise ValueError(f"no MIDI input matching {device!r} (ports: {ports}){reasons}")


@node(
    "midi.cc",
    determinism=USER,
    hints={"value": "live"},
    ranges={"channel": (0, 16), "control": (0, 127), "value": (0.0, 1.0)},
    docs={
        "device": "Part of the MIDI input's name; empty for any input.",
        "channel": "The MIDI channel, 1 to 16; 0 for any.",
        "control": "The controller number, 0 to 127.",
        "value": "The latest value received (written live).",
        "out": "The controller's value, from 0 to 1.",
    },
)
def midi_cc(
    ctx: NodeContext, device: str = "", channel: int = 0, control: int = 0, value: float = 0.0
) -> float:
    """The position of a MIDI knob or fader, from 0 to 1.

    `out` is the latest value of controller `control`
    on `channel` (0 = any) from the ports whose name contains `device`, from 0 to 1."""
    ask_for_device(ctx, device)
    return float(value)


@node(
    "midi.note",
    determinism=USER,
    hints={"velocity": "live"},
    ranges={"channel": (0, 16), "note": (0, 127), "velocity": (0.0, 1.0)},
    outputs={"velocity": "float", "gate": "bool"},
    docs={
        "device": "Part of the MIDI input's name; empty for any input.",
        "channel": "The MIDI channel, 1 to 16; 0 for any.",
        "note": "The note number, 0 to 127 (60 is middle C).",
        "velocity": "How hard the note was struck, from 0 to 1; 0 once released.",
        "gate": "True while the note is held.",
    },
)
def midi_note(
    ctx: NodeContext, device: str = "", channel: int = 0, note: int = 60, velocity: float = 0.0
) -> tuple[float, bool]:
    """A MIDI key or pad: how hard it was struck, and whether it is held.

    `velocity` is that of the latest note-on of `note` on `channel` (0 =
    any) from the ports whose name contains `device`, from 0 to 1, and 0 after its note-off;
    `gate` is true while it is held (velocity above 0)."""
    ask_for_device(ctx, device)
    return float(velocity), velocity > 0.0
