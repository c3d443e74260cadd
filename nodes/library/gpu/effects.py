"""GPU effect nodes: colour correction, geometry remaps, keying and compositing.

Every node here is one fullscreen pass of a bundled shader (resources/shaders/<name>.glsl, which
documents its formula) through `nodes.library.gpu.sources` (`_pass`: the node's own pooled target),
so the rules of that module hold: a node renders into its target in place, its size is `resolution`,
or (0, 0) for the first input's size, or the patch's resolution when nothing is linked. They are
pure functions of their inputs (DETERMINISTIC): with constant inputs a node renders once and is
cached.

Assumes straight (not premultiplied) alpha, as the other GPU nodes do; colours are 0..1 RGBA.
A missing texture input reads as transparent black.
"""

from __future__ import annotations

from typing import Annotated

from nodes.errors import shown
from nodes.library.gpu.sources import GPUTargets, _pass
from nodes.spec import Color, NodeContext, Pin, Texture, Vec2, node

_IN = "The texture to process."
_OUT = "The processed texture."
_RESOLUTION = "Output size in pixels; (0, 0) means the input's size."


def _choice(kind: str, value: str, choices: dict[str, int]) -> int:
    """The shader's number for `value`, or ValueError naming the choices."""
    if value not in choices:
        raise ValueError(f"unknown {kind} {shown(value)} (use {', '.join(choices)})")
    return choices[value]


# ----------------------------------------------------------------------------- colour


