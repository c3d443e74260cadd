"""The execution context: everything a running patch keeps between frames, apart from its program.

One context is shared by every evaluator that runs the same patch (the dual evaluator hands the
same context to its lazy and its flat half), which is what makes swaps invisible:

- `states`: per node path (`NodePath`), the private state of stateful nodes (LFO phase, gate
  memory).
- `cache`: per node id, the cache key and outputs of CONST/USER nodes; a node whose key is unchanged
  is not run again, whatever evaluator looks. `shared`: the same entries by key, for nodes without
  state: a node meeting a key another node computed (the same node in two identical instances of a
  definition, fed the same inputs) takes that result instead of running (`remember`, `recall`).
- `outputs`: the last good outputs of every node, read when a node fails or is deferred. An
  evaluator that keeps newer ones elsewhere (the lazy replay's slots) hands over how to write
  them (`hold_outputs`); reading `outputs`, or a held node's `output_of`, writes them first.
- `feedback`: per (node, pin), the value a feedback input reads this frame (last frame's source).
- the frame clock (`t`, `frame`, `dt`) and the GPU service (`gpu`, None when headless without GL).
- `settings`: the patch's settings (the evaluator binds the live dict), read by nodes through
  properties such as `resolution` and `bpm` (`live_bpm`, when set, wins over the `bpm` setting: a
  tempo that a live source such as MIDI clock gives, set by the controls runtime); `folder`: the
  patch's `folder` (relative file names in values resolve against it; None: the current
  directory).
- `bypassed`: nodes that ran longer than `time_budget` seconds in one frame (default
  `NODE_TIME_BUDGET_SECONDS`), with the message they report ("took 1.3 s, bypassed; retry to run
  it again"), measured on `busy_clock()`, which stops while the garbage collector runs (a pause
  of the whole process is no node's fault). Every evaluator skips them (their outputs keep the
  last good value) until `retry(node_id)`; `bypass_epoch` changes with the set, so flat programs
  notice cheaply.
- `memory` (evaluators/run/memory_budget.py): the bytes node results and textures hold against
  `limits.memory_bytes`; a node whose result would pass it is bypassed like a slow one, with the
  budget's message (`refuse`). Removing a node gives back what it held.
- `submit(fn, *args)`: a worker pool for blocking work (file reads, image decoding) that nodes
  start and then report `Deferred` until it is done; `release_all()` shuts it down.
- `services` (evaluators.services.registry): long-lived I/O (the OSC server), made on the frame
  thread the first time a node asks (`service(name)`), told at every `advance()` that a frame starts
  (they drain their queues then), closed by `release_all()`.

Evaluators forward patch events to `on_patch_event`: removing a node drops everything kept for it
and closes its state (a state with a `close()` method gives back what it holds, e.g. pooled GPU
textures); changing the patch resolution drops every cached result (`cache_epoch` tells flat
programs to reload), since cache keys do not include settings.

The frame thread owns the context. A background build (the dual evaluator's) also reads it while
compiling: last good outputs, feedback values and cache entries, which the program copies and
reloads when it is swapped in (`adopt_live_values`, `adopt_context`), and it creates the states of
nodes it binds through `state_for`: dict.setdefault keeps one state per path, and `init_state`
must be cheap and touch no GL. States made for nodes removed during a build are released with the
discarded program (`keep_only`). A state is kept with the `init_state` that made it: a node whose
type a node pack reloaded (another `init_state`) gets a fresh state of the new code's, the old one
closed.
"""

from __future__ import annotations

import concurrent.futures
import functools
import gc
import threading
import time
from collections.abc import Callable, Container
from operator import itemgetter
from pathlib import Path
from typing import Any

from evaluators.graph.path import NodePath
from evaluators.protocol import NodeClass
from evaluators.run.memory_budget import MemoryBudgetError, MemoryMeter
from evaluators.services.registry import Services
from nodes import EditOp, NodeInstance, NodeSpec, PatchEvent
from nodes.errors import one_line
from nodes.tempo import DEFAULT_BPM

#: How long one node may run in one frame before it is bypassed on later frames.
NODE_TIME_BUDGET_SECONDS = 1.0


class _CollectorTime:
    """Seconds the garbage collector has run so far in this process (a `gc.callbacks` entry)."""

    def __init__(self) -> None:
        self.spent = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.spent += time.perf_counter() - self._started


