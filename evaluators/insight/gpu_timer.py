"""GPU time per node: GL timer queries, read a few frames late so the pipeline never stalls.

The GL service (evaluators/services/gl.py) owns one `GPUTimer`. While the profiler asks for it
(`arm(token)` at the start of each frame it samples, `arm(None)` at the start of the others, which
costs no GL call when nothing is being timed), every draw into a target a
node owns is wrapped in a GL_TIME_ELAPSED query labelled with that node (`open(owner)` / `close()`;
one query at a time: GL forbids nesting them, so a draw made inside another's span is counted in
it). A frame's queries form a slot; arming the next frame closes the slot and calls glFlush, which
submits the work without waiting for it.

`collect()` returns `(token, {node: seconds})` for slots armed at least `lag` frames ago whose
queries all report GL_QUERY_RESULT_AVAILABLE; only then is GL_QUERY_RESULT read, which therefore
returns at once. So no call here ever waits for the GPU: a slot that is not ready stays queued (at
most `max_pending` slots, `max_age` frames; older ones are dropped and counted in `dropped`).
A node drawing several times in a frame gets the sum of its draws.

A result is kept only if it is at most the wall time since its slot was armed (`invalid` counts
the others): Mesa's llvmpipe (22.3) answers a query whose begin no rasterizer thread saw with its
raw end timestamp (seconds since boot), which moderngl's 32-bit `Query.elapsed` shows as
0xFFFFFFFF. There it happened to the first query of a context only, and one query waited for when
the timer is made (`warm_up`: a clear of a 1x1 target, once) prevents it.

moderngl 5.13's own `Query` reads with GL_QUERY_RESULT (it waits), has no availability check, no
`release` and a 32-bit result, so the five GL entry points needed are resolved from the context's
loader (`ctx.mglo._context.load_opengl_function`: glcontext's EGL loader, or an app's Qt loader)
and called through ctypes. A context without them (GL < 3.3 and no GL_ARB_timer_query, or a
loader that cannot resolve them) has no timer: `available` is False and `problem` says why.

Assumes: every call comes from the GL thread with the context current (the service makes it so).
"""

from __future__ import annotations

import ctypes
import time
from collections import deque
from collections.abc import Callable
from typing import Any

GL_TIME_ELAPSED = 0x88BF
GL_QUERY_RESULT = 0x8866
GL_QUERY_RESULT_AVAILABLE = 0x8867

_UINT = ctypes.c_uint
_SIGNATURES: dict[str, tuple[Any, ...]] = {
    "glGenQueries": (None, ctypes.c_int, ctypes.POINTER(_UINT)),
    "glDeleteQueries": (None, ctypes.c_int, ctypes.POINTER(_UINT)),
    "glBeginQuery": (None, _UINT, _UINT),
    "glEndQuery": (None, _UINT),
    "glGetQueryObjectiv": (None, _UINT, _UINT, ctypes.POINTER(ctypes.c_int)),
    "glGetQueryObjectui64v": (None, _UINT, _UINT, ctypes.POINTER(ctypes.c_uint64)),
    "glFlush": (None,),
    "glFinish": (None,),
}
_BATCH = 32  # query names made at once


class _Slot:
    """One frame's spans: (owner, query name) in draw order."""

    __slots__ = ("armed_at", "spans", "started", "token")

    def __init__(self, token: Any, armed_at: int) -> None:
        self.token = token
        self.armed_at = armed_at
        self.started = time.perf_counter()
        self.spans: list[tuple[str, int]] = []


