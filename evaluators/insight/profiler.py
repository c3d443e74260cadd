"""The profiler: why each node ran, when, and for how long, kept for the last frames.

Every evaluator owns one through its `FrameObserver` (the dual evaluator's lazy half and its flat
programs share it). A frame is `begin(frame)`, what ran, then `end()`:

- individual runs (the lazy walker's nodes, a flat program's CONST/USER and pulled nodes) are
  recorded by `ran(node_id, started, seconds, reason, detail, phase)`; the walker times each node
  already (evaluators/run/context.py `busy_clock`), so a run costs four list entries more, turned
  into numpy arrays when the frame ends;
- a flat program's HOT step list is one `hot_ran(...)` a frame. Its reasons are static per
  program (`HotSteps`, made when the lists are assembled). Timing each step costs several times
  the untimed frame on a list of cheap nodes (a clock read a step, and the step loop instead of
  the generated code), so the steps are timed one by one only on sampled frames (`timing`): the
  first, the frame after a frame over `budget` (at most once every `sample_every` frames), and
  one every `sample_period()` frames; other frames record the list's total time and count a run
  for each node. The period is `sample_every`, stretched so that the extra time of a sampled
  frame (its HOT list's time less the moving mean of the untimed lists, where a list counts as
  twice that mean at most, so a frame the system held up does not shorten it) spread over the
  period stays under `max_overhead` of an untimed list's time, and at most a quarter of the
  ring (so the ring keeps several sampled frames for the medians); `max_overhead = None` keeps
  it fixed, and `sample_every = 1` times every frame (`patchbay profile`). Per-node means and
  medians come from the sampled frames, so a longer period gives fewer samples, not biased
  ones;
- cache hits: the nodes a frame served from their cached result (`hits`): where the lazy walk
  stopped at a cached node; in a flat program every clean CONST/USER node it holds.

Why a CONST/USER node ran (`cause`): it never ran before ("first run"); its own stamp changed by a
value edit ("value edited", or "user input changed" when the edit was live: `PatchEvent.live`) or
by a link made or removed at an input ("input changed"); the cache key of a source changed ("input
changed", naming the pin and the source; "user input changed" when that source ran for one);
`retry` ran it ("forced"); nothing about it changed but its result was gone ("program swapped" in
a new program's first frame, else "cache evicted"). HOT nodes run every frame ("HOT", or
"non-deterministic" for the sources of time and noise themselves); `hot_chain` finds the path to
the source when asked.

Times are self times: what a node's lazy inputs evaluated while it ran (pulled nodes are recorded
on their own) is taken off its time (`since`, `nested_seconds`, and `hot_ran` for a flat HOT
step).

GPU time per node: when a sampled frame (as for HOT steps) runs with a GL service
(`begin(frame, gpu)`), the service times each node's draws with GL timer queries
(evaluators/insight/gpu_timer.py) and hands the times over at least three frames later, when they
are ready, never waiting for the GPU; `end()` picks up those that are in and files them under the
frame they were measured in (`FrameRecord.gpu`, and per-node totals: `gpu_ms`). `gpu_problem`
says why there are none: None when no frame had a GL service, "" when the service times draws,
else the reason (the context has no timer queries).

Kept: the last `frames` frame records (a ring), the frames longer than `budget` (the last
`keep_over_budget` of them), and per node since the start: runs and hits by reason, measured
seconds and the number of measured runs (numpy arrays indexed by interned node ids). Totals and
medians are worked out when asked (`report`), never per frame. Timestamps are `busy_clock`
seconds (a clock that stops while the garbage collector runs).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from itertools import compress
from operator import ne
from typing import Any

import numpy as np

from evaluators.run.context import busy_clock
from nodes import EditOp

# Reasons, as small integers (they index the per-node count table).
FIRST_RUN, INPUT_CHANGED, VALUE_EDITED, USER_INPUT_CHANGED = 0, 1, 2, 3
HOT_RUN, NONDETERMINISTIC, CACHE_EVICTED, PROGRAM_SWAPPED = 4, 5, 6, 7
FORCED, CACHE_HIT = 8, 9
REASON_TEXT = (
    "first run",
    "input changed",
    "value edited",
    "user input changed",
    "HOT",
    "non-deterministic",
    "cache evicted",
    "program swapped",
    "forced",
    "cache hit",
)
RUN_REASONS = tuple(range(CACHE_HIT))  # every reason but the hit: what counts as a run

# Frame phases: one track each in a trace.
PHASES = ("lazy", "cold", "hot", "pulled")
LAZY_PHASE, COLD_PHASE, HOT_PHASE, PULLED_PHASE = PHASES

Signature = tuple[int, tuple[tuple[str, str | None, int], ...]]
"""What a CONST/USER node's result depends on: its stamp and, per linked input pin, (pin, source
node, source cache key)."""

Run = tuple[str, float, float, int, str | None, str]
"""(node id, start, seconds, reason, detail, phase)"""


class HotSteps:
    """What a flat step list records: per step the node it belongs to, its reason, and whether
    it is the node's first (compute) step; made once per list."""

    __slots__ = ("first", "indices", "node_ids", "nodes", "reasons", "unique_indices")

    def __init__(self, node_ids: Sequence[str], reasons: Sequence[int]) -> None:
        self.node_ids = list(node_ids)
        self.reasons = np.asarray(reasons, dtype=np.int64)
        first = list(map(ne, self.node_ids, [None, *self.node_ids[:-1]]))
        self.first = np.asarray(first, dtype=bool)
        self.nodes = list(compress(self.node_ids, first))
        self.indices: np.ndarray | None = None  # interned by the profiler on first use
        self.unique_indices: np.ndarray | None = None


