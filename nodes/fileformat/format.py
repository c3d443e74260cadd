"""The `.patchbay` file format: versioned, diff-friendly JSON, validated on load.

    {"format": "patchbay", "version": 2, "settings": {...}, "meta": {...},
     "nodes": [{"id": "add1", "type": "math.add", "values": {"a": 1.0}, "pos": [0, 0]}, ...],
     "links": [{"from": ["add1", "out"], "to": ["out1", "in"]}, ...],
     "definitions": {"blob": {"nodes": [...], "links": [...]}, ...}}

`backdrops` (in the document and in each definition: id, title, colour, rect) is layout only and
written only when there are some, so files without backdrops are what they were; older readers
ignore it (the schema allows keys it does not know), so it needs no new version. `presets` (the
document only: {name: {"values": [{"node", "pin", "value"}, ...]}}, pins sorted) works the same
way; each preset's pins must exist and its values go through the pin's coercion. `bindings` (the
document only: [{"id", "source", "node", "pin", "range": [low, high], "curve", "takeover",
"device"}, ...] in the patch's order; nodes/document/bindings.py) too: only bindings whose target
exists are written (a node's bindable input, or the `@preset` / `@crossfader` targets), and loading
refuses one whose target does not. `settings.outputs` (nodes/document/outputs.py: slices, corner
pins, meshes and blends of the canvas's outputs) is checked by `checked_outputs`, loaded and saved
alike, and written in its normalised form (every key).

Version 2 added `definitions` (subpatches: nodes/document/definitions.py); a patch without
definitions is still written as version 1, which every patchbay reads, and version 1 files load as
they always did. Definitions are built innermost first (a body holding instances of another comes
after it), so every instance finds its definition's pins; definitions that contain each other are
refused.

Keys are sorted and nodes keep the patch's order, so saving an unchanged patch gives the same bytes.
A node whose type is not installed (a node pack missing) loads as a placeholder
(nodes/packs.py) with `any` pins named by its values and links, and is written back as it was
read; files never carry code for it.
Arrays are stored as {"$array": {"dtype", "shape", "data"}} inline, or, above a size threshold,
as {"$array": {"npz": "<sidecar file>", "key": "<name>"}} in a `.npz` next to the JSON, named
after the patch file and a hash of its contents (nodes/fileformat/codec.py: the one codec of values
and bodies, which the engine channel shares with arrays as blobs; `body_from_dict` builds a body it
carries with a file's checks and placeholders). Loading never executes code.

A file is data from a stranger (see nodes/limits.py and nodes/paths.py): the JSON is read only
from a regular file within `Limits.file_bytes`; integers, strings, node and link counts and array
shapes are checked against the limits in force before anything is built (one walk whose memory is
the document's depth, not its size: the place of a value is put into words only when it fails;
integers are converted by json within the interpreter's own digit limit, then held to
`int_digits` by that walk); text from elsewhere (the clipboard: `patch_from_text`) goes through
the same checks. Sidecars are opened through `nodes.paths` (inside the patch's folder only) and
read member by member, only the members a value refers to, each header (shape, dtype) checked
before its data is read, never with pickles.
Links are checked for cycles once for the whole file (one topological sort), so loading is linear
in the size of the file whatever the order of its links.

Loading checks the document's shape with a JSON schema, then rebuilds the patch through the
Patch API, so every rule an edit obeys (pin types, single inputs, cycles) also holds for files.
Every problem becomes a `PatchFileError` naming the file and the place: `nodes[3].type: ...`,
one line (see nodes/errors.py).
Saving is atomic: a temporary file in the same folder (`.NAME.tmp-PID-RANDOM`), fsync, then
rename over the old file, which keeps its permissions (a new file gets the umask's). Temporary
files of saves that were killed are removed by the next save of that file, and by
`remove_stale_temporary_files(folder)` (the editor calls it on start). Everything is serialised
before anything is written: a value that cannot round-trip exactly (an array of strings, complex
numbers, dates or records, a value that is no JSON, a dict whose only key is the `$array` that
files keep for arrays) is refused with one `UnsavableValueError` line (a PatchValueError and a
ValueError), and so is a patch that loading would refuse under the limits in force (the same
checks: counts, strings, integer digits, resolution, file and sidecar bytes), so a file saved
always loads, and so does a recovery.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import itertools
import json
import math
import os
import re
import secrets
import stat
import struct
import sys
import zipfile
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np

from nodes.document.bindings import (
    CROSSFADER_TARGET,
    CURVES,
    PRESET_TARGET,
    TAKEOVERS,
    Binding,
    checked_source,
)
from nodes.document.outputs import OutputsError, checked_outputs
from nodes.document.patch import Backdrop, Patch, checked_resolution
from nodes.errors import (
    CycleError,
    PatchError,
    PatchFileError,
    PatchValueError,
    UnsavableValueError,
    one_line,
    shown,
)
from nodes.fileformat.codec import (
    ARRAY_DTYPES,
    ArraySource,
    SidecarSink,
    body_to_dict,
    checked_elements,
    decode_value,
    encode_value,
    is_array_reference,
)
from nodes.limits import MAX_POSITION, Limits, active_limits
from nodes.packs import placeholder_spec
from nodes.paths import PathRefusedError, open_patch_file, read_patch_file, resolve_patch_path
from nodes.spec import get_spec
from nodes.tempo import checked_bpm
from nodes.types import coerce_value, is_bindable

FORMAT = "patchbay"
VERSION = 2  # the newest version read and written (1 when a patch has no definitions)

_PIN_REF = {
    "type": "array",
    "prefixItems": [{"type": "string"}, {"type": "string"}],
    "minItems": 2,
    "maxItems": 2,
}
_NODES = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["id", "type"],
        "properties": {
            "id": {"type": "string", "minLength": 1},
            "type": {"type": "string"},
            "values": {"type": "object"},
            "pos": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
        },
    },
}
_BACKDROPS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["id", "title", "color", "rect"],
        "properties": {
            "id": {"type": "string", "minLength": 1},
            "title": {"type": "string"},
            "color": {
                "type": "array",
                "items": {"type": "integer", "minimum": 0, "maximum": 255},
                "minItems": 3,
                "maxItems": 3,
            },
            "rect": {
                "type": "array",
                "items": {"type": "number", "minimum": -MAX_POSITION, "maximum": MAX_POSITION},
                "minItems": 4,
                "maxItems": 4,
            },
        },
    },
}
_PRESETS = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "required": ["values"],
        "properties": {
            "values": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["node", "pin", "value"],
                    "properties": {"node": {"type": "string"}, "pin": {"type": "string"}},
                },
            },
        },
    },
}
_BINDINGS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["id", "source", "node", "pin"],
        "properties": {
            "id": {"type": "string", "minLength": 1},
            "source": {"type": "string"},
            "node": {"type": "string"},
            "pin": {"type": "string"},
            "range": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2},
            "curve": {"enum": list(CURVES)},
            "takeover": {"enum": list(TAKEOVERS)},
            "device": {"type": "string"},
        },
    },
}
_LINKS = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["from", "to"],
        "properties": {"from": _PIN_REF, "to": _PIN_REF},
    },
}
_BODY = {
    "type": "object",
    "required": ["nodes", "links"],
    "properties": {"nodes": _NODES, "links": _LINKS, "backdrops": _BACKDROPS},
}
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["format", "version", "nodes", "links"],
    "properties": {
        "format": {"const": FORMAT},
        "version": {"type": "integer"},
        "settings": {
            "type": "object",
            "properties": {
                "resolution": {
                    "type": "array",
                    "items": {"type": "integer", "minimum": 1},
                    "minItems": 2,
                    "maxItems": 2,
                },
                "osc_port": {"type": "integer", "minimum": 0, "maximum": 65535},
                "bpm": {"type": "number"},
                # checked by nodes/document/outputs.py, whose messages name the place exactly
                "outputs": {"type": ["array", "null"]},
            },
        },
        "meta": {"type": "object"},
        "nodes": _NODES,
        "links": _LINKS,
        "backdrops": _BACKDROPS,
        "presets": _PRESETS,
        "bindings": _BINDINGS,
        "definitions": {
            "type": "object",
            "propertyNames": {"minLength": 1, "pattern": "^[^/]+$"},
            "additionalProperties": _BODY,
        },
    },
}
_VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
_BODY_VALIDATOR = jsonschema.Draft202012Validator(_BODY)


def _place(path: Any) -> str:
    """A place in a document, `nodes[3].values.x`, from its keys and indexes."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            name = part if isinstance(part, str) and part.isidentifier() else shown(part)
            text += f".{name}" if text else name
    return text or "document"


