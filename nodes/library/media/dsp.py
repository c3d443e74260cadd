"""Audio for the `audio.*` nodes: decoding files, picking a frame's samples, and the analysis.

Every signal here is mono float32 at one rate, `AUDIO_RATE` (48 kHz): files at other rates are
resampled when decoded, live input is opened at that rate. So an array of samples carries its
duration in its length, and the analysis needs no rate beside it.

- Files (`decode_audio_file`): read with soundfile (libsndfile, bundled by its wheels: WAV, FLAC,
  OGG/Vorbis, MP3 with libsndfile >= 1.1), opened as `nodes.paths` opens files (regular files,
  within `Limits.audio_file_bytes`), decoded in blocks and mixed down to mono on the way, so a
  stereo file never costs twice its decoded size; the decoded length is held by
  `Limits.array_elements`. Resampling is linear interpolation: cheap, and enough for analysis and
  visuals (no anti-alias filter when a file is downsampled).
- Frames (`frame_samples`): frame k of a file shows the samples from `t` to `t + d`, where `t` is
  the patch clock and `d` the frame's duration (`frame_seconds`: `ctx.dt`, or 1/60 s on the first
  frame), so a render at a fixed fps takes the same samples every run.
- Analysis works on a window of the last two frames (`SpectrumWindow`): a click at the edge of one
  frame sits inside the next window instead of under the edge of a taper. Spectra are zero-padded
  to at least `MIN_FFT` points and summed into log-spaced bands through the cumulative power
  (`band_powers`), so narrow low bands get their share of a bin instead of nothing.
  - level: the RMS of the frame, 0..1.
  - bands: per band the RMS of the part of the signal in it (a full-scale sine reads 0.707 in its
    band; the bands' squares sum to the level's square), smoothed over time.
  - onsets (`OnsetDetector`): spectral flux (the summed rise of log-compressed band magnitudes
    between frames) above `threshold` times its average over the last half second and above an
    absolute floor (silence and steady noise give none), rising, and at least `MIN_ONSET_GAP`
    seconds after the last onset.
  - tempo (`BeatTracker`): the autocorrelation of the flux over the last `TEMPO_WINDOW_SECONDS`,
    weighted towards 120 BPM (one octave either side), peak refined by a parabola; its pulse is
    a phase that advances at that tempo and is pulled towards the comb of beats at that tempo
    that catches the most flux.

Known downsides: the tempo estimate needs a few seconds of material with clear onsets, and like
every autocorrelation tracker it can settle on half or double the felt tempo.
"""

from __future__ import annotations

import math
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from nodes.limits import active_limits
from nodes.paths import open_patch_file

AUDIO_RATE = 48_000
#: The duration of a frame when the clock has not moved yet (the first frame), and the longest
#: one a frame may take samples for (a frame after a long pause takes one second, not an hour).
DEFAULT_FRAME_SECONDS = 1.0 / 60.0
MAX_FRAME_SECONDS = 1.0
MIN_FFT = 4096
LOW_HZ = 20.0
HIGH_HZ = 20_000.0
DECODE_BLOCK_FRAMES = 1 << 16

ONSET_BANDS = 24
ONSET_COMPRESSION = 100.0  # log(1 + c * magnitude): quiet detail counts, loud parts saturate
ONSET_FLOOR = 0.02  # flux below this is never an onset (silence, dithering, steady noise)
ONSET_HISTORY_SECONDS = 1.0
DEFAULT_ONSET_THRESHOLD = 2.5
MIN_ONSET_GAP = 0.1
TEMPO_WINDOW_SECONDS = 8.0
MIN_TEMPO_SECONDS = 3.0  # of flux history before a tempo is given
TEMPO_RANGE = (60.0, 200.0)
TEMPO_PRIOR_BPM = 120.0
COMB_DECAY = 0.7  # weight of each older beat when the pulse looks for where the beats fall
PHASE_PULL = 0.25  # how far the pulse's phase moves towards the beats heard, per frame


def frame_seconds(dt: float) -> float:
    """The duration a frame takes samples for: the clock's step `dt`, or 1/60 s when it did not
    move forward (the first frame, a clock set back), at most `MAX_FRAME_SECONDS`."""
    if not 0.0 < dt < math.inf:
        return DEFAULT_FRAME_SECONDS
    return min(dt, MAX_FRAME_SECONDS)