class FrameRecord:
    """One profiled frame: see the module note.

    Individual runs are collected as node id, start, seconds, reason, in one flat list, while the
    frame runs (`pending`) and kept as compact arrays after it (`nodes`: interned node ids,
    `starts`: seconds from the frame's start, `times`, `reasons_run`), so a ring of frames holds
    few Python objects. `extras`: per run position, the
    detail and phase of runs that have one (the lazy walker's HOT runs have none)."""

    __slots__ = (
        "extras",
        "frame",
        "gpu",
        "hits",
        "hits_seen",
        "hot",
        "hot_seconds",
        "hot_started",
        "hot_starts",
        "hot_times",
        "names",
        "nodes",
        "pending",
        "reasons_run",
        "replayed",
        "seconds",
        "started",
        "starts",
        "times",
    )

    def __init__(self, frame: int, started: float, names: list[str]) -> None:
        self.frame = frame
        self.started = started
        self.seconds = 0.0
        self.names = names  # the profiler's interned node ids (only ever appended to)
        self.pending: list[Any] = []  # node id, start, seconds, reason, ...: the frame's runs
        self.extras: dict[int, tuple[str | None, str]] = {}
        # Runs a lazy replay handed over in one go, before the pending ones: interned node ids,
        # reasons, starts, seconds.
        self.replayed: tuple[np.ndarray, np.ndarray, list[float], list[float]] | None = None
        self.nodes = _NO_INDICES  # after the frame
        self.starts = _NO_SECONDS
        self.times = _NO_SECONDS
        self.reasons_run = _NO_REASONS
        self.hits: Sequence[str] = ()  # a flat program's clean nodes (shared, not copied)
        self.hits_seen: list[str] = []  # nodes served from their cache one by one
        self.hot: HotSteps | None = None
        self.hot_started = 0.0
        self.hot_seconds = 0.0
        self.hot_starts: np.ndarray | None = None  # per step, on sampled frames only
        self.hot_times: np.ndarray | None = None
        # GPU seconds per node, filled in a few frames later (None until then, or never).
        self.gpu: dict[str, float] | None = None

    def runs(self) -> list[Run]:
        """(node id, start, seconds, reason, detail, phase) of each individual run."""
        return [
            (self.names[int(i)], self.started + float(start), float(seconds), int(reason),
             *self.extras.get(k, (None, LAZY_PHASE)))
            for k, (i, start, seconds, reason) in enumerate(
                zip(self.nodes, self.starts, self.times, self.reasons_run, strict=True)
            )
        ]  # fmt: skip

    def reasons(self) -> dict[str, str]:
        """Node id -> what happened to it this frame, in words (a run's reason, or "cache hit")."""
        found = dict.fromkeys([*self.hits, *self.hits_seen], REASON_TEXT[CACHE_HIT])
        if self.hot is not None:
            for node_id, reason in zip(self.hot.node_ids, self.hot.reasons, strict=True):
                found[node_id] = REASON_TEXT[reason]
        for i, reason in zip(self.nodes.tolist(), self.reasons_run.tolist(), strict=True):
            found[self.names[i]] = REASON_TEXT[reason]
        return found

    def samples(self) -> tuple[np.ndarray, np.ndarray]:
        """Interned node ids and seconds of every node run timed in this frame (a node's first
        step only, in a flat HOT list)."""
        if self.hot is None or self.hot_times is None or self.hot.indices is None:
            return self.nodes, self.times
        first = self.hot.first
        return (
            np.concatenate([self.nodes, self.hot.indices[first]]),
            np.concatenate([self.times, self.hot_times[first]]),
        )


