"""The frame observer: what happened to each node in the last frame, for every evaluator.

A `FrameObserver` owns the statuses of this frame, the errors of failed nodes and the count of
compute calls. The lazy walker and flat programs write into its dictionaries directly (no call per
node: the lazy walker's inner loop and the flat HOT loop stay as they are), and read back
statuses through it, so the rules below are written once:

- a bypassed node is FAILED, whatever else happened;
- a node the frame reported on has the status it reported;
- a needed node the frame did not report on was served from its cached result if it is CONST or
  USER (CACHED, or FAILED when that result is an error), and ran if it is HOT (OK); a node nothing
  needed is IDLE;
- a FAILED node's error is its bypass message, else the error it reported, else its cached one.

Everything is keyed by node id. The dictionaries are made once and never replaced (writers may
keep references to them); `begin_frame` and `forget` empty them. The dual evaluator shares one
observer between its lazy half and its programs, so `nodes_run` counts all of them.

It also holds the evaluator's `profiler` (evaluators/insight/profiler.py), which writers read
through it at every frame, so a profiler set in its place (with other settings) takes over at the
next frame.
"""

from __future__ import annotations

from collections.abc import Mapping

from evaluators.insight.profiler import Profiler
from evaluators.protocol import NodeStatus

IDLE, OK, CACHED = NodeStatus.IDLE, NodeStatus.OK, NodeStatus.CACHED
FAILED = NodeStatus.FAILED


class FrameObserver:
    """Statuses, errors and run counts of the frames an evaluator runs; see the module note."""

    __slots__ = ("derived", "errors", "nodes_run", "profiler", "status")

    def __init__(self) -> None:
        self.status: dict[str, NodeStatus] = {}  # reported this frame by whatever ran the node
        self.derived: dict[str, NodeStatus] = {}  # worked out for nodes not reported, once asked
        self.errors: dict[str, str] = {}  # the error a node reported when it last failed
        self.nodes_run = 0  # compute calls so far, for tests and benchmarks
        self.profiler = Profiler()  # why and how long nodes ran, frame by frame

    def begin_frame(self) -> None:
        self.status.clear()
        self.derived.clear()

    def forget(self) -> None:
        """Drop statuses and errors (a new program takes over; the run count goes on)."""
        self.begin_frame()
        self.errors.clear()

    def reported(self, node_id: str, bypassed: Mapping[str, str]) -> NodeStatus | None:
        """FAILED for a bypassed node, else the status reported or derived this frame, if any."""
        if node_id in bypassed:
            return FAILED
        return self.status.get(node_id) or self.derived.get(node_id)

    def error(
        self, node_id: str, status: NodeStatus, bypassed: Mapping[str, str], cached: str | None
    ) -> str | None:
        """The error of a node with `status` (None unless FAILED); `cached`: the error kept with
        its cached result, if any."""
        if status != FAILED:
            return None
        return bypassed.get(node_id) or self.errors.get(node_id) or cached


def unreported_status(needed: bool, cold: bool, failed: bool) -> NodeStatus:
    """The status of a node the frame did not report on: IDLE if nothing needed it, else served
    from its cache when `cold` (CONST/USER; FAILED if the cached result is an error), else OK."""
    if not needed:
        return IDLE
    if cold:
        return FAILED if failed else CACHED
    return OK
