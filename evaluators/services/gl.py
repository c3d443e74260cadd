"""GL service: the one place where patchbay talks to OpenGL (through moderngl).

What it does:
    * owns (or wraps) a moderngl context and makes it current only around its own work;
    * pools render targets (texture + framebuffer) keyed by (size, components, dtype), counting
      the bytes of the textures it holds (`texture_bytes`); before allocating one it asks the
      memory budget of the patch it serves (`memory`, set by its ExecutionContext;
      evaluators/run/memory_budget.py), freeing its idle targets first when they are in the way;
    * compiles fullscreen-quad fragment shaders once per source text and caches the result,
      including failures, which are raised as `ShaderError` with the driver's line and column
      (a new exception on every call: only the error's data is cached);
    * renders a fragment shader into a target, uploads numpy arrays and reads targets back
      (whole, or scaled down on the GPU first for a small picture: `readback_scaled`);
    * writes PNG frames, encoding them on a worker thread (`GLFrameWriter`);
    * draws N 2D shapes (circles, squares, optionally a sprite texture) in one instanced call
      (`draw_instances`): per-instance position, size and colour from numpy arrays, alpha-blended
      over a cleared target; the instance buffer grows as needed and is reused;
    * times the draws of each node on the GPU while the profiler asks (`time_nodes`,
      `node_gpu_times`; evaluators/insight/gpu_timer.py): a target says which node owns it (`owner`,
      set by the node's `GPUTargets`), and each `render` / `draw_instances` into an owned target is
      one GL timer query, read a few frames later without waiting.

A frame is `with gl.frame(): ...` (`begin_frame()`, then `end_frame()` even when the frame fails),
with the context current throughout.
`release(target)` gives one target back to the pool; `close()` frees the whole service.

What it assumes:
    * OpenGL 3.3 core. Fragment shaders are `#version 330` and read `in vec2 uv` (0..1, origin
      bottom-left, as in GL) and write `out vec4 fragColor`.
    * Every call comes from the thread that owns the context (the GL thread).
    * A standalone EGL context must never stay current between calls: glcontext leaves it current
      when it is created, and a current EGL context breaks Qt's own GLX contexts in the same thread
      and defers its destruction. So it is un-current right after creation and every piece of work
      runs inside a (re-entrant) `with ctx:`.
    * Python references dropped on GL objects do not free them (moderngl's default). The context
      runs with `gc_mode="context_gc"` and `end_frame()` calls `ctx.gc()` at a safe point.
    * Numpy arrays are images with rows top-to-bottom; GL textures have row 0 at the bottom.
      `upload()` and `readback()` flip, so an upload/readback round trip is exact.
"""

from __future__ import annotations

import contextlib
import queue
import re
import struct
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import moderngl
import numpy as np

from evaluators.insight.gpu_timer import GPUTimer
from evaluators.run.memory_budget import MemoryBudgetError, MemoryMeter
from nodes.library.gpu.glsl import builtin_shader

__all__ = [
    "INSTANCE_SHAPES",
    "SHADER_ERROR_PREFIX",
    "VERTEX_SHADER",
    "FrameWriteError",
    "GLFrameWriter",
    "GLService",
    "GLTarget",
    "ShaderError",
    "shader_error_location",
    "texture_alive",
]

Size = tuple[int, int]

#: Shared vertex shader: a fullscreen triangle strip that hands `uv` to the fragment shader.
VERTEX_SHADER = """#version 330
in vec2 in_pos;
out vec2 uv;
void main() {
    uv = in_pos * 0.5 + 0.5;
    gl_Position = vec4(in_pos, 0.0, 1.0);
}
"""

_QUAD = np.array([-1.0, -1.0, 1.0, -1.0, -1.0, 1.0, 1.0, 1.0], dtype="f4")

#: Instanced shapes: each instance is the quad (corners -1..1) placed at `in_position` (0..1,
#: origin bottom-left), `in_size` its radius as a fraction of the target height (so circles stay
#: round), coloured by `in_color` times `tint` sampled at the position (when `use_tint`).
INSTANCE_VERTEX_SHADER = """#version 330
in vec2 in_corner;
in vec2 in_position;
in float in_size;
in vec4 in_color;
uniform vec2 resolution;
uniform sampler2D tint;
uniform bool use_tint;
out vec2 corner;
out vec4 color;
void main() {
    // The quad reaches one pixel beyond the shape, for its anti-aliased edge (and so that a
    // shape smaller than a pixel still covers one, faintly).
    float size = max(abs(in_size), 1e-6);
    corner = in_corner * (1.0 + 1.0 / (size * max(resolution.y, 1.0)));
    color = use_tint ? in_color * texture(tint, in_position) : in_color;
    vec2 half_extent = vec2(size * resolution.y / max(resolution.x, 1.0), size) * 2.0;
    gl_Position = vec4(in_position * 2.0 - 1.0 + corner * half_extent, 0.0, 1.0);
}
"""

