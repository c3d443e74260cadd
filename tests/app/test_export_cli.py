"""`patchbay freeze`, the editor's export hook, and playing frozen patches where Qt cannot be
imported."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from app.bench.main import freeze_section
from app.cli.main import main
from app.engine.export import export_frozen
from evaluators import FlatEvaluator
from nodes import Patch, load_patch, save_patch

DEMO = Path(str(resources.files("resources") / "examples" / "demo.patchbay"))
NO_QT = (
    "import sys; sys.modules['PySide6'] = None; sys.modules['NodeGraphQt'] = None; "
    "sys.modules['shiboken6'] = None; from app.cli.main import main; sys.exit(main(sys.argv[1:]))"
)


def _big_array_patch() -> Patch:
    """A 160 KB constant array (over the sidecar threshold, under the freeze threshold)."""
    patch = Patch()
    patch.add_node("array.linspace", {"count": 20_000, "stop": 3.0}, node_id="ramp")
    patch.add_node("time.seconds", node_id="t")
    patch.add_node("math.mul", node_id="moving")
    patch.add_node("array.sum", node_id="total")
    patch.add_node("output.value", node_id="out")
    patch.connect("ramp", "out", "moving", "a")
    patch.connect("t", "out", "moving", "b")
    patch.connect("moving", "out", "total", "x")
    patch.connect("total", "out", "out", "in")
    return patch


def test_freeze_command_writes_a_frozen_patch_that_check_accepts(tmp_path, capsys) -> None:
    target = tmp_path / "show.frozen.patchbay"
    assert main(["freeze", str(DEMO), "-o", str(target)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert len(out.splitlines()) == 1
    assert "19 -> 15 nodes" in out and "constants baked" in out

    assert main(["check", str(target)]) == 0
    assert "ok: frozen patch" in capsys.readouterr().out
    document = json.loads(target.read_text(encoding="utf-8"))
    meta = document["meta"]
    assert meta["frozen"] is True
    assert meta["patchbay_version"]
    assert meta["source"]["sha256"] == hashlib.sha256(DEMO.read_bytes()).hexdigest()
    assert set(meta["summary"]) >= {"nodes_before", "nodes_after", "constants_baked",
                                    "bytes_stored"}  # fmt: skip
    assert meta["schedule"]["every_frame"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "cannot read"),
        ("{not json", "invalid JSON"),
        ('{"format": "other", "version": 1, "nodes": [], "links": []}', "not a patchbay file"),
    ],
)
def test_freeze_command_refuses_bad_input_in_one_line(tmp_path, capsys, content, expected) -> None:
    source = tmp_path / "bad.patchbay"
    if content is not None:
        source.write_text(content, encoding="utf-8")
    target = tmp_path / "out.patchbay"
    assert main(["freeze", str(source), "-o", str(target)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and expected in err
    assert "Traceback" not in err
    assert not target.exists()


def test_freeze_command_never_overwrites_its_source(tmp_path, capsys) -> None:
    source = tmp_path / "demo.patchbay"
    source.write_bytes(DEMO.read_bytes())
    assert main(["freeze", str(source), "-o", str(source)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert source.read_bytes() == DEMO.read_bytes()


def test_large_arrays_go_to_a_sidecar_and_load_back(tmp_path, capsys) -> None:
    source = tmp_path / "big.patchbay"
    save_patch(_big_array_patch(), source)
    target = tmp_path / "big.frozen.patchbay"
    assert main(["freeze", str(source), "-o", str(target)]) == 0
    (sidecar,) = tmp_path.glob("big.frozen.patchbay.*.npz")
    assert f"arrays in {sidecar.name}" in capsys.readouterr().out

    with np.load(sidecar, allow_pickle=False) as archive:
        assert archive.files == ["ramp.value"]
    text = target.read_text(encoding="utf-8")
    assert len(text) < 10_000  # the JSON stays readable: the numbers are in the sidecar
    assert f'"npz": "{sidecar.name}"' in text

    frozen = load_patch(target)
    assert frozen.nodes["ramp"].type_id == "value.array"
    np.testing.assert_array_equal(frozen.nodes["ramp"].values["value"], np.linspace(0, 3, 20_000))
    editable, played = FlatEvaluator(load_patch(source)), FlatEvaluator(frozen)
    for frame in range(4):
        editable.run_frame(frame / 60, frame)
        played.run_frame(frame / 60, frame)
        assert editable.output("out") == played.output("out")


def _run_no_qt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", NO_QT, *args], capture_output=True, text=True, timeout=120
    )


def test_frozen_patch_plays_headless_without_qt(tmp_path) -> None:
    target = tmp_path / "demo.frozen.patchbay"
    frozen_run = _run_no_qt("freeze", str(DEMO), "-o", str(target))
    assert frozen_run.returncode == 0, frozen_run.stderr
    prints = ["--print", "out_switch.out", "out_array.out", "out_broken.out"]
    played = _run_no_qt("run", str(target), "--headless", "--frames", "12", *prints)
    assert played.returncode == 0, played.stderr
    editable = _run_no_qt("run", str(DEMO), "--headless", "--frames", "12", *prints)
    assert editable.returncode == 0, editable.stderr
    assert len(played.stdout.splitlines()) == 12
    assert played.stdout == editable.stdout


def test_export_hook_reports_progress_and_a_summary(tmp_path) -> None:
    seen: list[tuple[float, str]] = []
    summary = export_frozen(
        load_patch(DEMO),
        tmp_path / "demo.frozen.patchbay",
        source_path=DEMO,
        progress=lambda fraction, stage: seen.append((fraction, stage)),
    )
    fractions = [fraction for fraction, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert "saving" in {stage for _, stage in seen}
    assert summary["nodes_before"] == 19 and summary["nodes_after"] == 15
    assert summary["sidecar"] is None
    assert summary["text"].startswith(str(tmp_path / "demo.frozen.patchbay"))
    assert load_patch(summary["file"]).frozen


@pytest.mark.slow
def test_freeze_bench_reports_frozen_beside_editable() -> None:
    result = freeze_section(quick=True)
    assert {row["case"] for row in result["cases"]} == {
        "hot_chain",
        "mostly_constant",
        "layered_dag",
    }
    for row in result["cases"]:
        assert row["frozen_nodes"] <= row["nodes"]
        assert row["frozen_nodes_run"] <= row["editable_nodes_run"]
    folded = [row for row in result["cases"] if row["case"] != "hot_chain"]
    assert all(row["frozen_nodes"] < row["nodes"] for row in folded)
    assert any(row["example"] == "demo.patchbay" for row in result["startup"])