def frame_samples(samples: np.ndarray, t: float, seconds: float, loop: bool) -> np.ndarray:
    """The samples from time `t` for `seconds` of a signal at AUDIO_RATE: wrapped around when
    `loop`, else silence before its start and after its end."""
    count = max(1, round(seconds * AUDIO_RATE))
    start = round(t * AUDIO_RATE)
    total = len(samples)
    if total == 0:
        return np.zeros(count, np.float32)
    if loop:
        return np.take(samples, np.arange(start, start + count), mode="wrap")
    out = np.zeros(count, np.float32)
    low, high = max(start, 0), min(start + count, total)
    if low < high:
        out[low - start : high - start] = samples[low:high]
    return out


def decode_audio_file(path: Path) -> np.ndarray:
    """The file's samples, mono float32 at AUDIO_RATE (see the module note); ValueError or
    OSError with one line when it cannot be read."""
    import soundfile

    limit = active_limits().array_elements
    with open_patch_file(path, "audio") as handle:
        try:
            sound = soundfile.SoundFile(handle)
        except (RuntimeError, soundfile.LibsndfileError) as error:
            raise ValueError(f"not an audio file soundfile can read ({error})") from None
        with sound:
            rate = int(sound.samplerate)
            if rate <= 0:
                raise ValueError(f"sample rate {rate}")
            frames = int(sound.frames)
            decoded_length = math.ceil(frames * AUDIO_RATE / rate)
            if max(frames, decoded_length) > limit:
                raise ValueError(
                    f"{max(frames, decoded_length)} samples is above the limit "
                    f"array_elements = {limit}"
                )
            mono = np.empty(frames, np.float32)
            done = 0
            for block in sound.blocks(DECODE_BLOCK_FRAMES, dtype="float32", always_2d=True):
                block_mono = block.mean(axis=1, dtype=np.float32)
                end = min(frames, done + len(block_mono))
                mono[done:end] = block_mono[: end - done]
                done = end
            mono = mono[:done]
    if rate != AUDIO_RATE and len(mono):
        positions = np.arange(math.ceil(len(mono) * AUDIO_RATE / rate)) * (rate / AUDIO_RATE)
        mono = np.interp(positions, np.arange(len(mono)), mono).astype(np.float32)
    return mono


def as_samples(value: Any) -> np.ndarray:
    """An input pin's value as a 1-D float array (a 2-D array is mixed down; anything that is
    no array of numbers gives no samples)."""
    if not isinstance(value, np.ndarray) or value.dtype.kind not in "fiu" or value.ndim > 2:
        return np.zeros(0, np.float32)
    if value.ndim == 2:
        return value.mean(axis=1)
    return value if value.ndim == 1 else value.reshape(1)


def rms_level(samples: np.ndarray) -> float:
    """The RMS of `samples`, clipped to 0..1 (0 for no samples, or samples that are not finite)."""
    if len(samples) == 0:
        return 0.0
    level = math.sqrt(float(np.mean(np.square(samples, dtype=np.float64))))
    return min(1.0, level) if math.isfinite(level) else 0.0


def log_band_edges(count: int) -> np.ndarray:
    """`count + 1` log-spaced band edges from LOW_HZ to HIGH_HZ (below the Nyquist frequency)."""
    high = min(HIGH_HZ, AUDIO_RATE / 2)
    return np.geomspace(LOW_HZ, high, max(1, count) + 1)


class SpectrumWindow:
    """The power spectrum of the last two frames' samples (see the module note)."""

    __slots__ = ("_previous", "_windows")

    def __init__(self) -> None:
        self._previous = np.zeros(0, np.float32)
        self._windows: dict[int, tuple[np.ndarray, float]] = {}

    def reset(self) -> None:
        self._previous = np.zeros(0, np.float32)

    def powers(self, samples: np.ndarray, edges: np.ndarray) -> np.ndarray:
        """The mean square of the signal in each band between `edges` (Hz) over the window
        ending with `samples`, which it then keeps as the previous frame."""
        joined = np.concatenate((self._previous, samples)) if len(self._previous) else samples
        self._previous = samples
        joined = np.nan_to_num(np.asarray(joined, np.float64), nan=0.0, posinf=0.0, neginf=0.0)
        return band_powers(joined, edges, self._window(len(joined)))

    def _window(self, length: int) -> tuple[np.ndarray, float]:
        found = self._windows.get(length)
        if found is None:
            if len(self._windows) > 8:  # frame lengths vary with a live clock: keep a few
                self._windows.clear()
            taper = np.hanning(length + 2)[1:-1] if length > 1 else np.ones(length)
            found = self._windows[length] = (taper, float(np.sum(taper**2)) or 1.0)
        return found


