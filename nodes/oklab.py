"""Colour maths: sRGB <-> OKLab, the perceptual space colours blend in.

In OKLab the middle of black and white is a perceived mid grey, not sRGB 0.5, so presets and
morphs that blend colours there look even. Assumes colours are sRGB components 0..1, as pins hold
them; the way back is not clamped (callers clamp what they show).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def _to_linear(c: float) -> float:
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def _to_srgb(c: float) -> float:
    return 12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055


# Björn Ottosson's published matrices: linear sRGB -> LMS, and cube-rooted LMS -> Lab. The way
# back uses their exact inverses rather than the rounded published ones, so a round trip is exact
# to float precision (the published pair is off by about 1e-6).
_RGB_TO_LMS = np.array(
    [
        [0.4122214708, 0.5363325363, 0.0514459929],
        [0.2119034982, 0.6806995451, 0.1073969566],
        [0.0883024619, 0.2817188376, 0.6299787005],
    ]
)
_LMS_TO_LAB = np.array(
    [
        [0.2104542553, 0.7936177850, -0.0040720468],
        [1.9779984951, -2.4285922050, 0.4505937099],
        [0.0259040371, 0.7827717662, -0.8086757660],
    ]
)
_LMS_TO_RGB = np.linalg.inv(_RGB_TO_LMS)
_LAB_TO_LMS = np.linalg.inv(_LMS_TO_LAB)


def srgb_to_oklab(rgb: Iterable[float]) -> tuple[float, float, float]:
    """OKLab (L, a, b) of an sRGB colour (components 0..1)."""
    linear = np.array([_to_linear(float(c)) for c in rgb])
    lab = _LMS_TO_LAB @ np.cbrt(_RGB_TO_LMS @ linear)
    return (float(lab[0]), float(lab[1]), float(lab[2]))


def oklab_to_srgb(lab: Iterable[float]) -> tuple[float, float, float]:
    """The sRGB colour (components 0..1, not clamped) of an OKLab (L, a, b)."""
    linear = _LMS_TO_RGB @ (_LAB_TO_LMS @ np.array([float(c) for c in lab])) ** 3
    r, g, b = (_to_srgb(float(c)) for c in linear)
    return (r, g, b)
