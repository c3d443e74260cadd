"""The expanded view: the one graph every evaluator reads, with every instance inlined.

A document may hold instances of definitions (nodes/document/definitions.py). Evaluators never see
them: they read an `ExpandedPatch`, a Patch-shaped graph kept in step with the document through its
change events, in which

- a node of the document that is no instance is the document's own `NodeInstance` object, shared
  (its values and stamp change in place with every edit, so value edits cost nothing here);
- an instance at view id `P` (a top-level id, or `outer/inner` when nested) becomes its body's
  nodes at ids `P/<body id>` (execution paths: state is keyed by `/P/<body id>`), each sharing its
  body node's spec, values and stamp, so identical instances fed identical inputs have identical
  cache keys (the definition's content is in those stamps);
- an inlet becomes a pass-through node `P/<inlet id>` whose input `in` is linked from what feeds
  the instance's pin, or holds the instance's own value for it; its stamp is made from the value
  when the value can be hashed cheaply, so equal values give equal keys;
- the instance itself becomes a pass-through node at `P` whose inputs are linked from the
  outlets, so links out of an instance, and `output(P, pin)`, need no translation.

HOT / USER / CONST is then decided per instance by the same rule as everywhere (an instance fed by
time is HOT, one fed by constants CONST), and the lazy walker and the flat compiler need nothing
of their own for subpatches.

Keeping in step: value edits are applied at once (a body node's in every instance, one event per
instance). Structural edits of instances and of bodies mark the instances concerned, and
`flush()` (at the start of every frame) re-expands each of them once and applies only the
difference (nodes kept keep their state; one event per change), so an edit of many steps reaches
the evaluators as one burst of events between two frames.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from nodes import (
    DEFINITION_OPS,
    EditOp,
    Link,
    NodeInstance,
    NodeSpec,
    OutputSpec,
    Patch,
    PatchEvent,
    PinSpec,
)
from nodes.document.definitions import INLET, OUTLET, definition_name, is_instance, ports
from nodes.spec import Determinism

_SMALL_ARRAY = 4096  # arrays up to this many elements are hashed into an inlet's stamp


def _pass_through(value: Any) -> Any:
    return value


_INLET_SPEC = NodeSpec(
    id=INLET,
    category="subpatch",
    inputs=(PinSpec("in", "any"),),
    outputs=(OutputSpec("out", "any", None),),
    determinism=Determinism.DETERMINISTIC,
    compute=_pass_through,
    doc="An inlet of one instance: what feeds the instance's pin, or its value.",
    passthrough="in",
)


def _collect(*values: Any) -> Any:
    return values


def _collector_spec(outputs: tuple[OutputSpec, ...]) -> NodeSpec:
    """The spec of an instance in the view: one input per outlet, passed on to its outputs."""
    if not outputs:
        outputs = (OutputSpec("_", "any", None),)  # a node without outputs has nothing to show
    inputs = tuple(PinSpec(out.name, "any") for out in outputs)
    compute: Callable[..., Any] = _pass_through if len(outputs) == 1 else _collect
    return NodeSpec(
        id="subpatch",
        category="subpatch",
        inputs=inputs,
        outputs=outputs,
        determinism=Determinism.DETERMINISTIC,
        compute=compute,
        doc="An instance: gives what its definition's outlets receive.",
        passthrough=inputs[0].name if len(outputs) == 1 else None,
    )


def value_token(value: Any) -> Any:
    """A hashable stand-in for a value when it is cheap to make, else None."""
    if value is None or isinstance(value, bool | int | float | str):
        return (type(value).__name__, value)
    if isinstance(value, tuple) and all(isinstance(v, int | float | str) for v in value):
        return ("tuple", value)
    if isinstance(value, np.ndarray) and value.size <= _SMALL_ARRAY and value.dtype != object:
        return ("array", value.dtype.str, value.shape, value.tobytes())
    return None


class _Expansion:
    """The nodes and links the view should have for some instances (or the whole document)."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeInstance] = {}
        self.links: list[Link] = []
        self.instances: dict[str, tuple[Patch, NodeInstance]] = {}  # view id -> its place
        self.children: dict[str, list[str]] = {}  # instance view id -> view ids of its body


