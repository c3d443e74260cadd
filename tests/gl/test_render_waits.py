"""Headless renders wait for background work: every frame shows what its time asks for.

A clip's frames are decoded on workers and a sound file is decoded on one; live play shows the
previous output until they are ready (`Deferred`), but a render (`play_headless` without
`--realtime`) waits, so the first rendered frame is the clip's first frame, not an empty one, and
the first printed sound level is the sound's."""

from __future__ import annotations

import io
from importlib import resources
from pathlib import Path

import numpy as np
from PIL import Image

from app.engine.player import play_headless
from evaluators.services.gl import GLService
from nodes import Patch, load_patch
from tests.gl.test_video_text import frame_colour, make_clip


def clip_patch(folder: Path) -> Patch:
    make_clip(folder / "clip.mkv")
    patch = Patch()
    patch.folder = folder
    patch.add_node("video.file", {"path": "clip.mkv", "loop": False}, node_id="clip")
    patch.add_node("gpu.output", node_id="output")
    patch.connect("clip", "out", "output", "in")
    return patch


def test_every_rendered_frame_is_the_clips_frame_for_its_time(
    gl: GLService, tmp_path: Path
) -> None:
    play_headless(clip_patch(tmp_path), 6, 30.0, [], gpu=gl, out_dir=tmp_path / "out")
    for frame in range(6):
        image = np.asarray(Image.open(tmp_path / "out" / f"frame_{frame:05d}.png").convert("RGB"))
        centre = image[image.shape[0] // 2, image.shape[1] // 2].astype(int)
        assert np.abs(centre - frame_colour(frame)).max() <= 3, (frame, centre)


def test_the_first_rendered_sound_level_is_the_sounds(gl: GLService) -> None:
    example = resources.files("resources").joinpath("examples", "audio_reactive.patchbay")
    with resources.as_file(example) as path:
        patch = load_patch(path)
    printed = io.StringIO()
    play_headless(patch, 2, 60.0, ["level.out"], out=printed, gpu=gl)
    first = printed.getvalue().splitlines()[0]
    assert first.startswith("0 level.out=")
    assert float(first.split("=")[1]) > 0.1  # the decoded sound, not the empty output
