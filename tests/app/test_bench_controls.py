"""The `controls` section of `patchbay bench`, in a small form: every packet sent is seen by a
frame, and the moving controls really moved the patch."""

from __future__ import annotations

from app.bench.controls import _frame_times, latency, load


def test_bench_latency_sees_every_packet_in_a_later_frame() -> None:
    report = latency(5)
    assert report["samples"] == 5
    assert report["median_frames"] >= 1 and report["p99_frames"] >= report["median_frames"]
    assert report["median_ms"] > 0


def test_bench_load_reports_each_case() -> None:
    report = load(20, 2)
    assert report["controls"] == 20
    for key in ("moving_median_ms", "resting_median_ms", "no_bindings_median_ms",
                "plain_edits_median_ms"):  # fmt: skip
        assert report[key] > 0
    assert len(_frame_times(20, True, True, 3)) == 3
