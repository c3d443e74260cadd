"""Presets: named snapshots of chosen input values, recalled at once, over time, or blended.

A preset maps (node id, pin) to a value. `capture` takes every value a person sets on the patch
(`preset_pins`: each editable, unlinked input of the document's nodes, or of some of them), or an
explicit list of pins. Editable means a value the inspector edits and a recall may change without
changing the patch's shape: numbers, toggles, text, colours and vectors; not pins whose links bring
their values (pictures, arrays, `any`), not the pins controls write ("live"), nor code, file names,
an instance's definition or a port's name (they rebuild nodes rather than tune them), nor where and
how a node reaches the world (a device, its latency, a host, a port, an address). Of an input
node (USER_INPUT: a slider, a toggle, a MIDI or OSC input) only the value pins it shows (those with
a UI hint): its range, channel or address say how it listens, not what the show looks like.
Recalling writes through `Patch.set_value`, the path of an inspector edit, and only where the value
differs, so only the cones of the inputs that change rerun and CONST caches stay.

Interpolation follows the pin type (its `blend`, nodes.types): floats and vectors blend
linearly, colours blend in OKLab (a perceptual space: the middle of black and white is a perceived
mid grey, not sRGB 0.5), integers round the blend; booleans, strings and every other type switch
from the old value to the new one at a chosen point of a transition ("start", "middle" or "end"),
and in a morph take the value of the heaviest preset. A transition is stepped by
`PresetPlayer.step(t)` once per frame with the patch clock; it starts at the first step.

`PresetDeck` is what a playing engine owns: it takes recall requests between frames (a jump, a
transition starting now or on the next beat or bar, a morph, the crossfader), writes them as
live values, and is stepped once per frame before the patch runs.

Plain Python: no Qt, no threads. Assumes colours are (r, g, b, a) in sRGB 0..1, as pins hold them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from nodes.document.patch import Patch
from nodes.errors import PatchError, PatchValueError
from nodes.spec import Determinism, NodeSpec, PinSpec
from nodes.tempo import ON_BEAT
from nodes.types import PIN_TYPES, pin_type

PinRef = tuple[str, str]
Preset = dict[PinRef, Any]
SwitchPoint = Literal["start", "middle", "end"]

EASINGS: dict[str, Callable[[float], float]] = {
    "linear": lambda x: x,
    "ease-in-out": lambda x: 0.5 - 0.5 * math.cos(math.pi * x),
}
SWITCH_POINTS: dict[str, float] = {"start": 0.0, "middle": 0.5, "end": 1.0}


#: Pin types whose values come from links, not from a person: never in a preset.
_LINKED_ONLY_TYPES = frozenset({"array", "any"})
#: Hints of pins a preset leaves alone: controls write "live" pins; code and files rebuild nodes.
_UNTUNED_HINTS = frozenset({"live", "code", "file"})
#: Pins that name what a node is (an instance's definition, a port's name), not how it plays.
_NAMING_PINS = {"subpatch": "definition", "subpatch.inlet": "name", "subpatch.outlet": "name"}
#: Pins that say where and how a node reaches the world (an audio device and its latency, an OSC
#: host and address): a recall must not reopen a device or send elsewhere.
_ENDPOINT_PINS = frozenset({"device", "latency", "host", "port", "address"})


def is_preset_pin(spec: NodeSpec, pin: PinSpec) -> bool:
    """Whether a preset may hold `pin` of a node of `spec` (see the module note); links are the
    caller's to look at."""
    kind = PIN_TYPES.get(pin.type)
    if spec.determinism is Determinism.USER_INPUT and pin.hint is None:
        return False  # an input node's range, channel or address: how it listens, not a value
    return (
        kind is not None
        and not kind.is_picture
        and pin.type not in _LINKED_ONLY_TYPES
        and pin.hint not in _UNTUNED_HINTS
        and pin.name not in spec.dynamic_from
        and _NAMING_PINS.get(spec.id) != pin.name
        and pin.name not in _ENDPOINT_PINS
    )


