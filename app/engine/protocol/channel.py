"""The channel between an editor and the engine process, and the codecs of what crosses it.

A message (app.engine.protocol.messages: the schema is there, in code) is one JSON object (UTF-8)
with a `type`, sent as one frame of a `multiprocessing.connection.Connection` (`send_bytes` /
`recv_bytes`: never `send`/`recv`, which pickle). A message whose `blobs` field is N is followed
by N binary frames: array data and images travel as raw bytes, described in the JSON. Nothing that
crosses the channel is executed: values and definition bodies use the file format's codec
(nodes.fileformat.codec: numeric arrays only, as blobs here, as sidecars in files) and a body an
edit carries is built by the file format (`body_from_dict`: its schema, limits and placeholders for
node types not installed), as a whole patch is by `patch_from_dict`, so a later remote editor can
never run code in the engine.

The engine checks revisions after every `Edits` message: its copy of the patch counts structural
and value edits like the editor's, so equal counters mean equal documents. Edits that are
consequences of others (the pins a shader file derives, the links that go with them) are made by
the engine's own copy; their echoes in the batch are no-ops, and at the end of the batch the
counters agree again. (Checking after each single op could not work: a consequence is counted
before the op that caused it has reached the engine.) Live values (`PatchEvent.live`) are counted
by neither side and never sent as edits: they come from the engine.

Layout ops (positions, backdrops) are UI-only events: no revision counts them and no evaluator
reads them, so the engine only stores them in its copy (nothing is rebuilt). A batch keeps only
the latest layout op of each node or backdrop among consecutive layout ops (a drag of many nodes,
a burst of undo steps), so moves cost the channel and the engine little.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.protocol.messages import (
    Crossfade,
    Edits,
    Message,
    Morph,
    PatchDocument,
    PresetRecall,
    encode,
)
from nodes import (
    EditOp,
    Link,
    Patch,
    PatchEvent,
    PresetDeck,
    Recall,
    patch_from_dict,
    patch_to_dict,
)
from nodes.document.bindings import Binding
from nodes.document.patch import Backdrop
from nodes.fileformat import codec
from nodes.fileformat.codec import Blobs, BlobSink, body_to_dict
from nodes.fileformat.format import body_from_dict
from nodes.limits import MAX_POSITION, active_limits

MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""A JSON frame longer than this is refused (a patch document with its small arrays inline)."""
MAX_BLOB_BYTES = 1 << 31
MAX_BLOBS = 4096
_ARRAY_DTYPE_KINDS = "biuf"
_NUMBERS = (int, float)  # JSON numbers as decoded (bool excluded: its type is bool)


class ProtocolError(Exception):
    """A frame that is not a message of this schema (the connection is then closed)."""


# ----------------------------------------------------------------------------- the channel


