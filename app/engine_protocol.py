"""The messages between an editor and the engine process, and the channel that carries them.

Schema version 1. A message is one JSON object (UTF-8) with a `type`, sent as one frame of a
`multiprocessing.connection.Connection` (`send_bytes` / `recv_bytes`: never `send`/`recv`, which
pickle). A message whose `blobs` field is N is followed by N binary frames: array data and
images travel as raw bytes, described in the JSON. Nothing that crosses the channel is executed:
values are decoded by the file format's rules (numeric arrays only) and patches are checked by
`patch_from_dict` like any file, so a later remote editor can never run code in the engine.

Editor -> engine
    hello     {schema, role: "editor"}: first message; the engine answers `hello`
    patch     {rev, vrev, document, arrays, folder, path, seq}: the whole patch (resync); large
              arrays as blobs described in `arrays`; `path` is the editor's file name for it;
              `seq` the last `edits` seq it includes
    edits     {seq, rev, vrev, ops}: the change events of the editor's Patch since the last
              message (one op each, see `event_op`), sent once per turn of the editor's loop,
              numbered, and tagged with the document's revisions after them (a binding
              added, changed or removed: `{op: binding, id, binding: dict or None}`). Layout
              edits travel too, so an editor that attaches later gets what was on screen:
              `{op: move, node, pos}`, `{op: backdrop, id, backdrop: {title, color, rect} or
              None}` (in a definition's body with `def`), and `add_node` carries `pos`
    path      {path}: the editor saved the patch under this file name
    get_patch {}: send the running patch (an editor attaching to a running engine)
    watch     {nodes, report}: nodes evaluated every frame whose output values come back in
              reports (inspector, preview), and nodes whose values come back too but which run
              only when something needs them (values shown on the canvas's links: `report`,
              optional, at most `app.engine.REPORT_VALUES_CAP`)
    images    {thumbnails: [node ids], previews: [[node, pin], ...]}: textures to send back small
    output    {open, screen, fullscreen}: the output window
    pause     {paused}
    step      {seconds}: while paused, move patch time by `seconds` (-1..1; negative: a step
              back, the frame index nodes see goes back one too) and run one frame
    rate      {rate}: patch time runs at `rate` times wall time (0 < rate <= 16), continuous
    fixed_step {fps}: every frame advances exactly 1 / fps of patch time (rendering); null: real
              time again, from the patch time reached
    preset    {name, mode, seconds, easing, switch, start}: recall a preset (mode jump or
              transition; start now, beat or bar: the next beat or bar of the patch tempo)
    morph     {weights}: blend presets by weight, {name: weight}
    crossfade {a, b, position}: blend presets a and b (position 0: a, 1: b)
    reset_time {}: patch time and the frame count the nodes see back to 0 (paused: one frame
              at time 0 runs)
    nudge     {beats}: shift the beat of every `time.beat` by `beats` (within +-0.5) next frame
    resync    {}: the next frame is the downbeat (beat 0 of a bar) of every `time.beat`
    allow_send {allow}: let `osc.out` nodes send (as `--allow-send` does), or stop them
    services  {osc_host}: OSC input listens on this IP address from now on (as `--osc-host`
              does; the OSC service alone restarts; the port is the patch's `osc_port` setting)
    learn     {node, pin}: the next control event (OSC, MIDI) of any source is learned for that
              pin (the engine answers `learned`); {node: null} cancels
    retry     {node}: run a node bypassed for taking too long (or for hanging the engine) again
    profile   {node, top}: ask for the `top` costliest nodes (1..500) and, unless `node` is null,
              why that node (a path, `blob1/lfo3`) ran; sent only while the editor shows them
    quit      {unless_showing}: stop the engine (the editor closed on purpose); with
              `unless_showing`, only if its output window is closed (perform mode)

Engine -> editor
    hello     {schema, pid, rev, vrev, gl}: `gl` says whether GPU nodes can run
    patch     {rev, vrev, document, arrays, folder, path}: the running patch (get_patch)
    resync    {reason}: revisions disagreed; the engine ignores edits until the next `patch`
    report    {frame, rev, applied, fps, frame_ms, mode, build_ms, paused, rate, fixed_fps,
               output_open, output_screen, output_fullscreen, bypassed, ids, nodes, values,
               images}: at
              most ~30 a second. `applied` is [seq, frame]: the last `edits` applied and the
              first frame that shows it; `output_screen` names the output window's screen. `nodes`
              maps id -> [class, status, error] for a slice of the nodes (round robin) and the
              watched ones; `ids`, sent when the patch changed and once per round, lists every
              node the engine plays;
              `values` maps id -> {pin: value} (see `report_value`); `bypassed` maps the nodes
              the watchdog stopped to the reason; `images` lists {node, pin, size, role}
              (role: thumbnail or preview) whose RGBA pixels follow as blobs
    learned   {node, pin, source, device}: the control that `learn` caught (the editor adds the
              binding, an edit like any other: the `binding` op)
    learn_unreachable {node, pin, reason, advice}: no source can reach the armed learn (OSC off,
              no MIDI), said as soon as the sources know; learn stays armed
    service   {name, state, text, advice, address}: a service's status changed
              (evaluators.ServiceStatus: state on, off or waiting; one line; what to do; where it
              listens), sent with a report; an editor that connects gets every service's
    node_failed {node, error}: the first failure of a node (its path) since the editor connected
    live_values {values: [[node, pin, value], ...], seq}: values the engine's live controls (and
              preset recalls) set since the last one, the latest per pin, at most with each
              report; the editor applies them as live edits (`set_value(..., live=True)`),
              except to pins it set in edits after `seq` (the last it had applied): a person's
              edit the engine had not heard of yet is newer
    profile   {frames, costs, gpu_ms, gpu_status, instances, explain}: the answer to `profile`
              (app.profile_costs): `costs` is [[node path, runs, self_ms_per_frame, median_ms,
              reason], ...], the costliest first; `gpu_ms` {node path: GPU ms per frame} for
              listed nodes that drew, `gpu_status` "" when draws are timed, else why not;
              `instances` [[instance path, cumulative self ms per frame], ...] for every
              subpatch instance; `explain` {node, lines} only when a node was asked
    error     {message}: a message that could not be applied (one line)

The engine checks revisions after every `edits` message: its copy of the patch counts structural
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
from collections.abc import Mapping
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

from nodes import Link, Patch, PatchEvent, PresetDeck, Recall, patch_from_dict, patch_to_dict
from nodes._bindings import Binding
from nodes._limits import MAX_POSITION
from nodes._patch import Backdrop

SCHEMA_VERSION = 1
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
    # No copy: values are never changed in place once set, so the array can keep the bytes.
    return np.frombuffer(data, dtype).reshape(shape)


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


def event_op(patch: Patch, event: PatchEvent, blobs: list[bytes]) -> dict[str, Any] | None:
    """One change event of `patch` (just applied) as an op of an `edits` message (array values
    appended to `blobs`), or None for edits the engine made itself (live values: they came from
    the engine's controls)."""
    if event.live:
        return None
    op: dict[str, Any] = {"op": event.op}
    if event.definition is not None:
        op["def"] = event.definition
        patch = patch.definition(event.definition)
    if event.op == "add_definition":
        op["name"] = event.value
        op["body"] = _body_message(patch.definition(event.value), blobs)
    elif event.op == "remove_definition":
        op["name"] = event.value
    elif event.op == "rename_definition":
        op["name"], op["new"] = event.value
    elif event.op == "add_node":
        instance = patch.nodes[event.node_id or ""]
        op["node"] = instance.id
        op["node_type"] = instance.type_id
        op["values"] = {k: encode_value(v, blobs) for k, v in instance.values.items()}
        op["pos"] = list(instance.pos)
    elif event.op == "move":
        op["node"] = event.node_id
        op["pos"] = list(patch.nodes[event.node_id or ""].pos)
    elif event.op == "backdrop":
        op["id"] = event.value
        backdrop = patch.backdrops.get(event.value)
        op["backdrop"] = None if backdrop is None else _backdrop_message(backdrop)
    elif event.op in ("remove_node", "pins"):
        op["node"] = event.node_id
    elif event.op in ("connect", "disconnect"):
        op["link"] = list(event.link or ())
    elif event.op == "set_value":
        op["node"] = event.node_id
        op["pin"] = event.pin
        op["value"] = encode_value(event.value, blobs)
    elif event.op == "settings":
        op["settings"] = {k: encode_value(v, blobs) for k, v in event.value.items()}
    elif event.op == "preset":
        op["name"] = event.value
        values = patch.presets.get(event.value)
        op["values"] = (
            None
            if values is None
            else [
                [node_id, pin, encode_value(value, blobs)]
                for (node_id, pin), value in values.items()
            ]
        )
    elif event.op == "binding":
        binding = patch.bindings.get(event.value)
        op["id"] = event.value
        op["binding"] = binding.to_dict() if binding is not None else None
    else:
        return None
    return op


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
            key = (event.op, event.definition or "", str(event.node_id or event.value))
            index = self._layout.get(key)
            if index is not None:  # the same node or backdrop again: only where it ends counts
                self._ops[index] = op
                return
            self._layout[key] = len(self._ops)
        else:  # an op that layout ops must not move across (a node removed, then made again)
            self._layout.clear()
        self._ops.append(op)
        if event.op == "set_value" and event.definition is None:
            self.value_seq[str(event.node_id), str(event.pin)] = self.sent + 1

    def edited_after(self, node_id: str, pin: str, seq: int) -> bool:
        """Whether this document set the pin in a batch after `seq` (or not sent yet): a live
        value the engine set before it heard of that edit is older than the document's."""
        return self.value_seq.get((node_id, pin), 0) > seq

    def take(self) -> tuple[dict[str, Any], list[bytes]] | None:
        """The `edits` message of what was added, or None if nothing was; starts a new batch."""
        if not self._ops:
            return None
        self.sent += 1
        message = {
            "type": "edits",
            "seq": self.sent,
            "rev": self.patch.revision,
            "vrev": self.patch.value_revision,
            "ops": self._ops,
        }
        blobs, self._ops, self._blobs = self._blobs, [], []
        self._layout.clear()
        return message, blobs

    def clear(self) -> None:
        self._ops, self._blobs = [], []
        self._layout.clear()


def apply_edits(patch: Patch, message: Mapping[str, Any], blobs: list[bytes]) -> bool:
    """Apply an `edits` message to the engine's copy; True when the revisions then agree.

    Raises PatchError for an edit the patch refuses and ProtocolError for a malformed one."""
    ops = message.get("ops")
    if not isinstance(ops, list):
        raise ProtocolError("edits: 'ops' must be a list")
    for op in ops:
        _apply_op(patch, op, blobs)
    return patch.revision == message.get("rev") and patch.value_revision == message.get("vrev")


def _apply_op(patch: Patch, op: Any, blobs: list[bytes]) -> None:
    kind = op.get("op") if isinstance(op, dict) else None
    try:
        if "def" in op:
            patch = patch.definition(str(op["def"]))
        if kind == "add_definition":
            body = _body_from_message(op["body"], blobs, patch)
            patch.add_definition(str(op["name"]), body)
        elif kind == "remove_definition":
            patch.remove_definition(str(op["name"]))
        elif kind == "rename_definition":
            patch.rename_definition(str(op["name"]), str(op["new"]))
        elif kind == "add_node":
            values = {k: decode_value(v, blobs) for k, v in dict(op["values"]).items()}
            pos = _position(op["pos"]) if "pos" in op else None
            patch.add_node(str(op["node_type"]), values, pos, node_id=str(op["node"]))
        elif kind == "move":
            patch.set_position(str(op["node"]), _position(op["pos"]))
        elif kind == "backdrop":
            backdrop_id = str(op["id"])
            found = op["backdrop"]
            patch.set_backdrop(
                backdrop_id, None if found is None else _backdrop_from_message(backdrop_id, found)
            )
        elif kind == "remove_node":
            patch.remove_node(str(op["node"]))
        elif kind == "connect":
            link = _link(op)
            # (An input pin has one link at most: looked up there, not in the list of links,
            # which made a paste of a thousand nodes quadratic.)
            if patch.link_into(link.dst, link.dst_pin) != link:  # else made already, as a
                patch.connect(*link)  # consequence of another edit
        elif kind == "disconnect":
            link = _link(op)
            if patch.link_into(link.dst, link.dst_pin) == link:  # else removed already, as a
                patch.disconnect(*link)  # consequence of another edit
        elif kind == "set_value":
            value = decode_value(op["value"], blobs)
            patch.set_value(str(op["node"]), str(op["pin"]), value)
        elif kind == "settings":
            settings = {k: decode_value(v, blobs) for k, v in dict(op["settings"]).items()}
            patch.update_settings(**settings)
        elif kind == "preset":
            patch.set_preset(str(op["name"]), _preset_values(op["values"], blobs))
        elif kind == "binding":
            found = op["binding"]
            patch.set_binding(str(op["id"]), None if found is None else Binding.from_dict(found))
        elif kind != "pins":  # pins are derived by the engine's own set_value
            raise ProtocolError(f"edits: unknown op {kind!r}")
    except (KeyError, TypeError) as error:
        raise ProtocolError(f"edits {kind}: malformed ({error})") from None


def _preset_values(items: Any, blobs: list[bytes]) -> dict[tuple[str, str], Any] | None:
    """The values of a `preset` op: [[node, pin, value], ...], or None (the preset is removed)."""
    if items is None:
        return None
    if not isinstance(items, list) or not all(
        isinstance(item, list) and len(item) == 3 for item in items
    ):
        raise ProtocolError("edits preset: 'values' must be a list of [node, pin, value]")
    return {(str(node), str(pin)): decode_value(value, blobs) for node, pin, value in items}


def _body_message(body: Patch, blobs: list[bytes]) -> dict[str, Any]:
    """A definition's body as an op carries it (the nodes' values encoded as in edits)."""
    nodes = [
        {
            "id": node.id,
            "type": node.type_id,
            "values": {k: encode_value(v, blobs) for k, v in node.values.items()},
            "pos": list(node.pos),
        }
        for node in body.nodes.values()
    ]
    backdrops = {key: _backdrop_message(backdrop) for key, backdrop in body.backdrops.items()}
    return {"nodes": nodes, "links": [list(link) for link in body.links], "backdrops": backdrops}


def _body_from_message(message: Any, blobs: list[bytes], document: Patch) -> Patch:
    body = Patch()
    body.owner = document  # while it is built: its instances find their definitions
    for node in message["nodes"]:
        values = {k: decode_value(v, blobs) for k, v in dict(node["values"]).items()}
        body.add_node(str(node["type"]), values, _position(node["pos"]), node_id=str(node["id"]))
    for link in message["links"]:
        body.connect(*_link({"op": "add_definition", "link": link}))
    for backdrop_id, backdrop in dict(message.get("backdrops") or {}).items():
        body.set_backdrop(str(backdrop_id), _backdrop_from_message(str(backdrop_id), backdrop))
    body.owner = None
    return body


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

DECK_MESSAGES = ("preset", "morph", "crossfade")


def apply_deck_message(deck: PresetDeck, message: Mapping[str, Any]) -> None:
    """Hand a `preset`, `morph` or `crossfade` message to a preset deck (the engine's, or an
    editor's own when it runs the patch itself); PatchError or ProtocolError when it is bad."""
    kind = message.get("type")
    if kind == "preset":
        fields = {key: message[key] for key in Recall.__dataclass_fields__ if key in message}
        deck.request(str(message.get("name")), Recall(**fields))
    elif kind == "morph":
        weights = message.get("weights")
        if not isinstance(weights, dict):
            raise ProtocolError("morph: 'weights' must be an object")
        deck.morph(weights)
    elif kind == "crossfade":
        deck.crossfade(str(message.get("a")), str(message.get("b")), message.get("position"))
    else:
        raise ProtocolError(f"not a preset deck message: {kind!r}")


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
