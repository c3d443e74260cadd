"""The lazy evaluator: recursion from the sinks with a per-frame memo, and no build step at all.

Each frame starts at the roots (sinks plus watched nodes) and evaluates what they need: eager
inputs before the node, lazy inputs only when the node calls their `Pull`. CONST and USER nodes
whose cache key is unchanged return their cached outputs without looking upstream, so once a
patch settles only its HOT part is visited. The "recursion" is an explicit stack: a node is
visited once (bypassed, cache hit, or its missing eager inputs pushed above a marker that runs it
once they are done), so chains of any length work; only lazy pulls nest Python calls, one level
per lazy pin on the path. The frame's statuses are the memo: a node with a status was evaluated.

After the roots, feedback inputs of nodes that ran capture their source's value for the next frame.

Every compute call the walk makes is timed: a node over `ctx.time_budget` in one frame is bypassed
(failed, its outputs kept, its inputs not evaluated for it) on later frames until `retry(node_id)`.
Every result the walk makes is charged to the memory budget (`ctx.memory`): one that would pass it
is not kept, and its node is bypassed the same way (evaluators/run/memory_budget.py).
The same timing goes to the profiler (evaluators/insight/profiler.py) with the reason the node ran,
and every cached node the walk stops at is recorded as a cache hit.

Replay: once a frame's root phase ran only HOT nodes, cache hits and bypassed nodes (no lazy
pulls, no CONST/USER run), its order is kept as a schedule. While nothing changes (no patch
event, no new watch, the same bypassed set) the next frames replay it instead of walking, as a
step list over slots like a flat program's HOT list (evaluators/flat/program.py): `slots[out] =
call(*get(slots))`, `get` an itemgetter of the argument slots (stored values, hit outputs loaded
each frame, feedback values, earlier steps' outputs), no dictionary work per step. A step that
raises keeps its slot (the last good output) and is reported, and the loop resumes after it. The
replay first checks every hit: one whose cached result is gone means nothing is replayed, and the
walk runs (and records) the frame.

The replay's outputs stay in its slots: those of roots and feedback sources are written to the
context every frame, the others when someone reads them (`ExecutionContext.hold_outputs`: reading
`ctx.outputs`, e.g. the dual evaluator swapping a program in, writes them first).

Time budget and profiler, as for a flat HOT list: a replay is timed as a whole; after one over the
budget, and on the profiler's sampled frames, the next runs with a clock read per step, which finds
a slow node and bypasses it (so a slow node costs two slow frames). The profiler gets the runs as a
HOT step list (`hot_ran`): counted every frame, per-step times on sampled frames.

This is what the dual evaluator runs right after a structural edit: it reads the live patch
directly, so an edit shows on the very next frame.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from operator import itemgetter
from typing import Any

from evaluators.graph.analysis import OWN_CLASS, LiveAnalysis
from evaluators.graph.queries import PatchView, explain
from evaluators.graph.view import expanded
from evaluators.insight.profiler import HOT_RUN, LAZY_PHASE, NONDETERMINISTIC, FrameRecord, HotSteps
from evaluators.protocol import EvaluatorMode, NodeClass, NodeStatus
from evaluators.run.context import (
    _COLLECTOR_TIME,
    HOT,
    CacheEntry,
    ExecutionContext,
    StoredPull,
    bind_capture,
    bind_compute,
    busy_clock,
    default_outputs,
    error_text,
    last_output,
    slot_getter,
)
from evaluators.run.observer import FrameObserver, unreported_status
from evaluators.run.steps import StepProgram
from nodes import Deferred, Link, Patch, PatchEvent

_clock = time.perf_counter  # minus the collector's time: `busy_clock`, inlined in the walk

OK, CACHED = NodeStatus.OK, NodeStatus.CACHED
FAILED, DEFERRED = NodeStatus.FAILED, NodeStatus.DEFERRED


class _LinkPull:
    """A lazy input with a link: evaluates the source when called."""

    __slots__ = ("evaluator", "index", "pulled", "src")
    connected = True

    def __init__(self, evaluator: LazyEvaluator, src: str, index: int) -> None:
        self.evaluator = evaluator
        self.src = src
        self.index = index
        self.pulled = False

    def __call__(self) -> Any:
        self.pulled = True
        self.evaluator._evaluate(self.src)
        return self.evaluator._outputs[self.src][self.index]


_STORED, _LINKED, _PULL, _STORED_PULL, _FED_BACK = range(5)


class _Plan:
    """How to call one node: its bound compute function and where each argument comes from.
    Made when the node is first run and dropped when a structural edit touches the node."""

    __slots__ = (
        "args", "charge", "defaults", "eager", "fn", "instance", "linked", "node_id", "pulls",
        "reason", "single",
    )  # fmt: skip

    def __init__(self, evaluator: LazyEvaluator, node_id: str) -> None:
        patch = evaluator.patch
        instance = patch.nodes[node_id]
        links = patch.links_into(node_id)
        self.node_id = node_id
        self.instance = instance  # its values dict is replaced on every value edit
        self.single = len(instance.spec.outputs) == 1
        self.defaults = default_outputs(instance.spec)
        args: list[tuple[int, Any, Any]] = []
        eager: list[str] = []
        linked: list[tuple[str, str]] = []  # (pin, source) of non-feedback links
        for pin in instance.inputs:
            link = links.get(pin.name)
            if link is None:
                args.append((_STORED_PULL if pin.lazy else _STORED, pin.name, None))
                continue
            index = patch.nodes[link.src].spec.output_index(link.src_pin)
            if not pin.feedback:
                linked.append((pin.name, link.src))
            if pin.lazy:
                args.append((_PULL, link.src, index))
            elif pin.feedback:
                args.append((_FED_BACK, (node_id, pin.name), pin.name))
            else:
                args.append((_LINKED, link.src, index))
                eager.append(link.src)
        self.args = tuple(args)
        self.pulls = any(kind == _PULL for kind, _, _ in args)
        self.eager = tuple(dict.fromkeys(eager))
        self.linked = tuple(linked)
        own_hot = OWN_CLASS[instance.spec.determinism] == HOT
        self.reason = NONDETERMINISTIC if own_hot else HOT_RUN  # why it runs when it is HOT
        names = tuple(pin.name for pin in instance.inputs)
        self.fn = bind_compute(instance.spec, evaluator.ctx, node_id, names)
        # What counts its results against the memory budget; a pass-through node's output is
        # its input, which its source holds.
        passes = instance.spec.passthrough is not None
        self.charge = None if passes else evaluator.ctx.memory.charge


_Step = _Plan | tuple[str, int | None]
"""A recorded root phase step: the plan of a HOT run, (node, key) of a cache hit, (node, None) of
a bypassed node."""


def _writer(
    slots: list[Any], single: list[tuple[str, int]], multi: list[tuple[str, int]]
) -> Callable[[dict[str, Any]], None]:
    """How to write outputs from `slots` into an outputs dict: (node, slot of its value) of
    nodes with one output, (node, slot of its outputs tuple) of the others."""
    single_ids, single_get = [n for n, _ in single], slot_getter([slot for _, slot in single])
    multi_ids, multi_get = [n for n, _ in multi], slot_getter([slot for _, slot in multi])

    def write(outputs: dict[str, Any]) -> None:
        outputs.update(zip(single_ids, zip(single_get(slots)), strict=True))
        if multi_ids:
            outputs.update(zip(multi_ids, multi_get(slots), strict=True))

    return write


def _as_tuple(fn: Callable[..., Any]) -> Callable[..., tuple[Any, ...]]:
    """A compute function of several outputs, returning them as a tuple."""

    def call(*args: Any) -> tuple[Any, ...]:
        return tuple(fn(*args))

    return call


class _Replay(StepProgram):
    """A recorded root phase as a step list over slots: `slots[out] = call(*get(slots))`, as a
    flat program's HOT list (see the module note), run by the step runtime
    (evaluators/run/steps.py), which reports a node by its id. Made on the first frame that replays
    a schedule and dropped with it."""

    __slots__ = (
        "_owners", "_step_index", "ctx", "deferred", "fed", "held", "hit_ids", "hits", "hot",
        "hot_for", "multi", "observer", "read", "replayed_at", "run_plans", "single", "slots",
        "statuses", "step_plans", "steps", "write_held", "write_read",
    )  # fmt: skip

    def __init__(self, evaluator: LazyEvaluator, schedule: list[_Step]) -> None:
        # Made in the frame after a walk: kept to a few operations per step.
        self.ctx, self.observer = evaluator.ctx, evaluator.observer
        evaluator.ctx.write_outputs()
        outputs = evaluator._outputs
        slots: list[Any] = []
        value_slot: dict[str, int] = {}  # node -> slot of its (first) output
        other_slot: dict[tuple[str, int], int] = {}  # (node, output index > 0) -> slot
        hit_loads: dict[str, list[tuple[int, int]]] = {}  # per hit: (output index, slot)
        self.read: list[tuple[str, int, int]] = []  # (node, output index, slot): kept outputs
        self.hits: list[tuple[str, int, list[tuple[int, int]]]] = []
        self.fed: list[tuple[int, tuple[str, str], Any]] = []  # (slot, feedback key, default)
        self.steps: list[tuple[Callable[..., Any], Callable[[list[Any]], Any], int]] = []
        self.step_plans: list[_Plan] = []  # the node of each step
        self.run_plans: list[_Plan] = []
        statuses: dict[str, NodeStatus] = {}
        single: list[tuple[str, int]] = []
        multi: list[tuple[str, int]] = []
        add_slot, add_step, add_plan = slots.append, self.steps.append, self.step_plans.append

        def source(node_id: str, index: int) -> int:
            """The slot of an output no step of the replay makes: a hit's or a bypassed
            node's."""
            slot = len(slots)
            kept = outputs.get(node_id) or default_outputs(evaluator.patch.nodes[node_id].spec)
            add_slot(kept[index])
            if index:
                other_slot[(node_id, index)] = slot
            else:
                value_slot[node_id] = slot
            if node_id in hit_loads:
                hit_loads[node_id].append((index, slot))  # loaded from the cache each frame
            else:
                self.read.append((node_id, index, slot))  # a bypassed node's kept outputs
            return slot

        for recorded in schedule:
            if isinstance(recorded, tuple):
                node_id, key = recorded
                if key is None:
                    statuses[node_id] = FAILED
                else:
                    statuses[node_id] = CACHED
                    loads: list[tuple[int, int]] = []
                    hit_loads[node_id] = loads
                    self.hits.append((node_id, key, loads))
                continue
            plan, node_id = recorded, recorded.node_id
            self.run_plans.append(plan)
            values = plan.instance.values  # replaced by a value edit, which drops the schedule
            reads: list[int] = []
            for kind, first, second in plan.args:
                if kind == _LINKED:
                    found = value_slot.get(first) if not second else other_slot.get((first, second))
                    reads.append(source(first, second) if found is None else found)
                elif kind == _STORED:
                    reads.append(len(slots))
                    add_slot(values[first])
                elif kind == _STORED_PULL:
                    reads.append(len(slots))
                    add_slot(StoredPull(values[first]))
                else:  # _FED_BACK (a pulled input never gets here: its node is not replayed)
                    self.fed.append((len(slots), first, values[second]))
                    reads.append(len(slots))
                    add_slot(None)
            get = itemgetter(*reads) if len(reads) > 1 else slot_getter(reads)
            kept = outputs.get(node_id) or plan.defaults
            out = value_slot[node_id] = len(slots)
            if plan.single:
                add_slot(kept[0])
                add_step((plan.fn, get, out))
                add_plan(plan)
                single.append((node_id, out))
                continue
            add_slot(tuple(kept))
            add_step((_as_tuple(plan.fn), get, out))
            add_plan(plan)
            multi.append((node_id, out))
            for index in range(len(plan.defaults)):
                pick = len(slots)
                add_slot(kept[index])
                if index:
                    other_slot[(node_id, index)] = pick
                else:
                    value_slot[node_id] = pick
                add_step((itemgetter(index), slot_getter([out]), pick))
                add_plan(plan)
        statuses.update(dict.fromkeys([plan.node_id for plan in self.run_plans], OK))
        self.statuses = statuses
        self._owners: dict[int, str] | None = None  # out slot -> node id, on the first failure
        self._step_index: dict[int, dict[int, int]] = {}
        self.deferred: list[str] = []  # nodes deferred in this replay
        self.slots = slots
        self.hit_ids = [node_id for node_id, _, _ in self.hits]
        self.single, self.multi = single, multi
        # Outputs read every frame from outside (roots, feedback sources) are written every
        # frame; the context is handed how to write the others when someone reads them.
        read = set(evaluator._root_ids())
        read.update(link.src for link in evaluator._feedback_link_list())
        self.write_read = _writer(
            slots, [p for p in single if p[0] in read], [p for p in multi if p[0] in read]
        )
        self.write_held = _writer(
            slots, [p for p in single if p[0] not in read], [p for p in multi if p[0] not in read]
        )
        self.held = frozenset(plan.node_id for plan in self.run_plans) - read
        self.timing = False  # time the next replay step by step (the last one ran over budget)
        self.replayed_at = evaluator.ctx.frames_run - 1  # slots hold the outputs of that frame
        self.hot: HotSteps | None = None
        self.hot_for: Any = None  # the profiler `hot` was made for (it interns its node ids)

    def run(self, evaluator: LazyEvaluator) -> bool:
        """Replay one frame; False if a hit is no longer cached (then nothing ran, and the caller
        walks the frame)."""
        ctx = evaluator.ctx
        cache = ctx.cache
        entries: list[CacheEntry] = []
        for node_id, key, _ in self.hits:
            entry = cache.get(node_id)
            if entry is None or entry.key != key:
                found = ctx.recall(node_id, key)  # an identical node's result
                if found is None:
                    return False
                entry = found
            entries.append(entry)
        observer = evaluator.observer
        status, errors = observer.status, observer.errors
        outputs, slots = evaluator._outputs, self.slots
        if self.replayed_at != ctx.frames_run - 1:  # frames ran meanwhile without it
            ctx.write_outputs()
            self._reload(outputs)
        status.update(self.statuses)  # into the empty dict of a new frame: one copy
        for (node_id, _, loads), entry in zip(self.hits, entries, strict=True):
            outputs[node_id] = entry.outputs
            for index, slot in loads:
                slots[slot] = entry.outputs[index]
            if entry.error:
                status[node_id] = FAILED
                errors[node_id] = entry.error
        for slot, pin, default in self.fed:
            slots[slot] = ctx.feedback.get(pin, default)
        profiler = observer.profiler
        if self.hits:
            profiler.hits_served(self.hit_ids)
        deferred = self.deferred
        started = busy_clock()
        if self.timing or profiler.timing:
            self.timing = False
            starts, times = self.run_timed(self.steps)
            took = busy_clock() - started
            if profiler.current is not None:
                profiler.hot_ran(self._hot_steps(profiler), started, took, starts, times)
        else:
            self.run_list(self.steps)
            took = busy_clock() - started
            if took > ctx.time_budget:
                self.timing = True  # the next replay finds the node and bypasses it
            if profiler.current is not None:
                profiler.hot_ran(self._hot_steps(profiler), started, took)
        self.write_read(outputs)
        ctx.hold_outputs(self.held, self.write_held)
        if deferred:
            self._unsettle(evaluator._unsettled, deferred)
            deferred.clear()
        observer.nodes_run += len(self.run_plans)
        self.replayed_at = ctx.frames_run
        return True

    def step_owners(self) -> dict[int, str]:
        if self._owners is None:
            pairs = zip(self.steps, self.step_plans, strict=True)
            self._owners = {out: plan.node_id for (_, _, out), plan in pairs}
        return self._owners

    def step_node_id(self, node: str) -> str:
        return node

    def step_deferred(self, node: str) -> None:
        self.deferred.append(node)

    def _unsettle(self, unsettled: set[str], deferred: list[str]) -> None:
        """Mark the deferred nodes and what they feed in this frame as unsettled."""
        unsettled.update(deferred)
        for plan in self.run_plans:
            if any(src in unsettled for src in plan.eager):
                unsettled.add(plan.node_id)

    def _reload(self, outputs: dict[str, tuple[Any, ...]]) -> None:
        """Load the last good outputs the context holds into the slots."""
        slots = self.slots
        for node_id, out in self.single:
            kept = outputs.get(node_id)
            if kept:
                slots[out] = kept[0]
        for node_id, out in self.multi:
            kept = outputs.get(node_id)
            if kept:
                slots[out] = tuple(kept)
        for node_id, index, slot in self.read:
            kept = outputs.get(node_id)
            if kept:
                slots[slot] = kept[index]

    def _hot_steps(self, profiler: Any) -> HotSteps:
        if self.hot is None or self.hot_for is not profiler:
            plans = self.step_plans
            self.hot = HotSteps([p.node_id for p in plans], [p.reason for p in plans])
            self.hot_for = profiler
        return self.hot


