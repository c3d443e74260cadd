"""The rebuild benchmark section runs every way and reports what it claims (no timings asserted:
only that the incremental ways never ran a lazy frame and all showed the edit)."""

from __future__ import annotations

from app.bench.main import EDIT_WAYS, rebuild_section


def test_rebuild_section_compares_incremental_and_full_builds() -> None:
    report = rebuild_section([300], 1)
    row = report["300"]
    assert row["nodes"] == 301 and row["repeats"] == 1
    for way in ("between_frames", "next_frame"):
        assert row[f"{way}_first_frame_modes"] == ["flat"]
        assert row[f"{way}_lazy_frames_after_edit"] == 0
    assert row["full_first_frame_modes"] == ["lazy"]
    assert row["full_lazy_frames_after_edit"] >= 1
    assert all(row[f"{way}_all_reflected_and_flat"] for way in EDIT_WAYS)
    assert row["between_frames_rebuild_between_frames_ms"] > 0.0
    assert row["next_frame_rebuild_between_frames_ms"] == 0.0
    for name in ("full_build_alone_ms", "derived_build_alone_ms", "next_frame_edit_to_flat_ms"):
        assert row[name] > 0.0