#: shape 0: circle, 1: square, both anti-aliased over about one pixel. A sprite (when
#: `use_sprite`) covers the square, row 0 at its bottom, and is multiplied by the colour.
INSTANCE_FRAGMENT_SHADER = """#version 330
in vec2 corner;
in vec4 color;
uniform int shape;
uniform bool use_sprite;
uniform sampler2D sprite;
out vec4 fragColor;
void main() {
    vec4 c = use_sprite ? color * texture(sprite, corner * 0.5 + 0.5) : color;
    // Distance from the centre in corner units: Euclidean for circles, the larger axis for
    // squares; the edge is anti-aliased over about one pixel.
    float r = shape == 0 ? length(corner) : max(abs(corner.x), abs(corner.y));
    float edge = max(fwidth(r), 1e-4);
    float coverage = clamp((1.0 - r) / edge + 0.5, 0.0, 1.0);
    if (coverage <= 0.0) discard;
    fragColor = vec4(c.rgb, c.a * coverage);
}
"""

#: Instance shapes understood by `GLService.draw_instances`.
INSTANCE_SHAPES = {"circle": 0, "square": 1}

# Floats per instance in the instance buffer: x, y, size, r, g, b, a.
_INSTANCE_FLOATS = 7

_DTYPES: dict[str, np.dtype[Any]] = {
    "f1": np.dtype(np.uint8),
    "f2": np.dtype(np.float16),
    "f4": np.dtype(np.float32),
}

_GL_SAMPLER_2D = 0x8B5E


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------

# Mesa "0:3(39): error: msg", NVIDIA "0(3) : error C0000: msg", others "ERROR: 0:3: msg".
# Blanks are matched as `[ \t]*`, never `\s*`: a pattern that can run past the end of its line
# rescans the rest of the log from every line start (quadratic in a log of blank lines).
_ERROR_LINE_RES = (
    re.compile(r"^[ \t]*\d+:(?P<line>\d+)\((?P<col>\d+)\):[ \t]*error:[ \t]*(?P<msg>.*)$", re.M),
    re.compile(r"^[ \t]*\d+\((?P<line>\d+)\)[ \t]*:[ \t]*error[ \t]*\w*:[ \t]*(?P<msg>.*)$", re.M),
    re.compile(r"^[ \t]*ERROR:[ \t]*\d+:(?P<line>\d+):[ \t]*(?P<msg>.*)$", re.M),
)

#: How a node's error text starts when the node failed with a ShaderError.
SHADER_ERROR_PREFIX = "ShaderError: "
# A located ShaderError as `ShaderError.__str__` writes it, read back by `shader_error_location`.
_LOCATED_RE = re.compile(r"line (?P<line>\d+)(?:, column (?P<col>\d+))?: (?P<msg>.*)")

# moderngl's own log framing: "GLSL Compiler failed", "fragment_shader", "Program", "=====".
_LOG_HEADER_RE = re.compile(r"^(GLSL .* failed|\w+_shader|Program|=+)$")