# ----------------------------------------------------------------------------- values


# ----------------------------------------------------------------------------- dict <-> patch


def patch_to_dict(patch: Patch, sidecar: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
    """The JSON document of a patch. Large arrays go to `sidecar` when one is given."""
    arrays: dict[str, np.ndarray] = {} if sidecar is None else sidecar
    sink = SidecarSink(arrays)
    document = {
        "format": FORMAT,
        "version": 2 if patch.definitions else 1,
        "settings": patch.settings,
        "meta": patch.meta,
        **body_to_dict(patch, sink, ""),
    }
    if patch.definitions:
        document["definitions"] = {
            name: body_to_dict(body, sink, f"{name}/") for name, body in patch.definitions.items()
        }
    if patch.presets:  # absent when there are none: such files stay as they always were
        document["presets"] = {
            name: {"values": [
                {"node": node_id, "pin": pin,
                 "value": encode_value(value, sink, f"presets.{name}.{node_id}.{pin}")}
                for (node_id, pin), value in sorted(values.items())
                if _preset_pin_kept(patch, node_id, pin, value)
            ]}
            for name, values in patch.presets.items()
        }  # fmt: skip
    bindings = [
        {"id": binding_id, **binding.to_dict()}
        for binding_id, binding in patch.bindings.items()
        if _binding_target_kept(patch, binding)
    ]
    if bindings:  # absent when there are none, as presets
        document["bindings"] = bindings
    if sidecar is None and arrays:
        raise ValueError("large arrays need a sidecar file; use save_patch")
    return document


def patch_from_dict(
    document: Any,
    source: str = "<patch>",
    npz: Mapping[str, np.ndarray] | None = None,
    folder: Path | None = None,
) -> Patch:
    """Build a patch from a JSON document, or raise PatchFileError naming `source` and the place.
    `folder` becomes the patch's `folder` (where relative file names in values resolve); `npz`
    holds the sidecar arrays by key, for documents read from elsewhere than a file."""
    return _patch_from_document(document, source, _Sidecars.of(npz), folder, active_limits())


def _patch_from_document(
    document: Any, source: str, sidecars: _Sidecars | None, folder: Path | None, limits: Limits
) -> Patch:
    def fail(place: str, message: str) -> PatchFileError:
        return PatchFileError(f"{source}: {place}: {message}")

    if isinstance(document, dict):
        if document.get("format") != FORMAT:
            raise fail("format", f"not a patchbay file (format is {shown(document.get('format'))})")
        version = document.get("version")
        if isinstance(version, int) and version > VERSION:
            raise fail(
                "version",
                f"written by a newer patchbay (file version {version}, this one reads {VERSION})",
            )
    _check_sizes(document, limits, fail)
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(document))
    if error is not None:
        raise fail(_place(error.absolute_path), error.message)
    resolution = document.get("settings", {}).get("resolution")
    if resolution is not None:
        _check_resolution(resolution, limits, fail)
    if "bpm" in document.get("settings", {}):
        _check_bpm(document["settings"]["bpm"], fail)
    outputs = _check_outputs(document.get("settings", {}).get("outputs"), limits, fail)

    patch = Patch()
    patch.folder = folder
    patch.settings.update(document.get("settings", {}))
    if outputs is not None:
        patch.settings["outputs"] = outputs
    patch.meta.update(document.get("meta", {}))
    patch.allow_path_ids = patch.frozen  # inlined instances keep their paths as ids
    definitions = document.get("definitions", {})
    patch.checks_deferred = True
    for name in definitions:
        try:
            patch.add_definition(name, Patch())
        except PatchError as problem:
            raise fail(f"definitions.{one_line(name, 40)}", str(problem)) from None
    for name in _innermost_first(definitions, fail):
        entry = definitions[name]

        def fail_inside(place: str, message: str, name: str = name) -> PatchFileError:
            return fail(f"definitions.{one_line(name, 40)}.{place}", message)

        _fill(patch.definition(name), entry["nodes"], entry["links"], sidecars, limits, fail_inside)
        _add_backdrops(patch.definition(name), entry.get("backdrops", []), fail_inside)
    _fill(patch, document["nodes"], document["links"], sidecars, limits, fail)
    _add_backdrops(patch, document.get("backdrops", []), fail)
    _add_presets(patch, document.get("presets", {}), sidecars, limits, fail)
    _add_bindings(patch, document.get("bindings", []), fail)
    try:
        patch.end_deferred_checks()
    except PatchError as problem:
        inside = isinstance(problem, CycleError) or str(problem).startswith("definition ")
        raise fail("definitions" if inside else "nodes", str(problem)) from None
    for body in patch.definitions.values():
        body.revision = body.value_revision = 0
    patch.revision = 0
    patch.value_revision = 0
    return patch


