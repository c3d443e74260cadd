"""The video part of `patchbay bench`: what `video.file` costs the frame thread at 1080p.

A 1920x1080 H.264 clip (30 fps, moving noise so that it does not compress to nothing) is written
to a temporary folder with PyAV, then a patch `video.file -> gpu.output` runs on a standalone EGL
context with the flat evaluator, paced at 60 frames per second of wall-clock time (the patch clock
follows the frame count, so every second patch frame shows a new clip frame). Reported, side by
side (medians, milliseconds):
- `frame_thread_ms`: the whole frame on the frame thread (`run_frame` in `gl.frame()`, which waits
  for the GPU), over every frame;
- `frame_thread_new_frame_ms`: the same over the frames that uploaded a new clip frame;
- `frame_thread_same_frame_ms`: over the frames that kept the frame they had;
- `decode_ms`: decoding and converting one frame to RGBA on the worker (`ReadAhead.decode_seconds`);
- `upload_only_ms`: `gl.upload` of one 1080p RGBA array again and again (warm in the caches, no
  decoding thread running), as a floor;
and how many frames were deferred (their clip frame not decoded in time) out of how many.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from evaluators import FlatEvaluator
from evaluators.graph.path import NodePath
from evaluators.services.gl import GLService
from nodes import Patch

SIZE = (1920, 1080)
CLIP_FPS = 30
PATCH_FPS = 60


def write_clip(path: Path, frames: int, size: tuple[int, int] = SIZE) -> Path:
    """An H.264 clip of `frames` frames of drifting noise at `size`."""
    import av

    width, height = size
    generator = np.random.default_rng(7)
    base = generator.integers(0, 256, (height // 8, width // 8, 3), dtype=np.uint8)
    base = np.kron(base, np.ones((8, 8, 1), np.uint8))
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=CLIP_FPS, options={"preset": "veryfast"})
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        for index in range(frames):
            pixels = np.roll(base, (index * 4, index * 6), axis=(0, 1))
            container.mux(stream.encode(av.VideoFrame.from_ndarray(pixels, format="rgb24")))
        container.mux(stream.encode(None))
    return path


def _ms(samples: list[float]) -> float | None:
    return statistics.median(samples) * 1e3 if samples else None


def _upload_only(gl: GLService, repeats: int) -> list[float]:
    pixels = np.zeros((SIZE[1], SIZE[0], 4), np.uint8)
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        with gl.frame():
            target = gl.upload(pixels)
        times.append(time.perf_counter() - started)
        gl.release(target)
    return times


def video_bench(quick: bool = False) -> dict[str, Any]:
    """Run the video benchmark; see the module note."""
    clip_frames = 45 if quick else 150
    patch_frames = clip_frames * PATCH_FPS // CLIP_FPS
    gl = GLService.standalone(SIZE)
    try:
        with tempfile.TemporaryDirectory(prefix="patchbay-video-bench-") as folder:
            write_clip(Path(folder) / "clip.mp4", clip_frames)
            patch = Patch()
            patch.update_settings(resolution=list(SIZE))
            patch.folder = Path(folder)
            video = patch.add_node("video.file", {"path": "clip.mp4", "loop": True})
            patch.connect(video, "out", patch.add_node("gpu.output"), "in")
            evaluator = FlatEvaluator(patch, gpu=gl)
            new_frame, same_frame, every_frame = [], [], []
            deferred = 0
            try:
                for frame in range(5):  # open the clip and fill the read-ahead buffer
                    with gl.frame():
                        evaluator.run_frame(0.0, frame)
                    time.sleep(0.2)
                state = evaluator.ctx.states[NodePath.of(video)]
                started_at = time.perf_counter()
                for frame in range(patch_frames):
                    due = started_at + frame / PATCH_FPS
                    time.sleep(max(0.0, due - time.perf_counter()))
                    shown_before = state.shown_index
                    started = time.perf_counter()
                    with gl.frame():
                        evaluator.run_frame(frame / PATCH_FPS, frame + 5)
                    seconds = time.perf_counter() - started
                    every_frame.append(seconds)
                    if evaluator.status(video) == "deferred":
                        deferred += 1
                    elif state.shown_index != shown_before:
                        new_frame.append(seconds)
                    else:
                        same_frame.append(seconds)
                decode = list(state.reader.decode_seconds)
            finally:
                evaluator.close()
                evaluator.ctx.release_all()
        upload = _upload_only(gl, 20 if quick else 60)
        return {
            "renderer": f"{gl.info.get('GL_RENDERER')}",
            "clip": f"{SIZE[0]}x{SIZE[1]} H.264, {clip_frames} frames at {CLIP_FPS} fps",
            "patch_fps": PATCH_FPS,
            "frame_thread_ms": _ms(every_frame),
            "frame_thread_new_frame_ms": _ms(new_frame),
            "frame_thread_same_frame_ms": _ms(same_frame),
            "decode_ms": _ms(decode),
            "upload_only_ms": _ms(upload),
            "frames": patch_frames,
            "new_frames": len(new_frame),
            "deferred_frames": deferred,
        }
    finally:
        gl.close()
