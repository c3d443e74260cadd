"""The `profile` reply: the costliest nodes of a running patch and why a node ran, from the
profiler its evaluator keeps (evaluators/insight/profiler.py, always on).

The engine answers an editor's `profile` message with it (app/engine/protocol/messages.py), in its
own process or in the editor's (app/engine/local.py); the editor's Profiler panel
(app/qt/panels/profiler.py) reads nothing else.

A cost row is `[node path, runs, self ms per frame, median ms, reason]`: runs since profiling
began, the estimated self time per profiled frame (mean measured time x runs / frames), the median
self time of one run over the profiler's ring of recent frames, and what happened to the node in
the last frame (its run's reason, or "cache hit"), else its most frequent reason. Nodes inside
subpatch instances have paths (`blob1/lfo3`); `instances` sums the self times under each instance
path (`blob1`, `blob1/inner2`) and the instance's own node's (its pins), if it has one: its
cumulative time. Only nodes the evaluator plays now are listed (the profiler remembers removed
ones too). An instance's `explain` lines start with its cumulative time and its costliest node.

GPU time: `gpu_ms` maps the listed nodes that drew to their mean GPU milliseconds per frame (GL
timer queries, evaluators/insight/gpu_timer.py); `gpu_status` is "" when the patch's draws are
timed, else why there is no GPU time ("no GL context", or the context has no timer queries): the
panel then shows "n/a".

Working the costs out reads every node's totals (about 0.1 s at 10,000 nodes), so the engine and
the editor answer through `ProfileAnswers`, which spends at most `PROFILE_BUSY_SHARE` of the time
on it: a large patch's table refreshes less often; the explain lines are always new.

Assumes the evaluator has `observer.profiler`, `patch.nodes` (the expanded graph, by path) and
`explain(node_id)`, as DualEvaluator does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from app.engine.protocol.messages import ProfileRequest
from evaluators.insight.profiler import CACHE_HIT, REASON_TEXT
from nodes import UnknownNodeError

COSTS_CAP = 500
"""At most this many cost rows in one reply."""
MAX_PATH_CHARS = 1000
PROFILE_BUSY_SHARE = 0.05
"""At most this share of the time goes to working out costs (see the module note)."""


def checked_request(message: ProfileRequest) -> tuple[str | None, int]:
    """The node and row count of a `profile` request; ValueError naming what is wrong."""
    node, top = message.node, message.top
    if node is not None and not isinstance(node, str):
        raise ValueError(f"node must be a node path or null, not {type(node).__name__}")
    if node is not None and len(node) > MAX_PATH_CHARS:
        raise ValueError(f"node path longer than {MAX_PATH_CHARS} characters")
    if isinstance(top, bool) or not isinstance(top, int):
        raise ValueError(f"top must be a whole number, not {top!r}")
    return node, max(1, min(COSTS_CAP, top))


class ProfileAnswers:
    """Answers `profile` requests where a patch runs: the costs are worked out again only once
    they are older than the time that took over `PROFILE_BUSY_SHARE` (or asked of another
    evaluator or row count); the explain lines always anew."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self._costs: tuple[float, Any, int, dict[str, Any]] | None = None  # due, evaluator, top

    def reply(self, evaluator: Any, node: str | None, top: int) -> dict[str, Any]:
        now = self.clock()
        cached = self._costs
        if cached is None or now >= cached[0] or cached[1] is not evaluator or cached[2] != top:
            costs = profile_costs(evaluator, top)
            due = now + (self.clock() - now) / PROFILE_BUSY_SHARE
            cached = self._costs = (due, evaluator, top, costs)
        return with_explain(cached[3], evaluator, node)


def profile_reply(evaluator: Any, node: str | None, top: int) -> dict[str, Any]:
    """The `profile` message: the `top` costliest nodes, the cumulative time of every instance,
    and, for `node`, its `explain` lines (see the module note)."""
    reply = profile_costs(evaluator, top)
    return with_explain(reply, evaluator, node)


def with_explain(costs: dict[str, Any], evaluator: Any, node: str | None) -> dict[str, Any]:
    """A `profile_costs` reply with the `explain` lines of `node` added (None: as it is)."""
    if node is None:
        return costs
    lines = []
    instances = dict(costs["instances"])
    if node in instances:
        inside = [row for row in costs["costs"] if row[0].startswith(f"{node}/")]
        lines.append(f"subpatch instance: its nodes take {instances[node]:.3f} ms per frame")
        if inside:
            lines.append(f"costliest inside: {inside[0][0]} ({inside[0][2]:.3f} ms per frame)")
    try:
        lines += [str(line) for line in evaluator.explain(node)]
    except (UnknownNodeError, KeyError):  # gone, or an instance with no node of its own
        if node not in instances:
            lines.append(f"{node} is not in the running patch")
    return {**costs, "explain": {"node": node, "lines": lines}}


NO_GL_CONTEXT = "no GL context"


def gpu_status(profiler: Any) -> str:
    """Empty when the profiler gets GPU times, else why not (see the module note)."""
    problem = profiler.gpu_problem
    return NO_GL_CONTEXT if problem is None else str(problem)


def profile_costs(evaluator: Any, top: int) -> dict[str, Any]:
    """The `profile` message without `explain`: the costs and instances of the module note."""
    profiler = evaluator.observer.profiler
    playing = evaluator.patch.nodes
    frames = max(1, profiler.frames_profiled)
    last = profiler.frames[-1].reasons() if profiler.frames else {}
    costs: list[list[Any]] = []
    self_ms_of: dict[str, float] = {}
    instances: dict[str, float] = {}
    top_rows: list[tuple[dict[str, Any], float]] = []
    for row in profiler.report(medians=False):
        path = row["node"]
        if path not in playing:
            continue
        self_ms = self_ms_of[path] = row["total_seconds"] * 1000.0 / frames
        if "/" in path:
            parts = path.split("/")
            for depth in range(1, len(parts)):
                prefix = "/".join(parts[:depth])
                instances[prefix] = instances.get(prefix, 0.0) + self_ms
        if len(top_rows) < top:
            top_rows.append((row, self_ms))
    medians = profiler.medians(row["node"] for row, _ in top_rows)
    for row, self_ms in top_rows:
        path, reasons = row["node"], row["reasons"]
        reason = last.get(path) or (
            max(reasons, key=reasons.__getitem__) if reasons else REASON_TEXT[CACHE_HIT]
        )
        median_ms = medians.get(path, 0.0) * 1000.0
        costs.append([path, row["runs"], round(self_ms, 4), round(median_ms, 4), reason])
    for path in instances:  # an instance's own node (its pins) counts too
        instances[path] += self_ms_of.get(path, 0.0)
    gpu_ms = profiler.gpu_ms()
    return {
        "frames": profiler.frames_profiled,
        "costs": costs,
        "gpu_ms": {row[0]: round(gpu_ms[row[0]], 4) for row in costs if row[0] in gpu_ms},
        "gpu_status": gpu_status(profiler),
        "instances": [[path, round(ms, 4)] for path, ms in sorted(instances.items())],
    }