def body_from_dict(entry: Any, owner: Patch, source: str, arrays: ArraySource | None) -> Patch:
    """A definition's body from its JSON (as `nodes.fileformat.codec.body_to_dict` makes it;
    referenced arrays from `arrays`), checked as a file's definitions are: limits, schema,
    placeholders for node types that are not installed. `owner` is the document whose definitions
    its instances use. PatchFileError naming `source` and the place, one line."""
    limits = active_limits()

    def fail(place: str, message: str) -> PatchFileError:
        return PatchFileError(f"{source}: {place}: {message}")

    _check_sizes(entry, limits, fail)
    error = jsonschema.exceptions.best_match(_BODY_VALIDATOR.iter_errors(entry))
    if error is not None:
        raise fail(_place(error.absolute_path), error.message)
    body = Patch()
    body.owner = owner  # while it is built: its instances find their definitions
    try:
        _fill(body, entry["nodes"], entry["links"], arrays, limits, fail)
        _add_backdrops(body, entry.get("backdrops", []), fail)
    finally:
        body.owner = None
    return body


def _add_backdrops(patch: Patch, entries: list[dict[str, Any]], fail: Any) -> None:
    """Put the (schema-checked) backdrops of a document or body into `patch`."""
    for index, entry in enumerate(entries):
        if entry["id"] in patch.backdrops:
            raise fail(f"backdrops[{index}].id", f"backdrop id {shown(entry['id'])} is used twice")
        x, y, width, height = (float(v) for v in entry["rect"])
        if not all(math.isfinite(v) for v in (x, y, width, height)):
            raise fail(f"backdrops[{index}].rect", "must be finite numbers")
        if width < 0 or height < 0:
            raise fail(f"backdrops[{index}].rect", "width and height must not be negative")
        color = (int(entry["color"][0]), int(entry["color"][1]), int(entry["color"][2]))
        backdrop = Backdrop(entry["id"], entry["title"], color, (x, y, width, height))
        patch.set_backdrop(backdrop.id, backdrop)


def _preset_pin_kept(patch: Patch, node_id: str, pin: str, value: Any) -> bool:
    """False for a preset's pin whose node was removed, or whose pin is gone or no longer takes
    the value: a file keeps only what loads (the preset in the patch keeps it, for an undo)."""
    instance = patch.nodes.get(node_id)
    spec_pin = None if instance is None else instance.input(pin)
    if spec_pin is None:
        return False
    try:
        coerce_value(spec_pin.type, value)
    except ValueError:
        return False
    return True


def _add_presets(
    patch: Patch,
    presets: Mapping[str, Any],
    sidecars: ArraySource | None,
    limits: Limits,
    fail: Any,
) -> None:
    """Put the (schema-checked) presets into `patch`: every pin must exist, every value must be
    one the pin takes (coerced as an edit would)."""
    for name, entry in presets.items():
        values: dict[tuple[str, str], Any] = {}
        for index, item in enumerate(entry["values"]):
            place = ["presets", name, "values", index]
            instance = patch.nodes.get(item["node"])
            if instance is None:
                raise fail(_place([*place, "node"]), f"no node {shown(item['node'])} in the patch")
            pin = instance.input(item["pin"])
            if pin is None:
                raise fail(
                    _place([*place, "pin"]),
                    f"node {shown(instance.id)} ({instance.type_id}) has no input "
                    f"{shown(item['pin'])}",
                )
            if (instance.id, pin.name) in values:
                raise fail(_place(place), f"{instance.id}.{pin.name} is set twice")
            try:
                values[instance.id, pin.name] = coerce_value(
                    pin.type, decode_value(item["value"], sidecars, limits)
                )
            except ValueError as problem:
                raise fail(_place([*place, "value"]), str(problem)) from None
        patch.presets[name] = values