def preset_pins(patch: Patch, node_ids: Iterable[str] | None = None) -> list[PinRef]:
    """The pins a capture takes: every editable, unlinked input (`is_preset_pin`) of the
    document's nodes, or of `node_ids` (ids not in the patch are skipped), in patch order."""
    chosen = None if node_ids is None else set(node_ids)
    return [
        (instance.id, pin.name)
        for instance in patch.nodes.values()
        if chosen is None or instance.id in chosen
        for pin in instance.inputs
        if is_preset_pin(instance.spec, pin) and patch.link_into(instance.id, pin.name) is None
    ]


def capture(patch: Patch, pins: Iterable[PinRef] | None = None) -> Preset:
    """The current values of `pins`, or of every pin a preset may hold (`preset_pins`)."""
    if pins is None:
        pins = preset_pins(patch)
    return {(node_id, pin): patch.value(node_id, pin) for node_id, pin in pins}


def changes_nothing(patch: Patch, preset: Preset) -> bool:
    """True when recalling `preset` cannot change `patch`: it holds no value of a pin the patch
    has (an empty capture of an older version, or every node it names removed)."""
    return not any(
        node_id in patch.nodes and patch.nodes[node_id].input(pin) is not None
        for node_id, pin in preset
    )


def preset_named(patch: Patch, name: str) -> Preset:
    """The patch's preset `name`, or PatchValueError listing the names there are."""
    try:
        return patch.presets[name]
    except KeyError:
        names = ", ".join(sorted(patch.presets)) or "none"
        raise PatchValueError(f"no preset {name!r} (presets: {names})") from None


# ----------------------------------------------------------------------------- blending


def blend(type_name: str, values: list[Any], weights: list[float]) -> Any:
    """The weighted mean of `values` for a pin of type `type_name` (weights sum to 1), or, for
    values its type does not interpolate, the value of the heaviest weight."""
    kind = pin_type(type_name)
    if kind.blend is not None and kind.interpolates(values):
        return kind.blend(values, weights)
    return values[max(range(len(values)), key=lambda i: weights[i])]


