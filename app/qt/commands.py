"""Undo commands: every editor gesture becomes one QUndoCommand that edits the Patch.

The commands touch the Patch only; the canvas, inspector and evaluator follow through the Patch's
change events. A command is built from a gesture that has already been checked, so `redo` never
meets a refused edit. Rewiring is the exception that checks itself: `RewireCommand.apply` tries the
edit and puts everything back if the Patch refuses any part of it, so a refused link is never
half-applied. Value edits are applied the same way, since the Patch may refuse a value.

Value edits merge: edits of one pin carrying the same gesture token (one slider drag) collapse
into a single undo step.

Commands edit the Patch they were given: the document, or a definition's body (an edit inside a
definition), so a body edit undoes the same whether the canvas is still inside or not. Edits of
definitions and instances made of many primitive edits (group, ungroup, make unique, remove a
definition) are `DocumentEditCommand`s: they keep the whole document's state before and after
(node values are shared, not copied) and undo or redo by syncing the document back to it with
primitive edits, re-adopting the same body objects, so the other commands' bodies stay the ones
the document uses.

Bindings (which control drives which pin) are edited by `SetBindingCommand`, one binding per step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from PySide6.QtGui import QUndoCommand

from nodes import Backdrop, Link, NodeSpec, Patch, PatchError
from nodes.document.bindings import Binding


@dataclass(frozen=True)
class NodeRecord:
    """Everything needed to put a node back: id, type, values and position (and the spec of a
    placeholder, whose type the library does not have)."""

    id: str
    type_id: str
    values: Mapping[str, Any]
    pos: tuple[float, float]
    placeholder: NodeSpec | None = None


def record_nodes(patch: Patch, node_ids: Iterable[str]) -> list[NodeRecord]:
    """Records of the given nodes, in patch order."""
    wanted = set(node_ids)
    return [
        NodeRecord(
            inst.id,
            inst.type_id,
            dict(inst.values),
            inst.pos,
            inst.spec if inst.spec.missing else None,
        )
        for inst in patch.nodes.values()
        if inst.id in wanted
    ]


def _add_records(patch: Patch, records: Iterable[NodeRecord], links: Iterable[Link]) -> None:
    for rec in records:
        patch.add_node(rec.type_id, rec.values, rec.pos, node_id=rec.id, spec=rec.placeholder)
    for link in links:
        patch.connect(*link)


class AddNodesCommand(QUndoCommand):
    """Create nodes (and links among or into them): creation, paste, duplicate."""

    def __init__(
        self, patch: Patch, records: list[NodeRecord], links: list[Link], text: str
    ) -> None:
        super().__init__(text)
        self._patch, self._records, self._links = patch, records, links

    @property
    def node_ids(self) -> list[str]:
        return [rec.id for rec in self._records]

    def redo(self) -> None:
        _add_records(self._patch, self._records, self._links)

    def undo(self) -> None:
        for rec in reversed(self._records):
            self._patch.remove_node(rec.id)


class RemoveNodesCommand(QUndoCommand):
    """Delete nodes with every link into or out of them."""

    def __init__(self, patch: Patch, node_ids: Iterable[str]) -> None:
        self._patch = patch
        self._records = record_nodes(patch, node_ids)
        ids = {rec.id for rec in self._records}
        self._links = [link for link in patch.links if link.src in ids or link.dst in ids]
        count = len(self._records)
        super().__init__(f"delete {count} node{'s' if count != 1 else ''}")

    def redo(self) -> None:
        for rec in self._records:
            self._patch.remove_node(rec.id)

    def undo(self) -> None:
        _add_records(self._patch, self._records, self._links)


class _AppliedFirst(QUndoCommand):
    """A command whose edit is made by `apply()` before it is pushed, so that a refusal can be
    reported instead of raised inside the stack; the stack's first `redo` is then skipped."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._applied = False

    def apply(self) -> None:
        self._do()
        self._applied = True

    def redo(self) -> None:
        if self._applied:
            self._applied = False
            return
        self._do()

    def _do(self) -> None:
        raise NotImplementedError


class RewireCommand(_AppliedFirst):
    """Drop some links and make others, as one step (a drag that replaces a link, a slice)."""

    def __init__(self, patch: Patch, drop: list[Link], add: list[Link]) -> None:
        super().__init__("connect" if add else "disconnect")
        self._patch, self._drop, self._add = patch, drop, add

    def _do(self) -> None:
        """Make the edit, or raise the Patch's PatchError with the patch left unchanged."""
        """Make the edit now, or raise the Patch's PatchError with the patch left unchanged."""
        dropped: list[Link] = []
        added: list[Link] = []
        try:
            for link in self._drop:
                self._patch.disconnect(*link)
                dropped.append(link)
            for link in self._add:
                self._patch.connect(*link)
                added.append(link)
        except PatchError:
            for link in reversed(added):
                self._patch.disconnect(*link)
            for link in reversed(dropped):
                self._patch.connect(*link)
            raise

    def undo(self) -> None:
        for link in reversed(self._add):
            self._patch.disconnect(*link)
        for link in reversed(self._drop):
            self._patch.connect(*link)


