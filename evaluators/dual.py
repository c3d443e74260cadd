"""The dual evaluator: lazy right after a structural edit, a flat program once one is ready.

A structural edit switches to the lazy evaluator at once (it reads the live patch, so the very next
frame shows the edit). When no structural edit came for `debounce` seconds, a snapshot is taken
and a background thread compiles a flat program from it. At the next frame boundary the program is
swapped in, but only if the patch revision still matches (otherwise it is dropped and a new build
starts). Value edits never rebuild: they dirty the active evaluator's downstream cone, and edits
made while a build was running are replayed into the new program when it is swapped in.

Both halves share one ExecutionContext, so cached results, node state (LFO phase, frame delays) and
last good outputs survive every swap.

The builder is cooperative (`_Turns`): between small chunks of work it waits while a frame is
running, so a rebuild of a large patch does not stretch the frames that run meanwhile. Between
frames it runs freely. When frames run back to back (a render, or an engine whose frames take
longer than its period) there is no "between": each frame then first grants the builder a slice
in proportion to the previous frame (`BUILD_SHARE`, capped), less the time it already had since
that frame, so the build always progresses and the slow lazy frames end soon; a paced loop with
idle time (`BACK_TO_BACK_GAP` or more between frames) grants nothing and keeps its frames as
they were. A render need not wait at all: `build_now()` compiles the program on
the frame thread before its first frame. The builder never touches GL. Old programs are released
on the builder thread, in its turns. After handing a program over,
the builder generates its HOT code (evaluators/flat/codegen.py) the same way; the program runs its
step loop until the code is ready.

Small edits skip the lazy phase: the program a structural edit stops is kept (not run), and the
new program is built from it (evaluators/flat/incremental.py), keeping the slots, steps, order,
classes, keys and generated code of everything the edit did not touch. `prepare()` does that
between frames, when a host calls it as edits arrive (the engine does); otherwise the next frame
does it first. It takes a small fraction of a full build, less than the lazy walk the frame
would run instead (about 16 to 20 ms against 28 ms at 10,000 nodes), so the next frame shows the
edit and runs flat, and so do the frames after it; chunks of HOT code the edit changed are
generated on the builder thread meanwhile. "Small" is up to a quarter of the nodes touched with
idle time between frames (`MAX_CHANGED`, evaluators/flat/incremental.py), and up to half when frames
run back to back (`MAX_CHANGED_BACKGROUND`): then the lazy walk the next frame would run costs
about as much as deriving, and every frame after it would be slow until a background build
swapped in. When the edit is too big for that (or deriving fails), the frame runs lazily as
above, and the background build starts from the stopped program too (deriving up to half the
nodes). With `incremental=False` every build starts from scratch.

Released programs break their own reference cycles (lazy-input pulls refer to their program), and
`close()` releases the running one, so a closed evaluator is freed with everything it held.

While builds run, the interpreter's switch interval is shortened (process-wide, counted, so that
overlapping builds of several evaluators restore it once, at the end of the last one).
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from evaluators.flat.build_steps import finish
from evaluators.flat.incremental import MAX_CHANGED, MAX_CHANGED_BACKGROUND, EditJournal
from evaluators.flat.program import FlatProgram, NotDerived, program_output
from evaluators.graph.ir import PatchSnapshot
from evaluators.graph.view import expanded
from evaluators.lazy import LazyEvaluator
from evaluators.protocol import EvaluatorMode, NodeClass, NodeStatus
from evaluators.run.context import ExecutionContext
from evaluators.run.observer import FrameObserver
from nodes import Patch, PatchEvent

BuildResult = tuple[int, "FlatProgram | None", float, "str | None"]
"""(token, program or None, seconds, error text or None)"""


class _ShortSwitchInterval:
    """A short switch interval while any build runs: it hands the interpreter back to a waiting
    frame quickly. Process-wide, so builds count themselves in and out."""

    _lock = threading.Lock()
    _active = 0
    _saved = 0.0

    def __enter__(self) -> None:
        with self._lock:
            if _ShortSwitchInterval._active == 0:
                _ShortSwitchInterval._saved = sys.getswitchinterval()
                sys.setswitchinterval(0.0005)
            _ShortSwitchInterval._active += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            _ShortSwitchInterval._active -= 1
            if _ShortSwitchInterval._active == 0:
                sys.setswitchinterval(_ShortSwitchInterval._saved)


def compile_program(
    token: int,
    snapshot: PatchSnapshot,
    ctx: ExecutionContext,
    watched: tuple[str, ...],
    between_steps: Callable[[], None] | None = None,
    previous: FlatProgram | None = None,
    code_later: bool = False,
) -> BuildResult:
    """Compile a flat program (from `previous` when given, for edits of up to
    `MAX_CHANGED_BACKGROUND` of the nodes: no frame waits for it), calling `between_steps`
    between the build's steps (evaluators/flat/build_steps.py), or at once without it (then with its
    HOT code unless `code_later`); a failure to compile is reported, never raised."""
    started = time.perf_counter()
    try:
        if between_steps is None:
            program: FlatProgram | None = FlatProgram(
                snapshot, ctx, watched, previous=previous, code_later=code_later,
                max_changed=MAX_CHANGED_BACKGROUND,
            )  # fmt: skip
        else:
            build = FlatProgram.building(
                snapshot, ctx, watched, previous, max_changed=MAX_CHANGED_BACKGROUND
            )
            program = finish(build, between_steps)
        problem = None
    except Exception as error:  # a bug in compiling must not stop the frame loop
        program, problem = None, f"{type(error).__name__}: {error}"
    return (token, program, time.perf_counter() - started, problem)


class _Turns:
    """Who runs now: a frame, or the builder.

    The builder runs while no frame runs (between frames, or while a host waits), and during
    slices a frame grants it (`grant`). Having used a granted slice, it waits for the next frame
    to end (or the next grant): when frames run back to back, the frame thread decides how much
    of its time goes to the build, so the build always progresses and no frame is cut into.
    `clock` measures slices (time.perf_counter; tests give a fake one)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._cond = threading.Condition()
        self._frame_running = False
        self._frames_ended = 0
        self._handed_back_at = -1  # `_frames_ended` when the builder last ended a granted slice
        self._grant_until: float | None = None
        self._work_items = 0  # requests given to the builder and not done yet
        self._stopping = False

    # ------------------------------------------------------------ the frame thread
    def frame_started(self) -> None:
        with self._cond:
            self._frame_running = True

    def frame_ended(self) -> None:
        """A frame ended, or a host waits without running frames: the builder may run."""
        with self._cond:
            self._frame_running = False
            self._frames_ended += 1
            self._cond.notify_all()

    @property
    def busy(self) -> bool:
        return self._work_items > 0

    def grant(self, seconds: float, real_limit: float) -> float:
        """Let the builder run for `seconds` (on `clock`) and wait until it used them, ran out
        of work or `real_limit` real seconds passed (a step it cannot cut); returns the seconds
        it ran (on `clock`)."""
        with self._cond:
            if not self._work_items or self._stopping:
                return 0.0
            started = self.clock()
            self._grant_until = started + seconds
            self._cond.notify_all()
            deadline = time.monotonic() + real_limit
            while self._grant_until is not None and self._work_items:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cond.wait(left)
            self._grant_until = None
            return self.clock() - started

    def stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()

    # ------------------------------------------------------------ the builder thread
    def work_added(self) -> None:
        with self._cond:
            self._work_items += 1

    def work_done(self) -> None:
        with self._cond:
            self._work_items -= 1
            self._cond.notify_all()

    def wait_for_turn(self) -> None:
        """Hand a granted slice back once it is used up; wait while a frame has the turn."""
        with self._cond:
            if self._grant_until is not None and self.clock() >= self._grant_until:
                self._grant_until = None
                self._handed_back_at = self._frames_ended
                self._cond.notify_all()
            while not self._may_run():
                self._cond.wait()

    def _may_run(self) -> bool:
        if self._stopping or self._grant_until is not None:
            return True
        return not self._frame_running and self._frames_ended != self._handed_back_at


