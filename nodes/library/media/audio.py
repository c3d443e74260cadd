"""Audio nodes: live input and files as the current frame's samples, and their analysis.

`audio.input` and `audio.file` give `out`, the samples of the current frame: mono float32 at
`AUDIO_RATE` (48 kHz), one frame's duration of them (see nodes.library.media.dsp). `audio.level`,
`audio.bands`, `audio.onset` and `audio.beat` analyse such an array.

- `audio.input` reads the audio service (`ctx.service("audio")`, evaluators.services.audio): its
  capture runs on PortAudio's thread into a bounded ring buffer, and the node takes the newest
  samples from it. The stream opens on the service's thread: the node is deferred until then, and
  fails with one line ("no audio input: ...") when there is no device, no matching device, or no
  PortAudio library; the rest of the patch plays on.
- `audio.file` plays a file in step with the patch clock (frame k shows the samples from `t` to
  `t + d`), so a headless render takes the same samples every run. The file is resolved inside the
  patch's folder (nodes.paths) and decoded on the context's worker pool, never on the frame path:
  the node is deferred until then, and decoded again when the path or the file changes. A file
  that does not decode fails the node until the path or the file changes.
- `audio.beat` with `drive_tempo` on sets the patch's live tempo (`ctx.live_bpm`, which every
  `time.beat` follows) to the tempo it hears; switched off or removed, it gives the tempo back.
  Like any node it runs only when something needs it: link `bpm` or `pulse` to a sink (or watch
  it) for it to listen.

Known downside: while a file decodes the node outputs no samples, so a render's first frames
depend on how fast the file loads; a render that must be exact from frame 0 waits for it first.
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path
from typing import Any

import numpy as np

from nodes.errors import Deferred, shown
from nodes.library.media.dsp import (
    AUDIO_RATE,
    DEFAULT_ONSET_THRESHOLD,
    BandSmoother,
    BeatTracker,
    OnsetDetector,
    as_samples,
    decode_audio_file,
    frame_samples,
    frame_seconds,
    rms_level,
)
from nodes.paths import resolve_patch_path
from nodes.spec import Array, Determinism, NodeContext, node

HOT = Determinism.NONDETERMINISTIC

NO_AUDIO_INPUT = "no audio input"
_SAMPLES_DOC = "The samples of the current frame (mono, 48 kHz): audio.input's or audio.file's."


# ----------------------------------------------------------------------------- sources


@node(
    "audio.input",
    determinism=HOT,
    ranges={"latency": (0.0, 1.0)},
    docs={
        "device": "Part of the input device's name (case does not matter); empty for the "
        "default input.",
        "latency": "The latency asked of the device, in seconds; 0 for its low default.",
        "out": "The newest samples of the live input, one frame's duration (mono, 48 kHz).",
    },
)
def audio_input(ctx: NodeContext, device: str = "", latency: float = 0.0) -> Array:
    """Live audio from an input device (through PortAudio), the newest samples each frame. The
    stream opens in the background (the node is deferred until then); without a device or the
    PortAudio library the node fails saying so and the rest of the patch plays."""
    service = getattr(ctx, "service", None)
    if service is None:
        raise RuntimeError(f"{NO_AUDIO_INPUT}: this player has no audio service")
    try:
        audio = service("audio")
    except KeyError:
        raise RuntimeError(f"{NO_AUDIO_INPUT}: this player has no audio service") from None
    capture = audio.capture(device, latency)
    return capture.newest(round(frame_seconds(ctx.dt) * AUDIO_RATE))


def _file_stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


class AudioFileState:
    """The decoded file and the one being decoded, each with its version (path, modification
    time and size), and the last failure: (version, message)."""

    __slots__ = ("failed", "loaded", "loading", "pending", "samples")

    def __init__(self, path: str = "") -> None:
        self.samples = np.zeros(0, np.float32)
        self.loaded: tuple[Path, Any] | None = None
        self.loading: tuple[Path, Any] | None = None
        self.pending: concurrent.futures.Future[np.ndarray] | None = None
        self.failed: tuple[tuple[Path, Any], str] | None = None


def _decode_failure(name: str, error: BaseException) -> str:
    """One line saying why the audio file `name` did not decode."""
    if isinstance(error, OSError) and error.strerror and not str(error).startswith("audio file"):
        return f"audio file {name}: {error.strerror}"
    lines = str(error).strip().splitlines()
    reason = lines[0] if lines else type(error).__name__
    return reason if reason.startswith("audio file") else f"audio file {name}: {reason}"


@node(
    "audio.file",
    determinism=HOT,
    init_state=AudioFileState,
    hints={"path": "file"},
    docs={
        "path": "The audio file (WAV, FLAC, OGG, MP3), relative to the patch's folder.",
        "loop": "Start again from the beginning after the end; off: silence after the end.",
        "out": "The file's samples for the current frame (mono, 48 kHz).",
    },
)
def audio_file(ctx: NodeContext, state: AudioFileState, path: str = "", loop: bool = True) -> Array:
    """An audio file played in step with the patch clock, one frame's samples at a time. It is
    decoded in the background (the node is deferred until then); renders at a fixed fps take the
    same samples every run."""
    seconds = frame_seconds(ctx.dt)
    if not path:
        return np.zeros(round(seconds * AUDIO_RATE), np.float32)
    resolved = resolve_patch_path(ctx.folder, path, "audio")
    version = (resolved, _file_stamp(resolved))
    if state.loaded != version:
        _load(ctx, state, path, version)
    return frame_samples(state.samples, ctx.t, seconds, loop)


def _load(ctx: NodeContext, state: AudioFileState, name: str, version: tuple[Path, Any]) -> None:
    """Have the file decoded on a worker; Deferred until it is, OSError (one line) if it fails."""
    if state.failed is not None:
        if state.failed[0] == version:
            raise OSError(state.failed[1])  # a new exception each time: nothing piles up on it
        state.failed = None
    if state.loading != version or state.pending is None:
        state.loading = version
        state.pending = ctx.submit(decode_audio_file, version[0])
    if not ctx.ready(state.pending):
        raise Deferred(f"decoding {shown(name)}")
    pending, state.pending, state.loading = state.pending, None, None
    try:
        samples = pending.result()
    except Exception as error:
        state.failed = (version, _decode_failure(shown(name), error))
        raise OSError(state.failed[1]) from None
    state.samples, state.loaded = samples, version


# ----------------------------------------------------------------------------- analysis


@node(
    "audio.level",
    examples=(
        ({"in": [0.5, -0.5, 0.5, -0.5]}, 0.5),
        ({"in": [0.0, 0.0]}, 0.0),
        ({"in": [3.0, -3.0]}, 1.0),
    ),
    docs={"in": _SAMPLES_DOC, "out": "The RMS level of the samples, from 0 (silence) to 1."},
)
def audio_level(in_: Array = np.zeros(0)) -> float:  # noqa: B008 - immutable by convention
    """The loudness of a frame of samples: their RMS level, 0 to 1."""
    return rms_level(as_samples(in_))


@node(
    "audio.bands",
    determinism=HOT,
    init_state=BandSmoother,
    ranges={"count": (1, 256), "smoothing": (0.0, 0.99)},
    docs={
        "in": _SAMPLES_DOC,
        "count": "How many bands, log-spaced from 20 Hz to 20 kHz.",
        "smoothing": "How slowly the bands follow the sound: 0 at once, 0.9 slowly.",
        "out": "The level of each band from low to high, 0 to 1 (a full-scale sine reads 0.71).",
    },
)
def audio_bands(
    state: BandSmoother,
    in_: Array = np.zeros(0),  # noqa: B008 - immutable by convention
    count: int = 8,
    smoothing: float = 0.5,
) -> Array:
    """The loudness of log-spaced frequency bands of the sound (bass to treble), smoothed. Band i
    spans 20 Hz * 1000 ** (i / count) to 20 Hz * 1000 ** ((i + 1) / count)."""
    return state.step(as_samples(in_), max(1, min(256, int(count))), smoothing)


@node(
    "audio.onset",
    determinism=HOT,
    init_state=OnsetDetector,
    outputs={"out": "bool"},
    ranges={"threshold": (1.0, 10.0)},
    docs={
        "in": _SAMPLES_DOC,
        "threshold": "How far above its recent average the spectral change must rise to count "
        "(higher: fewer onsets).",
        "out": "True on the frame a note, hit or click starts.",
    },
)
def audio_onset(
    state: OnsetDetector,
    in_: Array = np.zeros(0),  # noqa: B008 - immutable by convention
    threshold: float = DEFAULT_ONSET_THRESHOLD,
) -> bool:
    """True on frames where a sound starts (a hit, a note, a click): spectral flux above an
    adaptive threshold. Silence and steady sound give none."""
    return state.step(as_samples(in_), threshold)


@node(
    "audio.beat",
    determinism=HOT,
    init_state=BeatTracker,
    outputs={"bpm": "float", "pulse": "bool"},
    docs={
        "in": _SAMPLES_DOC,
        "drive_tempo": "Make the tempo heard the patch's tempo (every time.beat follows it).",
        "bpm": "The tempo heard, in beats per minute; 0 until it is known (a few seconds).",
        "pulse": "True on the frame a beat starts, locked to the onsets heard.",
    },
)
def audio_beat(
    ctx: NodeContext,
    state: BeatTracker,
    in_: Array = np.zeros(0),  # noqa: B008 - immutable by convention
    drive_tempo: bool = False,
) -> tuple[float, bool]:
    """The tempo of the sound and a pulse on its beats; with drive_tempo on, it sets the patch's
    tempo. The tempo takes a few seconds of clear beats to find; the node listens while something
    uses its outputs."""
    bpm, pulse = state.step(as_samples(in_))
    if drive_tempo and bpm > 0.0:
        state.ctx = ctx
        ctx.live_bpm = state.driven = bpm
    elif not drive_tempo and state.driven is not None:
        state.release()
    return bpm, pulse
