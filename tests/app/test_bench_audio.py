"""The `audio` section of `patchbay bench`, in a small form: blocks fed through the input's
callback reach frames, and every analysis node is timed."""

from __future__ import annotations

from app.bench.audio import analysis, latency


def test_bench_latency_sees_the_blocks_in_a_later_frame() -> None:
    report = latency(0.5)
    assert report["blocks"] > 0 and report["block_samples"] == 256
    assert report["median_frames"] >= 1 and report["p99_frames"] >= report["median_frames"]
    assert report["median_ms"] > 0


def test_bench_analysis_times_each_node() -> None:
    report = analysis(10)
    assert report["frame_samples"] == 800 and report["frames"] == 10
    for name in ("level", "bands", "onset", "beat"):
        assert report[f"{name}_us"] > 0
    parts = report["level_us"] + report["bands_us"] + report["onset_us"]
    assert report["level_bands_onset_us"] == parts