class Channel:
    """Messages over a connection: `send(message, blobs)` and `receive() -> (message, blobs)`.

    Sending is safe from one thread at a time; receiving blocks (run it on a reader thread)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def send(self, message: Message | Mapping[str, Any], blobs: list[bytes] | None = None) -> None:
        """Send a message (or a JSON object as it is: what a peer of another make would send)."""
        blobs = blobs or []
        fields = encode(message) if isinstance(message, Message) else dict(message)
        header = {**fields, "blobs": len(blobs)} if blobs else fields
        self.connection.send_bytes(json.dumps(header, separators=(",", ":")).encode())
        for blob in blobs:
            self.connection.send_bytes(blob)

    def receive(self) -> tuple[dict[str, Any], list[bytes]]:
        """The next message as its JSON object (`app.engine.protocol.messages.decode` makes it a
        message); EOFError when the other side is gone, ProtocolError on garbage."""
        frame = self.connection.recv_bytes(MAX_MESSAGE_BYTES)
        try:
            message = json.loads(frame)
        except ValueError as error:
            raise ProtocolError(f"not JSON: {error}") from None
        if not isinstance(message, dict) or not isinstance(message.get("type"), str):
            raise ProtocolError("a message is a JSON object with a string 'type'")
        count = message.pop("blobs", 0)
        if not isinstance(count, int) or not 0 <= count <= MAX_BLOBS:
            raise ProtocolError(f"bad blob count {count!r}")
        blobs = [self.connection.recv_bytes(MAX_BLOB_BYTES) for _ in range(count)]
        return message, blobs

    def close(self) -> None:
        self.connection.close()


# ----------------------------------------------------------------------------- values


def encode_value(value: Any, blobs: list[bytes], key: str = "value") -> Any:
    """A node value as a message carries it (nodes.fileformat.codec, as a file's values): arrays as
    `{"$array": {"blob", "dtype", "shape"}}` with their bytes appended to `blobs`; a value no
    file could hold is refused (UnsavableValueError, one line naming `key`)."""
    return codec.encode_value(value, BlobSink(blobs), key)


def decode_value(value: Any, blobs: list[bytes]) -> Any:
    """The inverse of `encode_value`, with a file's checks; ProtocolError saying what is wrong
    (an array that does not fit its description, a dtype or shape no file may hold)."""
    try:
        return codec.decode_value(value, Blobs(blobs), active_limits())
    except ValueError as error:
        raise ProtocolError(str(error)) from None


# ----------------------------------------------------------------------------- patches


def patch_message(patch: Patch) -> tuple[PatchDocument, list[bytes]]:
    """The `patch` message for the whole patch, with large arrays as blobs."""
    arrays: dict[str, np.ndarray] = {}
    document = patch_to_dict(patch, arrays)
    blobs: list[bytes] = []
    sink = BlobSink(blobs)
    described = {key: sink.put(array, key) for key, array in arrays.items()}
    folder = str(patch.folder) if patch.folder is not None else None
    message = PatchDocument(patch.revision, patch.value_revision, document, described, folder)
    return message, blobs


def patch_from_message(message: PatchDocument, blobs: list[bytes]) -> Patch:
    """The Patch of a `patch` message, with its revisions; PatchFileError or ProtocolError."""
    arrays = {
        key: decode_value({"$array": reference}, blobs) for key, reference in message.arrays.items()
    }
    patch = patch_from_dict(
        message.document,
        "patch message",
        npz=arrays,
        folder=Path(message.folder) if message.folder is not None else None,
    )
    patch.revision = _revision(message.rev, "rev")
    patch.value_revision = _revision(message.vrev, "vrev")
    return patch


def _revision(value: int, key: str) -> int:
    if value < 0:
        raise ProtocolError(f"patch: '{key}' must be a revision number")
    return value


def event_op(patch: Patch, event: PatchEvent, blobs: list[bytes]) -> dict[str, Any] | None:
    """One change event of `patch` (just applied) as an op of an `edits` message (array values
    appended to `blobs`), or None for edits the engine made itself (live values: they came from
    the engine's controls)."""
    if event.live:
        return None
    op: dict[str, Any] = {"op": str(event.op)}
    if event.definition is not None:
        op["def"] = event.definition
        patch = patch.definition(event.definition)
    op.update(_ENCODE_OP[event.op](patch, event, blobs))
    return op


def _preset_op(patch: Patch, event: PatchEvent, blobs: list[bytes]) -> dict[str, Any]:
    values = patch.presets.get(event.value)
    encoded = None if values is None else [
        [node_id, pin, encode_value(value, blobs)] for (node_id, pin), value in values.items()
    ]  # fmt: skip
    return {"name": event.value, "values": encoded}


def _binding_op(patch: Patch, event: PatchEvent, _blobs: list[bytes]) -> dict[str, Any]:
    binding = patch.bindings.get(event.value)
    return {"id": event.value, "binding": binding.to_dict() if binding is not None else None}


def _backdrop_op(patch: Patch, event: PatchEvent, _blobs: list[bytes]) -> dict[str, Any]:
    backdrop = patch.backdrops.get(event.value)
    found = None if backdrop is None else _backdrop_message(backdrop)
    return {"id": event.value, "backdrop": found}


def _add_definition_op(patch: Patch, event: PatchEvent, blobs: list[bytes]) -> dict[str, Any]:
    """The body as a file's definition (nodes.fileformat.codec), its arrays as blobs."""
    body = body_to_dict(patch.definition(event.value), BlobSink(blobs), "")
    return {"name": event.value, "body": body}


def _add_node_op(patch: Patch, event: PatchEvent, blobs: list[bytes]) -> dict[str, Any]:
    instance = patch.nodes[event.node_id or ""]
    return {
        "node": instance.id,
        "node_type": instance.type_id,
        "values": {k: encode_value(v, blobs) for k, v in instance.values.items()},
        "pos": list(instance.pos),
    }


_OpEncoder = Callable[[Patch, PatchEvent, list[bytes]], dict[str, Any]]
_ENCODE_OP: dict[EditOp, _OpEncoder] = {
    EditOp.ADD_DEFINITION: _add_definition_op,
    EditOp.REMOVE_DEFINITION: lambda patch, event, blobs: {"name": event.value},
    EditOp.RENAME_DEFINITION: lambda patch, event, blobs: {
        "name": event.value[0], "new": event.value[1]
    },
    EditOp.ADD_NODE: _add_node_op,
    EditOp.MOVE: lambda patch, event, blobs: {
        "node": event.node_id, "pos": list(patch.nodes[event.node_id or ""].pos)
    },
    EditOp.BACKDROP: _backdrop_op,
    EditOp.REMOVE_NODE: lambda patch, event, blobs: {"node": event.node_id},
    EditOp.PINS: lambda patch, event, blobs: {"node": event.node_id},
    EditOp.CONNECT: lambda patch, event, blobs: {"link": list(event.link or ())},
    EditOp.DISCONNECT: lambda patch, event, blobs: {"link": list(event.link or ())},
    EditOp.SET_VALUE: lambda patch, event, blobs: {
        "node": event.node_id, "pin": event.pin, "value": encode_value(event.value, blobs)
    },
    EditOp.SETTINGS: lambda patch, event, blobs: {
        "settings": {k: encode_value(v, blobs) for k, v in event.value.items()}
    },
    EditOp.PRESET: _preset_op,
    EditOp.BINDING: _binding_op,
}  # fmt: skip
"""How each edit travels (the fields of its op besides `op` and `def`)."""


class EditBatch:
    """The change events of a Patch since the last `take()`, as one `edits` message tagged with
    the document's revisions after them (subscribe `add` to the patch)."""

    def __init__(self, patch: Patch) -> None:
        self.patch = patch
        self._ops: list[dict[str, Any]] = []
        self._blobs: list[bytes] = []
        # (op, definition, node or backdrop id) -> index in _ops of the latest layout op among
        # the consecutive ones at the end of the batch (see the module note)
        self._layout: dict[tuple[str, str, str], int] = {}
        self.sent = 0  # batches taken so far: the `seq` of the last one
        # (node, pin) -> the `seq` of the batch that last set its value
        self.value_seq: dict[tuple[str, str], int] = {}

    def add(self, event: PatchEvent) -> None:
        op = event_op(self.patch, event, self._blobs)
        if op is None:
            return
        if event.kind == "ui":
            key = (str(event.op), event.definition or "", str(event.node_id or event.value))
            index = self._layout.get(key)
            if index is not None:  # the same node or backdrop again: only where it ends counts
                self._ops[index] = op
                return
            self._layout[key] = len(self._ops)
        else:  # an op that layout ops must not move across (a node removed, then made again)
            self._layout.clear()
        self._ops.append(op)
        if event.op == EditOp.SET_VALUE and event.definition is None:
            self.value_seq[str(event.node_id), str(event.pin)] = self.sent + 1

    def edited_after(self, node_id: str, pin: str, seq: int) -> bool:
        """Whether this document set the pin in a batch after `seq` (or not sent yet): a live
        value the engine set before it heard of that edit is older than the document's."""
        return self.value_seq.get((node_id, pin), 0) > seq

    def take(self) -> tuple[Edits, list[bytes]] | None:
        """The `edits` message of what was added, or None if nothing was; starts a new batch."""
        if not self._ops:
            return None
        self.sent += 1
        message = Edits(self.sent, self.patch.revision, self.patch.value_revision, self._ops)
        blobs, self._ops, self._blobs = self._blobs, [], []
        self._layout.clear()
        return message, blobs

    def clear(self) -> None:
        self._ops, self._blobs = [], []
        self._layout.clear()


def apply_edits(patch: Patch, message: Edits, blobs: list[bytes]) -> bool:
    """Apply an `edits` message to the engine's copy; True when the revisions then agree.

    Raises PatchError for an edit the patch refuses and ProtocolError for a malformed one."""
    for op in message.ops:
        _apply_op(patch, op, blobs)
    return patch.revision == message.rev and patch.value_revision == message.vrev


def _apply_op(patch: Patch, op: Any, blobs: list[bytes]) -> None:
    kind = op.get("op") if isinstance(op, dict) else None
    try:
        apply = _APPLY_OP[EditOp(str(kind))]
    except ValueError:
        raise ProtocolError(f"edits: unknown op {kind!r}") from None
    try:
        if "def" in op:
            patch = patch.definition(str(op["def"]))
        apply(patch, op, blobs)
    except (KeyError, TypeError) as error:
        raise ProtocolError(f"edits {kind}: malformed ({error})") from None


def _connect(patch: Patch, op: dict[str, Any], _blobs: list[bytes]) -> None:
    link = _link(op)
    # Unless made already, as a consequence of another edit. (An input pin has one link at
    # most: looked up there, not in the list of links, which made a paste of 1,000 nodes
    # quadratic.)
    if patch.link_into(link.dst, link.dst_pin) != link:
        patch.connect(*link)


def _disconnect(patch: Patch, op: dict[str, Any], _blobs: list[bytes]) -> None:
    link = _link(op)
    if patch.link_into(link.dst, link.dst_pin) == link:  # else removed as a consequence already
        patch.disconnect(*link)


def _add_node(patch: Patch, op: dict[str, Any], blobs: list[bytes]) -> None:
    values = {k: decode_value(v, blobs) for k, v in dict(op["values"]).items()}
    pos = _position(op["pos"]) if "pos" in op else None
    patch.add_node(str(op["node_type"]), values, pos, node_id=str(op["node"]))


def _set_backdrop(patch: Patch, op: dict[str, Any], _blobs: list[bytes]) -> None:
    backdrop_id, found = str(op["id"]), op["backdrop"]
    patch.set_backdrop(
        backdrop_id, None if found is None else _backdrop_from_message(backdrop_id, found)
    )


def _set_binding(patch: Patch, op: dict[str, Any], _blobs: list[bytes]) -> None:
    found = op["binding"]
    patch.set_binding(str(op["id"]), None if found is None else Binding.from_dict(found))


_OpApplier = Callable[[Patch, dict[str, Any], list[bytes]], object]
_APPLY_OP: dict[EditOp, _OpApplier] = {
    EditOp.ADD_DEFINITION: lambda patch, op, blobs: patch.add_definition(
        str(op["name"]), body_from_dict(op["body"], patch, "edits add_definition", Blobs(blobs))
    ),
    EditOp.REMOVE_DEFINITION: lambda patch, op, blobs: patch.remove_definition(str(op["name"])),
    EditOp.RENAME_DEFINITION: lambda patch, op, blobs: patch.rename_definition(
        str(op["name"]), str(op["new"])
    ),
    EditOp.ADD_NODE: _add_node,
    EditOp.MOVE: lambda patch, op, blobs: patch.set_position(str(op["node"]), _position(op["pos"])),
    EditOp.BACKDROP: _set_backdrop,
    EditOp.REMOVE_NODE: lambda patch, op, blobs: patch.remove_node(str(op["node"])),
    EditOp.CONNECT: _connect,
    EditOp.DISCONNECT: _disconnect,
    EditOp.SET_VALUE: lambda patch, op, blobs: patch.set_value(
        str(op["node"]), str(op["pin"]), decode_value(op["value"], blobs)
    ),
    EditOp.SETTINGS: lambda patch, op, blobs: patch.update_settings(
        **{k: decode_value(v, blobs) for k, v in dict(op["settings"]).items()}
    ),
    EditOp.PRESET: lambda patch, op, blobs: patch.set_preset(
        str(op["name"]), _preset_values(op["values"], blobs)
    ),
    EditOp.BINDING: _set_binding,
    EditOp.PINS: lambda patch, op, blobs: None,  # derived by the engine's own set_value
}
"""What each op of an `edits` message does to the engine's copy."""


def _preset_values(items: Any, blobs: list[bytes]) -> dict[tuple[str, str], Any] | None:
    """The values of a `preset` op: [[node, pin, value], ...], or None (the preset is removed)."""
    if items is None:
        return None
    if not isinstance(items, list) or not all(
        isinstance(item, list) and len(item) == 3 for item in items
    ):
        raise ProtocolError("edits preset: 'values' must be a list of [node, pin, value]")
    return {(str(node), str(pin)): decode_value(value, blobs) for node, pin, value in items}


def _position(value: Any) -> tuple[float, float]:
    """A node position of an op: two finite numbers within MAX_POSITION (as a file's). Checked
    with comparisons only (NaN and infinities fail them): a drag of many nodes sends many."""
    if type(value) is list and len(value) == 2:
        x, y = value
        if (
            type(x) in _NUMBERS
            and type(y) in _NUMBERS
            and -MAX_POSITION <= x <= MAX_POSITION
            and -MAX_POSITION <= y <= MAX_POSITION
        ):
            return float(x), float(y)
    raise ProtocolError(f"a position is two finite numbers within ±{MAX_POSITION:g}: {value!r:.80}")


def _backdrop_message(backdrop: Backdrop) -> dict[str, Any]:
    return {"title": backdrop.title, "color": list(backdrop.color), "rect": list(backdrop.rect)}


def _backdrop_from_message(backdrop_id: str, message: Any) -> Backdrop:
    """The backdrop of a `backdrop` op, checked as a file's backdrops are."""
    try:
        title, color, rect = message["title"], message["color"], message["rect"]
        ok = (
            isinstance(title, str)
            and isinstance(color, list)
            and len(color) == 3
            and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 255 for c in color)
            and isinstance(rect, list)
            and len(rect) == 4
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in rect)
            and all(math.isfinite(v) and abs(v) <= MAX_POSITION for v in rect)
            and rect[2] >= 0
            and rect[3] >= 0
        )
    except (KeyError, TypeError):
        ok = False
    if not ok or not backdrop_id:
        raise ProtocolError(f"backdrop {backdrop_id!r}: malformed ({message!r:.80})")
    x, y, width, height = (float(v) for v in rect)
    return Backdrop(backdrop_id, title, (color[0], color[1], color[2]), (x, y, width, height))