class ExpandedPatch(Patch):
    """The document with every instance inlined; read by evaluators, kept in step by events.

    Edits of plain nodes and values apply at once; structural edits of instances and definitions
    are collected and applied by `flush()`, which evaluators call at the start of every frame (and
    `node()` calls when something is pending), so a burst of edits costs one re-expansion."""

    def __init__(self, document: Patch) -> None:
        super().__init__()
        self.source = document
        self.settings = document.settings
        self.meta = document.meta
        # view id of every instance (any depth) -> (patch holding it, its NodeInstance)
        self._instances: dict[str, tuple[Patch, NodeInstance]] = {}
        self._children: dict[str, list[str]] = {}
        self._by_definition: dict[str, list[str]] | None = None
        self._collectors: dict[int, tuple[tuple[OutputSpec, ...], NodeSpec]] = {}
        self._pending: set[str] = set()  # definitions whose instances must be re-expanded
        self._pending_instances: set[str] = set()  # view ids of instances to re-expand
        if any(map(is_instance, document.nodes.values())):
            built = _Expansion()
            for node in document.nodes.values():
                if is_instance(node):
                    self._expand(node.id, document, node, built)
                else:
                    built.nodes[node.id] = node
            for link in document.links:
                mapped = self._map_top_link(link)
                if mapped is not None:
                    built.links.append(mapped)
            self._apply(built, (), emit=False)
        else:
            # Nothing to inline: the document's nodes and links as they are (its links were
            # checked when made; at 10,000 nodes this saves most of a tenth of a second a load).
            self.nodes.update(document.nodes)
            self._links = dict(document._links)
            self._links_in = {node: dict(links) for node, links in document._links_in.items()}
            self._links_out = {node: dict(links) for node, links in document._links_out.items()}
        self._follow_revisions()
        # First: whoever handles an event may ask an evaluator, which reads this view.
        self._unsubscribe = document.subscribe(self._on_event, first=True)

    @property
    def folder(self) -> Path | None:
        return self.source.folder

    @folder.setter
    def folder(self, folder: Path | None) -> None:
        self.source.folder = folder

    def close(self) -> None:
        """Stop following the document."""
        self._unsubscribe()

    def node(self, node_id: str) -> NodeInstance:
        if self._pending or self._pending_instances:
            self.flush()
        return super().node(node_id)

    def flush(self) -> None:
        """Apply the edits of instances and definitions since the last flush: each instance is
        re-expanded once, however many edits touched it."""
        while self._pending or self._pending_instances:
            names, self._pending = self._pending, set()
            view_ids, self._pending_instances = self._pending_instances, set()
            view_ids.update(v for name in names for v in self.instances_of(name))
            self._reexpand(sorted(view_ids))
        self._follow_revisions()

    def _follow_revisions(self) -> None:
        """The view's revisions are the document's once the view shows all of its edits."""
        if not self._pending and not self._pending_instances:
            self.revision = self.source.revision
            self.value_revision = self.source.value_revision

    def _emit(self, event: PatchEvent) -> None:
        for listener in list(self._listeners.values()):
            listener(event)

    # ----------------------------------------------------------------- expanding
    def _expand(self, view_id: str, container: Patch, instance: NodeInstance,
                built: _Expansion) -> None:  # fmt: skip
        """The nodes and links of an instance at `view_id`, nested instances included (an
        explicit stack: nesting depth is not held to Python's recursion limit)."""
        stack = [(view_id, container, instance)]
        while stack:
            vid, holder, inst = stack.pop()
            built.instances[vid] = (holder, inst)
            body = self.source.definitions.get(definition_name(inst))
            built.nodes[vid] = self._collector(vid, inst.spec.outputs, body)
            children = built.children[vid] = []
            if body is None:
                continue
            prefix = vid + "/"
            for node in body.nodes.values():
                path = prefix + node.id
                children.append(path)
                if is_instance(node):
                    stack.append((path, body, node))
                elif node.type_id == INLET:
                    built.nodes[path] = self._inlet(path, holder, inst, node)
                else:
                    built.nodes[path] = NodeInstance(
                        path, node.spec, node.values, node.pos, node.inputs, node.stamp
                    )
            for link in body.links:
                mapped = self._map_link(prefix, body, link)
                if mapped is not None:
                    built.links.append(mapped)
            for outlet in ports(body, OUTLET):
                built.links.append(Link(prefix + outlet.id, "out", vid, outlet.values["name"]))

    def _collector(self, view_id: str, outputs: tuple[OutputSpec, ...],
                   body: Patch | None) -> NodeInstance:  # fmt: skip
        cached = self._collectors.get(id(body))
        if cached is None or cached[0] != outputs:
            cached = self._collectors[id(body)] = (outputs, _collector_spec(outputs))
        spec = cached[1]
        values = {pin.name: None for pin in spec.inputs}
        return NodeInstance(view_id, spec, values, (0.0, 0.0), spec.inputs, stamp=0)

    def _inlet(self, path: str, holder: Patch, instance: NodeInstance,
               inlet: NodeInstance) -> NodeInstance:  # fmt: skip
        """The pass-through of one instance's inlet: its value is the instance's pin value; its
        stamp says which inlet and, unless something feeds the pin, which value."""
        name = str(inlet.values["name"])
        value = instance.values.get(name, inlet.values.get("default"))
        if holder.link_into(instance.id, name) is not None:
            stamp = hash(("linked", inlet.stamp))
        else:
            token = value_token(value)
            stamp = hash(("value", inlet.stamp, token if token is not None else instance.stamp))
        return NodeInstance(path, _INLET_SPEC, {"in": value}, inlet.pos, _INLET_SPEC.inputs,
                            stamp=stamp)  # fmt: skip

    def _inlet_id(self, instance: NodeInstance, pin: str) -> str | None:
        body = self.source.definitions.get(definition_name(instance))
        if body is None:
            return None
        return next((p.id for p in ports(body, INLET) if p.values["name"] == pin), None)

    def _map_link(self, prefix: str, holder: Patch, link: Link) -> Link | None:
        """A link of `holder` (the document, prefix "", or a body at `prefix`) as it runs in
        the view: a link into an instance goes to that instance's inlet (None: no such inlet)."""
        target = holder.nodes.get(link.dst)
        if target is None or not is_instance(target):
            return Link(prefix + link.src, link.src_pin, prefix + link.dst, link.dst_pin)
        inlet = self._inlet_id(target, link.dst_pin)
        if inlet is None:
            return None
        return Link(prefix + link.src, link.src_pin, f"{prefix}{link.dst}/{inlet}", "in")

    def _map_top_link(self, link: Link) -> Link | None:
        return self._map_link("", self.source, link)

    # ----------------------------------------------------------------- applying
    def _apply(self, built: _Expansion, replaced: Iterable[str], emit: bool = True) -> None:
        """Make the view's nodes `replaced` (and their links) what `built` says, one event per
        change; nodes that stay are left alone, so evaluators keep their state and caches."""
        say = self._emit if emit else (lambda event: None)
        replaced = set(replaced)
        wanted = built.nodes
        links_now: dict[Link, None] = {}
        for node_id in replaced:
            links_now.update(dict.fromkeys(self._links_in.get(node_id, {}).values()))
            links_now.update(self._links_out.get(node_id, {}))

        def present(node_id: str) -> bool:
            return node_id in wanted or (node_id in self.nodes and node_id not in replaced)

        wanted_links = dict.fromkeys(
            link for link in built.links if present(link.src) and present(link.dst)
        )
        for link in links_now:
            if link not in wanted_links:
                self._unlink(link)
                say(PatchEvent("structural", EditOp.DISCONNECT, link.dst, link.dst_pin, link=link))
        for node_id in sorted(replaced - wanted.keys()):
            if self.nodes.pop(node_id, None) is not None:
                self._links_in.pop(node_id, None)
                self._links_out.pop(node_id, None)
                say(PatchEvent("structural", EditOp.REMOVE_NODE, node_id))
        for node_id, node in wanted.items():
            current = self.nodes.get(node_id)
            if current is None:
                self.nodes[node_id] = node
                say(PatchEvent("structural", EditOp.ADD_NODE, node_id))
            elif current is node:
                continue
            elif current.spec is not node.spec and current.spec != node.spec:
                # Same id, another kind of node: a new node (its links are made again below).
                for link in [
                    *self._links_in.get(node_id, {}).values(),
                    *self.links_out_of(node_id),
                ]:
                    self._unlink(link)
                    say(
                        PatchEvent(
                            "structural", EditOp.DISCONNECT, link.dst, link.dst_pin, link=link
                        )
                    )
                self.nodes[node_id] = node
                say(PatchEvent("structural", EditOp.REMOVE_NODE, node_id))
                say(PatchEvent("structural", EditOp.ADD_NODE, node_id))
            elif current.inputs != node.inputs:
                self._update(current, node)
                say(PatchEvent("structural", EditOp.PINS, node_id))
            else:
                changed = current.stamp != node.stamp
                self._update(current, node)
                if changed:
                    say(PatchEvent("value", EditOp.SET_VALUE, node_id))
        for link in wanted_links:
            if link not in self._links and self._pins_exist(link):
                self._link(link)
                say(PatchEvent("structural", EditOp.CONNECT, link.dst, link.dst_pin, link=link))
        for node_id in replaced:
            self._instances.pop(node_id, None)
            self._children.pop(node_id, None)
        self._instances.update(built.instances)
        self._children.update(built.children)
        self._by_definition = None

    @staticmethod
    def _update(current: NodeInstance, node: NodeInstance) -> None:
        current.spec, current.inputs = node.spec, node.inputs
        current.values, current.stamp, current.pos = node.values, node.stamp, node.pos

    def _pins_exist(self, link: Link) -> bool:
        src, dst = self.nodes.get(link.src), self.nodes.get(link.dst)
        return (
            src is not None
            and dst is not None
            and src.spec.output_index(link.src_pin) is not None
            and dst.input(link.dst_pin) is not None
            and self.link_into(link.dst, link.dst_pin) is None
        )

    def _link(self, link: Link) -> None:
        self._links[link] = None
        self._links_in.setdefault(link.dst, {})[link.dst_pin] = link
        self._links_out.setdefault(link.src, {})[link] = None

    def _unlink(self, link: Link) -> None:
        if link in self._links:
            del self._links[link]
            del self._links_in[link.dst][link.dst_pin]
            del self._links_out[link.src][link]

    # ----------------------------------------------------------------- following edits
    def _subtree(self, view_id: str) -> list[str]:
        """An instance's view id and every view id inside it, at any depth."""
        found = [view_id]
        for current in found:
            found += self._children.get(current, ())
        return found

    def _reexpand(self, view_ids: Iterable[str]) -> None:
        """Re-expand these instances (view ids) from the document as it is now and apply the
        difference, links into and out of them included."""
        built = _Expansion()
        replaced: list[str] = []
        for view_id in dict.fromkeys(view_ids):
            place = self._instances.get(view_id)
            if place is None:
                continue
            holder = place[0]
            instance = holder.nodes.get(view_id.rsplit("/", 1)[-1])
            replaced += self._subtree(view_id)
            if instance is None or not is_instance(instance):
                continue  # removed meanwhile: its nodes go
            self._expand(view_id, holder, instance, built)
            prefix = view_id[: view_id.rfind("/") + 1]
            around = [*holder.links_into(instance.id).values(), *holder.links_out_of(instance.id)]
            for link in around:
                mapped = self._map_link(prefix, holder, link)
                if mapped is not None:
                    built.links.append(mapped)
        self._apply(built, replaced)

    def instances_of(self, name: str) -> list[str]:
        """View ids of every instance of a definition, at any depth."""
        if self._by_definition is None:
            by_definition: dict[str, list[str]] = {}
            for view_id, (_, instance) in self._instances.items():
                by_definition.setdefault(definition_name(instance), []).append(view_id)
            self._by_definition = by_definition
        return self._by_definition.get(name, [])

    def _on_event(self, event: PatchEvent) -> None:
        if event.kind == "ui":
            if event.definition is None:
                self._emit(event)
        elif event.definition is not None:
            self._on_body_event(event.definition, event)
        elif event.op in DEFINITION_OPS:
            self._by_definition = None
            if event.op == EditOp.RENAME_DEFINITION and event.value[0] in self._pending:
                self._pending.discard(event.value[0])
                self._pending.add(event.value[1])
        else:
            self._on_top_event(event)
        self._follow_revisions()

    def _on_top_event(self, event: PatchEvent) -> None:
        op, node_id = event.op, event.node_id or ""
        node = self.source.nodes.get(node_id)
        if node is not None and is_instance(node) and op != EditOp.SETTINGS:
            if op == EditOp.SET_VALUE and event.pin != "definition":
                self._set_inlet_value(node_id, self.source, node, event.pin)
            else:
                self._instances.setdefault(node_id, (self.source, node))
                self._pending_instances.add(node_id)
        elif op == EditOp.ADD_NODE and node is not None:
            self.nodes[node_id] = node
            self._emit(event)
        elif op == EditOp.REMOVE_NODE and node_id in self._instances:
            self._pending_instances.add(node_id)
        elif op == EditOp.REMOVE_NODE:
            self._apply(_Expansion(), [node_id])
        elif op in (EditOp.CONNECT, EditOp.DISCONNECT) and event.link is not None:
            self._relink_top(event)
        else:  # set_value, pins, settings of the document's own nodes: shared, as they are
            self._emit(event)

    def _relink_top(self, event: PatchEvent) -> None:
        assert event.link is not None
        if event.link.dst in self._instances:
            # The inlet's stamp says whether the pin is fed: re-expand that instance.
            self._pending_instances.add(event.link.dst)
            return
        mapped = self._map_top_link(event.link)
        if mapped is None:
            return
        if event.op == EditOp.CONNECT:
            if mapped not in self._links and self._pins_exist(mapped):
                self._link(mapped)
                self._emit(event._replace(link=mapped))
        elif mapped in self._links:
            self._unlink(mapped)
            self._emit(event._replace(link=mapped))

    def _set_inlet_value(self, view_id: str, holder: Patch, instance: NodeInstance,
                         pin: str | None) -> None:  # fmt: skip
        """A value set on an instance's pin: that instance's inlet takes it."""
        inlet_id = self._inlet_id(instance, pin or "")
        body = self.source.definitions.get(definition_name(instance))
        current = self.nodes.get(f"{view_id}/{inlet_id}")
        if inlet_id is None or current is None or body is None:
            return
        fresh = self._inlet(current.id, holder, instance, body.nodes[inlet_id])
        if fresh.stamp != current.stamp or fresh.values["in"] is not current.values["in"]:
            self._update(current, fresh)
            self._emit(
                PatchEvent("value", EditOp.SET_VALUE, current.id, "in", value=fresh.values["in"])
            )

    def _on_body_event(self, name: str, event: PatchEvent) -> None:
        body = self.source.definitions.get(name)
        node = body.nodes.get(event.node_id or "") if body is not None else None
        if (
            event.op != EditOp.SET_VALUE
            or node is None
            or node.type_id in (INLET, OUTLET)
            or (is_instance(node) and event.pin == "definition")
            or name in self._pending
        ):
            self._pending.add(name)
            return
        assert body is not None
        for view_id in self.instances_of(name):
            path = f"{view_id}/{node.id}"
            if is_instance(node):
                self._set_inlet_value(path, body, node, event.pin)
                continue
            current = self.nodes.get(path)
            if current is not None and current.stamp != node.stamp:
                current.values, current.stamp = node.values, node.stamp
                self._emit(event._replace(node_id=path, definition=None))