class MoveNodesCommand(QUndoCommand):
    """Move nodes; `moves` maps node id -> (old position, new position)."""

    def __init__(
        self, patch: Patch, moves: Mapping[str, tuple[tuple[float, float], tuple[float, float]]]
    ) -> None:
        count = len(moves)
        super().__init__(f"move {count} node{'s' if count != 1 else ''}")
        self._patch, self._moves = patch, dict(moves)

    def redo(self) -> None:
        for node_id, (_old, new) in self._moves.items():
            self._patch.set_position(node_id, new)

    def undo(self) -> None:
        for node_id, (old, _new) in self._moves.items():
            self._patch.set_position(node_id, old)


class SetValueCommand(_AppliedFirst):
    """Set one input value. Consecutive edits with the same non-None `gesture` merge."""

    MERGE_ID = 1

    def __init__(
        self, patch: Patch, node_id: str, pin: str, value: Any, gesture: int | None = None
    ) -> None:
        super().__init__(f"set {node_id}.{pin}")
        self._patch, self.node_id, self.pin = patch, node_id, pin
        self._old = patch.value(node_id, pin)
        self._new = value
        self.gesture = gesture
        # A value that derives pins (e.g. shader source) may drop links; undo restores them.
        self._links_before = list(patch.links_into(node_id).values())

    def id(self) -> int:
        return self.MERGE_ID

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not (
            isinstance(other, SetValueCommand)
            and self.gesture is not None
            and other.gesture == self.gesture
            and (other.node_id, other.pin) == (self.node_id, self.pin)
        ):
            return False
        self._new = other._new
        # A gesture that ends where it began (a colour dialog cancelled) leaves no undo step.
        self.setObsolete(same_value(self._new, self._old))
        return True

    def _do(self) -> None:
        self._patch.set_value(self.node_id, self.pin, self._new)

    def undo(self) -> None:
        self._patch.set_value(self.node_id, self.pin, self._old)
        present = set(self._patch.links)
        for link in self._links_before:
            if link not in present:
                self._patch.connect(*link)


# ------------------------------------------------------------------ definitions and instances
@dataclass(frozen=True)
class _Content:
    """The nodes (id, type, values, position) and links of one patch, at one moment."""

    nodes: tuple[tuple[str, str, Mapping[str, Any], tuple[float, float]], ...]
    links: tuple[Link, ...]


def _content(patch: Patch) -> _Content:
    # Values dicts are replaced on every edit, never changed: they are kept as they are.
    nodes = tuple((n.id, n.type_id, n.values, n.pos) for n in patch.nodes.values())
    return _Content(nodes, tuple(patch.links))


@dataclass(frozen=True)
class DocumentState:
    """A document's own nodes and links and each definition's body (the live body object, so that
    commands holding a body keep editing the one the document uses after an undo)."""

    document: _Content
    definitions: Mapping[str, tuple[Patch, _Content]]


def document_state(document: Patch) -> DocumentState:
    return DocumentState(
        _content(document),
        {name: (body, _content(body)) for name, body in document.definitions.items()},
    )


def same_value(a: Any, b: Any) -> bool:
    """True if two pin values are equal (values that compare element-wise: never)."""
    if a is b:
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays compare element-wise: set them again
        return False


def _sync(patch: Patch, content: _Content) -> None:
    """Make `patch` hold `content` by primitive edits (nodes that did not change stay, with
    their evaluation state)."""
    wanted = {node[0]: node for node in content.nodes}
    kept_links = set(content.links)
    for link in patch.links:
        if link not in kept_links:
            patch.disconnect(*link)
    for node_id, inst in list(patch.nodes.items()):
        node = wanted.get(node_id)
        if node is None or node[1] != inst.type_id:
            patch.remove_node(node_id)
    for node_id, type_id, values, pos in content.nodes:
        inst = patch.nodes.get(node_id)
        if inst is None:
            patch.add_node(type_id, values, pos, node_id=node_id)
            continue
        if inst.values is not values:
            # Pins that derive others (an instance's definition, a shader's source) first.
            first = [pin for pin in inst.spec.dynamic_from if pin in values]
            for pin in [*first, *(pin for pin in values if pin not in first)]:
                current = patch.nodes[node_id]
                if current.input(pin) is not None and not same_value(
                    current.values[pin], values[pin]
                ):
                    patch.set_value(node_id, pin, values[pin])
        if inst.pos != pos:
            patch.set_position(node_id, pos)
    present = set(patch.links)
    for link in content.links:
        if link not in present:
            patch.connect(*link)


