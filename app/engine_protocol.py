"""The messages between an editor and the engine process, and the channel that carries them.

Schema version 1. A message is one JSON object (UTF-8) with a `type`, sent as one frame of a
`multiprocessing.connection.Connection` (`send_bytes` / `recv_bytes`: never `send`/`recv`, which
pickle). A message whose `blobs` field is N is followed by N binary frames: array data and
images travel as raw bytes, described in the JSON. Nothing that crosses the channel is executed:
values are decoded by the file format's rules (numeric arrays only) and patches are checked by
`patch_from_dict` like any file, so a later remote editor can never run code in the engine.

Editor -> engine
    hello     {schema, role: "editor"}: first message; the engine answers `hello`
    patch     {rev, vrev, document, arrays, folder, path}: the whole patch (resync); large
              arrays as blobs described in `arrays`; `path` is the editor's file name for it
    edit      {rev, vrev, op, ...}: one change event of the editor's Patch (see `event_message`),
              tagged with the document's revisions *after* the change
    get_patch {}: send the running patch (an editor attaching to a running engine)
    watch     {nodes}: nodes whose output values come back in reports (inspector, preview)
    images    {thumbnails: [node ids], previews: [[node, pin], ...]}: textures to send back small
    output    {open, screen, fullscreen}: the output window
    pause     {paused}
    quit      {}: stop the engine (the editor closed on purpose)

Engine -> editor
    hello     {schema, pid, rev, vrev, gl}: `gl` says whether GPU nodes can run
    patch     {rev, vrev, document, arrays, folder, path}: the running patch (get_patch)
    resync    {reason}: revisions disagreed; the engine ignores edits until the next `patch`
    report    {frame, rev, fps, frame_ms, mode, build_ms, paused, output_open, bypassed, nodes,
               values, images}: at most ~30 a second. `nodes` maps id -> [class, status, error];
              `values` maps id -> {pin: value} (see `report_value`); `bypassed` maps the nodes
              the watchdog stopped to the reason; `images` lists {node, pin, size, role}
              (role: thumbnail or preview) whose RGBA pixels follow as blobs
    error     {message}: a message that could not be applied (one line)

The engine checks revisions after every edit: its copy of the patch counts structural and value
edits like the editor's, so equal counters mean equal documents. Edits that are consequences of
others (the pins a shader file derives, the links that go with them) are applied by the engine
itself; their echoes from the editor are no-ops, and the counters still agree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from nodes import Patch, PatchEvent, patch_from_dict, patch_to_dict

SCHEMA_VERSION = 1
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""A JSON frame longer than this is refused (a patch document with its small arrays inline)."""
MAX_BLOB_BYTES = 1 << 31
MAX_BLOBS = 4096
_ARRAY_DTYPE_KINDS = "biuf"


class ProtocolError(Exception):
    """A frame that is not a message of this schema (the connection is then closed)."""


# ----------------------------------------------------------------------------- the channel


class Channel:
    """Messages over a connection: `send(message, blobs)` and `receive() -> (message, blobs)`.

    Sending is safe from one thread at a time; receiving blocks (run it on a reader thread)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def send(self, message: Mapping[str, Any], blobs: list[bytes] | None = None) -> None:
        blobs = blobs or []
        header = {**message, "blobs": len(blobs)} if blobs else dict(message)
        self.connection.send_bytes(json.dumps(header, separators=(",", ":")).encode())
        for blob in blobs:
            self.connection.send_bytes(blob)

    def receive(self) -> tuple[dict[str, Any], list[bytes]]:
        """The next message; EOFError when the other side is gone, ProtocolError on garbage."""
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


def encode_value(value: Any, blobs: list[bytes]) -> Any:
    """A node value as JSON; numeric arrays as `{"$blob": {dtype, shape, index}}` with their
    bytes appended to `blobs`."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _ARRAY_DTYPE_KINDS:
            raise ValueError(f"arrays of {value.dtype} cannot be sent")
        blobs.append(np.ascontiguousarray(value).tobytes())
        spec = {"dtype": value.dtype.str, "shape": list(value.shape), "index": len(blobs) - 1}
        return {"$blob": spec}
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def decode_value(value: Any, blobs: list[bytes]) -> Any:
    """The inverse of `encode_value`; ProtocolError for a blob that does not fit its description."""
    if not (isinstance(value, dict) and set(value) == {"$blob"}):
        return value
    spec = value["$blob"]
    try:
        dtype = np.dtype(spec["dtype"])
        shape = tuple(int(n) for n in spec["shape"])
        data = blobs[int(spec["index"])]
    except (KeyError, TypeError, ValueError, IndexError) as error:
        raise ProtocolError(f"bad $blob {spec!r:.80}: {error}") from None
    if dtype.kind not in _ARRAY_DTYPE_KINDS or any(n < 0 for n in shape):
        raise ProtocolError(f"bad $blob {spec!r:.80}")
    if len(data) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
        raise ProtocolError(f"$blob {spec!r:.80} does not match its {len(data)} bytes")
    return np.frombuffer(data, dtype).reshape(shape).copy()