_COLLECTOR_TIME = _CollectorTime()
gc.callbacks.append(_COLLECTOR_TIME)


def busy_clock() -> float:
    """Seconds on a clock that stops while the garbage collector runs: node timings."""
    return time.perf_counter() - _COLLECTOR_TIME.spent


def collector_seconds() -> float:
    """Seconds the garbage collector has run so far in this process."""
    return _COLLECTOR_TIME.spent


WORKER_THREADS = 2

HOT, USER, CONST = NodeClass.HOT, NodeClass.USER, NodeClass.CONST
CLASS_RANK = {CONST: 0, USER: 1, HOT: 2}


class CacheEntry:
    """The result of a CONST/USER node for one cache key."""

    __slots__ = ("error", "key", "outputs")

    def __init__(self, key: int, outputs: tuple[Any, ...], error: str | None) -> None:
        self.key = key
        self.outputs = outputs
        self.error = error


class ExecutionContext:
    """State that outlives programs: see the module note."""

    def __init__(self, gpu: Any = None) -> None:
        self.t = 0.0
        self.frame = 0
        self.dt = 0.0
        self.gpu = gpu
        self.states: dict[NodePath, Any] = {}
        # The init_state that made each state: a node whose type was reloaded from a node pack
        # (another init_state) starts over with a state of the new code's.
        self._state_makers: dict[NodePath, Any] = {}
        self.cache: dict[str, CacheEntry] = {}
        self.shared: dict[int, CacheEntry] = {}
        self._outputs: dict[str, tuple[Any, ...]] = {}
        # Outputs kept elsewhere, newer than `_outputs`: (their nodes, how to write them). The
        # lock makes a reader on another thread (a background build) wait for a write under way;
        # re-entrant, so a write that leads to a read on its own thread goes on.
        self._held: tuple[Container[str], Callable[[dict[str, Any]], None]] | None = None
        self._held_lock = threading.RLock()
        self.feedback: dict[tuple[str, str], Any] = {}
        self.settings: dict[str, Any] = {}
        self.live_bpm: float | None = None
        self.folder: Path | None = None
        self.cache_epoch = 0
        self.frames_run = 0
        self.time_budget = NODE_TIME_BUDGET_SECONDS
        self.bypassed: dict[str, str] = {}
        self.bypass_epoch = 0
        self.memory = MemoryMeter(gpu)
        if gpu is not None and hasattr(gpu, "memory"):
            gpu.memory = self.memory  # asked before each texture it allocates
        self._workers: concurrent.futures.ThreadPoolExecutor | None = None
        self.services = Services()
        self.render_wait = 0.0  # seconds `ready` waits for background work (renders only)

    @property
    def outputs(self) -> dict[str, tuple[Any, ...]]:
        """The last good outputs of every node, with held ones written first."""
        if self._held is not None:
            self.write_outputs()
        return self._outputs

    def output_of(self, node_id: str) -> tuple[Any, ...] | None:
        """The last good outputs of one node, or None; held ones are written first only when
        they include it."""
        held = self._held
        if held is not None and node_id in held[0]:
            self.write_outputs()
        return self._outputs.get(node_id)

    def hold_outputs(self, nodes: Container[str], write: Callable[[dict[str, Any]], None]) -> None:
        """Newer outputs of `nodes` are kept elsewhere: `write(outputs)` puts them in the dict,
        before anyone reads them through `outputs` or `output_of`. (A holder that keeps a
        reference to the dict calls `write_outputs` before reading held nodes through it.)"""
        with self._held_lock:
            held = self._held
            if held is not None and held[1] != write:
                held[1](self._outputs)  # someone else's: written now
            self._held = (nodes, write)

    def write_outputs(self) -> None:
        """Write held outputs (`hold_outputs`) into `outputs`, if any."""
        with self._held_lock:
            held = self._held
            if held is not None:
                held[1](self._outputs)
                self._held = None  # only now: a reader on another thread waits for the write

    def service(self, name: str) -> Any:
        """The long-lived service `name` (e.g. "osc"), opened on first use; frame thread only."""
        return self.services.get(name, self)

    def ready(self, work: concurrent.futures.Future[Any]) -> bool:
        """Whether background work a node started is done. When rendering (`render_wait` > 0:
        a headless player running frames as fast as it can) it first waits for it, up to that
        many seconds, so each rendered frame shows what its time asks for (a video's frame, a
        loaded file) instead of the previous output; live play never waits."""
        if self.render_wait > 0 and not work.done():
            concurrent.futures.wait([work], timeout=self.render_wait)
        return work.done()

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        """Run `fn(*args)` on the context's worker pool (made on first use)."""
        if self._workers is None:
            self._workers = concurrent.futures.ThreadPoolExecutor(WORKER_THREADS, "patchbay-worker")
        return self._workers.submit(fn, *args)

    def remember(self, node_id: str, entry: CacheEntry, shareable: bool) -> None:
        """Cache a node's result; a successful one of a node without state is also shared."""
        self._forget_shared(self.cache.get(node_id))
        self.cache[node_id] = entry
        if shareable and entry.error is None:
            self.shared[entry.key] = entry

    def recall(self, node_id: str, key: int) -> CacheEntry | None:
        """A result another node computed for this key, cached for `node_id` too; or None."""
        entry = self.shared.get(key)
        if entry is not None:
            self.cache[node_id] = entry
        return entry

    def _forget_shared(self, entry: CacheEntry | None) -> None:
        if entry is not None and self.shared.get(entry.key) is entry:
            del self.shared[entry.key]

    def bypass(self, node_id: str, seconds: float) -> str:
        """Skip `node_id` on later frames: it took `seconds` (over the budget) in one frame.
        Returns the message the node reports."""
        message = (
            f"took {seconds:.1f} s, bypassed (over the {self.time_budget:g} s budget a "
            "frame); retry to run it again"
        )
        self.bypassed[node_id] = message
        self.bypass_epoch += 1
        return message

    def refuse(self, node_id: str, reason: str) -> str:
        """Skip `node_id` on later frames: its result would pass the memory budget (`reason`, from
        `memory.charge`). Returns the message the node reports."""
        message = f"{reason}; bypassed, retry to run it again"
        self.bypassed[node_id] = message
        self.bypass_epoch += 1
        return message

    def unbypass(self, node_id: str) -> bool:
        """Let a bypassed node run again, with its cached result dropped; False if it was not
        bypassed."""
        if self.bypassed.pop(node_id, None) is None:
            return False
        self._forget_shared(self.cache.pop(node_id, None))
        self.bypass_epoch += 1
        return True

    @property
    def resolution(self) -> tuple[int, int]:
        """The patch resolution in pixels (width, height): the `resolution` setting, else the GPU
        service's default size, else 640x360."""
        size = self.settings.get("resolution")
        if size is None and self.gpu is not None:
            size = getattr(self.gpu, "default_size", None)
        if size is None:
            return (640, 360)
        width, height = (max(1, int(v)) for v in size)
        return (width, height)

    @property
    def bpm(self) -> float:
        """The patch tempo in beats per minute: the live tempo when one is set (MIDI clock), else
        the `bpm` setting, else 120."""
        if self.live_bpm is not None:
            return self.live_bpm
        return float(self.settings.get("bpm", DEFAULT_BPM))

    def advance(self, t: float, frame: int) -> None:
        self.dt = t - self.t if self.frames_run else 0.0
        self.t = t
        self.frame = frame
        self.frames_run += 1
        self.services.frame_started()

    def state_for(self, path: NodePath, spec: NodeSpec) -> Any:
        maker = spec.init_state
        assert maker is not None
        state = self.states.get(path)
        if state is not None and self._state_makers.get(path, maker) is not maker:
            if self.states.pop(path, None) is state:  # not already replaced by another thread
                _close_state(state)
            state = None
        if state is None:
            self._state_makers[path] = maker
            state = self.states.setdefault(path, maker(path))
        return state

    def on_patch_event(self, event: PatchEvent) -> None:
        """Keep the context in step with an edit (see the module note); idempotent."""
        if event.op == EditOp.REMOVE_NODE and event.node_id is not None:
            self.release_node(event.node_id)
            if self.bypassed.pop(event.node_id, None) is not None:
                self.bypass_epoch += 1
        elif event.op == EditOp.SET_VALUE and event.node_id in self.bypassed:
            self.unbypass(event.node_id)  # an edit of a bypassed node gives it another chance
        elif event.op == EditOp.SETTINGS and "resolution" in (event.value or {}):
            self.cache.clear()
            self.shared.clear()
            self.cache_epoch += 1

    def release_node(self, node_id: str) -> None:
        """Drop what is kept for a node and close its state."""
        self._forget_shared(self.cache.pop(node_id, None))
        self.outputs.pop(node_id, None)
        self.memory.release(node_id)
        for key in [key for key in self.feedback if key[0] == node_id]:
            del self.feedback[key]
        self._state_makers.pop(NodePath.of(node_id), None)
        _close_state(self.states.pop(NodePath.of(node_id), None))

    def release_all(self) -> None:
        """Close every node state and service and shut the worker pool down (when the context is
        discarded with its patch); work not started is cancelled, running work is not waited
        for."""
        self.services.close()
        states, self.states = self.states, {}
        self._state_makers = {}
        for state in states.values():
            _close_state(state)
        workers, self._workers = self._workers, None
        if workers is not None:
            workers.shutdown(wait=False, cancel_futures=True)

    def keep_only(self, live: Container[str]) -> None:
        """Release everything kept for nodes not in `live` (e.g. states a background build made
        for nodes removed meanwhile)."""
        gone = {key for key in (*self.cache, *self.outputs, *self.memory.held) if key not in live}
        gone.update(path.node_id for path in self.states if path.node_id not in live)
        gone.update(node_id for node_id, _ in self.feedback if node_id not in live)
        for node_id in gone:
            self.release_node(node_id)


