"""One codec for node values and definition bodies: the file format's and the engine channel's.

A value is JSON as it is (tuples as lists, numpy scalars as numbers), except numpy arrays:
`{"$array": {"dtype", "shape", "data"}}` inline, or a reference an `ArraySink` makes instead.
The file format's sink (`SidecarSink`) keeps arrays above `SIDECAR_THRESHOLD_BYTES` for a
sidecar `.npz` next to the file (`{"npz", "key"}`); the engine channel's (`BlobSink`) sends every
array as raw bytes after the message (`{"blob", "dtype", "shape"}`). Decoding checks what
loading a file checks (dtypes that round-trip exactly, shapes within the limits in force) and
asks an `ArraySource` for a referenced array (the sidecar files, or the message's blobs). Only
numeric arrays exist here: nothing decoded is ever executed.

A body (the nodes, links and backdrops of a patch or of a definition) is encoded by `body_to_dict`
for both; the file format decodes it (`nodes.fileformat.format.body_from_dict` for the channel), so
a body an editor sends gets a file's schema checks, limits and placeholders for uninstalled types.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import numpy as np

from nodes.errors import UnsavableValueError, shown
from nodes.limits import Limits, active_limits

SIDECAR_THRESHOLD_BYTES = 64 * 1024
#: Array dtypes a value may hold: they round-trip exactly through JSON lists, `.npz` and bytes.
_NUMBER_KINDS = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float16", "float32", "float64")  # fmt: skip
ARRAY_DTYPES = frozenset(str(np.dtype(name)) for name in _NUMBER_KINDS)
_MAX_DIMENSIONS = 32


class ArraySink(Protocol):
    """Where encoded arrays go: `put` returns the reference that stands for `array` in the JSON
    (the inside of its `$array`), or None to write it inline."""

    def put(self, array: np.ndarray, key: str) -> dict[str, Any] | None: ...


class ArraySource(Protocol):
    """Where a referenced array comes from (ValueError naming the problem when it cannot)."""

    def array(self, reference: dict[str, Any]) -> np.ndarray: ...


class SidecarSink:
    """The file format's: arrays above the threshold go to `arrays` by key, for the `.npz`
    sidecar (its file name is filled in by `save_patch`); smaller ones are inline."""

    def __init__(self, arrays: dict[str, np.ndarray]) -> None:
        self.arrays = arrays

    def put(self, array: np.ndarray, key: str) -> dict[str, Any] | None:
        if array.nbytes <= SIDECAR_THRESHOLD_BYTES:
            return None
        self.arrays[key] = array
        return {"npz": "", "key": key}


class BlobSink:
    """The channel's: every array is a blob sent after the message, in `blobs`."""

    def __init__(self, blobs: list[bytes]) -> None:
        self.blobs = blobs

    def put(self, array: np.ndarray, key: str) -> dict[str, Any] | None:
        self.blobs.append(np.ascontiguousarray(array).tobytes())
        return {"blob": len(self.blobs) - 1, "dtype": str(array.dtype), "shape": list(array.shape)}


class Blobs:
    """The channel's arrays: the blobs that followed a message, checked against the reference
    that describes them (dtype, shape within the limits, byte count)."""

    def __init__(self, blobs: list[bytes], limits: Limits | None = None) -> None:
        self.blobs = blobs
        self.limits = limits or active_limits()

    def array(self, reference: dict[str, Any]) -> np.ndarray:
        index, dtype_name = reference.get("blob"), reference.get("dtype")
        if (
            not isinstance(index, int)
            or isinstance(index, bool)
            or not 0 <= index < len(self.blobs)
        ):
            raise ValueError(f"no blob {shown(index)} came with the message")
        if not isinstance(dtype_name, str) or dtype_name not in ARRAY_DTYPES:
            raise ValueError(f"arrays of {_dtype_shown(dtype_name)} are not supported")
        dtype = np.dtype(dtype_name)
        shape = checked_elements(reference.get("shape"), self.limits)
        data = self.blobs[index]
        if len(data) != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise ValueError(f"blob {index} does not match its {len(data)} bytes")
        # No copy: values are never changed in place once set, so the array can keep the bytes.
        return np.frombuffer(data, dtype).reshape(shape)


def encode_value(value: Any, sink: ArraySink, key: str) -> Any:
    """A node value as JSON (see the module note); UnsavableValueError (one line naming `key`)
    for a value that would not decode as it was."""
    if isinstance(value, np.ndarray):
        check_savable(value, key)
        reference = sink.put(value, key)
        if reference is not None:
            return {"$array": reference}
        return {
            "$array": {
                "dtype": str(value.dtype),
                "shape": list(value.shape),
                "data": value.tolist(),
            }
        }
    if isinstance(value, dict) and is_array_reference(value):
        raise _array_reference_refused(key)
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, np.generic):
        return value.item()
    return value