def _link(op: dict[str, Any]) -> Link:
    parts = op["link"]
    if not isinstance(parts, list) or len(parts) != 4:
        raise ProtocolError(f"edits {op.get('op')}: a link is [src, src_pin, dst, dst_pin]")
    return Link(*(str(part) for part in parts))


# ----------------------------------------------------------------------------- presets

DeckMessage = PresetRecall | Morph | Crossfade


def apply_deck_message(deck: PresetDeck, message: DeckMessage) -> None:
    """Hand a `preset`, `morph` or `crossfade` message to a preset deck (the engine's, or an
    editor's own when it runs the patch itself); PatchError when it is bad."""
    if isinstance(message, PresetRecall):
        fields = {
            key: getattr(message, key)
            for key in Recall.__dataclass_fields__
            if getattr(message, key) is not None
        }
        deck.request(message.name, Recall(**fields))
    elif isinstance(message, Morph):
        deck.morph(message.weights)
    else:
        deck.crossfade(message.a, message.b, message.position)


# ----------------------------------------------------------------------------- reports


def report_value(value: Any, limit: int = 256) -> Any:
    """A watched output value as JSON for the inspector: numbers, text and small arrays as they
    are, long arrays shortened (with their shape), textures and other objects described."""
    if isinstance(value, bool | int | float | str) or value is None:
        return value if not isinstance(value, str) or len(value) <= 4096 else value[:4096] + "…"
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple | list) and len(value) <= limit:
        return [report_value(v, limit) for v in value]
    if isinstance(value, np.ndarray) and value.dtype.kind in _ARRAY_DTYPE_KINDS:
        flat = value.reshape(-1)
        return {
            "$array": {
                "dtype": value.dtype.str,
                "shape": list(value.shape),
                "head": flat[:limit].tolist(),
            }
        }
    size = getattr(value, "size", None)
    if isinstance(size, tuple) and len(size) == 2:
        return {"$texture": {"size": list(size)}}
    return {"$object": type(value).__name__}