def _differs(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return not (
            isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
        )
    return bool(a != b)


def _type_name_of(patch: Patch, ref: PinRef) -> str:
    node_id, pin = ref
    spec_pin = patch.node(node_id).input(pin)
    if spec_pin is None:
        raise PatchValueError(f"preset pin {node_id}.{pin}: the node has no such input")
    return spec_pin.type


def _apply(patch: Patch, values: Mapping[PinRef, Any], live: bool = False) -> None:
    for (node_id, pin), value in values.items():
        if _differs(patch.value(node_id, pin), value):
            patch.set_value(node_id, pin, value, live=live)


def morph(patch: Patch, weights: Mapping[str, float], *, live: bool = False) -> None:
    """Set the pins of the named presets to their mean weighted by `weights` (normalised; a pin
    missing from a preset takes that preset's share from the current value). `live`: written
    as live values (`Patch.set_value(..., live=True)`), as a playing engine does."""
    total = sum(weights.values())
    if not weights or total <= 0 or any(w < 0 for w in weights.values()):
        raise PatchValueError("morph weights must not be negative and must not all be zero")
    presets = {name: preset_named(patch, name) for name in weights}
    refs = dict.fromkeys(ref for preset in presets.values() for ref in preset)
    values = {}
    for ref in refs:
        current = patch.value(*ref)
        values[ref] = blend(
            _type_name_of(patch, ref),
            [preset.get(ref, current) for preset in presets.values()],
            [weights[name] / total for name in presets],
        )
    _apply(patch, values, live)


@dataclass
class _Transition:
    start: Preset
    target: Preset
    duration: float
    easing: Callable[[float], float]
    switch_at: float
    begun: float | None = None


class PresetPlayer:
    """Recalls the presets of a patch: `jump` at once, or `transition` stepped by `step(t)`.
    `live`: its writes are live values (`Patch.set_value(..., live=True)`): a playing engine's
    recalls, which editors are told of but which are no document edits; else plain edits."""

    def __init__(self, patch: Patch, *, live: bool = False) -> None:
        self.patch = patch
        self.live = live
        self._transition: _Transition | None = None

    @property
    def busy(self) -> bool:
        """True while a transition has not reached its end."""
        return self._transition is not None

    def jump(self, name: str) -> None:
        """Set every pin of preset `name` now (ends a running transition)."""
        self._transition = None
        _apply(self.patch, preset_named(self.patch, name), self.live)

    def stop(self) -> None:
        """End a running transition where it is."""
        self._transition = None

    def transition(
        self,
        name: str,
        duration: float,
        easing: str = "linear",
        switch: SwitchPoint = "middle",
    ) -> None:
        """Go to preset `name` over `duration` seconds of the patch clock from the next `step`;
        pins that do not interpolate switch at `switch`."""
        target = preset_named(self.patch, name)
        if easing not in EASINGS:
            raise PatchValueError(f"easing {easing!r}: one of {', '.join(EASINGS)}")
        if switch not in SWITCH_POINTS:
            raise PatchValueError(f"switch {switch!r}: one of {', '.join(SWITCH_POINTS)}")
        if not duration >= 0 or math.isinf(duration):
            raise PatchValueError(f"duration {duration!r}: a finite number of seconds >= 0")
        start = {ref: self.patch.value(*ref) for ref in target}
        for ref in target:
            _type_name_of(self.patch, ref)
        self._transition = _Transition(
            start, target, duration, EASINGS[easing], SWITCH_POINTS[switch]
        )

    def step(self, t: float) -> None:
        """Apply the running transition at patch time `t` (call once per frame)."""
        run = self._transition
        if run is None:
            return
        if run.begun is None:
            run.begun = t
        progress = 1.0 if run.duration == 0 else min(1.0, (t - run.begun) / run.duration)
        eased = run.easing(progress)
        values = {}
        for ref, goal in run.target.items():
            type_name, ends = _type_name_of(self.patch, ref), [run.start[ref], goal]
            if progress >= 1.0 or not _differs(run.start[ref], goal):
                values[ref] = goal  # (a blend of equal ends may differ from them in its last bit)
            elif pin_type(type_name).interpolates(ends):
                values[ref] = blend(type_name, ends, [1.0 - eased, eased])
            else:
                values[ref] = goal if progress >= run.switch_at else run.start[ref]
        _apply(self.patch, values, self.live)
        if progress >= 1.0:
            self._transition = None


# ----------------------------------------------------------------------------- the deck

START_POINTS = ("now", "beat", "bar")
BEATS_PER_BAR = 4
RecallMode = Literal["jump", "transition"]


@dataclass(frozen=True)
class Recall:
    """How a preset is recalled: at once (`jump`) or over `seconds` (`transition`) with an
    easing and a switch point, starting now or on the next beat or bar of the patch tempo."""

    mode: RecallMode = "jump"
    seconds: float = 1.0
    easing: str = "linear"
    switch: SwitchPoint = "middle"
    start: str = "now"

    def __post_init__(self) -> None:
        if self.mode not in ("jump", "transition"):
            raise PatchValueError(f"mode {self.mode!r}: jump or transition"[:120])
        if isinstance(self.seconds, bool) or not isinstance(self.seconds, int | float):
            raise PatchValueError(f"seconds {self.seconds!r}: a number"[:120])
        if not 0 <= self.seconds < math.inf:
            raise PatchValueError(f"seconds {self.seconds!r}: a finite number of seconds >= 0")
        if self.easing not in EASINGS:
            raise PatchValueError(f"easing {self.easing!r}: one of {', '.join(EASINGS)}"[:120])
        if self.switch not in SWITCH_POINTS:
            raise PatchValueError(f"switch {self.switch!r}: one of {', '.join(SWITCH_POINTS)}")
        if self.start not in START_POINTS:
            raise PatchValueError(f"start {self.start!r}: one of {', '.join(START_POINTS)}"[:120])


class PresetDeck:
    """The presets of a playing patch: what the engine's frame loop recalls, steps and blends.

    Requests (`request`, `recall`, `morph`, `crossfade`, `set_crossfade`) come between frames;
    `step(t, bpm)` runs once per frame before the patch does, with the frame's patch time and
    tempo. Every write is a live value (see PresetPlayer). A recall starting on a beat or bar
    waits for the first frame at or after the next beat (bar: 4 beats) of the patch clock, beats
    counted as t * bpm / 60 from patch time 0. The crossfader blends two presets: the pair of
    the last `crossfade`, else the first two presets of the patch.
    """

    def __init__(self, patch: Patch) -> None:
        self.player = PresetPlayer(patch, live=True)
        self.default = Recall()  # what `recall` does (a control bound to a preset)
        self.crossfade_pair: tuple[str, str] | None = None
        self._waiting: tuple[str, Recall] | None = None
        self._start_beat: float | None = None  # the beat the waiting recall starts on

    @property
    def patch(self) -> Patch:
        return self.player.patch

    def attach(self, patch: Patch) -> None:
        """Recall the presets of `patch` from now on (what ran for the old one stops)."""
        self.player = PresetPlayer(patch, live=True)
        self._waiting, self._start_beat = None, None

    @property
    def waiting(self) -> bool:
        """True while a recall waits for its beat or bar."""
        return self._waiting is not None

    def request(self, name: str, recall: Recall) -> None:
        """Recall preset `name` as `recall` says; PatchValueError for an unknown name."""
        preset_named(self.patch, name)
        self._waiting, self._start_beat = None, None
        if recall.start == "now":
            self._start(name, recall)
        else:
            self.player.stop()
            self._waiting = (name, recall)

    def recall(self, name: str) -> None:
        """Recall preset `name` the deck's default way (a jump unless `default` says else)."""
        self.request(name, self.default)

    def morph(self, weights: Mapping[str, float]) -> None:
        """Blend the named presets by `weights` now (ends a transition; see `morph`)."""
        clean = {str(name): _weight(weight) for name, weight in weights.items()}
        self.player.stop()
        self._waiting, self._start_beat = None, None
        morph(self.patch, clean, live=True)

    def crossfade(self, a: str, b: str, position: object) -> None:
        """Blend presets `a` and `b` at `position` (0: all a, 1: all b), and keep the pair."""
        preset_named(self.patch, a)
        preset_named(self.patch, b)
        self.crossfade_pair = (a, b)
        self.set_crossfade(position)

    def set_crossfade(self, position: object) -> None:
        """Move the crossfader of the deck's pair to `position` (clamped to 0..1); nothing
        when the patch has fewer than two presets and no pair was chosen."""
        position = min(1.0, max(0.0, _weight(position)))
        pair = self.crossfade_pair or tuple(list(self.patch.presets)[:2])
        if len(pair) < 2:
            return
        a, b = pair
        self.morph({a: 1.0} if a == b else {a: 1.0 - position, b: position})

    def step(self, t: float, bpm: float) -> None:
        """Start a recall whose beat has come, and apply a running transition at patch time
        `t`. A recall that fails (a preset's node removed meanwhile) is ended and its
        PatchError raised."""
        try:
            if self._waiting is not None:
                name, recall = self._waiting
                unit = 1 if recall.start == "beat" else BEATS_PER_BAR
                beat = t * bpm / 60.0
                if self._start_beat is None:
                    self._start_beat = math.ceil(beat / unit - ON_BEAT) * unit
                if beat + ON_BEAT >= self._start_beat:
                    self._waiting, self._start_beat = None, None
                    self._start(name, recall)
            self.player.step(t)
        except PatchError:
            self.player.stop()
            self._waiting, self._start_beat = None, None
            raise

    def _start(self, name: str, recall: Recall) -> None:
        if recall.mode == "jump":
            self.player.jump(name)
        else:
            self.player.transition(name, recall.seconds, recall.easing, recall.switch)


def _weight(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise PatchValueError(f"weight {value!r}: a number"[:120])
    return float(value)