def decode_value(value: Any, source: ArraySource | None, limits: Limits) -> Any:
    """The value `encode_value` made; ValueError naming what is wrong."""
    if not (isinstance(value, dict) and is_array_reference(value)):
        return value
    spec = value["$array"]
    if not isinstance(spec, dict):
        raise ValueError("$array must be an object")
    if "npz" in spec or "blob" in spec:
        if source is None:
            raise ValueError(f"array {shown(spec.get('key'))} is missing from the sidecar file")
        return source.array(spec)
    dtype_name, data = spec.get("dtype"), spec.get("data")
    if not isinstance(dtype_name, str) or dtype_name not in ARRAY_DTYPES:
        raise ValueError(f"arrays of {_dtype_shown(dtype_name)} are not supported")
    shape = checked_elements(spec.get("shape"), limits)
    if not isinstance(data, list | int | float | bool):
        raise ValueError("$array data must be a list of numbers")
    try:
        return np.asarray(data, dtype=np.dtype(dtype_name)).reshape(shape)
    except (TypeError, ValueError, OverflowError) as error:
        raise ValueError(f"bad $array ({type(error).__name__}: {error})") from None


def is_array_reference(value: dict[Any, Any]) -> bool:
    """A value held as an array: a dict whose one key is "$array"."""
    return len(value) == 1 and "$array" in value


def check_savable(array: np.ndarray, key: str) -> None:
    """UnsavableValueError unless `array` decodes back exactly, within the limits in force."""
    if str(array.dtype) not in ARRAY_DTYPES:
        raise UnsavableValueError(
            f"{key}: arrays of {_dtype_shown(array.dtype.str)} cannot be saved (only booleans, "
            "integers and floats in native byte order)"
        )
    try:
        checked_elements(array.shape, active_limits())
    except ValueError as problem:
        raise UnsavableValueError(f"{key}: {problem}") from None


def _dtype_shown(name: Any) -> str:
    """A dtype named in a file or message, for a message: numpy's name for it when it is one."""
    if isinstance(name, str) and len(name) <= 40:
        try:
            return str(np.dtype(name))
        except (TypeError, ValueError, SyntaxError):
            pass
    return shown(name)


def checked_elements(shape: Any, limits: Limits) -> tuple[int, ...]:
    """`shape` as a tuple of sizes, or ValueError when it is not one or holds more elements
    than `limits.array_elements`."""
    if not isinstance(shape, list | tuple) or len(shape) > _MAX_DIMENSIONS:
        raise ValueError(f"bad array shape {shown(shape)}")
    if not all(isinstance(size, int) and not isinstance(size, bool) and size >= 0
               for size in shape):  # fmt: skip
        raise ValueError(f"bad array shape {shown(shape)}")
    elements = math.prod(shape)
    if elements > limits.array_elements:
        raise ValueError(
            f"array of {elements} elements: {limits.exceeded('array_elements', elements)}"
        )
    return tuple(shape)


class Body(Protocol):
    """What `body_to_dict` reads of a patch or a definition's body (a nodes.Patch)."""

    @property
    def nodes(self) -> Mapping[str, Any]: ...

    @property
    def links(self) -> Iterable[Any]: ...

    @property
    def backdrops(self) -> Mapping[str, Any]: ...


def check_value(value: Any, key: str) -> None:
    """UnsavableValueError (one line naming `key`) for a value that neither a file nor the
    channel to the engine can carry as it is; the document refuses such values when they are
    set, so no edit it accepted can fail to reach the engine or the file."""
    if isinstance(value, np.ndarray):
        check_savable(value, key)
    elif isinstance(value, dict) and is_array_reference(value):
        raise _array_reference_refused(key)


def _array_reference_refused(key: str) -> UnsavableValueError:
    return UnsavableValueError(
        f'{key}: a dict whose only key is "$array" cannot be saved (files keep that key for '
        "arrays: it would load as one)"
    )


def body_to_dict(patch: Body, sink: ArraySink, prefix: str) -> dict[str, Any]:
    """The `nodes`, `links` and `backdrops` of a patch or a definition's body (array keys start
    with `prefix`)."""
    nodes = []
    for instance in patch.nodes.values():
        values = {
            name: encode_value(value, sink, f"{prefix}{instance.id}.{name}")
            for name, value in instance.values.items()
        }
        position = [round(instance.pos[0], 2), round(instance.pos[1], 2)]
        nodes.append(
            {"id": instance.id, "type": instance.type_id, "values": values, "pos": position}
        )
    links = [{"from": [ln.src, ln.src_pin], "to": [ln.dst, ln.dst_pin]} for ln in patch.links]
    body: dict[str, Any] = {"nodes": nodes, "links": links}
    if patch.backdrops:  # absent when there are none: such files stay as they always were
        body["backdrops"] = [
            {"id": b.id, "title": b.title, "color": list(b.color),
             "rect": [round(v, 2) for v in b.rect]}
            for b in patch.backdrops.values()
        ]  # fmt: skip
    return body
