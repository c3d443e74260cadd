"""`patchbay run --headless --record OUT`: the gpu.output frames of a render in a video file.

Renders are 64x36 and a few frames; the recordings are decoded back with PyAV.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import av
import numpy as np
import pytest
from PIL import Image

from app.cli.main import main

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]

EXAMPLES = importlib.resources.files("resources") / "examples"
TRAIL = str(EXAMPLES / "feedback_trail.patchbay")  # moves every frame: frames all differ
FRAMES = 5


def render(*flags: str, frames: int = FRAMES, size: str = "64x36") -> int:
    return main(["run", TRAIL, "--headless", "--frames", str(frames), "--size", size, *flags])


def decoded(path: Path) -> tuple[list[np.ndarray], av.video.stream.VideoStream]:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        pictures = [frame.to_ndarray(format="rgba") for frame in container.decode(stream)]
        return pictures, stream


@pytest.mark.parametrize(("codec", "name"), [("ffv1", "take.mkv"), ("png", "take.mov")])
def test_a_lossless_recording_equals_the_png_frames(tmp_path: Path, codec: str, name: str) -> None:
    video = tmp_path / name
    assert render("--out", str(tmp_path / "png"), "--record", str(video), "--codec", codec) == 0
    pngs = [np.asarray(Image.open(p)) for p in sorted((tmp_path / "png").glob("*.png"))]
    pictures, stream = decoded(video)
    assert stream.codec_context.name == codec
    assert len(pngs) == len(pictures) == FRAMES
    assert not np.array_equal(pngs[0], pngs[-1])  # a moving picture: the order is checked too
    for index, (png, picture) in enumerate(zip(pngs, pictures, strict=True)):
        assert png.shape == picture.shape == (36, 64, 4)
        assert np.array_equal(png, picture), f"frame {index} differs"


@pytest.mark.parametrize(
    ("codec", "name", "decoded_as", "profile"),
    [
        ("prores", "take.mov", "prores", "HQ"),
        ("prores4444", "take.mov", "prores", "4444"),
        ("prores", "take.mkv", "prores", "HQ"),
        ("h264", "take.mp4", "h264", None),
        ("h264", "take.mkv", "h264", None),
        ("mjpeg", "take.mp4", "mjpeg", None),
        ("mjpeg", "take.mov", "mjpeg", None),
    ],
)
def test_every_codec_decodes_back_to_the_frames_it_was_given(
    tmp_path: Path, codec: str, name: str, decoded_as: str, profile: str | None
) -> None:
    video = tmp_path / name
    assert render("--out", str(tmp_path / "png"), "--record", str(video), "--codec", codec) == 0
    pngs = [np.asarray(Image.open(p)) for p in sorted((tmp_path / "png").glob("*.png"))]
    pictures, stream = decoded(video)
    assert stream.codec_context.name == decoded_as
    if profile is not None:
        assert stream.codec_context.profile == profile
    assert len(pictures) == FRAMES
    for png, picture in zip(pngs, pictures, strict=True):  # lossy, but the same picture
        error = np.abs(png[..., :3].astype(int) - picture[..., :3].astype(int)).mean()
        assert error < 12, error


def test_prores4444_keeps_the_alpha_channel(tmp_path: Path) -> None:
    video = tmp_path / "take.mov"
    assert render("--record", str(video), "--codec", "prores4444", frames=2) == 0
    with av.open(str(video)) as container:
        frame = next(container.decode(video=0))
        assert frame.format.name.startswith("yuva444p")  # an alpha plane was encoded


@pytest.mark.parametrize(
    ("name", "codec"), [("take.mkv", "ffv1"), ("take.mov", "prores"), ("take.mp4", "h264")]
)
def test_the_extension_picks_the_default_codec(tmp_path: Path, name: str, codec: str) -> None:
    video = tmp_path / name
    assert render("--record", str(video), frames=2) == 0
    pictures, stream = decoded(video)
    assert len(pictures) == 2
    assert stream.codec_context.name == codec


def test_the_recording_runs_at_the_runs_fps(tmp_path: Path) -> None:
    video = tmp_path / "take.mkv"
    assert render("--record", str(video), "--fps", "25", frames=3) == 0
    pictures, stream = decoded(video)
    assert len(pictures) == 3
    assert stream.average_rate == 25


def test_a_failed_render_leaves_no_file_and_keeps_the_one_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    video = tmp_path / "take.mp4"
    video.write_bytes(b"a good take")
    code = render("--record", str(video), size="63x35")  # h264 cannot encode odd sizes
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert "even width and height" in err
    assert video.read_bytes() == b"a good take"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["take.mp4"]  # no temporary left


def test_a_recording_replaces_the_file_there_only_when_it_is_done(tmp_path: Path) -> None:
    video = tmp_path / "take.mkv"
    video.write_bytes(b"an old take")
    assert render("--record", str(video), frames=2) == 0
    assert len(decoded(video)[0]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["take.mkv"]


def test_no_frame_writes_no_file_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert render("--record", str(tmp_path / "take.mkv"), frames=0) == 0
    assert "no frame to record, nothing written" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