class _Builder:
    """A background thread that compiles flat programs, one request at a time, in the turns
    frames leave it (`_Turns`)."""

    SLICE_SECONDS = 0.0005  # how often a build looks whether a frame wants the turn

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.turns = _Turns(clock)
        self._slice_started = 0.0
        self._requests: queue.Queue[Any] = queue.Queue()
        self._lock = threading.Lock()
        self._result: BuildResult | None = None
        self._builds_waiting = 0
        self._thread = threading.Thread(target=self._work, name="patchbay-builder", daemon=True)
        self._thread.start()

    def _yield(self) -> None:
        """Called between the steps of a build (evaluators/flat/build_steps.py): every
        `SLICE_SECONDS`, let a frame that wants the turn run first."""
        clock = self.turns.clock
        if clock() - self._slice_started < self.SLICE_SECONDS:
            return
        self.turns.wait_for_turn()
        self._slice_started = clock()

    def request(self, token: int, snapshot: PatchSnapshot, ctx: ExecutionContext,
                watched: tuple[str, ...], previous: FlatProgram | None) -> None:  # fmt: skip
        with self._lock:
            self._builds_waiting += 1
        self.turns.work_added()
        self._requests.put((token, snapshot, ctx, watched, previous))

    def retire(self, program: FlatProgram) -> None:
        """Drop an old program on this thread, not in the frame loop."""
        self.turns.work_added()
        self._requests.put(program)

    def generate(self, program: FlatProgram) -> None:
        """Generate a running program's missing HOT code on this thread."""
        self.turns.work_added()
        self._requests.put(("code", program))

    def take_result(self) -> BuildResult | None:
        with self._lock:
            result, self._result = self._result, None
        return result

    def stop(self) -> None:
        self.turns.stop()
        self._requests.put(None)
        self._thread.join(timeout=5)

    def _work(self) -> None:
        while True:
            item = self._requests.get()
            if item is None:
                return
            self.turns.wait_for_turn()
            self._slice_started = self.turns.clock()
            self._do(item)
            del item
            self.turns.work_done()

    def _do(self, item: Any) -> None:
        if isinstance(item, FlatProgram):
            item.release()  # freeing it takes a while: in the builder's turn
        elif item[0] == "code":
            with _ShortSwitchInterval():
                self._generate_code(item[1])
        else:
            token, snapshot, ctx, watched, previous = item
            with self._lock:
                self._builds_waiting -= 1
            with _ShortSwitchInterval():
                result = compile_program(token, snapshot, ctx, watched, self._yield, previous)
                del previous
                with self._lock:
                    self._result = result
                if result[1] is not None:
                    self._generate_code(result[1])

    def _generate_code(self, program: FlatProgram) -> None:
        """Generate a handed-over program's HOT code (evaluators/flat/codegen.py) while it runs its
        step loop; a new build request (or a bypass changing the list) leaves the rest to the
        frame loop. Compiling a chunk holds the interpreter for a millisecond or two, so each
        starts in the builder's turn."""
        code = program.hot_code
        if code is None:
            return
        while code.pending and program.hot_code is code:
            with self._lock:
                if self._builds_waiting:
                    break
            self.turns.wait_for_turn()
            code.advance()
        code.background = False


