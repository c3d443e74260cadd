"""The audio input service: the ring buffer, the PortAudio callback fed directly with blocks,
opening streams off the frame thread with a fake backend, failures and retries, and audio.input
reading the newest samples in every evaluator.

The callback is what PortAudio's thread calls (`Capture.callback(indata, frames, time, status)`),
so tests call it themselves, from the test thread or from a thread of their own; waits are by
deadline (`poll_until`).
"""

from __future__ import annotations

import builtins
import sys
import threading
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from evaluators import NodeStatus
from evaluators.services.audio import (
    NO_PORTAUDIO,
    NO_SOUNDDEVICE,
    AudioRing,
    AudioService,
    Capture,
    default_backend,
)
from evaluators.services.registry import FACTORIES
from nodes import Patch
from nodes.errors import Deferred
from tests.waiting import poll_until

MIC = (3, "USB Audio Mic: Audio (hw:1,0)", 1)
INTERFACE = (5, "Scarlett 2i2 USB: Audio (hw:2,0)", 2)


# ----------------------------------------------------------------------------- the ring


def test_ring_gives_the_newest_samples_oldest_first() -> None:
    ring = AudioRing(10)
    np.testing.assert_array_equal(ring.newest(4), np.zeros(4))  # nothing written yet
    ring.write(np.array([1, 2, 3], np.float32))
    np.testing.assert_array_equal(ring.newest(5), [0, 0, 1, 2, 3])
    for start in range(4, 30, 4):  # wraps around several times
        ring.write(np.arange(start, start + 4, dtype=np.float32))
    np.testing.assert_array_equal(ring.newest(6), np.arange(26, 32))
    np.testing.assert_array_equal(ring.newest(10), np.arange(22, 32))
    assert len(ring.newest(1000)) == 10  # never more than it holds
    assert ring.written == 31


def test_ring_stays_bounded_whatever_is_written() -> None:
    ring = AudioRing(8)
    ring.write(np.arange(100, dtype=np.float32))  # one block bigger than the ring
    np.testing.assert_array_equal(ring.newest(8), np.arange(92, 100))
    for _ in range(1000):
        ring.write(np.ones(7, np.float32))
    assert ring._buffer.shape == (8,) and ring.written == 7100


def test_callback_blocks_arrive_mono_and_bad_blocks_are_counted() -> None:
    capture = Capture(ring_seconds=0.01)  # 480 samples
    stereo = np.stack([np.full(256, 0.2), np.full(256, 0.6)], axis=1).astype(np.float32)
    capture.callback(stereo, 256, None, None)
    np.testing.assert_allclose(capture.newest(4), [0.4] * 4)
    mono = np.arange(256, dtype=np.float32).reshape(256, 1)
    capture.callback(mono, 256, None, SimpleNamespace(input_overflow=True))
    np.testing.assert_array_equal(capture.newest(3), [253, 254, 255])
    assert capture.overflows == 1
    capture.callback("not samples", 256, None, None)
    capture.callback(np.zeros((2, 2, 2)), 2, None, None)
    assert capture.bad_blocks == 2
    assert capture.ring.written == 512
    assert capture.ring._buffer.shape == (480,)


def test_callback_from_another_thread_keeps_blocks_whole() -> None:
    """Every read sees whole blocks: each block is a constant, so a read's values change only at
    block boundaries, and counting up."""
    capture = Capture(ring_seconds=0.05)
    block = 256
    done = threading.Event()

    def feed() -> None:
        for index in range(1, 400):
            capture.callback(np.full((block, 1), index, np.float32), block, None, None)
        done.set()

    feeder = threading.Thread(target=feed)
    feeder.start()
    torn = 0
    while not done.is_set():
        samples = capture.newest(4 * block)
        changes = np.flatnonzero(np.diff(samples)) + 1
        if samples[0] != 0 and any(at % block for at in changes - (len(samples) % block)):
            torn += 1
    feeder.join()
    assert torn == 0
    np.testing.assert_array_equal(capture.newest(2), [399, 399])


# ----------------------------------------------------------------------------- the service


class FakeStream:
    def __init__(self, device: Any, callback: Callable[..., None]) -> None:
        self.device = device
        self.callback = callback
        self.closed = False

    def close(self) -> None:
        self.closed = True


class FakeBackend:
    def __init__(self, devices: list[Any], default: Any = None) -> None:
        self.devices = devices
        self.default = default
        self.streams: list[FakeStream] = []
        self.opened_on: list[str] = []
        self.gate = threading.Event()
        self.gate.set()

    def inputs(self) -> list[Any]:
        return list(self.devices)

    def default_input(self) -> Any:
        return self.default

    def open_input(self, device: Any, latency: Any, callback: Callable[..., None]) -> FakeStream:
        self.gate.wait(30)
        self.opened_on.append(threading.current_thread().name)
        stream = FakeStream(device, callback)
        self.streams.append(stream)
        return stream


