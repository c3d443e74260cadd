"""Video nodes: clips (PyAV), image sequences (Pillow) and cameras, as textures.

`video.file` and `video.sequence` show the frame for the patch time (`ctx.t`, times `speed`),
looping or holding the last frame. Frames are decoded by a `ReadAhead` on the context's worker
pool (`ctx.submit`), never on the frame path: one fill job at a time decodes the frames the next
few patch frames will show (predicted from the last frame interval, `ctx.dt`) into a buffer of at
most `FRAMES_AHEAD + 1` frames, dropping the ones no longer wanted. The frame thread only looks up
its frame and uploads it, once per new frame; while its frame is not decoded yet the node reports
`Deferred` and keeps showing the previous one. A clip decodes forward, and seeks (to the keyframe
before, then decodes up) when the wanted frame is behind what it decoded or more than `SEEK_GAP`
frames ahead: a loop, a clock reset, stepping back, reverse speeds.

Files follow nodes.paths: a clip's `path` and a sequence's `folder` are relative to the patch's
folder and must stay inside it; a clip is opened as `open_patch_file` opens files (regular files
only) and handed to PyAV as a file object. A clip whose frames are larger than
`Limits.texture_side`, a missing or corrupt file, fail the node with one line (remembered until the
file changes). A sequence's files are its folder's PNG and JPEG files sorted by name, listed when it
opens (and again when the folder changes).

`video.camera` reads a camera (Video4Linux on Linux, AVFoundation on macOS) on a thread of its own
that keeps only the newest frame; without one the node fails with one line.

Known downsides: frames are converted to RGBA on the worker (a 1080p frame is 8 MB; the buffer holds
`FRAMES_AHEAD + 1` of them per node). Reverse playback of a clip seeks for every frame. A clip's
frame index comes from its timestamps at its average frame rate: variable frame rate clips show the
frame that covers each index.
"""

from __future__ import annotations

import collections
import concurrent.futures
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from nodes.errors import Deferred, one_line, shown
from nodes.library.gpu.sources import GPUTargets, _gpu, _load_image
from nodes.limits import active_limits
from nodes.paths import open_patch_file, resolve_patch_path
from nodes.spec import Determinism, NodeContext, Texture, node

HOT = Determinism.NONDETERMINISTIC

#: Frames decoded ahead of the one shown (per node).
FRAMES_AHEAD = 6
#: A clip decodes forward to a frame at most this far ahead; further, it seeks.
SEEK_GAP = 30
#: Decode times kept per node (for the benchmark and the tests).
TIMES_KEPT = 256
SEQUENCE_SUFFIXES = (".png", ".jpg", ".jpeg")


class ClipInfo:
    """What is known of a source: frames per second (its own; 0 for a sequence, whose rate is the
    node's) and frame count (None until known; a clip's estimate is corrected at its end)."""

    __slots__ = ("fps", "frame_count")

    def __init__(self, fps: float, frame_count: int | None) -> None:
        self.fps = fps
        self.frame_count = frame_count


#: `store(index, pixels, decode_seconds)`: keep a decoded frame; False when nobody wants more.
Store = Callable[[int, np.ndarray, float], bool]


class FrameSource(Protocol):
    """Decoded frames by index, used by one worker job at a time."""

    info: ClipInfo

    def fill(self, wanted: Sequence[int], has: Callable[[int], bool], store: Store) -> None: ...

    def close(self) -> None: ...


def _failure(name: str, error: BaseException) -> str:
    """One line saying why `name` could not be read."""
    strerror = getattr(error, "strerror", None)  # OSError, and PyAV's FFmpegError
    if isinstance(strerror, str) and strerror:
        reason = strerror
    else:
        lines = str(error).strip().splitlines()
        reason = lines[0] if lines else type(error).__name__
    if shown(name) in reason or name in reason:
        return one_line(reason)
    return one_line(f"{shown(name)}: {reason}")


def _check_frame_size(what: str, width: int, height: int) -> None:
    side = active_limits().texture_side
    if not (1 <= width <= side and 1 <= height <= side):
        raise ValueError(f"{what}: frame size {width}x{height} is above the limit texture_side "
                         f"= {side}")  # fmt: skip


