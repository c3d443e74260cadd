"""The audio service: live input streams (through PortAudio) captured into bounded ring buffers.

`capture(device, latency)` gives the open `Capture` of the input device whose name contains
`device` (case-insensitive; "" = the default input), asked for `latency` seconds (0 = the
device's low default). The first call starts opening the stream on the service's own thread and
raises `Deferred`: the frame never waits for a device (importing sounddevice initialises
PortAudio, which can take a while, so that happens there too). Once it is open, every call
returns the same capture. When it cannot be opened (no PortAudio library, no input device, no
device matching, a device that refuses the format) the call raises RuntimeError with one line
starting "no audio input:", and tries again at most every `RETRY_SECONDS` (a device plugged in
later is found).

Capturing: PortAudio calls `Capture.callback(indata, frames, time, status)` on its own thread with
each block; the callback mixes the block down to mono and writes it into the capture's
`AudioRing`, a fixed ring of `RING_SECONDS` of samples (older samples are overwritten), and never
raises. The frame thread only reads: `newest(count)` copies the last `count` samples out. The ring
has a lock held only while copying, so a block is either wholly in a read or not at all.

Streams are opened mono (or the device's two channels, mixed down) at `AUDIO_RATE` (48 kHz): the
one rate of every signal in the patch (nodes.library.media.dsp); a device that cannot give that rate
fails with PortAudio's message.

sounddevice is an optional extra (`patchbay[audio]`) and needs the system's PortAudio library
(libportaudio2 on Debian and Ubuntu; without it, importing sounddevice raises OSError). Without
either, the service still exists and says why in the node's one line. `status()` sums it up for
the window: the inputs capturing, those opening, or the newest failure.

Assumes the frame thread is the only caller of `capture` and `close`.
"""

from __future__ import annotations

import concurrent.futures
import math
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from evaluators.services.registry import OFF, ON, WAITING, ServiceStatus
from nodes.errors import Deferred, one_line, shown
from nodes.library.media.dsp import AUDIO_RATE

RING_SECONDS = 2.0
RETRY_SECONDS = 2.0
NO_INPUT = "no audio input"
NO_SOUNDDEVICE = f"{NO_INPUT}: sounddevice is not installed (install patchbay[audio])"
NO_PORTAUDIO = (
    f"{NO_INPUT}: the PortAudio library is missing (install libportaudio2 or your platform's "
    "PortAudio)"
)


