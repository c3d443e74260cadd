"""OSC nodes: `osc.in` plays a patch from an OSC surface, `osc.out` sends values to one.

`osc.in` is a USER input: its outputs are a pure function of its pins. The controls runtime
(evaluators.controls.runtime) listens to its `address` and writes its live pins (`value`, `arrived`,
`pending`, hint "live": the inspector shows them read-only) with live value edits when messages
arrive, so only its cone reruns, and only on frames where something changed. `osc.out` reaches the
OSC service through the execution context (`ctx.service("osc")`, made on the frame thread; see
evaluators.services.osc for the threading and the rules on ports and sending). The module also
registers the grammar of `osc:` binding sources (nodes.document.bindings); the runtime's side of OSC
is evaluators.controls.osc.
"""

from __future__ import annotations

from typing import Any

from nodes.document.bindings import register_source_grammar
from nodes.spec import Determinism, NodeContext, node

HOT = Determinism.NONDETERMINISTIC
USER = Determinism.USER_INPUT
LIVE = "live"


def _is_osc_source(source: str) -> bool:
    """`osc:` and an address: printable, no spaces."""
    return source.startswith("osc:/") and source.isprintable() and " " not in source


register_source_grammar("osc", _is_osc_source, "osc:/address")


@node(
    "osc.in",
    determinism=USER,
    outputs={"out": "float", "trigger": "bool", "count": "int"},
    hints={"value": LIVE, "arrived": LIVE, "pending": LIVE},
    docs={
        "address": "The OSC address to listen to.",
        "value": "The latest number received (written live).",
        "arrived": "How many messages were taken this frame (written live).",
        "pending": "Triggers still to fire, one per frame (written live).",
        "out": "The first argument of the latest message.",
        "trigger": "True on one frame per message received.",
        "count": "How many messages arrived since the last frame.",
    },
)
def osc_in(address: str = "/fader/1", value: float = 0.0, arrived: int = 0,
           pending: int = 0) -> tuple[float, bool, int]:  # fmt: skip
    """The latest number an OSC surface sent to an address.

    `out` is the first argument of the latest message to `address` (a number; messages
    without one leave it as it was), `trigger` is true on one frame per message received (none
    lost: five in one frame fire on five frames), `count` is how many arrived since last frame.
    The live pins are written by the controls runtime: `value` (the latest number), `arrived`
    (messages taken this frame) and `pending` (triggers still to fire, one per frame)."""
    return value, pending > 0, arrived


class SentState:
    """What `osc.out` sent last, so an unchanged value is not sent again."""

    __slots__ = ("last",)

    def __init__(self, path: str) -> None:
        self.last: tuple[Any, ...] | None = None


@node(
    "osc.out",
    determinism=HOT,
    sink=True,
    init_state=SentState,
    docs={
        "in": "The number to send.",
        "host": "The receiver's host name or address.",
        "port": "The receiver's UDP port.",
        "address": "The OSC address to send to.",
        "out": "The number received, passed on.",
    },
)
def osc_out(ctx: NodeContext, state: SentState, in_: float = 0.0, host: str = "127.0.0.1",
            port: int = 9001, address: str = "/out") -> float:  # fmt: skip
    """Sends a number to an OSC receiver whenever it changes.

    It sends `in` to `host:port` at `address` whenever it (or the target) changes; `out` passes it
    on. It sends nothing unless the player allows it (`--allow-send`): the node fails saying so."""
    message = (host, int(port), address, float(in_))
    if message != state.last:
        ctx.service("osc").send(*message)
        state.last = message
    return in_