class GPUTimer:
    """Timer queries per node per frame; see the module note."""

    lag = 3
    max_pending = 16
    max_age = 120
    #: Draws timed in one frame at most: a frame nobody closes (its profiler went away while
    #: others draw on) stops timing there.
    max_spans = 4096

    def __init__(self, ctx: Any) -> None:
        self.available = False
        self.problem = ""
        self.dropped = 0
        self.invalid = 0
        self._gl: dict[str, Any] = {}
        self._free: list[int] = []
        self._slot: _Slot | None = None
        self._pending: deque[_Slot] = deque()
        self._open = False
        self._arms = 0
        self._status = ctypes.c_int()
        self._result = ctypes.c_uint64()
        version = int(getattr(ctx, "version_code", 0) or 0)
        if version < 330 and "GL_ARB_timer_query" not in ctx.extensions:
            self.problem = f"no GL timer queries (OpenGL {version / 100:.1f}, no ARB_timer_query)"
            return
        loader = getattr(getattr(ctx, "mglo", None), "_context", None)
        load = getattr(loader, "load_opengl_function", None)
        if load is None:
            self.problem = "no GL timer queries (the context's loader cannot resolve functions)"
            return
        for name, (result, *args) in _SIGNATURES.items():
            try:
                address = int(load(name) or 0)
            except Exception as error:  # a foreign loader: any failure means no timer
                self.problem = f"no GL timer queries ({name}: {error})"
                return
            if not address:
                self.problem = f"no GL timer queries ({name} is not available)"
                return
            self._gl[name] = ctypes.CFUNCTYPE(result, *args)(address)
        self.available = True

    @property
    def armed(self) -> bool:
        """Whether draws are being timed (a frame is armed)."""
        return self._slot is not None

    @property
    def pending(self) -> int:
        """Frames whose results are not read yet."""
        return len(self._pending)

    def arm(self, token: Any) -> None:
        """Close the current frame's slot (flushing its work) and, unless `token` is None, time
        the draws that follow as a new frame reported with `token`."""
        slot = self._slot
        self._slot = None
        if slot is not None and slot.spans:
            if self._open:
                self.close()
            self._gl["glFlush"]()
            self._pending.append(slot)
            while len(self._pending) > self.max_pending:
                self._drop(self._pending.popleft())
        self._arms += 1
        if token is not None and self.available:
            self._slot = _Slot(token, self._arms)

    def warm_up(self, draw: Callable[[], None]) -> None:
        """Time `draw` once, wait for it and forget the result (see the module note); the only
        call that waits, made once when the service makes the timer."""
        if not self.available:
            return
        names = (_UINT * 1)()
        self._gl["glGenQueries"](1, names)
        self._gl["glBeginQuery"](GL_TIME_ELAPSED, names[0])
        try:
            draw()
        finally:
            self._gl["glEndQuery"](GL_TIME_ELAPSED)
        self._gl["glFinish"]()
        self._gl["glGetQueryObjectui64v"](names[0], GL_QUERY_RESULT, ctypes.byref(self._result))
        self._free.append(names[0])

    def open(self, owner: str | None) -> bool:
        """Begin a query for a draw by `owner`; False (nothing begun) when not armed, for a
        draw nobody owns, or inside another span."""
        slot = self._slot
        if slot is None or owner is None or self._open or len(slot.spans) >= self.max_spans:
            return False
        if not self._free:
            names = (_UINT * _BATCH)()
            self._gl["glGenQueries"](_BATCH, names)
            self._free.extend(reversed(list(names)))
        query = self._free.pop()
        self._gl["glBeginQuery"](GL_TIME_ELAPSED, query)
        slot.spans.append((owner, query))
        self._open = True
        return True

    def close(self) -> None:
        """End the query `open` began."""
        self._gl["glEndQuery"](GL_TIME_ELAPSED)
        self._open = False

    def collect(self) -> list[tuple[Any, dict[str, float]]]:
        """(token, seconds per owner) of every frame armed at least `lag` frames ago whose results
        are available, oldest first; never waits (see the module note)."""
        found: list[tuple[Any, dict[str, float]]] = []
        pending = self._pending
        while pending and self._arms - pending[0].armed_at >= self.lag:
            slot = pending[0]
            if not self._ready(slot):
                if self._arms - slot.armed_at > self.max_age:
                    self._drop(pending.popleft())
                    continue
                break
            pending.popleft()
            found.append((slot.token, self._read(slot)))
        return found

    def _ready(self, slot: _Slot) -> bool:
        status, get = self._status, self._gl["glGetQueryObjectiv"]
        for _, query in reversed(slot.spans):
            get(query, GL_QUERY_RESULT_AVAILABLE, ctypes.byref(status))
            if not status.value:
                return False
        return True

    def _read(self, slot: _Slot) -> dict[str, float]:
        limit = (time.perf_counter() - slot.started) * 1e9
        result, get = self._result, self._gl["glGetQueryObjectui64v"]
        times: dict[str, float] = {}
        for owner, query in slot.spans:
            get(query, GL_QUERY_RESULT, ctypes.byref(result))
            self._free.append(query)
            if result.value > limit:
                self.invalid += 1
                continue
            times[owner] = times.get(owner, 0.0) + result.value * 1e-9
        return times

    def _drop(self, slot: _Slot) -> None:
        """Forget a slot whose results never came: its query names are deleted, not reused."""
        self.dropped += 1
        self._delete([query for _, query in slot.spans])

    def _delete(self, queries: list[int]) -> None:
        if queries and self.available:
            self._gl["glDeleteQueries"](len(queries), (_UINT * len(queries))(*queries))

    def release(self) -> None:
        """Delete every query name (the context must be current); the timer stops."""
        self.arm(None)
        while self._pending:
            self._delete([query for _, query in self._pending.popleft().spans])
        self._delete(self._free)
        self._free = []
