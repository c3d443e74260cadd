"""The flat evaluator: a patch compiled into a program of steps over integer slots.

Building a `FlatProgram` (from an immutable snapshot, on any thread):
1. Number the nodes, sort them topologically, classify them and compute their cache keys.
2. Give every node output, every unlinked input and every feedback input a slot in one list. A
   pass-through node (its spec names the input it returns unchanged, as subpatch inlets, outlets
   and instances do) fed eagerly shares its source's slot and compiles to no step.
3. Compile each node into steps `(call, get, out)`: `slots[out] = call(*get(slots))`, where `get`
   is an `operator.itemgetter` of the argument slots and `call` the compute function with its
   context and state bound (`functools.partial`). Several outputs: one step stores the tuple, then
   one pick step per output.
4. Split the work: the main program is everything the roots need through eager links, in two
   lists: CONST/USER steps (run only when dirty) and HOT steps (run every frame). What is reached
   only through a lazy input compiles to a guarded sub-program that runs when the input is pulled
   (at most once per frame); sources of feedback inputs get one too, run after the main program.

A background build runs the same code by steps (`FlatProgram.building`, a generator that yields
after every few nodes: evaluators/flat/build_steps.py), so its driver decides what happens between
them (the dual evaluator's builder waits for its turn); `FlatProgram(...)` runs them at once.

Running a frame is then: dirty CONST/USER steps (rare), the HOT list, feedback captures. The HOT
loop has no recursion, no per-node dictionary lookup and no per-step try: an exception leaves its
output slot untouched (the last good value), is recorded, and the loop resumes after it.

Memory plan (evaluators/flat/memory_plan.py): the HOT list runs in `memory_order` when an output is
big enough to matter (sizes measured on the outputs the program holds, again after its first
frame), and a HOT node whose output is a pooled render target gives it back after its last
consumer in the frame (a release step), unless the output must survive the frame (roots: sinks,
watched nodes; feedback and lazy sources). Such a node's last good output is then stale (another
node may draw into the target): when it fails or is bypassed, what it feeds does not run and
keeps what it showed last (`_stale_output`), instead of running on its last output.

Value edits do not rebuild: `refresh_values` writes the new values into their slots and recomputes
the keys of the edited node's downstream cone, which marks exactly that cone dirty.

Time budget: a node that runs longer than `ctx.time_budget` in one frame is bypassed on later
frames (see evaluators/run/context.py). CONST/USER and lazily pulled nodes are timed one by one
(they run rarely). The HOT loop stays untimed: the whole list is timed, and only after a frame over
the budget does the next frame run a timed copy of the loop, which finds the node and bypasses it;
so a slow HOT node costs two slow frames, and the loop itself costs two clock reads a frame.

Memory budget (evaluators/run/memory_budget.py): a CONST/USER or pulled node's outputs are charged
each time it runs; the HOT list's once, after the program's first frame, so the HOT loop charges
nothing. A node whose outputs would pass the budget gets its last good outputs back and is
bypassed, as a slow one is.

Generated code (evaluators/flat/codegen.py): the HOT list is also turned into straight-line Python
(no loop, no argument gathering), which runs it once complete, with the same outcome, failures
included. A synchronous build generates it before returning; a background build (the dual
evaluator) hands the program over first and its builder generates the code afterwards, the frame
loop finishing what it leaves; a list changed by a bypass is generated a chunk a frame. Chunks not
generated yet run as the step loop; the step loop alone runs timed frames and lists whose
generation failed.

Built from the previous program (evaluators/flat/incremental.py): after an edit, only what the edit
touched is compiled again, and the generated code keeps its chunks of unchanged steps.

Profiling (evaluators/insight/profiler.py): the reasons of HOT steps are static per program
(`HotSteps`, made with the step lists). A frame hands the profiler the list's total time; on the
profiler's sampled frames (and after a frame over its budget) the timed copy of the loop runs
instead and hands over per-step times. CONST/USER and pulled nodes are recorded one by one with
their cause, and the clean CONST/USER nodes of the main program as cache hits (one list, rebuilt
only when something ran or was dirtied).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np

from evaluators.flat.build_steps import STEP_ITEMS, BuildSteps, finish, gathered
from evaluators.flat.codegen import CHUNK_STEPS, HotCode
from evaluators.flat.incremental import MAX_CHANGED, EditJournal, change_since, deriving
from evaluators.flat.memory_plan import (
    hot_dependencies,
    hot_order,
    last_consumers,
    releasable,
    release_call,
    value_bytes,
)
from evaluators.graph.analysis import OWN_CLASS, analyzing, ir_node_info
from evaluators.graph.ir import EAGER, FEEDBACK, LAZY, GraphIR, PatchSnapshot
from evaluators.graph.patch_graph import PatchGraph
from evaluators.graph.path import NodePath
from evaluators.graph.queries import ProgramView, explain
from evaluators.graph.view import expanded
from evaluators.insight.profiler import (
    COLD_PHASE,
    FORCED,
    HOT_RUN,
    NONDETERMINISTIC,
    PULLED_PHASE,
    HotSteps,
)
from evaluators.protocol import EvaluatorMode, NodeClass, NodeStatus
from evaluators.run.context import (
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
from evaluators.run.memory_budget import MemoryBudgetError
from evaluators.run.observer import FrameObserver, unreported_status
from evaluators.run.steps import Step, StepProgram
from nodes import Link, NodeInstance, Patch, PatchEvent

IDLE, OK, CACHED = NodeStatus.IDLE, NodeStatus.OK, NodeStatus.CACHED
FAILED = NodeStatus.FAILED

_EAGER = frozenset({EAGER})
_DEPENDS = frozenset({EAGER, LAZY})
_POOL_HOOKS = ("release_output", "gave_back")  # what a state giving targets back has
#: A HOT list this short is generated at once when the memory plan reorders it after the first
#: frame (a few chunks); a longer one a chunk a frame.
SMALL_CODE_STEPS = 4 * CHUNK_STEPS
#: A program built from the previous one compiles this many chunks of code at once, in the build
#: (the rest of its code was the previous program's).
SMALL_CODE_CHUNKS = 4


class NotDerived(Exception):
    """A program could not be built from the previous one (see `FlatProgram`)."""


class _ProgramPull:
    """A linked lazy input: runs the source's guarded sub-program, then reads its slot."""

    __slots__ = ("program", "slot", "source")
    connected = True

    def __init__(self, program: FlatProgram, source: int, slot: int) -> None:
        self.program = program
        self.source = source
        self.slot = slot

    def __call__(self) -> Any:
        self.program.pull(self.source)
        return self.program.slots[self.slot]


