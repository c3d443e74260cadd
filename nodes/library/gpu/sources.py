"""GPU nodes: textures made and processed by fragment shaders on the GL service.

The nodes exchange pooled render targets (texture + framebuffer) from `ctx.gpu`, the GL service of
the running patch; this module never imports moderngl. Each node keeps its targets in its state,
renders into them in place every time it runs, and gives them back to the pool when it needs
another size or format, and when the node is removed (the context closes its state). The flat
evaluator also hands a HOT node's "out" target back after the last node reading it ran in the frame
(`GPUTargets.release_output`); the node takes one from the pool again at its next run. A node with
constant inputs is CONST like any other node: a constant gradient is rendered once and cached; a
noise driven by `time.seconds` is HOT and renders every frame.

Files: a `file` (gpu.shader) or `path` (gpu.image) is relative to the folder of the patch's file
(`ctx.folder`), or to the current directory for a patch that was never saved, and must stay inside
it (or the built-in resources, or a trusted folder): `nodes.paths` resolves and opens it, regular
files only, within the size limits. Files are read (and images decoded) on the context's worker
pool, never on the frame path: the node is deferred until then. A shader file is read once per
version (modification time and size; the patch reads it first, to derive the node's pins) and
looked up with one `stat` a frame.

Sizes: every render target is at most `Limits.texture_side` pixels a side (checked before it is
acquired), and so is a decoded image or an uploaded array. A shader has at most
`Limits.pins_per_node` uniforms (each becomes a pin, and every instance holds a value for each):
a shader with more fails its node, whose patch still loads, as with a file it may not read.

Sizes: every node has a `resolution` pin (width, height in pixels); (0, 0) means the input's size
for filters, else the patch's `resolution` setting (`ctx.resolution`).

Known downsides:
- Rendering in place means a texture changes when its node runs again, so `gpu.feedback` copies
  its source's texture at the end of each frame (its spec's `capture`): next frame it shows that
  copy, whatever the source draws meanwhile.
- Outputs of nodes that pass a texture through (`gpu.output`) refer to the upstream node's target,
  so they show what that node rendered last.
"""

from __future__ import annotations

import collections
import concurrent.futures
import contextlib
import functools
import io
import math
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from nodes.errors import Deferred, shown
from nodes.library.gpu.glsl import builtin_shader, uniform_declarations
from nodes.limits import active_limits
from nodes.paths import PathRefusedError, read_patch_file, resolve_patch_path
from nodes.spec import Array, Color, Determinism, NodeContext, PinSpec, Texture, Vec2, node
from nodes.types import is_picture, pin_type_of_uniform

HOT = Determinism.NONDETERMINISTIC

NO_GPU_MESSAGE = "no GPU context: GPU nodes run in the editor or in `patchbay run` with GL"


def _gpu(ctx: NodeContext) -> Any:
    gl = ctx.gpu
    if gl is None:
        raise RuntimeError(NO_GPU_MESSAGE)
    return gl


class GPUTargets:
    """Render targets a node owns, by role ("out", "tmp", ...); they go back to the pool on
    `close()`. Creating it touches no GL (it may run on a background thread)."""

    __slots__ = ("gl", "lent", "owner", "targets")

    def __init__(self, path: str = "") -> None:
        self.gl: Any = None
        self.targets: dict[str, Any] = {}
        self.lent: Any = None  # the "out" target last given back by `release_output`
        # The node's id (its path without the leading "/"): its targets' `owner`, by which the
        # GL service times the node's draws on the GPU.
        self.owner: str | None = path[1:] if path.startswith("/") else None

    def get(self, gl: Any, role: str, size: tuple[int, int], *, keep: bool = False) -> Any:
        """The target for `role` at `size` (RGBA8), acquired or replaced as needed. With `keep`
        an existing target is returned whatever its size (used on failure paths, so that the
        last good output stays a live target)."""
        current = self.targets.get(role)
        if current is not None and self.gl is gl and (keep or current.size == size):
            return current
        check_texture_size(size)
        if current is not None:
            self.put(role)
        if self.gl is not gl:
            self.close()
            self.gl = gl
        target = self.targets[role] = gl.acquire(size)
        target.owner = self.owner
        return target

    def replace(self, role: str, target: Any) -> Any:
        """Own `target` (acquired from `self.gl`) as `role`, giving back the previous one."""
        self.put(role)
        self.targets[role] = target
        target.owner = self.owner
        return target

    def put(self, role: str) -> None:
        """Give the target for `role` back to the pool."""
        target = self.targets.pop(role, None)
        if target is not None and self.gl is not None:
            self.gl.release(target)

    def release_output(self, target: Any) -> None:
        """Give the "out" target back to the pool if `target` is it (the flat evaluator calls
        this after the last consumer of the node's output ran in a frame); the next run takes
        one from the pool again."""
        if target is not None and self.targets.get("out") is target:
            self.put("out")
            self.lent = target

    def gave_back(self, target: Any) -> bool:
        """True if `target` is the "out" target `release_output` last gave back to the pool:
        another node may have drawn into it since."""
        return target is not None and target is self.lent

    def close(self) -> None:
        for role in list(self.targets):
            self.put(role)