class ClipSource:
    """A video file decoded with PyAV: forward, seeking when a frame is behind or far ahead."""

    def __init__(self, path: Path, name: str) -> None:
        import av

        self.name = name
        self.file = open_patch_file(path, "video")
        try:
            self.container = av.open(self.file, mode="r")
            if not self.container.streams.video:
                raise ValueError(f"video file {shown(name)}: no video stream")
            self.stream = self.container.streams.video[0]
            self.stream.thread_type = "AUTO"
            context = self.stream.codec_context
            _check_frame_size(f"video file {shown(name)}", context.width, context.height)
            rate = self.stream.average_rate or self.stream.guessed_rate or self.stream.base_rate
            if not rate or rate <= 0:
                raise ValueError(f"video file {shown(name)}: no frame rate")
            self.fps = float(rate)
            if self.stream.time_base is None:
                raise ValueError(f"video file {shown(name)}: no time base")
            self.time_base = float(self.stream.time_base)
            start = self.stream.start_time
            self.start = start * self.time_base if start else 0.0
            self.info = ClipInfo(self.fps, self._frame_count())
            self.frames: Iterator[Any] = self.container.decode(self.stream)
            self.last_index = -1  # of the frame decoded last
            self.after_seek = False
            self.ended = False
        except BaseException:
            self.close()
            raise

    def _frame_count(self) -> int | None:
        if self.stream.frames:
            return int(self.stream.frames)
        if self.stream.duration is not None:
            seconds = self.stream.duration * self.time_base
        elif self.container.duration is not None:
            seconds = self.container.duration / 1_000_000
        else:
            return None
        return max(1, round(seconds * self.fps))

    def _seek(self, index: int) -> None:
        seconds = self.start + index / self.fps
        self.container.seek(
            math.floor(seconds / self.time_base + 1e-6), stream=self.stream, backward=True
        )
        self.frames = self.container.decode(self.stream)
        self.after_seek = True
        self.ended = False

    def _index(self, frame: Any) -> int:
        if frame.time is None:
            return self.last_index + 1
        return round((frame.time - self.start) * self.fps)

    def fill(self, wanted: Sequence[int], has: Callable[[int], bool], store: Store) -> None:
        wanted_set = set(wanted)
        for target in wanted:
            if has(target):
                continue
            if self.ended or not (self.last_index < target <= self.last_index + SEEK_GAP):
                self._seek(target)
            while True:
                started = time.perf_counter()
                try:
                    frame = next(self.frames, None)
                except EOFError:  # PyAV's, from a seek past the end of some containers
                    frame = None
                if frame is None:  # the end: now the count is known
                    if self.last_index < 0:
                        raise ValueError(f"video file {shown(self.name)}: no frames")
                    self.info.frame_count = self.last_index + 1
                    self.ended = True  # anything wanted next needs a seek
                    break
                index = self._index(frame)
                # A frame covers the indices since the one before it (a variable frame rate
                # skips some); the first after a seek covers itself, or the target it passed.
                after = min(index, target) - 1 if self.after_seek else self.last_index
                self.after_seek = False
                covered = [i for i in wanted_set if after < i <= index and not has(i)]
                self.last_index = index
                if covered:
                    pixels = frame.to_ndarray(format="rgba")
                    seconds = time.perf_counter() - started
                    for i in covered:
                        if not store(i, pixels, seconds):
                            return
                if index >= target:
                    break

    def close(self) -> None:
        container = getattr(self, "container", None)
        if container is not None:
            container.close()
        self.file.close()


class SequenceSource:
    """The PNG and JPEG files of a folder, sorted by name: frame i is the i-th file."""

    def __init__(self, folder: Path | None, name: str) -> None:
        self.folder = folder
        self.name = name
        where = resolve_patch_path(folder, name, "file")
        try:
            entries = sorted(
                entry.name
                for entry in os.scandir(where)
                if entry.name.lower().endswith(SEQUENCE_SUFFIXES) and entry.is_file()
            )
        except FileNotFoundError:
            raise FileNotFoundError(f"image sequence folder {shown(name)} not found") from None
        except NotADirectoryError:
            raise ValueError(f"image sequence folder {shown(name)}: not a folder") from None
        if not entries:
            raise ValueError(f"image sequence folder {shown(name)}: no PNG or JPEG files")
        self.files = [f"{name}/{entry}" for entry in entries]
        self.info = ClipInfo(0.0, len(self.files))

    def fill(self, wanted: Sequence[int], has: Callable[[int], bool], store: Store) -> None:
        for index in wanted:
            if has(index):
                continue
            started = time.perf_counter()
            path = resolve_patch_path(self.folder, self.files[index], "image")
            pixels = _load_image(path)
            if not store(index, pixels, time.perf_counter() - started):
                return

    def close(self) -> None:
        pass


