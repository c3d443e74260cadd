"""The editor benchmark runs offscreen and reports every measure for every size."""

from __future__ import annotations

from app.bench.patches import grid_chain
from app.bench.qt import editor_bench

MEASURES = {
    "open_s",
    "load_s",
    "stall_s",
    "repaint_zoom1_s",
    "pan_step_s",
    "repaint_all_s",
    "pan_all_s",
    "zoom_all_s",
    "frame_s",
}


def test_grid_chain_is_one_chain_into_a_sink():
    patch = grid_chain(50)
    assert len(patch.nodes) == 50 and len(patch.links) == 49
    assert patch.nodes["n49"].type_id == "output.value"


def test_editor_bench_reports_each_size(qtbot):
    results = editor_bench((20, 60))
    assert set(results) == {"20", "60"}
    for measures in results.values():
        assert set(measures) == MEASURES
        assert all(seconds >= 0.0 for seconds in measures.values())
