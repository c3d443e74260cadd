"""The execution context: everything a running patch keeps between frames, apart from its program.

One context is shared by every evaluator that runs the same patch (the dual evaluator hands the
same context to its lazy and its flat half), which is what makes swaps invisible:

- `states`: per node path, the private state of stateful nodes (LFO phase, gate memory).
- `cache`: per node id, the cache key and outputs of CONST/USER nodes; a node whose key is unchanged
  is not run again, whatever evaluator looks.
- `outputs`: the last good outputs of every node, read when a node fails or is deferred.
- `feedback`: per (node, pin), the value a feedback input reads this frame (last frame's source).
- the frame clock (`t`, `frame`, `dt`) and the GPU service (`gpu`, None when headless without GL).
- `bypassed`: node id -> reason, for nodes that must not run (one that hung the engine): they
  fail with the reason instead of computing; set before the evaluators bind the patch.
- `settings`: the patch's settings (the evaluator binds the live dict), read by nodes through
  properties such as `resolution`; `folder`: the patch's `folder` (relative file names in values
  resolve against it; None: the current directory).

Evaluators forward patch events to `on_patch_event`: removing a node drops everything kept for it
and closes its state (a state with a `close()` method gives back what it holds, e.g. pooled GPU
textures); changing the patch resolution drops every cached result (`cache_epoch` tells flat
programs to reload), since cache keys do not include settings.

The frame thread owns the context. A background build (the dual evaluator's) also reads it while
compiling: last good outputs, feedback values and cache entries, which the program copies and
reloads when it is swapped in (`adopt_live_values`, `adopt_context`), and it creates the states of
nodes it binds through `state_for`: dict.setdefault keeps one state per path, and `init_state`
must be cheap and touch no GL. States made for nodes removed during a build are released with the
discarded program (`keep_only`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Container
from pathlib import Path
from typing import Any

from evaluators._protocol import NodeClass
from nodes import NodeInstance, NodeSpec, PatchEvent

HOT, USER, CONST = NodeClass.HOT, NodeClass.USER, NodeClass.CONST
CLASS_RANK = {CONST: 0, USER: 1, HOT: 2}


class CacheEntry:
    """The result of a CONST/USER node for one cache key."""

    __slots__ = ("error", "key", "outputs")

    def __init__(self, key: int, outputs: tuple[Any, ...], error: str | None) -> None:
        self.key = key
        self.outputs = outputs
        self.error = error


class NodeBypassed(Exception):
    """Raised in place of a bypassed node's compute; its text is the reason, shown as is."""


class ExecutionContext:
    """State that outlives programs: see the module note."""

    def __init__(self, gpu: Any = None) -> None:
        self.t = 0.0
        self.frame = 0
        self.dt = 0.0
        self.gpu = gpu
        self.states: dict[str, Any] = {}
        self.cache: dict[str, CacheEntry] = {}
        self.outputs: dict[str, tuple[Any, ...]] = {}
        self.feedback: dict[tuple[str, str], Any] = {}
        self.settings: dict[str, Any] = {}
        self.bypassed: dict[str, str] = {}
        self.folder: Path | None = None
        self.cache_epoch = 0
        self.frames_run = 0

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

    def advance(self, t: float, frame: int) -> None:
        self.dt = t - self.t if self.frames_run else 0.0
        self.t = t
        self.frame = frame
        self.frames_run += 1

    def state_for(self, path: str, spec: NodeSpec) -> Any:
        state = self.states.get(path)
        if state is None:
            assert spec.init_state is not None
            state = self.states.setdefault(path, spec.init_state(path))
        return state

    def on_patch_event(self, event: PatchEvent) -> None:
        """Keep the context in step with an edit (see the module note); idempotent."""
        if event.op == "remove_node" and event.node_id is not None:
            self.release_node(event.node_id)
        elif event.op == "settings" and "resolution" in (event.value or {}):
            self.cache.clear()
            self.cache_epoch += 1

    def release_node(self, node_id: str) -> None:
        """Drop what is kept for a node and close its state."""
        self.cache.pop(node_id, None)
        self.outputs.pop(node_id, None)
        for key in [key for key in self.feedback if key[0] == node_id]:
            del self.feedback[key]
        _close_state(self.states.pop(node_path(node_id), None))

    def release_all(self) -> None:
        """Close every node state (when the context is discarded with its patch)."""
        states, self.states = self.states, {}
        for state in states.values():
            _close_state(state)

    def keep_only(self, live: Container[str]) -> None:
        """Release everything kept for nodes not in `live` (e.g. states a background build made
        for nodes removed meanwhile)."""
        gone = {key for key in (*self.cache, *self.outputs) if key not in live}
        gone.update(path[1:] for path in self.states if path[1:] not in live)
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
    outputs = ctx.outputs.get(instance.id) or default_outputs(instance.spec)
    return outputs[index]


def node_path(node_id: str) -> str:
    """The execution path of a top-level node; state is keyed by it."""
    return "/" + node_id


def bind_compute(
    spec: NodeSpec, ctx: ExecutionContext, node_id: str, input_names: tuple[str, ...]
) -> Callable[..., Any]:
    """The node's compute function with `ctx` and `state` bound, taking the values of
    `input_names` positionally; dynamic pins reach compute as one mapping after the static ones."""
    reason = ctx.bypassed.get(node_id)
    if reason is not None:
        return functools.partial(_bypassed, reason)
    fn = spec.compute
    leading: list[Any] = []
    if spec.uses_context:
        leading.append(ctx)
    if spec.stateful:
        leading.append(ctx.state_for(node_path(node_id), spec))
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
    state = ctx.state_for(node_path(node_id), spec) if spec.stateful else None
    return functools.partial(spec.capture, ctx, state)


def _bypassed(reason: str, *args: Any) -> Any:
    raise NodeBypassed(reason)


def _as_is(value: Any) -> Any:
    return value


def default_outputs(spec: NodeSpec) -> tuple[Any, ...]:
    return tuple(out.default for out in spec.outputs)


def error_text(error: BaseException) -> str:
    if isinstance(error, NodeBypassed):
        return str(error)
    message = str(error).strip().splitlines()
    first = message[0] if message else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__