def expanded(patch: Patch) -> tuple[ExpandedPatch, bool]:
    """The view to evaluate `patch` through, and whether it was made here (the caller closes
    it): a view is used as is."""
    if isinstance(patch, ExpandedPatch):
        return patch, False
    return ExpandedPatch(patch), True


def inlined(document: Patch) -> Patch:
    """A plain patch with the document's instances inlined at their paths (`blob1/lfo3`), no
    definitions left: what freezing starts from. An inlet becomes a `value.any` (fed as the
    instance's pin was, or holding its value); what feeds an instance's outlets feeds its
    consumers directly (an outlet nothing feeds becomes a `value.any` holding its value), so no
    node of the result is a subpatch node."""
    view = ExpandedPatch(document)
    try:
        flat = Patch()
        flat.allow_path_ids = True
        flat.settings = dict(document.settings)
        flat.folder = document.folder
        collectors = {
            node.id for node in view.nodes.values() if node.spec.id in ("subpatch", OUTLET)
        }
        for node in view.nodes.values():
            if node.id in collectors:
                continue
            if node.spec is _INLET_SPEC:
                flat.add_node("value.any", {"value": node.values["in"]}, node.pos, node_id=node.id)
            else:
                flat.add_node(node.type_id, node.values, node.pos, node_id=node.id)
        for link in view.links:
            if link.dst in collectors:
                continue
            src, src_pin = link.src, link.src_pin
            while src in collectors:  # an instance's output: what feeds that outlet inside
                pin = src_pin if view.nodes[src].spec.id == "subpatch" else "in"
                fed = view.link_into(src, pin)
                if fed is None:
                    break
                src, src_pin = fed.src, fed.src_pin
            if src in collectors and view.nodes[src].spec.id == OUTLET:
                # An outlet nothing feeds gives its own value, as it does in the view.
                if src not in flat.nodes:
                    held = view.nodes[src]
                    flat.add_node("value.any", {"value": held.values["in"]}, held.pos, node_id=src)
                src_pin = "out"
            elif src in collectors:
                continue  # an instance whose outlet is not there: its consumers keep their values
            dst_pin = "value" if view.nodes[link.dst].spec is _INLET_SPEC else link.dst_pin
            flat.connect(src, src_pin, link.dst, dst_pin, check_cycles=False)
    finally:
        view.close()
    return flat
