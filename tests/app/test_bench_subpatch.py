"""The `subpatch` section of `patchbay bench`, in a small form: it runs, the two patches agree,
and every edit inside the definition showed in every instance."""

from __future__ import annotations

from app.bench.main import subpatch_section


def test_bench_subpatch_section_reports_frames_and_edits() -> None:
    report = subpatch_section(instances=3, body_size=10, frames=2, edits=1)
    assert report["outputs_agree"] is True
    assert report["nodes_inlined_by_hand"] == 1 + 3 * 8 + 3
    assert report["nodes_in_view"] == 1 + 3 * (10 + 1) + 3  # each instance and its body
    assert report["edits_started_flat"] is True
    assert report["frames_until_shown_max"] == 1  # lazy shows a structural edit on the next frame
    for key in ("inlined_flat_ms", "subpatch_flat_ms", "subpatch_lazy_ms", "view_build_ms"):
        assert report[key] > 0
    assert report["value_edit_to_frame_ms"] > 0 and report["structural_edit_to_frame_ms"] > 0