def _binding_target_problem(patch: Patch, binding: Binding) -> tuple[str, str] | None:
    """(field, problem) when the binding's target is not there to drive, else None."""
    if binding.node == PRESET_TARGET:
        return None
    if binding.node == CROSSFADER_TARGET:
        return None if binding.pin == "position" else ("pin", "the crossfader's pin is position")
    instance = patch.nodes.get(binding.node)
    if instance is None:
        return "node", f"no node {shown(binding.node)} in the patch"
    pin = instance.input(binding.pin)
    if pin is None:
        return "pin", f"node {shown(instance.id)} ({instance.type_id}) has no input " + shown(
            binding.pin
        )
    if not is_bindable(pin.type):
        return "pin", f"{instance.id}.{pin.name} is a {pin.type} input: a control cannot drive it"
    return None


def _binding_target_kept(patch: Patch, binding: Binding) -> bool:
    """False for a binding whose target is gone: the patch keeps it (for an undo), files not."""
    return _binding_target_problem(patch, binding) is None


def _add_bindings(patch: Patch, entries: list[dict[str, Any]], fail: Any) -> None:
    """Put the (schema-checked) bindings into `patch`: each a valid binding of a target that
    exists, ids used once."""
    for index, entry in enumerate(entries):
        place = ["bindings", index]
        if entry["id"] in patch.bindings:
            raise fail(_place([*place, "id"]), f"binding id {shown(entry['id'])} is used twice")
        try:
            checked_source(entry["source"])
        except PatchValueError as problem:
            raise fail(_place([*place, "source"]), str(problem)) from None
        if not all(math.isfinite(number) for number in entry.get("range", ())):
            raise fail(_place([*place, "range"]), "must be finite numbers")
        try:
            binding = Binding.from_dict(entry)
        except PatchValueError as problem:
            raise fail(_place(place), str(problem)) from None
        missing = _binding_target_problem(patch, binding)
        if missing is not None:
            raise fail(_place([*place, missing[0]]), missing[1])
        patch.set_binding(entry["id"], binding)


def _innermost_first(definitions: Mapping[str, Any], fail: Any) -> list[str]:
    """Definition names, each after the definitions its body holds instances of; a
    PatchFileError names definitions that contain each other."""
    uses = {
        name: [
            str(node.get("values", {}).get("definition"))
            for node in entry["nodes"]
            if node.get("type") == "subpatch"
            and str(node.get("values", {}).get("definition")) in definitions
        ]
        for name, entry in definitions.items()
    }
    order: list[str] = []
    done: set[str] = set()
    for start in definitions:
        if start in done:
            continue
        # Each entry: a definition and an iterator over the ones it uses (each looked at once).
        path = [(start, iter(uses[start]))]
        on_path = {start}
        while path:
            name, inners = path[-1]
            missing = next((inner for inner in inners if inner not in done), None)
            if missing is None:
                done.add(name)
                order.append(name)
                path.pop()
                on_path.discard(name)
            elif missing in on_path:
                names = [entry[0] for entry in path]
                cycle = [*names[names.index(missing) :], missing]
                raise fail(
                    f"definitions.{missing}",
                    "a definition cannot contain itself: " + " -> ".join(cycle),
                )
            else:
                path.append((missing, iter(uses[missing])))
                on_path.add(missing)
    return order


def _fill(
    patch: Patch,
    nodes: list[Any],
    links: list[Any],
    sidecars: ArraySource | None,
    limits: Limits,
    fail: Any,
) -> None:
    """Add the nodes and links of a document (or of one definition) to `patch`. A node whose
    type is not installed becomes a placeholder (nodes/packs.py) with the pins its values and
    links name, so it keeps them and is saved back unchanged."""
    pins_out: dict[Any, list[Any]] = {}
    pins_in: dict[Any, list[Any]] = {}
    for entry in links:
        with contextlib.suppress(TypeError, ValueError, KeyError):
            (src, src_pin), (dst, dst_pin) = entry["from"], entry["to"]
            pins_out.setdefault(src, []).append(src_pin)
            pins_in.setdefault(dst, []).append(dst_pin)
    for index, entry in enumerate(nodes):
        place = f"nodes[{index}]"
        try:
            values = {
                name: decode_value(value, sidecars, limits)
                for name, value in entry.get("values", {}).items()
            }
        except ValueError as problem:
            raise fail(f"{place}.values", str(problem)) from None
        pos = entry.get("pos")
        unplaceable = _position_problem(pos) if pos else None
        if unplaceable is not None:
            raise fail(f"{place}.pos", f"node {shown(entry['id'])}: {unplaceable}")
        spec = None
        if get_spec(entry["type"]) is None:
            pins = [*values, *pins_in.get(entry["id"], ())]
            spec = placeholder_spec(entry["type"], pins, pins_out.get(entry["id"], ()))
        try:
            patch.add_node(
                entry["type"], values, tuple(pos) if pos else None, node_id=entry["id"], spec=spec
            )
        except PatchError as problem:
            field = "type" if "unknown node type" in str(problem) else "values"
            if "already used" in str(problem) or "bad node id" in str(problem):
                field = "id"
            raise fail(f"{place}.{field}", str(problem)) from None
    made = {}
    for index, entry in enumerate(links):
        try:
            (src, src_pin), (dst, dst_pin) = entry["from"], entry["to"]
            made[patch.connect(src, src_pin, dst, dst_pin, check_cycles=False)] = index
        except PatchError as problem:
            raise fail(f"links[{index}]", str(problem)) from None
    cycle = patch.eager_cycle()
    if cycle is not None:
        # Named as loading link by link would: the cycle's last link in file order closes it.
        steps = [
            max(made[link] for link in patch.links_out_of(a) if link.dst == b and link in made)
            for a, b in itertools.pairwise(cycle)
        ]
        last = max(range(len(steps)), key=steps.__getitem__)
        ring = cycle[:-1]
        ordered = ring[last + 1 :] + ring[: last + 1]
        raise fail(
            f"links[{steps[last]}]",
            "the links close the cycle "
            + " -> ".join(one_line(node_id, 40) for node_id in [*ordered, ordered[0]])
            + " (only a feedback input such as util.frame_delay may close a loop)",
        )