class FlatProgram(StepProgram):
    """A compiled patch at one revision; see the module note. Its step lists run in the step
    runtime (evaluators/run/steps.py), which reports a node by its index."""

    def __init__(
        self,
        snapshot: PatchSnapshot | PatchGraph,
        ctx: ExecutionContext,
        watched: Iterable[str] = (),
        observer: FrameObserver | None = None,
        codegen: bool = True,
        previous: FlatProgram | None = None,
        only_derived: bool = False,
        code_later: bool = False,
        max_changed: float = MAX_CHANGED,
        journal: EditJournal | None = None,
    ) -> None:
        """Build at once. `snapshot`: the patch to build, or on the thread that edits, the live
        patch (then only what changed since `previous` is copied out of it, as far as `journal`
        names it: see `change_since`). `previous`: build from it
        (evaluators/flat/incremental.py) when worth it; with `only_derived`, raise `NotDerived`
        instead of building from scratch; `max_changed`: the share of nodes an edit may touch
        and still be derived. `code_later`: leave generating the HOT code to whoever runs the
        program."""
        build = self._building(
            snapshot, ctx, watched, observer, codegen, previous, only_derived, code_later, False,
            max_changed, journal,
        )  # fmt: skip
        finish(build)

    @classmethod
    def building(
        cls,
        snapshot: PatchSnapshot,
        ctx: ExecutionContext,
        watched: Iterable[str] = (),
        previous: FlatProgram | None = None,
        max_changed: float = MAX_CHANGED,
    ) -> BuildSteps[FlatProgram]:
        """A background build, by steps (evaluators/flat/build_steps.py): returns the program, whose
        HOT code is generated after it is handed over (unless a small derived build generates
        it in its steps). `max_changed`: as for `__init__`."""
        program = cls.__new__(cls)
        yield from program._building(
            snapshot, ctx, watched, None, True, previous, False, False, True, max_changed, None
        )
        return program

    def _building(
        self,
        snapshot: PatchSnapshot | PatchGraph,
        ctx: ExecutionContext,
        watched: Iterable[str],
        observer: FrameObserver | None,
        codegen: bool,
        previous: FlatProgram | None,
        only_derived: bool,
        code_later: bool,
        background: bool,
        max_changed: float,
        journal: EditJournal | None,
    ) -> BuildSteps[None]:
        self.codegen = codegen  # run the HOT list as generated code (evaluators/flat/codegen.py)
        # Statuses, errors and run counts go to the observer (`report_to` hands them over).
        self.observer = observer if observer is not None else FrameObserver()
        self.revision = snapshot.revision
        self.value_revision = snapshot.value_revision
        self.ctx = ctx
        self.holes = 0  # slots nothing uses, left by builds from a previous program
        self.link_set: frozenset[Link] | None = None  # the snapshot's links, once compared
        self.refreshed: set[int] = set()  # nodes whose values `refresh_values` took in
        # From the previous program when it is worth it (evaluators/flat/incremental.py).
        change = (
            change_since(previous, snapshot, max_changed, journal) if previous is not None else None
        )
        self.derived = False
        self.derive_error: str | None = None  # why deriving failed (a full build followed)
        if previous is not None and change is not None:
            try:
                yield from deriving(self, previous, change, watched)
                self.derived = True
            except Exception as problem:  # e.g. a cycle: the full build reports it as it does
                self.derive_error = error_text(problem)
                self.holes = 0
        if only_derived and not self.derived:
            raise NotDerived("a full build is needed")
        if not self.derived:
            if not isinstance(snapshot, PatchSnapshot):
                snapshot = PatchSnapshot.of(snapshot)
            yield from self._compiling(snapshot, watched)
        self.in_order = [i for i in self.order if i in self.main]
        yield
        yield from self._assembling(previous.hot_code if self.derived and previous else None)
        code = self.hot_code
        if code is not None:
            at_once = not background or (self.derived and len(code.missing) <= SMALL_CODE_CHUNKS)
            if at_once and not code_later:
                while code.pending:
                    code.advance()
                    yield
            else:  # generated after the program is handed over, on another thread
                code.background = True
        self.guarded = {
            src: sorted(region, key=self.position.__getitem__)
            for src, region in self.guarded_sets.items()
        }
        self.feedback = self._compile_feedback()

        # Per-node bookkeeping for CONST/USER nodes and per-frame status.
        self.main_cold = [i for i in self.in_order if self.classes[i] != HOT]
        self._hits: list[str] | None = None  # clean main CONST/USER nodes, for the profiler
        self._cold_ran = -1  # serial of the last frame a CONST/USER node ran
        self.clean = [False] * len(self.ir)
        self.dirty_main: set[int] = set()  # CONST/USER nodes of the main program to run
        self.ran = [0] * len(self.ir)
        self.serial = 0
        self.caching = True
        self.timing = False  # time the next frame's HOT steps one by one
        yield from self._adopting_context()

    # ----------------------------------------------------------------- building
    def _compiling(self, snapshot: PatchSnapshot, watched: Iterable[str]) -> BuildSteps[None]:
        """Build everything from the snapshot (see the module note), by steps."""
        ir = self.ir = yield from GraphIR.building(snapshot)
        yield
        self.order = yield from gathered(ir.topological_traversal())
        self.position = [0] * len(ir)
        for position, i in enumerate(self.order):
            self.position[i] = position
        yield
        self.classes, self.keys = yield from analyzing(ir, self.order)
        self.stamps = [node.stamp for node in ir.nodes]

        self.sink_nodes = set(ir.sinks())
        roots = [*self.sink_nodes] + [ir.index[w] for w in watched if w in ir.index]
        self.roots = frozenset(roots)
        self.main = set((yield from gathered(ir.traverse(roots, direction="up", kinds=_EAGER))))
        self.guarded_sets = self._guarded_regions(self.order)
        self.needed = self.main.union(*self.guarded_sets.values())
        yield

        # Slots: outputs first, then inputs that read stored or fed-back values.
        self.slots: list[Any] = []
        self.out_slot: dict[tuple[int, str], int] = {}
        self.node_slots: dict[int, list[int]] = {}  # every output slot of a node
        self.aliases: set[int] = set()  # pass-through nodes sharing their source's slot
        for count, i in enumerate(sorted(self.needed, key=self.position.__getitem__), 1):
            if count % STEP_ITEMS == 0:
                yield
            self._allocate_outputs(i)
        self.value_slot: dict[tuple[int, str], int] = {}
        self.feedback_slot: dict[tuple[int, str], int] = {}
        self.input_slots: dict[int, list[int]] = {}  # slots a node's inputs read from alone
        self.pull_slots: set[int] = set()  # slots holding a lazy input's pull
        self.node_steps: dict[int, list[Step]] = {}
        self.owner: dict[int, int] = {}  # output slot -> node
        for count, i in enumerate(self.node_slots, 1):
            if count % STEP_ITEMS == 0:
                yield
            self.node_steps[i] = self._compile_node(i)
        # Memory plan (evaluators/flat/memory_plan.py): output sizes in bytes of HOT nodes (what
        # they hold now, measured again after the first frame) and the slot of each release.
        self.sizes = {i: value_bytes(self.slots[self.node_slots[i][0]]) for i in self.main}
        self.unmeasured = set(self.main)
        self.release_slot: dict[int, int] = {}
        self.pooled = self._pooled_states(self.main)
        self.reasons: dict[int, int] = {}  # per node, why it runs when it runs every frame

    def _assemble_lists(self, reuse: HotCode | None = None) -> None:
        """The main program's step lists, without the steps of bypassed nodes, nor of what a
        bypassed node feeds when its last output went back to the pool (`_stale_output`).
        `reuse`: code of a previous list whose chunks of the same steps are taken over."""
        finish(self._assembling(reuse))

    def _assembling(self, reuse: HotCode | None) -> BuildSteps[None]:
        """`_assemble_lists`, by steps."""
        bypassed, ids, classes = self.ctx.bypassed, self.ir.ids, self.classes
        node_steps = self.node_steps
        self.bypass_epoch = self.ctx.bypass_epoch
        stale = [i for i in self.pooled if ids[i] in bypassed and self._stale_output(i)]
        skipped = set().union(*(self._hot_cone(i) for i in stale))
        running = self.in_order
        if bypassed or skipped:
            running = [i for i in running if ids[i] not in bypassed and i not in skipped]
        self.all_steps: list[Step] = list(chain.from_iterable(map(node_steps.__getitem__, running)))
        hot = [i for i in running if classes[i] == HOT]
        yield
        self.hot_count = len(hot)
        self.hot_steps = self._memory_planned(hot)
        self._step_index: dict[int, dict[int, int]] = {}  # id of a list -> its `step_indices`
        yield
        self.hot_info = self._steps_info(self.hot_steps)
        self._all_info: HotSteps | None = None  # made when caching is off
        # Generated by the build, or (after a bypass changed the list) a chunk a frame. Not for
        # lists that give GPU targets back: a failure there stops its cone (`_stale_output`),
        # which only the step loop does.
        generate = self.codegen and not self.released
        self.hot_code = HotCode(self.hot_steps, reuse) if generate else None

    # ----------------------------------------------------------------- the step runtime's hooks
    def step_owners(self) -> dict[int, int]:
        return self.owner

    def step_node_id(self, node: int) -> str:
        return self.ir.ids[node]

    def step_deferred(self, node: int) -> None:
        self.tainted.add(node)

    def stale_cone(self, node: int) -> set[int]:
        return self._hot_cone(node) if self._stale_output(node) else set()

    def _pooled_states(self, nodes: Iterable[int]) -> dict[int, Any]:
        """The states of main HOT nodes among `nodes` that can give their output back to the
        pool."""
        ir, ctx, found = self.ir, self.ctx, {}
        for i in nodes:
            spec = ir.nodes[i].spec
            if self.classes[i] == HOT and spec.stateful and i not in self.aliases:
                state = ctx.state_for(NodePath.of(ir.ids[i]), spec)
                if all(callable(getattr(state, name, None)) for name in _POOL_HOOKS):
                    found[i] = state
        return found

    def _stale_output(self, i: int) -> bool:
        """True when node `i`'s last output is a target it gave back to the pool (another node
        may have drawn into it since): what it feeds must not read it."""
        state = self.pooled.get(i)
        return state is not None and bool(state.gave_back(self.slots[self.node_slots[i][0]]))

    def _memory_planned(self, hot: list[int]) -> list[Step]:
        """The HOT steps in memory order, each release step right after the steps of the last
        consumer of the output it gives back (see evaluators/flat/memory_plan.py)."""
        ir = self.ir
        order = hot_order(ir, hot, self.sizes)
        self.released = releasable(
            ir, order, self.roots, self.aliases, lambda i: len(self.node_slots[i]) == 1,
            self.pooled.get,
        ) if self.pooled else {}  # fmt: skip
        if not self.released:
            return list(chain.from_iterable(map(self.node_steps.__getitem__, order)))
        after: dict[int, list[int]] = {}
        for i, consumer in last_consumers(ir, order, self.released).items():
            after.setdefault(consumer, []).append(i)
        steps: list[Step] = []
        for i in order:
            steps += self.node_steps[i]
            for source in after.get(i, ()):
                slot = self.release_slot.get(source)
                if slot is None:
                    slot = self.release_slot[source] = self._new_slot(None)
                self.owner[slot] = i
                consumers = [self.node_slots[e.dst][0] for e in ir.out_edges[source]]
                get = slot_getter([self.node_slots[source][0], *consumers])
                steps.append((release_call(self.released[source]), get, slot))
        return steps

    def _measure_sizes(self) -> None:
        """Sizes of HOT outputs as they came out of the first frame (of the nodes whose outputs
        were not measured yet: all of them, or in a program built from the previous one, those
        with new output slots); reorders the HOT list when they differ from what the order
        assumed."""
        slots, sizes, unmeasured = self.slots, self.sizes, self.unmeasured
        self.unmeasured = set()
        measured = {i: value_bytes(slots[self.node_slots[i][0]]) for i in unmeasured}
        if any(sizes.get(i) != size for i, size in measured.items()):
            self.sizes = {**sizes, **measured}
            steps, code = self.hot_steps, self.hot_code
            self._assemble_lists(reuse=code)
            if self.hot_steps == steps:  # the same order: the code made for it still serves
                self.hot_steps, self.hot_code = steps, code
                self._step_index = {}
            elif self.hot_code is not None and len(self.hot_steps) <= SMALL_CODE_STEPS:
                self.hot_code.generate()  # a few chunks: at once, as the build does

    def _reason(self, i: int) -> int:
        """Why node `i` runs when it runs every frame: its class, or caching being off."""
        if self.classes[i] != HOT:
            return FORCED
        own_hot = OWN_CLASS[self.ir.nodes[i].spec.determinism] == HOT
        return NONDETERMINISTIC if own_hot else HOT_RUN

    def _steps_info(self, steps: list[Step]) -> HotSteps:
        """What the profiler records for a step list: node and reason per step (static)."""
        owner, ids, reasons = self.owner, self.ir.ids, self.reasons
        nodes = [owner[out] for _, _, out in steps]
        reasons.update((i, self._reason(i)) for i in set(nodes).difference(reasons))
        return HotSteps(list(map(ids.__getitem__, nodes)), list(map(reasons.__getitem__, nodes)))

    def _guarded_regions(self, order: list[int]) -> dict[int, set[int]]:
        """Per source of a lazy or feedback link reached by the program, the nodes outside the
        main program that evaluating that source needs."""
        ir = self.ir
        regions: dict[int, set[int]] = {}
        todo = list(self.main)
        reached = set(self.main)
        while todo:
            i = todo.pop()
            for edge in ir.in_edges[i]:
                if edge.kind == EAGER or edge.src in regions:
                    continue
                region = ir.upstream([edge.src], _EAGER) - self.main
                regions[edge.src] = region
                for j in region - reached:
                    reached.add(j)
                    todo.append(j)
        return regions

    def _new_slot(self, value: Any) -> int:
        self.slots.append(value)
        return len(self.slots) - 1

    def _allocate_outputs(self, i: int) -> None:
        node = self.ir.nodes[i]
        source = self._alias_source(i)
        if source is not None:
            self.out_slot[(i, node.spec.outputs[0].name)] = source
            self.node_slots[i] = [source]
            self.aliases.add(i)
            return
        outputs = self.ctx.outputs.get(node.id) or default_outputs(node.spec)
        slots = [self._new_slot(value) for value in outputs]
        for out, slot in zip(node.spec.outputs, slots, strict=True):
            self.out_slot[(i, out.name)] = slot
        if len(slots) > 1:
            slots.append(self._new_slot(tuple(outputs)))  # the tuple slot comes last
        self.node_slots[i] = slots

    def _alias_source(self, i: int) -> int | None:
        """The slot a pass-through node (spec.passthrough) can share with what feeds it eagerly:
        such a node compiles to no step at all (subpatch inlets, outlets and instances cost
        nothing a frame)."""
        spec = self.ir.nodes[i].spec
        if spec.passthrough is None or len(spec.outputs) != 1:
            return None
        edge = next((e for e in self.ir.in_edges[i] if e.dst_pin == spec.passthrough), None)
        if edge is None or edge.kind != EAGER:
            return None
        return self.out_slot.get((edge.src, edge.src_pin))

    def _compile_node(self, i: int) -> list[Step]:
        if i in self.aliases:
            return []  # shares its source's slot
        node = self.ir.nodes[i]
        linked = {edge.dst_pin: edge for edge in self.ir.in_edges[i]}
        args = []
        own = self.input_slots[i] = []
        for pin in node.inputs:
            edge = linked.get(pin.name)
            stored = node.values[pin.name]
            if edge is None:
                slot = self._new_slot(StoredPull(stored) if pin.lazy else stored)
                self.value_slot[(i, pin.name)] = slot
                own.append(slot)
            elif edge.kind == LAZY:
                source = self.out_slot[(edge.src, edge.src_pin)]
                slot = self._new_slot(_ProgramPull(self, edge.src, source))
                self.pull_slots.add(slot)
                own.append(slot)
            elif edge.kind == FEEDBACK:
                fed = self.ctx.feedback.get((node.id, pin.name), stored)
                slot = self.feedback_slot[(i, pin.name)] = self._new_slot(fed)
                own.append(slot)
            else:
                slot = self.out_slot[(edge.src, edge.src_pin)]
            args.append(slot)
        names = tuple(pin.name for pin in node.inputs)
        call = bind_compute(node.spec, self.ctx, node.id, names)
        outs = self.node_slots[i]
        for slot in outs:
            self.owner[slot] = i
        if len(outs) == 1:
            return [(call, slot_getter(args), outs[0])]
        tuple_slot = outs[-1]
        picks: list[Step] = [
            (itemgetter(k), slot_getter([tuple_slot]), slot) for k, slot in enumerate(outs[:-1])
        ]
        return [(call, slot_getter(args), tuple_slot), *picks]

    def _compile_feedback(self) -> list[tuple[int, int, int, int, Callable[[Any], Any]]]:
        """(dst node, source node, source slot, feedback slot, capture), in (dst id, pin) order."""
        found = []
        for (i, pin), slot in self.feedback_slot.items():
            edge = next(e for e in self.ir.in_edges[i] if e.dst_pin == pin)
            source = self.out_slot[(edge.src, edge.src_pin)]
            node = self.ir.nodes[i]
            keep = bind_capture(node.spec, self.ctx, node.id)
            found.append(((node.id, pin), (i, edge.src, source, slot, keep)))
        return [entry for _, entry in sorted(found, key=lambda item: item[0])]

    # ----------------------------------------------------------------- context
    def adopt_context(self) -> None:
        """Mark CONST/USER nodes whose cached result is still valid as clean and load it."""
        finish(self._adopting_context())

    def _adopting_context(self) -> BuildSteps[None]:
        """`adopt_context`, by steps."""
        cache, ids = self.ctx.cache, self.ir.ids
        self.cache_epoch = self.ctx.cache_epoch
        for count, i in enumerate(self.node_slots, 1):
            if count % (8 * STEP_ITEMS) == 0:
                yield
            if self.classes[i] == HOT:
                continue
            entry = cache.get(ids[i])
            if entry is None or entry.key != self.keys[i]:
                entry = self.ctx.recall(ids[i], self.keys[i])  # an identical node's result
            if entry is not None and entry.key == self.keys[i]:
                self._store(i, entry.outputs)
                self.clean[i] = True
                if entry.error:
                    self.observer.errors[ids[i]] = entry.error
            else:
                self._mark_dirty(i)
        self._hits = None

    def _mark_dirty(self, i: int) -> None:
        """A CONST/USER node must run again (HOT nodes run every frame anyway, in the HOT pass,
        after their HOT inputs: never in the pass for dirty nodes)."""
        if self.classes[i] == HOT:
            return
        self.clean[i] = False
        self._hits = None
        if i in self.main:
            self.dirty_main.add(i)

    def adopt_live_values(self) -> None:
        """Load last good outputs and feedback values from the context (before a swap).

        A program built in the background is swapped in after frames ran meanwhile, so what it
        copied from the context while compiling may be stale (a frame delay would replay an old
        value). Call before `adopt_context`, which then loads the still valid cached results.
        """
        outputs, ids, nodes = self.ctx.outputs, self.ir.ids, self.ir.nodes
        for i in self.node_slots:
            found = outputs.get(ids[i])
            if found is not None and len(found) == len(nodes[i].spec.outputs):
                self._store(i, found)
        for (i, pin), slot in self.feedback_slot.items():
            key = (ids[i], pin)
            if key in self.ctx.feedback:
                self.slots[slot] = self.ctx.feedback[key]

    def export_context(self, live: Mapping[str, NodeInstance]) -> None:
        """Write last good outputs and feedback values of the nodes still in the patch (`live`)
        back to the context, before the program is swapped out. A node whose id now holds
        another kind of node (the expanded view reuses an instance's id when its outlets
        change) is not still there: its outputs would not fit."""
        outputs, ids, slots, nodes = self.ctx.outputs, self.ir.ids, self.slots, self.ir.nodes

        def kept(i: int) -> bool:
            now = live.get(ids[i])
            return now is not None and (now.spec is nodes[i].spec or now.spec == nodes[i].spec)

        for i, outs in self.node_slots.items():
            if kept(i):
                outputs[ids[i]] = tuple(slots[s] for s in (outs if len(outs) == 1 else outs[:-1]))
        for (i, pin), slot in self.feedback_slot.items():
            if kept(i):
                self.ctx.feedback[(ids[i], pin)] = slots[slot]

    def _store(self, i: int, outputs: tuple[Any, ...]) -> None:
        if i in self.aliases:
            return  # the slot is its source's, which stores its own outputs
        outs = self.node_slots[i]
        if len(outs) == 1:
            self.slots[outs[0]] = outputs[0]
        else:
            for slot, value in zip(outs[:-1], outputs, strict=True):
                self.slots[slot] = value
            self.slots[outs[-1]] = tuple(outputs)

    def _outputs_of(self, i: int) -> tuple[Any, ...]:
        outs = self.node_slots[i]
        return (self.slots[outs[0]],) if len(outs) == 1 else self.slots[outs[-1]]

    def refresh_values(self, patch: PatchGraph, node_ids: Iterable[str]) -> None:
        """Take the current values of edited nodes from the patch; dirties their cones."""
        touched = []
        for node_id in node_ids:
            i = self.ir.index.get(node_id)
            instance = patch.nodes.get(node_id)
            if i is None or instance is None or instance.stamp == self.stamps[i]:
                continue
            self.stamps[i] = instance.stamp
            self.refreshed.add(i)
            for pin_name, value in instance.values.items():
                slot = self.value_slot.get((i, pin_name))
                if slot is not None:
                    current = self.slots[slot]
                    self.slots[slot] = (
                        StoredPull(value) if isinstance(current, StoredPull) else value
                    )
            if self.classes[i] != HOT:
                touched.append(i)
        if not touched:
            return
        cone = set(self.ir.traverse(touched, kinds=_DEPENDS))
        for j in sorted(cone, key=self.position.__getitem__):
            self._rekey(j)
            self._mark_dirty(j)

    def _rekey(self, i: int) -> None:
        _, self.keys[i] = ir_node_info(self.ir, i, self.classes, self.keys, self.stamps[i])

    # ----------------------------------------------------------------- running
    def run(self) -> None:
        """One frame at the context's clock."""
        self.serial += 1
        self.observer.begin_frame()
        profiler = self.observer.profiler
        profiler.begin(self.ctx.frame, self.ctx.gpu)
        profiler.fresh_program = self.serial == 1
        self.tainted: set[int] = set()
        if self.cache_epoch != self.ctx.cache_epoch:
            self.adopt_context()  # the context dropped its cache (e.g. a new resolution)
        if self.bypass_epoch != self.ctx.bypass_epoch:
            self._assemble_lists(reuse=self.hot_code)  # a node was bypassed or retried
        if not self.caching:
            if self._all_info is None:
                self._all_info = self._steps_info(self.all_steps)
            self._run_main(self.all_steps, self._all_info, None)
            self.observer.nodes_run += len(self.main)
        else:
            if self.dirty_main:
                dirty, self.dirty_main = self.dirty_main, set()
                for i in sorted(dirty, key=self.position.__getitem__):
                    self._run_cold(i, COLD_PHASE)
                    if not self.clean[i]:
                        self.dirty_main.add(i)  # unsettled (deferred input): again next frame
            self._run_main(self.hot_steps, self.hot_info, self.hot_code)
            self.observer.nodes_run += self.hot_count
            if self.serial == 1:
                self._charge_hot(self.unmeasured)
                self._measure_sizes()
        if self.feedback:
            self._capture_feedback()
        if profiler.current is not None:
            if self.caching:
                profiler.hits_served(self._served_from_cache())
            profiler.end()

    def _served_from_cache(self) -> list[str]:
        """The main program's clean CONST/USER nodes that did not run this frame (one list,
        kept while nothing runs or is dirtied)."""
        hits = self._hits
        if hits is None or self._cold_ran >= self.serial - 1:
            clean, ran, serial, ids = self.clean, self.ran, self.serial, self.ir.ids
            hits = [ids[i] for i in self.main_cold if clean[i] and ran[i] != serial]
            self._hits = hits
        return hits

    def _run_main(self, steps: list[Step], info: HotSteps, code: HotCode | None) -> None:
        """Run a step list, timed as a whole (as generated `code` once that is ready), or step
        by step after a frame over the budget and on the profiler's sampled frames."""
        profiler = self.observer.profiler
        started = busy_clock()
        if self.timing or profiler.timing:
            self.timing = False
            mark = profiler.since()
            starts, times = self.run_timed(steps)
            profiler.hot_ran(info, started, busy_clock() - started, starts, times, mark)
            return
        if code is not None and code.error is None:
            self.run_code(code)  # chunks not generated yet run as the step loop
        else:
            self.run_list(steps)
        took = busy_clock() - started
        if took > self.ctx.time_budget:
            self.timing = True
        profiler.hot_ran(info, started, took)
        if code is not None and code.pending and not code.background:
            code.advance()  # not generated by a build (a bypass changed the list): a chunk a frame

    def _hot_cone(self, i: int) -> set[int]:
        """The nodes downstream of `i` (eager and lazy links)."""
        return set(self.ir.traverse([i], kinds=_DEPENDS)) - {i}

    def _run_steps_timed(
        self, i: int, reason: int, detail: str | None, phase: str
    ) -> Exception | None:
        """Run one node's steps (a cold or pulled node), timed and recorded with `reason`;
        returns its failure, if any."""
        profiler = self.observer.profiler
        mark = profiler.since()
        before = self._outputs_of(i)
        started = busy_clock()
        failed = self.run_node_steps(self.node_steps[i])
        if failed is None:
            failed = self._charge(i, before)
        took = busy_clock() - started
        if took > self.ctx.time_budget:
            self.bypass(i, took)
        own = took - profiler.nested_seconds(mark)  # lazy inputs it pulled are recorded apart
        profiler.ran(self.ir.ids[i], started, own, reason, detail, phase)
        return failed

    def _charge(self, i: int, before: tuple[Any, ...]) -> MemoryBudgetError | None:
        """Count node `i`'s new outputs against the memory budget; when they would pass it, put
        `before` (its last good outputs) back and bypass the node. Returns that failure."""
        if self.ir.nodes[i].spec.passthrough is not None:
            return None  # its output is its input, which its source holds
        node_id = self.ir.ids[i]
        refused = self.ctx.memory.charge(node_id, self._outputs_of(i))
        if refused is None:
            return None
        self._store(i, before)
        self.observer.status[node_id] = FAILED
        self.observer.errors[node_id] = self.ctx.refuse(node_id, refused)
        return MemoryBudgetError(refused)

    def _charge_hot(self, nodes: Iterable[int]) -> None:
        """Count the outputs of HOT `nodes` the first frame ran against the memory budget, once
        per program (the HOT loop itself counts nothing): all of them after a full build, the
        ones with new output slots in a program built from the previous one (the others are
        counted already). Only outputs holding an array, or nodes that held one, are counted,
        so this stays a fraction of a frame. A node whose output passes the budget gets its last
        good outputs back and is bypassed from the next frame on."""
        classes, ids, index, bypassed = self.classes, self.ir.ids, self.ir.index, self.ctx.bypassed
        owner, aliases, wanted, slots = self.owner, self.aliases, set(nodes), self.slots
        # The nodes whose outputs hold an array: after a full build, in one pass over the slots
        # (not one per node); after an edit, over the slots of the few nodes it added.
        if len(wanted) * 4 < len(slots):
            node_slots = self.node_slots
            holding = {
                i
                for i in wanted
                if any(isinstance(slots[slot], np.ndarray) for slot in node_slots.get(i, ()))
            }
        else:
            holding = {
                owner[slot]
                for slot, value in enumerate(slots)
                if isinstance(value, np.ndarray) and slot in owner
            }
        holding.update(index[node_id] for node_id in self.ctx.memory.held if node_id in index)
        counted = [i for i in holding if i in wanted and classes[i] == HOT and i not in aliases]
        for i in sorted(counted, key=self.position.__getitem__):
            if ids[i] not in bypassed:
                kept = self.ctx.output_of(ids[i]) or default_outputs(self.ir.nodes[i].spec)
                self._charge(i, kept)

    def retry(self, node_id: str) -> None:
        """Run a bypassed node again from the next frame (the context forgets the bypass)."""
        self.ctx.unbypass(node_id)
        self.observer.errors.pop(node_id, None)
        self.observer.profiler.force(node_id)
        i = self.ir.index.get(node_id)
        if i is not None:
            self._mark_dirty(i)

    def _run_cold(self, i: int, phase: str) -> None:
        """Run a CONST/USER node and cache its result, unless something it read is unsettled."""
        node_id, observer = self.ir.ids[i], self.observer
        if node_id in self.ctx.bypassed:
            observer.status[node_id] = FAILED
            return  # stays dirty: it runs once it is retried
        self._hits = None
        shared = self.ctx.recall(node_id, self.keys[i])  # an identical node ran already
        if shared is not None:
            self._store(i, shared.outputs)
            self.clean[i] = True
            observer.status[node_id] = CACHED
            observer.profiler.hit(node_id)
            return
        observer.nodes_run += 1
        self.ran[i] = self._cold_ran = self.serial
        observer.status[node_id] = OK
        observer.errors.pop(node_id, None)
        reason, detail = FORCED, None
        if observer.profiler.current is not None:
            keys, ids = self.keys, self.ir.ids
            sources = tuple(
                (e.dst_pin, ids[e.src], keys[e.src])
                for e in self.ir.in_edges[i]
                if e.kind != FEEDBACK
            )
            reason, detail = observer.profiler.cause(node_id, (self.stamps[i], sources))
        failed = self._run_steps_timed(i, reason, detail, phase)
        if any(
            e.src in self.tainted and (e.kind == EAGER or self.ran[e.src] == self.serial)
            for e in self.ir.in_edges[i]
        ):
            self.tainted.add(i)
        if i in self.tainted:
            return
        error = observer.errors.get(node_id) if failed is not None else None
        entry = CacheEntry(self.keys[i], self._outputs_of(i), error)
        self.ctx.remember(node_id, entry, not self.ir.nodes[i].spec.stateful)
        self.clean[i] = True

    def pull(self, source: int) -> None:
        """Evaluate a guarded sub-program (the nodes a lazy or feedback source needs)."""
        region = self.guarded.get(source)
        if region is None:
            return  # the source is in the main program and already ran
        serial = self.serial
        for i in region:
            if self.ran[i] == serial:
                continue
            if self.classes[i] != HOT and self.caching:
                if not self.clean[i]:
                    self._run_cold(i, PULLED_PHASE)
                self.ran[i] = serial
                continue
            self.ran[i] = serial
            if self.ir.ids[i] in self.ctx.bypassed:
                self.observer.status[self.ir.ids[i]] = FAILED
                continue
            self.observer.nodes_run += 1
            self._run_steps_timed(i, self._reason(i), None, PULLED_PHASE)

    def _capture_feedback(self) -> None:
        serial, main = self.serial, self.main
        waiting = self.feedback
        while waiting:
            # Pulling a source may run nodes with feedback inputs of their own: go again.
            ran = [entry for entry in waiting if entry[0] in main or self.ran[entry[0]] == serial]
            if not ran:
                return
            for _, source, source_slot, slot, keep in ran:
                self.pull(source)
                self.slots[slot] = keep(self.slots[source_slot])
            waiting = [entry for entry in waiting if entry not in ran]

    def validate(self) -> None:
        """Check the program's invariants; raises ValueError naming the first one broken.

        For debugging and tests: every argument of a main-program step is a stored value, a
        feedback value, a lazy pull, or the output of a step that runs before it; HOT steps run
        after the HOT nodes they depend on (`hot_dependencies`), and their generated code is of
        the current list; guarded regions stay outside the main program. Bypassed nodes hold
        their last outputs.
        """
        produced = set(self.value_slot.values()) | set(self.feedback_slot.values())
        bypassed = [i for i in self.node_slots if self.ir.ids[i] in self.ctx.bypassed]
        produced.update(slot for i in bypassed for slot in self.node_slots[i])
        pulls = {slot for slot, value in enumerate(self.slots) if isinstance(value, _ProgramPull)}
        produced |= pulls
        produced |= {s for i in self.main if self.classes[i] != HOT for s in self.node_slots[i]}
        for _, get, out in self.hot_steps:
            needed = get(list(range(len(self.slots))))
            missing = [slot for slot in needed if slot not in produced]
            if missing:
                node = self.ir.ids[self.owner[out]]
                raise ValueError(f"{node}: reads slots {missing} before anything writes them")
            produced.add(out)
        for source, region in self.guarded.items():
            if self.main.intersection(region):
                raise ValueError(f"guarded region of {self.ir.ids[source]} overlaps the main one")
        if self.hot_code is not None and self.hot_code.steps is not self.hot_steps:
            raise ValueError("the generated HOT code is of another step list")
        first: dict[int, int] = {}
        for n, (_, _, out) in enumerate(self.hot_steps):
            first.setdefault(self.owner[out], n)
        for i, consumers in hot_dependencies(self.ir, list(first)).items():
            if any(first[j] < first[i] for j in consumers):
                raise ValueError("HOT steps are out of topological order")

    def to_dot(self) -> str:
        """Graphviz text of the program: nodes colored by class, idle nodes grey, guarded
        (lazily pulled) nodes dashed."""
        colors = {HOT: "orange", "USER": "palegreen", "CONST": "lightblue"}
        lines = self.ir.to_dot().splitlines()
        for i, node_id in enumerate(self.ir.ids):
            if i not in self.node_slots:
                style = "color=grey fontcolor=grey"
            else:
                dashed = " style=dashed" if i not in self.main else ""
                style = f"style=filled fillcolor={colors[self.classes[i]]}{dashed}"
            lines.insert(-1, f"  n{i} [{style}]; // {node_id}")
        return "\n".join(lines)

    def runs_every_frame(self, node_id: str) -> bool:
        """True if the main program computes this node (or keeps it cached) every frame."""
        i = self.ir.index.get(node_id)
        return i is not None and i in self.main

    def release(self) -> None:
        """Drop the compiled steps and values; breaks the cycles through lazy-input pulls."""
        self.slots = []
        self.node_steps = {}
        self.hot_steps = self.all_steps = []
        self.hot_code = None
        self.guarded = {}

    # ----------------------------------------------------------------- queries
    def output(self, node_id: str, pin: str) -> Any:
        return self.slots[self.out_slot[(self.ir.index[node_id], pin)]]

    def report_to(self, observer: FrameObserver) -> None:
        """Write statuses, errors and run counts to `observer` from now on; it forgets what it
        held and takes this program's errors (a program built in the background, swapped in)."""
        observer.forget()
        observer.errors.update(self.observer.errors)
        observer.nodes_run += self.observer.nodes_run
        self.observer = observer

    def status(self, node_id: str) -> NodeStatus:
        i = self.ir.index[node_id]
        if i not in self.node_slots:
            return IDLE
        found = self.observer.reported(node_id, self.ctx.bypassed)
        if found is not None:
            return found
        needed = i in self.main or self.ran[i] == self.serial
        return unreported_status(needed, self.classes[i] != HOT, node_id in self.observer.errors)

    def error(self, node_id: str) -> str | None:
        return self.observer.error(node_id, self.status(node_id), self.ctx.bypassed, None)

    def explain(self, node_id: str) -> list[str]:
        """Why the node runs (or is served from its cache), in plain words
        (evaluators/graph/queries.py)."""
        view = ProgramView(self.ir, self.classes)
        return explain(view, node_id, self.status(node_id), self.observer, self.ctx)


