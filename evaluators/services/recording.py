"""Recording frames to a video file with PyAV: `patchbay run --headless --record OUT`.

What it does:
    * `recording_plan(path, codec)` checks, before anything runs or is written, that the codec is
      known, that this PyAV build has its encoder (`av.codecs_available`), and that the container
      the file name asks for (`.mov`, `.mkv`, `.mp4`) can hold it; every refusal is a
      `RecordingError` of one line. Without `codec` the extension picks it (`DEFAULT_CODECS`).
    * `VideoRecorder` takes RGBA frames (HxWx4 uint8 numpy arrays, rows top to bottom, as
      `GLService.readback` gives them) and encodes them on a worker thread fed by a bounded queue,
      so the frame loop never encodes. `submit(image, index, block=...)`: a render
      (`block=True`) waits for room in the queue and never loses a frame; a real-time caller
      (`block=False`) never waits, and a frame the queue cannot take is dropped and counted
      (`dropped`).
    * The file is written under a temporary name in the same folder and renamed to its name by
      `close()` once everything is encoded, so a render that fails never leaves half a file, nor
      overwrites a good file with one. `abort()` removes the temporary file.

Codecs (`CODECS`): `ffv1` (lossless, RGBA kept: bgra) and `png` (lossless, RGBA), `prores`
(prores_ks 422 HQ, 10 bit), `prores4444` (prores_ks 4444 with alpha), `h264` (libx264, yuv420p,
CRF 18; even sizes only), `mjpeg` (yuvj420p, quality 2). Containers: `.mkv` holds ffv1, prores,
prores4444, h264, mjpeg; `.mov` holds png, prores, prores4444, h264, mjpeg; `.mp4` holds h264
and mjpeg. FFmpeg would put some others in (ffv1 or png in MP4), but no common player reads them,
so they are refused. Default codec: `.mov` -> prores (422 HQ), `.mkv` -> ffv1, `.mp4` -> h264.

Known downsides: frames are handed over as numpy arrays, so the readback before `submit` is the
caller's (synchronous in the headless player); the asynchronous pixel-buffer readback a real-time
recording from the window needs is not here. Colour conversion to YUV codecs is swscale's default
(BT.601, limited range, except mjpeg's full range); the lossless codecs do no conversion.
"""

from __future__ import annotations

import contextlib
import errno
import os
import queue
import secrets
import threading
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np


class RecordingError(ValueError):
    """A recording that cannot be made: unknown codec, codec missing from this PyAV build,
    codec the container cannot hold, a file that cannot be written, or an encoding failure."""


@dataclass(frozen=True)
class Codec:
    """One `--codec` name: the FFmpeg encoder, its pixel format and options."""

    name: str
    encoder: str
    pix_fmt: str
    options: dict[str, str] = field(default_factory=dict)
    lossless: bool = False
    even_size: bool = False  # chroma subsampled in both directions
    description: str = ""


CODECS: dict[str, Codec] = {
    codec.name: codec
    for codec in (
        Codec("ffv1", "ffv1", "bgra", {"level": "3"}, lossless=True,
              description="FFV1, lossless, RGBA"),
        Codec("png", "png", "rgba", lossless=True, description="PNG frames, lossless, RGBA"),
        Codec("prores", "prores_ks", "yuv422p10le", {"profile": "3"},
              description="ProRes 422 HQ"),
        Codec("prores4444", "prores_ks", "yuva444p10le", {"profile": "4"},
              description="ProRes 4444 with alpha"),
        Codec("h264", "libx264", "yuv420p", {"crf": "18", "preset": "medium"}, even_size=True,
              description="H.264 (libx264)"),
        Codec("mjpeg", "mjpeg", "yuvj420p", {"qscale": "2"}, description="Motion JPEG"),
    )
}  # fmt: skip

#: The containers, by file extension: FFmpeg's format name and the codecs they may hold.
CONTAINERS: dict[str, tuple[str, tuple[str, ...]]] = {
    ".mkv": ("matroska", ("ffv1", "prores", "prores4444", "h264", "mjpeg")),
    ".mov": ("mov", ("png", "prores", "prores4444", "h264", "mjpeg")),
    ".mp4": ("mp4", ("h264", "mjpeg")),
}

