"""Text nodes: strings rasterised with Pillow (FreeType) into textures.

`text.render` is DETERMINISTIC: it runs again only when one of its inputs (or the patch resolution)
changes, so a title costs nothing on frames where nothing changes. When it runs, the font is read
and the text rasterised on the context's worker pool (`ctx.submit`), never on the frame path; the
node reports `Deferred` until then (showing its previous texture), and the frame thread uploads the
result once.

Fonts: `font` empty (or a bundled font's name, "DejaVu Sans") is the bundled DejaVu Sans
(resources/fonts, with its licence); any other name is a TrueType/OpenType file relative to the
patch's folder and inside it (nodes.paths), opened as a regular file within the limit
`font_file_bytes`.

Text that would cover more than `Limits.texture_side` pixels on a side (estimated from its lines
and characters) fails the node: a hostile file cannot make a worker lay out a megabyte of text.

Pixels: the text is drawn as an 8-bit coverage mask; the texture is `color` with alpha = coverage
times the colour's alpha (straight alpha, no dark fringes), on transparent black.
"""

from __future__ import annotations

import concurrent.futures
import io
from pathlib import Path
from typing import Any

import numpy as np

from nodes.errors import Deferred, shown
from nodes.library.gpu.sources import GPUTargets, _gpu, _size, check_texture_size
from nodes.limits import active_limits
from nodes.paths import read_patch_file, resolve_patch_path, resources_folder
from nodes.spec import Color, NodeContext, Texture, Vec2, node

#: Bundled fonts by name (files in resources/fonts).
BUNDLED_FONTS = {"DejaVu Sans": "DejaVuSans.ttf", "DejaVu Sans Mono": "DejaVuSansMono.ttf"}
DEFAULT_FONT = "DejaVu Sans"
#: Pillow's anchors: horizontal alignment, centred vertically on `position`.
ANCHORS = {"left": "lm", "center": "mm", "right": "rm"}


def font_path(folder: Path | None, font: str) -> Path:
    """The font file for `font`: a bundled font by name (or its file name), else a file relative
    to the patch's `folder` and inside it (PathRefusedError, one line, otherwise)."""
    name = font.strip() or DEFAULT_FONT
    bundled = BUNDLED_FONTS.get(name) or (name if name in BUNDLED_FONTS.values() else None)
    if bundled is not None:
        return resources_folder() / "fonts" / bundled
    return resolve_patch_path(folder, font, "font")


def rasterise(
    text: str,
    font_file: Path,
    font_name: str,
    size: float,
    color: Color,
    align: str,
    position: Vec2,
    frame: tuple[int, int],
) -> np.ndarray:
    """`text` drawn into an RGBA frame of `frame` pixels (rows top to bottom); on a worker."""
    from PIL import Image, ImageDraw, ImageFont

    check_texture_size(frame)
    try:
        data = read_patch_file(font_file, "font")
        font = ImageFont.truetype(io.BytesIO(data), max(1.0, float(size)))
    except OSError as error:
        lines = str(error).strip().splitlines()
        reason = error.strerror or (lines[0] if lines else "cannot be read")
        raise OSError(f"font {shown(font_name)}: {reason}") from None
    width, height = frame
    mask = Image.new("L", frame, 0)
    x, y = position
    ImageDraw.Draw(mask).multiline_text(
        (x * width, (1.0 - y) * height), text, font=font, fill=255, anchor=ANCHORS[align],
        align=align,
    )  # fmt: skip
    coverage = np.asarray(mask, dtype=np.float32) / 255.0
    red, green, blue, alpha = (min(1.0, max(0.0, float(c))) for c in (*tuple(color), 1.0)[:4])
    pixels = np.empty((height, width, 4), np.uint8)
    pixels[..., 0] = round(red * 255)
    pixels[..., 1] = round(green * 255)
    pixels[..., 2] = round(blue * 255)
    pixels[..., 3] = np.rint(coverage * (alpha * 255)).astype(np.uint8)
    return pixels


def check_text_extent(text: str, size: float) -> None:
    """ValueError (one line) for text that would cover more than `Limits.texture_side` pixels on
    a side, estimated without laying it out (half the size a character, the size a line): no
    texture could show it, and laying out and drawing it would hold a worker for long."""
    lines = text.split("\n")
    width = round(max(len(line) for line in lines) * size / 2)
    height = round(len(lines) * size)
    side = active_limits().texture_side
    if width > side or height > side:
        raise ValueError(f"text too large: about {width}x{height} pixels at size {size:g} (limit "
                         f"texture_side = {side})")  # fmt: skip


class TextState(GPUTargets):
    """The node's texture, what it shows (the rasterising inputs) and the rasterising under way."""

    __slots__ = ("pending", "shown_key")

    def __init__(self, path: str = "") -> None:
        super().__init__(path)
        self.shown_key: tuple[Any, ...] | None = None
        self.pending: tuple[tuple[Any, ...], concurrent.futures.Future[np.ndarray]] | None = None

    def close(self) -> None:
        self.shown_key = None
        super().close()


@node(
    "text.render",
    init_state=TextState,
    hints={"font": "file", "color": "color"},
    choices={"align": tuple(ANCHORS)},
    ranges={"size": (1.0, 1024.0)},
    docs={
        "text": "The text to draw; new lines start new lines.",
        "font": "A bundled font's name (empty: DejaVu Sans) or a font file in the patch's folder.",
        "size": "The font size in pixels.",
        "color": "The colour of the text (its alpha fades it).",
        "align": "How lines line up on the position: left, center or right.",
        "position": "Where the text is anchored, 0..1 across and up the frame (origin bottom "
        "left).",
        "resolution": "The texture size in pixels; (0, 0): the patch resolution.",
        "out": "The text on transparent black, as a texture.",
    },
)
def text_render(ctx: NodeContext, state: TextState, text: str = "Text", font: str = "",
                size: float = 64.0, color: Color = (1.0, 1.0, 1.0, 1.0), align: str = "center",
                position: Vec2 = (0.5, 0.5), resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Text drawn into a texture, with a bundled font or one from the patch's folder. It is
    rendered again only when an input changes (in the background: until then the node shows its
    previous texture)."""
    gl = _gpu(ctx)
    if align not in ANCHORS:
        raise ValueError(f"unknown alignment {align!r} (use {', '.join(ANCHORS)})")
    found = font_path(ctx.folder, font)
    check_text_extent(text, size)
    frame = _size(ctx, resolution)
    key = (text, found, size, tuple(color), align, tuple(position), frame)
    if state.shown_key == key and "out" in state.targets and state.gl is gl:
        return state.targets["out"]
    if state.pending is None or state.pending[0] != key:
        job = ctx.submit(rasterise, text, found, font or DEFAULT_FONT, size, color, align,
                         position, frame)  # fmt: skip
        state.pending = (key, job)
    job = state.pending[1]
    if not ctx.ready(job):
        raise Deferred("rendering text")
    state.pending = None
    pixels = job.result()
    if state.gl is not gl:
        GPUTargets.close(state)
        state.gl = gl
    target = state.replace("out", gl.upload(pixels))
    state.shown_key = key
    return target
