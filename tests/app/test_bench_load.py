"""The bench's load section runs its three measurements and each reaches what it measures."""

from __future__ import annotations

from app.bench.load import load_section


def test_the_load_section_renders_reaches_flat_back_to_back_and_paced():
    report = load_section(size=400, frames=40, repeats=1)
    render = report["render"]
    assert render["render_frame_mean_ms"] > 0 and render["flat_frame_median_ms"] > 0
    assert render["render_mean_vs_flat_median"] > 0
    back_to_back = report["back_to_back"]
    assert back_to_back["load_and_edit_reached_flat"] == 1
    assert back_to_back["load_to_flat_frames"] >= 1 and back_to_back["big_edit_to_flat_frames"] >= 1
    paced = report["paced"]
    assert paced["small_edit_flat"]  # rebuilt between frames, flat at once