def program_output(
    patch: PatchGraph, ctx: ExecutionContext, program: FlatProgram | None, node_id: str, pin: str
) -> Any:
    """An output as the program holds it, or, for nodes it does not run, from the context."""
    instance = patch.node(node_id)
    if program is not None and (program.ir.index.get(node_id), pin) in program.out_slot:
        return program.output(node_id, pin)
    return last_output(ctx, instance, pin)


class FlatEvaluator:
    """Runs a patch as a compiled program, recompiled (synchronously) after structural edits."""

    mode = EvaluatorMode.FLAT

    def __init__(
        self,
        patch: Patch,
        context: ExecutionContext | None = None,
        gpu: Any = None,
        caching: bool = True,
        codegen: bool = True,
        incremental: bool = True,
    ) -> None:
        self.patch, self._own_view = expanded(patch)  # instances inlined (evaluators/graph/view.py)
        patch = self.patch
        self.ctx = context if context is not None else ExecutionContext(gpu)
        self.ctx.settings = patch.settings
        self.ctx.folder = patch.folder
        self.caching = caching
        self.codegen = codegen  # False: always the step loop (for comparisons)
        self.incremental = incremental  # rebuild from the previous program (_incremental.py)
        self.program: FlatProgram | None = None
        self.last_build_seconds = 0.0
        self.last_frame_seconds = 0.0  # including a rebuild the frame needed
        self._watched: tuple[str, ...] = ()
        self._rewatched = False  # the watched nodes changed: rebuild on the next frame
        self._edited: set[str] = set()
        self.observer = FrameObserver()  # shared by every program it builds
        self._unsubscribe = patch.subscribe(self._on_event)

    def _on_event(self, event: PatchEvent) -> None:
        self.ctx.on_patch_event(event)
        self.observer.profiler.on_event(event)
        if event.kind == "value" and event.node_id is not None:
            self._edited.add(event.node_id)

    def watch(self, node_ids: Iterable[str]) -> None:
        """Also evaluate these nodes every frame (the program is rebuilt on the next frame)."""
        self._watched = tuple(dict.fromkeys(node_ids))
        self._rewatched = True

    def _drop_program(self) -> None:
        """Retire the program; its feedback values and last good outputs live on in the context."""
        program, self.program = self.program, None
        if program is not None:
            program.export_context(self.patch.nodes)
            program.release()

    def build(self) -> FlatProgram:
        """Compile the patch as it is now (from the previous program, when there is one)."""
        started = time.perf_counter()
        previous, self.program = self.program, None
        if previous is not None:
            previous.export_context(self.patch.nodes)
        self.observer.forget()
        # Built on this thread: from the live patch (a snapshot is made only for a full build).
        program = FlatProgram(
            self.patch, self.ctx, self._watched, observer=self.observer, codegen=self.codegen,
            previous=previous if self.incremental else None,
        )  # fmt: skip
        if previous is not None:
            previous.release()
        program.caching = self.caching
        self.program = program
        self._rewatched = False
        self._edited.clear()
        self.last_build_seconds = time.perf_counter() - started
        return program

    def _current(self) -> FlatProgram:
        program = self.program
        if program is None or program.revision != self.patch.revision or self._rewatched:
            program = self.build()
        elif self._edited:
            program.refresh_values(self.patch, self._edited)
            self._edited.clear()
        return program

    def run_frame(self, t: float, frame: int) -> None:
        """Evaluate one frame at clock `t`; never raises because of a node."""
        started = time.perf_counter()
        self.patch.flush()
        program = self._current()
        self.ctx.advance(t, frame)
        program.run()
        self.last_frame_seconds = time.perf_counter() - started

    def output(self, node_id: str, pin: str = "out") -> Any:
        return program_output(self.patch, self.ctx, self.program, node_id, pin)

    def status(self, node_id: str) -> NodeStatus:
        self.patch.node(node_id)
        if self.program is None or node_id not in self.program.ir.index:
            return IDLE
        return self.program.status(node_id)

    def error(self, node_id: str) -> str | None:
        if self.program is None or node_id not in self.program.ir.index:
            return None
        return self.program.error(node_id)

    def node_class(self, node_id: str) -> NodeClass:
        program = self._current()
        return program.classes[program.ir.index[node_id]]

    def explain(self, node_id: str) -> list[str]:
        """Why the node runs (or is served from its cache), in plain words."""
        self.patch.node(node_id)
        return self._current().explain(node_id)

    def retry(self, node_id: str) -> None:
        """Run a node bypassed for taking too long again, from the next frame."""
        self.patch.node(node_id)
        if self.program is not None:
            self.program.retry(node_id)
        else:
            self.ctx.unbypass(node_id)

    @property
    def nodes_run(self) -> int:
        """Compute calls so far, over every program built (for tests and benchmarks)."""
        return self.observer.nodes_run

    def close(self) -> None:
        self._unsubscribe()
        self._drop_program()
        if self._own_view:
            self.patch.close()
