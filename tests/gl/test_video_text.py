"""Video clips, image sequences, cameras and text, through real evaluators on EGL.

The clips are made here with PyAV: 30 frames at 30 fps, frame i a solid colour whose red channel is
8 * i, encoded losslessly (FFV1, RGB), so a pixel read back names the frame shown. Frames run at
chosen patch times; a node that is still decoding is run again at the same time until it settles.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from PIL import Image

from evaluators import EvaluatorKind
from evaluators.graph.path import NodePath
from evaluators.services.gl import GLService
from nodes import Patch, load_patch
from nodes.library.media import video as video_library
from nodes.limits import active_limits, set_active_limits
from nodes.paths import resources_folder
from tests.evaluator_kinds import evaluator_for_tests

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]

CLIP_FRAMES = 30
CLIP_FPS = 30
ARTIFACTS = Path(__file__).parent.parent / "artifacts"


def frame_colour(index: int) -> tuple[int, int, int]:
    return (8 * index, 255 - 8 * index, 100)


def make_clip(path: Path, frames: int = CLIP_FRAMES, size: tuple[int, int] = (32, 24)) -> Path:
    """A lossless clip: frame i filled with frame_colour(i)."""
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("ffv1", rate=CLIP_FPS)
        stream.width, stream.height = size
        stream.pix_fmt = "bgr0"
        for index in range(frames):
            pixels = np.empty((size[1], size[0], 3), np.uint8)
            pixels[:] = frame_colour(index)
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return path


class Player:
    """A patch run at chosen patch times by one evaluator on the shared GL service."""

    def __init__(self, gl: GLService, folder: Path, kind: EvaluatorKind) -> None:
        self.gl = gl
        self.patch = Patch()
        self.patch.update_settings(resolution=[64, 64])
        self.patch.folder = folder
        self.kind = kind
        self.evaluator: Any = None
        self.frame = 0

    def add(self, type_id: str, **values: Any) -> str:
        node_id = self.patch.add_node(type_id, values)
        self.patch.connect(node_id, "out", self.patch.add_node("gpu.output"), "in")
        return node_id

    def run_at(self, t: float) -> None:
        if self.evaluator is None:
            self.evaluator = evaluator_for_tests(self.kind, self.patch, gpu=self.gl)
        with self.gl.frame():
            self.evaluator.run_frame(t, self.frame)
        self.frame += 1

    def settle_at(self, t: float, node_id: str) -> str:
        """Run frames at time `t` until `node_id` is not deferred; its status."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            self.run_at(t)
            status = self.evaluator.status(node_id)
            if status != "deferred":
                return str(status)
            time.sleep(0.002)
        raise AssertionError(f"{node_id} still deferred at t={t}")

    def pixels(self, node_id: str) -> np.ndarray:
        target = self.evaluator.output(node_id)
        assert target is not None, f"{node_id}: {self.evaluator.error(node_id)}"
        return self.gl.readback(target).astype(int)

    def shown_frame(self, node_id: str) -> int:
        """The clip frame in the node's texture (from its red channel)."""
        red, green, _, _ = self.pixels(node_id)[0, 0]
        index = round(red / 8)
        assert (red, green) == (8 * index, 255 - 8 * index)
        return index

    def state(self, node_id: str) -> Any:
        return self.evaluator.ctx.states[NodePath.of(node_id)]

    def close(self) -> None:
        if self.evaluator is not None:
            self.evaluator.close()
            self.evaluator.ctx.release_all()


@pytest.fixture(params=["flat", "lazy"])
def player(gl: GLService, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Player]:
    made = Player(gl, tmp_path, request.param)
    yield made
    made.close()


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    return make_clip(tmp_path / "clip.mkv")


def at_frame(index: float, fps: float = CLIP_FPS) -> float:
    """The patch time a quarter of a frame into frame `index` (clear of the frame boundaries)."""
    return (index + 0.25) / fps


# ----------------------------------------------------------------------------- video.file


def test_the_frame_for_the_patch_time_forward_and_back(player: Player, clip: Path) -> None:
    video = player.add("video.file", path=clip.name)
    for index in (0, 1, 2, 5, 17, 29, 3, 0, 12):  # forward, then back (seeks)
        assert player.settle_at(at_frame(index), video) == "ok"
        assert player.shown_frame(video) == index


