"""The messages between an editor and the engine process: one frozen dataclass each.

The code is the schema: a message is a dataclass whose fields are its JSON fields, registered by
its `type` name for the direction it travels (`TO_ENGINE`, `TO_EDITOR`; a few names travel both
ways as different messages: `hello`, `resync`, `profile`). `encode()` makes the JSON object a
channel frame carries; `decode()` makes the message again and refuses, in one line naming the
message and the field, an unknown type, an unknown or missing field and a field of the wrong JSON
kind. Field types are checked at that outer level only (a number, a string, a list, an object);
what a field's contents mean (a preset's easing, a profile row count, an op of `edits`) is checked
where it is used, as before. `PROTOCOL_VERSION` is exchanged in `hello`: both sides refuse another.

Array data and images travel as blobs after the frame (app.engine.protocol.channel); a field that
describes them says where. A field marked `OMITTED_IF_NONE` is left out of the frame when None.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

PROTOCOL_VERSION = 2  # 2: arrays as the file format's `$array`, bodies as its definitions
OMITTED_IF_NONE = {"omitted_if_none": True}
"""Field metadata: left out of the frame when None (a report's `ids`: present means a new list;
a preset recall's options: absent means the default)."""


class MessageError(ValueError):
    """A JSON object that is not a message of this protocol (one line)."""


@dataclass(frozen=True)
class Message:
    """A message; subclasses set `TYPE`, the name it travels under."""

    TYPE: ClassVar[str] = ""


# ----------------------------------------------------------------------------- editor -> engine


@dataclass(frozen=True)
class Hello(Message):
    """The editor's first message; the engine answers with `EngineHello`."""

    TYPE: ClassVar[str] = "hello"
    schema: int
    role: str = "editor"


@dataclass(frozen=True)
class PatchDocument(Message):
    """The whole patch (the editor resyncs, or the engine answers `GetPatch`): the file format's
    document with large arrays as blobs described in `arrays` ({key: {dtype, shape, index}});
    `path` is the editor's file name for it; `seq` the last `Edits` it includes."""

    TYPE: ClassVar[str] = "patch"
    rev: int
    vrev: int
    document: Any
    arrays: dict[str, Any] = field(default_factory=dict)
    folder: str | None = None
    path: str | None = None
    seq: int | None = None


@dataclass(frozen=True)
class Edits(Message):
    """The change events of the editor's Patch since the last batch, one op each (see
    `app.engine.protocol.channel.event_op`), numbered, tagged with the document's revisions after
    them."""

    TYPE: ClassVar[str] = "edits"
    seq: int
    rev: int
    vrev: int
    ops: list[Any]


@dataclass(frozen=True)
class DocumentPath(Message):
    """The editor saved the patch under this file name."""

    TYPE: ClassVar[str] = "path"
    path: str | None


@dataclass(frozen=True)
class GetPatch(Message):
    """Send the running patch (an editor attaching to a running engine)."""

    TYPE: ClassVar[str] = "get_patch"


@dataclass(frozen=True)
class Watch(Message):
    """Nodes evaluated every frame whose outputs come back in reports (inspector, preview), and
    nodes whose values come back too but which run only when needed (`report`: the values on the
    canvas's links, at most `app.engine.engine.REPORT_VALUES_CAP`)."""

    TYPE: ClassVar[str] = "watch"
    nodes: list[str]
    report: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Level(Message):
    """The instance path the editor's canvas shows (`blob1/inner2`; "": the document's nodes):
    reports carry that level's statuses."""

    TYPE: ClassVar[str] = "level"
    path: str = ""


@dataclass(frozen=True)
class Images(Message):
    """Textures to send back small: node ids for thumbnails, [node, pin] pairs for previews."""

    TYPE: ClassVar[str] = "images"
    thumbnails: list[str] = field(default_factory=list)
    previews: list[list[str]] = field(default_factory=list)


@dataclass(frozen=True)
class Output(Message):
    """Open (on a screen, fullscreen or not) or close the output window."""

    TYPE: ClassVar[str] = "output"
    open: bool
    screen: int | None = None
    fullscreen: bool = False


@dataclass(frozen=True)
class Pause(Message):
    TYPE: ClassVar[str] = "pause"
    paused: bool


@dataclass(frozen=True)
class Step(Message):
    """While paused, move patch time by `seconds` (-1..1; negative: a step back) and run a frame."""

    TYPE: ClassVar[str] = "step"
    seconds: float = 0.0


@dataclass(frozen=True)
class Rate(Message):
    """Patch time runs at `rate` times wall time (0 < rate <= 16)."""

    TYPE: ClassVar[str] = "rate"
    rate: float


@dataclass(frozen=True)
class FixedStep(Message):
    """Every frame advances exactly 1 / fps of patch time; None: real time again."""

    TYPE: ClassVar[str] = "fixed_step"
    fps: float | None = None


@dataclass(frozen=True)
class PresetRecall(Message):
    """Recall a preset; the fields left None take `nodes.Recall`'s defaults (a jump, now)."""

    TYPE: ClassVar[str] = "preset"
    name: str
    mode: str | None = field(default=None, metadata=OMITTED_IF_NONE)
    seconds: float | None = field(default=None, metadata=OMITTED_IF_NONE)
    easing: str | None = field(default=None, metadata=OMITTED_IF_NONE)
    switch: str | None = field(default=None, metadata=OMITTED_IF_NONE)
    start: str | None = field(default=None, metadata=OMITTED_IF_NONE)


@dataclass(frozen=True)
class Morph(Message):
    """Blend presets by weight, {name: weight}."""

    TYPE: ClassVar[str] = "morph"
    weights: dict[str, Any]


@dataclass(frozen=True)
class Crossfade(Message):
    """Blend presets a and b (position 0: a, 1: b; checked by the preset deck)."""

    TYPE: ClassVar[str] = "crossfade"
    a: str
    b: str
    position: Any


@dataclass(frozen=True)
class ResetTime(Message):
    """Patch time and the frame count the nodes see back to 0."""

    TYPE: ClassVar[str] = "reset_time"


@dataclass(frozen=True)
class Nudge(Message):
    """Shift the beat of every `time.beat` by `beats` (within +-0.5) next frame."""

    TYPE: ClassVar[str] = "nudge"
    beats: float = 0.0


@dataclass(frozen=True)
class ResyncBeats(Message):
    """The next frame is the downbeat of every `time.beat`."""

    TYPE: ClassVar[str] = "resync"


@dataclass(frozen=True)
class AllowSend(Message):
    """Let `osc.out` nodes send (as `--allow-send` does), or stop them."""

    TYPE: ClassVar[str] = "allow_send"
    allow: bool


@dataclass(frozen=True)
class Services(Message):
    """OSC input listens on this IP address from now on (checked by the engine)."""

    TYPE: ClassVar[str] = "services"
    osc_host: str


@dataclass(frozen=True)
class Learn(Message):
    """The next control event of any source is learned for the pin; `node` None cancels."""

    TYPE: ClassVar[str] = "learn"
    node: str | None
    pin: str | None = field(default=None, metadata=OMITTED_IF_NONE)


@dataclass(frozen=True)
class Retry(Message):
    """Run a node bypassed for taking too long (or for hanging the engine) again."""

    TYPE: ClassVar[str] = "retry"
    node: str


@dataclass(frozen=True)
class ProfileRequest(Message):
    """Ask for the `top` costliest nodes and, unless `node` is None, why that node (a path) ran.
    Both are checked by `app.engine.reports.profile_costs.checked_request`, which says what is
    wrong."""

    TYPE: ClassVar[str] = "profile"
    node: Any = None
    top: Any = 50


@dataclass(frozen=True)
class Quit(Message):
    """Stop the engine; with `unless_showing`, only if its output window is closed."""

    TYPE: ClassVar[str] = "quit"
    unless_showing: bool = False


# ----------------------------------------------------------------------------- engine -> editor


@dataclass(frozen=True)
class EngineHello(Message):
    """The engine's answer to `Hello`: `gl` says whether GPU nodes can run; `supervisor` is the
    pid of the process that restarts it (when `supervised`); `bypassed` maps nodes to why."""

    TYPE: ClassVar[str] = "hello"
    schema: int
    pid: int
    rev: int
    vrev: int
    gl: bool
    gl_renderer: str | None = None
    supervised: bool = False
    supervisor: int | None = None
    bypassed: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ResyncNeeded(Message):
    """Revisions disagreed: the engine ignores edits until the next `PatchDocument`."""

    TYPE: ClassVar[str] = "resync"
    reason: str


@dataclass(frozen=True)
class Report(Message):
    """What plays, at most ~30 a second. `applied` is [seq, frame]: the last `Edits` applied and
    the first frame that shows it. `nodes` maps id -> [class, status, error] for a slice of the
    nodes (round robin) and the watched ones; `ids`, sent when the patch changed and once per
    round, lists every node the engine plays; `values` maps id -> {pin: value}
    (`report_value`); `bypassed` maps the nodes the watchdog stopped to the reason; `images`
    lists {node, pin, size, role} whose RGBA pixels follow as blobs. `beat` is the transport's
    beat count (4 beats a bar, as a `time.beat` that runs every frame counts it) at `bpm`, the
    tempo that plays (a MIDI clock's, else the patch's)."""

    TYPE: ClassVar[str] = "report"
    frame: int = 0
    rev: int = 0
    applied: list[Any] = field(default_factory=lambda: [None, None])
    fps: float = 0.0
    frame_ms: float = 0.0
    mode: str = "lazy"
    build_ms: float = 0.0
    paused: bool = False
    rate: float = 1.0
    fixed_fps: float | None = None
    output_open: bool = False
    output_screen: str | None = None
    output_fullscreen: bool = False
    beat: float = 0.0
    bpm: float = 120.0
    bypassed: dict[str, str] = field(default_factory=dict)
    nodes: dict[str, list[Any]] = field(default_factory=dict)
    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    images: list[dict[str, Any]] = field(default_factory=list)
    ids: list[str] | None = field(default=None, metadata=OMITTED_IF_NONE)


@dataclass(frozen=True)
class Learned(Message):
    """The control that `Learn` caught (the editor adds the binding as an edit)."""

    TYPE: ClassVar[str] = "learned"
    node: str
    pin: str
    source: str
    device: str | None = None


@dataclass(frozen=True)
class LearnUnreachable(Message):
    """No source can reach the armed learn (OSC off, no MIDI); learn stays armed."""

    TYPE: ClassVar[str] = "learn_unreachable"
    node: str
    pin: str
    reason: str
    advice: str = ""


@dataclass(frozen=True)
class ServiceChanged(Message):
    """A service's status changed (`evaluators.ServiceStatus`)."""

    TYPE: ClassVar[str] = "service"
    name: str
    state: str
    text: str
    advice: str = ""
    address: str = ""


@dataclass(frozen=True)
class NodeFailed(Message):
    """The first failure of a node (its path) since the editor connected."""

    TYPE: ClassVar[str] = "node_failed"
    node: str
    error: str


@dataclass(frozen=True)
class LiveValues(Message):
    """Values the engine's live controls (and preset recalls) set since the last one, the
    latest per pin, [[node, pin, value], ...]; `seq` the last `Edits` the engine had applied."""

    TYPE: ClassVar[str] = "live_values"
    values: list[list[Any]]
    seq: int = 0


@dataclass(frozen=True)
class ProfileReply(Message):
    """The answer to `ProfileRequest` (app.engine.reports.profile_costs): `costs` [[node path, runs,
    self_ms_per_frame, median_ms, reason], ...], the costliest first; `gpu_ms` {node path: GPU ms
    per frame}; `gpu_status` "" when draws are timed, else why not; `instances` [[instance path,
    cumulative self ms per frame], ...]; `explain` {node, lines} only when a node was asked."""

    TYPE: ClassVar[str] = "profile"
    frames: int
    costs: list[list[Any]]
    gpu_ms: dict[str, float] = field(default_factory=dict)
    gpu_status: str = ""
    instances: list[list[Any]] = field(default_factory=list)
    explain: dict[str, Any] | None = None


@dataclass(frozen=True)
class Error(Message):
    """A message that could not be applied (one line)."""

    TYPE: ClassVar[str] = "error"
    message: str


# ----------------------------------------------------------------------------- registries

M = TypeVar("M", bound=Message)


def _registry(*classes: type[Message]) -> dict[str, type[Message]]:
    found = {cls.TYPE: cls for cls in classes}
    assert len(found) == len(classes), "two messages of one direction share a type name"
    return found


TO_ENGINE: dict[str, type[Message]] = _registry(
    Hello, PatchDocument, Edits, DocumentPath, GetPatch, Watch, Level, Images, Output, Pause,
    Step, Rate, FixedStep, PresetRecall, Morph, Crossfade, ResetTime, Nudge, ResyncBeats,
    AllowSend, Services, Learn, Retry, ProfileRequest, Quit,
)  # fmt: skip
TO_EDITOR: dict[str, type[Message]] = _registry(
    EngineHello, PatchDocument, ResyncNeeded, Report, Learned, LearnUnreachable, ServiceChanged,
    NodeFailed, LiveValues, ProfileReply, Error,
)  # fmt: skip


def encode(message: Message) -> dict[str, Any]:
    """The JSON object of `message` (`type` first)."""
    encoded: dict[str, Any] = {"type": message.TYPE}
    for spec in dataclasses.fields(message):
        value = getattr(message, spec.name)
        if value is None and spec.metadata.get("omitted_if_none"):
            continue
        encoded[spec.name] = value
    return encoded


def decode(raw: Mapping[str, Any], registry: Mapping[str, type[Message]]) -> Message:
    """The message of a JSON object travelling the direction of `registry`; MessageError naming
    the message and field for an unknown type, an unknown or missing field, or a wrong kind."""
    kind = raw.get("type")
    cls = registry.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise MessageError(f"unknown message type {kind!r:.60}")
    checks = _checks(cls)
    unknown = [key for key in raw if key != "type" and key not in checks]
    if unknown:
        raise MessageError(f"{kind}: unknown field {unknown[0]!r:.60}")
    values: dict[str, Any] = {}
    for name, (required, check, what) in checks.items():
        if name not in raw:
            if required:
                raise MessageError(f"{kind}: missing field '{name}'")
            continue
        value = raw[name]
        if not check(value):
            raise MessageError(f"{kind}: '{name}' must be {what}, not {value!r:.60}")
        values[name] = value
    return cls(**values)


# ----------------------------------------------------------------------------- field checks

_Check = tuple[bool, Any, str]  # (required, predicate, what it must be: "a number")
_checks_of: dict[type[Message], dict[str, _Check]] = {}


def _checks(cls: type[Message]) -> dict[str, _Check]:
    found = _checks_of.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = {}
        for spec in dataclasses.fields(cls):
            required = (
                spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING
            )
            check, what = _check_of(hints[spec.name])
            found[spec.name] = (required, check, what)
        _checks_of[cls] = found
    return found


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_KINDS: dict[Any, tuple[Any, str]] = {
    bool: (lambda v: isinstance(v, bool), "true or false"),
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), "a whole number"),
    float: (_is_number, "a number"),
    str: (lambda v: isinstance(v, str), "a string"),
    list: (lambda v: isinstance(v, list), "a list"),
    dict: (lambda v: isinstance(v, dict), "an object"),
}


def _check_of(hint: Any) -> tuple[Any, str]:
    """The predicate and its words for a field's annotation (outer JSON kind only)."""
    if hint is Any:
        return (lambda v: True), "anything"
    if isinstance(hint, types.UnionType):
        options = [h for h in typing.get_args(hint) if h is not type(None)]
        check, what = _check_of(options[0])
        return (lambda v: v is None or check(v)), f"{what} or null"
    return _KINDS[typing.get_origin(hint) or hint]
