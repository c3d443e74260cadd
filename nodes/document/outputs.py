"""Outputs: where the canvas (the `gpu.output` texture) goes, and how it is mapped on the way.

A patch's `outputs` live in its settings (`settings.outputs`, saved with the patch, sent to an
engine as any settings edit, kept by `patchbay freeze`): a list of at most `MAX_OUTPUTS` outputs,

    {"name": "left", "kind": "window", "screen": 1, "size": [1920, 1080],
     "slice": [x, y, w, h], "corners": [[x, y], [x, y], [x, y], [x, y]],
     "mesh": null | {"cols": C, "rows": R, "points": [[x, y], ...]},
     "blend": {"left": 0, "right": 0.1, "top": 0, "bottom": 0, "gamma": 2.2}}

Coordinates are normalised with the origin at the top left. `slice` is the part of the canvas the
output shows; `corners` are where the slice's top-left, top-right, bottom-right and bottom-left
corners land in the output (a perspective corner pin: the homography those four points define,
applied per pixel on the GPU); `mesh` is a grid warp applied after the corner pin: `points` (row
by row, top row first) are where the points of a regular `cols` x `rows` grid over the pinned
picture land. `blend` are soft-edge widths, fractions of the slice, with a gamma-correct ramp:
a pixel at distance d from an edge of width w is multiplied by clamp(d / w, 0, 1) ** (1 / gamma),
so two overlapping projectors add up to even light. `size` null means the canvas's size.
Only `name` is required; the rest has defaults (the whole canvas, no warp, no blend).

No `outputs` setting means one output showing the whole canvas (what patchbay always did).

`kind` says what carries the output: a registry (`OUTPUT_KINDS`, `register_output_kind`) names
each kind with the extra keys it takes. Only "window" exists now; NDI, Spout and Syphon are meant
to register here, each with its own keys.

The section is data from a stranger: `checked_outputs` is the one rule (files loaded and saved,
edits), linear in the size of what it is given, every problem one `OutputsError` naming the place
(`outputs[1].corners[2]: ...`); sizes are held by the limit `texture_side` each, and by
`MAX_OUTPUT_PIXELS_IN_SIDES` texture_side squared all together. Names become folder names
(`--out DIR` writes `DIR/<name>/`), so they are plain names: letters, digits, `_` and `-`, unique
ignoring case.
Plain Python: the GPU pass is evaluators/services/gl_outputs.py.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from nodes.errors import PatchValueError, shown
from nodes.limits import Limits, active_limits

#: Outputs a patch may have.
MAX_OUTPUTS = 16
#: The pixels of all outputs together (those with a size of their own), in squares of the limit
#: `texture_side`: each output is a texture and a picture read back, so their sum is what costs
#: (twice 8192 x 8192 holds sixteen 4K projectors).
MAX_OUTPUT_PIXELS_IN_SIDES = 2
#: Points on either side of a mesh.
MAX_MESH_SIDE = 64
#: How far corners and mesh points may lie outside the output (a pin can push a corner off it).
COORDINATE_RANGE = (-1.0, 2.0)
GAMMA_RANGE = (0.1, 10.0)
DEFAULT_GAMMA = 2.2
IDENTITY_CORNERS = ((0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0))
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
# Names a folder cannot have on Windows.
_RESERVED = {"con", "prn", "aux", "nul"} | {f"{p}{n}" for p in ("com", "lpt") for n in range(10)}
_KEYS = ("name", "kind", "screen", "size", "slice", "corners", "mesh", "blend")
_BLEND_KEYS = ("left", "right", "top", "bottom", "gamma")

#: Output kinds: kind -> the keys it takes besides the common ones (`_KEYS`).
OUTPUT_KINDS: dict[str, frozenset[str]] = {}


def register_output_kind(kind: str, keys: Iterable[str] = ()) -> None:
    """Accept outputs of `kind`, with `keys` besides the common ones. Kinds are unique."""
    if kind in OUTPUT_KINDS:
        raise ValueError(f"output kind {kind!r} is registered twice")
    OUTPUT_KINDS[kind] = frozenset(keys)


register_output_kind("window")  # on a screen (the player's and the editor's output windows)


class OutputsError(PatchValueError):
    """A bad `outputs` setting: `place` (`outputs[1].corners`) and `reason`."""

    def __init__(self, place: str, reason: str) -> None:
        super().__init__(f"{place}: {reason}")
        self.place = place
        self.reason = reason


@dataclass(frozen=True)
class Mesh:
    """A grid warp: `points[row * cols + col]` is where grid point (col, row) lands."""

    cols: int
    rows: int
    points: tuple[tuple[float, float], ...]

    @staticmethod
    def identity(cols: int, rows: int) -> Mesh:
        """The mesh that changes nothing."""
        return Mesh(cols, rows, tuple(
            (col / (cols - 1), row / (rows - 1)) for row in range(rows) for col in range(cols)
        ))  # fmt: skip


@dataclass(frozen=True)
class Blend:
    """Soft-edge widths (fractions of the slice) and the gamma of the ramp."""

    left: float = 0.0
    right: float = 0.0
    top: float = 0.0
    bottom: float = 0.0
    gamma: float = DEFAULT_GAMMA


@dataclass(frozen=True)
class OutputMapping:
    """One output, checked (see the module note); `size` None: the canvas's size."""

    name: str
    kind: str = "window"
    screen: int | None = None
    size: tuple[int, int] | None = None
    slice: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)
    corners: tuple[tuple[float, float], ...] = IDENTITY_CORNERS
    mesh: Mesh | None = None
    blend: Blend = Blend()
    extra: tuple[tuple[str, Any], ...] = ()  # the keys of its kind, sorted

    def to_dict(self) -> dict[str, Any]:
        """The output as plain data (files, the engine channel); `outputs_from` reads it."""
        return {
            "name": self.name,
            "kind": self.kind,
            "screen": self.screen,
            "size": list(self.size) if self.size is not None else None,
            "slice": list(self.slice),
            "corners": [list(point) for point in self.corners],
            "mesh": None if self.mesh is None else {
                "cols": self.mesh.cols, "rows": self.mesh.rows,
                "points": [list(point) for point in self.mesh.points],
            },
            "blend": {key: getattr(self.blend, key) for key in _BLEND_KEYS},
            **dict(self.extra),
        }  # fmt: skip