class LazyEvaluator:
    """Evaluates a live patch graph by recursion from its sinks; see the module note."""

    mode = EvaluatorMode.LAZY
    last_build_seconds = 0.0  # nothing to build

    def __init__(
        self,
        patch: Patch,
        context: ExecutionContext | None = None,
        gpu: Any = None,
        observer: FrameObserver | None = None,
    ):
        self.patch, self._own_view = expanded(patch)  # instances inlined (evaluators/graph/view.py)
        patch = self.patch
        self.ctx = context if context is not None else ExecutionContext(gpu)
        self.ctx.settings = patch.settings
        # The context's outputs dict itself, read without writing held outputs first: the walk
        # writes them when it starts, the replay holds them (see `_Replay`).
        self._outputs = self.ctx.outputs
        self.ctx.folder = patch.folder
        self.analysis = LiveAnalysis(patch)
        self.queries = PatchView(patch, self.analysis)
        self.last_frame_seconds = 0.0
        self._plans: dict[str, _Plan] = {}
        self._watched: tuple[str, ...] = ()
        self._roots: list[str] | None = None
        self._feedback_links: list[Link] | None = None
        self._keepers: dict[Link, Callable[[Any], Any]] = {}  # per feedback link: bind_capture
        self.observer = observer if observer is not None else FrameObserver()
        self._status = self.observer.status  # this frame's status of every node visited
        self._errors = self.observer.errors
        self._unsettled: set[str] = set()  # deferred this frame, or fed by something deferred
        self._record: FrameRecord | None = None  # the profiler's record of this frame
        self._schedule: list[_Step] | None = None  # the last root phase, to replay
        self._schedule_epoch = -1  # the bypass epoch the schedule was recorded at
        self._trace: list[_Step] | None = None  # the root phase being recorded, if replayable
        self._replay: _Replay | None = None  # the schedule as steps, once it is replayed
        self._unsubscribe = patch.subscribe(self._on_event)

    # ----------------------------------------------------------------- public API
    def watch(self, node_ids: Iterable[str]) -> None:
        """Also evaluate these nodes every frame (previews, inspected pins)."""
        self._watched = tuple(dict.fromkeys(node_ids))
        self._roots = None
        self._schedule = None

    def run_frame(self, t: float, frame: int) -> None:
        """Evaluate one frame at clock `t`; never raises because of a node."""
        started = time.perf_counter()
        self.ctx.advance(t, frame)
        self.evaluate_frame()
        self.last_frame_seconds = time.perf_counter() - started

    def evaluate_frame(self) -> None:
        """Evaluate the roots at the context's current clock (the dual evaluator advances it)."""
        self.patch.flush()
        self.observer.begin_frame()
        profiler = self.observer.profiler
        profiler.begin(self.ctx.frame, self.ctx.gpu)
        profiler.fresh_program = False
        self._record = profiler.current  # None while the profiler is off
        self._unsettled = set()
        epoch = self.ctx.bypass_epoch
        schedule = self._schedule if self._schedule_epoch == epoch else None
        if schedule is not None and self._replay is None:
            self._replay = _Replay(self, schedule)
        if schedule is None or self._replay is None or not self._replay.run(self):
            self._trace = []
            for root in self._root_ids():
                self._evaluate(root)
            replayable = self._trace is not None and self.ctx.bypass_epoch == epoch
            self._schedule = self._trace if replayable else None
            self._replay = None
            self._schedule_epoch = epoch
            self._trace = None
        self._capture_feedback()
        profiler.end()
        self._record = None

    def output(self, node_id: str, pin: str = "out") -> Any:
        return self._value_of(node_id, pin)

    @property
    def nodes_run(self) -> int:
        """Compute calls so far (for tests and benchmarks)."""
        return self.observer.nodes_run

    def status(self, node_id: str) -> NodeStatus:
        self.patch.node(node_id)
        found = self.observer.reported(node_id, self.ctx.bypassed)
        if found is not None:
            return found
        # Upstream of a cached node is not visited: it is still needed if a consumer was.
        cls, key = self.analysis.info(node_id)
        entry = self.ctx.cache.get(node_id)
        if entry is None or entry.key != key:
            entry = self.ctx.shared.get(key)  # an identical node's result served its consumer
        cached = cls != HOT and entry is not None and entry.key == key
        needed = cached and self._consumer_visited(node_id)
        failed = needed and entry is not None and bool(entry.error)
        status = unreported_status(needed, cls != HOT, failed)
        self.observer.derived[node_id] = status  # until the next frame or edit
        return status

    def _consumer_visited(self, node_id: str) -> bool:
        seen = {node_id}
        stack = [node_id]
        while stack:
            for link in self.patch.links_out_of(stack.pop()):
                pin = self.patch.nodes[link.dst].input(link.dst_pin)
                if pin is None or pin.lazy or pin.feedback:
                    continue  # a lazy input needs its source only when it was pulled
                if link.dst in self._status:
                    return True
                if link.dst not in seen:
                    seen.add(link.dst)
                    stack.append(link.dst)
        return False

    def error(self, node_id: str) -> str | None:
        status = self.status(node_id)
        entry = self.ctx.cache.get(node_id)
        cached = entry.error if entry is not None else None
        return self.observer.error(node_id, status, self.ctx.bypassed, cached)

    def node_class(self, node_id: str) -> NodeClass:
        return self.analysis.node_class(node_id)

    def explain(self, node_id: str) -> list[str]:
        """Why the node runs (or is served from its cache), in plain words
        (evaluators/graph/queries.py): its class (for a HOT node, the chain to the non-deterministic
        source), its last run and its reason."""
        self.patch.node(node_id)
        return explain(self.queries, node_id, self.status(node_id), self.observer, self.ctx)

    def retry(self, node_id: str) -> None:
        """Run a node bypassed for taking too long again, from the next frame."""
        self.patch.node(node_id)
        self.observer.profiler.force(node_id)
        self.ctx.unbypass(node_id)
        self._errors.pop(node_id, None)
        self.observer.derived.pop(node_id, None)
        self._schedule = None

    def close(self) -> None:
        self.ctx.write_outputs()
        self._unsubscribe()
        if self._own_view:
            self.patch.close()

    # ----------------------------------------------------------------- internals
    def _on_event(self, event: PatchEvent) -> None:
        if event.kind == "ui":
            return  # a node moved, a backdrop drawn: nothing that runs changes
        self.analysis.on_event(event)
        self.ctx.on_patch_event(event)
        self.observer.profiler.on_event(event)
        self.observer.derived.clear()
        self._schedule = None  # keys, plans or roots may differ: walk and record again
        if event.kind == "structural":
            self._roots = None
            self._feedback_links = None
            touched = event.link.dst if event.link is not None else event.node_id
            if touched is not None:
                self._plans.pop(touched, None)

    def _root_ids(self) -> list[str]:
        if self._roots is None:
            sinks = [n.id for n in self.patch.nodes.values() if n.spec.sink]
            watched = [w for w in self._watched if w in self.patch.nodes]
            self._roots = list(dict.fromkeys(sinks + watched))
        return self._roots

    def _value_of(self, node_id: str, pin: str) -> Any:
        return last_output(self.ctx, self.patch.node(node_id), pin)

    def _plan(self, node_id: str) -> _Plan:
        plan = self._plans.get(node_id)
        if plan is None:
            plan = self._plans[node_id] = _Plan(self, node_id)
        return plan

    def _evaluate(self, root: str) -> None:
        """Evaluate `root` and what it needs: a node is visited (bypassed, cache hit, or its
        eager inputs pushed with a marker to run it under them) and run once its inputs are
        done. A node with a status this frame was evaluated already."""
        status = self._status
        if root in status:
            return
        ctx = self.ctx
        ctx.write_outputs()  # what a replay holds: the walk reads outputs
        cache, outputs, bypassed = ctx.cache, self._outputs, ctx.bypassed
        plans, memo, info = self._plans, self.analysis.memo, self.analysis.info
        hit = self.observer.profiler.hit
        ran = 0
        stack: list[Any] = [root]  # node ids to visit, (plan, class, key) of nodes to run
        pop, push = stack.pop, stack.append
        while stack:
            item = pop()
            if item.__class__ is str:
                node_id = item
                if node_id in status:
                    continue
                if node_id in bypassed:
                    status[node_id] = FAILED
                    self._errors[node_id] = bypassed[node_id]
                    if node_id not in outputs:
                        outputs[node_id] = default_outputs(self.patch.nodes[node_id].spec)
                    if self._trace is not None:
                        self._trace.append((node_id, None))
                    continue
                cls, key = memo.get(node_id) or info(node_id)
                if cls != HOT:
                    entry = cache.get(node_id)
                    if entry is None or entry.key != key:
                        entry = ctx.recall(node_id, key)  # an identical node's result
                    if entry is not None and entry.key == key:
                        outputs[node_id] = entry.outputs
                        if entry.error:
                            status[node_id] = FAILED
                            self._errors[node_id] = entry.error
                        else:
                            status[node_id] = CACHED
                        hit(node_id)
                        if self._trace is not None:
                            self._trace.append((node_id, key))
                        continue
                plan = plans.get(node_id) or self._plan(node_id)
                waiting = False
                for src in plan.eager:
                    if src not in status:
                        if not waiting:
                            push((plan, cls, key))
                            waiting = True
                        push(src)
                if waiting:
                    continue
            else:
                plan, cls, key = item
                if plan.node_id in status:
                    continue
            ran += 1
            if self._trace is not None:
                if cls == HOT and not plan.pulls:
                    self._trace.append(plan)
                else:
                    self._trace = None  # cold runs become hits; pulls vary frame to frame
            self._run_node(plan, cls, key)
        self.observer.nodes_run += ran

    def _run_node(self, plan: _Plan, cls: str, key: int) -> None:
        node_id = plan.node_id
        outputs, values, unsettled = self._outputs, plan.instance.values, self._unsettled
        args: list[Any] = []
        pulls: list[_LinkPull] = []
        settled = True
        for kind, first, second in plan.args:
            if kind == _LINKED:
                args.append(outputs[first][second])
                if unsettled and first in unsettled:
                    settled = False
            elif kind == _STORED:
                args.append(values[first])
            elif kind == _PULL:
                pull = _LinkPull(self, first, second)
                pulls.append(pull)
                args.append(pull)
            elif kind == _STORED_PULL:
                args.append(StoredPull(values[first]))
            else:  # _FED_BACK
                args.append(self.ctx.feedback.get(first, values[second]))
        error = None
        record = self._record
        mark = len(record.pending) if pulls and record is not None else 0
        collector = _COLLECTOR_TIME
        started = _clock() - collector.spent
        try:
            result = plan.fn(*args)
        except Deferred:
            self._status[node_id] = DEFERRED
            settled = False
        except Exception as problem:
            error = error_text(problem)
            self._status[node_id] = FAILED
            self._errors[node_id] = error
        else:
            made = (result,) if plan.single else tuple(result)
            refused = plan.charge(node_id, made) if plan.charge is not None else None
            if refused is None:
                outputs[node_id] = made
                self._status[node_id] = OK
            else:  # over the memory budget: its last good outputs stay
                error = self.ctx.refuse(node_id, refused)
                self._status[node_id] = FAILED
                self._errors[node_id] = error
        took = _clock() - collector.spent - started
        if took > self.ctx.time_budget:
            self._status[node_id] = FAILED
            self._errors[node_id] = self.ctx.bypass(node_id, took)
        if record is not None:
            profiler = self.observer.profiler
            if pulls:
                took -= profiler.nested_seconds(mark)  # recorded on their own
            if cls == HOT:
                record.pending += (node_id, started, took, plan.reason)
            else:
                info = self.analysis.info
                sources = tuple((pin, src, info(src)[1]) for pin, src in plan.linked)
                reason, detail = profiler.cause(node_id, (plan.instance.stamp, sources))
                profiler.ran(node_id, started, took, reason, detail, LAZY_PHASE)
        if pulls and any(pull.pulled and pull.src in unsettled for pull in pulls):
            settled = False
        if not settled:
            unsettled.add(node_id)
        if node_id not in outputs:
            outputs[node_id] = plan.defaults
        if cls != HOT and settled:
            entry = CacheEntry(key, outputs[node_id], error)
            self.ctx.remember(node_id, entry, not plan.instance.spec.stateful)

    def _feedback_link_list(self) -> list[Link]:
        """The links into feedback inputs, in a fixed order (made once per structure)."""
        if self._feedback_links is None:
            found = [
                link
                for link in self.patch.links
                if (pin := self.patch.nodes[link.dst].input(link.dst_pin)) is not None
                and pin.feedback
            ]
            self._feedback_links = sorted(found, key=lambda link: (link.dst, link.dst_pin))
            self._keepers = {
                link: bind_capture(self.patch.nodes[link.dst].spec, self.ctx, link.dst)
                for link in self._feedback_links
            }
        return self._feedback_links

    def _capture_feedback(self) -> None:
        links = self._feedback_link_list()
        if not links:
            return
        ran = {OK, FAILED, DEFERRED}
        captured: set[Link] = set()
        while True:
            todo = [
                link for link in links if link not in captured and self._status.get(link.dst) in ran
            ]
            if not todo:
                return
            for link in todo:
                self._evaluate(link.src)
                captured.add(link)
                value = self._value_of(link.src, link.src_pin)
                self.ctx.feedback[(link.dst, link.dst_pin)] = self._keepers[link](value)