def _check_resolution(resolution: Any, limits: Limits, fail: Any) -> list[int]:
    """The patch's resolution as `Patch.update_settings` takes it (one rule for both)."""
    try:
        return checked_resolution(resolution, limits)
    except PatchValueError as problem:
        raise fail("settings.resolution", str(problem).removeprefix("resolution: ")) from None


def _check_bpm(bpm: Any, fail: Any) -> float:
    """The patch's tempo as `Patch.update_settings` takes it (one rule for both)."""
    try:
        return checked_bpm(bpm)
    except PatchValueError as problem:
        raise fail("settings.bpm", str(problem).removeprefix("bpm: ")) from None


def _check_outputs(outputs: Any, limits: Limits, fail: Any) -> list[dict[str, Any]] | None:
    """The patch's outputs as `Patch.update_settings` takes them (one rule for both)."""
    try:
        return checked_outputs(outputs, limits)
    except OutputsError as problem:
        raise fail(f"settings.{problem.place}", problem.reason) from None


def _check_sizes(document: Any, limits: Limits, fail: Any) -> None:
    """Node and link counts, string lengths and integer digits against the limits, before the
    schema check (whose messages would quote the long values) and before anything is built.

    One walk with a stack of iterators, one per open container: memory is the depth of the
    document, time is linear in its size, and the place of a value is put into words only when
    it fails (from the keys and indexes of the open containers). Lists and tuples are walked
    alike, so a document about to be saved is checked as the file it becomes."""
    if not isinstance(document, dict):
        return
    bodies = [document]
    definitions = document.get("definitions")
    if isinstance(definitions, dict):
        bodies += [body for body in definitions.values() if isinstance(body, dict)]
    for key in ("nodes", "links"):
        counts = [len(body[key]) for body in bodies if isinstance(body.get(key), list | tuple)]
        if sum(counts) > getattr(limits, key):
            place = key if len(counts) == 1 else f"{key} (with the definitions')"
            raise fail(place, limits.exceeded(key, sum(counts)))
    chars = limits.string_chars
    # An integer of more digits than the limit is at least this large (no digit count per int).
    high = 10**limits.int_digits if limits.int_digits <= 100_000 else math.inf
    low = -high
    path: list[Any] = []  # the key or index of every open container but the innermost
    stack: list[Any] = [_items(document, path, limits, fail)]
    while stack:
        for key, value in stack[-1]:
            kind = type(value)
            if kind is int:
                if not low < value < high:
                    raise fail(_place([*path, key]), _scalar_problem(value, limits))
            elif kind is float:
                continue
            elif kind is str:
                if len(value) > chars:
                    raise fail(_place([*path, key]), _scalar_problem(value, limits))
            elif isinstance(value, dict | list | tuple):
                path.append(key)
                stack.append(_items(value, path, limits, fail))
                break
            elif isinstance(value, str | int) and not isinstance(value, bool):
                problem = _scalar_problem(value, limits)
                if problem is not None:
                    raise fail(_place([*path, key]), problem)
        else:
            stack.pop()
            if path:
                path.pop()


def _scalar_problem(value: str | int, limits: Limits) -> str | None:
    """Why a text or an integer is beyond the limits, or None."""
    if isinstance(value, str):
        if len(value) <= limits.string_chars:
            return None
        return f"text of {len(value)} characters: " + limits.exceeded("string_chars", len(value))
    digits = _digits(value)
    return _int_digits_problem(digits, limits) if digits > limits.int_digits else None


def _items(container: Any, path: list[Any], limits: Limits, fail: Any) -> Any:
    """(key, value) pairs of a dict, whose keys are checked first, or (index, item) of a list."""
    if not isinstance(container, dict):
        return enumerate(container)
    for key in container:
        if isinstance(key, str) and len(key) > limits.string_chars:
            raise fail(_place(path), f"a key of {limits.exceeded('string_chars', len(key))}")
    return iter(container.items())


def _digits(value: int) -> int:
    """The decimal digits of an integer, also of one too long for `str` (then a close bound)."""
    try:
        return len(str(abs(value)))
    except ValueError:
        return int(abs(value).bit_length() * math.log10(2)) + 1


def _int_digits_problem(digits: int, limits: Limits) -> str:
    return f"an integer of {digits} digits: " + limits.exceeded("int_digits", digits)


# ----------------------------------------------------------------------------- files


_SIDECAR_NAME = re.compile(r"^[^/\\]+\.npz$")
_EOCD = b"PK\x05\x06"
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_EOCD = b"PK\x06\x06"
_MAX_MEMBERS = 100_000  # a central directory bigger than this is no sidecar patchbay wrote


def _zip_member_count(handle: Any) -> int:
    """The member count a zip file declares in its end record (zip64 too), read before
    `zipfile` builds an object per member; ValueError when there is no end record."""
    size = handle.seek(0, os.SEEK_END)
    tail_start = max(0, size - 65536 - 22)
    handle.seek(tail_start)
    tail = handle.read()
    at = tail.rfind(_EOCD)
    if at < 0 or len(tail) - at < 22:
        raise ValueError("not a zip file")
    count = struct.unpack_from("<H", tail, at + 10)[0]
    if count == 0xFFFF and at >= 20 and tail[at - 20 : at - 16] == _ZIP64_LOCATOR:
        offset = struct.unpack_from("<Q", tail, at - 20 + 8)[0]
        handle.seek(offset)
        record = handle.read(56)
        if len(record) < 56 or record[:4] != _ZIP64_EOCD:
            raise ValueError("bad zip64 end record")
        count = struct.unpack_from("<Q", record, 32)[0]
    handle.seek(0)
    return int(count)