def outputs_from(settings: Any) -> tuple[OutputMapping, ...]:
    """The outputs of a patch's settings (checked again: settings are plain data anyone may have
    changed); an empty tuple when it has none (one output of the whole canvas)."""
    if not isinstance(settings, dict) or settings.get("outputs") is None:
        return ()
    return parse_outputs(settings["outputs"])


def checked_outputs(value: Any, limits: Limits | None = None) -> list[dict[str, Any]] | None:
    """`value` as the `outputs` setting holds it (every key written, in a fixed form), or
    OutputsError naming the first problem. None stays None (no section)."""
    if value is None:
        return None
    return [output.to_dict() for output in parse_outputs(value, limits)]


def parse_outputs(value: Any, limits: Limits | None = None) -> tuple[OutputMapping, ...]:
    """The outputs of an `outputs` setting, or OutputsError (see `checked_outputs`)."""
    limits = limits or active_limits()
    if not isinstance(value, list | tuple):
        raise OutputsError("outputs", f"expected a list of outputs, got {shown(value)}")
    if len(value) > MAX_OUTPUTS:
        raise OutputsError("outputs", f"{len(value)} outputs: at most {MAX_OUTPUTS}")
    outputs = []
    names: set[str] = set()
    pixels = 0
    most = MAX_OUTPUT_PIXELS_IN_SIDES * limits.texture_side**2
    for index, entry in enumerate(value):
        output = _output(entry, f"outputs[{index}]", limits)
        if output.name.lower() in names:
            raise OutputsError(f"outputs[{index}].name", f"{output.name!r} is used twice")
        names.add(output.name.lower())
        if output.size is not None:
            pixels += output.size[0] * output.size[1]
            if pixels > most:
                raise OutputsError(f"outputs[{index}].size", f"{pixels} pixels in all outputs: "
                                   f"above {MAX_OUTPUT_PIXELS_IN_SIDES} x texture_side squared "
                                   f"= {most}")  # fmt: skip
        outputs.append(output)
    return tuple(outputs)


def _output(entry: Any, place: str, limits: Limits) -> OutputMapping:
    if not isinstance(entry, dict):
        raise OutputsError(place, f"expected an object, got {shown(entry)}")
    kind = entry.get("kind", "window")
    if not isinstance(kind, str) or kind not in OUTPUT_KINDS:
        known = ", ".join(sorted(OUTPUT_KINDS))
        raise OutputsError(f"{place}.kind", f"{shown(kind)} is not an output kind ({known})")
    allowed = set(_KEYS) | OUTPUT_KINDS[kind]
    for key in entry:
        if key not in allowed:
            raise OutputsError(place, f"unknown key {shown(key)} (keys: {', '.join(_KEYS)})")
    if "name" not in entry:
        raise OutputsError(place, "needs a name")
    name = entry["name"]
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name.lower() in _RESERVED:
        raise OutputsError(
            f"{place}.name", f"{shown(name)} is not a name (1 to 64 letters, digits, _ or -)"
        )
    screen = entry.get("screen")
    if screen is not None and (type(screen) is not int or not 0 <= screen < 64):
        raise OutputsError(
            f"{place}.screen", f"expected a screen number 0..63, got {shown(screen)}"
        )
    size = entry.get("size")
    if size is not None:
        size = _size(size, f"{place}.size", limits)
    slice_ = _slice(entry.get("slice", [0.0, 0.0, 1.0, 1.0]), f"{place}.slice")
    corners = _corners(entry.get("corners", IDENTITY_CORNERS), f"{place}.corners")
    mesh = entry.get("mesh")
    if mesh is not None:
        mesh = _mesh(mesh, f"{place}.mesh")
    blend = _blend(entry.get("blend", {}), f"{place}.blend")
    extra = tuple(sorted((key, entry[key]) for key in OUTPUT_KINDS[kind] if key in entry))
    return OutputMapping(name, kind, screen, size, slice_, corners, mesh, blend, extra)


