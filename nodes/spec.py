"""Node specs: how a node type is declared, and the registry of all node types.

A node type is a decorated function. Its signature gives the input pins (annotation = pin type,
default = pin default); two leading parameters are special and never pins: `ctx` receives the
execution context (a `NodeContext`: clock, GPU service) and `state` receives the node instance's
private state, created by the spec's `init_state(path)` and kept by the evaluator, never on the
spec. Lazy inputs receive a `Pull` (call it to get the value, only if needed). Several outputs:
return a tuple in the order of `outputs`. A node with `dynamic_inputs` (pins derived from its
values, such as a shader's uniforms) takes one more, last, parameter: a mapping of the dynamic
pins' values. Pins are derived with the folder of the node's patch file (relative file names
resolve against it); when they cannot be derived (a missing file), `dynamic_inputs` returns an
`any` pin for each value it was given, so that the patch still loads, keeps its values and links,
and the node fails when it runs.

A pin's other facts (range, hint, choices, doc, lazy, feedback) are declared in its annotation,
`Annotated[float, Pin(min=0, hint="slider", doc="...")]`, or in the decorator's dicts keyed by
name (`ranges=`, `hints=`, `choices=`, `docs=`, `lazy=`, `feedback=`). `choices` lists the
values a text pin means (`align`: left, center, right): the editor offers them in a list.
Registration refuses what it would otherwise ignore: a dict name that is no pin, an unknown hint
or `Pin` key, a fact given both ways, an output of no known type; each error is one line naming
the node and the pin.

Specs are immutable and hold no per-instance data, so one spec serves every instance and every
evaluator, on any thread.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import enum
import inspect
import threading
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Annotated, Any, Protocol, runtime_checkable

import numpy as np

from nodes.types import (  # noqa: F401
    PIN_HINTS,
    PIN_TYPES,
    Array,
    Color,
    Num,
    Texture,
    Vec2,
    Vec3,
    pin_type_of_annotation,
    zero_of,
)


class Pull(Protocol):
    """A lazy input: calling it evaluates the upstream branch (once per frame) and returns it."""

    connected: bool

    def __call__(self) -> Any: ...


@runtime_checkable
class NodeContext(Protocol):
    """What a compute function's `ctx` offers (evaluators.ExecutionContext is the one every
    evaluator passes): the frame clock, the patch's folder and tempo, the GPU and other
    services, and a worker pool for slow work whose result a later frame picks up."""

    t: float  # patch time in seconds
    dt: float  # seconds since the previous frame
    frame: int
    folder: Path | None  # of the patch file, for relative file names (None: never saved)
    live_bpm: float | None  # a tempo set live (MIDI clock), else None
    gpu: Any  # the GL service, or None without GL

    @property
    def resolution(self) -> tuple[int, int]: ...

    @property
    def bpm(self) -> float: ...

    def service(self, name: str) -> Any: ...

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]: ...

    def ready(self, work: concurrent.futures.Future[Any]) -> bool: ...


#: `dynamic_inputs(values, folder)`: the dynamic pins of a node with these values whose patch file
#: is in `folder` (None when the patch was never saved).
DynamicInputs = Callable[[Mapping[str, Any], Path | None], tuple["PinSpec", ...]]


class Determinism(enum.Enum):
    """What a node's outputs depend on, besides its inputs."""

    DETERMINISTIC = "deterministic"  # inputs only: cached as long as the inputs are unchanged
    NONDETERMINISTIC = "nondeterministic"  # time, noise, external streams: runs every frame
    USER_INPUT = "user_input"  # a value the person sets live: reruns when it changes


