"""The `profile` reply: the costliest nodes of a running patch and why a node ran, from the
profiler its evaluator keeps (evaluators/_profiler.py, always on).

Both places a patch runs answer with it: the engine process to an editor's `profile` message
(app/engine_protocol.py), and the editor itself for the DualEvaluator it runs without an engine;
the editor's Profiler panel (app/qt_profiler.py) reads nothing else.

A cost row is `[node path, runs, self ms per frame, median ms, reason]`: runs since profiling
began, the estimated self time per profiled frame (mean measured time x runs / frames), the median
self time of one run over the profiler's ring of recent frames, and what happened to the node in
the last frame (its run's reason, or "cache hit"), else its most frequent reason. Nodes inside
subpatch instances have paths (`blob1/lfo3`); `instances` sums the self times under each instance
path (`blob1`, `blob1/inner2`) and the instance's own node's (its pins), if it has one: its
cumulative time. Only nodes the evaluator plays now are listed (the profiler remembers removed
ones too). An instance's `explain` lines start with its cumulative time and its costliest node.

Assumes the evaluator has `observer.profiler`, `patch.nodes` (the expanded graph, by path) and
`explain(node_id)`, as DualEvaluator does.
"""

from __future__ import annotations

from typing import Any

from evaluators._profiler import CACHE_HIT, REASON_TEXT
from nodes import UnknownNodeError

COSTS_CAP = 500
"""At most this many cost rows in one reply."""


def checked_request(message: dict[str, Any]) -> tuple[str | None, int]:
    """The node and row count of a `profile` request; ValueError naming what is wrong."""
    node, top = message.get("node"), message.get("top", 50)
    if node is not None and not isinstance(node, str):
        raise ValueError(f"node must be a node path or null, not {type(node).__name__}")
    if isinstance(top, bool) or not isinstance(top, int):
        raise ValueError(f"top must be a whole number, not {top!r}")
    return node, max(1, min(COSTS_CAP, top))


def profile_reply(evaluator: Any, node: str | None, top: int) -> dict[str, Any]:
    """The `profile` message: the `top` costliest nodes, the cumulative time of every instance,
    and, for `node`, its `explain` lines (see the module note)."""
    profiler = evaluator.observer.profiler
    playing = evaluator.patch.nodes
    frames = max(1, profiler.frames_profiled)
    last = profiler.frames[-1].reasons() if profiler.frames else {}
    costs: list[list[Any]] = []
    self_ms_of: dict[str, float] = {}
    instances: dict[str, float] = {}
    for row in profiler.report():
        path = row["node"]
        if path not in playing:
            continue
        self_ms = self_ms_of[path] = row["total_seconds"] * 1000.0 / frames
        if "/" in path:
            parts = path.split("/")
            for depth in range(1, len(parts)):
                prefix = "/".join(parts[:depth])
                instances[prefix] = instances.get(prefix, 0.0) + self_ms
        if len(costs) < top:
            reasons: dict[str, int] = row["reasons"]
            reason = last.get(path) or (
                max(reasons, key=reasons.__getitem__) if reasons else REASON_TEXT[CACHE_HIT]
            )
            median_ms = row["median_seconds"] * 1000.0
            costs.append([path, row["runs"], round(self_ms, 4), round(median_ms, 4), reason])
    for path in instances:  # an instance's own node (its pins) counts too
        instances[path] += self_ms_of.get(path, 0.0)
    reply: dict[str, Any] = {
        "type": "profile",
        "frames": profiler.frames_profiled,
        "costs": costs,
        "instances": [[path, round(ms, 4)] for path, ms in sorted(instances.items())],
    }
    if node is not None:
        lines = []
        if node in instances:
            inside = [row for row in costs if row[0].startswith(f"{node}/")]
            lines.append(f"subpatch instance: its nodes take {instances[node]:.3f} ms per frame")
            if inside:
                lines.append(f"costliest inside: {inside[0][0]} ({inside[0][2]:.3f} ms per frame)")
        try:
            lines += [str(line) for line in evaluator.explain(node)]
        except (UnknownNodeError, KeyError):  # gone, or an instance with no node of its own
            if node not in instances:
                lines.append(f"{node} is not in the running patch")
        reply["explain"] = {"node": node, "lines": lines}
    return reply