def _floats(values: Sequence[float]) -> np.ndarray:
    """A list of Python floats as a float64 array (`np.fromiter` with the count given is the
    quickest way for the lists of thousands a lazy frame records)."""
    return np.fromiter(values, np.float64, len(values))


_NO_INDICES = np.zeros(0, dtype=np.int32)
_NO_SECONDS = np.zeros(0, dtype=np.float32)
_NO_REASONS = np.zeros(0, dtype=np.uint8)


class Profiler:
    """Records node runs frame by frame; see the module note."""

    def __init__(
        self,
        frames: int = 600,
        budget: float = 1.0 / 60.0,
        sample_every: int = 32,
        keep_over_budget: int = 100,
        max_overhead: float | None = 0.03,
    ) -> None:
        self.enabled = True
        self.budget = budget
        self.sample_every = max(1, sample_every)
        self.max_overhead = max_overhead
        self.frames: deque[FrameRecord] = deque(maxlen=frames)
        self.over_budget: deque[FrameRecord] = deque(maxlen=keep_over_budget)
        self.frames_profiled = 0
        self.frame = -1  # the frame number of the last frame begun
        self.current: FrameRecord | None = None
        self.timing = False  # time this frame's HOT steps one by one
        self.fresh_program = False  # this frame is a flat program's first
        self._time_next = True  # the first frame is sampled
        self._forced_at = 0  # the last frame a frame over budget had the next one timed
        self._sampled_at = 0  # the last frame timed step by step (counted in frames profiled)
        self._untimed_hot = 0.0  # mean seconds of an untimed HOT list (moving average)
        self._timed_hot = 0.0  # seconds of the last HOT list timed step by step
        self._stretched = 1  # the period that keeps sampling under `max_overhead`
        self._ids: dict[str, int] = {}
        self._names: list[str] = []
        self._counts = np.zeros((64, len(REASON_TEXT)), dtype=np.int64)
        self._measured = np.zeros(64)
        self._timed = np.zeros(64, dtype=np.int64)
        self._pending_hot: HotSteps | None = None  # HOT runs counted later, frames at a time
        self._pending_hot_frames = 0
        self._pending_hits: Sequence[str] | None = None
        self._pending_hit_frames = 0
        self._last_frame = np.full(64, -1, dtype=np.int64)  # per node: frame of its last run
        self._last_reason = np.zeros(64, dtype=np.int64)
        self._last_detail: dict[int, str | None] = {}
        self.signatures: dict[str, Signature] = {}
        self.edits: dict[str, tuple[set[str], bool]] = {}  # value edits not run yet: pins, live
        self.forced: set[str] = set()
        self._user_changed: set[str] = set()  # ran this frame for a user input
        self._gpu: Any = None  # the GL service timing this frame's draws, if any
        self.gpu_problem: str | None = None  # see the module note
        self.gpu_frames = 0  # frames whose GPU times came in
        self._gpu_seconds: dict[str, float] = {}  # per node, over those frames

    # ----------------------------------------------------------------- edits
    def on_event(self, event: Any) -> None:
        """Note value edits (and whether they were live) until the edited node runs."""
        if event.op == EditOp.SET_VALUE and event.node_id is not None:
            pins, live = self.edits.get(event.node_id, (set(), True))
            pins.add(event.pin or "")
            self.edits[event.node_id] = (pins, live and bool(event.live))
        elif event.op == EditOp.REMOVE_NODE and event.node_id is not None:
            self.edits.pop(event.node_id, None)
            self.signatures.pop(event.node_id, None)
            i = self._ids.get(event.node_id)
            if i is not None:
                self._last_frame[i] = -1  # a node added with this id has not run yet
                self._last_detail.pop(i, None)

    def force(self, node_id: str) -> None:
        """`retry(node_id)` was asked: its next run is "forced"."""
        self.forced.add(node_id)

    # ----------------------------------------------------------------- frames
    def begin(self, frame: int, gpu: Any = None) -> None:
        """Start profiling `frame`; `gpu`: the GL service the frame draws with, if any (its
        draws are timed per node while the profiler is enabled)."""
        if gpu is not None or self._gpu is not None:
            self._time_gpu(gpu)
        if not self.enabled:
            self.current = None
            self.timing = False
            return
        self.frame = frame
        self.current = FrameRecord(frame, busy_clock(), self._names)
        self.frames_profiled += 1
        self.timing = (
            self._time_next or self.frames_profiled - self._sampled_at >= self.sample_period()
        )
        if self.timing:
            self._sampled_at = self.frames_profiled
        self._time_next = False
        if self._gpu is not None:
            self._gpu.time_nodes((self, self.current) if self.timing else None)
        self._user_changed.clear()

    def end(self) -> None:
        record = self.current
        if record is None:
            return
        self.current = None
        record.seconds = busy_clock() - record.started
        self.frames.append(record)
        if record.seconds > self.budget:
            self.over_budget.append(record)
            if not self.timing and self.frames_profiled - self._forced_at >= self.sample_every:
                self._time_next = True  # the next frame shows which HOT step it was
                self._forced_at = self.frames_profiled
        self.forced.clear()
        if self._gpu is not None:
            for (profiler, measured), times in self._gpu.node_gpu_times():
                if profiler is self:  # not a frame of a profiler this one replaced
                    self._add_gpu(measured, times)
        if record.pending or record.replayed is not None:
            self._fold_runs(record)
        for node_id in record.hits_seen:
            i = self._ids.get(node_id)
            self._counts[self._intern(node_id) if i is None else i, CACHE_HIT] += 1
        if record.hits:
            if record.hits is not self._pending_hits:
                self._flush_hits()
                self._pending_hits = record.hits
            self._pending_hit_frames += 1
        hot = record.hot
        if hot is not None:
            if hot is not self._pending_hot:
                self._flush_hot()
                self._pending_hot = hot
            self._pending_hot_frames += 1
            if record.hot_times is not None:
                indices, unique = self._hot_indices(hot)
                size = len(self._measured)
                self._measured += np.bincount(indices, record.hot_times, size)
                self._timed[unique] += 1
            self._adapt_period(record)

    def sample_period(self) -> int:
        """Frames from one sampled frame to the next: see the module note."""
        if self.max_overhead is None:
            return self.sample_every
        longest = max(self.sample_every, (self.frames.maxlen or 0) // 4)
        return min(max(self.sample_every, self._stretched), longest)

    def _adapt_period(self, record: FrameRecord) -> None:
        """Follow the time of the last timed HOT list and the mean time of an untimed one, and
        stretch the period so that the extra time of a sampled frame, spread over the period,
        stays under `max_overhead`."""
        if record.hot_times is not None:
            self._timed_hot = record.hot_seconds
        elif self._untimed_hot == 0.0:
            self._untimed_hot = record.hot_seconds
        else:  # a frame the system held up counts as twice the mean at most
            seconds = min(record.hot_seconds, 2.0 * self._untimed_hot)
            self._untimed_hot += (seconds - self._untimed_hot) / 8.0
        if self.max_overhead and self._untimed_hot > 0.0:
            extra = self._timed_hot - self._untimed_hot
            self._stretched = max(1, math.ceil(extra / (self.max_overhead * self._untimed_hot)))

    def _time_gpu(self, gpu: Any) -> None:
        """Follow the GL service of this frame: stop timing on one that is no longer used, or
        when profiling is off; note whether the new one can time draws."""
        timing = gpu if self.enabled and callable(getattr(gpu, "time_nodes", None)) else None
        previous = self._gpu
        if previous is not None and previous is not timing:
            previous.time_nodes(None)
        if timing is not None and timing is not previous:
            self.gpu_problem = str(timing.node_timing_problem())
            if self.gpu_problem:
                timing = None
        self._gpu = timing

    def _add_gpu(self, record: FrameRecord, times: dict[str, float]) -> None:
        """File a frame's GPU times (see the module note)."""
        record.gpu = times
        self.gpu_frames += 1
        totals = self._gpu_seconds
        for node_id, seconds in times.items():
            totals[node_id] = totals.get(node_id, 0.0) + seconds

    def gpu_ms(self) -> dict[str, float]:
        """Mean GPU milliseconds per frame of each node that drew, over the (sampled) frames whose
        GPU times came in (empty when there are none: see `gpu_problem`)."""
        frames = max(1, self.gpu_frames)
        return {node: seconds * 1e3 / frames for node, seconds in self._gpu_seconds.items()}

    def _fold_runs(self, record: FrameRecord) -> None:
        """Turn a frame's run lists into arrays and add them to the per-node totals."""
        pending, record.pending = record.pending, []
        ids, starts, times, codes = pending[0::4], pending[1::4], pending[2::4], pending[3::4]
        indices = list(map(self._ids.get, ids))
        if None in indices:
            indices = [self._intern_id(n) for n in ids]
        nodes = np.asarray(indices, dtype=np.int32)
        reasons = np.asarray(codes, dtype=np.uint8)
        seconds = _floats(times)
        starts_at = _floats(starts)
        if record.replayed is not None:
            before, before_reasons, before_starts, before_times = record.replayed
            record.replayed = None
            nodes = np.concatenate([before, nodes])
            reasons = np.concatenate([before_reasons, reasons])
            starts_at = np.concatenate([_floats(before_starts), starts_at])
            seconds = np.concatenate([_floats(before_times), seconds])
            record.extras = {k + len(before): extra for k, extra in record.extras.items()}
        record.nodes, record.reasons_run = nodes, reasons
        record.starts = (starts_at - record.started).astype(np.float32)
        record.times = seconds.astype(np.float32)
        # np.add.at touches only the cells of the frame's runs (a bincount makes and adds an
        # array the size of the whole table, each frame)
        cells = nodes.astype(np.int64) * self._counts.shape[1] + reasons
        np.add.at(self._counts.reshape(-1), cells, 1)
        np.add.at(self._measured, nodes, seconds)
        np.add.at(self._timed, nodes, 1)
        self._last_frame[nodes] = record.frame
        self._last_reason[nodes] = reasons
        for k, (detail, _) in record.extras.items():
            self._last_detail[int(nodes[k])] = detail

    def ran(
        self, node_id: str, started: float, seconds: float, reason: int, detail: str | None,
        phase: str,
    ) -> None:  # fmt: skip
        """One node run (not a flat HOT list: `hot_ran`). The lazy walker appends its HOT runs
        to `current.pending` itself (no detail, the lazy phase)."""
        record = self.current
        if record is not None:
            record.extras[len(record.pending) // 4] = (detail, phase)
            if reason == USER_INPUT_CHANGED:
                self._user_changed.add(node_id)
            record.pending += (node_id, started, seconds, reason)

    def run_indices(self, node_ids: Sequence[str]) -> np.ndarray:
        """Interned ids of `node_ids`, for `replayed` (valid for this profiler only)."""
        return self._indices(node_ids).astype(np.int32)

    def replayed(
        self, nodes: np.ndarray, reasons: np.ndarray, starts: list[float], times: list[float]
    ) -> None:
        """A lazy replay's runs in one go (before any other run of the frame): interned node
        ids (`run_indices`), reasons, starts and seconds; counted as lazy runs."""
        record = self.current
        if record is not None:
            record.replayed = (nodes, reasons, starts, times)

    def since(self) -> int:
        """A mark in this frame's runs: `nested_seconds(mark)` sums the runs recorded after it."""
        record = self.current
        return len(record.pending) if record is not None else 0

    def nested_seconds(self, mark: int) -> float:
        """Seconds of the runs recorded since `mark` (each a self time, so their sum is the whole
        time they took)."""
        record = self.current
        if record is None or len(record.pending) <= mark:
            return 0.0
        return float(sum(record.pending[mark + 2 :: 4]))

    def hit(self, node_id: str) -> None:
        """`node_id` was served from its cache (the lazy walker stopped there, or a flat program
        took an identical node's result)."""
        record = self.current
        if record is not None:
            record.hits_seen.append(node_id)

    def hits_served(self, node_ids: Sequence[str]) -> None:
        """A flat program served these nodes from their cached results (the same sequence
        object frame after frame while nothing changes: it is counted, not copied)."""
        record = self.current
        if record is not None:
            record.hits = node_ids

    def hot_ran(
        self, steps: HotSteps, started: float, seconds: float,
        starts: np.ndarray | None = None, times: np.ndarray | None = None, mark: int = 0,
    ) -> None:  # fmt: skip
        """A flat HOT list ran: in `seconds` as a whole, and per step when it was timed; runs
        recorded since `mark` were pulled by its steps (their time is taken off the step whose
        interval they started in)."""
        record = self.current
        if record is None:
            return
        record.hot = steps
        record.hot_started = started
        record.hot_seconds = seconds
        if times is not None and starts is not None:
            pulled = record.pending[mark:]
            if pulled:
                at = np.searchsorted(starts, np.asarray(pulled[1::4]), side="right") - 1
                np.subtract.at(times, np.clip(at, 0, len(times) - 1), np.asarray(pulled[2::4]))
            record.hot_starts = starts
            record.hot_times = times

    def cause(self, node_id: str, signature: Signature) -> tuple[int, str | None]:
        """Why a CONST/USER node runs now, and a detail (the pin, the source): see the module
        note. Remembers `signature` for its next run."""
        previous = self.signatures.get(node_id)
        self.signatures[node_id] = signature
        edit = self.edits.pop(node_id, None)
        if node_id in self.forced:
            return FORCED, None
        if previous is None:
            return FIRST_RUN, None
        stamp, sources = signature
        if previous[0] != stamp and edit is not None:
            pins, live = edit
            return (USER_INPUT_CHANGED if live else VALUE_EDITED), ", ".join(sorted(pins))
        before = {pin: (src, key) for pin, src, key in previous[1]}
        for pin, src, key in sources:
            if before.get(pin) != (src, key):
                if before.get(pin, (None,))[0] != src:
                    return INPUT_CHANGED, f"{pin}: link changed"
                code = USER_INPUT_CHANGED if src in self._user_changed else INPUT_CHANGED
                return code, f"{pin} from {src}"
        if previous[0] != stamp or len(previous[1]) != len(sources):
            return INPUT_CHANGED, "link changed"
        return (PROGRAM_SWAPPED if self.fresh_program else CACHE_EVICTED), None

    # ----------------------------------------------------------------- queries
    def _intern(self, node_id: str) -> int:
        i = self._ids[node_id] = len(self._names)
        self._names.append(node_id)
        if i >= len(self._measured):
            self._counts = np.concatenate([self._counts, np.zeros_like(self._counts)])
            self._measured = np.concatenate([self._measured, np.zeros_like(self._measured)])
            self._timed = np.concatenate([self._timed, np.zeros_like(self._timed)])
            self._last_frame = np.concatenate(
                [self._last_frame, np.full_like(self._last_frame, -1)]
            )
            self._last_reason = np.concatenate(
                [self._last_reason, np.zeros_like(self._last_reason)]
            )
        return i

    def _intern_id(self, node_id: str) -> int:
        i = self._ids.get(node_id)
        return self._intern(node_id) if i is None else i

    def _indices(self, node_ids: Iterable[str]) -> np.ndarray:
        names = node_ids if isinstance(node_ids, list) else list(node_ids)
        ids = self._ids
        for name in [name for name in dict.fromkeys(names) if name not in ids]:
            self._intern(name)
        return np.fromiter(map(ids.__getitem__, names), dtype=np.int64, count=len(names))

    def know(self, hot: HotSteps) -> None:
        """A new step list is about to run: intern its nodes and count what the lists before it
        ran, now (between frames), not in the first frame it runs."""
        self._hot_indices(hot)
        self._flush_hot()
        self._flush_hits()

    def _hot_indices(self, hot: HotSteps) -> tuple[np.ndarray, np.ndarray]:
        """Interned ids of a step list's nodes: per step, and per node."""
        if hot.indices is None or hot.unique_indices is None:
            hot.indices = self._indices(hot.node_ids)
            hot.unique_indices = self._indices(hot.nodes)
        return hot.indices, hot.unique_indices

    def _flush_hot(self) -> None:
        hot, count = self._pending_hot, self._pending_hot_frames
        self._pending_hot, self._pending_hot_frames = None, 0
        if hot is None or not count:
            return
        _, unique = self._hot_indices(hot)
        self._counts[unique, hot.reasons[hot.first]] += count

    def _flush_hits(self) -> None:
        hits, count = self._pending_hits, self._pending_hit_frames
        self._pending_hits, self._pending_hit_frames = None, 0
        if hits is None or not count:
            return
        np.add.at(self._counts[:, CACHE_HIT], self._indices(hits), count)

    def counts(self, node_id: str) -> dict[str, int]:
        """Runs by reason and hits of a node since profiling began (reason text -> count)."""
        self._flush_hot()
        self._flush_hits()
        i = self._ids.get(node_id)
        if i is None:
            return {}
        return {REASON_TEXT[r]: int(n) for r, n in enumerate(self._counts[i]) if n}

    def medians(self, node_ids: Iterable[str] | None = None) -> dict[str, float]:
        """Median measured self seconds per node over the frames in the ring (of `node_ids`
        only, when given: sorting every sample of a large patch takes a while)."""
        pairs = [record.samples() for record in self.frames]
        if not pairs:
            return {}
        nodes = np.concatenate([nodes for nodes, _ in pairs])
        seconds = np.concatenate([seconds for _, seconds in pairs]).astype(np.float64)
        if node_ids is not None:
            wanted = [self._ids[n] for n in node_ids if n in self._ids]
            keep = np.isin(nodes, np.asarray(wanted, dtype=nodes.dtype))
            nodes, seconds = nodes[keep], seconds[keep]
        if not len(nodes):
            return {}
        order = np.argsort(seconds)
        order = order[np.argsort(nodes[order], kind="stable")]  # by node, each group by time
        nodes, seconds = nodes[order], seconds[order]
        starts = np.flatnonzero(np.r_[True, np.diff(nodes) != 0])
        sizes = np.diff(np.r_[starts, len(nodes)])
        middle = (seconds[starts + (sizes - 1) // 2] + seconds[starts + sizes // 2]) / 2.0
        names = self._names
        return {
            names[node]: value
            for node, value in zip(nodes[starts].tolist(), middle.tolist(), strict=True)
        }

    def report(self, top: int | None = None, medians: bool = True) -> list[dict[str, Any]]:
        """The costliest nodes first: per node its runs, cache hits, runs by reason, measured
        runs and seconds, median self time (0 unless `medians`: `medians()` gives them for the
        nodes wanted), estimated total (mean measured time x runs) and GPU milliseconds per
        frame (`gpu_ms`; None for a node with no GPU time)."""
        self._flush_hot()
        self._flush_hits()
        median_of = self.medians() if medians else {}
        gpu_ms = self.gpu_ms()
        rows: list[dict[str, Any]] = []
        for i, node_id in enumerate(self._names):
            counts = self._counts[i]
            runs = int(counts[list(RUN_REASONS)].sum())
            timed = int(self._timed[i])
            measured = float(self._measured[i])
            rows.append(
                {
                    "node": node_id,
                    "runs": runs,
                    "hits": int(counts[CACHE_HIT]),
                    "reasons": {REASON_TEXT[r]: int(counts[r]) for r in RUN_REASONS if counts[r]},
                    "timed_runs": timed,
                    "measured_seconds": measured,
                    "median_seconds": median_of.get(node_id, 0.0),
                    "total_seconds": measured / timed * runs if timed else 0.0,
                    "gpu_ms": gpu_ms.get(node_id),
                }
            )
        rows.sort(key=lambda row: (-row["total_seconds"], -row["runs"], row["node"]))
        return rows if top is None else rows[:top]

    def explain(
        self,
        node_id: str,
        cls: str,
        chain: list[str],
        source_type: str,
        status: str,
        bypassed: str | None,
        frame: int,
    ) -> list[str]:
        """The reason chain of a node in plain words. `chain`: for a HOT node, the path from the
        non-deterministic source to it (`hot_chain`), whose type is `source_type`; `status`: its
        status in the last frame, `frame`."""
        lines = []
        if cls == "HOT":
            if len(chain) <= 1:
                lines.append(f"non-deterministic: {source_type} runs every frame")
            else:
                # The path from the cause down to this node, which it does not name again.
                path = " -> ".join([*chain[:-1], "this node"])
                lines.append(
                    f"HOT because it depends on {source_type}, which runs every frame: {path}"
                )
        elif cls == "USER":
            lines.append("USER: runs again when a user input upstream of it changes")
        else:
            lines.append("CONST: runs once, then its cached result is served")
        if bypassed:
            lines.append(f"bypassed: {bypassed}")
        i = self._ids.get(node_id)
        last = None
        if i is not None and self._last_frame[i] >= 0:
            reason = int(self._last_reason[i])
            last = (int(self._last_frame[i]), reason, self._last_detail.get(i))
        if cls == "HOT" and status == "ok":
            lines.append(f"ran at frame {frame}: {'HOT' if chain[1:] else 'non-deterministic'}")
        elif last is not None:
            ran_at, reason, detail = last
            suffix = f" ({detail})" if detail else ""
            lines.append(f"ran at frame {ran_at}: {REASON_TEXT[reason]}{suffix}")
        if status == "cached":
            if last is not None:
                lines.append(f"cached: inputs unchanged since frame {last[0]}")
            else:
                lines.append("cached: its result was kept from before profiling began")
        counts = self.counts(node_id)
        if counts:
            runs = sum(n for reason, n in counts.items() if reason != REASON_TEXT[CACHE_HIT])
            hits = counts.get(REASON_TEXT[CACHE_HIT], 0)
            lines.append(f"{runs} runs and {hits} cache hits since profiling began")
        return lines

    # ----------------------------------------------------------------- export
    def trace(self, max_events: int = 1_000_000) -> dict[str, Any]:
        """The frames in the ring as a Chrome / Perfetto trace (Trace Event Format): one "X"
        event per frame on the "frame" track and per node run on its phase's track; HOT lists
        of frames that were not sampled are one event for the whole list. A frame's GPU times,
        when they came in, are events on the "gpu" track, one per node that drew, laid end to end
        from the frame's start in draw order (timer queries give durations, not start times).
        Only the latest frames that fit in about `max_events` events are written (at least
        one)."""
        records: list[FrameRecord] = []
        count = 0
        for record in reversed(self.frames):
            hot = record.hot
            steps = len(hot.node_ids) if hot is not None and record.hot_times is not None else 0
            count += 2 + len(record.nodes) + steps + len(record.gpu or ())
            if records and count > max_events:
                break
            records.append(record)
        records.reverse()
        tracks = {
            "frame": 0,
            **{phase: n + 1 for n, phase in enumerate(PHASES)},
            "gpu": len(PHASES) + 1,
        }
        events: list[dict[str, Any]] = [
            {"name": "thread_name", "ph": "M", "pid": 1, "tid": tid, "args": {"name": name}}
            for name, tid in tracks.items()
        ]
        origin = records[0].started if records else 0.0

        def event(name: str, track: str, start: float, seconds: float, **args: Any) -> None:
            events.append(
                {
                    "name": name,
                    "cat": track,
                    "ph": "X",
                    "pid": 1,
                    "tid": tracks[track],
                    "ts": round((start - origin) * 1e6, 3),
                    "dur": round(seconds * 1e6, 3),
                    "args": args,
                }
            )

        for record in records:
            event(f"frame {record.frame}", "frame", record.started, record.seconds,
                  frame=record.frame)  # fmt: skip
            for node_id, started, seconds, reason, detail, phase in record.runs():
                event(node_id, phase, started, seconds, frame=record.frame,
                      reason=REASON_TEXT[reason], detail=detail or "")  # fmt: skip
            gpu_at = record.started
            for node_id, seconds in (record.gpu or {}).items():
                event(node_id, "gpu", gpu_at, seconds, frame=record.frame)
                gpu_at += seconds
            hot = record.hot
            if hot is None:
                continue
            if record.hot_times is None or record.hot_starts is None:
                event("HOT steps", HOT_PHASE, record.hot_started, record.hot_seconds,
                      frame=record.frame, steps=len(hot.node_ids))  # fmt: skip
                continue
            for node_id, reason, started, seconds in zip(
                hot.node_ids, hot.reasons, record.hot_starts, record.hot_times, strict=True
            ):
                event(node_id, HOT_PHASE, float(started), float(seconds), frame=record.frame,
                      reason=REASON_TEXT[reason])  # fmt: skip
        return {"traceEvents": events, "displayTimeUnit": "ms"}


def hot_chain(
    node_id: str,
    hot_sources: Callable[[str], Iterable[str]],
    nondeterministic: Callable[[str], bool],
) -> list[str]:
    """The path [source, ..., node_id] from a non-deterministic node to a HOT node, following
    `hot_sources` (a node's HOT non-feedback sources) upstream; [node_id] for the source itself."""
    path = [node_id]
    seen = {node_id}
    current = node_id
    while not nondeterministic(current):
        upstream = next((src for src in hot_sources(current) if src not in seen), None)
        if upstream is None:
            break
        path.append(upstream)
        seen.add(upstream)
        current = upstream
    path.reverse()
    return path