#: Rounds of waiting for background work a render may take for one frame (see `ReadAhead.frame`).
WAIT_ROUNDS = 4


class ReadAhead:
    """Frames of a source decoded ahead on the context's worker pool; see the module note.

    The frame thread calls `frame()`; the source is opened and used by one worker job at a time,
    and closed by the last one after `close()`. The buffer is shared under a lock."""

    def __init__(self, open_source: Callable[[], FrameSource], stamp: object) -> None:
        self.open_source = open_source
        self.stamp = stamp  # what the source was opened from (a file's modification time)
        self.source: FrameSource | None = None
        self.info: ClipInfo | None = None
        self.error: str | None = None
        self.job: concurrent.futures.Future[None] | None = None
        self.closed = False
        self._lock = threading.Lock()
        self._frames: dict[int, np.ndarray] = {}
        self.decode_seconds: collections.deque[float] = collections.deque(maxlen=TIMES_KEPT)
        self.decoder_threads: set[int] = set()

    def frame(
        self, ctx: NodeContext, indices: Callable[[ClipInfo], list[int]], what: str
    ) -> tuple[int, np.ndarray]:
        """The frame to show now, as (index, RGBA pixels): `indices(info)` lists the index to
        show now and those wanted next. Starts a fill job when one is missing; raises Deferred
        while the frame to show is not decoded (a render waits for it: `ctx.ready`), OSError
        with the failure line once one failed."""
        for _round in range(WAIT_ROUNDS):  # opening, a fill for other frames, then this one's
            shown_now = self._frame_now(ctx, indices, what)
            if not isinstance(shown_now, str):
                return shown_now
            job = self.job
            if job is None or not ctx.ready(job):
                break
        raise Deferred(shown_now)

    def _frame_now(
        self, ctx: NodeContext, indices: Callable[[ClipInfo], list[int]], what: str
    ) -> tuple[int, np.ndarray] | str:
        """`frame()`'s answer as it stands, or why it must wait."""
        job = self.job
        if job is not None and job.done():
            self.job = None
            error = job.exception() if not job.cancelled() else None
            if error is not None:
                self.error = _failure(what, error)
        if self.error is not None:
            raise OSError(self.error)  # a new exception each time: nothing piles up on it
        info = self.info
        if info is None:
            if self.job is None:
                self.job = ctx.submit(self._fill, None)
            return f"opening {shown(what)}"
        wanted = list(dict.fromkeys(indices(info)))
        with self._lock:
            pixels = self._frames.get(wanted[0])
            missing = any(index not in self._frames for index in wanted)
        if missing and self.job is None:
            self.job = ctx.submit(self._fill, wanted)
        if pixels is None:
            return f"decoding frame {wanted[0]} of {shown(what)}"
        return wanted[0], pixels

    def _has(self, index: int) -> bool:
        with self._lock:
            return index in self._frames

    def _store(self, index: int, pixels: np.ndarray, seconds: float) -> bool:
        self.decode_seconds.append(seconds)
        with self._lock:
            self._frames[index] = pixels
        return not self.closed

    def _fill(self, wanted: list[int] | None) -> None:
        """A worker job: open the source, or decode the `wanted` frames not in the buffer."""
        self.decoder_threads.add(threading.get_ident())
        try:
            if self.closed:
                return
            if self.source is None:
                self.source = self.open_source()
                self.info = self.source.info
            if wanted is None:
                return
            keep = set(wanted)
            with self._lock:
                for index in [index for index in self._frames if index not in keep]:
                    del self._frames[index]
            self.source.fill(wanted, self._has, self._store)
        finally:
            if self.closed:
                self._close_source()

    def _close_source(self) -> None:
        source, self.source = self.source, None
        if source is not None:
            source.close()
        with self._lock:
            self._frames.clear()

    def close(self) -> None:
        """Stop: the source is closed now, or by the job running (when it ends)."""
        self.closed = True
        job = self.job
        if job is None or job.done():
            self._close_source()
        else:
            job.add_done_callback(lambda _: self._close_source())


