"""What a client of a running patch sees: the `Evaluator` protocol and its vocabulary.

The lazy, flat and dual evaluators are strategies behind one interface, and whatever runs a patch
elsewhere (an engine process seen through a proxy) offers the same interface, so the editor and
the player never need to know which one they hold. The protocol is kept to what a client uses:
run a frame, read outputs, statuses, classes and errors, know the mode and the timings, say which
nodes to watch, close. Counters for tests and benchmarks (`nodes_run`) and the execution context
are not part of it: a remote evaluator has neither.

Statuses, classes and modes are `StrEnum`s: members are strings (equal to, and hashing like, their
values), so they cross a JSON channel unchanged and code that compares with plain strings keeps
working; `NodeStatus("ok")` validates text coming from outside.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable


class NodeStatus(StrEnum):
    """What happened to a node in the last frame."""

    IDLE = "idle"  # not needed by any sink or watched node
    OK = "ok"  # ran this frame
    CACHED = "cached"  # needed, and served from its cached result (CONST/USER)
    FAILED = "failed"  # raised; the last good outputs stand
    DEFERRED = "deferred"  # working in the background; the previous outputs stand


class NodeClass(StrEnum):
    """How often a node runs, from its own determinism and its ancestors' (see `_analysis`)."""

    CONST = "CONST"  # deterministic all the way up: runs once, then cached
    USER = "USER"  # depends on user inputs (and constants): runs when one changes
    HOT = "HOT"  # non-deterministic itself or upstream: runs every frame


class EvaluatorMode(StrEnum):
    """How the evaluator runs frames now (the dual evaluator switches between the two)."""

    LAZY = "lazy"
    FLAT = "flat"


@runtime_checkable
class Evaluator(Protocol):
    """A running patch as its clients see it (editor, player, tools)."""

    @property
    def mode(self) -> EvaluatorMode:
        """Lazy or flat, for the status bar."""
        ...

    @property
    def last_frame_seconds(self) -> float:
        """Wall time the last `run_frame` took."""
        ...

    @property
    def last_build_seconds(self) -> float:
        """Wall time the last flat build took (0.0 when nothing was ever built)."""
        ...

    def run_frame(self, t: float, frame: int) -> None:
        """Evaluate one frame at clock `t`; never raises because of a node."""
        ...

    def output(self, node_id: str, pin: str = "out") -> Any:
        """The value of an output pin as of the last frame (the last good value if it failed)."""
        ...

    def status(self, node_id: str) -> NodeStatus: ...

    def node_class(self, node_id: str) -> NodeClass: ...

    def error(self, node_id: str) -> str | None:
        """The one-line error of a failed node, else None."""
        ...

    def watch(self, node_ids: Iterable[str]) -> None:
        """Also evaluate these nodes every frame (previews, inspected pins); replaces the set."""
        ...

    def close(self) -> None:
        """Stop background work and let go of the patch; the evaluator is not used again."""
        ...
