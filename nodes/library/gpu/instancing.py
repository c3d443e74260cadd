"""2D instancing: many shapes or sprites drawn from arrays in one GPU draw call, and a grid of
points to place them on.

`gpu.instances` takes one row per shape (positions Nx2, and optionally sizes N and colours Nx3 or
Nx4; a missing array uses the single `size` or `color` for every shape) and hands them to the GL
service's `draw_instances`, which uploads them as per-instance attributes and draws all N with one
instanced call (this module never imports moderngl). N is at most `Limits.instances`; arrays that
do not fit together fail the node with one line naming them, as does a non-numeric array. The node
is a pure function of its inputs (DETERMINISTIC): with constant arrays it draws once and is cached.

Coordinates are those of the other GPU nodes: 0..1 across and up the frame, origin bottom-left;
a size is a radius (half a square's side) as a fraction of the frame height, so circles stay round
at any aspect ratio.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodes.errors import shown
from nodes.library.core.basics import check_elements
from nodes.library.gpu.sources import GPUTargets, _gpu, _size
from nodes.limits import active_limits
from nodes.spec import Array, Color, NodeContext, Texture, Vec2, node

#: The shapes gpu.instances draws (the GL service's INSTANCE_SHAPES).
SHAPES = ("circle", "square")


def _numbers(name: str, value: Any) -> np.ndarray:
    """`value` as a float32 array, or ValueError naming the pin."""
    try:
        array = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected an array of numbers") from None
    return array


def instance_arrays(
    positions: Any, sizes: Any, colors: Any, size: float, color: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Validated (positions Nx2, sizes N, colours Nx4) float32 arrays for `draw_instances`:
    empty sizes or colours repeat `size` or `color`; Nx3 colours get alpha 1. ValueError, one
    line, for a wrong shape, lengths that differ, or more than `Limits.instances` shapes."""
    points = _numbers("positions", positions)
    if points.size == 0:
        points = points.reshape(0, 2)
    if points.ndim != 2 or points.shape[1] != 2:
        raise ValueError(f"positions: expected an Nx2 array of x, y, got shape {points.shape}")
    count = len(points)
    limit = active_limits().instances
    if count > limit:
        raise ValueError(f"{count} shapes is above the limit instances = {limit}")
    radii = _numbers("sizes", sizes).reshape(-1) if np.size(sizes) else None
    if radii is None:
        radii = np.full(count, size, np.float32)
    elif len(radii) != count:
        raise ValueError(f"sizes has {len(radii)} values but positions has {count} points")
    rgba = _numbers("colors", colors)
    if rgba.size == 0:
        fill = np.asarray((*tuple(color)[:4], 1.0, 1.0, 1.0, 1.0)[:4], np.float32)
        rgba = np.broadcast_to(fill, (count, 4))
    else:
        if rgba.ndim != 2 or rgba.shape[1] not in (3, 4):
            raise ValueError(f"colors: expected an Nx3 or Nx4 array, got shape {rgba.shape}")
        if len(rgba) != count:
            raise ValueError(f"colors has {len(rgba)} rows but positions has {count} points")
        if rgba.shape[1] == 3:
            rgba = np.concatenate([rgba, np.ones((count, 1), np.float32)], axis=1)
    return points, radii, rgba


@node(
    "gpu.instances",
    init_state=GPUTargets,
    hints={"color": "color", "background": "color"},
    ranges={"size": (0.0, None)},
    choices={"shape": tuple(SHAPES)},
    docs={
        "positions": "Centre of each shape, an Nx2 array of x, y in 0..1 (origin bottom-left).",
        "sizes": "Radius of each shape (fraction of the frame height), N values; empty: `size`.",
        "colors": "Colour of each shape, an Nx3 or Nx4 array of 0..1; empty: `color`.",
        "shape": "circle or square.",
        "size": "Radius of every shape when `sizes` is empty.",
        "color": "Colour of every shape when `colors` is empty.",
        "sprite": "Optional texture drawn on each shape's square, multiplied by its colour.",
        "tint": "Optional texture sampled at each shape's centre that multiplies its colour.",
        "background": "Colour the frame is cleared to before the shapes are drawn.",
        "resolution": "Output size in pixels; (0, 0) means the patch's resolution.",
        "out": "The texture with the shapes drawn.",
    },
)
def gpu_instances(ctx: NodeContext, state: GPUTargets,
                  positions: Array = np.zeros(0),  # noqa: B008
                  sizes: Array = np.zeros(0),  # noqa: B008
                  colors: Array = np.zeros(0),  # noqa: B008
                  shape: str = "circle", size: float = 0.02,
                  color: Color = (1.0, 1.0, 1.0, 1.0), sprite: Texture = None,
                  tint: Texture = None, background: Color = (0.0, 0.0, 0.0, 0.0),
                  resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Draws many circles, squares or sprites in one draw call. Draws N circles or squares (or
    sprites) at once, one per row of `positions`, sized and coloured by the `sizes` and `colors`
    arrays, in one instanced draw call: particles and generative grids. Shapes are alpha-blended in
    row order over `background`."""
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shown(shape)} (use {', '.join(SHAPES)})")
    points, radii, rgba = instance_arrays(positions, sizes, colors, size, color)
    gl = _gpu(ctx)
    target = state.get(gl, "out", _size(ctx, resolution))
    gl.draw_instances(target, points, radii, rgba, shape=shape, sprite=sprite, tint=tint,
                      background=background)  # fmt: skip
    return target


@node(
    "array.grid",
    examples=(
        ({"columns": 2, "rows": 1}, np.array([[0.25, 0.5], [0.75, 0.5]])),
        ({"columns": 1, "rows": 2}, np.array([[0.5, 0.25], [0.5, 0.75]])),
    ),
    ranges={"columns": (0, None), "rows": (0, None)},
    docs={
        "columns": "Number of points across.",
        "rows": "Number of points up.",
        "out": "The cell centres as a (columns * rows)x2 array of x, y in 0..1, row by row.",
    },
)
def array_grid(columns: int = 16, rows: int = 9) -> Array:
    """The cell centres of a grid, as an Nx2 array of positions. The centres of a columns x rows
    grid of cells over 0..1 (x, y; the bottom row first), an Nx2 array for gpu.instances positions.
    """
    if columns < 0 or rows < 0:
        raise ValueError("columns and rows must not be negative")
    check_elements(columns * rows * 2)
    xs = (np.arange(columns) + 0.5) / max(columns, 1)
    ys = (np.arange(rows) + 0.5) / max(rows, 1)
    grid_x, grid_y = np.meshgrid(xs, ys)
    return np.stack([grid_x.ravel(), grid_y.ravel()], axis=1)
