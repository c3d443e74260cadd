"""The `.patchbay` file format: versioned, diff-friendly JSON, validated on load.

    {"format": "patchbay", "version": 1, "settings": {...}, "meta": {...},
     "nodes": [{"id": "add1", "type": "math.add", "values": {"a": 1.0}, "pos": [0, 0]}, ...],
     "links": [{"from": ["add1", "out"], "to": ["out1", "in"]}, ...]}

Keys are sorted and nodes keep the patch's order, so saving an unchanged patch gives the same bytes.
Arrays are stored as {"$array": {"dtype", "shape", "data"}} inline, or, above a size threshold,
as {"$array": {"npz": "<sidecar file>", "key": "<name>"}} in a `.npz` next to the JSON, named
after the patch file and a hash of its contents (numpy loads it with allow_pickle=False).
Loading never executes code.

Loading checks the document's shape with a JSON schema, then rebuilds the patch through the
Patch API, so every rule an edit obeys (pin types, single inputs, cycles) also holds for files.
Every problem becomes a `PatchFileError` naming the file and the place: `nodes[3].type: ...`.
Saving is atomic: a temporary file in the same folder, fsync, then rename over the old file.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np

from nodes._errors import PatchError, PatchFileError
from nodes._patch import MAX_RESOLUTION, Patch

FORMAT = "patchbay"
VERSION = 1
SIDECAR_THRESHOLD_BYTES = 64 * 1024

_PIN_REF = {
    "type": "array",
    "prefixItems": [{"type": "string"}, {"type": "string"}],
    "minItems": 2,
    "maxItems": 2,
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
                    "items": {"type": "integer", "minimum": 1, "maximum": MAX_RESOLUTION},
                    "minItems": 2,
                    "maxItems": 2,
                }
            },
        },
        "meta": {"type": "object"},
        "nodes": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "type"],
                "properties": {
                    "id": {"type": "string", "minLength": 1, "pattern": "^[^/]+$"},
                    "type": {"type": "string"},
                    "values": {"type": "object"},
                    "pos": {
                        "type": "array",
                        "items": {"type": "number"},
                        "minItems": 2,
                        "maxItems": 2,
                    },
                },
            },
        },
        "links": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["from", "to"],
                "properties": {"from": _PIN_REF, "to": _PIN_REF},
            },
        },
    },
}
_VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def _place(path: Any) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "document"


# ----------------------------------------------------------------------------- values


def _encode_value(value: Any, sidecar: dict[str, np.ndarray], key: str) -> Any:
    if isinstance(value, np.ndarray):
        if value.nbytes > SIDECAR_THRESHOLD_BYTES:
            sidecar[key] = value
            return {"$array": {"npz": "", "key": key}}  # file name filled in by save_patch
        return {
            "$array": {
                "dtype": str(value.dtype),
                "shape": list(value.shape),
                "data": value.tolist(),
            }
        }
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _decode_value(value: Any, npz: Mapping[str, np.ndarray] | None) -> Any:
    if not (isinstance(value, dict) and set(value) == {"$array"}):
        return value
    spec = value["$array"]
    if not isinstance(spec, dict):
        raise ValueError("$array must be an object")
    if "npz" in spec:
        if npz is None or spec.get("key") not in npz:
            raise ValueError(f"array {spec.get('key')!r} is missing from the sidecar file")
        return npz[spec["key"]]
    try:
        dtype = np.dtype(spec["dtype"])
        if dtype.kind not in "biuf":
            raise ValueError(f"arrays of {dtype} are not supported")
        return np.asarray(spec["data"], dtype=dtype).reshape(spec["shape"])
    except (KeyError, TypeError, OverflowError) as error:
        raise ValueError(f"bad $array ({error})") from None


# ----------------------------------------------------------------------------- dict <-> patch


def patch_to_dict(patch: Patch, sidecar: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
    """The JSON document of a patch. Large arrays go to `sidecar` when one is given."""
    arrays: dict[str, np.ndarray] = {} if sidecar is None else sidecar
    nodes = []
    for instance in patch.nodes.values():
        values = {
            name: _encode_value(value, arrays, f"{instance.id}.{name}")
            for name, value in instance.values.items()
        }
        position = [round(instance.pos[0], 2), round(instance.pos[1], 2)]
        nodes.append(
            {"id": instance.id, "type": instance.type_id, "values": values, "pos": position}
        )
    if sidecar is None and arrays:
        raise ValueError("large arrays need a sidecar file; use save_patch")
    links = [{"from": [ln.src, ln.src_pin], "to": [ln.dst, ln.dst_pin]} for ln in patch.links]
    return {
        "format": FORMAT,
        "version": VERSION,
        "settings": patch.settings,
        "meta": patch.meta,
        "nodes": nodes,
        "links": links,
    }


def patch_from_dict(
    document: Any,
    source: str = "<patch>",
    npz: Mapping[str, np.ndarray] | None = None,
    folder: Path | None = None,
) -> Patch:
    """Build a patch from a JSON document, or raise PatchFileError naming `source` and the place.
    `folder` becomes the patch's `folder` (where relative file names in values resolve)."""

    def fail(place: str, message: str) -> PatchFileError:
        return PatchFileError(f"{source}: {place}: {message}")

    if isinstance(document, dict):
        if document.get("format") != FORMAT:
            raise fail("format", f"not a patchbay file (format is {document.get('format')!r})")
        version = document.get("version")
        if isinstance(version, int) and version > VERSION:
            raise fail(
                "version",
                f"written by a newer patchbay (file version {version}, this one reads {VERSION})",
            )
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(document))
    if error is not None:
        raise fail(_place(error.absolute_path), error.message)

    patch = Patch()
    patch.folder = folder
    patch.settings.update(document.get("settings", {}))
    patch.meta.update(document.get("meta", {}))
    for index, entry in enumerate(document["nodes"]):
        place = f"nodes[{index}]"
        try:
            values = {
                name: _decode_value(value, npz) for name, value in entry.get("values", {}).items()
            }
        except ValueError as problem:
            raise fail(f"{place}.values", str(problem)) from None
        pos = entry.get("pos")
        try:
            patch.add_node(entry["type"], values, tuple(pos) if pos else None, node_id=entry["id"])
        except PatchError as problem:
            field = "type" if "unknown node type" in str(problem) else "values"
            if "already used" in str(problem):
                field = "id"
            raise fail(f"{place}.{field}", str(problem)) from None
    for index, entry in enumerate(document["links"]):
        try:
            patch.connect(*entry["from"], *entry["to"])
        except PatchError as problem:
            raise fail(f"links[{index}]", str(problem)) from None
    patch.revision = 0
    patch.value_revision = 0
    return patch