def check_texture_size(size: tuple[int, int]) -> None:
    """ValueError unless a texture of `size` pixels is within `Limits.texture_side`."""
    side = active_limits().texture_side
    width, height = size
    if not (1 <= width <= side and 1 <= height <= side):
        raise ValueError(f"texture size {width}x{height}: each side must be 1..{side} (limit "
                         "texture_side)")  # fmt: skip


def _size(ctx: NodeContext, resolution: Vec2, *inputs: Any) -> tuple[int, int]:
    width, height = (round(v) for v in resolution)
    if width >= 1 and height >= 1:
        return (width, height)
    for texture in inputs:
        if texture is not None:
            return tuple(texture.size)
    return ctx.resolution


def _pass(
    ctx: NodeContext,
    state: GPUTargets,
    shader: str,
    resolution: Vec2,
    uniforms: Mapping[str, Any] | None = None,
    textures: Mapping[str, Any] | None = None,
) -> Any:
    """Render one built-in shader into the node's "out" target and return the target."""
    gl = _gpu(ctx)
    inputs = tuple((textures or {}).values())
    target = state.get(gl, "out", _size(ctx, resolution, *inputs))
    gl.render(target, builtin_shader(shader), uniforms, textures)
    return target


# ----------------------------------------------------------------------------- generators


@node(
    "gpu.solid",
    init_state=GPUTargets,
    hints={"color": "color"},
    docs={
        "color": "The colour to fill with.",
        "resolution": "The output size in pixels; (0, 0) takes the input's or the patch's size.",
        "out": "The filled texture.",
    },
)
def gpu_solid(
    ctx: NodeContext,
    state: GPUTargets,
    color: Color = (1.0, 1.0, 1.0, 1.0),
    resolution: Vec2 = (0, 0),
) -> Texture:
    """A texture filled with one colour."""
    return _pass(ctx, state, "solid", resolution, {"color": color})


