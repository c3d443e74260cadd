"""The video recorder (evaluators/services/recording.py) without GL: a bounded queue to a worker
thread that drops and counts in real time, waits in a render, and never leaves half a file."""

from __future__ import annotations

import threading
from pathlib import Path

import av
import numpy as np
import pytest

from evaluators.services.recording import (
    CODECS,
    CONTAINERS,
    DEFAULT_CODECS,
    RecordingError,
    VideoRecorder,
    recording_plan,
)

SIZE = (16, 8)


def picture(value: int) -> np.ndarray:
    image = np.full((SIZE[1], SIZE[0], 4), value, np.uint8)
    image[..., 3] = 255
    return image


class HeldRecorder(VideoRecorder):
    """A recorder whose encoder takes one frame and then waits until it is let go: a slow
    encoder, without any timing."""

    def __init__(self, *args, **kwargs) -> None:
        self.took_one = threading.Event()
        self.let_go = threading.Event()
        super().__init__(*args, **kwargs)

    def _encode(self, image: np.ndarray, index: int) -> None:
        self.took_one.set()
        self.let_go.wait()
        super()._encode(image, index)


def frames_in(path: Path) -> int:
    with av.open(str(path)) as container:
        return sum(1 for _ in container.decode(video=0))


def test_in_real_time_a_slow_encoder_drops_and_counts_without_blocking(tmp_path: Path) -> None:
    path = tmp_path / "take.mkv"
    recorder = HeldRecorder(recording_plan(path), fps=30, size=SIZE, max_pending=3)
    assert recorder.submit(picture(0), 0, block=False)
    assert recorder.took_one.wait(30)  # the encoder holds frame 0; the queue is empty
    taken = [recorder.submit(picture(i), i, block=False) for i in range(1, 11)]
    assert taken == [True] * 3 + [False] * 7  # the loop kept stepping: nothing waited
    assert recorder.dropped == 7 and recorder.frames_submitted == 11
    recorder.let_go.set()
    assert recorder.close() == path
    assert recorder.frames_written == 4
    assert frames_in(path) == 4


def test_a_render_waits_for_the_encoder_and_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "take.mkv"
    recorder = HeldRecorder(recording_plan(path), fps=30, size=SIZE, max_pending=2)
    recorder.submit(picture(0), 0, block=True)
    assert recorder.took_one.wait(30)
    feeder = threading.Thread(
        target=lambda: [recorder.submit(picture(i), i, block=True) for i in range(1, 8)]
    )
    feeder.start()
    recorder.let_go.set()
    feeder.join(60)
    assert not feeder.is_alive()
    recorder.close()
    assert recorder.dropped == 0 and recorder.frames_written == 8
    assert frames_in(path) == 8


def test_abort_leaves_no_file_and_keeps_the_one_there(tmp_path: Path) -> None:
    path = tmp_path / "take.mkv"
    path.write_bytes(b"a good take")
    recorder = VideoRecorder(recording_plan(path), fps=30, size=SIZE)
    recorder.submit(picture(1))
    assert len(list(tmp_path.iterdir())) == 2  # the good take and the temporary file
    recorder.abort()
    assert path.read_bytes() == b"a good take"
    assert list(tmp_path.iterdir()) == [path]


def test_an_encoding_error_is_one_line_and_leaves_no_file(tmp_path: Path) -> None:
    class Failing(VideoRecorder):
        def _encode(self, image: np.ndarray, index: int) -> None:
            raise OSError(28, "No space left on device")

    path = tmp_path / "take.mov"
    recorder = Failing(recording_plan(path, "png"), fps=30, size=SIZE)
    recorder.submit(picture(1))
    with pytest.raises(RecordingError, match="encoding failed: No space left on device"):
        recorder.close()
    assert list(tmp_path.iterdir()) == []


def test_a_frame_of_the_wrong_size_is_refused(tmp_path: Path) -> None:
    recorder = VideoRecorder(recording_plan(tmp_path / "take.mkv"), fps=30, size=SIZE)
    with pytest.raises(RecordingError, match="16x8 RGBA recording"):
        recorder.submit(np.zeros((4, 4, 4), np.uint8))
    recorder.abort()


def test_every_default_codec_is_one_its_container_holds() -> None:
    for suffix, codec in DEFAULT_CODECS.items():
        assert codec in CONTAINERS[suffix][1] and codec in CODECS


@pytest.mark.parametrize(
    ("suffix", "codec"),
    [(suffix, codec) for suffix, (_, holds) in CONTAINERS.items() for codec in holds],
)
def test_every_allowed_pair_records_and_decodes(tmp_path: Path, suffix: str, codec: str) -> None:
    path = tmp_path / f"take{suffix}"
    recorder = VideoRecorder(recording_plan(path, codec), fps=24, size=SIZE)
    for index in range(3):
        recorder.submit(picture(40 * index), index)
    recorder.close()
    assert frames_in(path) == 3


@pytest.mark.parametrize(("name", "codec"), [("take.mkv", "ffv1"), ("take.mov", "png")])
def test_lossless_codecs_keep_every_rgba_value(tmp_path: Path, name: str, codec: str) -> None:
    pictures = np.random.default_rng(7).integers(0, 256, (3, SIZE[1], SIZE[0], 4), np.uint8)
    path = tmp_path / name
    recorder = VideoRecorder(recording_plan(path, codec), fps=30, size=SIZE)
    for index, image in enumerate(pictures):
        recorder.submit(image, index)
    recorder.close()
    with av.open(str(path)) as container:
        back = [frame.to_ndarray(format="rgba") for frame in container.decode(video=0)]
    assert len(back) == 3
    for image, decoded in zip(pictures, back, strict=True):
        assert np.array_equal(image, decoded)  # alpha included