# ----------------------------------------------------------------------------- files


_SIDECAR_NAME = re.compile(r"^[^/\\]+\.npz$")


def _sidecar_names(document: Any) -> set[str]:
    """The sidecar files a (schema-valid) document refers to."""
    names = set()
    for entry in document.get("nodes", []) if isinstance(document, dict) else []:
        values = entry.get("values") if isinstance(entry, dict) else None
        for value in values.values() if isinstance(values, dict) else []:
            spec = value.get("$array") if isinstance(value, dict) else None
            if isinstance(spec, dict) and isinstance(spec.get("npz"), str):
                names.add(spec["npz"])
    return names


def _load_sidecars(path: Path, document: Any) -> dict[str, np.ndarray] | None:
    arrays: dict[str, np.ndarray] = {}
    names = _sidecar_names(document)
    for name in sorted(names):
        if not _SIDECAR_NAME.match(name):
            raise PatchFileError(f"{path}: bad sidecar file name {name!r}")
        sidecar = path.with_name(name)
        if not sidecar.exists():
            continue  # reported per value, with its place, by patch_from_dict
        try:
            with np.load(sidecar, allow_pickle=False) as archive:
                arrays.update({key: archive[key] for key in archive.files})
        except (OSError, ValueError) as error:
            raise PatchFileError(f"{sidecar}: cannot read arrays: {error}") from None
    return arrays if names else None


def load_patch(path: str | os.PathLike[str], folder: str | os.PathLike[str] | None = None) -> Patch:
    """Read and validate a `.patchbay` file; raises PatchFileError with a one-line reason.

    Relative file names in the patch resolve against `folder`, by default the file's own (the
    patch's `folder`; a copy read from elsewhere, such as a recovery file, passes its original's).
    """
    path = Path(path)
    where = Path(folder if folder is not None else path.parent).absolute()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PatchFileError(f"{path}: cannot read: {error}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise PatchFileError(
            f"{path}: line {error.lineno} column {error.colno}: invalid JSON ({error.msg})"
        ) from None
    except RecursionError:
        raise PatchFileError(f"{path}: invalid JSON (nested too deeply)") from None
    return patch_from_dict(document, str(path), _load_sidecars(path, document), where)


def save_patch(patch: Patch, path: str | os.PathLike[str]) -> Path | None:
    """Write a patch atomically; returns the sidecar file holding its large arrays, if any.

    The sidecar's name carries a hash of its contents, so a new sidecar never replaces the one
    the old file refers to: until the new file is renamed into place, the old file and its
    arrays stay whole. Sidecars the file no longer refers to are removed afterwards.
    """
    path = Path(path)
    arrays: dict[str, np.ndarray] = {}
    document = patch_to_dict(patch, arrays)
    sidecar = path.with_name(f"{path.name}.{_digest(arrays)}.npz") if arrays else None
    for node in document["nodes"]:
        for value in node["values"].values():
            if isinstance(value, dict) and "$array" in value and "npz" in value["$array"]:
                value["$array"]["npz"] = sidecar.name if sidecar else ""
    text = json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    if sidecar is not None and not sidecar.exists():
        _atomic_write(sidecar, lambda handle: np.savez(handle, allow_pickle=False, **arrays))
    _atomic_write(path, lambda handle: handle.write(text.encode("utf-8")))
    own = re.compile(rf"^{re.escape(path.name)}\.([0-9a-f]{{12}}\.)?npz$")
    for stale in path.parent.glob(f"{glob.escape(path.name)}.*npz"):
        if stale != sidecar and own.match(stale.name):
            stale.unlink(missing_ok=True)
    return sidecar


def _digest(arrays: Mapping[str, np.ndarray]) -> str:
    digest = hashlib.sha256()
    for key in sorted(arrays):
        array = np.ascontiguousarray(arrays[key])
        digest.update(f"{key}:{array.dtype.str}:{array.shape};".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()[:12]


def _atomic_write(path: Path, write: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - renamed over `path` once complete
        "wb", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False
    )
    try:
        with handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    try:
        directory = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
