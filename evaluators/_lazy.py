"""The lazy evaluator: recursion from the sinks with a per-frame memo, and no build step at all.

Each frame starts at the roots (sinks plus watched nodes) and evaluates what they need: eager
inputs before the node, lazy inputs only when the node calls their `Pull`. CONST and USER nodes
whose cache key is unchanged return their cached outputs without looking upstream, so once a
patch settles only its HOT part is visited. The "recursion" is an explicit stack: chains of any
length work; only lazy pulls nest Python calls, one level per lazy pin on the path.

After the roots, feedback inputs of nodes that ran capture their source's value for the next frame.

Every compute call is timed: a node over `ctx.time_budget` in one frame is bypassed (failed, its
outputs kept, its inputs not evaluated for it) on later frames until `retry(node_id)`. The same
timing goes to the profiler (evaluators/_profiler.py) with the reason the node ran, and every
cached node the walk stops at is recorded as a cache hit.

Once a frame's root phase ran only HOT nodes and cache hits (no lazy pulls, no bypass), its order
is kept as a schedule: (plan, node, key) per step, no plan for a hit. While nothing changes (no
patch event, no new watch, the same bypassed set) the next frame replays that list instead of
walking: the same runs in the same order, without the stack, visit checks and lookups per node.
A hit whose cached result is gone stops the replay; the walk then finishes the frame (nodes
already run are skipped) and the frame after it records a new schedule. The replay reads the clock
once per run (a run's time starts where the previous one ended), so its times include the
replay's own bookkeeping between two runs.

This is what the dual evaluator runs right after a structural edit: it reads the live patch
directly, so an edit shows on the very next frame.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from evaluators._analysis import OWN_CLASS, LiveAnalysis
from evaluators._context import (
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
)
from evaluators._observer import FrameObserver, unreported_status
from evaluators._profiler import HOT_RUN, LAZY_PHASE, NONDETERMINISTIC, FrameRecord, hot_chain
from evaluators._protocol import EvaluatorMode, NodeClass, NodeStatus
from evaluators._view import expanded
from nodes import Deferred, Link, Patch, PatchEvent

_NO_INDICES = np.zeros(0, dtype=np.int32)

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
        return self.evaluator.ctx.outputs[self.src][self.index]


_STORED, _LINKED, _PULL, _STORED_PULL, _FED_BACK = range(5)


class _Plan:
    """How to call one node: its bound compute function and where each argument comes from.
    Made when the node is first run and dropped when a structural edit touches the node."""

    __slots__ = (
        "args", "defaults", "eager", "fn", "instance", "linked", "node_id", "pulls", "reason",
        "single",
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


_Step = tuple[_Plan | None, str, int]  # a recorded root phase step: (plan, node, key); no plan: hit
# A step as replayed: (plan, node, linked source, its output index or a hit's key, stored values
# before and after the linked one); no plan: a hit; no stored values: arguments gathered as usual.
_ReplayStep = tuple[
    _Plan | None, str, str | None, int, tuple[Any, ...] | None, tuple[Any, ...] | None
]


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
        self.patch, self._own_view = expanded(patch)  # instances inlined (evaluators/_view.py)
        patch = self.patch
        self.ctx = context if context is not None else ExecutionContext(gpu)
        self.ctx.settings = patch.settings
        self.ctx.folder = patch.folder
        self.analysis = LiveAnalysis(patch)
        self.last_frame_seconds = 0.0
        self._plans: dict[str, _Plan] = {}
        self._watched: tuple[str, ...] = ()
        self._roots: list[str] | None = None
        self._feedback_links: list[Link] | None = None
        self._keepers: dict[Link, Callable[[Any], Any]] = {}  # per feedback link: bind_capture
        self._serial = 0
        self._visited: dict[str, int] = {}
        self.observer = observer if observer is not None else FrameObserver()
        self._status = self.observer.status  # this frame's status of every node visited
        self._errors = self.observer.errors
        self._unsettled: set[str] = set()  # deferred this frame, or fed by something deferred
        self._record: FrameRecord | None = None  # the profiler's record of this frame
        self._schedule: list[_Step] | None = None  # the last root phase, to replay
        self._schedule_epoch = -1  # the bypass epoch the schedule was recorded at
        self._trace: list[_Step] | None = None  # the root phase being recorded, if replayable
        self._replay_steps: (
            tuple[list[_ReplayStep], dict[str, NodeStatus], list[str], np.ndarray] | None
        ) = None
        self._replay_indices: tuple[Any, np.ndarray] = (None, _NO_INDICES)  # profiler, its ids
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
        self._serial += 1
        self.observer.begin_frame()
        profiler = self.observer.profiler
        profiler.begin(self.ctx.frame, self.ctx.gpu)
        profiler.fresh_program = False
        self._record = profiler.current  # None while the profiler is off
        self._unsettled = set()
        epoch = self.ctx.bypass_epoch
        schedule = self._schedule if self._schedule_epoch == epoch else None
        if schedule is None or not self._replay(schedule):
            self._trace = [] if schedule is None else None
            for root in self._root_ids():
                self._evaluate(root)
            replayable = self._trace is not None and self.ctx.bypass_epoch == epoch
            self._schedule = self._trace if replayable else None
            self._replay_steps = None
            self._replay_indices = (None, _NO_INDICES)
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
        """Why the node runs (or is served from its cache), in plain words: its class (for a HOT
        node, the chain to the non-deterministic source), its last run and its reason."""
        self.patch.node(node_id)
        cls = self.analysis.node_class(node_id)
        chain = hot_chain(node_id, self._hot_sources, self._own_hot) if cls == HOT else [node_id]
        return self.observer.profiler.explain(
            node_id, cls, chain, self.patch.nodes[chain[0]].spec.id, self.status(node_id),
            self.ctx.bypassed.get(node_id), self.ctx.frame,
        )  # fmt: skip

    def _hot_sources(self, node_id: str) -> list[str]:
        links = self.patch.links_into(node_id)
        return [
            link.src
            for pin in self.patch.nodes[node_id].inputs
            if not pin.feedback
            and (link := links.get(pin.name)) is not None
            and self.analysis.node_class(link.src) == HOT
        ]

    def _own_hot(self, node_id: str) -> bool:
        return OWN_CLASS[self.patch.nodes[node_id].spec.determinism] == HOT

    def retry(self, node_id: str) -> None:
        """Run a node bypassed for taking too long again, from the next frame."""
        self.patch.node(node_id)
        self.observer.profiler.force(node_id)
        self.ctx.unbypass(node_id)
        self._errors.pop(node_id, None)
        self.observer.derived.pop(node_id, None)
        self._schedule = None

    def close(self) -> None:
        self._unsubscribe()
        if self._own_view:
            self.patch.close()

    # ----------------------------------------------------------------- internals
    def _on_event(self, event: PatchEvent) -> None:
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
        serial, visited = self._serial, self._visited
        if visited.get(root) == serial:
            return
        cache, outputs, info = self.ctx.cache, self.ctx.outputs, self.analysis.info
        status, plans, memo = self._status, self._plans, self.analysis.memo
        bypassed = self.ctx.bypassed
        hit = self.observer.profiler.hit
        ran = 0
        stack = [root]
        while stack:
            node_id = stack[-1]
            if visited.get(node_id) == serial:
                stack.pop()
                continue
            if node_id in bypassed:
                status[node_id] = FAILED
                self._errors[node_id] = bypassed[node_id]
                if node_id not in outputs:
                    outputs[node_id] = default_outputs(self.patch.nodes[node_id].spec)
                self._trace = None  # bypassed nodes are not replayed
                visited[node_id] = serial
                stack.pop()
                continue
            cls, key = memo.get(node_id) or info(node_id)
            if cls != HOT:
                entry = cache.get(node_id)
                if entry is None or entry.key != key:
                    entry = self.ctx.recall(node_id, key)  # an identical node's result
                if entry is not None and entry.key == key:
                    outputs[node_id] = entry.outputs
                    if entry.error:
                        status[node_id] = FAILED
                        self._errors[node_id] = entry.error
                    else:
                        status[node_id] = CACHED
                    hit(node_id)
                    if self._trace is not None:
                        self._trace.append((None, node_id, key))
                    visited[node_id] = serial
                    stack.pop()
                    continue
            plan = plans.get(node_id) or self._plan(node_id)
            pending = False
            for src in plan.eager:
                if visited.get(src) != serial:
                    stack.append(src)
                    pending = True
            if pending:
                continue
            ran += 1
            if self._trace is not None:
                if cls == HOT and not plan.pulls:
                    self._trace.append((plan, node_id, key))
                else:
                    self._trace = None  # cold runs become hits; pulls vary frame to frame
            self._run_node(plan, cls, key)
            visited[node_id] = serial
            stack.pop()
        self.observer.nodes_run += ran

    def _replay(self, schedule: list[_Step]) -> bool:
        """Run the recorded root phase step by step as `_evaluate` and `_run_node` would (HOT
        runs without lazy pulls, cache hits); False if a hit is no longer cached (the caller
        then walks from the roots to finish the frame)."""
        if self._replay_steps is None:
            self._replay_steps = self._compile_schedule(schedule)
        steps, done_template, run_ids, run_reasons = self._replay_steps
        runs = len(run_ids)
        serial, visited = self._serial, self._visited
        ctx = self.ctx
        outputs, cache, feedback, budget = ctx.outputs, ctx.cache, ctx.feedback, ctx.time_budget
        status, errors, unsettled = self._status, self._errors, self._unsettled
        record = self._record
        timed: list[float] = []  # start and seconds of each run, for the profiler
        note = timed.append
        hit = self.observer.profiler.hit
        collector, clock = _COLLECTOR_TIME, time.perf_counter
        odd: dict[str, NodeStatus] = {}  # statuses other than the recorded ones (OK, CACHED)
        # One clock read per run: a run's time starts where the previous one's ended, so it
        # includes the replay's own few steps in between (well under a microsecond).
        started = clock() - collector.spent
        done = 0
        try:
            for plan, node_id, src, index, before, after in steps:
                if plan is None:  # a cache hit, if its result is still there
                    entry = cache.get(node_id)
                    if entry is None or entry.key != index:
                        entry = ctx.recall(node_id, index)
                    if entry is None or entry.key != index:
                        return False
                    outputs[node_id] = entry.outputs
                    if entry.error:
                        odd[node_id] = FAILED
                        errors[node_id] = entry.error
                    hit(node_id)
                    done += 1
                    continue
                settled = True
                if before is not None:  # stored values around at most one linked value
                    if src is None:
                        args: Any = before
                    else:
                        args = (*before, outputs[src][index], *after)  # type: ignore[misc]
                        if unsettled and src in unsettled:
                            settled = False
                else:
                    values = plan.instance.values
                    args = []
                    for kind, first, second in plan.args:
                        if kind == _LINKED:
                            args.append(outputs[first][second])
                            if unsettled and first in unsettled:
                                settled = False
                        elif kind == _STORED:
                            args.append(values[first])
                        elif kind == _STORED_PULL:
                            args.append(StoredPull(values[first]))
                        else:  # _FED_BACK
                            args.append(feedback.get(first, values[second]))
                try:
                    result = plan.fn(*args)
                except Deferred:
                    odd[node_id] = DEFERRED
                    settled = False
                    if node_id not in outputs:
                        outputs[node_id] = plan.defaults
                except Exception as problem:
                    odd[node_id] = FAILED
                    errors[node_id] = error_text(problem)
                    if node_id not in outputs:
                        outputs[node_id] = plan.defaults
                else:
                    outputs[node_id] = (result,) if plan.single else tuple(result)
                ended = clock() - collector.spent
                took = ended - started
                if took > budget:
                    odd[node_id] = FAILED
                    errors[node_id] = ctx.bypass(node_id, took)
                note(started)
                note(took)
                if not settled:
                    unsettled.add(node_id)
                started = ended
                done += 1
        finally:
            if record is not None and timed:
                profiler = self.observer.profiler
                if self._replay_indices[0] is not profiler:
                    self._replay_indices = (profiler, profiler.run_indices(run_ids))
                count = len(timed) // 2
                nodes = self._replay_indices[1][:count]
                profiler.replayed(nodes, run_reasons[:count], timed[0::2], timed[1::2])
            if done == len(steps):
                self.observer.nodes_run += runs
                visited.update(dict.fromkeys(done_template, serial))
                status.update(done_template)
            else:
                self.observer.nodes_run += sum(step[0] is not None for step in steps[:done])
                finished = [step[1] for step in steps[:done]]
                visited.update(dict.fromkeys(finished, serial))
                status.update({node_id: done_template[node_id] for node_id in finished})
            status.update(odd)
        return True

    def _compile_schedule(
        self, schedule: list[_Step]
    ) -> tuple[list[_ReplayStep], dict[str, NodeStatus], list[str], np.ndarray]:
        """The replay's steps for a recorded schedule, and the status each node gets unless it
        fails or defers. A node whose arguments are stored values and at most one eager link
        gets them bound now (stored values only change with an edit, which drops the schedule)."""
        steps: list[_ReplayStep] = []
        statuses: dict[str, NodeStatus] = {}
        for plan, node_id, key in schedule:
            if plan is None:
                steps.append((None, node_id, None, key, None, None))
                statuses[node_id] = CACHED
                continue
            statuses[node_id] = OK
            kinds = [kind for kind, _, _ in plan.args]
            simple = set(kinds) <= {_STORED, _LINKED} and kinds.count(_LINKED) <= 1
            if not simple:
                steps.append((plan, node_id, None, 0, None, None))
                continue
            values = plan.instance.values
            bound = [values[first] if kind == _STORED else None for kind, first, _ in plan.args]
            if _LINKED not in kinds:
                steps.append((plan, node_id, None, 0, tuple(bound), ()))
                continue
            at = kinds.index(_LINKED)
            _, src, index = plan.args[at]
            steps.append((plan, node_id, src, index, tuple(bound[:at]), tuple(bound[at + 1 :])))
        run_plans = [plan for plan, _, _ in schedule if plan is not None]
        reasons = np.asarray([p.reason for p in run_plans], dtype=np.uint8)
        return steps, statuses, [p.node_id for p in run_plans], reasons

    def _run_node(self, plan: _Plan, cls: str, key: int) -> None:
        node_id = plan.node_id
        outputs, values, unsettled = self.ctx.outputs, plan.instance.values, self._unsettled
        args: list[Any] = []
        pulls: list[_LinkPull] = []
        settled = True
        for kind, first, second in plan.args:
            if kind == _STORED:
                args.append(values[first])
            elif kind == _LINKED:
                args.append(outputs[first][second])
                if first in unsettled:
                    settled = False
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
        started = busy_clock()
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
            outputs[node_id] = (result,) if plan.single else tuple(result)
            self._status[node_id] = OK
        took = busy_clock() - started
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

    def _capture_feedback(self) -> None:
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
        if not self._feedback_links:
            return
        ran = {OK, FAILED, DEFERRED}
        captured: set[Link] = set()
        while True:
            todo = [
                link
                for link in self._feedback_links
                if link not in captured and self._status.get(link.dst) in ran
            ]
            if not todo:
                return
            for link in todo:
                self._evaluate(link.src)
                captured.add(link)
                value = self._value_of(link.src, link.src_pin)
                self.ctx.feedback[(link.dst, link.dst_pin)] = self._keepers[link](value)
