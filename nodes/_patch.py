"""The Patch: the document a person edits, and the only source of truth about a patch.

A patch holds node instances (stable string ids, a type id, input values, a position) and links
(from node/pin to node/pin). Every edit is checked before anything changes, so a refused edit leaves
the patch exactly as it was. Edits notify subscribers with a `PatchEvent` whose `kind` says whether
the edit was structural (nodes or links: `revision` bumps), a value edit (`value_revision` bumps)
or UI-only (positions: the core never reads them).

Each node carries a `stamp`, a number unique across all patches of the process that changes on
every edit of the node's values and on every link made or removed at its inputs. Evaluators build
cache keys from stamps, so an unchanged subgraph keeps its cached results across structural edits
elsewhere, while a subgraph that was edited never meets an old cache entry again, even when an
undo brings back its earlier shape (what stateful nodes did in between is part of their result).

Plain Python on purpose: no Qt, no threads. Evaluators that need a stable view take a snapshot.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from nodes._errors import (
    CycleError,
    DuplicateNodeError,
    InputOccupiedError,
    PatchValueError,
    PinTypeError,
    UnknownNodeError,
    UnknownNodeTypeError,
    UnknownPinError,
    shown,
)
from nodes._limits import Limits, active_limits
from nodes._paths import PathRefusedError, resolve_patch_path
from nodes._spec import NodeSpec, PinSpec, get_spec
from nodes._types import coerce_value, types_compatible

_stamps = itertools.count(1)


class Link(NamedTuple):
    """A link from an output pin to an input pin."""

    src: str
    src_pin: str
    dst: str
    dst_pin: str


@dataclass
class NodeInstance:
    """One node in a patch. `values` holds a value for every input pin (defaults filled in); the
    Patch replaces the dict on every edit instead of changing it, so it can be shared as is.
    `added_values` are the values it was added with (read from a file, say): a file name among
    them that an edit would refuse is still taken back by an edit (undo)."""

    id: str
    spec: NodeSpec
    values: dict[str, Any]
    pos: tuple[float, float] = (0.0, 0.0)
    inputs: tuple[PinSpec, ...] = ()
    stamp: int = field(default_factory=lambda: next(_stamps))
    added_values: Mapping[str, Any] = field(default_factory=dict)

    @property
    def type_id(self) -> str:
        return self.spec.id

    def input(self, name: str) -> PinSpec | None:
        for pin in self.inputs:
            if pin.name == name:
                return pin
        return None


EventKind = Literal["structural", "value", "ui"]


class PatchEvent(NamedTuple):
    """What changed. `op` is one of add_node, remove_node, connect, disconnect, pins, set_value,
    move, settings."""

    kind: EventKind
    op: str
    node_id: str | None = None
    pin: str | None = None
    link: Link | None = None
    value: Any = None


Listener = Callable[[PatchEvent], None]


class Patch:
    """A patch document: nodes, links, settings and change events."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeInstance] = {}
        self._links: dict[Link, None] = {}  # insertion-ordered set
        self._links_in: dict[str, dict[str, Link]] = {}
        self._links_out: dict[str, dict[Link, None]] = {}
        self.settings: dict[str, Any] = {"resolution": [640, 360]}
        self.meta: dict[str, Any] = {}  # e.g. frozen-export information; never read by editors
        # The folder of the patch's file (set by load_patch, never saved): relative file names in
        # node values, such as a shader file, resolve against it. None: resolve against the cwd.
        self.folder: Path | None = None
        self.revision = 0
        self.value_revision = 0
        self._listeners: dict[object, Listener] = {}
        self._next_id = 1

    # ----------------------------------------------------------------- queries
    @property
    def links(self) -> list[Link]:
        return list(self._links)

    @property
    def frozen(self) -> bool:
        return bool(self.meta.get("frozen"))

    def node(self, node_id: str) -> NodeInstance:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise UnknownNodeError(f"no node {node_id!r} in the patch") from None

    def link_into(self, node_id: str, pin: str) -> Link | None:
        return self._links_in.get(node_id, {}).get(pin)

    def links_into(self, node_id: str) -> Mapping[str, Link]:
        return self._links_in.get(node_id, {})

    def links_out_of(self, node_id: str) -> Iterable[Link]:
        return self._links_out.get(node_id, {}).keys()

    def value(self, node_id: str, pin: str) -> Any:
        return self.node(node_id).values[pin]

    def copy(self) -> Patch:
        """A detached copy, e.g. to save on another thread while editing goes on: later edits of
        either never show in the other. Cheap: value dicts are shared (they are replaced, never
        changed), so arrays are not copied; no listeners come along."""
        twin = Patch()
        twin.nodes = {node_id: copy.copy(instance) for node_id, instance in self.nodes.items()}
        twin._links = dict(self._links)
        twin._links_in = {node_id: dict(links) for node_id, links in self._links_in.items()}
        twin._links_out = {node_id: dict(links) for node_id, links in self._links_out.items()}
        twin.settings = copy.deepcopy(self.settings)
        twin.meta = copy.deepcopy(self.meta)
        twin.folder = self.folder
        twin.revision, twin.value_revision = self.revision, self.value_revision
        twin._next_id = self._next_id
        return twin

    # ----------------------------------------------------------------- events
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener(event)` after every edit; returns a function that unsubscribes."""
        # The unsubscribe function holds a key, not the listener: an evaluator that keeps it is
        # then no reference cycle through its own bound method once it has unsubscribed.
        key = object()
        self._listeners[key] = listener
        listeners = self._listeners
        return lambda: listeners.pop(key, None) and None

    def _emit(self, event: PatchEvent) -> None:
        if event.kind == "structural":
            self.revision += 1
        elif event.kind == "value":
            self.value_revision += 1
        for listener in list(self._listeners.values()):
            listener(event)

    # ----------------------------------------------------------------- nodes
    def new_id(self, type_id: str) -> str:
        """A fresh node id, short and readable: the type's last word and a number."""
        base = type_id.rsplit(".", 1)[-1]
        while True:
            candidate = f"{base}{self._next_id}"
            self._next_id += 1
            if candidate not in self.nodes:
                return candidate

    def add_node(
        self,
        type_id: str,
        values: Mapping[str, Any] | None = None,
        pos: tuple[float, float] | None = None,
        node_id: str | None = None,
    ) -> str:
        """Add a node of a library type and return its id (given, or a fresh one)."""
        spec = get_spec(type_id)
        if spec is None:
            raise UnknownNodeTypeError(f"unknown node type {type_id!r}")
        if node_id is None:
            node_id = self.new_id(spec.id)
        elif node_id in self.nodes:
            raise DuplicateNodeError(f"node id {node_id!r} is already used")
        elif not node_id or "/" in node_id:
            raise PatchValueError(f"bad node id {node_id!r}")
        node_values, inputs = self._checked_values(node_id, spec, values or {})
        where = (float(pos[0]), float(pos[1])) if pos else (0.0, 0.0)
        instance = NodeInstance(node_id, spec, node_values, where, inputs, added_values=node_values)
        self.nodes[node_id] = instance
        self._emit(PatchEvent("structural", "add_node", node_id))
        return node_id

    def _checked_values(
        self, node_id: str, spec: NodeSpec, values: Mapping[str, Any]
    ) -> tuple[dict[str, Any], tuple[PinSpec, ...]]:
        """The node's values (defaults filled in) and input pins, or the PatchError to refuse."""
        result = {pin.name: pin.default for pin in spec.inputs}
        inputs = spec.inputs_for({**result, **values}, self.folder)
        by_name = {pin.name: pin for pin in inputs}
        for name, value in values.items():
            pin = by_name.get(name)
            if pin is None and spec.dynamic_inputs is not None:
                # A value for a pin the spec no longer derives (a uniform removed from a shader
                # file since the patch was saved): kept, with its link, on a placeholder pin
                # until the pins are derived again.
                pin = by_name[name] = PinSpec(name, "any")
                inputs += (pin,)
            if pin is None:
                raise UnknownPinError(f"node {node_id!r} ({spec.id}) has no input {name!r}")
            result[name] = _coerce(node_id, pin, value)
        for pin in inputs[len(spec.inputs) :]:
            result.setdefault(pin.name, pin.default)
        return result, inputs

    def remove_node(self, node_id: str) -> list[Link]:
        """Remove a node and its links; returns the removed links (for undo)."""
        self.node(node_id)
        # dict.fromkeys: a feedback self-loop is both an input and an output link.
        removed = list(
            dict.fromkeys([*self._links_in.get(node_id, {}).values(), *self.links_out_of(node_id)])
        )
        for link in removed:
            self._drop_link(link)
            self._emit(PatchEvent("structural", "disconnect", link.dst, link.dst_pin, link=link))
        del self.nodes[node_id]
        self._links_in.pop(node_id, None)
        self._links_out.pop(node_id, None)
        self._emit(PatchEvent("structural", "remove_node", node_id))
        return removed

    def set_position(self, node_id: str, pos: tuple[float, float]) -> None:
        self.node(node_id).pos = (float(pos[0]), float(pos[1]))
        self._emit(PatchEvent("ui", "move", node_id, value=pos))

    def set_value(self, node_id: str, pin: str, value: Any) -> None:
        """Set the value of an input pin (used when the pin has no link).

        All or nothing: a value the pin cannot take (a wrong type, a file name a patch may not
        use) raises PatchValueError before anything changes. A value that merely makes the node
        fail when it runs (a missing file, or a refused file name the node was added with, which
        an undo brings back) is applied."""
        instance = self.node(node_id)
        spec_pin = instance.input(pin)
        if spec_pin is None:
            raise UnknownPinError(f"node {node_id!r} ({instance.type_id}) has no input {pin!r}")
        new = _coerce(node_id, spec_pin, value)
        if (
            spec_pin.hint == "file"
            and isinstance(new, str)
            and new
            and new != instance.added_values.get(pin)
        ):
            try:
                resolve_patch_path(self.folder, new, "file")
            except PathRefusedError as refused:
                raise PatchValueError(f"{node_id}.{pin}: {refused}") from None
        values = {**instance.values, pin: new}
        inputs = instance.inputs
        if pin in instance.spec.dynamic_from:
            try:
                inputs = instance.spec.inputs_for(values, self.folder)
            except Exception as problem:  # the spec cannot derive pins from it: refused whole
                raise PatchValueError(
                    f"{node_id}.{pin}: {type(problem).__name__}: {problem}"
                ) from None
        # Values dicts are replaced, never changed, so snapshots can share them without copying.
        instance.values = values
        instance.stamp = next(_stamps)
        self._emit(PatchEvent("value", "set_value", node_id, pin, value=new))
        if inputs != instance.inputs:
            self._rederive_pins(instance, inputs)

    def _rederive_pins(self, instance: NodeInstance, inputs: tuple[PinSpec, ...]) -> None:
        names = {pin.name for pin in inputs}
        for pin_name, link in list(self._links_in.get(instance.id, {}).items()):
            if pin_name not in names:
                self._drop_link(link)
                self._emit(PatchEvent("structural", "disconnect", link.dst, pin_name, link=link))
        values = instance.values
        instance.values = {pin.name: _kept(pin, values) for pin in inputs}
        instance.inputs = inputs
        self._emit(PatchEvent("structural", "pins", instance.id))

    def update_settings(self, **settings: Any) -> None:
        """Change patch settings (e.g. `resolution=[1920, 1080]`), checked first (a resolution
        against the limit `texture_side` in force, as files are)."""
        if "resolution" in settings:
            settings["resolution"] = checked_resolution(settings["resolution"])
        self.settings.update(settings)
        self._emit(PatchEvent("value", "settings", value=dict(settings)))

    # ----------------------------------------------------------------- links
    def check_link(
        self, src: str, src_pin: str, dst: str, dst_pin: str, check_cycles: bool = True
    ) -> Link:
        """Raise the PatchError that `connect` would raise, without changing anything."""
        src_node, dst_node = self.node(src), self.node(dst)
        out_index = src_node.spec.output_index(src_pin)
        if out_index is None:
            raise UnknownPinError(f"node {src!r} ({src_node.type_id}) has no output {src_pin!r}")
        in_pin = dst_node.input(dst_pin)
        if in_pin is None:
            raise UnknownPinError(f"node {dst!r} ({dst_node.type_id}) has no input {dst_pin!r}")
        out_type = src_node.spec.outputs[out_index].type
        if not types_compatible(out_type, in_pin.type):
            raise PinTypeError(
                f"cannot link {src}.{src_pin} ({out_type}) to {dst}.{dst_pin} ({in_pin.type})"
            )
        existing = self.link_into(dst, dst_pin)
        if existing is not None:
            raise InputOccupiedError(
                f"{dst}.{dst_pin} already has a link from {existing.src}.{existing.src_pin}"
            )
        if check_cycles and not in_pin.feedback:
            path = self._eager_path(dst, src)
            if path is not None:
                cycle = [*path, dst]
                raise CycleError(
                    f"linking {src}.{src_pin} to {dst}.{dst_pin} would close the cycle "
                    + " -> ".join(cycle)
                    + " (only a feedback input such as util.frame_delay may close a loop)",
                    cycle,
                )
        return Link(src, src_pin, dst, dst_pin)

    def _eager_path(self, start: str, goal: str) -> list[str] | None:
        """A path start -> ... -> goal along links that are not feedback inputs, or None."""
        parent: dict[str, str | None] = {start: None}
        stack = [start]
        while stack:
            current = stack.pop()
            if current == goal:
                path = [current]
                while (previous := parent[path[-1]]) is not None:
                    path.append(previous)
                return path[::-1]
            for link in self.links_out_of(current):
                if link.dst in parent:
                    continue
                pin = self.nodes[link.dst].input(link.dst_pin)
                if pin is not None and pin.feedback:
                    continue
                parent[link.dst] = current
                stack.append(link.dst)
        return None

    def eager_cycle(self) -> list[str] | None:
        """A cycle of links that do not go through feedback inputs, as node ids `a -> ... -> a`,
        or None. One topological sort: linear in the size of the patch (used after links were
        made with `check_cycles=False`, e.g. loading a file)."""
        feeding: dict[str, list[str]] = {node_id: [] for node_id in self.nodes}
        waiting = dict.fromkeys(self.nodes, 0)
        for link in self._links:
            pin = self.nodes[link.dst].input(link.dst_pin)
            if pin is not None and not pin.feedback:
                feeding[link.src].append(link.dst)
                waiting[link.dst] += 1
        ready = [node_id for node_id, count in waiting.items() if count == 0]
        while ready:
            for after in feeding[ready.pop()]:
                waiting[after] -= 1
                if waiting[after] == 0:
                    ready.append(after)
        stuck = {node_id for node_id, count in waiting.items() if count}
        if not stuck:
            return None
        # Every stuck node has an eager input from a stuck node: walk those back to a repeat.
        feeders = {
            link.dst: link.src
            for link in self._links
            if link.dst in stuck and link.src in stuck
            and not getattr(self.nodes[link.dst].input(link.dst_pin), "feedback", True)
        }  # fmt: skip
        seen: dict[str, int] = {}
        walk = [next(node_id for node_id in self.nodes if node_id in stuck)]
        while walk[-1] not in seen:
            seen[walk[-1]] = len(walk) - 1
            walk.append(feeders[walk[-1]])
        return walk[seen[walk[-1]] :][::-1]

    def connect(
        self, src: str, src_pin: str, dst: str, dst_pin: str, check_cycles: bool = True
    ) -> Link:
        """Link an output to an input; refused with a PatchError subclass if not allowed.
        `check_cycles=False` leaves the cycle check to one `eager_cycle()` call after many
        links (loading a file), instead of a search per link."""
        link = self.check_link(src, src_pin, dst, dst_pin, check_cycles)
        self._links[link] = None
        self._links_in.setdefault(dst, {})[dst_pin] = link
        self._links_out.setdefault(src, {})[link] = None
        self.nodes[dst].stamp = next(_stamps)
        self._emit(PatchEvent("structural", "connect", dst, dst_pin, link=link))
        return link

    def disconnect(self, src: str, src_pin: str, dst: str, dst_pin: str) -> None:
        link = Link(src, src_pin, dst, dst_pin)
        if link not in self._links:
            raise UnknownPinError(f"no link {src}.{src_pin} -> {dst}.{dst_pin}")
        self._drop_link(link)
        self._emit(PatchEvent("structural", "disconnect", dst, dst_pin, link=link))

    def _drop_link(self, link: Link) -> None:
        del self._links[link]
        del self._links_in[link.dst][link.dst_pin]
        del self._links_out[link.src][link]
        self.nodes[link.dst].stamp = next(_stamps)


def _kept(pin: PinSpec, values: Mapping[str, Any]) -> Any:
    """The value a re-derived pin keeps: its old value if the pin's type accepts it, else the
    default (a pin that held any value, or changed type, may not)."""
    if pin.name not in values:
        return pin.default
    try:
        return coerce_value(pin.type, values[pin.name])
    except ValueError:
        return pin.default


def checked_resolution(value: Any, limits: Limits | None = None) -> list[int]:
    """`value` as `[width, height]` (whole numbers), or PatchValueError unless both are from 1 to
    the limit `texture_side` (of the limits in force unless given). The one rule for a patch's
    resolution: edits, files loaded and files saved alike."""
    limits = limits or active_limits()
    try:
        width, height = (int(v) for v in value)
    except (TypeError, ValueError, OverflowError):
        raise PatchValueError(
            f"resolution: expected width and height, got {shown(value)}"
        ) from None
    if width < 1 or height < 1:
        raise PatchValueError(f"resolution: {width}x{height} is not a size (at least 1x1)")
    if max(width, height) > limits.texture_side:
        side = max(width, height)
        raise PatchValueError(f"resolution: {limits.exceeded('texture_side', side)}")
    return [width, height]


def _coerce(node_id: str, pin: PinSpec, value: Any) -> Any:
    try:
        coerced = coerce_value(pin.type, value)
    except ValueError as error:
        raise PatchValueError(f"{node_id}.{pin.name}: {error}") from None
    return coerced