class ShaderError(Exception):
    """A fragment shader failed to compile or link.

    Attributes:
        message: the first error's text without its location, e.g. "syntax error, unexpected '}'".
        line: 1-based source line of the first error, as the driver reports it; None for link
            errors.
        column: column of the first error when the driver reports one (Mesa does), else None.
        log: the driver's full log.
        error_count: number of errors found in the log (at least 1).
    """

    def __init__(
        self,
        message: str,
        line: int | None = None,
        column: int | None = None,
        log: str = "",
        error_count: int = 1,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.log = log or message
        self.error_count = max(1, error_count)

    @classmethod
    def from_log(cls, log: str) -> ShaderError:
        """Build a ShaderError from a driver log (as found in moderngl's exception text)."""
        for pattern in _ERROR_LINE_RES:
            matches = list(pattern.finditer(log))
            if matches:
                first = matches[0]
                col = first.groupdict().get("col")
                return cls(
                    first.group("msg").strip(),
                    line=int(first.group("line")),
                    column=int(col) if col is not None else None,
                    log=log,
                    error_count=len(matches),
                )
        # No located error (e.g. a link failure): use the first meaningful log line.
        lines = [s.strip() for s in log.splitlines() if s.strip()]
        detail = [s for s in lines if not _LOG_HEADER_RE.match(s)]
        text = detail[0] if detail else (lines[0] if lines else "shader failed")
        text = re.sub(r"^error:\s*", "", text)
        return cls(text, log=log)

    def __str__(self) -> str:
        where = ""
        if self.line is not None:
            where = f"line {self.line}"
            if self.column is not None:
                where += f", column {self.column}"
            where += ": "
        more = ""
        if self.error_count > 1:
            others = self.error_count - 1
            more = f" (+{others} more error{'s' if others > 1 else ''})"
        return f"{where}{self.message}{more}"


def shader_error_location(error_text: str) -> tuple[int, int | None, str] | None:
    """(line, column or None, message) of the first error in a node's error text when the node
    failed with a located ShaderError ("ShaderError: line 3, column 5: ..."), else None."""
    if not error_text.startswith(SHADER_ERROR_PREFIX):
        return None
    found = _LOCATED_RE.fullmatch(error_text[len(SHADER_ERROR_PREFIX) :])
    if found is None:
        return None
    column = found.group("col")
    return int(found.group("line")), int(column) if column else None, found.group("msg")


class _Failure(NamedTuple):
    """What is cached for a source that failed: the data of its ShaderError, never a raised
    exception (re-raising one object would grow its traceback, and keep every frame it went
    through alive, on each call)."""

    message: str
    line: int | None
    column: int | None
    log: str
    error_count: int

    @classmethod
    def of(cls, error: ShaderError) -> _Failure:
        return cls(error.message, error.line, error.column, error.log, error.error_count)

    def error(self) -> ShaderError:
        """A new ShaderError with this data."""
        return ShaderError(self.message, self.line, self.column, self.log, self.error_count)


# --------------------------------------------------------------------------------------------
# Targets
# --------------------------------------------------------------------------------------------


@dataclass(eq=False)
class GLTarget:
    """A texture plus the framebuffer that renders into it, owned by a `GLService` pool."""

    texture: moderngl.Texture
    framebuffer: moderngl.Framebuffer
    in_use: bool = field(default=True, repr=False)
    #: The node that draws into it (its id), for GPU timing; None while pooled or unowned.
    owner: str | None = field(default=None, repr=False)

    @property
    def size(self) -> Size:
        """(width, height) in pixels."""
        w, h = self.texture.size
        return (w, h)

    @property
    def components(self) -> int:
        """Channels per pixel, 1..4."""
        return int(self.texture.components)

    @property
    def dtype(self) -> str:
        """moderngl dtype: "f1" (uint8, normalized), "f2" or "f4" (float)."""
        return str(self.texture.dtype)

    @property
    def key(self) -> tuple[Size, int, str]:
        """Pool key: (size, components, dtype)."""
        return (self.size, self.components, self.dtype)


TextureLike = GLTarget | moderngl.Texture


@dataclass
class _Instancing:
    """The instanced-shape program, its quad, and the instance buffer with its vertex array
    (replaced by a larger one when more instances are drawn than it holds)."""

    program: moderngl.Program
    corners: moderngl.Buffer
    buffer: moderngl.Buffer | None = None
    vao: moderngl.VertexArray | None = None
    capacity: int = 0

    def release(self) -> None:
        if self.vao is not None:
            self.vao.release()
        if self.buffer is not None:
            self.buffer.release()
        self.corners.release()
        self.program.release()


@dataclass
class _Compiled:
    program: moderngl.Program
    vao: moderngl.VertexArray
    #: sampler2D uniforms in texture-unit order (sampler i reads unit i).
    samplers: list[str]
    #: other active uniforms with their value right after linking (0, or the GLSL initializer).
    defaults: dict[str, tuple[moderngl.Uniform, bytes]]


# --------------------------------------------------------------------------------------------
# The service
# --------------------------------------------------------------------------------------------


class GLService:
    """Render targets, shader programs, fullscreen passes, upload and readback on one GL context.

    Create it with `GLService.standalone()` (headless EGL) or `GLService.from_context(ctx)`.
    All methods must be called from the thread that owns the context.
    """

    #: Free targets kept per pool key; more are queued and freed at `end_frame()`.
    max_free_per_key = 8
    #: Free targets whose key was not acquired for this many frames are freed at `end_frame()`.
    max_idle_frames = 120
    #: Compiled (or failed) fragment sources kept; the least recently used are released.
    max_programs = 256

    def __init__(
        self, ctx: moderngl.Context, *, owns_context: bool, size: Size = (1280, 720)
    ) -> None:
        """Prefer `standalone()` or `from_context()`."""
        self.ctx = ctx
        self._owns_context = owns_context
        self._depth = 0
        self._closed = False
        self._default_size: Size = _check_size(size)
        self._free: dict[tuple[Size, int, str], list[GLTarget]] = {}
        self._last_used: dict[tuple[Size, int, str], int] = {}
        self._doomed: list[GLTarget] = []
        self._allocated = 0
        self._in_use = 0
        self.texture_bytes = 0  # of every target allocated and not destroyed, in use or pooled
        self.memory: MemoryMeter | None = None
        self._programs: OrderedDict[str, _Compiled | _Failure] = OrderedDict()
        self._readback_buffers: dict[Size, np.ndarray] = {}
        self.frame_index = 0
        self.readback_count = 0
        self.readback_total = 0
        self.last_frame_readbacks = 0
        self._instancing: _Instancing | None = None
        self._timer: GPUTimer | None = None  # made when GPU timing is first asked for
        if ctx.gc_mode is None:
            ctx.gc_mode = "context_gc"
        with self.current():
            self._quad = ctx.buffer(_QUAD.tobytes())
            self._blank = ctx.texture((1, 1), 4, bytes(4))

    # -- construction ----------------------------------------------------------------------

    @classmethod
    def standalone(cls, size: Size = (1280, 720), *, device_index: int | None = None) -> GLService:
        """Create a headless service on a new standalone EGL context (needs no display).

        `size` is the default patch resolution. The context is released by `close()`.
        """
        kwargs: dict[str, Any] = {"backend": "egl", "require": 330}
        if device_index is not None:
            kwargs["device_index"] = device_index
        ctx = moderngl.create_standalone_context(**kwargs)
        ctx.__exit__(None, None, None)  # glcontext leaves it current; never keep it current.
        ctx.gc_mode = "context_gc"
        return cls(ctx, owns_context=True, size=size)

    @classmethod
    def from_context(cls, ctx: moderngl.Context, size: Size = (1280, 720)) -> GLService:
        """Wrap an existing moderngl context (e.g. one made with a Qt loader).

        The service makes it current with `with ctx:` around its work; the caller keeps
        ownership, and `close()` frees only what the service created. If the context's
        `gc_mode` is None it is switched to "context_gc".
        """
        return cls(ctx, owns_context=False, size=size)

    @contextlib.contextmanager
    def current(self) -> Iterator[moderngl.Context]:
        """Make the context current for the duration of the block (re-entrant)."""
        if self._closed:
            raise RuntimeError("GLService is closed")
        if self._depth == 0:
            self.ctx.__enter__()
        self._depth += 1
        try:
            yield self.ctx
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.ctx.__exit__(None, None, None)

    @property
    def default_size(self) -> Size:
        """The patch resolution (width, height) used when a size is not given."""
        return self._default_size

    @default_size.setter
    def default_size(self, size: Size) -> None:
        self._default_size = _check_size(size)

    @property
    def info(self) -> dict[str, Any]:
        """Driver strings (GL_VENDOR, GL_RENDERER, GL_VERSION, ...)."""
        with self.current():
            return dict(self.ctx.info)

    # -- frames ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def frame(self, *, finish: bool = True) -> Iterator[None]:
        """One frame: `begin_frame()`, the block, then `end_frame(finish=finish)` even when the
        block raises. The context stays current for the whole frame: one switch in and one back,
        not two per pass (a switch away from a window's context and back costs round trips to
        the display server, slow when another process keeps it busy)."""
        with self.current():
            self.begin_frame()
            try:
                yield
            finally:
                self.end_frame(finish=finish)

    def begin_frame(self) -> None:
        """Start a frame: resets the per-frame readback counter."""
        self.readback_count = 0

    def end_frame(self, *, finish: bool = True) -> None:
        """Finish a frame: wait for the GPU (`finish=True`), free queued and idle targets and
        collect GL objects whose Python references were dropped (`ctx.gc()`)."""
        with self.current():
            if finish:
                self.ctx.finish()
            self._drop_idle()
            for target in self._doomed:
                self._destroy(target)
            self._doomed.clear()
            self._collect_garbage()
        self.last_frame_readbacks = self.readback_count
        self.frame_index += 1

    # -- GPU time per node -----------------------------------------------------------------

    def time_nodes(self, token: Any) -> None:
        """Time the draws into owned targets from now on as one frame reported with `token`
        (closing the frame timed before); None: this frame is not timed. The profiler calls it
        as each frame begins, with a token on its sampled frames. Does nothing once the service
        is closed."""
        timer = self._timer
        if self._closed:
            return
        if timer is None:
            if token is None:
                return
            self.node_timing_problem()
            timer = self._timer
            assert timer is not None
        if token is None and not timer.armed:
            timer.arm(None)  # counts the frame (results are read frames later); no GL call
            return
        with self.current():
            timer.arm(token)

    def node_gpu_times(self) -> list[tuple[Any, dict[str, float]]]:
        """(token, GPU seconds per node) of the timed frames whose results are in, at least
        `GPUTimer.lag` frames after they were timed; never waits for the GPU."""
        timer = self._timer
        if timer is None or not timer.pending or self._closed:
            return []
        with self.current():
            return timer.collect()

    def node_timing_problem(self) -> str:
        """Why draws cannot be timed on this context; "" when they can."""
        if self._closed:
            return "the GL service is closed"
        if self._timer is None:
            with self.current():
                self._timer = GPUTimer(self.ctx)
                if self._timer.available:
                    scratch = self.acquire((1, 1))
                    try:
                        self._timer.warm_up(lambda: self.clear(scratch))
                    finally:
                        self.release(scratch)
        return self._timer.problem

    @contextlib.contextmanager
    def _timed(self, target: GLTarget) -> Iterator[None]:
        """Time the block as a draw by `target`'s owner, when nodes are being timed."""
        timer = self._timer
        if timer is None or not timer.armed:
            yield
            return
        with self.current():
            timed = timer.open(target.owner)
            try:
                yield
            finally:
                if timed:
                    timer.close()

    # -- pool ------------------------------------------------------------------------------

    def acquire(self, size: Size | None = None, components: int = 4, dtype: str = "f1") -> GLTarget:
        """Take a render target from the pool (or allocate one). Give it back with `release()`.

        `size` defaults to `default_size`. Contents are undefined (whatever was rendered last).
        Textures sample with linear filtering and clamp to edge.
        """
        size = _check_size(size if size is not None else self._default_size)
        if components not in (1, 2, 3, 4):
            raise ValueError(f"components must be 1..4, got {components}")
        if dtype not in _DTYPES:
            raise ValueError(f"dtype must be one of {sorted(_DTYPES)}, got {dtype!r}")
        key = (size, components, dtype)
        self._last_used[key] = self.frame_index
        free = self._free.get(key)
        if free:
            target = free.pop()
            target.owner = None
        else:
            nbytes = size[0] * size[1] * components * _DTYPES[dtype].itemsize
            self._make_room(nbytes, f"a {size[0]}x{size[1]} texture")
            with self.current():
                texture = self.ctx.texture(size, components, dtype=dtype)
                texture.filter = (moderngl.LINEAR, moderngl.LINEAR)
                texture.repeat_x = False
                texture.repeat_y = False
                target = GLTarget(texture, self.ctx.framebuffer(color_attachments=[texture]))
            self._allocated += 1
            self.texture_bytes += nbytes
        target.in_use = True
        self._in_use += 1
        return target

    def _make_room(self, nbytes: int, what: str) -> None:
        """MemoryBudgetError when `nbytes` more would pass the memory budget even after freeing
        the pooled targets nobody uses."""
        if self.memory is None:
            return
        try:
            self.memory.check(nbytes, what)
        except MemoryBudgetError:
            self.trim()
            self.memory.check(nbytes, what)

    def release(self, target: GLTarget) -> None:
        """Give `target` back to the pool. Releasing a target twice raises ValueError; use
        `close()` to free the whole service."""
        if target is None:
            raise TypeError("release() needs a target; close() frees the service")
        if not target.in_use:
            raise ValueError("target was already released")
        target.in_use = False
        self._in_use -= 1
        free = self._free.setdefault(target.key, [])
        if len(free) < self.max_free_per_key and texture_alive(target):  # never hand out a dead one
            free.append(target)
        else:
            self._doomed.append(target)

    def trim(self) -> None:
        """Free every pooled target that is not in use."""
        with self.current():
            for free in self._free.values():
                for target in free:
                    self._destroy(target)
            self._free.clear()
            for target in self._doomed:
                self._destroy(target)
            self._doomed.clear()

    def pool_stats(self) -> dict[str, int]:
        """Counts of pooled targets: allocated (alive), free (in the pool), in_use (handed out),
        pending (queued to be freed at end_frame), keys (distinct size/format keys with free
        targets)."""
        free = sum(len(v) for v in self._free.values())
        return {
            "allocated": self._allocated,
            "free": free,
            "in_use": self._in_use,
            "pending": len(self._doomed),
            "keys": sum(1 for v in self._free.values() if v),
        }

    # -- programs --------------------------------------------------------------------------

    def shader_error(self, fragment_src: str) -> ShaderError | None:
        """A new ShaderError for `fragment_src`, or None if it compiles (compiling it now if
        it was not yet: programs are compiled once per source, failures included)."""
        entry = self._entry(fragment_src)
        return entry.error() if isinstance(entry, _Failure) else None

    def _compiled(self, fragment_src: str) -> _Compiled:
        entry = self._entry(fragment_src)
        if isinstance(entry, _Failure):
            raise entry.error()
        return entry

    def _entry(self, fragment_src: str) -> _Compiled | _Failure:
        entry = self._programs.get(fragment_src)
        if entry is None:
            entry = self._compile(fragment_src)
            self._programs[fragment_src] = entry
            self._evict_programs()
        else:
            self._programs.move_to_end(fragment_src)
        return entry

    def _compile(self, fragment_src: str) -> _Compiled | _Failure:
        with self.current():
            try:
                program = self.ctx.program(
                    vertex_shader=VERTEX_SHADER, fragment_shader=fragment_src
                )
            except moderngl.Error as exc:
                return _Failure.of(ShaderError.from_log(str(exc)))
            vao = self.ctx.vertex_array(program, [(self._quad, "2f", "in_pos")])
            samplers: list[str] = []
            defaults: dict[str, tuple[moderngl.Uniform, bytes]] = {}
            for name in program:
                member = program[name]
                if not isinstance(member, moderngl.Uniform):
                    continue
                if getattr(member, "gl_type", None) == _GL_SAMPLER_2D:
                    member.value = len(samplers)
                    samplers.append(name)
                else:
                    defaults[name] = (member, member.read())
        return _Compiled(program, vao, samplers, defaults)

    def _evict_programs(self) -> None:
        while len(self._programs) > self.max_programs:
            _, entry = self._programs.popitem(last=False)
            if isinstance(entry, _Compiled):
                with self.current():
                    entry.vao.release()
                    entry.program.release()

    # -- rendering -------------------------------------------------------------------------

    def render(
        self,
        target: GLTarget,
        fragment_src: str,
        uniforms: Mapping[str, Any] | None = None,
        textures: Mapping[str, TextureLike | None] | None = None,
    ) -> None:
        """Draw a fullscreen quad with `fragment_src` into `target`.

        `uniforms` maps names to values (numbers, or sequences for vectors); names the program
        does not have (unknown, or optimized away by the compiler) are ignored, and uniforms not
        given get their initial value (0, or the GLSL initializer), so nothing carries over from
        an earlier render. `textures` maps sampler2D names to targets or moderngl textures;
        samplers left unbound read transparent black. A `resolution` uniform, if present and
        not given, is set to the target size in pixels.

        Raises ShaderError if the source does not compile, ValueError for a badly shaped value
        or for a sampler bound to `target` itself (use two targets and swap them for feedback).
        """
        compiled = self._compiled(fragment_src)
        textures = textures or {}
        values = uniforms or {}
        with self.current(), self._timed(target):
            for unit, name in enumerate(compiled.samplers):
                source = textures.get(name)
                texture = source.texture if isinstance(source, GLTarget) else source
                if texture is not None and texture is target.texture:
                    raise ValueError(f"sampler {name!r} reads the target being rendered")
                if texture is not None and not texture_alive(texture):
                    raise ValueError(f"sampler {name!r}: its texture was released")
                (texture or self._blank).use(unit)
            # Programs are shared by every node using the same source, so each uniform is
            # written on every render: the given value, or the one it had after linking.
            for name, (member, default) in compiled.defaults.items():
                if name in values:
                    _set_uniform(member, name, values[name])
                elif name == "resolution":
                    _set_uniform(member, name, target.size)
                else:
                    member.write(default)
            target.framebuffer.use()
            self.ctx.viewport = (0, 0, *target.size)
            compiled.vao.render(moderngl.TRIANGLE_STRIP)

    def draw_instances(
        self,
        target: GLTarget,
        positions: np.ndarray,
        sizes: np.ndarray,
        colors: np.ndarray,
        *,
        shape: str = "circle",
        sprite: TextureLike | None = None,
        tint: TextureLike | None = None,
        background: Sequence[float] = (0.0, 0.0, 0.0, 0.0),
    ) -> None:
        """Clear `target` to `background`, then draw one shape per row in a single instanced
        call, each alpha-blended ("over") onto what is there.

        `positions` is Nx2 (0..1, origin bottom-left), `sizes` N (radius, or half the square's
        side, as a fraction of the target height), `colors` Nx4 (RGBA 0..1). `shape` is one of
        INSTANCE_SHAPES; a `sprite` texture covers each shape's square (multiplied by its
        colour); a `tint` texture, sampled at each position, multiplies the colour. N may be 0.
        ValueError for arrays that do not fit together, an unknown shape, or a sampler reading
        `target`.
        """
        if shape not in INSTANCE_SHAPES:
            raise ValueError(f"unknown shape {shape!r} (use {', '.join(INSTANCE_SHAPES)})")
        count = len(positions)
        if positions.shape != (count, 2) or sizes.shape != (count,) or colors.shape != (count, 4):
            raise ValueError(
                f"instances: positions {positions.shape}, sizes {sizes.shape} and colors "
                f"{colors.shape} must be Nx2, N and Nx4"
            )
        for name, source in (("sprite", sprite), ("tint", tint)):
            texture = source.texture if isinstance(source, GLTarget) else source
            if texture is not None and texture is target.texture:
                raise ValueError(f"sampler {name!r} reads the target being rendered")
            if texture is not None and not texture_alive(texture):
                raise ValueError(f"sampler {name!r}: its texture was released")
        with self._timed(target):
            self._draw_instances(target, positions, sizes, colors, shape, sprite, tint, background)

    def _draw_instances(
        self,
        target: GLTarget,
        positions: np.ndarray,
        sizes: np.ndarray,
        colors: np.ndarray,
        shape: str,
        sprite: TextureLike | None,
        tint: TextureLike | None,
        background: Sequence[float],
    ) -> None:
        """The drawing of `draw_instances`, its arguments checked."""
        count = len(positions)
        self.clear(target, background)
        if count == 0:
            return
        data = np.empty((count, _INSTANCE_FLOATS), np.float32)
        data[:, 0:2] = positions
        data[:, 2] = sizes
        data[:, 3:7] = colors
        with self.current():
            instancing = self._instancing_for(count)
            assert instancing.buffer is not None and instancing.vao is not None
            instancing.buffer.write(data.tobytes())
            program = instancing.program
            _set_uniform_if_present(program, "resolution", target.size)
            _set_uniform_if_present(program, "shape", INSTANCE_SHAPES[shape])
            _set_uniform_if_present(program, "use_sprite", sprite is not None)
            _set_uniform_if_present(program, "use_tint", tint is not None)
            for unit, (name, source) in enumerate((("sprite", sprite), ("tint", tint))):
                texture = source.texture if isinstance(source, GLTarget) else source
                (texture or self._blank).use(unit)
                _set_uniform_if_present(program, name, unit)
            target.framebuffer.use()
            self.ctx.viewport = (0, 0, *target.size)
            self.ctx.enable(moderngl.BLEND)
            # "Over" for straight alpha: colour by the source alpha, alpha accumulated. moderngl
            # takes four factors (colour, then alpha); its type stubs only know the two-factor form.
            self.ctx.blend_func = (  # type: ignore[assignment]
                moderngl.SRC_ALPHA,
                moderngl.ONE_MINUS_SRC_ALPHA,
                moderngl.ONE,
                moderngl.ONE_MINUS_SRC_ALPHA,
            )
            try:
                instancing.vao.render(moderngl.TRIANGLE_STRIP, vertices=4, instances=count)
            finally:
                self.ctx.disable(moderngl.BLEND)  # fullscreen passes draw unblended

    def _instancing_for(self, count: int) -> _Instancing:
        """The instancing program, with an instance buffer for at least `count` instances."""
        instancing = self._instancing
        if instancing is None:
            program = self.ctx.program(
                vertex_shader=INSTANCE_VERTEX_SHADER, fragment_shader=INSTANCE_FRAGMENT_SHADER
            )
            instancing = self._instancing = _Instancing(program, self.ctx.buffer(_QUAD.tobytes()))
        if count > instancing.capacity:
            capacity = max(count, 2 * instancing.capacity, 256)
            if instancing.vao is not None:
                instancing.vao.release()
            if instancing.buffer is not None:
                instancing.buffer.release()
            instancing.buffer = self.ctx.buffer(reserve=capacity * _INSTANCE_FLOATS * 4)
            instancing.vao = self.ctx.vertex_array(
                instancing.program,
                [
                    (instancing.corners, "2f", "in_corner"),
                    (instancing.buffer, "2f 1f 4f/i", "in_position", "in_size", "in_color"),
                ],
            )
            instancing.capacity = capacity
        return instancing

    def clear(self, target: GLTarget, color: Sequence[float] = (0.0, 0.0, 0.0, 0.0)) -> None:
        """Fill `target` with `color` (RGBA, 0..1)."""
        r, g, b, a = (float(c) for c in color)
        with self.current():
            target.framebuffer.clear(r, g, b, a)

    # -- upload / readback -----------------------------------------------------------------

    def upload(self, array: np.ndarray) -> GLTarget:
        """Upload an image array (rows top-to-bottom) into a pooled target and return it.

        Accepts HxW or HxWxC (C = 1..4), dtype uint8 (-> "f1") or float32 (-> "f4").
        """
        image = np.asarray(array)
        if image.ndim == 2:
            image = image[:, :, np.newaxis]
        if image.ndim != 3 or not 1 <= image.shape[2] <= 4:
            raise ValueError(f"expected an HxW or HxWxC (C=1..4) array, got shape {image.shape}")
        if image.dtype == np.uint8:
            dtype = "f1"
        elif image.dtype == np.float32:
            dtype = "f4"
        else:
            raise ValueError(f"expected uint8 or float32 pixels, got {image.dtype}")
        height, width, components = image.shape
        target = self.acquire((width, height), components, dtype)
        with self.current():
            target.texture.write(np.ascontiguousarray(image[::-1]), alignment=1)
        return target

    def readback(self, target: GLTarget) -> np.ndarray:
        """Read `target` as an HxWx4 uint8 array, rows top-to-bottom (a new array).

        Targets that are not RGBA8 are first converted by a GPU pass (GL rules: missing
        channels read as 0, alpha as 1; floats are clamped). Counts in `readback_count`.
        """
        if not texture_alive(target):
            raise ValueError("readback of a released texture")
        with self.current():
            source = target
            converted = None
            if target.components != 4 or target.dtype != "f1":
                converted = self.acquire(target.size, 4, "f1")
                self.render(converted, builtin_shader("passthrough"), textures={"src": target})
                source = converted
            width, height = source.size
            buffer = self._readback_buffers.get((width, height))
            if buffer is None:
                buffer = np.empty((height, width, 4), np.uint8)
                self._readback_buffers[(width, height)] = buffer
            source.texture.read_into(buffer, alignment=1)
            if converted is not None:
                self.release(converted)
        self.readback_count += 1
        self.readback_total += 1
        return buffer[::-1].copy()

    def readback_scaled(self, source: TextureLike, size: Size) -> np.ndarray:
        """`source` drawn at `size` by a GPU pass (linear filtering) into a pooled target, read
        back as by `readback()`: a thumbnail for the price of one small readback (counted)."""
        small = self.acquire(size)
        try:
            self.render(small, builtin_shader("passthrough"), textures={"src": source})
            return self.readback(small)
        finally:
            self.release(small)

    def to_png(self, target: GLTarget, path: str | Path, compress_level: int = 1) -> Path:
        """Read `target` back and save it as an RGBA PNG at `path` (Pillow). Returns the path."""
        path = Path(path)
        _save_png(self.readback(target), path, compress_level)
        return path

    # -- teardown --------------------------------------------------------------------------

    def _destroy(self, target: GLTarget) -> None:
        self.texture_bytes -= _target_bytes(target)
        target.framebuffer.release()
        target.texture.release()
        self._allocated -= 1

    def _drop_idle(self) -> None:
        for key, free in self._free.items():
            if free and self.frame_index - self._last_used.get(key, 0) > self.max_idle_frames:
                self._doomed.extend(free)
                free.clear()

    def _collect_garbage(self) -> int:
        """`ctx.gc()`, tolerating already released objects.

        moderngl 5.13 queues an object for `ctx.gc()` when its Python wrapper is dropped even if
        it was released explicitly before; `ctx.gc()` then fails on the invalid leftover.
        """
        objects = self.ctx.objects
        count = 0
        while objects:
            release = getattr(objects.popleft(), "release", None)
            if release is not None:
                release()
                count += 1
        return count

    def close(self) -> None:
        """Free everything the service owns; it is unusable afterwards. A standalone context is
        released too. Closing twice does nothing."""
        if self._closed:
            return
        with self.current():
            self.trim()
            for entry in self._programs.values():
                if isinstance(entry, _Compiled):
                    entry.vao.release()
                    entry.program.release()
            self._programs.clear()
            if self._instancing is not None:
                self._instancing.release()
                self._instancing = None
            self._quad.release()
            self._blank.release()
            if self._timer is not None:
                self._timer.release()
            self._collect_garbage()
        # Targets still handed out are freed with the context (standalone) or left to the
        # context's owner; either way they must not be used any more.
        self._readback_buffers.clear()
        self._closed = True
        if self._owns_context:
            # Already un-current (the `with` above exited): EGL really destroys it now.
            self.ctx.release()

    @property
    def closed(self) -> bool:
        """True after `close()`."""
        return self._closed


def _target_bytes(target: GLTarget) -> int:
    (width, height), components, dtype = target.key
    return width * height * components * _DTYPES[dtype].itemsize


def texture_alive(source: TextureLike) -> bool:
    """Whether a target's (or a bare) texture still exists: not released, by its owner or by a
    failed allocation that replaced it."""
    texture = source.texture if isinstance(source, GLTarget) else source
    return not isinstance(getattr(texture, "mglo", None), moderngl.InvalidObject)


def _check_size(size: Sequence[int]) -> Size:
    width, height = (int(v) for v in size)
    if width <= 0 or height <= 0:
        raise ValueError(f"size must be positive, got {tuple(size)}")
    return (width, height)


def _set_uniform(member: moderngl.Uniform, name: str, value: Any) -> None:
    """Write `value` to a uniform, converting numbers to the uniform's base type."""
    fmt = str(getattr(member, "fmt", "") or "")
    convert: type = int if fmt.endswith(("i", "I")) else float
    dimension = int(member.dimension or 1)
    length = int(member.array_length or 1)
    try:
        flat = [convert(v) for v in np.asarray(value, dtype=np.float64).ravel()]
        if len(flat) != dimension * length:
            raise ValueError(f"expects {dimension * length} value(s), got {len(flat)}")
        if length > 1:
            rows = [flat[i * dimension : (i + 1) * dimension] for i in range(length)]
            member.value = rows if dimension > 1 else [row[0] for row in rows]
        elif dimension > 1:
            member.value = tuple(flat)
        else:
            member.value = flat[0]
    except (TypeError, ValueError, struct.error) as exc:
        raise ValueError(f"uniform {name!r}: {exc}") from exc


def _set_uniform_if_present(program: moderngl.Program, name: str, value: Any) -> None:
    """Set a uniform the compiler kept (unused ones are optimized away)."""
    member = program.get(name, None)
    if isinstance(member, moderngl.Uniform):
        _set_uniform(member, name, value)


def _save_png(image: np.ndarray, path: Path, compress_level: int) -> None:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image, "RGBA").save(path, format="PNG", compress_level=compress_level)


