"""The control example (beat_circle.patchbay) plays headless: a circle that pulses with an ADSR
envelope on every beat, changes colour with a beat counter and wanders along a seeded random walk,
the same way on every run."""

from __future__ import annotations

import importlib.resources
import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.engine.player import play_headless
from evaluators.services.gl import GLService
from nodes import load_patch

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]

EXAMPLE = importlib.resources.files("resources") / "examples" / "beat_circle.patchbay"
FPS = 30.0


def play(gl: GLService, out_dir: Path, frames: int = 40) -> tuple[list[np.ndarray], list[str]]:
    patch = load_patch(Path(str(EXAMPLE)))
    patch.update_settings(resolution=[96, 54])
    prints = ["beat_label.out", "envelope.out"]
    printed = io.StringIO()
    evaluator = play_headless(patch, frames, FPS, prints, out=printed, gpu=gl, out_dir=out_dir)
    try:
        failed = {n: evaluator.error(n) for n in patch.nodes if evaluator.status(n) == "failed"}
        assert failed == {}
    finally:
        evaluator.close()
        evaluator.ctx.release_all()
    images = [np.asarray(Image.open(p)).astype(int) for p in sorted(out_dir.glob("*.png"))]
    return images, printed.getvalue().splitlines()


def lit(image: np.ndarray) -> int:
    return int((image[..., :3].max(axis=2) > 60).sum())


def test_the_circle_pulses_on_the_beat_and_replays_the_same(gl: GLService, tmp_path: Path) -> None:
    images, lines = play(gl, tmp_path / "first")
    assert len(images) == 40
    # 120 bpm at 30 fps: beats start on frames 0, 15, 30; the envelope peaks just after each
    sizes = [lit(image) for image in images]
    assert sizes[1] > 1.5 * sizes[14] and sizes[16] > 1.5 * sizes[29]
    assert lines[0].startswith("0 ") and "colour step 1" in lines[0]
    assert "beat 1, colour step 2" in lines[15] and "beat 2, colour step 3" in lines[30]
    again, lines_again = play(gl, tmp_path / "second")
    assert lines_again == lines
    assert all(np.array_equal(a, b) for a, b in zip(images, again, strict=True))