@node(
    "gpu.gradient",
    init_state=GPUTargets,
    hints={"color_a": "color", "color_b": "color"},
    docs={
        "color_a": "The colour at the start.",
        "color_b": "The colour at the end.",
        "angle": "The direction in radians: 0 left to right, pi/2 bottom to top.",
        "resolution": "The output size in pixels; (0, 0) takes the input's or the patch's size.",
        "out": "The gradient texture.",
    },
)
def gpu_gradient(ctx: NodeContext, state: GPUTargets, color_a: Color = (0.0, 0.0, 0.0, 1.0),
                 color_b: Color = (1.0, 1.0, 1.0, 1.0), angle: float = 0.0,
                 resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """A linear gradient between two colours.

    It goes from color_a to color_b; angle in radians (0: left to right, pi/2: bottom to top)."""
    uniforms = {"color_a": color_a, "color_b": color_b, "angle": angle}
    return _pass(ctx, state, "gradient", resolution, uniforms)


@node(
    "gpu.noise",
    init_state=GPUTargets,
    ranges={"scale": (0.0, None)},
    docs={
        "time": "Where the noise is in its animation; link a clock to animate it.",
        "scale": "How many noise cells across the frame.",
        "seed": "Picks another noise pattern.",
        "resolution": "The output size in pixels; (0, 0) takes the input's or the patch's size.",
        "out": "The noise texture.",
    },
)
def gpu_noise(ctx: NodeContext, state: GPUTargets, time: float = 0.0, scale: float = 8.0,
              seed: float = 0.0, resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Animated grey value noise.

    Link `time` (from time.seconds, say) to animate it; `scale` is the number of noise cells
    across the frame."""
    uniforms = {"time": time, "scale": scale, "seed": seed}
    return _pass(ctx, state, "noise", resolution, uniforms)


@node(
    "gpu.circle",
    init_state=GPUTargets,
    hints={"color": "color", "background": "color"},
    docs={
        "center": "The centre, 0..1 across and up from the bottom-left corner.",
        "radius": "The radius as a fraction of the frame height.",
        "softness": "How far the edge fades inwards.",
        "color": "The colour of the circle.",
        "background": "The colour around it.",
        "resolution": "The output size in pixels; (0, 0) takes the input's or the patch's size.",
        "out": "The texture with the circle.",
    },
)
def gpu_circle(ctx: NodeContext, state: GPUTargets, center: Vec2 = (0.5, 0.5), radius: float = 0.25,
               softness: float = 0.0, color: Color = (1.0, 1.0, 1.0, 1.0),
               background: Color = (0.0, 0.0, 0.0, 1.0),
               resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """A filled circle on a background.

    Center in 0..1 (origin bottom-left), radius a fraction of the height, softness widens the
    edge inwards."""
    uniforms = {"center": center, "radius": radius, "softness": softness, "color": color,
                "background": background}  # fmt: skip
    return _pass(ctx, state, "circle", resolution, uniforms)


# ----------------------------------------------------------------------------- filters

BLEND_MODES = {"mix": 0, "add": 1, "multiply": 2, "screen": 3}


@node(
    "gpu.blend",
    init_state=GPUTargets,
    ranges={"opacity": (0.0, 1.0)},
    choices={"mode": tuple(BLEND_MODES)},
    docs={
        "a": "The texture underneath.",
        "b": "The texture laid on top.",
        "mode": "How they combine: mix, add, multiply or screen.",
        "opacity": "How much of the blend shows over a, from 0 to 1.",
        "resolution": "The output size in pixels; (0, 0) takes the input's or the patch's size.",
        "out": "The blended texture.",
    },
)
def gpu_blend(ctx: NodeContext, state: GPUTargets, a: Texture = None, b: Texture = None,
              mode: str = "mix", opacity: float = 1.0,
              resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Blends one texture onto another.

    b goes onto a: mode is mix, add, multiply or screen; opacity fades the result in over a. A
    missing input reads as transparent black."""
    if mode not in BLEND_MODES:
        raise ValueError(f"unknown blend mode {mode!r} (use {', '.join(BLEND_MODES)})")
    uniforms = {"mode": BLEND_MODES[mode], "opacity": opacity}
    return _pass(ctx, state, "blend", resolution, uniforms, {"a": a, "b": b})


@node(
    "gpu.transform",
    init_state=GPUTargets,
    docs={
        "in": "The texture to move.",
        "translate": "The shift, in frame widths and heights.",
        "rotate": "The rotation in radians, counter-clockwise.",
        "scale": "The size factor.",
        "resolution": "The output size in pixels; (0, 0) takes the input's or the patch's size.",
        "out": "The moved texture.",
    },
)
def gpu_transform(ctx: NodeContext, state: GPUTargets, in_: Texture = None,
                  translate: Vec2 = (0, 0), rotate: float = 0.0, scale: float = 1.0,
                  resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Moves, rotates and scales a texture about the frame centre.

    The shift is in frame widths/heights, the rotation in radians, counter-clockwise; what comes
    from outside the input is transparent."""
    uniforms = {"translate": translate, "rotate": rotate, "scale": scale}
    return _pass(ctx, state, "transform", resolution, uniforms, {"src": in_})


@node(
    "gpu.blur",
    init_state=GPUTargets,
    ranges={"radius": (0.0, None)},
    docs={
        "in": "The texture to blur.",
        "radius": "The blur radius in pixels.",
        "resolution": "The output size in pixels; (0, 0) takes the input's or the patch's size.",
        "out": "The blurred texture.",
    },
)
def gpu_blur(ctx: NodeContext, state: GPUTargets, in_: Texture = None, radius: float = 4.0,
             resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """A Gaussian blur of a texture.

    `radius` is in pixels (about three standard deviations); it renders in two passes."""
    gl = _gpu(ctx)
    size = _size(ctx, resolution, in_)
    shader = builtin_shader("blur")
    across = state.get(gl, "tmp", size)
    gl.render(across, shader, {"direction": (1.0, 0.0), "radius": radius}, {"src": in_})
    target = state.get(gl, "out", size)
    gl.render(target, shader, {"direction": (0.0, 1.0), "radius": radius}, {"src": across})
    return target


class FeedbackState(GPUTargets):
    """Two targets used in turn: the end of a frame copies into one while the other may still be
    what this frame showed (a loop reads its own output)."""

    __slots__ = ("turn",)

    def __init__(self, path: str = "") -> None:
        super().__init__(path)
        self.turn = 0

    def release_output(self, target: Any) -> None:
        """Never: the loop reads the copy next frame."""


def _copy_for_next_frame(ctx: NodeContext, state: FeedbackState, texture: Any) -> Any:
    """At the end of a frame: a copy of the source's texture, which it may redraw next frame."""
    if texture is None:
        return None
    gl = _gpu(ctx)
    state.turn ^= 1
    target = state.get(gl, "ab"[state.turn], tuple(texture.size))
    gl.render(target, builtin_shader("passthrough"), textures={"src": texture})
    return target


@node(
    "gpu.feedback",
    determinism=HOT,
    feedback=("in",),
    init_state=FeedbackState,
    capture=_copy_for_next_frame,
    docs={
        "in": "The texture to delay; it may come from downstream.",
        "resolution": "The output size in pixels; (0, 0) takes the input's or the patch's size.",
        "out": "The texture in had at the end of the previous frame.",
    },
)
def gpu_feedback(ctx: NodeContext, state: FeedbackState, in_: Texture = None,
                 resolution: Vec2 = (0, 0)) -> Texture:  # fmt: skip
    """Gives the texture its input had on the previous frame: the GPU frame delay.

    It gives transparent black on the first frame. Its `in` may be fed from downstream, which makes
    trails and feedback loops."""
    gl = _gpu(ctx)
    size = _size(ctx, resolution, in_)
    if in_ is not None and tuple(in_.size) == size:
        return in_
    target = state.get(gl, "out", size)
    if in_ is None:
        gl.clear(target)
    else:
        gl.render(target, builtin_shader("passthrough"), textures={"src": in_})
    return target


# ----------------------------------------------------------------------------- shader


DEFAULT_SHADER = """#version 330
// Every `uniform` declared here becomes an input pin of the node.
in vec2 uv;
out vec4 fragColor;

uniform vec4 color = vec4(1.0, 0.6, 0.2, 1.0);

void main() {
    fragColor = vec4(uv, 1.0, 1.0) * color;
}
"""

_SHADER_STATIC_PINS = ("source", "file", "resolution")
_SHADER_FILES_KEPT = 32
_shader_files: collections.OrderedDict[tuple[Path, int, int], str] = collections.OrderedDict()
_shader_files_lock = threading.Lock()


def _shader_file(file: str, folder: Path | None) -> tuple[Path, int, int] | str:
    """Where the shader file `file` is, as (real path, mtime, size), or the text of the bundled
    shader of that name when there is no such file. One `stat`, no read."""
    path = resolve_patch_path(folder, file, "shader")
    try:
        info = os.stat(path)
    except OSError:
        name = file.removesuffix(".glsl")
        if "/" not in name and "\\" not in name:
            with contextlib.suppress(KeyError):
                return builtin_shader(name)
        raise FileNotFoundError(f"shader file {shown(file)} not found") from None
    return (path, info.st_mtime_ns, info.st_size)


def _kept_text(key: tuple[Path, int, int]) -> str | None:
    with _shader_files_lock:
        text = _shader_files.get(key)
        if text is not None:
            _shader_files.move_to_end(key)
        return text


def _read_shader_file(key: tuple[Path, int, int]) -> str:
    """Read a shader file (as nodes.paths opens files) and keep its text by (path, mtime,
    size); the last few are kept, so every node and pin derivation reads a version once."""
    path = key[0]
    try:
        text = read_patch_file(path, "shader").decode("utf-8")
    except UnicodeDecodeError as error:
        raise PathRefusedError(f"shader file {shown(path.name)}: not UTF-8 text ({error.reason} "
                               f"at byte {error.start})") from None  # fmt: skip
    with _shader_files_lock:
        _shader_files[key] = text
        while len(_shader_files) > _SHADER_FILES_KEPT:
            _shader_files.popitem(last=False)
    return text


def shader_text(source: str, file: str, folder: Path | None = None) -> str:
    """The fragment shader a gpu.shader node runs: `source` if given, else `file`: a .glsl file
    relative to `folder` (the patch file's, else the current directory) and inside it (see
    nodes.paths), or else a bundled shader name (`noise` or `noise.glsl`). A file is read once
    per version (modification time and size). Errors are one line: PathRefusedError (a
    ValueError) for a name or file that may not be used, FileNotFoundError. Reads the file here:
    for patch edits and loading; the node itself reads on the context's worker pool."""
    if source.strip():
        return source
    if not file:
        raise ValueError("no shader: set source or file")
    found = _shader_file(file, folder)
    if isinstance(found, str):
        return found
    return _kept_text(found) or _read_shader_file(found)


class TooManyPinsError(ValueError):
    """A shader that declares more uniforms than a node may have pins (`Limits.pins_per_node`)."""


def _uniform_pins(source: str) -> tuple[PinSpec, ...]:
    """The pins of a shader's uniforms; TooManyPinsError (one line naming the limit) when there
    are more than the limit `pins_per_node` in force: every instance would hold a value each."""
    limits = active_limits()
    pins = _uniform_pins_within(source, limits.pins_per_node)
    if isinstance(pins, int):
        raise TooManyPinsError(
            f"the shader declares {pins} uniforms: {limits.exceeded('pins_per_node', pins)}"
        )
    return pins


@functools.lru_cache(maxsize=64)
def _uniform_pins_within(source: str, limit: int) -> tuple[PinSpec, ...] | int:
    """The pins of a shader's uniforms, or their count when it is above `limit`."""
    declarations = [d for d in uniform_declarations(source) if d.name not in _SHADER_STATIC_PINS]
    if len(declarations) > limit:
        return len(declarations)
    pins = []
    for decl in declarations:  # `resolution` is set by the GL service to the target size
        kind = pin_type_of_uniform(decl.type)
        assert kind is not None  # uniform_declarations reports only the types a pin exposes
        default = kind.exposed_default if decl.default is None else kind.coerce(decl.default)
        pins.append(PinSpec(decl.name, kind.name, default, hint=kind.exposed_hint))
    return tuple(pins)


def shader_pins(values: Mapping[str, Any], folder: Path | None = None) -> tuple[PinSpec, ...]:
    """The dynamic input pins of a gpu.shader node: one per uniform of its shader. While the
    shader cannot be read (a missing file) or has more uniforms than the limit `pins_per_node`,
    an `any` pin per value it has beyond the static ones, so that a patch loads with its uniform
    values and links, and the node fails when it runs."""
    source, file = values.get("source", ""), values.get("file", "")
    try:
        text = shader_text(source if isinstance(source, str) else "",
                           file if isinstance(file, str) else "", folder)  # fmt: skip
        return _uniform_pins(text)
    except (OSError, ValueError):
        return tuple(PinSpec(name, "any") for name in values if name not in _SHADER_STATIC_PINS)


def too_many_uniforms(values: Mapping[str, Any], folder: Path | None = None) -> str | None:
    """Why a gpu.shader node with these values has no pins for its uniforms: its shader declares
    more than the limit `pins_per_node` (one line; the node fails when it runs), or None."""
    try:
        text = shader_text(str(values.get("source") or ""), str(values.get("file") or ""), folder)
        _uniform_pins(text)
    except TooManyPinsError as error:
        return str(error)
    except (OSError, ValueError):
        return None  # unreadable: `patchbay check` names refused files apart
    return None


class ShaderState(GPUTargets):
    """The node's target, the last source that compiled (rendered while an edit is broken) and
    the read of a new version of its shader file, while one runs on the worker pool."""

    __slots__ = ("good_source", "reading")

    def __init__(self, path: str = "") -> None:
        super().__init__(path)
        self.good_source: str | None = None
        self.reading: tuple[tuple[Path, int, int], concurrent.futures.Future[str]] | None = None


def _frame_shader_text(ctx: NodeContext, state: ShaderState, source: str, file: str) -> str:
    """The shader text for a frame: a version of the file not read yet is read on the worker
    pool (the node is deferred meanwhile), never on the frame path."""
    if source.strip() or not file:
        return shader_text(source, file, ctx.folder)
    found = _shader_file(file, ctx.folder)
    if isinstance(found, str):
        return found
    text = _kept_text(found)
    if text is not None:
        state.reading = None
        return text
    if state.reading is None or state.reading[0] != found:
        state.reading = (found, ctx.submit(_read_shader_file, found))
    future = state.reading[1]
    if not ctx.ready(future):
        raise Deferred(f"reading {shown(file)}")
    state.reading = None
    return future.result()


@node(
    "gpu.shader",
    init_state=ShaderState,
    hints={"source": "code", "file": "file"},
    dynamic_inputs=shader_pins,
    dynamic_from=("source", "file"),
    docs={
        "source": "The GLSL fragment shader's code.",
        "file": "A shader file to use when source is empty.",
        "resolution": "The output size in pixels; (0, 0) takes the input's or the patch's size.",
        "out": "The texture the shader drew.",
    },
)
def gpu_shader(ctx: NodeContext, state: ShaderState, source: str = DEFAULT_SHADER, file: str = "",
               resolution: Vec2 = (0, 0),
               uniforms: Mapping[str, Any] | None = None) -> Texture:  # fmt: skip
    """Draws a texture with a GLSL fragment shader whose uniforms become pins.

    The shader (GLSL 330: `in vec2 uv; out vec4 fragColor;`) comes from `source`, or from `file`
    when source is empty. Each uniform becomes an input pin (vec3/vec4 as colours,
    sampler2D as textures; `resolution` is the target size). A relative `file` is relative to the
    patch file's folder. A shader that does not compile fails the node with the driver's line and
    column, and the last good one keeps rendering."""
    text = _frame_shader_text(ctx, state, source, file)
    pins = _uniform_pins(text)  # before any GL work: too many uniforms fail the node here
    gl = _gpu(ctx)
    error = gl.shader_error(text)
    if error is None:
        state.good_source = text
    elif state.good_source is None:
        raise error
    good = state.good_source
    assert good is not None
    values = dict(uniforms or {})
    textures = {}
    plain = {}
    for pin in pins:
        value = values.get(pin.name, pin.default)
        if is_picture(pin.type):
            textures[pin.name] = value
        else:
            plain[pin.name] = value
    for decl in uniform_declarations(good):
        if decl.type == "vec3" and decl.name in plain:
            plain[decl.name] = tuple(plain[decl.name])[:3]
    inputs = tuple(t for t in textures.values() if t is not None)
    target = state.get(gl, "out", _size(ctx, resolution, *inputs), keep=error is not None)
    gl.render(target, good, plain, textures)
    if error is not None:
        raise error
    return target


# ----------------------------------------------------------------------------- CPU <-> GPU


def _load_image(path: Path) -> np.ndarray:
    """Read and decode an image file (on a worker thread): the file is opened as nodes.paths
    opens files, and its size is checked from the header before any pixel is decoded."""
    from PIL import Image

    data = read_patch_file(path, "image")
    with Image.open(io.BytesIO(data)) as image:
        check_texture_size(image.size)
        return np.asarray(image.convert("RGBA"), dtype=np.uint8)


def _file_stamp(path: Path) -> int | None:
    """The file's modification time (ns), None if it cannot be read."""
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _load_failure(name: str, error: BaseException) -> str:
    """One line saying why the image `name` did not load."""
    if isinstance(error, OSError) and error.strerror:
        return f"{name}: {error.strerror}"
    lines = str(error).strip().splitlines()
    return f"{name}: {lines[0] if lines else type(error).__name__}"


class ImageState(GPUTargets):
    """The file being loaded in the background (and its modification time then), the file whose
    pixels are in "out", and the last failure: (path, modification time, message)."""

    __slots__ = ("failed", "loaded", "loading", "loading_stamp", "pending")

    def __init__(self, path: str = "") -> None:
        super().__init__(path)
        self.pending: concurrent.futures.Future[np.ndarray] | None = None
        self.loading: Path | None = None
        self.loading_stamp: int | None = None
        self.loaded: Path | None = None
        self.failed: tuple[Path, int | None, str] | None = None


@node(
    "gpu.image",
    init_state=ImageState,
    hints={"path": "file"},
    docs={
        "path": "The image file, relative to the patch's folder.",
        "out": "The image as a texture.",
    },
)
def gpu_image(ctx: NodeContext, state: ImageState, path: str = "") -> Texture:
    """Loads a PNG or JPEG file as a texture.

    The texture has the image's own size. The file is decoded in the background:
    until then the node reports deferred and keeps its previous texture. A file that does not
    load fails the node until the path or the file changes. A relative path is relative to the
    patch file's folder."""
    gl = _gpu(ctx)
    if not path:
        return None
    name = path
    resolved = resolve_patch_path(ctx.folder, name, "image")
    if state.loaded == resolved and "out" in state.targets and state.gl is gl:
        return state.targets["out"]
    if state.failed is not None:
        failed_path, failed_stamp, message = state.failed
        if failed_path == resolved and _file_stamp(resolved) == failed_stamp:
            raise OSError(message)  # a new exception each time: nothing piles up on it
        state.failed = None
    if state.loading != resolved or state.pending is None:
        state.loading = resolved
        state.loading_stamp = _file_stamp(resolved)
        state.pending = ctx.submit(_load_image, resolved)
    if not ctx.ready(state.pending):
        raise Deferred(f"loading {shown(name)}")
    pending, state.pending, state.loading = state.pending, None, None
    try:
        pixels = pending.result()
    except Exception as error:  # decoding failed: remembered, so the file is not loaded again
        state.failed = (resolved, state.loading_stamp, _load_failure(shown(name), error))
        raise OSError(state.failed[2]) from None
    if state.gl is not gl:
        state.close()
        state.gl = gl
    target = state.replace("out", gl.upload(pixels))
    state.loaded = resolved
    return target


@node(
    "gpu.from_array",
    init_state=GPUTargets,
    docs={
        "array": "The pixels: HxW or HxWxC, rows top to bottom.",
        "out": "The pixels as a texture.",
    },
)
def gpu_from_array(ctx: NodeContext, state: GPUTargets, array: Array = np.zeros(0)) -> Texture:  # noqa: B008
    """Uploads an image array to the GPU as a texture.

    The array is HxW or HxWxC (C = 1..4, rows top to bottom): uint8 values as they are, other
    numbers as floats in 0..1."""
    gl = _gpu(ctx)
    pixels = np.asarray(array)
    if pixels.size == 0:
        return None
    if pixels.ndim not in (2, 3):
        raise ValueError(f"expected an HxW or HxWxC array, got {pixels.ndim} dimensions")
    check_texture_size((pixels.shape[1], pixels.shape[0]))
    if pixels.dtype != np.uint8:
        pixels = pixels.astype(np.float32)
    if state.gl is not gl:
        state.close()
        state.gl = gl
    return state.replace("out", gl.upload(pixels))


@node(
    "gpu.readback",
    docs={
        "in": "The texture to read.",
        "out": "Its pixels, an HxWx4 uint8 array, rows top to bottom.",
    },
)
def gpu_readback(ctx: NodeContext, in_: Texture = None) -> Array:
    """Copies a texture's pixels back from the GPU into an array.

    The array is HxWx4 uint8, rows top to bottom; for analysis patches: it costs a readback every
    time it runs."""
    if in_ is None:
        return np.zeros((0, 0, 4), np.uint8)
    return _gpu(ctx).readback(in_)


# ----------------------------------------------------------------------------- sinks


@node(
    "gpu.output",
    sink=True,
    docs={
        "in": "The texture to show.",
        "out": "The texture received, for reading.",
    },
)
def gpu_output(in_: Texture = None) -> Texture:
    """A sink: the texture shown in the output window.

    It is also what `patchbay run --out` writes."""
    return in_


@node(
    "gpu.preview",
    sink=True,
    init_state=GPUTargets,
    ranges={"max_side": (1, 4096)},
    docs={
        "in": "The texture to preview.",
        "max_side": "The longest side of the copy, in pixels.",
        "out": "The small copy.",
    },
)
def gpu_preview(ctx: NodeContext, state: GPUTargets, in_: Texture = None,
                max_side: int = 256) -> Texture:  # fmt: skip
    """A sink: a small copy of a texture, for previews in the editor.

    Its longest side is at most `max_side` pixels."""
    if in_ is None:
        return None
    gl = _gpu(ctx)
    width, height = in_.size
    factor = min(1.0, max(1, max_side) / max(width, height))
    size = (max(1, math.floor(width * factor)), max(1, math.floor(height * factor)))
    target = state.get(gl, "out", size)
    gl.render(target, builtin_shader("passthrough"), textures={"src": in_})
    return target
