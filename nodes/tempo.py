"""Tempo: the patch's beats per minute, the beat clock of `time.beat`, and tap tempo.

- `checked_bpm`: the one rule for the patch setting `bpm` (edits, files loaded and saved alike).
- `BeatClock`: a `time.beat` node's state. Beats follow the patch clock (`ctx.t`), so a headless
  render at a fixed fps gives the same beats every run. The clock keeps an anchor (a time and the
  beat count at that time): a tempo change moves the anchor to the last frame, so the beat count
  (and the phase) goes on from where it was instead of jumping. `nudge` and `resync` are
  operations on that anchor, applied at the next frame the node runs.
- `TapTempo`: beats per minute from tap times (seconds on any clock). At least 3 taps give a
  tempo; intervals far from the median (a late or doubled tap) are ignored; a pause longer than
  `restart_after` seconds starts a new series.

Assumes the patch clock only moves forward while playing; a clock that goes back (a time reset)
starts the beat count again from its time. A node that does not run while the tempo changes
(nothing needs it) applies the new tempo from its last run when it runs again.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable

from nodes.errors import PatchValueError

DEFAULT_BPM = 120.0
MIN_BPM = 20.0
MAX_BPM = 999.0
# A beat starting within this fraction of a beat of a frame counts as starting on it: t = frame
# / fps is rounded, and 0.9999999999 beats must not put a pulse a frame late.
ON_BEAT = 1e-9


def checked_bpm(value: object) -> float:
    """`value` as beats per minute, or PatchValueError unless a number from MIN_BPM to MAX_BPM."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PatchValueError(f"bpm: expected a number, got {value!r}"[:200])
    bpm = float(value)
    if not MIN_BPM <= bpm <= MAX_BPM:
        raise PatchValueError(f"bpm: {bpm:g} is not a tempo from {MIN_BPM:g} to {MAX_BPM:g}")
    return bpm


class BeatClock:
    """Beat count as a function of the patch clock, continuous across tempo changes."""

    __slots__ = ("anchor_beat", "anchor_t", "bpm", "last_beat", "last_t", "nudged", "resyncing")

    def __init__(self, path: str = "") -> None:
        self.anchor_t = 0.0
        self.anchor_beat = 0.0
        self.bpm: float | None = None
        self.last_t: float | None = None
        self.last_beat: float | None = None
        self.nudged = 0.0
        self.resyncing = False

    def nudge(self, beats: float) -> None:
        """Shift the beat by `beats` at the next frame (positive: the next beat comes sooner)."""
        self.nudged += beats

    def resync(self) -> None:
        """Make the next frame the downbeat: beat 0 of the next bar."""
        self.resyncing = True

    def advance(self, t: float, bpm: float, beats_per_bar: int) -> tuple[float, bool]:
        """The beat count at time `t` (seconds) and whether a beat starts on this frame."""
        if self.last_t is not None and t < self.last_t:  # the clock went back: start again
            self.anchor_t, self.anchor_beat, self.last_t, self.last_beat = 0.0, 0.0, None, None
        if self.bpm is not None and bpm != self.bpm and self.last_t is not None:
            self.anchor_beat = self._beat_at(self.last_t)  # the new tempo runs from the last frame
            self.anchor_t = self.last_t
        self.bpm = bpm
        if self.nudged:
            self.anchor_beat += self.nudged
            self.nudged = 0.0
        beat = self._beat_at(t)
        if self.last_beat is None:  # the first frame pulses only on a beat
            pulse = abs(beat - round(beat)) < ON_BEAT
        else:
            pulse = math.floor(beat + ON_BEAT) > math.floor(self.last_beat + ON_BEAT)
        if self.resyncing:
            self.resyncing = False
            bar = max(1, beats_per_bar)
            beat = math.ceil(beat / bar - ON_BEAT) * bar
            self.anchor_t, self.anchor_beat, pulse = t, beat, True
        self.last_t, self.last_beat = t, beat
        return beat, pulse

    def _beat_at(self, t: float) -> float:
        return self.anchor_beat + (t - self.anchor_t) * (self.bpm or DEFAULT_BPM) / 60.0


#: The most one nudge may shift the beat, in beats.
MAX_NUDGE = 0.5


def nudge_beats(states: Iterable[object], beats: float) -> None:
    """Nudge every beat clock among node `states` by `beats` (see `BeatClock.nudge`);
    ValueError unless within +-MAX_NUDGE."""
    if not -MAX_NUDGE <= beats <= MAX_NUDGE:  # NaN too
        raise ValueError(f"a nudge must be within -{MAX_NUDGE} and {MAX_NUDGE} beats, not {beats}")
    for state in states:
        if isinstance(state, BeatClock):
            state.nudge(beats)


def resync_beats(states: Iterable[object]) -> None:
    """Make the next frame the downbeat for every beat clock among node `states`."""
    for state in states:
        if isinstance(state, BeatClock):
            state.resync()


class TapTempo:
    """Beats per minute from taps: see the module note."""

    def __init__(self, restart_after: float = 2.0, keep: int = 8, tolerance: float = 0.2) -> None:
        self.restart_after = restart_after
        self.keep = keep
        self.tolerance = tolerance
        self.taps: list[float] = []

    def tap(self, t: float) -> float | None:
        """Record a tap at `t` seconds; the tempo it gives (3 taps or more), else None."""
        if self.taps and not 0 < t - self.taps[-1] <= self.restart_after:
            self.taps = []
        self.taps = [*self.taps, t][-self.keep :]
        return self.bpm()

    def bpm(self) -> float | None:
        """The tempo of the taps so far (outlying intervals ignored), or None under 3 taps."""
        if len(self.taps) < 3:
            return None
        intervals = [b - a for a, b in zip(self.taps, self.taps[1:], strict=False)]
        median = statistics.median(intervals)
        kept = [i for i in intervals if abs(i - median) <= self.tolerance * median]
        return min(MAX_BPM, max(MIN_BPM, 60.0 / statistics.fmean(kept)))
