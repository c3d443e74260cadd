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

Definitions (subpatches): the document keeps named bodies, each a Patch whose `owner` is the
document (see nodes/document/definitions.py for the rules). An edit of a body is also an edit of the
document: the document relays the body's events with `definition` set to the body's name (its
revisions bump with them), and re-derives the pins of every instance when the body's inlets or
outlets change, carrying links and values over when a port is renamed. `group`, `ungroup` and
`make_unique` are made of those edits, so whatever follows the events (undo, an engine's copy)
follows them too.

Plain Python on purpose: no Qt, no threads. Evaluators that need a stable view take a snapshot.
"""

from __future__ import annotations

import copy
import itertools
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, NamedTuple

from nodes.document import definitions as defs
from nodes.document.bindings import Binding
from nodes.document.outputs import checked_outputs
from nodes.errors import (
    CycleError,
    DuplicateNodeError,
    InputOccupiedError,
    PatchError,
    PatchValueError,
    PinTypeError,
    UnknownNodeError,
    UnknownNodeTypeError,
    UnknownPinError,
    shown,
)
from nodes.fileformat.codec import check_value
from nodes.limits import Limits, active_limits
from nodes.paths import PathRefusedError, resolve_patch_path
from nodes.spec import NodeSpec, PinSpec, get_spec, same_value
from nodes.tempo import checked_bpm
from nodes.types import coerce_value, types_compatible

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


class Backdrop(NamedTuple):
    """A titled, coloured frame drawn behind nodes: layout only, never read by evaluators.
    `rect` is (x, y, width, height) in canvas units; `color` is (r, g, b), 0-255."""

    id: str
    title: str
    color: tuple[int, int, int]
    rect: tuple[float, float, float, float]


class EditOp(StrEnum):
    """The edits a Patch makes (`PatchEvent.op`); the values are the names edits travel under."""

    ADD_NODE = "add_node"
    REMOVE_NODE = "remove_node"
    CONNECT = "connect"
    DISCONNECT = "disconnect"
    PINS = "pins"
    SET_VALUE = "set_value"
    MOVE = "move"
    BACKDROP = "backdrop"
    SETTINGS = "settings"
    ADD_DEFINITION = "add_definition"
    REMOVE_DEFINITION = "remove_definition"
    RENAME_DEFINITION = "rename_definition"
    BINDING = "binding"
    PRESET = "preset"


DEFINITION_OPS = frozenset(
    (EditOp.ADD_DEFINITION, EditOp.REMOVE_DEFINITION, EditOp.RENAME_DEFINITION)
)
"""The edits of a document's definitions (not of a body: those are node and link edits)."""


class PatchEvent(NamedTuple):
    """What changed. `op` is one of the `EditOp`s: for `backdrop`, `value` is the backdrop's id
    (a UI-only edit, as `move`); for the definition ops, the name, or (old, new); for `binding`
    the binding's id; for `preset` the preset's name. `definition`: the definition whose body
    the edit was made in (None: the document's own nodes). `live`: a value a live control or a
    preset recall set while the patch plays (`set_value(..., live=True)`): evaluators treat it as
    any value edit, but it is not counted in `value_revision` and editors do not send it to an
    engine (it came from there)."""

    kind: EventKind
    op: EditOp
    node_id: str | None = None
    pin: str | None = None
    link: Link | None = None
    value: Any = None
    definition: str | None = None
    live: bool = False


Listener = Callable[[PatchEvent], None]


class Patch:
    """A patch document: nodes, links, settings and change events."""

    #: Node ids are single names, except in frozen patches, where the nodes of inlined instances
    #: keep their execution paths as ids (`blob1/lfo3`), so their state is keyed as it was.
    allow_path_ids = False

    def __init__(self) -> None:
        self.nodes: dict[str, NodeInstance] = {}
        self._links: dict[Link, None] = {}  # insertion-ordered set
        self._links_in: dict[str, dict[str, Link]] = {}
        self._links_out: dict[str, dict[Link, None]] = {}
        self.settings: dict[str, Any] = {"resolution": [640, 360]}
        self.meta: dict[str, Any] = {}  # e.g. frozen-export information; never read by editors
        self.backdrops: dict[str, Backdrop] = {}  # id -> frame drawn behind nodes (layout only)
        # name -> {(node id, pin): value}: recalled by nodes/document/presets.py, never by
        # evaluators
        self.presets: dict[str, dict[tuple[str, str], Any]] = {}
        self.bindings: dict[
            str, Binding
        ] = {}  # id -> control driving a pin (nodes/document/bindings.py)
        self._folder: Path | None = None
        self.revision = 0
        self.value_revision = 0
        self._listeners: dict[object, Listener] = {}
        self._next_id = 1
        # Definitions: kept by the document; a body knows its document (`owner`) and its name.
        self._definitions: dict[str, Patch] = {}
        self._relays: dict[str, Callable[[], None]] = {}
        self.owner: Patch | None = None
        self.name: str | None = None
        self.instance_counts: dict[str, int] = {}  # definition name -> instances in this patch
        self.ports: dict[str, None] = {}  # ids of inlet and outlet nodes, in order
        self.instance_spec_cache: tuple[Any, Any] | None = None
        self.port_names: dict[str, str] = {}  # port id -> name, as instances last saw them
        # While a file is loaded (innermost definitions first, so no instance of a body exists
        # while it is filled): the checks that look at every definition (recursion, expanded
        # size, re-deriving instances) wait for `end_deferred_checks`, once, instead of once per
        # node, which made a file of many nested definitions take minutes.
        self.checks_deferred = False

    # ----------------------------------------------------------------- queries
    @property
    def links(self) -> list[Link]:
        return list(self._links)

    @property
    def folder(self) -> Path | None:
        """The folder of the patch's file (set by load_patch, never saved): relative file names in
        node values, such as a shader file, resolve against it. None: against the cwd. A body
        has its document's."""
        return self.owner.folder if self.owner is not None else self._folder

    @folder.setter
    def folder(self, folder: Path | None) -> None:
        self._folder = folder

    @property
    def document(self) -> Patch:
        """The patch that keeps the definitions: the owner of a body, else this patch."""
        return self.owner if self.owner is not None else self

    @property
    def definitions(self) -> Mapping[str, Patch]:
        """The document's definitions, name -> body (read-only; edit through the methods)."""
        return types.MappingProxyType(self.document._definitions)

    def definition(self, name: str) -> Patch:
        """The live body of a definition: editing it edits every instance."""
        try:
            return self.document._definitions[name]
        except KeyError:
            raise PatchValueError(f"no definition {name!r} in the document") from None

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
        twin.backdrops = dict(self.backdrops)
        twin.presets = {name: dict(values) for name, values in self.presets.items()}
        twin.bindings = dict(self.bindings)
        twin.folder = self.folder
        twin.revision, twin.value_revision = self.revision, self.value_revision
        twin._next_id = self._next_id
        twin.instance_counts = dict(self.instance_counts)
        twin.ports = dict(self.ports)
        twin.instance_spec_cache, twin.port_names = self.instance_spec_cache, dict(self.port_names)
        for name, body in self._definitions.items():
            twin._adopt(name, body.copy())
        return twin

    # ----------------------------------------------------------------- events
    def subscribe(self, listener: Listener, *, first: bool = False) -> Callable[[], None]:
        """Call `listener(event)` after every edit; returns a function that unsubscribes.
        `first`: before the listeners there are (a view others read while they handle events)."""
        # The unsubscribe function holds a key, not the listener: an evaluator that keeps it is
        # then no reference cycle through its own bound method once it has unsubscribed.
        key = object()
        others = dict(self._listeners) if first else {}
        if first:
            self._listeners.clear()  # the same dict: unsubscribe functions hold it
        self._listeners[key] = listener
        self._listeners.update(others)
        listeners = self._listeners
        return lambda: listeners.pop(key, None) and None

    def _emit(self, event: PatchEvent) -> None:
        if event.kind == "structural":
            self.revision += 1
        elif event.kind == "value" and not event.live:
            self.value_revision += 1
        for listener in list(self._listeners.values()):
            listener(event)

    # ----------------------------------------------------------------- definitions
    def add_definition(self, name: str, body: Patch) -> None:
        """Keep `body` (a patch of its own, not yet part of a document) as definition `name`.
        Its `subpatch.inlet` and `subpatch.outlet` nodes become the pins of its instances."""
        document = self.document
        defs.checked_definition_name(name)
        if name in document._definitions:
            raise PatchValueError(f"definition {name!r} already exists")
        if body.owner is not None or body is document or body._definitions:
            raise PatchValueError(
                f"definition {name!r}: the body must be a patch of its own, without definitions"
            )
        document._adopt(name, body)
        try:
            if document.checks_deferred:
                body.port_names = _port_names(body)
                return
            defs.check_expanded_size(document)
            cycle = defs.definition_cycle(document)
            if cycle is not None:
                raise CycleError("a definition cannot contain itself: " + " -> ".join(cycle), cycle)
        except PatchError:
            document._disown(name)
            raise
        defs.instance_spec(body)
        body.port_names = _port_names(body)
        document._emit(PatchEvent("structural", EditOp.ADD_DEFINITION, value=name))

    def _adopt(self, name: str, body: Patch) -> None:
        body.owner, body.name = self, name
        self._definitions[name] = body
        self._relays[name] = body.subscribe(lambda event: self._relay(body, event))

    def _disown(self, name: str) -> Patch:
        body = self._definitions.pop(name)
        self._relays.pop(name)()
        body.owner = body.name = None
        return body

    def remove_definition(self, name: str) -> Patch:
        """Remove a definition no instance uses; returns its body (for undo)."""
        document = self.document
        self.definition(name)
        users = defs.instances_of(document, name)
        if users:
            where = ", ".join(_place_of(container, node_id) for container, node_id in users[:5])
            raise PatchValueError(
                f"definition {name!r} is used by {len(users)} instance(s) ({where})"
            )
        body = document._disown(name)
        document._emit(PatchEvent("structural", EditOp.REMOVE_DEFINITION, value=name))
        return body

    def rename_definition(self, old: str, new: str) -> None:
        """Rename a definition; its instances follow."""
        document = self.document
        self.definition(old)
        defs.checked_definition_name(new)
        if new in document._definitions:
            raise PatchValueError(f"definition {new!r} already exists")
        body = document._definitions[old]
        document._relays[new] = document._relays.pop(old)
        document._definitions = {
            (new if key == old else key): value for key, value in document._definitions.items()
        }
        body.name = new
        for container in (document, *document._definitions.values()):
            if old in container.instance_counts:
                container.instance_counts[new] = container.instance_counts.pop(old)
        for container, node_id in defs.instances_of(document, old):
            instance = container.nodes[node_id]
            instance.values = {**instance.values, "definition": new}
        document._emit(PatchEvent("structural", EditOp.RENAME_DEFINITION, value=(old, new)))

    def instances(self, name: str) -> list[tuple[Patch, str]]:
        """Every instance of definition `name`: (the patch holding it, its id), document first."""
        self.definition(name)
        return defs.instances_of(self.document, name)

    def _relay(self, body: Patch, event: PatchEvent) -> None:
        """A body's edit is an edit of the document; its instances' pins follow its ports (and
        the pins of the nodes linked to them: a port's type follows them)."""
        self._emit(event._replace(definition=body.name))
        if event.kind == "ui":
            return
        ports, link = body.ports, event.link
        if (
            event.node_id in ports
            or event.node_id in body.port_names
            or (link is not None and (link.src in ports or link.dst in ports))
            or (event.op == EditOp.PINS and _linked_to_port(body, event.node_id or ""))
        ):
            self._rederive_instances(body)

    def end_deferred_checks(self) -> None:
        """Check, once, what `checks_deferred` left unchecked (PatchValueError or CycleError),
        and let instances follow their definitions' ports from now on."""
        self.checks_deferred = False
        defs.check_expanded_size(self)  # CycleError, too, for definitions that contain each other
        for body in self._definitions.values():
            body.port_names = _port_names(body)

    def _rederive_instances(self, body: Patch) -> None:
        assert body.name is not None
        if self.checks_deferred:
            return
        before = body.port_names
        spec = defs.instance_spec(body)
        body.port_names = after = _port_names(body)
        renamed: dict[str, dict[str, str]] = {defs.INLET: {}, defs.OUTLET: {}}
        for port in before.keys() & after.keys():
            if before[port] != after[port]:
                renamed[body.nodes[port].type_id][before[port]] = after[port]
        for container, node_id in defs.instances_of(self, body.name):
            container._rederive_instance(node_id, spec, renamed[defs.INLET], renamed[defs.OUTLET])

    def _rederive_instance(
        self,
        node_id: str,
        spec: NodeSpec,
        renamed_in: Mapping[str, str],
        renamed_out: Mapping[str, str],
    ) -> None:
        """Give an instance the pins its definition has now: links and values of a renamed port
        move to its new name, those of a removed port go."""
        instance = self.nodes[node_id]
        values = {renamed_in.get(name, name): value for name, value in instance.values.items()}
        inputs = spec.inputs_for(values, self.folder)
        if spec is instance.spec and inputs == instance.inputs:
            return
        in_names = {pin.name for pin in inputs}
        out_names = {out.name for out in spec.outputs}
        relink: list[Link] = []
        for link in [*self.links_into(node_id).values(), *self.links_out_of(node_id)]:
            moved = link
            if link.dst == node_id:
                moved = moved._replace(dst_pin=renamed_in.get(link.dst_pin, link.dst_pin))
            if link.src == node_id:
                moved = moved._replace(src_pin=renamed_out.get(link.src_pin, link.src_pin))
            if moved == link and (
                (link.dst != node_id or link.dst_pin in in_names)
                and (link.src != node_id or link.src_pin in out_names)
            ):
                continue
            if link in self._links:
                self._drop_link(link)
                self._emit(
                    PatchEvent("structural", EditOp.DISCONNECT, link.dst, link.dst_pin, link=link)
                )
            if (moved.dst != node_id or moved.dst_pin in in_names) and (
                moved.src != node_id or moved.src_pin in out_names
            ):
                relink.append(moved)
        # An instance's value at its pin's old default follows the new default (nobody set it).
        # Not for other nodes: a placeholder for a missing type keeps the values as they were.
        before = {
            renamed_in.get(pin.name, pin.name): pin
            for pin in instance.inputs
            if spec.id == defs.SUBPATCH
        }
        instance.spec = spec
        instance.values = {pin.name: _kept(pin, values, before.get(pin.name)) for pin in inputs}
        instance.inputs = inputs
        instance.stamp = next(_stamps)
        self._emit(PatchEvent("structural", EditOp.PINS, node_id))
        for link in relink:
            try:
                self.connect(*link, check_cycles=False)
            except PatchError:
                continue  # the renamed pin changed type too: the link cannot stay

    def replace_spec(self, node_id: str, spec: NodeSpec) -> None:
        """Give a node another spec of its type (a node pack reloaded, or a placeholder for a
        type that went or came: nodes/packs.py): values and links of pins it still has stay,
        and a structural `pins` event tells evaluators to rebuild."""
        self._rederive_instance(self.node(node_id).id, spec, {}, {})

    def group(self, node_ids: Iterable[str], name: str) -> str:
        """Turn these nodes into a new definition `name` and one instance in their place (links
        that crossed the selection go through new inlets and outlets); returns the instance id."""
        return defs.group(self, list(dict.fromkeys(node_ids)), name)

    def ungroup(self, instance_id: str) -> list[str]:
        """Put an instance's nodes in its place (its definition goes when no instance is left);
        returns the ids of the nodes added."""
        return defs.ungroup(self, instance_id)

    def make_unique(self, instance_id: str, new_name: str) -> str:
        """Detach one instance onto a copy of its definition named `new_name`."""
        instance = self.node(instance_id)
        if not defs.is_instance(instance):
            raise PatchValueError(f"{instance_id!r} is not an instance of a definition")
        body = self.definition(defs.definition_name(instance)).copy()
        # Its own instance spec, not the original's: the switch below then re-derives the
        # instance's pins (a `pins` event) as it does on a copy of the document built from events.
        body.instance_spec_cache = None
        self.add_definition(new_name, body)
        self.set_value(instance_id, "definition", new_name)
        return new_name

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
        spec: NodeSpec | None = None,
    ) -> str:
        """Add a node of a library type and return its id (given, or a fresh one). `spec`: the
        spec to use instead of the library's (a placeholder for a type not installed)."""
        spec = spec or get_spec(type_id)
        if spec is None:
            raise UnknownNodeTypeError(f"unknown node type {type_id!r}")
        if node_id is None:
            node_id = self.new_id(spec.id)
        elif node_id in self.nodes:
            raise DuplicateNodeError(f"node id {node_id!r} is already used")
        elif not node_id or ("/" in node_id and not _path_id(node_id, self.allow_path_ids)):
            raise PatchValueError(f"bad node id {node_id!r}")
        values = dict(values or {})
        definition = None
        if spec.id == defs.SUBPATCH:
            definition = str(values.get("definition", ""))
            defs.check_instance_allowed(self, definition)
            spec = defs.instance_spec(self.definition(definition))
        elif spec.id in defs.PORT_TYPES:
            wanted = str(values.get("name", spec.inputs[0].default))
            values["name"] = defs.unique_port_name(self, spec.id, wanted)
        if self.name is not None and self.owner is not None:
            defs.check_expanded_size(self.owner, grown=self.name)
        node_values, inputs = self._checked_values(node_id, spec, values)
        where = (float(pos[0]), float(pos[1])) if pos else (0.0, 0.0)
        instance = NodeInstance(node_id, spec, node_values, where, inputs, added_values=node_values)
        self.nodes[node_id] = instance
        if definition is not None:
            self.instance_counts[definition] = self.instance_counts.get(definition, 0) + 1
        elif spec.id in defs.PORT_TYPES:
            self.ports[node_id] = None
        self._emit(PatchEvent("structural", EditOp.ADD_NODE, node_id))
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
            self._emit(
                PatchEvent("structural", EditOp.DISCONNECT, link.dst, link.dst_pin, link=link)
            )
        instance = self.nodes.pop(node_id)
        self._links_in.pop(node_id, None)
        self._links_out.pop(node_id, None)
        if defs.is_instance(instance):
            self._count_instance(defs.definition_name(instance), -1)
        self.ports.pop(node_id, None)
        self._emit(PatchEvent("structural", EditOp.REMOVE_NODE, node_id))
        return removed

    def _count_instance(self, name: str, change: int) -> None:
        count = self.instance_counts.get(name, 0) + change
        if count:
            self.instance_counts[name] = count
        else:
            self.instance_counts.pop(name, None)

    def set_position(self, node_id: str, pos: tuple[float, float]) -> None:
        self.node(node_id).pos = (float(pos[0]), float(pos[1]))
        self._emit(PatchEvent("ui", EditOp.MOVE, node_id, value=pos))

    def set_backdrop(self, backdrop_id: str, backdrop: Backdrop | None) -> None:
        """Add or replace the backdrop `backdrop_id` (None removes it); a UI-only edit."""
        if backdrop is None:
            if self.backdrops.pop(backdrop_id, None) is None:
                return
        else:
            if backdrop.id != backdrop_id:
                raise PatchValueError(f"backdrop {backdrop_id!r} given as {backdrop.id!r}")
            self.backdrops[backdrop_id] = backdrop
        self._emit(PatchEvent("ui", EditOp.BACKDROP, value=backdrop_id))

    def new_backdrop_id(self) -> str:
        """A backdrop id not in use: `backdrop1`, `backdrop2`, ..."""
        return next(
            f"backdrop{n}" for n in itertools.count(1) if f"backdrop{n}" not in self.backdrops
        )

    def set_value(self, node_id: str, pin: str, value: Any, *, live: bool = False) -> None:
        """Set the value of an input pin (used when the pin has no link). `live`: set by a live
        control or a preset recall while playing (see PatchEvent).

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
        if defs.is_instance(instance) and pin == "definition":
            self._switch_definition(instance, str(new))
            return
        if (
            instance.type_id in defs.PORT_TYPES
            and pin == "name"
            and defs.unique_port_name(self, instance.type_id, str(new), skip=node_id) != new
        ):
            kind = "inlet" if instance.type_id == defs.INLET else "outlet"
            raise PatchValueError(f"{node_id}.name: another {kind} is already named {new!r}")
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
        self._emit(PatchEvent("value", EditOp.SET_VALUE, node_id, pin, value=new, live=live))
        if inputs != instance.inputs:
            self._rederive_pins(instance, inputs)

    def _switch_definition(self, instance: NodeInstance, name: str) -> None:
        """Make an instance follow another definition (same-named pins keep values and links)."""
        old = defs.definition_name(instance)
        if name != old:
            defs.check_instance_allowed(self, name, replacing=old)
        spec = defs.instance_spec(self.definition(name))
        instance.values = {**instance.values, "definition": name}
        instance.stamp = next(_stamps)
        self._count_instance(old, -1)
        self._count_instance(name, 1)
        self._emit(PatchEvent("value", EditOp.SET_VALUE, instance.id, "definition", value=name))
        self._rederive_instance(instance.id, spec, {}, {})

    def _rederive_pins(self, instance: NodeInstance, inputs: tuple[PinSpec, ...]) -> None:
        names = {pin.name for pin in inputs}
        for pin_name, link in list(self._links_in.get(instance.id, {}).items()):
            if pin_name not in names:
                self._drop_link(link)
                self._emit(
                    PatchEvent("structural", EditOp.DISCONNECT, link.dst, pin_name, link=link)
                )
        values = instance.values
        instance.values = {pin.name: _kept(pin, values) for pin in inputs}
        instance.inputs = inputs
        self._emit(PatchEvent("structural", EditOp.PINS, instance.id))

    def new_binding_id(self) -> str:
        """A binding id not in use: `binding1`, `binding2`, ..."""
        return next(f"binding{n}" for n in itertools.count(1) if f"binding{n}" not in self.bindings)

    def set_binding(self, binding_id: str, binding: Binding | None) -> None:
        """Add or replace the binding `binding_id`, or remove it (None). The target need not
        exist (an undo may bring its node back); the runtime skips what it cannot drive."""
        if not isinstance(binding_id, str) or not binding_id or len(binding_id) > 200:
            raise PatchValueError(f"binding id: expected a name, got {binding_id!r}"[:200])
        if binding is None:
            if self.bindings.pop(binding_id, None) is None:
                return
        else:
            self.bindings[binding_id] = binding
        self._emit(PatchEvent("value", EditOp.BINDING, value=binding_id))

    def set_preset(self, name: str, values: Mapping[tuple[str, str], Any] | None) -> None:
        """Add or replace the preset `name` ((node id, pin) -> value), or remove it (None).
        Values of pins that exist are coerced as an edit would; a pin that does not (an undo
        may bring its node back) is kept as it is, as files keep it (nodes/fileformat/format.py)."""
        if not isinstance(name, str) or not name.strip() or len(name) > 200:
            raise PatchValueError(f"preset name: expected a name, got {name!r}"[:200])
        if values is None:
            if self.presets.pop(name, None) is None:
                return
        else:
            kept: dict[tuple[str, str], Any] = {}
            for (node_id, pin), value in values.items():
                instance = self.nodes.get(node_id)
                spec_pin = instance.input(pin) if instance is not None else None
                if spec_pin is not None:
                    value = _coerce(node_id, spec_pin, value)
                kept[node_id, pin] = value
            self.presets[name] = kept
        self._emit(PatchEvent("value", EditOp.PRESET, value=name))

    def update_settings(self, **settings: Any) -> None:
        """Change patch settings (e.g. `resolution=[1920, 1080]`, `bpm=128`), checked first (a
        resolution against the limit `texture_side` in force, as files are; a tempo against
        `checked_bpm`; outputs against `checked_outputs`, nodes/document/outputs.py)."""
        if "resolution" in settings:
            settings["resolution"] = checked_resolution(settings["resolution"])
        if "bpm" in settings:
            settings["bpm"] = checked_bpm(settings["bpm"])
        if "outputs" in settings:
            settings["outputs"] = checked_outputs(settings["outputs"])
        self.settings.update(settings)
        self._emit(PatchEvent("value", EditOp.SETTINGS, value=dict(settings)))

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
        if defs.is_instance(dst_node) and dst_pin == "definition":
            raise PinTypeError(f"{dst}.definition is chosen, not linked: it names the definition")
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

        def eager_successors(node_id: str) -> Iterable[str]:
            for link in self.links_out_of(node_id):
                pin = self.nodes[link.dst].input(link.dst_pin)
                if pin is None or not pin.feedback:
                    yield link.dst

        return defs.find_path(start, goal, eager_successors)

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
        self._emit(PatchEvent("structural", EditOp.CONNECT, dst, dst_pin, link=link))
        return link

    def disconnect(self, src: str, src_pin: str, dst: str, dst_pin: str) -> None:
        link = Link(src, src_pin, dst, dst_pin)
        if link not in self._links:
            raise UnknownPinError(f"no link {src}.{src_pin} -> {dst}.{dst_pin}")
        self._drop_link(link)
        self._emit(PatchEvent("structural", EditOp.DISCONNECT, dst, dst_pin, link=link))

    def _drop_link(self, link: Link) -> None:
        del self._links[link]
        del self._links_in[link.dst][link.dst_pin]
        del self._links_out[link.src][link]
        self.nodes[link.dst].stamp = next(_stamps)


def _path_id(node_id: str, allowed: bool) -> bool:
    """True if `node_id` is a path id (`a/b/c`, no empty part) and those are allowed."""
    return allowed and all(node_id.split("/"))


def _port_names(body: Patch) -> dict[str, str]:
    return {port: str(body.nodes[port].values["name"]) for port in body.ports}


def _linked_to_port(body: Patch, node_id: str) -> bool:
    links = [*body.links_into(node_id).values(), *body.links_out_of(node_id)]
    return any(link.src in body.ports or link.dst in body.ports for link in links)


def _place_of(container: Patch, node_id: str) -> str:
    return node_id if container.name is None else f"{container.name}/{node_id}"


def _kept(pin: PinSpec, values: Mapping[str, Any], before: PinSpec | None = None) -> Any:
    """The value a re-derived pin keeps: its old value if the pin's type accepts it, else the
    default (a pin that held any value, or changed type, may not). `before`: the pin as it was;
    a value that was its default takes the new default."""
    if pin.name not in values:
        return pin.default
    if before is not None and same_value(values[pin.name], before.default):
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


_PLAIN = (float, int, bool, str, type(None))


def _coerce(node_id: str, pin: PinSpec, value: Any) -> Any:
    """The value the pin holds, or PatchValueError; a value no file or channel could carry
    (nodes.fileformat.codec) is refused here, before the document changes."""
    try:
        coerced = coerce_value(pin.type, value)
    except ValueError as error:
        raise PatchValueError(f"{node_id}.{pin.name}: {error}") from None
    if not isinstance(coerced, _PLAIN):
        check_value(coerced, f"{node_id}.{pin.name}")
    return coerced
