"""`patchbay profile`: the costliest nodes as text and JSON, the Chrome trace, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli.main import main
from nodes import Patch, save_patch

FRAMES = 6


@pytest.fixture
def slow_patch(tmp_path: Path) -> Path:
    """t -> slow (sleeps 20 ms a frame) -> m -> sink, and a CONST k feeding m."""
    patch = Patch()
    patch.add_node("time.seconds", node_id="t")
    patch.add_node("debug.sleep", {"seconds": 0.02}, node_id="slow")
    patch.connect("t", "out", "slow", "x")
    patch.add_node("value.float", {"value": 3.0}, node_id="k")
    patch.add_node("math.add", node_id="m")
    patch.connect("slow", "out", "m", "a")
    patch.connect("k", "out", "m", "b")
    patch.add_node("output.value", node_id="sink")
    patch.connect("m", "out", "sink", "in")
    path = tmp_path / "slow.patchbay"
    save_patch(patch, path)
    return path


def test_profile_prints_the_costliest_nodes_first(slow_patch: Path, capsys) -> None:
    assert main(["profile", str(slow_patch), "--frames", str(FRAMES)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"{slow_patch}: {FRAMES} frames")
    assert f"{FRAMES} over the 16.7 ms budget" in lines[0]
    header = ["node", "runs", "hits", "total", "ms", "median", "ms", "gpu", "ms", "reasons"]
    assert lines[1].split() == header
    assert lines[-1] == "gpu ms: n/a (no GL context)"  # a patch without GPU nodes
    rows = {line.split()[0]: line for line in lines[2:-1]}
    assert rows["k"].split()[5] == "n/a"
    assert lines[2].split()[:3] == ["slow", str(FRAMES), "0"]
    assert lines[2].endswith(f"non-deterministic {FRAMES}")
    assert rows["k"].split()[:3] == ["k", "1", str(FRAMES - 1)]
    assert rows["k"].endswith("first run 1")
    assert rows["m"].endswith(f"HOT {FRAMES}")


def test_profile_json_and_trace(slow_patch: Path, tmp_path: Path, capsys) -> None:
    trace_path = tmp_path / "trace.json"
    arguments = ["profile", str(slow_patch), "--frames", str(FRAMES), "--json"]
    assert main([*arguments, "--trace", str(trace_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["frames"] == FRAMES
    assert report["over_budget_frames"] == list(range(FRAMES))
    assert report["nodes"][0]["node"] == "slow"
    by_node = {row["node"]: row for row in report["nodes"]}
    assert by_node["k"]["runs"] == 1 and by_node["k"]["hits"] == FRAMES - 1
    assert by_node["k"]["reasons"] == {"first run": 1}
    assert by_node["t"]["reasons"] == {"non-deterministic": FRAMES}
    assert by_node["slow"]["timed_runs"] == FRAMES  # the profile command times every frame
    assert report["gpu_status"] == "no GL context" and by_node["slow"]["gpu_ms"] is None

    trace = json.loads(trace_path.read_text(encoding="utf-8"))
    events = trace["traceEvents"]
    complete = [event for event in events if event["ph"] == "X"]
    for event in complete:
        assert {"name", "ph", "ts", "dur", "pid", "tid"} <= set(event)
        assert isinstance(event["ts"], int | float) and event["dur"] >= 0
    frames = [event for event in complete if event["name"].startswith("frame ")]
    assert len(frames) == FRAMES
    slow = [event for event in complete if event["name"] == "slow"]
    assert len(slow) == FRAMES
    tracks = {event["tid"]: event["args"]["name"] for event in events if event["ph"] == "M"}
    assert {tracks[event["tid"]] for event in slow} <= {"lazy", "hot"}
    assert all(event["args"]["reason"] == "non-deterministic" for event in slow)
    assert not [event for event in complete if event["cat"] == "gpu"]  # nothing drew


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--frames", "0"], "--frames must be at least 1"),
        (["--budget", "0"], "--fps and --budget must be positive"),
    ],
)
def test_profile_bad_options(slow_patch: Path, capsys, arguments, message) -> None:
    assert main(["profile", str(slow_patch), *arguments]) == 2
    assert capsys.readouterr().err.strip() == message


def test_profile_bad_file_and_unwritable_trace(slow_patch: Path, tmp_path: Path, capsys) -> None:
    broken = tmp_path / "broken.patchbay"
    broken.write_text("{ not json", encoding="utf-8")
    assert main(["profile", str(broken), "--frames", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "broken.patchbay" in err[0]
    target = tmp_path / "missing" / "trace.json"
    assert main(["profile", str(slow_patch), "--frames", "1", "--trace", str(target)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"patchbay profile: cannot write {target}")