class AudioRing:
    """The last `capacity` samples written (mono float32); one writer thread, one reader."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(1, int(capacity))
        self._buffer = np.zeros(self.capacity, np.float32)
        self._written = 0  # samples written since the start
        self._lock = threading.Lock()

    @property
    def written(self) -> int:
        """How many samples were written since the start."""
        return self._written

    def write(self, block: np.ndarray) -> None:
        """Append samples; beyond the capacity, the oldest are overwritten."""
        total = len(block)
        block = block[-self.capacity :]  # what would be overwritten at once is skipped
        count = len(block)
        if count == 0:
            return
        with self._lock:
            start = (self._written + total - count) % self.capacity
            first = min(count, self.capacity - start)
            self._buffer[start : start + first] = block[:first]
            self._buffer[: count - first] = block[first:]
            self._written += total

    def newest(self, count: int) -> np.ndarray:
        """A copy of the last `count` samples (at most the capacity), oldest first; zeros stand
        for samples from before the first one written."""
        count = max(0, min(int(count), self.capacity))
        out = np.zeros(count, np.float32)
        with self._lock:
            available = min(count, self._written)
            end = self._written % self.capacity
            start = end - available
            if start >= 0:
                out[count - available :] = self._buffer[start:end]
            else:
                wrapped = -start
                out[count - available : count - available + wrapped] = self._buffer[start:]
                out[count - available + wrapped :] = self._buffer[:end]
        return out


class Stream(Protocol):
    def close(self) -> None: ...


class Capture:
    """One input stream's samples: PortAudio's callback writes them, frames read the newest."""

    def __init__(self, name: str = "", ring_seconds: float = RING_SECONDS) -> None:
        self.name = name
        self.ring = AudioRing(round(ring_seconds * AUDIO_RATE))
        self.overflows = 0  # blocks PortAudio reported input lost before
        self.bad_blocks = 0  # blocks that were no array of samples
        self.stream: Stream | None = None

    def callback(self, indata: Any, frames: int, time: Any, status: Any) -> None:
        """PortAudio's block callback (sounddevice's signature); runs on PortAudio's thread and
        never raises."""
        try:
            if status and getattr(status, "input_overflow", False):
                self.overflows += 1
            block = np.asarray(indata, dtype=np.float32)
            if block.ndim == 2:
                block = block[:, 0] if block.shape[1] == 1 else block.mean(axis=1)
            elif block.ndim != 1:
                raise ValueError("not a block of samples")
            self.ring.write(block[: max(0, int(frames))])
        except Exception:
            self.bad_blocks += 1

    def newest(self, count: int) -> np.ndarray:
        """The last `count` samples captured (zeros before the first)."""
        return self.ring.newest(count)

    def close(self) -> None:
        stream, self.stream = self.stream, None
        if stream is not None:
            stream.close()


#: An input device: (index, name, input channels).
Device = tuple[int, str, int]


class AudioBackend(Protocol):
    """What the service needs of an audio library: list input devices, open one."""

    def inputs(self) -> list[Device]: ...

    def default_input(self) -> Device | None: ...

    def open_input(
        self, device: Device, latency: float | str, callback: Callable[..., None]
    ) -> Stream: ...


class SounddeviceBackend:
    """Input devices and streams through sounddevice (PortAudio)."""

    def __init__(self, sounddevice: Any) -> None:
        self._sd = sounddevice

    def inputs(self) -> list[Device]:
        return [
            (index, str(info["name"]), int(info["max_input_channels"]))
            for index, info in enumerate(self._sd.query_devices())
            if int(info["max_input_channels"]) > 0
        ]

    def default_input(self) -> Device | None:
        try:
            info = self._sd.query_devices(kind="input")
        except (ValueError, self._sd.PortAudioError):
            return None
        return int(info["index"]), str(info["name"]), int(info["max_input_channels"])

    def open_input(
        self, device: Device, latency: float | str, callback: Callable[..., None]
    ) -> Stream:
        stream = self._sd.InputStream(
            device=device[0],
            channels=max(1, min(2, device[2])),
            samplerate=AUDIO_RATE,
            dtype="float32",
            latency=latency,
            callback=callback,
        )
        try:
            stream.start()
        except BaseException:
            stream.close()
            raise
        opened: Stream = stream
        return opened


def default_backend() -> tuple[AudioBackend | None, str | None]:
    """sounddevice's backend, or None and the one line saying why there is no audio input."""
    try:
        import sounddevice
    except ImportError:
        return None, NO_SOUNDDEVICE
    except OSError:  # sounddevice loads PortAudio when imported
        return None, NO_PORTAUDIO
    return SounddeviceBackend(sounddevice), None


def matching_device(backend: AudioBackend, pattern: str) -> Device:
    """The input device `pattern` names (see the module note), or RuntimeError (one line)."""
    if not pattern:
        found = backend.default_input()
        if found is None:
            raise RuntimeError(f"{NO_INPUT}: no input device on this machine")
        return found
    devices = backend.inputs()
    wanted = pattern.casefold()
    for device in devices:
        if wanted in device[1].casefold():
            return device
    names = ", ".join(name for _, name, _ in devices) or "none"
    raise RuntimeError(f"{NO_INPUT}: no input device matching {shown(pattern)} (inputs: {names})")


