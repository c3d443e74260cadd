"""Undo commands: every editor gesture becomes one QUndoCommand that edits the Patch.

The commands touch the Patch only; the canvas, inspector and evaluator follow through the Patch's
change events. A command is built from a gesture that has already been checked, so `redo` never
meets a refused edit. Rewiring is the exception that checks itself: `RewireCommand.apply` tries the
edit and puts everything back if the Patch refuses any part of it, so a refused link is never
half-applied. Value edits are applied the same way, since the Patch may refuse a value.

Value edits merge: edits of one pin carrying the same gesture token (one slider drag) collapse
into a single undo step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from PySide6.QtGui import QUndoCommand

from nodes import Link, Patch, PatchError


@dataclass(frozen=True)
class NodeRecord:
    """Everything needed to put a node back: id, type, values and position."""

    id: str
    type_id: str
    values: Mapping[str, Any]
    pos: tuple[float, float]


def record_nodes(patch: Patch, node_ids: Iterable[str]) -> list[NodeRecord]:
    """Records of the given nodes, in patch order."""
    wanted = set(node_ids)
    return [
        NodeRecord(inst.id, inst.type_id, dict(inst.values), inst.pos)
        for inst in patch.nodes.values()
        if inst.id in wanted
    ]


def _add_records(patch: Patch, records: Iterable[NodeRecord], links: Iterable[Link]) -> None:
    for rec in records:
        patch.add_node(rec.type_id, rec.values, rec.pos, node_id=rec.id)
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
        return True

    def _do(self) -> None:
        self._patch.set_value(self.node_id, self.pin, self._new)

    def undo(self) -> None:
        self._patch.set_value(self.node_id, self.pin, self._old)
        present = set(self._patch.links)
        for link in self._links_before:
            if link not in present:
                self._patch.connect(*link)