class DualEvaluator:
    """What the editor runs: see the module note."""

    #: When frames run back to back (less than `BACK_TO_BACK_GAP` seconds between them) while the
    #: builder has work, each frame first grants it this many times the previous frame's
    #: duration (less the time since that frame ended, which it had already), at most
    #: `MAX_BUILD_GRANT` seconds. A loop with more idle time than that keeps its frames as they
    #: are: the builder works in the idle time.
    BUILD_SHARE = 4.0
    BACK_TO_BACK_GAP = 0.002
    MAX_BUILD_GRANT = 0.05
    MIN_BUILD_GRANT = 0.0002  # the least a slice is worth waking the builder for (tiny frames)

    def __init__(
        self,
        patch: Patch,
        context: ExecutionContext | None = None,
        gpu: Any = None,
        debounce: float = 0.05,
        background: bool = True,
        incremental: bool = True,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        """`clock` times frames and the builder's slices (tests give a fake one)."""
        self.patch, self._own_view = expanded(patch)  # instances inlined (evaluators/graph/view.py)
        patch = self.patch
        self.ctx = context if context is not None else ExecutionContext(gpu)
        # One observer for the lazy half and every program swapped in: statuses, errors, runs.
        self.observer = FrameObserver()
        self.lazy = LazyEvaluator(patch, self.ctx, observer=self.observer)
        self.program: FlatProgram | None = None
        self.debounce = debounce
        self.background = background
        self.incremental = incremental
        self._stopped: FlatProgram | None = None  # what the next build starts from
        self._underived = -1  # the token of an edit too big to build from the stopped program
        self._stopped_exported = True  # the stopped program's outputs are in the context
        self._lazy_ran = False  # lazy frames ran since the program was stopped
        self.derived_swaps = 0  # programs built from the stopped one on the frame thread
        self.last_build_seconds = 0.0
        self.last_frame_seconds = 0.0
        self.last_build_error: str | None = None
        self.builds = 0
        self.swaps = 0
        self._watched: tuple[str, ...] = ()
        self._token = 0  # changes whenever a built program would no longer fit
        self._building: int | None = None
        self._failed_token = -1
        self._last_structural = time.monotonic() - debounce
        self._edited: set[str] = set()
        self._journal = EditJournal()  # the edits since the program was stopped
        self._built: BuildResult | None = None  # a result compiled on this thread
        self._clock = clock
        self._frame_ended_at: float | None = None  # on `clock`
        self._frame_work_seconds = 0.0  # the last frame without the slice it granted
        self.frames_back_to_back = False  # the last frame started less than BACK_TO_BACK_GAP
        # after the one before ended
        self.granted_seconds = 0.0  # slices granted to the builder so far (for benchmarks)
        self._builder = _Builder(clock) if background else None
        self._unsubscribe = patch.subscribe(self._on_event)

    @property
    def mode(self) -> EvaluatorMode:
        return EvaluatorMode.FLAT if self.program is not None else EvaluatorMode.LAZY

    # ----------------------------------------------------------------- edits
    def _on_event(self, event: PatchEvent) -> None:
        if event.kind == "structural":
            self._token += 1
            self._last_structural = time.monotonic()
            self._to_lazy()
        elif event.kind == "value" and event.node_id is not None:
            self._edited.add(event.node_id)
        if self._stopped is not None:
            self._journal.note(event)

    def _to_lazy(self) -> None:
        program = self.program
        if program is None:
            return
        self.program = None
        if self._stopped is not None:
            self._retire(self._stopped)
            self._stopped = None
        if self.incremental:
            # Kept as it is: the next frame builds from it. Its outputs go to the context only
            # when a lazy frame or a full build needs them.
            self._stopped = program
            self._stopped_exported = False
            self._lazy_ran = False
            self._journal = EditJournal()
        else:
            program.export_context(self.patch.nodes)
            self._retire(program)

    def _export_stopped(self) -> None:
        """Hand the stopped program's last outputs and feedback values to the context (for the
        lazy evaluator and full builds, which read them there)."""
        if self._stopped is not None and not self._stopped_exported:
            self._stopped.export_context(self.patch.nodes)
            self._stopped_exported = True

    def _retire(self, program: FlatProgram) -> None:
        if self._builder is not None:
            self._builder.retire(program)
        else:
            program.release()

    def watch(self, node_ids: Iterable[str]) -> None:
        """Also evaluate these nodes every frame (previews, inspected pins)."""
        watched = tuple(dict.fromkeys(node_ids))
        if watched == self._watched:
            return
        self._watched = watched
        self.lazy.watch(watched)
        program = self.program
        if program is not None and all(program.runs_every_frame(w) for w in watched):
            return  # the running program computes them already: no rebuild for a click
        self._token += 1
        self._to_lazy()

    # ----------------------------------------------------------------- frames
    def run_frame(self, t: float, frame: int) -> None:
        """Evaluate one frame at clock `t`; never raises because of a node."""
        started = time.perf_counter()
        self.patch.flush()  # edits inside definitions reach the halves as one burst
        if self._frame_ended_at is not None:
            gap = self._clock() - self._frame_ended_at
            self.frames_back_to_back = gap < self.BACK_TO_BACK_GAP
        if self._builder is not None:
            self._grant_builder()
            self._builder.turns.frame_started()
        work_started = self._clock()
        try:
            self._maybe_swap()
            if self.program is None and self._stopped is not None and self._building is None:
                self._derive_now()
            self.ctx.advance(t, frame)
            program = self.program
            if program is None:
                self._export_stopped()
                self.lazy.evaluate_frame()
                self._lazy_ran = True
            else:
                if self._edited:
                    program.refresh_values(self.patch, self._edited)
                    self._edited.clear()
                program.run()
        finally:
            self._frame_ended_at = self._clock()
            self._frame_work_seconds = self._frame_ended_at - work_started
            if self._builder is not None:
                self._builder.turns.frame_ended()
        self._maybe_build()
        self.last_frame_seconds = time.perf_counter() - started

    def _grant_builder(self) -> None:
        """Frames back to back starve a build (or code generation) that only runs between
        frames: grant it a slice first, in proportion to the last frame (see `BUILD_SHARE`).
        With idle time between frames (a paced 60 fps loop) it grants nothing."""
        assert self._builder is not None
        turns = self._builder.turns
        if not turns.busy or self._frame_ended_at is None or not self.frames_back_to_back:
            return
        had = self._clock() - self._frame_ended_at
        wanted = min(self.BUILD_SHARE * self._frame_work_seconds, self.MAX_BUILD_GRANT) - had
        if wanted > 0:
            wanted = max(wanted, self.MIN_BUILD_GRANT)
            self.granted_seconds += turns.grant(wanted, real_limit=wanted + 0.01)

    def _maybe_swap(self) -> None:
        if self._building is None:
            return
        if self._builder is not None:
            result = self._builder.take_result()
        else:
            result, self._built = self._built, None
        if result is not None:
            self._swap_in(result)

    def _swap_in(self, result: BuildResult) -> None:
        """Run the program of a finished build from the next frame, if it still fits the patch."""
        token, program, seconds, problem = result
        self._building = None
        self.last_build_seconds = seconds
        self.last_build_error = problem
        if program is None:
            self._failed_token = token
            return
        if token != self._token or program.revision != self.patch.revision:
            self._retire(program)
            # Nodes removed while it was compiling may have had a state made for them.
            self.ctx.keep_only(self.patch.nodes)
            return
        if self._stopped is not None:
            self._retire(self._stopped)
            self._stopped = None
        program.report_to(self.observer)
        program.adopt_live_values()  # frames ran while it was being built
        program.adopt_context()
        if self._edited:
            program.refresh_values(self.patch, self._edited)
            self._edited.clear()
        self.program = program
        self.swaps += 1

    def prepare(self) -> None:
        """Between frames, after edits: build now the program a small structural edit needs
        (see the module note), so the next frame only runs it. A host calls this when edits
        arrive between frames (the engine does); otherwise the next frame does it."""
        self.patch.flush()
        if self.program is None and self._stopped is not None and self._building is None:
            self._derive_now()

    def _derive_now(self) -> None:
        """Build the program from the stopped one on this thread, when that is cheap (see the
        module note); otherwise the frame runs lazily and a background build follows."""
        stopped = self._stopped
        if stopped is None or self._underived == self._token:
            return
        started = time.perf_counter()
        try:
            program = FlatProgram(
                self.patch, self.ctx, self._watched, previous=stopped,
                only_derived=True, code_later=self._builder is not None,
                max_changed=self._derive_limit(), journal=self._journal,
            )  # fmt: skip
        except NotDerived:
            self._underived = self._token  # too big an edit: lazy, then a background build
            return
        except Exception as error:  # a bug in compiling must not stop the frame loop
            self._underived = self._token
            self.last_build_error = f"{type(error).__name__}: {error}"
            return
        self.last_build_seconds = time.perf_counter() - started
        self.last_build_error = None
        self.builds += 1
        self._stopped = None
        self._retire(stopped)
        program.report_to(self.observer)
        self.observer.profiler.know(program.hot_info)  # not in the first frame it runs
        if self._lazy_ran:
            program.adopt_live_values()  # lazy frames ran since the edit stopped the program
            program.adopt_context()
        self.program = program
        self.swaps += 1
        self.derived_swaps += 1
        if self._builder is not None and program.hot_code is not None:
            if program.hot_code.pending:
                self._builder.generate(program)
            else:
                program.hot_code.background = False

    def _derive_limit(self) -> float:
        """How much of the patch an edit may touch and still be derived on this thread: with idle
        time between frames, little enough that the next frame stays short; when frames run
        back to back, as much as a background build derives (the lazy walk the next frame would
        run instead costs about as much, and every frame after it would be slow until a
        background build swapped in)."""
        return MAX_CHANGED_BACKGROUND if self.frames_back_to_back else MAX_CHANGED

    def _maybe_build(self) -> None:
        if self.program is not None or self._building is not None:
            return
        if time.monotonic() - self._last_structural < self.debounce:
            return  # wait until the edits settle
        if self._token == self._failed_token:
            return  # this patch failed to compile: stay lazy until it changes
        self._export_stopped()
        snapshot = PatchSnapshot.of(self.patch)
        self.builds += 1
        self._building = self._token
        previous = self._stopped
        if self._builder is None:
            self._built = compile_program(
                self._token, snapshot, self.ctx, self._watched, previous=previous
            )
        else:
            self._builder.request(self._token, snapshot, self.ctx, self._watched, previous)

    def build_now(self, code_now: bool = True) -> bool:
        """Compile the flat program on this thread, so that frames run flat from the next one:
        for a render, which has no edit to show lazily (and whose frames, back to back, would
        share their time with a background build), or a host loading a patch. `code_now`: HOT
        code included (a render); otherwise the builder thread generates it while the program
        runs its step loop. False when the patch does not compile; frames then run lazily, as
        they would have."""
        self.patch.flush()
        if self._building is not None:
            return self.wait_for_flat()
        if self.program is None:
            self.adopt_build(self.compile_now(code_now))
        return self.program is not None

    def compile_now(self, code_now: bool = True) -> BuildResult:
        """The first half of `build_now`: compile the flat program of the patch as it is. On any
        thread, while no frame of this evaluator runs and nothing edits its patch (a host that
        loads a patch beside the one playing); `adopt_build` then swaps it in."""
        self.patch.flush()
        self._export_stopped()
        self.builds += 1
        self._building = self._token
        snapshot = PatchSnapshot.of(self.patch)
        code_later = not code_now and self._builder is not None
        return compile_program(
            self._token, snapshot, self.ctx, self._watched, previous=self._stopped,
            code_later=code_later,
        )  # fmt: skip

    def adopt_build(self, result: BuildResult) -> None:
        """Swap in what `compile_now` made (on the frame thread); HOT code it left to be made is
        generated on the builder thread while the program runs its step loop."""
        self._swap_in(result)
        program = self.program
        if program is None or self._builder is None:
            return
        if program.hot_code is not None and program.hot_code.pending:
            self._builder.generate(program)

    def wait_for_flat(self, timeout: float = 10.0) -> bool:
        """Run no frames, but let a pending build finish and swap (for tools and tests)."""
        deadline = time.monotonic() + timeout
        self.patch.flush()
        if self._builder is not None:
            self._builder.turns.frame_ended()  # no frame runs meanwhile: the builder may
        while self.program is None and time.monotonic() < deadline:
            self._maybe_build()
            self._maybe_swap()
            if self.program is None:
                time.sleep(0.002)
        return self.program is not None

    # ----------------------------------------------------------------- queries
    def output(self, node_id: str, pin: str = "out") -> Any:
        program = self.program
        if program is None and not self._stopped_exported:
            program = self._stopped  # right after an edit, before the next frame
        return program_output(self.patch, self.ctx, program, node_id, pin)

    def status(self, node_id: str) -> NodeStatus:
        if self.program is not None and node_id in self.program.ir.index:
            return self.program.status(node_id)
        return self.lazy.status(node_id)

    def error(self, node_id: str) -> str | None:
        if self.program is not None and node_id in self.program.ir.index:
            return self.program.error(node_id)
        return self.lazy.error(node_id)

    def node_class(self, node_id: str) -> NodeClass:
        return self.lazy.node_class(node_id)

    def explain(self, node_id: str) -> list[str]:
        """Why the node runs (or is served from its cache), in plain words, from whichever half
        runs it (both write to the one profiler)."""
        if self.program is not None and node_id in self.program.ir.index:
            return self.program.explain(node_id)
        return self.lazy.explain(node_id)

    def retry(self, node_id: str) -> None:
        """Run a node bypassed for taking too long again, from the next frame (the bypass is
        kept in the shared context, so both halves see it and its end)."""
        self.lazy.retry(node_id)
        if self.program is not None:
            self.program.retry(node_id)

    @property
    def nodes_run(self) -> int:
        """Compute calls so far, over both halves (for tests and benchmarks)."""
        return self.observer.nodes_run

    def close(self) -> None:
        """Stop the builder and release the program; the evaluator can then be collected."""
        self._unsubscribe()
        self.lazy.close()
        if self._builder is not None:
            self._builder.stop()
        if self._stopped is not None:
            self._export_stopped()
            self._stopped.release()
            self._stopped = None
        if self.program is not None:
            self.program.export_context(self.patch.nodes)
            self.program.release()
            self.program = None
        if self._own_view:
            self.patch.close()
