"""The rebuild benchmark section runs both ways and reports what it claims (no timings asserted:
only that the incremental way never ran a lazy frame and both showed the edit)."""

from __future__ import annotations

from app.bench import rebuild_section


def test_rebuild_section_compares_incremental_and_full_builds() -> None:
    report = rebuild_section([300], 1)
    row = report["300"]
    assert row["nodes"] == 301 and row["repeats"] == 1
    assert row["incremental_first_frame_modes"] == ["flat"]
    assert row["incremental_lazy_frames_after_edit"] == 0
    assert row["full_first_frame_modes"] == ["lazy"]
    assert row["full_lazy_frames_after_edit"] >= 1
    assert row["incremental_all_reflected_and_flat"] and row["full_all_reflected_and_flat"]
    for name in ("full_build_alone_ms", "derived_build_alone_ms", "incremental_edit_to_flat_ms"):
        assert row[name] > 0.0