def band_powers(
    samples: np.ndarray, edges: np.ndarray, window: tuple[np.ndarray, float]
) -> np.ndarray:
    """Per band between `edges`, the mean square of the part of `samples` in it (Parseval over a
    tapered, zero-padded FFT; power between bins shared out through the cumulative sum)."""
    bands = len(edges) - 1
    if len(samples) < 2:
        return np.zeros(bands)
    taper, taper_power = window
    size = max(MIN_FFT, 1 << (len(samples) - 1).bit_length())
    spectrum = np.fft.rfft(samples * taper, size)
    power = np.abs(spectrum) ** 2 * (2.0 / (size * taper_power))
    power[0] *= 0.5
    if size % 2 == 0:
        power[-1] *= 0.5
    step = AUDIO_RATE / size
    # Bin k covers (k - 1/2 .. k + 1/2) * step: the cumulative power at those boundaries.
    boundaries = (np.arange(len(power) + 1) - 0.5) * step
    cumulative = np.concatenate(([0.0], np.cumsum(power)))
    at_edges = np.interp(edges, boundaries, cumulative)
    return np.maximum(np.diff(at_edges), 0.0)


class BandSmoother:
    """`audio.bands`' state: the spectrum window and the smoothed band levels."""

    __slots__ = ("levels", "spectrum")

    def __init__(self, path: str = "") -> None:
        self.spectrum = SpectrumWindow()
        self.levels = np.zeros(0)

    def step(self, samples: np.ndarray, count: int, smoothing: float) -> np.ndarray:
        """The band levels after this frame: each moves from its last value towards the new one
        by `1 - smoothing` per 1/60 s of samples (0: no smoothing; 0.99: very slow)."""
        count = max(1, int(count))
        levels = np.sqrt(self.spectrum.powers(samples, log_band_edges(count)))
        keep = min(max(float(smoothing), 0.0), 0.999) if math.isfinite(smoothing) else 0.0
        if len(self.levels) == count and keep > 0.0:
            keep **= (len(samples) / AUDIO_RATE) / DEFAULT_FRAME_SECONDS
            levels = keep * self.levels + (1.0 - keep) * levels
        self.levels = levels
        return levels.copy()


class OnsetDetector:
    """Spectral-flux onsets with an adaptive threshold (see the module note)."""

    __slots__ = ("_gap_left", "_history", "_last_flux", "_magnitudes", "_spectrum", "flux")

    def __init__(self, path: str = "") -> None:
        self._spectrum = SpectrumWindow()
        self._magnitudes = np.zeros(ONSET_BANDS)  # silence before the first frame
        self._history: deque[tuple[float, float]] = deque()  # (flux, seconds of its frame)
        self._last_flux = 0.0
        self._gap_left = 0.0
        self.flux = 0.0

    def step(self, samples: np.ndarray, threshold: float) -> bool:
        """Whether this frame has an onset; `flux` is its onset strength."""
        seconds = len(samples) / AUDIO_RATE
        powers = self._spectrum.powers(samples, _ONSET_EDGES)
        magnitudes = np.log1p(ONSET_COMPRESSION * np.sqrt(powers))
        previous, self._magnitudes = self._magnitudes, magnitudes
        flux = float(np.mean(np.maximum(magnitudes - previous, 0.0)))
        self.flux = flux
        history = self._history
        average = (
            sum(f * s for f, s in history) / total
            if (total := sum(s for _, s in history)) > 0
            else 0.0
        )
        limit = float(threshold) if math.isfinite(threshold) else DEFAULT_ONSET_THRESHOLD
        self._gap_left -= seconds
        onset = (
            flux > ONSET_FLOOR
            and flux > limit * average
            and flux >= self._last_flux
            and self._gap_left <= 0.0
        )
        if onset:
            self._gap_left = MIN_ONSET_GAP
        self._last_flux = flux
        history.append((flux, seconds))
        while history and sum(s for _, s in history) > ONSET_HISTORY_SECONDS + seconds:
            history.popleft()
        return onset


_ONSET_EDGES = np.geomspace(40.0, 16_000.0, ONSET_BANDS + 1)