def _close_state(state: Any) -> None:
    close = getattr(state, "close", None)
    if callable(close):
        close()


class StoredPull:
    """A lazy input with no link: calling it returns the pin's stored value."""

    __slots__ = ("value",)
    connected = False

    def __init__(self, value: Any) -> None:
        self.value = value

    def __call__(self) -> Any:
        return self.value


def last_output(ctx: ExecutionContext, instance: NodeInstance, pin: str) -> Any:
    """A node's last good output on `pin` as kept in the context, or the pin default."""
    index = instance.spec.output_index(pin)
    if index is None:
        raise KeyError(f"node {instance.id!r} has no output {pin!r}")
    outputs = ctx.output_of(instance.id) or default_outputs(instance.spec)
    return outputs[index]


def slot_getter(slots: list[int]) -> Callable[[list[Any]], Any]:
    """An itemgetter over a list of values that always returns a sequence of the values in
    `slots` (the argument gatherer of a step, in flat programs and lazy replays)."""
    if len(slots) == 1:
        return itemgetter(slice(slots[0], slots[0] + 1))
    if not slots:
        return itemgetter(slice(0, 0))
    return itemgetter(*slots)


def bind_compute(
    spec: NodeSpec, ctx: ExecutionContext, node_id: str, input_names: tuple[str, ...]
) -> Callable[..., Any]:
    """The node's compute function with `ctx` and `state` bound, taking the values of
    `input_names` positionally; dynamic pins reach compute as one mapping after the static ones."""
    fn = spec.compute
    leading: list[Any] = []
    if spec.uses_context:
        leading.append(ctx)
    if spec.stateful:
        leading.append(ctx.state_for(NodePath.of(node_id), spec))
    bound = functools.partial(fn, *leading) if leading else fn
    if spec.dynamic_inputs is None:
        return bound
    static_count = len(spec.inputs)
    dynamic_names = input_names[static_count:]

    def with_dynamic_pins(*args: Any) -> Any:
        return bound(
            *args[:static_count], dict(zip(dynamic_names, args[static_count:], strict=True))
        )

    return with_dynamic_pins


def bind_capture(spec: NodeSpec, ctx: ExecutionContext, node_id: str) -> Callable[[Any], Any]:
    """How a node keeps the value its feedback inputs read next frame: as is, or through the
    spec's `capture` (e.g. a copy of a texture its source will draw over)."""
    if spec.capture is None:
        return _as_is
    state = ctx.state_for(NodePath.of(node_id), spec) if spec.stateful else None
    return functools.partial(spec.capture, ctx, state)


def _as_is(value: Any) -> Any:
    return value


def default_outputs(spec: NodeSpec) -> tuple[Any, ...]:
    return tuple(out.default for out in spec.outputs)


def error_text(error: BaseException) -> str:
    """A node's error as one safe line: type and the message's first line, control characters
    escaped, short."""
    try:
        lines = str(error).strip().splitlines()
    except Exception:  # an exception whose message cannot even be made
        lines = []
    message = lines[0] if lines else ""
    if isinstance(error, MemoryBudgetError):
        return one_line(message)  # it names the budget itself
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return one_line(text)
