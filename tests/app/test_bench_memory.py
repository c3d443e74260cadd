"""The `memory` section of `patchbay bench`, in a small form: it runs, compares with every
baseline, and memory_order is never worse than DFS order and better than BFS order."""

from __future__ import annotations

from app.bench.main import memory_section


def test_bench_memory_section_compares_with_the_baselines() -> None:
    report = memory_section(seeds=3, nodes=150, timed_sizes=(150,), beam_width=2)
    assert (report["graphs"], report["nodes"], report["beam_width"]) == (3, 150, 2)
    assert report["vs_dfs"]["worst_ratio"] <= 1.0
    assert report["vs_bfs"]["median_ratio"] < 1.0
    for name in ("vs_dfs", "vs_bfs", "vs_beam"):
        ratios = report[name]
        assert 0 < ratios["best_ratio"] <= ratios["median_ratio"] <= ratios["worst_ratio"]
    assert report["memory_order_ms/150"] > 0
