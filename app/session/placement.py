"""Where new nodes go: the free spot nearest a wished position.

Candidates are tried ring by ring around the wished top-left corner, `STEP` scene units apart,
nearest first; the first where a node of `NODE_SIZE` (a conservative size: most nodes are
smaller) keeps `GAP` from every existing node rectangle wins. Linear in the number of nodes per
candidate, which is fine for a click; after `MAX_RINGS` rings the wished position is used.

Several nodes placed together (a duplicate, a paste, an ungrouped body) move as one piece:
`free_offset` finds the shift nearest a wished one at which none of the piece's rectangles comes
near an existing node, so the piece keeps its own layout.
"""

from __future__ import annotations

from collections.abc import Iterable

Rect = tuple[float, float, float, float]  # x, y, width, height

NODE_SIZE = (220.0, 130.0)
GAP = 24.0
STEP = 40.0
MAX_RINGS = 40


def overlaps(a: Rect, b: Rect, gap: float = 0.0) -> bool:
    """Whether two rectangles come closer than `gap` (touching edges do not overlap)."""
    return (
        a[0] < b[0] + b[2] + gap
        and b[0] < a[0] + a[2] + gap
        and a[1] < b[1] + b[3] + gap
        and b[1] < a[1] + a[3] + gap
    )


def free_position(
    occupied: Iterable[Rect], wished: tuple[float, float], size: tuple[float, float] = NODE_SIZE
) -> tuple[float, float]:
    """The top-left corner nearest `wished` where a `size` node overlaps none of `occupied`."""
    return free_offset(occupied, [(0.0, 0.0, *size)], wished)


def free_offset(
    occupied: Iterable[Rect], piece: Iterable[Rect], wished: tuple[float, float]
) -> tuple[float, float]:
    """The shift nearest `wished` at which every rectangle of `piece` keeps `GAP` from every
    one of `occupied` (`wished` itself after `MAX_RINGS` rings)."""
    rects = list(occupied)
    parts = list(piece)
    x0, y0 = wished
    for ring in range(MAX_RINGS + 1):
        candidates = [
            (x0 + dx * STEP, y0 + dy * STEP)
            for dx in range(-ring, ring + 1)
            for dy in range(-ring, ring + 1)
            if max(abs(dx), abs(dy)) == ring
        ]
        candidates.sort(key=lambda p: (p[0] - x0) ** 2 + (p[1] - y0) ** 2)
        for x, y in candidates:
            if not any(
                overlaps((px + x, py + y, w, h), rect, GAP)
                for px, py, w, h in parts
                for rect in rects
            ):
                return x, y
    return wished