class BeatTracker:
    """`audio.beat`'s state: onsets, their strength over the last seconds, the tempo found in
    them and a pulse phase locked to it (see the module note). `driven` is the tempo it last set
    as the patch's live tempo, with the context it set it on (`release` gives it back)."""

    __slots__ = ("_flux", "_phase", "_seconds", "_total", "bpm", "ctx", "driven", "onsets")

    def __init__(self, path: str = "") -> None:
        self.onsets = OnsetDetector()
        self._flux: deque[float] = deque()
        self._seconds: deque[float] = deque()
        self._total = 0.0  # seconds in `_seconds`
        self._phase = 0.0
        self.bpm = 0.0
        self.ctx: Any = None
        self.driven: float | None = None

    def step(self, samples: np.ndarray) -> tuple[float, bool]:
        """(tempo in BPM, 0 while unknown; whether a beat starts on this frame)."""
        seconds = len(samples) / AUDIO_RATE
        self.onsets.step(samples, DEFAULT_ONSET_THRESHOLD)
        self._flux.append(self.onsets.flux)
        self._seconds.append(seconds)
        self._total += seconds
        while len(self._seconds) > 1 and self._total > TEMPO_WINDOW_SECONDS:
            self._flux.popleft()
            self._total -= self._seconds.popleft()
        self.bpm = self._tempo()
        if self.bpm <= 0.0 or seconds <= 0.0:
            return self.bpm, False
        frame = self._total / len(self._seconds)
        period = 60.0 / self.bpm / frame  # in frames
        self._phase += 1.0 / period
        error = self._beat_phase(period) - self._phase
        error -= round(error)  # the nearest way round, -0.5 .. 0.5
        self._phase += PHASE_PULL * error
        # The beat's pulse goes to the frame nearest to it: the phase wraps half a frame early.
        wraps = math.floor(self._phase + 0.5 / period)
        self._phase -= wraps
        return self.bpm, wraps >= 1

    def _beat_phase(self, period: float) -> float:
        """Where in its beat this frame is (0..1), by the comb of beats at `period` frames that
        catches the most flux over the history."""
        flux = np.asarray(self._flux)
        newest = len(flux) - 1
        beats = np.arange(int(newest / period) + 1) * period
        frames_ago = np.arange(max(1, math.ceil(period)))
        at = np.rint(newest - frames_ago[:, None] - beats[None, :]).astype(int)
        recent_first = COMB_DECAY ** np.arange(len(beats))  # the newest beats count most
        scores = (np.where(at >= 0, flux[np.maximum(at, 0)], 0.0) * recent_first).sum(axis=1)
        best = int(np.argmax(scores))
        return best / period

    def _tempo(self) -> float:
        seconds = self._total
        if seconds < MIN_TEMPO_SECONDS or len(self._flux) < 8:
            return 0.0
        frame = seconds / len(self._seconds)
        flux = np.asarray(self._flux)
        flux = flux - flux.mean()
        if not np.any(flux):
            return 0.0
        slow, fast = TEMPO_RANGE
        shortest = max(1, math.floor(60.0 / fast / frame))
        longest = min(len(flux) // 2, math.ceil(60.0 / slow / frame))
        if longest <= shortest + 1:
            return 0.0
        lags = np.arange(shortest - 1, longest + 2)
        correlation = np.array([np.dot(flux[lag:], flux[: len(flux) - lag]) for lag in lags])
        correlation /= float(np.dot(flux, flux))
        bpms = 60.0 / (np.maximum(lags, 1) * frame)
        weights = np.exp(-0.5 * np.log2(bpms / TEMPO_PRIOR_BPM) ** 2)
        scored = correlation * weights
        best = int(np.argmax(scored[1:-1])) + 1
        if correlation[best] <= 0.1:
            return 0.0
        left, middle, right = correlation[best - 1 : best + 2]
        curve = left - 2 * middle + right
        shift = 0.5 * (left - right) / curve if curve < 0 else 0.0
        period = (lags[best] + max(-0.5, min(0.5, shift))) * frame
        return 60.0 / period

    def release(self) -> None:
        """Give back the live tempo this tracker set, unless something else set another since."""
        if self.ctx is not None and self.driven is not None and self.ctx.live_bpm == self.driven:
            self.ctx.live_bpm = None
        self.driven = None

    def close(self) -> None:
        self.release()
