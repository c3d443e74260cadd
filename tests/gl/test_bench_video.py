"""The `video` section of `patchbay bench`, in its quick form: it plays the clip it wrote, every
clip frame reaches the frame thread as a new upload, and both sides of the comparison are
measured."""

from __future__ import annotations

import pytest

from app.bench.video import CLIP_FPS, PATCH_FPS, video_bench

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]


def test_bench_video_reports_frame_thread_and_decode_times() -> None:
    report = video_bench(quick=True)
    assert report["frames"] == 45 * PATCH_FPS // CLIP_FPS
    shown = report["new_frames"] + report["deferred_frames"]
    assert report["new_frames"] > 0 and shown <= report["frames"]
    for key in ("frame_thread_ms", "frame_thread_new_frame_ms", "decode_ms", "upload_only_ms"):
        assert report[key] > 0, key