def _file_stamp(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


class PlayerState(GPUTargets):
    """The node's texture, its reader (for the file or folder it was opened for) and the index of
    the frame in the texture."""

    __slots__ = ("reader", "reader_key", "shown_index")

    def __init__(self, path: str = "") -> None:
        super().__init__(path)
        self.reader: ReadAhead | None = None
        self.reader_key: object = None
        self.shown_index: int | None = None

    def reader_for(
        self, key: object, stamp: object, open_source: Callable[[], FrameSource]
    ) -> ReadAhead:
        """The reader for `key` opened at `stamp` (a new one when either changed)."""
        reader = self.reader
        if reader is None or self.reader_key != key or reader.stamp != stamp:
            if reader is not None:
                reader.close()
            reader = self.reader = ReadAhead(open_source, stamp)
            self.reader_key = key
        return reader

    def show(self, gl: Any, index: int, pixels: np.ndarray) -> Any:
        """The texture holding frame `index`: uploaded when it is a new one."""
        if self.shown_index != index or "out" not in self.targets or self.gl is not gl:
            if self.gl is not gl:
                GPUTargets.close(self)
                self.gl = gl
            self.replace("out", gl.upload(pixels))
            self.shown_index = index
        return self.targets["out"]

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None
        self.shown_index = None
        super().close()


def frame_index(position: float, count: int | None, loop: bool) -> int:
    """The index of the frame at `position` (in frames): wrapped when looping, else held at the
    first and last frame."""
    index = math.floor(position + 1e-6)
    if count is None:
        return max(0, index)
    if loop:
        return index % count
    return min(max(0, index), count - 1)


def _upcoming_positions(ctx: NodeContext, rate: float) -> list[float]:
    """Positions (in frames) now and at the next `FRAMES_AHEAD` patch frames, predicted from the
    last frame interval (1/60 s before there is one)."""
    step = ctx.dt if ctx.dt > 0 else 1 / 60
    return [(ctx.t + k * step) * rate for k in range(FRAMES_AHEAD + 1)]


@node(
    "video.file",
    determinism=HOT,
    init_state=PlayerState,
    hints={"path": "file", "loop": "toggle"},
    docs={
        "path": "The video file, relative to the patch's folder.",
        "loop": "Start again at the end; off: hold the last frame.",
        "speed": "Playback speed: 1 is the clip's own rate, 2 twice as fast, negative backwards.",
        "out": "The frame for the patch time, as a texture.",
    },
)
def video_file(
    ctx: NodeContext, state: PlayerState, path: str = "", loop: bool = True, speed: float = 1.0
) -> Texture:
    """A video file played in step with the patch clock, decoded ahead in the background. The
    frame shown is the clip's frame at the patch time times `speed`; until it is decoded the node
    reports deferred and keeps its previous frame. A missing, corrupt or too large clip fails the
    node with one line."""
    gl = _gpu(ctx)
    if not path:
        return None
    resolved = resolve_patch_path(ctx.folder, path, "video")
    reader = state.reader_for(resolved, _file_stamp(resolved), lambda: ClipSource(resolved, path))

    def indices(info: ClipInfo) -> list[int]:
        return [frame_index(position, info.frame_count, loop)
                for position in _upcoming_positions(ctx, info.fps * speed)]  # fmt: skip

    index, pixels = reader.frame(ctx, indices, path)
    return state.show(gl, index, pixels)


@node(
    "video.sequence",
    determinism=HOT,
    init_state=PlayerState,
    hints={"folder": "file", "loop": "toggle"},
    ranges={"fps": (0.0, 1000.0)},
    docs={
        "folder": "The folder of PNG or JPEG files (frames in name order), inside the patch's "
        "folder.",
        "fps": "Frames per second of the sequence.",
        "loop": "Start again after the last file; off: hold the last one.",
        "out": "The image for the patch time, as a texture.",
    },
)
def video_sequence(
    ctx: NodeContext, state: PlayerState, folder: str = "", fps: float = 24.0, loop: bool = True
) -> Texture:
    """An image sequence: a folder's PNG and JPEG files in name order. They play at `fps` in step
    with the patch clock and load ahead in the background."""
    gl = _gpu(ctx)
    if not folder:
        return None
    resolved = resolve_patch_path(ctx.folder, folder, "file")
    patch_folder = ctx.folder
    reader = state.reader_for(
        resolved, _file_stamp(resolved), lambda: SequenceSource(patch_folder, folder)
    )

    def indices(info: ClipInfo) -> list[int]:
        return [frame_index(position, info.frame_count, loop)
                for position in _upcoming_positions(ctx, fps)]  # fmt: skip

    index, pixels = reader.frame(ctx, indices, folder)
    return state.show(gl, index, pixels)


# ----------------------------------------------------------------------------- camera


def camera_input(device: int) -> tuple[str, str]:
    """PyAV's (file, format) for camera number `device` on this platform; OSError (one line)
    when the platform has no camera at that number or no camera support."""
    if device < 0:
        raise ValueError(f"no camera {device}: camera numbers start at 0")
    if sys.platform.startswith("linux"):
        name = f"/dev/video{device}"
        if not os.path.exists(name):
            raise OSError(f"no camera {device}: {name} not found")
        return name, "v4l2"
    if sys.platform == "darwin":
        return str(device), "avfoundation"
    raise OSError(f"no camera support on {sys.platform}")


class CameraState(GPUTargets):
    """The capture thread (which keeps the newest frame and a count of frames) and what the node
    uploaded last."""

    __slots__ = ("count", "device", "error", "latest", "lock", "shown_count", "stopping", "thread")

    def __init__(self, path: str = "") -> None:
        super().__init__(path)
        self.device: int | None = None
        self.thread: threading.Thread | None = None
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.latest: np.ndarray | None = None
        self.count = 0
        self.shown_count = 0
        self.error: str | None = None

    def start(self, device: int) -> None:
        self.stop()
        self.device = device
        self.stopping = threading.Event()
        self.latest, self.count, self.shown_count, self.error = None, 0, 0, None
        name, form = camera_input(device)
        self.thread = threading.Thread(
            target=self._capture, args=(name, form, self.stopping), name="patchbay-camera",
            daemon=True,
        )  # fmt: skip
        self.thread.start()

    def _capture(self, name: str, form: str, stopping: threading.Event) -> None:
        try:
            import av

            with av.open(name, format=form) as container:
                stream = container.streams.video[0]
                context = stream.codec_context
                _check_frame_size(f"camera {self.device}", context.width, context.height)
                for frame in container.decode(stream):
                    if stopping.is_set():
                        return
                    pixels = frame.to_ndarray(format="rgba")
                    with self.lock:
                        self.latest = pixels
                        self.count += 1
        except Exception as error:  # reported by the node on the frame thread
            if not stopping.is_set():
                self.error = _failure(f"camera {self.device}", error)

    def stop(self) -> None:
        self.stopping.set()
        self.thread = None

    def close(self) -> None:
        self.stop()
        self.device = None
        super().close()


@node(
    "video.camera",
    determinism=HOT,
    init_state=CameraState,
    ranges={"device": (0, 63)},
    docs={
        "device": "The camera's number (0: the first one).",
        "out": "The camera's newest frame, as a texture.",
    },
)
def video_camera(ctx: NodeContext, state: CameraState, device: int = 0) -> Texture:
    """The newest frame of a live camera. It is read on a thread of its own (Video4Linux on Linux,
    AVFoundation on macOS); without that camera the node fails with one line."""
    gl = _gpu(ctx)
    if state.device != device or state.thread is None:
        state.start(device)
    if state.error is not None:
        raise OSError(state.error)
    with state.lock:
        pixels, count = state.latest, state.count
    if pixels is None:
        raise Deferred(f"opening camera {device}")
    if count != state.shown_count or "out" not in state.targets or state.gl is not gl:
        if state.gl is not gl:
            GPUTargets.close(state)
            state.gl = gl
        state.replace("out", gl.upload(pixels))
        state.shown_count = count
    return state.targets["out"]
