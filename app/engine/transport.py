"""The transport clock: patch time that plays, pauses, steps both ways, runs at a rate, or
advances a fixed step per frame.

Patch time is kept as an anchor (the patch time at a wall-clock instant) and a rate: playing,
t = anchor + rate * (wall - wall anchor). Every change (pause, resume, a new rate, a step, a
reset, entering or leaving the fixed step) first moves the anchor to the current patch time, so
patch time never jumps when the transport changes. In fixed-step mode the wall clock is not read
at all: each frame that plays runs at the anchor and then moves it on by 1 / fps (a render gives
the same times however long its frames take); leaving it, real time continues from there.

Plain Python, no Qt: the engine (app.engine.engine) and the editor's local clock
(app.session.session) use it, and tests drive it with a wall clock of their own (`now`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

MAX_RATE = 16.0
MAX_STEP_S = 1.0
MAX_FIXED_FPS = 1000.0


def checked_rate(rate: object) -> float:
    """`rate` as a float, or ValueError unless 0 < rate <= MAX_RATE."""
    if isinstance(rate, bool) or not isinstance(rate, int | float):
        raise ValueError(f"rate must be a number, not {rate!r}"[:120])
    if not 0.0 < rate <= MAX_RATE:  # NaN too
        raise ValueError(f"rate must be above 0 and at most {MAX_RATE:g}, not {rate}")
    return float(rate)


def checked_step(seconds: object) -> float:
    """`seconds` of a step as a float, or ValueError unless within -MAX_STEP_S..MAX_STEP_S."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ValueError(f"seconds must be a number, not {seconds!r}"[:120])
    if not -MAX_STEP_S <= seconds <= MAX_STEP_S:  # NaN too
        limit = f"{MAX_STEP_S:g}"
        raise ValueError(f"seconds must be within -{limit} and {limit}, not {seconds}")
    return float(seconds)


def checked_fixed_fps(fps: object) -> float | None:
    """`fps` of the fixed step as a float (None: real time), or ValueError."""
    if fps is None:
        return None
    if isinstance(fps, bool) or not isinstance(fps, int | float):
        raise ValueError(f"fps must be a number or null, not {fps!r}"[:120])
    if not 0.0 < fps <= MAX_FIXED_FPS or math.isnan(fps):
        raise ValueError(f"fps must be above 0 and at most {MAX_FIXED_FPS:g}, not {fps}")
    return float(fps)


class TransportClock:
    """Patch time: see the module note. `now` is the wall clock (seconds, monotonic)."""

    def __init__(self, now: Callable[[], float] = time.perf_counter) -> None:
        self._now = now
        self._wall_anchor = now()
        self._anchor = 0.0  # patch time at _wall_anchor
        self._paused = False
        self.rate = 1.0
        self.fixed_fps: float | None = None

    @property
    def paused(self) -> bool:
        return self._paused

    def seconds(self) -> float:
        """The current patch time."""
        if self._paused or self.fixed_fps is not None:
            return self._anchor
        return self._anchor + self.rate * (self._now() - self._wall_anchor)

    def _rebase(self) -> None:
        self._anchor, self._wall_anchor = self.seconds(), self._now()

    def set_paused(self, paused: bool) -> None:
        self._rebase()
        self._paused = paused

    def toggle(self) -> bool:
        """Pause or resume; returns whether it is paused now."""
        self.set_paused(not self._paused)
        return self._paused

    def set_rate(self, rate: object) -> None:
        """Play at `rate` times wall time from now on (ValueError unless 0 < rate <= 16)."""
        checked = checked_rate(rate)
        self._rebase()
        self.rate = checked

    def set_fixed_step(self, fps: object) -> None:
        """Advance 1 / `fps` of patch time per frame (`frame_time`); None: real time again."""
        checked = checked_fixed_fps(fps)
        self._rebase()
        self.fixed_fps = checked

    def advance(self, seconds: float) -> None:
        """Move patch time by `seconds` (negative: back), paused or not."""
        self._rebase()
        self._anchor += seconds

    def reset(self) -> None:
        """Patch time back to 0, paused or not."""
        self._anchor, self._wall_anchor = 0.0, self._now()

    def frame_time(self) -> float:
        """The patch time of a frame about to run; in fixed-step mode (playing) this moves the
        clock on by one step for the next frame."""
        t = self.seconds()
        if self.fixed_fps is not None and not self._paused:
            self._anchor += 1.0 / self.fixed_fps
        return t