def _same_value(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            type(a) is type(b)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    return bool(a == b)


same_value = _same_value
"""Whether two pin values are the same (arrays compared by content, NaN equal to NaN in them)."""


def _same_fields(a: Any, b: Any) -> bool:
    """Dataclass equality that holds for array values too (numpy's `==` is elementwise, and its
    truth value undefined), so pins with array defaults compare like any others."""
    return type(a) is type(b) and all(
        _same_value(getattr(a, f.name), getattr(b, f.name)) for f in fields(a)
    )


@dataclass(frozen=True)
class PinSpec:
    """An input pin: its type, its default value and how the evaluator feeds it."""

    name: str
    type: str
    default: Any = None
    lazy: bool = False
    feedback: bool = False
    # UI hint for the editor, one of nodes.types.PIN_HINTS.
    hint: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    # The values a text pin means, in the order the editor lists them (None: any text).
    choices: tuple[str, ...] | None = None

    def __eq__(self, other: object) -> bool:
        return _same_fields(self, other)


@dataclass(frozen=True)
class OutputSpec:
    """An output pin; `default` is what it reads before the node has ever run successfully."""

    name: str
    type: str
    default: Any = None

    def __eq__(self, other: object) -> bool:
        return _same_fields(self, other)


@dataclass(frozen=True)
class NodeSpec:
    """An immutable description of a node type."""

    id: str
    category: str
    inputs: tuple[PinSpec, ...]
    outputs: tuple[OutputSpec, ...]
    determinism: Determinism
    compute: Callable[..., Any]
    sink: bool = False
    uses_context: bool = False
    init_state: Callable[[str], Any] | None = None
    version: int = 1
    doc: str = ""
    legacy_ids: tuple[str, ...] = ()
    examples: tuple[tuple[Mapping[str, Any], Any], ...] = ()
    # Pins derived from the node's values and its patch's folder (e.g. a shader's uniforms),
    # re-derived when one of the `dynamic_from` values changes. Their values reach compute as one
    # mapping after the others.
    dynamic_inputs: DynamicInputs | None = None
    dynamic_from: tuple[str, ...] = ()
    # For nodes with feedback inputs whose values are mutable resources (textures): called as
    # capture(ctx, state, value) at the end of each frame the node ran, with the value its
    # feedback input's source has then; what it returns is what that input reads next frame.
    capture: Callable[[Any, Any, Any], Any] | None = None
    # The input whose value compute returns unchanged (a pass-through, such as a subpatch's
    # outlet): an evaluator may read what feeds that input instead of running the node.
    passthrough: str | None = None
    # One sentence per pin (inputs and outputs by name; a name that is both shares it), shown by
    # the library panel, tooltips and `patchbay nodes --json`. The node's own sentence is the
    # first sentence of `doc` (`summary`).
    pin_docs: Mapping[str, str] = field(default_factory=dict)
    # A placeholder for a type that is not installed (nodes/packs.py): it keeps an instance's
    # values and links and fails when it runs.
    missing: bool = False
    _input_index: Mapping[str, PinSpec] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_input_index", {pin.name: pin for pin in self.inputs})

    @property
    def summary(self) -> str:
        """The first sentence of the node's doc (its one-line description)."""
        text = " ".join(self.doc.split())
        end = text.find(". ")
        return text if end < 0 else text[: end + 1]

    @property
    def stateful(self) -> bool:
        return self.init_state is not None

    def input(self, name: str) -> PinSpec | None:
        return self._input_index.get(name)

    def output_index(self, name: str) -> int | None:
        for index, out in enumerate(self.outputs):
            if out.name == name:
                return index
        return None

    def inputs_for(
        self, values: Mapping[str, Any], folder: Path | None = None
    ) -> tuple[PinSpec, ...]:
        """The input pins of an instance with these values in a patch whose file is in `folder`
        (None: not saved): the static ones plus dynamic ones."""
        if self.dynamic_inputs is None:
            return self.inputs
        return self.inputs + self.dynamic_inputs(values, folder)


LIBRARY: dict[str, NodeSpec] = {}
_LEGACY: dict[str, str] = {}
# While a node pack is imported (possibly on a worker thread), its specs are collected here
# instead of entering LIBRARY: the pack loader swaps them in later, at a frame boundary.
_collector = threading.local()


@contextlib.contextmanager
def collecting_specs() -> Iterator[list[NodeSpec]]:
    """Within this block, specs registered by this thread go to the list yielded, not LIBRARY."""
    specs: list[NodeSpec] = []
    outer = getattr(_collector, "specs", None)
    _collector.specs = specs
    try:
        yield specs
    finally:
        _collector.specs = outer


def register(spec: NodeSpec) -> NodeSpec:
    """Add a spec to the library; ids are unique."""
    collected = getattr(_collector, "specs", None)
    if collected is not None:
        collected.append(spec)
        return spec
    if spec.id in LIBRARY:
        raise ValueError(f"node type {spec.id!r} is registered twice")
    LIBRARY[spec.id] = spec
    for old in spec.legacy_ids:
        _LEGACY[old] = spec.id
    return spec


def unregister(type_id: str) -> None:
    """Remove a type (and its legacy ids) from the library, as a node pack is reloaded."""
    spec = LIBRARY.pop(type_id, None)
    if spec is not None:
        for old in spec.legacy_ids:
            if _LEGACY.get(old) == type_id:
                del _LEGACY[old]


def get_spec(type_id: str) -> NodeSpec | None:
    """The spec for a type id (or one of its legacy ids), or None."""
    spec = LIBRARY.get(type_id)
    if spec is None and type_id in _LEGACY:
        spec = LIBRARY[_LEGACY[type_id]]
    return spec


def node(
    type_id: str,
    *,
    determinism: Determinism = Determinism.DETERMINISTIC,
    outputs: Mapping[str, str] | None = None,
    output_defaults: Mapping[str, Any] | None = None,
    sink: bool = False,
    lazy: tuple[str, ...] = (),
    feedback: tuple[str, ...] = (),
    hints: Mapping[str, str] | None = None,
    ranges: Mapping[str, tuple[float | None, float | None]] | None = None,
    choices: Mapping[str, tuple[str, ...]] | None = None,
    init_state: Callable[[str], Any] | None = None,
    examples: tuple[tuple[Mapping[str, Any], Any], ...] = (),
    legacy_ids: tuple[str, ...] = (),
    version: int = 1,
    dynamic_inputs: DynamicInputs | None = None,
    dynamic_from: tuple[str, ...] = (),
    capture: Callable[[Any, Any, Any], Any] | None = None,
    passthrough: str | None = None,
    docs: Mapping[str, str] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Declare and register a node type from a function; see the module note for the rules.
    `docs`: one sentence per pin name (inputs and outputs). `choices`: the values a text pin
    means. `lazy`, `feedback`, `hints`, `ranges`, `choices` and `docs` name pins; a name that is
    no pin, a hint that is not in PIN_HINTS or an output of no known type is refused (TypeError
    naming the node and the pin)."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        params = list(inspect.signature(fn).parameters.values())
        uses_context = bool(params) and params[0].name == "ctx"
        if uses_context:
            params = params[1:]
        if init_state is not None:
            if not params or params[0].name != "state":
                raise TypeError(f"{type_id}: a stateful node takes `state` after `ctx`")
            params = params[1:]
        if dynamic_inputs is not None:
            params = params[:-1]  # the last parameter receives the dynamic pins' values
        _check_pin_names(type_id, params, outputs, lazy, feedback, hints, ranges, docs,
                         choices)  # fmt: skip
        pins = []
        pin_docs = dict(docs or {})
        for param in params:
            annotation, declared = _pin_annotation(type_id, param.name, param.annotation, fn)
            name = param.name.rstrip("_")
            facts = _merged_facts(type_id, name, declared, param.name, lazy, feedback, hints,
                                  ranges, docs, choices)  # fmt: skip
            kind = pin_type_of_annotation(annotation.removeprefix("Pull[").rstrip("]"))
            if kind is None:
                raise TypeError(f"{type_id}: pin {param.name!r} has no known type ({annotation})")
            if facts.doc is not None:
                pin_docs[name] = facts.doc
            default = None if param.default is inspect.Parameter.empty else param.default
            pins.append(
                PinSpec(
                    name=name,
                    type=kind.name,
                    default=default,
                    lazy=facts.lazy or annotation.startswith("Pull"),
                    feedback=facts.feedback,
                    hint=facts.hint,
                    minimum=facts.min,
                    maximum=facts.max,
                    choices=facts.choices,
                )
            )
        if outputs is None:
            ret = _annotation_name(inspect.signature(fn).return_annotation)
            returned = pin_type_of_annotation(ret)
            out_types = {"out": "any" if returned is None else returned.name}
        else:
            out_types = dict(outputs)
        defaults = output_defaults or {}
        out_specs = tuple(
            OutputSpec(name, kind, defaults.get(name, zero_of(kind)))
            for name, kind in out_types.items()
        )
        register(
            NodeSpec(
                id=type_id,
                category=type_id.split(".", 1)[0],
                inputs=tuple(pins),
                outputs=out_specs,
                determinism=determinism,
                compute=fn,
                sink=sink,
                uses_context=uses_context,
                init_state=init_state,
                version=version,
                doc=inspect.cleandoc(fn.__doc__ or ""),
                legacy_ids=legacy_ids,
                examples=examples,
                dynamic_inputs=dynamic_inputs,
                dynamic_from=dynamic_from,
                capture=capture,
                passthrough=passthrough,
                pin_docs=pin_docs,
            )
        )
        return fn

    return decorate


class Pin:
    """An input pin's facts in one expression, in its annotation:
    `level: Annotated[float, Pin(min=0, max=1, hint="slider", doc="How loud.")]`.

    Beside the decorator's `ranges=`, `hints=`, `docs=`, `lazy=` and `feedback=`; a fact given
    in both places, or a key that is none of these, is refused when the node registers."""

    __slots__ = ("choices", "doc", "feedback", "hint", "lazy", "max", "min", "unknown")

    def __init__(
        self,
        *,
        min: float | None = None,
        max: float | None = None,
        hint: str | None = None,
        doc: str | None = None,
        lazy: bool = False,
        feedback: bool = False,
        choices: tuple[str, ...] | None = None,
        **unknown: Any,
    ) -> None:
        self.min, self.max, self.hint, self.doc = min, max, hint, doc
        self.choices = None if choices is None else tuple(choices)
        self.lazy, self.feedback = lazy, feedback
        self.unknown = unknown  # refused at registration, where the node and pin can be named

    def __repr__(self) -> str:
        facts = {key: getattr(self, key) for key in ("min", "max", "hint", "choices", "doc")}
        shown = [f"{key}={value!r}" for key, value in facts.items() if value is not None]
        shown += [key for key in ("lazy", "feedback") if getattr(self, key)]
        return f"Pin({', '.join(shown)})"


def _pin_annotation(
    type_id: str, param: str, annotation: Any, fn: Callable[..., Any]
) -> tuple[str, Pin]:
    """A pin's type annotation as text and its `Pin` facts (an empty `Pin` without one), from
    `Annotated[T, Pin(...)]` or a plain annotation. With postponed annotations only the
    `Pin(...)` part is evaluated, in the function's module, as `inspect` would."""
    if typing.get_origin(annotation) is Annotated:
        base, metadata = _annotation_name(annotation.__origin__), annotation.__metadata__
    else:
        base, metadata = _annotation_name(annotation), ()
        if base.startswith("Annotated["):
            base, extras = _split_annotated(base.removeprefix("Annotated[")[:-1])
            metadata = eval(f"({extras},)", fn.__globals__) if extras else ()
    found = [item for item in metadata if isinstance(item, Pin)]
    if len(found) > 1:
        raise TypeError(f"{type_id}: pin {param!r} has {len(found)} Pin(...) declarations")
    facts = found[0] if found else Pin()
    if facts.unknown:
        keys = ", ".join(sorted(facts.unknown))
        raise TypeError(
            f"{type_id}: pin {param!r}: unknown Pin key {keys} (keys: min, max, hint, choices, "
            "doc, lazy, feedback)"
        )
    return base, facts


def _split_annotated(inner: str) -> tuple[str, str]:
    """`"T, Pin(...)"` as `("T", "Pin(...)")`: split at the first top-level comma."""
    depth = 0
    for index, char in enumerate(inner):
        if char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        elif char == "," and depth == 0:
            return inner[:index].strip(), inner[index + 1 :].strip()
    return inner.strip(), ""


def _check_pin_names(
    type_id: str,
    params: list[inspect.Parameter],
    outputs: Mapping[str, str] | None,
    lazy: tuple[str, ...],
    feedback: tuple[str, ...],
    hints: Mapping[str, str] | None,
    ranges: Mapping[str, Any] | None,
    docs: Mapping[str, str] | None,
    choices: Mapping[str, tuple[str, ...]] | None = None,
) -> None:
    """Refuse names in the decorator's pin dicts that name no pin, unknown hints and outputs of
    no known type: a node pack author gets an error, not a fact silently ignored. Each dict is
    checked against the names it is looked up by (hints and ranges by parameter name, lazy and
    feedback by pin name, docs by pin or output name)."""
    parameters = {param.name for param in params}
    pins = {name.rstrip("_") for name in parameters}
    outs = set(outputs) if outputs is not None else {"out"}
    for what, names, known in (
        ("lazy", lazy, pins),
        ("feedback", feedback, pins),
        ("hints", hints or {}, parameters),
        ("ranges", ranges or {}, parameters),
        ("choices", choices or {}, parameters),
        ("docs", docs or {}, pins | outs),
    ):
        for name in names:
            if name not in known:
                raise TypeError(f"{type_id}: {what}= names pin {name!r}, which the node has not")
    for name, hint in (hints or {}).items():
        _check_hint(type_id, name, hint)
    for name, kind in (outputs or {}).items():
        if kind not in PIN_TYPES:
            raise TypeError(f"{type_id}: output {name!r} has no known type ({kind!r})")


def _check_hint(type_id: str, pin: str, hint: str | None) -> None:
    if hint is not None and hint not in PIN_HINTS:
        known = ", ".join(sorted(PIN_HINTS))
        raise TypeError(f"{type_id}: pin {pin!r}: unknown hint {hint!r} (hints: {known})")


class _Facts(typing.NamedTuple):
    min: float | None
    max: float | None
    hint: str | None
    doc: str | None
    lazy: bool
    feedback: bool
    choices: tuple[str, ...] | None


def _merged_facts(
    type_id: str,
    name: str,
    declared: Pin,
    param: str,
    lazy: tuple[str, ...],
    feedback: tuple[str, ...],
    hints: Mapping[str, str] | None,
    ranges: Mapping[str, tuple[float | None, float | None]] | None,
    docs: Mapping[str, str] | None,
    choices: Mapping[str, tuple[str, ...]] | None = None,
) -> _Facts:
    """A pin's facts from its `Pin(...)` and the decorator's dicts; one given in both places is
    refused (which would win is not obvious to a reader)."""
    low, high = (ranges or {}).get(param, (None, None))
    hint = (hints or {}).get(param)
    doc = (docs or {}).get(name)
    listed = (choices or {}).get(param)
    listed = None if listed is None else tuple(listed)
    in_pin = (declared.min, declared.max, declared.hint, declared.doc, declared.lazy or None,
              declared.feedback or None, declared.choices)  # fmt: skip
    in_dicts = (low, high, hint, doc, name in lazy or None, name in feedback or None, listed)
    both = [key for key, a, b in zip(_Facts._fields, in_pin, in_dicts, strict=True)
            if a is not None and b is not None]  # fmt: skip
    if both:
        raise TypeError(f"{type_id}: pin {param!r}: {', '.join(both)} given both in Pin(...) "
                        "and in the decorator")  # fmt: skip
    _check_hint(type_id, param, declared.hint)
    return _Facts(
        min=declared.min if declared.min is not None else low,
        max=declared.max if declared.max is not None else high,
        hint=declared.hint or hint,
        doc=declared.doc or doc,
        lazy=declared.lazy or name in lazy,
        feedback=declared.feedback or name in feedback,
        choices=declared.choices if declared.choices is not None else listed,
    )


def _annotation_name(annotation: Any) -> str:
    """An annotation as the text the library's modules give (they postpone annotations; a node
    pack may not): `float` and "float" alike."""
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).removeprefix("typing.")