@node(
    "gpu.levels",
    init_state=GPUTargets,
    ranges={"gamma": (0.01, None)},
    docs={
        "in": _IN,
        "in_low": "Input value that becomes out_low (black point).",
        "in_high": "Input value that becomes out_high (white point).",
        "gamma": "Midtone exponent: above 1 brightens, below 1 darkens.",
        "out_low": "Darkest output value.",
        "out_high": "Brightest output value.",
        "resolution": _RESOLUTION,
        "out": _OUT,
    },
)
def gpu_levels(ctx: NodeContext, state: GPUTargets, in_: Texture = None, in_low: float = 0.0,
               in_high: float = 1.0, gamma: float = 1.0, out_low: float = 0.0,
               out_high: float = 1.0, resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Levels of the red, green and blue channels. Levels on red, green and blue: in_low..in_high is
    stretched to 0..1 (clamped), raised to 1 / gamma and mapped to out_low..out_high; alpha is kept.
    """
    uniforms = {"in_low": in_low, "in_high": in_high, "gamma": gamma, "out_low": out_low,
                "out_high": out_high}  # fmt: skip
    return _pass(ctx, state, "levels", resolution, uniforms, {"src": in_})


@node(
    "gpu.hsv",
    init_state=GPUTargets,
    ranges={"saturation": (0.0, None), "value": (0.0, None)},
    docs={
        "in": _IN,
        "hue": "Hue shift in turns (1.0 is all the way round the colour wheel).",
        "saturation": "Saturation factor (0 grey, 1 unchanged).",
        "value": "Brightness (HSV value) factor (1 unchanged).",
        "resolution": _RESOLUTION,
        "out": _OUT,
    },
)
def gpu_hsv(ctx: NodeContext, state: GPUTargets, in_: Texture = None, hue: float = 0.0,
            saturation: float = 1.0, value: float = 1.0,
            resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Shifts hue and scales saturation and value. Hue, saturation and value adjustment: hue shifted
    by `hue` turns, saturation and value multiplied by their factors and clamped to 0..1; alpha is
    kept."""
    uniforms = {"hue": hue, "saturation": saturation, "value": value}
    return _pass(ctx, state, "hsv", resolution, uniforms, {"src": in_})


@node(
    "gpu.invert",
    init_state=GPUTargets,
    ranges={"amount": (0.0, 1.0)},
    docs={
        "in": _IN,
        "amount": "How far to invert: 0 unchanged, 1 fully inverted.",
        "resolution": _RESOLUTION,
        "out": _OUT,
    },
)
def gpu_invert(ctx: NodeContext, state: GPUTargets, in_: Texture = None, amount: float = 1.0,
               resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Inverts red, green and blue (1 - c), faded in by `amount`; alpha is kept."""
    return _pass(ctx, state, "invert", resolution, {"amount": amount}, {"src": in_})


_LEVEL = "Luminance (0..1) from which a pixel becomes `high`."
_SOFTNESS = "Width of a smooth transition around `level` (0: a hard step)."


@node(
    "gpu.threshold",
    init_state=GPUTargets,
    docs={"in": _IN, "resolution": _RESOLUTION, "out": "The two-colour texture."},
)
def gpu_threshold(ctx: NodeContext, state: GPUTargets, in_: Texture = None,
                  level: Annotated[float, Pin(min=0.0, max=1.0, doc=_LEVEL)] = 0.5,
                  softness: Annotated[float, Pin(min=0.0, max=1.0, doc=_SOFTNESS)] = 0.0,
                  low: Annotated[Color, Pin(hint="color",
                                            doc="Colour of pixels darker than `level`.")]
                  = (0.0, 0.0, 0.0, 1.0),
                  high: Annotated[Color, Pin(hint="color",
                                             doc="Colour of pixels at least as bright as `level`.")]
                  = (1.0, 1.0, 1.0, 1.0),
                  resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Two colours split by luminance. Two colours by luminance (BT.709 weights): `high` where it is
    at least `level`, `low` below it, blended over `softness` around the level."""
    uniforms = {"level": level, "softness": softness, "low": low, "high": high}
    return _pass(ctx, state, "threshold", resolution, uniforms, {"src": in_})


# ----------------------------------------------------------------------------- geometry

MIRROR_MODES = {"horizontal": 0, "vertical": 1, "both": 2}


@node(
    "gpu.mirror",
    init_state=GPUTargets,
    choices={"mode": tuple(MIRROR_MODES)},
    docs={
        "in": _IN,
        "mode": "horizontal (left half onto the right), vertical (bottom onto top) or both.",
        "resolution": _RESOLUTION,
        "out": "The mirrored texture.",
    },
)
def gpu_mirror(ctx: NodeContext, state: GPUTargets, in_: Texture = None, mode: str = "horizontal",
               resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Mirrors one half of the input onto the other. Mirrors one half of the input onto the other:
    horizontal reflects the left half onto the right, vertical the bottom half onto the top, both
    the bottom-left quarter into all four."""
    uniforms = {"mode": _choice("mirror mode", mode, MIRROR_MODES)}
    return _pass(ctx, state, "mirror", resolution, uniforms, {"src": in_})


@node(
    "gpu.kaleidoscope",
    init_state=GPUTargets,
    ranges={"segments": (1.0, 64.0)},
    docs={
        "in": _IN,
        "segments": "How many times the mirrored wedge pair repeats around the centre.",
        "rotate": "Angle (radians) of the wedge taken from the input.",
        "center": "Point of the input (0..1, origin bottom-left) the wedge is taken around.",
        "resolution": _RESOLUTION,
        "out": "The kaleidoscope texture.",
    },
)
def gpu_kaleidoscope(ctx: NodeContext, state: GPUTargets, in_: Texture = None,
                     segments: float = 6.0, rotate: float = 0.0, center: Vec2 = (0.5, 0.5),
                     resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """A kaleidoscope of the input. A kaleidoscope: a wedge of the input (angle pi / segments,
    starting at `rotate`, around `center`) reflected into 2 * segments wedges around the middle of
    the frame."""
    uniforms = {"segments": segments, "rotate": rotate, "center": center}
    return _pass(ctx, state, "kaleidoscope", resolution, uniforms, {"src": in_})


@node(
    "gpu.displace",
    init_state=GPUTargets,
    docs={
        "in": _IN,
        "map": "Displacement map: red moves across, green moves up, 0.5 does not move.",
        "amount": "Largest move, in frame widths and heights, at map values 0 and 1.",
        "resolution": _RESOLUTION,
        "out": "The displaced texture.",
    },
)
def gpu_displace(ctx: NodeContext, state: GPUTargets, in_: Texture = None, map_: Texture = None,
                 amount: float = 0.05, resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Moves the input's pixels by a displacement texture. Moves the input's pixels by a texture:
    each pixel shows the input at its position plus (map.rg - 0.5) * 2 * amount; without a map the
    input passes unchanged."""
    uniforms = {"amount": amount, "has_map": map_ is not None}
    return _pass(ctx, state, "displace", resolution, uniforms, {"src": in_, "map": map_})


@node(
    "gpu.tile",
    init_state=GPUTargets,
    docs={
        "in": _IN,
        "repeat": "How many copies across and up the frame.",
        "offset": "Shift of the tiling, in tiles.",
        "resolution": _RESOLUTION,
        "out": "The tiled texture.",
    },
)
def gpu_tile(ctx: NodeContext, state: GPUTargets, in_: Texture = None, repeat: Vec2 = (2.0, 2.0),
             offset: Vec2 = (0.0, 0.0), resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Repeats the input `repeat` times across and up the frame, shifted by `offset` tiles."""
    return _pass(ctx, state, "tile", resolution, {"repeat": repeat, "offset": offset},
                 {"src": in_})  # fmt: skip


@node(
    "gpu.crop",
    init_state=GPUTargets,
    docs={
        "in": _IN,
        "low": "Bottom-left corner of the kept rectangle (0..1 of the input).",
        "high": "Top-right corner of the kept rectangle (0..1 of the input).",
        "resolution": "Output size in pixels; (0, 0) means the rectangle's own size in pixels.",
        "out": "The cropped texture.",
    },
)
def gpu_crop(ctx: NodeContext, state: GPUTargets, in_: Texture = None, low: Vec2 = (0.25, 0.25),
             high: Vec2 = (0.75, 0.75), resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """A rectangle of the input, stretched over the output. The rectangle low..high of the input
    (fractions, origin bottom-left) stretched over the output, which is by default the rectangle's
    size in input pixels."""
    width, height = (round(v) for v in resolution)
    if (width < 1 or height < 1) and in_ is not None:
        in_width, in_height = in_.size
        width = max(1, round(abs(high[0] - low[0]) * in_width))
        height = max(1, round(abs(high[1] - low[1]) * in_height))
        resolution = (width, height)
    return _pass(ctx, state, "crop", resolution, {"low": low, "high": high}, {"src": in_})


# ----------------------------------------------------------------------------- image analysis


@node(
    "gpu.edges",
    init_state=GPUTargets,
    ranges={"strength": (0.0, None)},
    docs={
        "in": _IN,
        "strength": "Gain on the edge magnitude.",
        "resolution": _RESOLUTION,
        "out": "Edges as opaque grey: black where flat, brighter on stronger edges.",
    },
)
def gpu_edges(ctx: NodeContext, state: GPUTargets, in_: Texture = None, strength: float = 1.0,
              resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Edge detection: the Sobel gradient magnitude of the luminance, times `strength`, as
    opaque grey."""
    return _pass(ctx, state, "edges", resolution, {"strength": strength}, {"src": in_})


@node(
    "gpu.chroma_key",
    init_state=GPUTargets,
    hints={"key": "color"},
    ranges={"tolerance": (0.0, None), "softness": (0.0, None)},
    docs={
        "in": _IN,
        "key": "The colour that becomes transparent.",
        "tolerance": "RGB distance from the key within which pixels are fully transparent.",
        "softness": "Distance beyond the tolerance over which alpha fades back in.",
        "resolution": _RESOLUTION,
        "out": "The input with the keyed colour made transparent.",
    },
)
def gpu_chroma_key(ctx: NodeContext, state: GPUTargets, in_: Texture = None,
                   key: Color = (0.0, 1.0, 0.0, 1.0), tolerance: float = 0.3,
                   softness: float = 0.1, resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Makes pixels near a key colour transparent. Chroma key: pixels near the key colour (RGB
    distance below `tolerance`) become transparent, fading back in over `softness`; colours are
    kept."""
    uniforms = {"key": key, "tolerance": tolerance, "softness": softness}
    return _pass(ctx, state, "chroma_key", resolution, uniforms, {"src": in_})


# ----------------------------------------------------------------------------- compositing

COMPOSITE_MODES = {
    "normal": 0,
    "add": 1,
    "multiply": 2,
    "screen": 3,
    "overlay": 4,
    "difference": 5,
    "subtract": 6,
    "lighten": 7,
    "darken": 8,
    "hard_light": 9,
}


@node(
    "gpu.composite",
    init_state=GPUTargets,
    choices={"mode": tuple(COMPOSITE_MODES)},
    ranges={"opacity": (0.0, 1.0), "base_fade": (0.0, 1.0)},
    docs={
        "base": "The texture underneath (e.g. a gpu.feedback for trails).",
        "layer": "The texture composited on top; its alpha is its coverage.",
        "mode": "Blend mode: " + ", ".join(COMPOSITE_MODES) + ".",
        "opacity": "Layer opacity (multiplies the layer's alpha).",
        "base_fade": "Fraction by which the base fades to transparent black first (0 none).",
        "resolution": "Output size in pixels; (0, 0) means the base's size (else the layer's).",
        "out": "The composited texture.",
    },
)
def gpu_composite(ctx: NodeContext, state: GPUTargets, base: Texture = None, layer: Texture = None,
                  mode: str = "normal", opacity: float = 1.0, base_fade: float = 0.0,
                  resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Composites a layer over a base with a blend mode. Composites `layer` over `base` with a blend
    mode (normal, add, multiply, screen, overlay, difference, subtract, lighten, darken, hard_light)
    at the layer's alpha times `opacity`. `base_fade` first fades the base, so a gpu.feedback base
    makes a fading trail in one node."""
    uniforms = {"mode": _choice("blend mode", mode, COMPOSITE_MODES), "opacity": opacity,
                "base_fade": base_fade}  # fmt: skip
    return _pass(ctx, state, "composite", resolution, uniforms, {"base": base, "layer": layer})