# ----------------------------------------------------------------------------- patches


def patch_message(patch: Patch) -> tuple[dict[str, Any], list[bytes]]:
    """The `patch` message for the whole patch, with large arrays as blobs."""
    arrays: dict[str, np.ndarray] = {}
    document = patch_to_dict(patch, arrays)
    blobs = [np.ascontiguousarray(array).tobytes() for array in arrays.values()]
    described = {
        key: {"dtype": array.dtype.str, "shape": list(array.shape), "index": index}
        for index, (key, array) in enumerate(arrays.items())
    }
    message = {
        "type": "patch",
        "rev": patch.revision,
        "vrev": patch.value_revision,
        "document": document,
        "arrays": described,
        "folder": str(patch.folder) if patch.folder is not None else None,
    }
    return message, blobs


def patch_from_message(message: Mapping[str, Any], blobs: list[bytes]) -> Patch:
    """The Patch of a `patch` message, with its revisions; PatchFileError or ProtocolError."""
    described = message.get("arrays") or {}
    if not isinstance(described, dict):
        raise ProtocolError("patch: 'arrays' must be an object")
    arrays = {key: decode_value({"$blob": spec}, blobs) for key, spec in described.items()}
    folder = message.get("folder")
    patch = patch_from_dict(
        message.get("document"),
        "patch message",
        npz=arrays,
        folder=Path(folder) if isinstance(folder, str) else None,
    )
    patch.revision = _revision(message, "rev")
    patch.value_revision = _revision(message, "vrev")
    return patch


def _revision(message: Mapping[str, Any], key: str) -> int:
    value = message.get(key)
    if not isinstance(value, int) or value < 0:
        raise ProtocolError(f"{message.get('type')}: '{key}' must be a revision number")
    return value


def event_message(patch: Patch, event: PatchEvent) -> tuple[dict[str, Any], list[bytes]] | None:
    """The `edit` message for a change event of `patch` (just applied), or None for edits the
    engine does not need (positions)."""
    if event.kind == "ui":
        return None
    blobs: list[bytes] = []
    message: dict[str, Any] = {
        "type": "edit",
        "rev": patch.revision,
        "vrev": patch.value_revision,
        "op": event.op,
    }
    if event.op == "add_node":
        instance = patch.nodes[event.node_id or ""]
        message["node"] = instance.id
        message["node_type"] = instance.type_id
        message["values"] = {k: encode_value(v, blobs) for k, v in instance.values.items()}
    elif event.op in ("remove_node", "pins"):
        message["node"] = event.node_id
    elif event.op in ("connect", "disconnect"):
        message["link"] = list(event.link or ())
    elif event.op == "set_value":
        message["node"] = event.node_id
        message["pin"] = event.pin
        message["value"] = encode_value(event.value, blobs)
    elif event.op == "settings":
        message["settings"] = {k: encode_value(v, blobs) for k, v in event.value.items()}
    else:
        return None
    return message, blobs


def apply_edit(patch: Patch, message: Mapping[str, Any], blobs: list[bytes]) -> bool:
    """Apply an `edit` message to the engine's copy; True when the revisions then agree.

    Raises PatchError for an edit the patch refuses and ProtocolError for a malformed one."""
    op = message.get("op")
    try:
        if op == "add_node":
            values = {k: decode_value(v, blobs) for k, v in dict(message["values"]).items()}
            patch.add_node(str(message["node_type"]), values, node_id=str(message["node"]))
        elif op == "remove_node":
            patch.remove_node(str(message["node"]))
        elif op == "connect":
            patch.connect(*(str(part) for part in message["link"]))
        elif op == "disconnect":
            link = tuple(str(part) for part in message["link"])
            if link in patch.links:  # else removed already, as a consequence of another edit
                patch.disconnect(*link)
        elif op == "set_value":
            value = decode_value(message["value"], blobs)
            patch.set_value(str(message["node"]), str(message["pin"]), value)
        elif op == "settings":
            settings = {k: decode_value(v, blobs) for k, v in dict(message["settings"]).items()}
            patch.update_settings(**settings)
        elif op != "pins":  # pins are derived by the engine's own set_value
            raise ProtocolError(f"edit: unknown op {op!r}")
    except (KeyError, TypeError) as error:
        raise ProtocolError(f"edit {op}: malformed ({error})") from None
    return patch.revision == message.get("rev") and patch.value_revision == message.get("vrev")


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
