"""OSC nodes: `osc.in` plays a patch from an OSC surface, `osc.out` sends values to one.

Both reach the OSC service through the execution context (`ctx.service("osc")`, made on the frame
thread when the first OSC node runs; see evaluators.osc_service for the threading and the rules on
ports and sending). `osc.in` is NONDETERMINISTIC, so its downstream cone runs every frame: the
values it gives change between frames without any edit of the patch, which the cache keys of USER
nodes (made from value edits) cannot see yet.
"""

from __future__ import annotations

from typing import Any

from nodes._spec import Determinism, node

HOT = Determinism.NONDETERMINISTIC


@node(
    "osc.in",
    determinism=HOT,
    outputs={"out": "float", "trigger": "bool", "count": "int"},
)
def osc_in(ctx: Any, address: str = "/fader/1") -> tuple[float, bool, int]:
    """The latest OSC message to `address`: `out` is its first argument (a number; messages
    without one leave it as it was), `trigger` is true on one frame per message received (none
    lost: five in one frame fire on five frames), `count` is how many arrived since last frame."""
    osc = ctx.service("osc")
    osc.listen(address)
    return osc.value(address), osc.triggered(address), osc.count(address)


class SentState:
    """What `osc.out` sent last, so an unchanged value is not sent again."""

    __slots__ = ("last",)

    def __init__(self, path: str) -> None:
        self.last: tuple[Any, ...] | None = None


@node("osc.out", determinism=HOT, sink=True, init_state=SentState)
def osc_out(ctx: Any, state: SentState, in_: float = 0.0, host: str = "127.0.0.1",
            port: int = 9001, address: str = "/out") -> float:  # fmt: skip
    """Sends `in` to `host:port` at `address` whenever it (or the target) changes; `out` passes it
    on. Sends nothing unless the player allows it (`--allow-send`): the node fails saying so."""
    message = (host, int(port), address, float(in_))
    if message != state.last:
        ctx.service("osc").send(*message)
        state.last = message
    return in_