class _Sidecars:
    """The arrays values refer to, read on demand from the sidecar files next to a patch file
    (or given as a mapping), member by member, within the limits; see the module note."""

    def __init__(self, folder: Path | None, limits: Limits, given: Mapping[str, np.ndarray] | None
                 = None) -> None:  # fmt: skip
        self.folder = folder
        self.limits = limits
        self.given = given
        self.archives: dict[str, zipfile.ZipFile] = {}
        self.handles: list[Any] = []  # zipfile leaves files it was given open
        self.total_bytes = 0

    @classmethod
    def of(cls, given: Mapping[str, np.ndarray] | None) -> _Sidecars | None:
        return None if given is None else cls(None, active_limits(), given)

    def array(self, reference: dict[str, Any]) -> np.ndarray:
        """The array a value's `{"npz", "key"}` reference names
        (nodes.fileformat.codec.ArraySource)."""
        name, key = reference.get("npz"), reference.get("key")
        if not isinstance(name, str) or not isinstance(key, str):
            raise ValueError("$array npz and key must be text")
        if self.given is not None:
            if key not in self.given:
                raise ValueError(f"array {shown(key)} is missing from the sidecar file")
            return self.given[key]
        archive = self._archive(name)
        try:
            info = archive.getinfo(key + ".npy")
        except KeyError:
            raise ValueError(f"array {shown(key)} is missing from {shown(name)}") from None
        try:
            return self._read_member(archive, info)
        except ValueError as problem:
            raise PatchFileError(f"{self._where(name)}: array {shown(key)}: {problem}") from None
        except (zipfile.BadZipFile, OSError, EOFError, zlib.error, RuntimeError,
                NotImplementedError) as problem:  # fmt: skip
            raise PatchFileError(
                f"{self._where(name)}: array {shown(key)} cannot be read: {problem}"
            ) from None

    def _where(self, name: str) -> str:
        return str(self.folder / name) if self.folder is not None else name

    def _archive(self, name: str) -> zipfile.ZipFile:
        archive = self.archives.get(name)
        if archive is not None:
            return archive
        if not _SIDECAR_NAME.match(name):
            raise PatchFileError(f"{self._where('')}: bad sidecar file name {shown(name)}")
        try:
            path = resolve_patch_path(self.folder, name, "sidecar")
            handle = open_patch_file(path, "sidecar")
            self.handles.append(handle)
        except FileNotFoundError:
            raise ValueError(f"sidecar file {shown(name)} not found") from None
        except PathRefusedError as problem:
            raise PatchFileError(str(problem)) from None
        try:
            members = _zip_member_count(handle)
            if members > _MAX_MEMBERS:
                raise ValueError(f"{members} members (at most {_MAX_MEMBERS})")
            archive = zipfile.ZipFile(handle)
        except (zipfile.BadZipFile, ValueError, OSError, EOFError, struct.error) as problem:
            raise PatchFileError(
                f"{self._where(name)}: not an array file (.npz): {problem}"
            ) from None
        self.archives[name] = archive
        return archive

    def _read_member(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
        with archive.open(info) as opened:
            member: Any = opened  # a ZipExtFile (readinto, tell), typed as IO[bytes]
            version = np.lib.format.read_magic(member)
            if version == (1, 0):
                header = np.lib.format.read_array_header_1_0(member)
            elif version == (2, 0):
                header = np.lib.format.read_array_header_2_0(member)
            else:
                raise ValueError(f"unsupported .npy version {version}")
            shape, fortran, dtype = header
            if str(dtype) not in ARRAY_DTYPES:
                raise ValueError(f"arrays of {shown(str(dtype))} are not supported")
            shape = checked_elements(shape, self.limits)
            size = math.prod(shape) * dtype.itemsize
            if self.total_bytes + size > self.limits.sidecar_bytes:
                total = self.total_bytes + size
                raise ValueError(f"arrays of {total} bytes: "
                                 + self.limits.exceeded("sidecar_bytes", total))  # fmt: skip
            if info.file_size - member.tell() != size:
                raise ValueError("the member's size does not match its header")
            self.total_bytes += size
            data = bytearray(size)
            view = memoryview(data)
            filled = 0
            while filled < size:
                got = member.readinto(view[filled:])
                if not got:
                    raise ValueError("truncated array data")
                filled += got
            if member.read(1):  # reading to the end checks the CRC
                raise ValueError("the member's size does not match its header")
        array = np.frombuffer(data, dtype=dtype)
        return array.reshape(shape, order="F" if fortran else "C")

    def close(self) -> None:
        for archive in self.archives.values():
            archive.close()
        for handle in self.handles:
            handle.close()
        self.archives.clear()
        self.handles.clear()


#: Digits up to which `int()` of a text is quick enough to leave to json (it is quadratic).
_QUICK_INT_DIGITS = 10_000


def _int_parser(limits: Limits) -> Any:
    """How json reads integers: its own way, in C, when the interpreter bounds the digits `int()`
    takes (`sys.get_int_max_str_digits()`, 4300 by default; beyond, json raises ValueError), and
    `_check_sizes` holds them to `int_digits`; else (that bound lifted) a parser that counts
    digits before converting (a call per integer: several times slower)."""
    if 0 < sys.get_int_max_str_digits() <= _QUICK_INT_DIGITS:
        return None
    return _bounded_int(limits)


def _bounded_int(limits: Limits) -> Any:
    def parse_int(text: str) -> int:
        digits = len(text) - text.startswith("-")
        if digits > limits.int_digits:
            raise _TooLong(_int_digits_problem(digits, limits))
        return int(text)

    return parse_int


def _position_problem(pos: list[float]) -> str | None:
    """Why a node's position cannot be shown on the canvas (not finite, or beyond
    MAX_POSITION), or None."""
    for axis, value in zip("xy", pos, strict=True):
        number = float(value)  # an integer within int_digits: at most 1e100, finite
        if not math.isfinite(number):
            return f"position {axis} = {number} is not a finite number"
        if abs(number) > MAX_POSITION:
            return f"position {axis} = {number:g} is beyond ±{MAX_POSITION:g} (MAX_POSITION)"
    return None


def _bounded_float(text: str) -> float:
    if len(text) > 400:
        raise _TooLong(f"a number written with {len(text)} characters (at most 400)")
    return float(text)


class _TooLong(ValueError):
    """A number in a JSON text beyond the limits."""


def load_patch(path: str | os.PathLike[str], folder: str | os.PathLike[str] | None = None) -> Patch:
    """Read and validate a `.patchbay` file; raises PatchFileError with a one-line reason.

    Relative file names in the patch resolve against `folder`, by default the file's own (the
    patch's `folder`; a copy read from elsewhere, such as a recovery file, passes its original's).
    The limits in force (`nodes.limits.active_limits()`) apply.
    """
    path = Path(path)
    where = Path(folder if folder is not None else path.parent).absolute()
    limits = active_limits()
    try:
        text = read_patch_file(path, "patch").decode("utf-8")
    except FileNotFoundError:
        raise PatchFileError(f"{path}: cannot read: no such file") from None
    except PathRefusedError as error:
        raise PatchFileError(f"{path}: cannot read: {error}") from None
    except OSError as error:
        raise PatchFileError(f"{path}: cannot read: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise PatchFileError(f"{path}: cannot read: not UTF-8 text ({error.reason} at byte "
                             f"{error.start})") from None  # fmt: skip
    sidecars = _Sidecars(path.parent.absolute(), limits)
    try:
        return _patch_from_text(text, str(path), sidecars, where, limits)
    finally:
        sidecars.close()


def patch_from_text(text: str, source: str = "<patch>", folder: Path | None = None) -> Patch:
    """Build a patch from the text of a patch file that comes from elsewhere than a file (the
    clipboard), with every check `load_patch` makes (the text's size within `file_bytes`);
    PatchFileError naming `source` otherwise. Arrays must be inline: there is no sidecar."""
    limits = active_limits()
    size = len(text) if len(text) * 4 <= limits.file_bytes else len(text.encode("utf-8", "replace"))
    if size > limits.file_bytes:
        raise PatchFileError(f"{source}: {size} bytes: " + limits.exceeded("file_bytes", size))
    return _patch_from_text(text, source, _Sidecars(None, limits, {}), folder, limits)


def _patch_from_text(
    text: str, source: str, sidecars: _Sidecars | None, folder: Path | None, limits: Limits
) -> Patch:
    try:
        document = json.loads(text, parse_int=_int_parser(limits), parse_float=_bounded_float)
    except json.JSONDecodeError as error:
        raise PatchFileError(
            f"{source}: line {error.lineno} column {error.colno}: invalid JSON ({error.msg})"
        ) from None
    except _TooLong as error:
        raise PatchFileError(f"{source}: invalid JSON ({error})") from None
    except RecursionError:
        raise PatchFileError(f"{source}: invalid JSON (nested too deeply)") from None
    except ValueError as error:  # an integer beyond the interpreter's digit limit
        digits = re.search(r"has ([0-9]+) digits", str(error))
        count = int(digits[1]) if digits else sys.get_int_max_str_digits() + 1
        raise PatchFileError(
            f"{source}: invalid JSON ({_int_digits_problem(count, limits)})"
        ) from None
    try:
        return _patch_from_document(document, source, sidecars, folder, limits)
    except RecursionError:
        raise PatchFileError(f"{source}: nested too deeply") from None
    except MemoryError:
        raise PatchFileError(f"{source}: out of memory while loading") from None


def save_patch(patch: Patch, path: str | os.PathLike[str]) -> Path | None:
    """Write a patch atomically; returns the sidecar file holding its large arrays, if any.

    The sidecar's name carries a hash of its contents, so a new sidecar never replaces the one
    the old file refers to: until the new file is renamed into place, the old file and its
    arrays stay whole. Sidecars the file no longer refers to are removed afterwards, and so are
    temporary files that saves of this file left behind when they were killed.
    A value that cannot be saved exactly raises UnsavableValueError before anything is written.
    """
    path = Path(path)
    limits = active_limits()
    arrays: dict[str, np.ndarray] = {}
    document = patch_to_dict(patch, arrays)
    sidecar = path.with_name(f"{path.name}.{_digest(arrays)}.npz") if arrays else None
    every_node = [*document["nodes"]]
    for body in document.get("definitions", {}).values():
        every_node += body["nodes"]
    for node in every_node:
        for value in node["values"].values():
            # Only arrays are such dicts here: patch_to_dict refuses any other.
            if isinstance(value, dict) and is_array_reference(value) and "npz" in value["$array"]:
                value["$array"]["npz"] = sidecar.name if sidecar else ""
    _check_loadable(document, arrays, limits)
    data = _serialised(document)
    if len(data) > limits.file_bytes:
        raise _refused_at_save(document, "file", f"{len(data)} bytes: "
                               + limits.exceeded("file_bytes", len(data)))  # fmt: skip
    remove_stale_temporary_files(path.parent, path.name)
    mode = _mode_of(path)
    if sidecar is not None and not sidecar.exists():
        _atomic_write(sidecar, lambda handle: np.savez(handle, allow_pickle=False, **arrays), mode)
    _atomic_write(path, lambda handle: handle.write(data), mode)
    own = re.compile(rf"^{re.escape(path.name)}\.([0-9a-f]{{12}}\.)?npz$")
    for stale in path.parent.glob(f"{glob.escape(path.name)}.*npz"):
        if stale != sidecar and own.match(stale.name):
            stale.unlink(missing_ok=True)
    return sidecar


def _check_loadable(document: dict[str, Any], arrays: Mapping[str, np.ndarray],
                    limits: Limits) -> None:  # fmt: skip
    """UnsavableValueError unless `load_patch` would take the document under `limits`: the
    checks loading makes before it builds anything (the same functions), except the schema,
    which a document made from a Patch meets by construction. Arrays were checked one by one
    (`nodes.fileformat.codec.check_savable`); here their total, and the resolution, which is
    normalised in place."""

    def refuse(place: str, message: str) -> UnsavableValueError:
        return _refused_at_save(document, place, message)

    _check_sizes(document, limits, refuse)
    bodies = [("", document["nodes"])] + [
        (f"definitions.{one_line(name, 40)}.", body["nodes"])
        for name, body in document.get("definitions", {}).items()
    ]
    for prefix, nodes in bodies:
        for index, node in enumerate(nodes):
            problem = _position_problem(node["pos"])
            if problem is not None:
                raise refuse(f"{prefix}nodes[{index}].pos", problem)
    settings = document["settings"]
    if isinstance(settings, dict) and settings.get("resolution") is not None:
        resolution = _check_resolution(settings["resolution"], limits, refuse)
        document["settings"] = {**settings, "resolution": resolution}
    if isinstance(settings, dict) and "bpm" in settings:
        document["settings"] = {**document["settings"], "bpm": _check_bpm(settings["bpm"], refuse)}
    if isinstance(settings, dict) and settings.get("outputs") is not None:
        outputs = _check_outputs(settings["outputs"], limits, refuse)
        document["settings"] = {**document["settings"], "outputs": outputs}
    total = sum(array.nbytes for array in arrays.values())
    if total > limits.sidecar_bytes:
        raise refuse("arrays", f"arrays of {total} bytes: "
                     + limits.exceeded("sidecar_bytes", total))  # fmt: skip


def _refused_at_save(document: dict[str, Any], place: str, message: str) -> UnsavableValueError:
    """The one line refusing a save; a node's value is named `id.pin` as elsewhere."""
    match = re.match(r"nodes\[([0-9]+)\](?:\.values\.)?", place)
    if match is not None and int(match[1]) < len(document["nodes"]):
        node_id = str(document["nodes"][int(match[1])]["id"])
        place = node_id + ("." if place[match.end() - 1] == "." else "") + place[match.end() :]
    return UnsavableValueError(f"{place}: {message} (a file with it would not load)")


def _serialised(document: dict[str, Any]) -> bytes:
    """The file's bytes, or UnsavableValueError naming the first value that is not plain JSON."""
    try:
        return (json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False,
                           allow_nan=True) + "\n").encode("utf-8")  # fmt: skip
    except (TypeError, ValueError, UnicodeEncodeError, RecursionError):
        pass
    for node in document["nodes"]:
        for name, value in node["values"].items():
            try:
                json.dumps(value, ensure_ascii=False).encode("utf-8")
            except (TypeError, ValueError, UnicodeEncodeError, RecursionError) as problem:
                raise UnsavableValueError(
                    f"{node['id']}.{name}: cannot be saved ({type(problem).__name__}: {problem})"
                ) from None
    raise UnsavableValueError("the patch's settings or meta cannot be saved as JSON")


def _mode_of(path: Path) -> int | None:
    """The permission bits of an existing file, which a save keeps; None for a new file."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None


#: `.NAME.tmp-PID-RANDOM`: a save of NAME in progress (or killed) in process PID.
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.tmp-(?P<pid>[0-9]+)-[0-9a-f]{16}$")
_writing: set[Path] = set()  # temporary files this process is writing now


def _process_running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists, but belongs to someone else
        return True
    return True


def remove_stale_temporary_files(folder: str | os.PathLike[str], name: str | None = None) -> int:
    """Remove the temporary files that saves into `folder` left behind when they were killed
    (of the file `name` and its sidecars only, when given): those of processes that no longer
    run, and this process's own that it is not writing now. Returns how many were removed."""
    removed = 0
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return 0
    for entry in entries:
        match = _TEMPORARY.match(entry.name)
        if match is None or (name is not None and not match["name"].startswith(name)):
            continue
        path = Path(entry.path)
        pid = int(match["pid"])
        if path in _writing or (pid != os.getpid() and _process_running(pid)):
            continue
        with contextlib.suppress(OSError):
            path.unlink()
            removed += 1
    return removed


def _digest(arrays: Mapping[str, np.ndarray]) -> str:
    digest = hashlib.sha256()
    for key in sorted(arrays):
        array = np.ascontiguousarray(arrays[key])
        digest.update(f"{key}:{array.dtype.str}:{array.shape};".encode())
        # The array's own buffer, not a `tobytes()` copy: hashing it lets other threads run
        # (an autosave on a worker must not stall the GUI thread for the length of a memcpy).
        digest.update(array.data)
    return digest.hexdigest()[:12]


_CREATE_FLAGS = (
    os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
)


def _atomic_write(path: Path, write: Any, mode: int | None) -> None:
    """Write through a temporary file renamed over `path`; `mode` (the old file's permission
    bits) or, for a new file, 0o666 less the umask (applied by `os.open`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}-{secrets.token_hex(8)}")
    _writing.add(temporary)
    try:
        descriptor = os.open(temporary, _CREATE_FLAGS, 0o666)
        with open(descriptor, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    finally:
        _writing.discard(temporary)
    try:
        directory = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
