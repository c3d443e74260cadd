"""The `profiler` section of `patchbay bench`, in a small form: the three evaluators agree and
every median and mean is reported (their values are for people to read, never asserted)."""

from __future__ import annotations

import pytest

from app.bench.main import _sampled_frames, profiler_section


def test_bench_profiler_section_reports_on_off_and_every_frame() -> None:
    report = profiler_section(size=50, frames=8, lazy_frames=2)
    assert report["outputs_agree"] is True
    assert report["nodes"] == 50 and report["frames"] == 8
    recorded = report["frames_recorded"]  # warm-up frames included
    assert recorded["off"] == 0 and recorded["on"] == recorded["every_frame"] > 8
    for name in ("off", "on", "every_frame"):
        assert report[f"{name}_median_ms"] > 0 and report[f"{name}_mean_ms"] > 0
    assert report["lazy_off_median_ms"] > 0 and report["lazy_on_median_ms"] > 0
    for key in ("on_median", "on_mean", "every_frame_median", "every_frame_mean"):
        assert isinstance(report[f"{key}_overhead_percent"], float)
    assert isinstance(report["on_timed_frames"], int)


def test_mean_from_medians_weighs_the_timed_frames_by_their_count() -> None:
    samples = {"off": [1.0, 1.0, 1.0, 9.0], "on": [1.0, 3.0, 1.0, 1.0]}
    row = _sampled_frames(samples, timed={0, 4}, warmup=3)  # frame 0 was a warm-up frame
    assert row["on_timed_frames"] == 1
    assert row["on_timed_median_ms"] == pytest.approx(3e3)
    assert row["on_untimed_median_ms"] == pytest.approx(1e3)
    assert row["on_mean_from_medians_overhead_percent"] == pytest.approx(50.0)
