"""The audio-reactive example: its bundled loop is the one `beat_loop()` makes, and played on
GL its circle grows on the kicks and shrinks between them.

The loop is made here (and written once into resources/examples with `python -m
tests.gl.test_audio_example`): two seconds of a four-beat bar at 120 BPM, a falling-pitch kick on
every beat and noise hats between, 16-bit mono at 22.05 kHz (small: about 88 KB; audio.file
resamples it to 48 kHz).
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import numpy as np
import pytest
import soundfile

from evaluators import NodeStatus, make_evaluator
from evaluators.services.gl import GLService
from nodes import load_patch
from tests.waiting import poll_until

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]

EXAMPLES = importlib.resources.files("resources") / "examples"
LOOP_NAME = "audio_reactive_beat.wav"
LOOP_RATE = 22_050
FPS = 60


def beat_loop() -> np.ndarray:
    """The example's loop as 16-bit samples (see the module note)."""
    t = np.arange(2 * LOOP_RATE) / LOOP_RATE
    since_beat = t % 0.5
    kick = np.sin(2 * np.pi * (45 + 110 * np.exp(-since_beat * 35)) * since_beat)
    kick *= np.exp(-since_beat * 9)
    since_hat = (t - 0.25) % 0.5
    hats = np.random.default_rng(12).standard_normal(len(t)) * np.exp(-since_hat * 70)
    signal = 0.7 * kick + 0.12 * hats
    return np.round(np.clip(signal, -1, 1) * 32767).astype(np.int16)


def test_the_bundled_loop_is_the_generated_one() -> None:
    path = Path(str(EXAMPLES / LOOP_NAME))
    assert path.stat().st_size < 200_000
    samples, rate = soundfile.read(path, dtype="int16")
    assert rate == LOOP_RATE
    np.testing.assert_array_equal(samples, beat_loop())


def lit_pixels(gl: GLService, texture: object) -> int:
    pixels = gl.readback(texture)
    return int((pixels[..., :3].max(axis=2) > 128).sum())


def test_the_circle_follows_the_kicks(gl: GLService) -> None:
    patch = load_patch(Path(str(EXAMPLES / "audio_reactive.patchbay")))
    patch.update_settings(resolution=[96, 54])
    evaluator = make_evaluator("flat", patch, gpu=gl)

    def loaded() -> bool:
        evaluator.run_frame(0.0, 0)
        return evaluator.status("sound") != NodeStatus.DEFERRED

    try:
        assert poll_until(loaded)
        errors = {node_id: evaluator.error(node_id) for node_id in patch.nodes}
        assert all(evaluator.status(node_id) in ("ok", "cached") for node_id in patch.nodes), errors
        sizes = []
        for frame in range(1, 121):  # two loops: beats every 30 frames
            evaluator.run_frame(frame / FPS, frame)
            sizes.append(lit_pixels(gl, evaluator.output("output")))
        on_kicks = [sizes[frame - 1] for frame in (31, 61, 91)]
        between = [sizes[frame - 1] for frame in (25, 55, 85)]
        assert min(on_kicks) > 2 * max(between), (on_kicks, between)
        assert sizes[30:60] == sizes[90:120]  # the loop plays the same every time round
    finally:
        evaluator.close()
        evaluator.ctx.release_all()


if __name__ == "__main__":
    soundfile.write(Path(str(EXAMPLES / LOOP_NAME)), beat_loop(), LOOP_RATE, subtype="PCM_16")