def _number(value: Any, place: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise OutputsError(place, f"expected a number, got {shown(value)}")
    number = float(value)
    if not math.isfinite(number) or not low <= number <= high:
        raise OutputsError(place, f"{shown(value)} is not from {low:g} to {high:g}")
    return number


def _numbers(value: Any, place: str, count: int, what: str) -> list[Any]:
    if not isinstance(value, list | tuple) or len(value) != count:
        raise OutputsError(place, f"expected {what}, got {shown(value)}")
    return list(value)


def _size(value: Any, place: str, limits: Limits) -> tuple[int, int]:
    width, height = _numbers(value, place, 2, "[width, height]")
    for axis, side in (("[0]", width), ("[1]", height)):
        if type(side) is not int or side < 1:
            raise OutputsError(
                place + axis, f"expected a whole number of pixels, got {shown(side)}"
            )
        if side > limits.texture_side:
            raise OutputsError(place + axis, limits.exceeded("texture_side", side))
    return (width, height)


def _slice(value: Any, place: str) -> tuple[float, float, float, float]:
    items = _numbers(value, place, 4, "[x, y, width, height]")
    x, y, w, h = (_number(v, f"{place}[{i}]", 0.0, 1.0) for i, v in enumerate(items))
    if w <= 0 or h <= 0:
        raise OutputsError(place, "the slice must have a width and a height")
    if x + w > 1.0 + 1e-9 or y + h > 1.0 + 1e-9:
        raise OutputsError(place, "the slice must lie within the canvas (0..1)")
    return (x, y, w, h)


def _point(value: Any, place: str) -> tuple[float, float]:
    x, y = _numbers(value, place, 2, "[x, y]")
    low, high = COORDINATE_RANGE
    return (_number(x, f"{place}[0]", low, high), _number(y, f"{place}[1]", low, high))


def _corners(value: Any, place: str) -> tuple[tuple[float, float], ...]:
    items = _numbers(value, place, 4, "4 corners [[x, y], ...] (top left, top right, "
                     "bottom right, bottom left)")  # fmt: skip
    corners = tuple(_point(point, f"{place}[{i}]") for i, point in enumerate(items))
    # A corner pin is a homography only for a convex quadrilateral (either way round: a mirror
    # for rear projection is fine); anything else folds the picture or has no inverse.
    turns = []
    for i in range(4):
        (ax, ay), (bx, by), (cx, cy) = corners[i], corners[(i + 1) % 4], corners[(i + 2) % 4]
        turns.append((bx - ax) * (cy - by) - (by - ay) * (cx - bx))
    if not (all(t > 1e-9 for t in turns) or all(t < -1e-9 for t in turns)):
        raise OutputsError(place, "the corners must make a convex quadrilateral")
    return corners


def _mesh(value: Any, place: str) -> Mesh:
    if not isinstance(value, dict):
        raise OutputsError(place, f"expected {{cols, rows, points}} or null, got {shown(value)}")
    for key in value:
        if key not in ("cols", "rows", "points"):
            raise OutputsError(place, f"unknown key {shown(key)} (keys: cols, rows, points)")
    sides = []
    for key in ("cols", "rows"):
        side = value.get(key)
        if type(side) is not int or not 2 <= side <= MAX_MESH_SIDE:
            raise OutputsError(f"{place}.{key}", f"expected 2..{MAX_MESH_SIDE}, got {shown(side)}")
        sides.append(side)
    cols, rows = sides
    points = value.get("points")
    if not isinstance(points, list | tuple) or len(points) != cols * rows:
        count = len(points) if isinstance(points, list | tuple) else shown(points)
        raise OutputsError(f"{place}.points", f"expected cols x rows = {cols * rows} points "
                           f"[x, y], got {count}")  # fmt: skip
    return Mesh(cols, rows, tuple(_point(p, f"{place}.points[{i}]") for i, p in enumerate(points)))


def _blend(value: Any, place: str) -> Blend:
    if not isinstance(value, dict):
        raise OutputsError(
            place, f"expected {{left, right, top, bottom, gamma}}, got {shown(value)}"
        )
    for key in value:
        if key not in _BLEND_KEYS:
            raise OutputsError(place, f"unknown key {shown(key)} (keys: {', '.join(_BLEND_KEYS)})")
    widths = {
        key: _number(value.get(key, 0.0), f"{place}.{key}", 0.0, 1.0) for key in _BLEND_KEYS[:4]
    }
    gamma = _number(value.get("gamma", DEFAULT_GAMMA), f"{place}.gamma", *GAMMA_RANGE)
    if widths["left"] + widths["right"] > 1.0 or widths["top"] + widths["bottom"] > 1.0:
        raise OutputsError(place, "opposite edges' widths add up to more than the slice")
    return Blend(gamma=gamma, **widths)
