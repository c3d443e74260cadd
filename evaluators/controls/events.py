"""Control events: what the live-control services (OSC, MIDI) hand the frame loop each frame.

A service's I/O thread only enqueues; at the start of a frame (`begin_frame`) the service drains its
queue into the frame's list of `ControlEvent`s, in arrival order, which `take_controls()` returns
until the next frame. The controls runtime (evaluators.controls.runtime) reads them, handing each to
the control source its name's prefix names (evaluators.controls.sources), to move input nodes,
bindings and learn.

`source` names the control with the strings of nodes.document.bindings: `osc:/fader/1`,
`midi:cc:<channel 1-16>:<controller>`, `midi:note:<channel 1-16>:<note>`. `value`: for OSC the first
argument as sent (a number; None when the message had none, e.g. a bare trigger), for MIDI the
position 0..1 (CC value / 127, note-on velocity / 127, 0 for note-off). `device`: the MIDI port's
name ("" for OSC).
"""

from __future__ import annotations

from typing import NamedTuple


class ControlEvent(NamedTuple):
    source: str
    value: float | None
    device: str = ""


def osc_source(address: str) -> str:
    return f"osc:{address}"


def midi_cc_source(channel: int, control: int) -> str:
    """`channel` counted from 1, as people and controllers' manuals do."""
    return f"midi:cc:{channel}:{control}"


def midi_note_source(channel: int, note: int) -> str:
    return f"midi:note:{channel}:{note}"