def opened(service: AudioService, device: str, latency: float = 0.0) -> Capture:
    found: list[Capture] = []

    def ready() -> bool:
        try:
            found.append(service.capture(device, latency))
        except Deferred:
            return False
        return True

    assert poll_until(ready)
    return found[0]


def test_a_device_opens_off_the_frame_thread_by_part_of_its_name() -> None:
    backend = FakeBackend([MIC, INTERFACE], default=MIC)
    backend.gate.clear()
    service = AudioService(backend)
    with pytest.raises(Deferred):
        service.capture("scarlett", 0.0)  # asked: opening on the service's thread
    backend.gate.set()
    capture = opened(service, "scarlett")
    assert capture.name == INTERFACE[1]
    assert backend.streams[0].device == INTERFACE
    assert backend.opened_on == ["patchbay-audio_0"]
    assert service.capture("scarlett", 0.0) is capture  # the same from then on
    assert opened(service, "").name == MIC[1]  # "" is the default input
    service.close()
    assert all(stream.closed for stream in backend.streams)


def test_a_missing_device_fails_in_one_line_and_is_looked_for_again_later() -> None:
    now = [100.0]
    backend = FakeBackend([MIC])
    service = AudioService(backend, clock=lambda: now[0], retry_seconds=2.0)

    def failure() -> str:
        with pytest.raises(RuntimeError) as raised:
            opened(service, "Scarlett")
        return str(raised.value)

    assert failure() == (f"no audio input: no input device matching 'Scarlett' (inputs: {MIC[1]})")
    backend.devices.append(INTERFACE)  # plugged in
    now[0] += 1.0
    with pytest.raises(RuntimeError, match="no input device matching"):
        service.capture("Scarlett", 0.0)  # not looked for again yet
    now[0] += 1.5
    assert opened(service, "Scarlett").name == INTERFACE[1]
    service.close()


def test_a_device_that_refuses_fails_in_one_line() -> None:
    class Refusing(FakeBackend):
        def open_input(self, *args: Any) -> FakeStream:
            raise ValueError("Invalid sample rate\n[PaErrorCode -9997]")

    service = AudioService(Refusing([MIC], default=MIC))
    with pytest.raises(RuntimeError) as raised:
        opened(service, "")
    assert str(raised.value) == "no audio input: ValueError: Invalid sample rate"
    service.close()


def test_a_stream_that_opens_after_close_is_closed() -> None:
    backend = FakeBackend([MIC], default=MIC)
    backend.gate.clear()
    service = AudioService(backend)
    with pytest.raises(Deferred):
        service.capture("", 0.0)
    service.close()
    backend.gate.set()
    assert poll_until(lambda: len(backend.streams) == 1 and backend.streams[0].closed)


def test_without_sounddevice_or_portaudio_the_reason_is_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "sounddevice", None)
    assert default_backend() == (None, NO_SOUNDDEVICE)
    monkeypatch.delitem(sys.modules, "sounddevice")
    real_import = builtins.__import__

    def no_portaudio(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "sounddevice":
            raise OSError("PortAudio library not found")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_portaudio)
    assert default_backend() == (None, NO_PORTAUDIO)
    service = AudioService()
    with pytest.raises(RuntimeError, match=r"^no audio input: the PortAudio library is missing"):
        opened(service, "")
    service.close()


# ----------------------------------------------------------------------------- audio.input


def test_audio_input_gives_the_newest_samples_of_a_frame(
    make_evaluator: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = FakeBackend([MIC], default=MIC)
    monkeypatch.setitem(FACTORIES, "audio", lambda ctx: AudioService(backend))
    patch = Patch()
    patch.add_node("audio.input", {"device": "usb", "latency": 0.01}, node_id="mic")
    patch.add_node("audio.level", node_id="level")
    patch.connect("mic", "out", "level", "in")
    patch.add_node("output.value", node_id="sink")
    patch.connect("level", "out", "sink", "in")
    evaluator = make_evaluator(patch)
    frames = iter(range(10_000))

    def step() -> None:
        frame = next(frames)
        evaluator.run_frame(frame / 60, frame)

    def open_now() -> bool:
        step()
        return evaluator.status("mic") == NodeStatus.OK

    assert poll_until(open_now)
    callback = backend.streams[0].callback
    for index in range(8):  # 8 blocks of 256: 2048 samples, counting up
        block = np.arange(index * 256, (index + 1) * 256, dtype=np.float32) / 4096
        callback(block.reshape(256, 1), 256, None, None)
    step()
    samples = evaluator.output("mic")
    assert samples.dtype == np.float32 and samples.shape == (800,)  # 1/60 s at 48 kHz
    np.testing.assert_array_equal(samples, np.arange(2048 - 800, 2048, dtype=np.float32) / 4096)
    assert evaluator.output("level") > 0.3
    evaluator.ctx.release_all()
    assert backend.streams[0].closed  # closed with the context