def test_loop_wraps_and_no_loop_holds_the_last_frame(player: Player, clip: Path) -> None:
    video = player.add("video.file", path=clip.name, loop=True)
    player.settle_at(at_frame(CLIP_FRAMES + 3), video)
    assert player.shown_frame(video) == 3
    player.settle_at(at_frame(2 * CLIP_FRAMES + 7), video)
    assert player.shown_frame(video) == 7
    player.patch.set_value(video, "loop", False)
    player.settle_at(at_frame(CLIP_FRAMES + 3), video)
    assert player.shown_frame(video) == CLIP_FRAMES - 1


@pytest.mark.parametrize("speed", [2.0, 0.5])
def test_speed(player: Player, clip: Path, speed: float) -> None:
    video = player.add("video.file", path=clip.name, speed=speed)
    for k in range(12):
        player.settle_at(k / CLIP_FPS + 0.1 / CLIP_FPS, video)
        assert player.shown_frame(video) == int((k + 0.1) * speed) % CLIP_FRAMES


def test_decoding_never_runs_on_the_frame_thread(
    player: Player, clip: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    decoding_threads: set[int] = set()
    real_fill = video_library.ClipSource.fill

    def recording_fill(self: Any, *args: Any) -> None:
        decoding_threads.add(threading.get_ident())
        real_fill(self, *args)

    real_open = video_library.ClipSource.__init__

    def recording_open(self: Any, *args: Any) -> None:
        decoding_threads.add(threading.get_ident())
        real_open(self, *args)

    monkeypatch.setattr(video_library.ClipSource, "fill", recording_fill)
    monkeypatch.setattr(video_library.ClipSource, "__init__", recording_open)
    video = player.add("video.file", path=clip.name)
    for index in range(CLIP_FRAMES):
        player.settle_at(at_frame(index), video)
        assert player.shown_frame(video) == index
    assert decoding_threads
    assert threading.get_ident() not in decoding_threads
    reader = player.state(video).reader
    assert threading.get_ident() not in reader.decoder_threads
    assert len(reader.decode_seconds) >= CLIP_FRAMES


def test_a_new_frame_is_uploaded_once(
    player: Player, clip: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    video = player.add("video.file", path=clip.name)
    player.settle_at(at_frame(4), video)
    uploads: list[tuple[int, ...]] = []
    real_upload = player.gl.upload

    def counting_upload(array: np.ndarray) -> Any:
        uploads.append(array.shape)
        return real_upload(array)

    monkeypatch.setattr(player.gl, "upload", counting_upload)
    for step in range(4):  # four patch frames inside clip frame 4, then one in frame 5
        player.run_at(at_frame(4) + step * 0.005)
    assert uploads == []
    player.settle_at(at_frame(5), video)
    assert player.shown_frame(video) == 5
    assert len(uploads) == 1


def test_the_read_ahead_buffer_is_bounded(player: Player, clip: Path) -> None:
    video = player.add("video.file", path=clip.name)
    for index in range(0, CLIP_FRAMES, 3):
        player.settle_at(at_frame(index), video)
        reader = player.state(video).reader
        assert len(reader._frames) <= video_library.FRAMES_AHEAD + 1


def test_a_missing_clip_fails_in_one_line(player: Player) -> None:
    video = player.add("video.file", path="missing.mp4")
    assert player.settle_at(0.0, video) == "failed"
    error = player.evaluator.error(video)
    assert "missing.mp4" in error and "not found" in error and "\n" not in error


def test_a_corrupt_clip_fails_in_one_line(player: Player, tmp_path: Path) -> None:
    (tmp_path / "broken.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)) * 40)
    video = player.add("video.file", path="broken.mp4")
    assert player.settle_at(0.0, video) == "failed"
    error = player.evaluator.error(video)
    assert "broken.mp4" in error and "Invalid data" in error and "\n" not in error
    player.run_at(0.1)  # the failure is remembered: no new decoding job
    assert player.state(video).reader.job is None
    assert player.evaluator.status(video) == "failed"


def test_a_clip_without_frames_fails_in_one_line(player: Player, tmp_path: Path) -> None:
    with av.open(str(tmp_path / "empty.avi"), mode="w") as container:  # a header, no frames
        stream = container.add_stream("mpeg4", rate=CLIP_FPS)
        stream.width, stream.height = 32, 24
        container.start_encoding()
    video = player.add("video.file", path="empty.avi")
    assert player.settle_at(0.0, video) == "failed"
    error = player.evaluator.error(video)
    assert "empty.avi" in error and "no frames" in error and "\n" not in error
    player.run_at(0.1)  # remembered: no decoding job a frame
    assert player.state(video).reader.job is None


def test_a_clip_with_frames_above_the_texture_limit_is_refused(player: Player, clip: Path) -> None:
    limits = active_limits()
    set_active_limits(limits.replaced(texture_side=16))
    try:
        video = player.add("video.file", path=clip.name)
        assert player.settle_at(0.0, video) == "failed"
        error = player.evaluator.error(video)
        assert "32x24" in error and "texture_side = 16" in error and "\n" not in error
    finally:
        set_active_limits(limits)


def test_a_clip_outside_the_patch_folder_is_refused(gl: GLService, tmp_path: Path) -> None:
    make_clip(tmp_path / "outside.mkv")
    inner = tmp_path / "patch"
    inner.mkdir()
    player = Player(gl, inner, "flat")
    try:
        video = player.add("video.file", path="../outside.mkv")
        assert player.settle_at(0.0, video) == "failed"
        assert "outside the patch's folder" in player.evaluator.error(video)
    finally:
        player.close()


def test_a_fifo_or_a_folder_named_as_a_clip_fails_without_blocking(
    player: Player, tmp_path: Path
) -> None:
    os.mkfifo(tmp_path / "pipe.mp4")
    (tmp_path / "folder.mp4").mkdir()
    for name in ("pipe.mp4", "folder.mp4"):
        video = player.add("video.file", path=name)
        assert player.settle_at(0.0, video) == "failed"
        error = player.evaluator.error(video)
        assert name in error and "not a regular file" in error


def test_a_sequence_frame_linked_from_outside_is_refused(gl: GLService, tmp_path: Path) -> None:
    inner = tmp_path / "patch"
    inner.mkdir()
    write_sequence(inner / "frames")
    outside = tmp_path / "secret.png"
    Image.new("RGB", (4, 4)).save(outside)
    (inner / "frames" / "0_first.png").symlink_to(outside)
    player = Player(gl, inner, "flat")
    try:
        sequence = player.add("video.sequence", folder="frames", fps=10.0)
        assert player.settle_at(0.0, sequence) == "failed"
        assert "outside the patch's folder" in player.evaluator.error(sequence)
    finally:
        player.close()


def test_removing_the_node_closes_its_clip(player: Player, clip: Path) -> None:
    video = player.add("video.file", path=clip.name)
    player.settle_at(at_frame(3), video)
    reader = player.state(video).reader
    player.patch.remove_node(video)
    player.run_at(at_frame(4))
    deadline = time.monotonic() + 30
    while reader.source is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert reader.closed and reader.source is None


# ----------------------------------------------------------------------------- sequences


def write_sequence(folder: Path) -> list[tuple[int, int, int]]:
    """Three frames named out of order on disk; sorted by name: a, b, c. A text file is ignored."""
    folder.mkdir()
    colours = {"b_02.png": (0, 200, 0), "a_01.png": (200, 0, 0), "c_03.jpg": (0, 0, 200)}
    for name, colour in colours.items():
        pixels = np.empty((8, 8, 3), np.uint8)
        pixels[:] = colour
        Image.fromarray(pixels).save(folder / name, quality=95)
    (folder / "notes.txt").write_text("not a frame")
    return [colours["a_01.png"], colours["b_02.png"], colours["c_03.jpg"]]


def near(actual: Any, expected: Any, tolerance: int = 6) -> bool:
    return bool(np.all(np.abs(np.asarray(actual)[:3] - np.asarray(expected)) <= tolerance))


def test_an_image_sequence_plays_in_name_order_and_loops(player: Player, tmp_path: Path) -> None:
    colours = write_sequence(tmp_path / "frames")
    sequence = player.add("video.sequence", folder="frames", fps=10.0, loop=True)
    for step, expected in enumerate([*colours, colours[0], colours[1]]):
        assert player.settle_at((step + 0.25) / 10, sequence) == "ok"
        assert near(player.pixels(sequence)[4, 4], expected), step
    player.patch.set_value(sequence, "loop", False)
    player.settle_at(4.25 / 10, sequence)
    assert near(player.pixels(sequence)[4, 4], colours[2])


def test_a_sequence_folder_without_images_fails_in_one_line(player: Player, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    sequence = player.add("video.sequence", folder="empty")
    assert player.settle_at(0.0, sequence) == "failed"
    assert "no PNG or JPEG files" in player.evaluator.error(sequence)


# ----------------------------------------------------------------------------- camera


def test_no_camera_fails_the_node_in_one_line(player: Player) -> None:
    camera = player.add("video.camera", device=7)
    assert player.settle_at(0.0, camera) == "failed"
    error = player.evaluator.error(camera)
    assert "no camera 7" in error and "\n" not in error


# ----------------------------------------------------------------------------- text


def lit_pixels(image: np.ndarray) -> int:
    return int(np.count_nonzero(image[..., 3] > 128))


def test_text_renders_and_changes_with_its_input(player: Player) -> None:
    text = player.add("text.render", text="Hi", size=32.0, color=(1.0, 0.5, 0.0, 1.0))
    assert player.settle_at(0.0, text) == "ok"
    first = player.pixels(text)
    assert lit_pixels(first) > 50
    solid = first[first[..., 3] == 255]
    assert np.all(solid[:, :3] == (255, 128, 0))
    player.patch.set_value(text, "text", "Hello!")
    player.settle_at(0.0, text)
    second = player.pixels(text)
    assert lit_pixels(second) > lit_pixels(first)
    assert not np.array_equal(first, second)


def test_unchanged_text_is_not_rendered_again(
    player: Player, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nodes.library.media import text as text_library

    text = player.add("text.render", text="Once", size=24.0)
    player.settle_at(0.0, text)
    calls: list[str] = []
    real = text_library.rasterise

    def counting(*args: Any) -> Any:
        calls.append(args[0])
        return real(*args)

    monkeypatch.setattr(text_library, "rasterise", counting)
    for frame in range(5):
        player.run_at(0.1 * frame)
        assert player.evaluator.status(text) == "cached"
    assert calls == []
    player.patch.set_value(text, "size", 30.0)
    player.settle_at(1.0, text)
    assert calls == ["Once"]


def test_alignment_moves_the_text(player: Player) -> None:
    columns = {}
    for align in ("left", "center", "right"):
        text = player.add("text.render", text="ab", size=20.0, align=align)
        player.settle_at(0.0, text)
        lit = np.nonzero(player.pixels(text)[..., 3].max(axis=0) > 128)[0]
        columns[align] = (lit.min(), lit.max())
    assert columns["left"][0] >= 32 - 1  # starts at the position
    assert columns["right"][1] <= 32 + 1  # ends at it
    assert columns["left"][0] > columns["center"][0] > columns["right"][0]


def test_a_font_from_the_patch_folder(player: Player, tmp_path: Path) -> None:
    shutil.copy(resources_folder() / "fonts" / "DejaVuSans.ttf", tmp_path / "mine.ttf")
    text = player.add("text.render", text="Hi", size=32.0, font="mine.ttf")
    assert player.settle_at(0.0, text) == "ok"
    assert lit_pixels(player.pixels(text)) > 50


def test_a_font_outside_the_patch_folder_is_refused(gl: GLService, tmp_path: Path) -> None:
    shutil.copy(resources_folder() / "fonts" / "DejaVuSans.ttf", tmp_path / "outside.ttf")
    inner = tmp_path / "patch"
    inner.mkdir()
    player = Player(gl, inner, "flat")
    try:
        text = player.add("text.render", text="Hi", font="../outside.ttf")
        assert player.settle_at(0.0, text) == "failed"
        error = player.evaluator.error(text)
        assert "outside the patch's folder" in error and "\n" not in error
    finally:
        player.close()


def test_a_font_that_is_not_a_font_fails_in_one_line(player: Player, tmp_path: Path) -> None:
    (tmp_path / "fake.ttf").write_bytes(b"not a font at all")
    text = player.add("text.render", text="Hi", font="fake.ttf")
    assert player.settle_at(0.0, text) == "failed"
    error = player.evaluator.error(text)
    assert "fake.ttf" in error and "\n" not in error


OVER_SHADER = """#version 330
in vec2 uv;
out vec4 fragColor;
uniform sampler2D under;
uniform sampler2D over;
void main() {
    vec4 a = texture(under, uv);
    vec4 b = texture(over, uv);
    fragColor = vec4(mix(a.rgb, b.rgb, b.a), a.a + b.a * (1.0 - a.a));
}
"""


def test_text_larger_than_any_texture_fails_in_one_line(
    player: Player, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nodes.library.media import text as text_library

    monkeypatch.setattr(text_library, "rasterise", None)  # never reached
    for text, size in (("W" * 100_000, 64.0), ("line\n" * 50_000, 12.0)):
        node_id = player.add("text.render", text=text, size=size)
        assert player.settle_at(0.0, node_id) == "failed"
        error = player.evaluator.error(node_id)
        assert "text too large" in error and "texture_side = 8192" in error


def test_text_screenshot(gl: GLService, tmp_path: Path) -> None:
    """A title over a gradient at 640x360, saved to tests/artifacts for people to look at."""
    player = Player(gl, tmp_path, "flat")
    player.patch.update_settings(resolution=[640, 360])
    try:
        patch = player.patch
        background = patch.add_node(
            "gpu.gradient", {"color_a": (0.1, 0.1, 0.3, 1.0), "color_b": (0.5, 0.1, 0.3, 1.0)}
        )
        title = patch.add_node("text.render", {"text": "patchbay\nlive titles", "size": 72.0,
                                               "color": (1.0, 0.9, 0.4, 1.0)})  # fmt: skip
        blend = patch.add_node("gpu.shader", {"source": OVER_SHADER})
        patch.connect(background, "out", blend, "under")
        patch.connect(title, "out", blend, "over")
        patch.connect(blend, "out", patch.add_node("gpu.output"), "in")
        assert player.settle_at(0.0, title) == "ok"
        player.run_at(0.0)
        image = player.pixels(blend).astype(np.uint8)
        ARTIFACTS.mkdir(exist_ok=True)
        Image.fromarray(image, "RGBA").save(ARTIFACTS / "text_render.png")
        assert lit_pixels(player.pixels(title)) > 1000
    finally:
        player.close()


# ----------------------------------------------------------------------------- examples


def example_player(gl: GLService, name: str) -> Player:
    folder = resources_folder() / "examples"
    player = Player(gl, folder, "flat")
    player.patch = load_patch(folder / name)
    return player


def test_the_video_mix_example_mixes_two_moving_clips(gl: GLService) -> None:
    player = example_player(gl, "video_mix.patchbay")
    try:
        frames = []
        for t in (0.1, 0.6, 1.1):
            for node_id in ("orbit", "stripes"):
                assert player.settle_at(t, node_id) == "ok", player.evaluator.error(node_id)
            player.run_at(t)
            frames.append(player.pixels("mix"))
        assert frames[0].shape == (180, 320, 4)
        assert np.abs(frames[0] - frames[1]).mean() > 3 and np.abs(frames[1] - frames[2]).mean() > 3
        assert all(frame[..., :3].max() > 200 for frame in frames)  # the orbiting glow
    finally:
        player.close()


def test_the_text_titles_example_shows_its_title(gl: GLService) -> None:
    player = example_player(gl, "text_titles.patchbay")
    try:
        for node_id in ("title", "subtitle"):
            assert player.settle_at(0.0, node_id) in ("ok", "cached"), player.evaluator.error(
                node_id
            )
        player.run_at(0.0)
        image = player.pixels("compose")
        yellow = (image[..., 0] > 200) & (image[..., 1] > 180) & (image[..., 2] < 140)
        assert yellow.sum() > 2000  # the title
        rows = np.nonzero(yellow.any(axis=1))[0]
        assert rows.min() > 60 and rows.max() < 220  # around the middle of the 360 rows
    finally:
        player.close()
