"""`patchbay bench --only audio`: audio input to frame latency, and what the analysis costs.

- latency: a patch of `audio.input` -> `audio.level`, `audio.bands`, `audio.onset` runs in the
  dual evaluator at 60 fps pacing (frames start every 1/60 s on the wall clock) while a feeder
  thread calls the input's stream callback (what PortAudio's thread calls) with blocks of
  `BLOCK` samples at the real rate (one block every BLOCK / 48,000 s), each block filled with its
  own number. For each block: the time from its arrival (just before the callback) to the end of
  the first frame whose `out` holds it. Medians and 99th percentiles, in ms and in frames
  started in between (1: the next frame had it); blocks no frame showed (a frame took longer than
  the ring's share a frame holds) are counted.
- analysis: the per-frame cost of `audio.level`, `audio.bands` (8 bands) and `audio.onset` on
  800-sample frames (1/60 s at 48 kHz) of a drum-like signal, each and together (their compute
  functions with their states), and `audio.beat`; medians in microseconds.
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any

import numpy as np

from evaluators import DualEvaluator
from evaluators.services.audio import AudioService, Capture
from evaluators.services.registry import FACTORIES
from nodes import LIBRARY, Patch
from nodes.library.media.dsp import AUDIO_RATE

FPS = 60.0
BLOCK = 256  # samples: 5.3 ms at 48 kHz, a common PortAudio block
FRAME_SAMPLES = round(AUDIO_RATE / FPS)


class _FeederBackend:
    """One fake input device whose stream is fed by the bench's thread."""

    def __init__(self) -> None:
        self.callback: Any = None

    def inputs(self) -> list[tuple[int, str, int]]:
        return [(0, "bench", 1)]

    def default_input(self) -> tuple[int, str, int]:
        return (0, "bench", 1)

    def open_input(self, device: Any, latency: Any, callback: Any) -> Capture:
        self.callback = callback
        return Capture()  # stands in for the stream: closing it closes nothing


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def latency(seconds: float) -> dict[str, Any]:
    """Feed blocks for `seconds` while frames run; see the module note."""
    backend = _FeederBackend()
    patch = Patch()
    patch.add_node("audio.input", node_id="mic")
    for kind in ("audio.level", "audio.bands", "audio.onset"):
        node = patch.add_node(kind)
        patch.connect("mic", "out", node, "in")
        sink = patch.add_node("output.value")
        patch.connect(node, "out", sink, "in")
    before = FACTORIES["audio"]
    FACTORIES["audio"] = lambda ctx: AudioService(backend)
    evaluator = DualEvaluator(patch)
    try:
        return _measure(evaluator, backend, seconds)
    finally:
        FACTORIES["audio"] = before
        evaluator.close()
        evaluator.ctx.release_all()


def _measure(evaluator: DualEvaluator, backend: _FeederBackend, seconds: float) -> dict[str, Any]:
    frame = 0
    deadline = time.monotonic() + 30.0
    while evaluator.status("mic") != "ok":  # the stream opens on the service's thread
        if time.monotonic() > deadline:
            raise RuntimeError(f"audio.input did not open: {evaluator.error('mic')}")
        evaluator.run_frame(frame / FPS, frame)
        frame += 1
        time.sleep(1 / FPS)
    arrivals: dict[int, float] = {}
    stop = threading.Event()

    def feed() -> None:
        start = time.perf_counter()
        number = 1
        while not stop.is_set():
            wait = start + number * BLOCK / AUDIO_RATE - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            block = np.full((BLOCK, 1), number, np.float32)
            arrivals[number] = time.perf_counter()
            backend.callback(block, BLOCK, None, None)
            number += 1

    feeder = threading.Thread(target=feed, name="bench-audio-feeder", daemon=True)
    shown: dict[int, tuple[float, int]] = {}  # block -> (end of the frame showing it, frame)
    frames_started: list[float] = []
    feeder.start()
    start = time.perf_counter()
    first_frame = frame
    try:
        while time.perf_counter() - start < seconds:
            wait = start + (frame - first_frame) / FPS - time.perf_counter()
            if wait > 0:
                time.sleep(wait)
            frames_started.append(time.perf_counter())
            evaluator.run_frame(frame / FPS, frame)
            done = time.perf_counter()
            for number in np.unique(evaluator.output("mic")).astype(int):
                if number > 0 and number not in shown:
                    shown[int(number)] = (done, len(frames_started) - 1)
            frame += 1
    finally:
        stop.set()
        feeder.join()
    latencies_ms: list[float] = []
    latencies_frames: list[int] = []
    missed = 0
    last_shown = max(shown, default=0)
    for number, arrived in arrivals.items():
        if number > last_shown:
            continue  # arrived after the last frame read
        if number not in shown:
            missed += 1
            continue
        done, index = shown[number]
        latencies_ms.append((done - arrived) * 1000.0)
        latencies_frames.append(sum(1 for at in frames_started[: index + 1] if at >= arrived))
    return {
        "block_samples": BLOCK,
        "blocks": len(latencies_ms),
        "missed_blocks": missed,
        "median_ms": statistics.median(latencies_ms),
        "p99_ms": _percentile(latencies_ms, 0.99),
        "median_frames": statistics.median(latencies_frames),
        "p99_frames": _percentile([float(f) for f in latencies_frames], 0.99),
    }


def drum_like(seconds: float) -> np.ndarray:
    """A beat-like signal: a kick (a falling sine) every half second, noise hats between."""
    rng = np.random.default_rng(4)
    t = np.arange(round(seconds * AUDIO_RATE)) / AUDIO_RATE
    beat = t % 0.5
    kick = np.sin(2 * np.pi * (50 + 100 * np.exp(-beat * 30)) * beat) * np.exp(-beat * 8)
    hat_t = t % 0.25
    hats = rng.standard_normal(len(t)) * np.exp(-hat_t * 60) * 0.2
    return (0.6 * kick + hats).astype(np.float32)


def analysis(frames: int) -> dict[str, Any]:
    """The median per-frame cost of each analysis node on 800-sample frames, in µs."""
    signal = drum_like(frames / FPS + 1.0)
    blocks = [signal[k * FRAME_SAMPLES : (k + 1) * FRAME_SAMPLES] for k in range(frames)]
    level, bands, onset, beat = (LIBRARY[f"audio.{n}"] for n in ("level", "bands", "onset", "beat"))
    bands_state, onset_state, beat_state = (spec.init_state("") for spec in (bands, onset, beat))  # type: ignore[misc]

    class _Ctx:
        live_bpm = None

    ctx = _Ctx()
    runs = {
        "level": lambda block: level.compute(block),
        "bands": lambda block: bands.compute(bands_state, block, 8, 0.5),
        "onset": lambda block: onset.compute(onset_state, block, 2.5),
        "beat": lambda block: beat.compute(ctx, beat_state, block, False),
    }
    report: dict[str, Any] = {"frame_samples": FRAME_SAMPLES, "frames": frames}
    for name, run in runs.items():
        times = []
        for block in blocks:
            began = time.perf_counter()
            run(block)
            times.append(time.perf_counter() - began)
        report[f"{name}_us"] = statistics.median(times) * 1e6
    report["level_bands_onset_us"] = report["level_us"] + report["bands_us"] + report["onset_us"]
    return report


def audio_bench(quick: bool) -> dict[str, Any]:
    return {
        "latency": latency(2.0 if quick else 10.0),
        "analysis": analysis(300 if quick else 3000),
    }