#: The codec of a recording given without `--codec`.
DEFAULT_CODECS = {".mov": "prores", ".mkv": "ffv1", ".mp4": "h264"}


@dataclass(frozen=True)
class RecordingPlan:
    """What a recording will be: checked, nothing written yet."""

    path: Path
    codec: Codec
    container: str  # FFmpeg's format name


def recording_plan(path: str | Path, codec: str | None = None) -> RecordingPlan:
    """Check that `path` can be recorded with `codec` (None: the extension's default); raises
    RecordingError with one line naming the problem. Writes nothing."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in CONTAINERS:
        known = ", ".join(CONTAINERS)
        raise RecordingError(
            f"--record {path}: unknown container {suffix or '(no extension)'!r}; use one of {known}"
        )
    container, holds = CONTAINERS[suffix]
    name = DEFAULT_CODECS[suffix] if codec is None else codec.lower()
    chosen = CODECS.get(name)
    if chosen is None:
        raise RecordingError(f"--codec {codec}: unknown codec; use one of {', '.join(CODECS)}")
    import av

    if chosen.encoder not in av.codecs_available:
        raise RecordingError(
            f"--codec {name}: this build of PyAV has no {chosen.encoder} encoder "
            f"(PyAV {av.__version__})"
        )
    if name not in holds:
        raise RecordingError(
            f"--codec {name}: a {suffix} file cannot hold {name} ({chosen.description}); "
            f"{suffix} holds {', '.join(holds)}"
        )
    if path.is_dir():
        raise RecordingError(f"--record {path}: is a folder, not a file name")
    return RecordingPlan(path, chosen, container)


def check_size(plan: RecordingPlan, size: tuple[int, int]) -> None:
    """Refuse a frame size the codec cannot encode (odd sizes for 4:2:0 codecs)."""
    width, height = size
    if plan.codec.even_size and (width % 2 or height % 2):
        raise RecordingError(
            f"--codec {plan.codec.name} needs an even width and height, not {width}x{height} "
            "(--size WxH changes it)"
        )


def frame_rate(fps: float) -> Fraction:
    """`fps` as the exact fraction a container stores (29.97 -> 2997/100; NTSC rates 30000/1001)."""
    rate = Fraction(fps).limit_denominator(1001)
    if rate <= 0:
        raise RecordingError(f"--fps {fps}: a recording needs a positive frame rate")
    return rate


class VideoRecorder:
    """Encodes RGBA frames into a video file on a worker thread.

    Usage::

        recorder = VideoRecorder(recording_plan("out.mkv"), fps=60, size=(w, h))
        try:
            for ...:
                recorder.submit(image, frame, block=True)   # a render: never drops
            recorder.close()                                # finish and rename into place
        except BaseException:
            recorder.abort()                                # no file left behind
            raise

    The first encoding error is raised as a RecordingError by the next `submit()` or by
    `close()`; after it the worker drops what it is given.
    """

    def __init__(
        self, plan: RecordingPlan, fps: float, size: tuple[int, int], *, max_pending: int = 8
    ) -> None:
        check_size(plan, size)
        self.plan = plan
        self.size = size
        self.rate = frame_rate(fps)
        self.frames_submitted = 0
        self.frames_written = 0
        self.dropped = 0
        self._error: BaseException | None = None
        self._closed = False
        folder = plan.path.absolute().parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self.temporary = _new_file(folder, plan.path)
        except OSError as error:
            raise RecordingError(f"--record {plan.path}: cannot write: {_reason(error)}") from error
        try:
            self._container, self._stream = self._open()
        except BaseException:
            self.temporary.unlink(missing_ok=True)
            raise
        self._queue: queue.Queue[tuple[np.ndarray, int] | None] = queue.Queue(max_pending)
        self._thread = threading.Thread(target=self._run, name="video-recorder", daemon=True)
        self._thread.start()

    def _open(self) -> tuple[Any, Any]:
        import av

        codec = self.plan.codec
        try:
            container = av.open(str(self.temporary), "w", format=self.plan.container)
        except (OSError, av.FFmpegError) as error:
            raise RecordingError(f"--record {self.plan.path}: {_reason(error)}") from error
        try:
            stream: Any = container.add_stream(codec.encoder, rate=self.rate)
            stream.width, stream.height = self.size
            stream.pix_fmt = codec.pix_fmt
            stream.time_base = 1 / self.rate
            stream.codec_context.time_base = 1 / self.rate
            stream.options = dict(codec.options)
        except (ValueError, av.FFmpegError) as error:
            container.close()
            raise RecordingError(f"--codec {codec.name}: {_reason(error)}") from error
        return container, stream

    def submit(self, image: np.ndarray, index: int | None = None, *, block: bool = True) -> bool:
        """Queue one HxWx4 uint8 RGBA frame shown at frame `index` (default: the next one).
        `block=True` (a render) waits for room; `block=False` (real time) never waits, and a
        frame the queue has no room for is dropped and counted. Returns whether it was taken."""
        if self._closed:
            raise RuntimeError("VideoRecorder is closed")
        self._raise_pending_error()
        if image.shape != (self.size[1], self.size[0], 4) or image.dtype != np.uint8:
            raise RecordingError(
                f"--record: a frame of {image.shape} {image.dtype} in a "
                f"{self.size[0]}x{self.size[1]} RGBA recording"
            )
        if index is None:
            index = self.frames_submitted
        self.frames_submitted += 1
        try:
            self._queue.put((image, index), block=block)
        except queue.Full:
            self.dropped += 1
            return False
        return True

    def close(self) -> Path:
        """Encode what is queued, finish the file and rename it to its name; returns the path.
        An encoding error is raised (and the temporary file removed) instead."""
        if not self._closed:
            self._closed = True
            self._queue.put(None)
            self._thread.join()
            if self._error is None:
                self._finish()
            try:
                self._container.close()  # writes the trailer (the index of a .mov or .mp4)
            except Exception as error:
                self._error = self._error or error
            if self._error is None:
                try:
                    os.replace(self.temporary, self.plan.path)
                except OSError as error:
                    self._error = error
        if self._error is not None:
            self.temporary.unlink(missing_ok=True)
        self._raise_pending_error()
        return self.plan.path

    def abort(self) -> None:
        """Stop without finishing: the temporary file is removed, the named file untouched."""
        if not self._closed:
            self._closed = True
            self._error = self._error or RuntimeError("aborted")
            self._queue.put(None)
            self._thread.join()
            with contextlib.suppress(Exception):  # a half-written file is removed below anyway
                self._container.close()
        self._error = None
        self.temporary.unlink(missing_ok=True)

    def _finish(self) -> None:
        try:
            for packet in self._stream.encode(None):
                self._container.mux(packet)
        except Exception as error:
            self._error = error

    def _raise_pending_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise RecordingError(
                f"--record {self.plan.path}: encoding failed: {_reason(error)}"
            ) from error

    def _encode(self, image: np.ndarray, index: int) -> None:
        import av

        frame = av.VideoFrame.from_ndarray(image, format="rgba")
        frame.pts = index
        frame.time_base = 1 / self.rate
        for packet in self._stream.encode(frame):
            self._container.mux(packet)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            if self._error is not None:
                continue  # drain after a failure; the error is reported on the caller's thread
            image, index = item
            try:
                self._encode(image, index)
                self.frames_written += 1
            except Exception as error:  # reported to the caller, not lost in the thread
                self._error = error


def _new_file(folder: Path, path: Path) -> Path:
    """A new empty file beside `path` (hidden, same extension), made with the permissions a
    file normally gets (umask applies), unlike `tempfile.mkstemp`'s owner-only ones."""
    for _ in range(100):
        candidate = folder / f".{path.name}.{secrets.token_hex(4)}.part{path.suffix}"
        try:
            os.close(os.open(candidate, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        except FileExistsError:
            continue
        return candidate
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(folder))


def _reason(error: BaseException) -> str:
    """One line: an OSError's reason and file, else the error's first line."""
    if isinstance(error, OSError) and error.strerror:
        where = f" ({error.filename})" if error.filename else ""
        return f"{error.strerror}{where}"
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