def _uses(content: _Content) -> set[str]:
    return {
        str(values.get("definition"))
        for _, type_id, values, _ in content.nodes
        if type_id == "subpatch"
    }


def restore_document(document: Patch, state: DocumentState) -> None:
    """Bring the document back to `state`: definitions it lacks come back (their old body
    objects), every body and the document's own nodes are synced (a definition before the
    patches holding its instances), and definitions `state` lacks go."""
    for name, (body, _) in state.definitions.items():
        if name not in document.definitions:
            for node_id in list(body.nodes):  # its stale content; it is not in the document
                body.remove_node(node_id)
            document.add_definition(name, body)
    done: list[str] = []

    def visit(name: str) -> None:
        if name in done or name not in state.definitions:
            return
        done.append(name)
        for used in _uses(state.definitions[name][1]):
            visit(used)
        _sync(document.definition(name), state.definitions[name][1])

    for name in state.definitions:
        visit(name)
    _sync(document, state.document)
    extra = [name for name in document.definitions if name not in state.definitions]
    while extra:
        free = [name for name in extra if not document.instances(name)]
        if not free:
            raise PatchError(f"cannot remove definitions still in use: {', '.join(extra)}")
        for name in free:
            document.remove_definition(name)
            extra.remove(name)


class DocumentEditCommand(_AppliedFirst):
    """An edit of definitions and instances made of many primitive edits (group, ungroup, make
    unique, remove a definition): `apply` runs it; undo and redo bring the whole document back
    to the state before or after it. An edit the Patch refuses halfway is rolled back."""

    def __init__(self, document: Patch, text: str, edit: Callable[[], Any]) -> None:
        super().__init__(text)
        self._document, self._edit = document, edit
        self._before = document_state(document)
        self._after: DocumentState | None = None
        self.result: Any = None

    def apply(self) -> None:
        try:
            self.result = self._edit()
        except PatchError:
            restore_document(self._document, self._before)
            raise
        self._after = document_state(self._document)
        self._applied = True

    def _do(self) -> None:
        assert self._after is not None
        restore_document(self._document, self._after)

    def undo(self) -> None:
        restore_document(self._document, self._before)


class RenameDefinitionCommand(_AppliedFirst):
    """Rename a definition (its instances follow)."""

    def __init__(self, document: Patch, old: str, new: str) -> None:
        super().__init__(f"rename definition {old} to {new}")
        self._document, self._old, self._new = document, old, new

    def _do(self) -> None:
        self._document.rename_definition(self._old, self._new)

    def undo(self) -> None:
        self._document.rename_definition(self._new, self._old)


class LayoutCommand(QUndoCommand):
    """Change backdrops and node positions together (a backdrop made, renamed, recoloured,
    removed, resized, or dragged with the nodes on it). `backdrops` maps a backdrop id to (before,
    after), None meaning absent; `moves` maps node id -> (old position, new position)."""

    def __init__(
        self,
        patch: Patch,
        text: str,
        backdrops: Mapping[str, tuple[Backdrop | None, Backdrop | None]],
        moves: Mapping[str, tuple[tuple[float, float], tuple[float, float]]] | None = None,
    ) -> None:
        super().__init__(text)
        self._patch, self._backdrops, self._moves = patch, dict(backdrops), dict(moves or {})

    def redo(self) -> None:
        for backdrop_id, (_old, new) in self._backdrops.items():
            self._patch.set_backdrop(backdrop_id, new)
        for node_id, (_old_pos, new_pos) in self._moves.items():
            self._patch.set_position(node_id, new_pos)

    def undo(self) -> None:
        for backdrop_id, (old, _new) in self._backdrops.items():
            self._patch.set_backdrop(backdrop_id, old)
        for node_id, (old_pos, _new_pos) in self._moves.items():
            self._patch.set_position(node_id, old_pos)


class SetBindingCommand(QUndoCommand):
    """Add, change or remove one binding (None: absent), as one undo step."""

    def __init__(self, patch: Patch, binding_id: str, binding: Binding | None, text: str) -> None:
        super().__init__(text)
        self._patch, self.binding_id = patch, binding_id
        self._old = patch.bindings.get(binding_id)
        self._new = binding

    def redo(self) -> None:
        self._patch.set_binding(self.binding_id, self._new)

    def undo(self) -> None:
        self._patch.set_binding(self.binding_id, self._old)