class AudioService:
    """Live audio input for one running patch: see the module note."""

    def __init__(
        self,
        backend: AudioBackend | None = None,
        unavailable: str | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        retry_seconds: float = RETRY_SECONDS,
        ring_seconds: float = RING_SECONDS,
    ) -> None:
        """`backend` None: sounddevice's, found on the service's thread (`default_backend`);
        `unavailable`: why there is no backend (with `backend` None, input is off for that
        reason)."""
        self._backend = backend
        self._unavailable = unavailable
        self._clock = clock
        self._retry_seconds = retry_seconds
        self._ring_seconds = ring_seconds
        self._captures: dict[tuple[str, float], Capture] = {}
        self._opening: dict[tuple[str, float], concurrent.futures.Future[Capture]] = {}
        self._failed: dict[tuple[str, float], tuple[str, float]] = {}  # key -> (line, when)
        self._opener: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()  # `_closed` against the opener thread
        self._closed = False

    @classmethod
    def for_context(cls, ctx: Any) -> AudioService:
        """The service for an execution context (nothing in its settings yet)."""
        return cls()

    def begin_frame(self) -> None:
        """Nothing to drain: frames read the rings directly."""

    def capture(self, device: str, latency: float) -> Capture:
        """The open capture of `device` at `latency`; Deferred while it opens, RuntimeError (one
        line) when it cannot (see the module note)."""
        seconds = float(latency) if math.isfinite(latency) and latency > 0 else 0.0
        key = (str(device), seconds)
        found = self._captures.get(key)
        if found is not None:
            return found
        failed = self._failed.get(key)
        if failed is not None:
            if self._clock() - failed[1] < self._retry_seconds:
                raise RuntimeError(failed[0])
            del self._failed[key]
        pending = self._opening.get(key)
        if pending is None:
            if self._opener is None:
                self._opener = concurrent.futures.ThreadPoolExecutor(1, "patchbay-audio")
            pending = self._opening[key] = self._opener.submit(self._open, *key)
        if not pending.done():
            raise Deferred(f"opening audio input {shown(device or 'default')}")
        del self._opening[key]
        try:
            capture = pending.result()
        except Exception as error:
            lines = str(error).strip().splitlines()
            reason = lines[0] if lines else ""
            if not reason.startswith(NO_INPUT):
                reason = f"{NO_INPUT}: {type(error).__name__}: {reason}"
            line = one_line(reason)
            self._failed[key] = (line, self._clock())
            raise RuntimeError(line) from None
        self._captures[key] = capture
        return capture

    def status(self) -> ServiceStatus:
        """Capturing (from which inputs), off (the newest failure, while no input captures) or
        opening."""
        names = sorted({capture.name for capture in self._captures.values()})
        failures = [line for line, _ in self._failed.values()]
        if names:
            failed = f"; {failures[-1]}" if failures else ""
            return ServiceStatus(ON, f"capturing from {', '.join(names)}{failed}")
        if failures:
            return ServiceStatus(
                OFF, failures[-1], "connect an input device, or pick another in the node"
            )
        return ServiceStatus(WAITING, "opening an input")

    def _open(self, pattern: str, latency: float) -> Capture:
        """On the service's thread: find the device and start its stream."""
        if self._backend is None and self._unavailable is None:
            self._backend, self._unavailable = default_backend()
        backend = self._backend
        if backend is None:
            raise RuntimeError(self._unavailable or NO_SOUNDDEVICE)
        device = matching_device(backend, pattern)
        capture = Capture(device[1], self._ring_seconds)
        stream = backend.open_input(device, latency or "low", capture.callback)
        with self._lock:
            capture.stream = stream
            if not self._closed:
                return capture
        capture.close()  # the service closed while this opened
        raise RuntimeError(f"{NO_INPUT}: the audio service is closed")

    def close(self) -> None:
        """Stop every stream; streams still opening are closed when they are done."""
        with self._lock:
            self._closed = True
        captures, self._captures = self._captures, {}
        for capture in captures.values():
            capture.close()
        for pending in self._opening.values():
            pending.add_done_callback(_close_opened)
        self._opening.clear()
        if self._opener is not None:
            self._opener.shutdown(wait=False, cancel_futures=True)
            self._opener = None


def _close_opened(pending: concurrent.futures.Future[Capture]) -> None:
    if not pending.cancelled() and pending.exception() is None:
        pending.result().close()