# --------------------------------------------------------------------------------------------
# PNG frame writer
# --------------------------------------------------------------------------------------------


class FrameWriteError(RuntimeError):
    """PNG frames cannot be written (the folder cannot be made, or a file cannot be saved)."""


def _reason(error: BaseException) -> str:
    """One line: an OSError's reason and file, else the error's first line."""
    if isinstance(error, OSError) and error.strerror:
        where = f": {error.filename}" if error.filename else ""
        return f"{error.strerror}{where}"
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


class GLFrameWriter:
    """Writes numbered PNG frames; reads back on the GL thread, encodes on a worker thread.

    Usage::

        with GLFrameWriter(gl, "out/") as writer:
            for ...:
                writer.write(target)        # readback now, encoding happens in the background

    At most `max_pending` frames wait for encoding; `write()` blocks beyond that. A folder that
    cannot be made raises FrameWriteError at once; the first encoding error is raised as a
    FrameWriteError by the next `write()` or by `close()`.
    """

    def __init__(
        self,
        gl: GLService,
        out_dir: str | Path,
        pattern: str = "frame_{:05d}.png",
        *,
        max_pending: int = 8,
        compress_level: int = 1,
    ) -> None:
        self.gl = gl
        self.out_dir = Path(out_dir)
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            reason = error.strerror or _reason(error)
            raise FrameWriteError(f"cannot make {self.out_dir}: {reason}") from error
        self.pattern = pattern
        self.compress_level = compress_level
        self.frames_written = 0
        self._next_index = 0
        self._error: BaseException | None = None
        self._queue: queue.Queue[tuple[np.ndarray, Path] | None] = queue.Queue(max_pending)
        self._thread = threading.Thread(target=self._run, name="png-writer", daemon=True)
        self._thread.start()
        self._closed = False

    def write(self, target: GLTarget, index: int | None = None) -> Path:
        """Read `target` back now and queue it for encoding; returns the file path."""
        if self._closed:
            raise RuntimeError("GLFrameWriter is closed")
        self._raise_pending_error()
        if index is None:
            index = self._next_index
        self._next_index = index + 1
        path = self.out_dir / self.pattern.format(index)
        self._queue.put((self.gl.readback(target), path))
        return path

    def close(self) -> None:
        """Wait for queued frames to be written and stop the worker."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join()
        self._raise_pending_error()

    def __enter__(self) -> GLFrameWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _raise_pending_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise FrameWriteError(f"writing a PNG frame failed: {_reason(error)}") from error

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            image, path = item
            if self._error is not None:
                continue  # drain after a failure; the error is reported on the GL thread
            try:
                _save_png(image, path, self.compress_level)
                self.frames_written += 1
            except Exception as exc:  # reported to the caller, not lost in the thread
                self._error = exc
