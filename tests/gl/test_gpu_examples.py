"""The GPU example patches play headless and write PNG frames that show what they promise."""

from __future__ import annotations

import importlib.resources
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.engine.player import play_headless
from evaluators.services.gl import GLService
from nodes import load_patch

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]

EXAMPLES = importlib.resources.files("resources") / "examples"


def example(name: str):
    patch = load_patch(Path(str(EXAMPLES / name)))
    patch.update_settings(resolution=[96, 54])
    return patch


def frames_in(folder: Path) -> list[np.ndarray]:
    return [np.asarray(Image.open(path)).astype(int) for path in sorted(folder.glob("*.png"))]


def test_noise_color_animates_in_its_colours(gl: GLService, tmp_path: Path) -> None:
    patch = example("noise_color.patchbay")
    evaluator = play_headless(patch, 12, 30.0, [], gpu=gl, out_dir=tmp_path)
    assert all(evaluator.status(node_id) in ("ok", "cached") for node_id in patch.nodes)
    frames = frames_in(tmp_path)
    assert len(frames) == 12 and frames[0].shape == (54, 96, 4)
    first, last = frames[0], frames[-1]
    assert np.abs(first - last).mean() > 3  # it moves
    # every pixel lies between the shadow and the input colour (orange: red > green > blue)
    rgb = last[..., :3]
    assert np.all(rgb[..., 0] >= rgb[..., 2] - 40)
    assert rgb[..., 0].max() > 200 and rgb[..., 0].min() < 60
    # the input colour is live: make it green
    patch.set_value("colorize", "color", (0.0, 1.0, 0.0, 1.0))
    evaluator.close()
    evaluator.ctx.release_all()
    evaluator = play_headless(patch, 1, 30.0, [], gpu=gl)
    green = gl.readback(evaluator.output("output"))
    assert green[..., 1].max() > 200 and green[..., 0].max() < 40
    evaluator.close()
    evaluator.ctx.release_all()


def test_feedback_trail_leaves_a_trail(gl: GLService, tmp_path: Path) -> None:
    patch = example("feedback_trail.patchbay")
    evaluator = play_headless(patch, 40, 30.0, [], gpu=gl, out_dir=tmp_path)
    frames = frames_in(tmp_path)
    assert len(frames) == 40
    dot = gl.readback(evaluator.output("orbit")).astype(int)
    trail = frames[-1]
    lit_dot = int((dot[..., :3].max(axis=2) > 30).sum())
    lit_trail = int((trail[..., :3].max(axis=2) > 30).sum())
    assert lit_trail > 1.5 * lit_dot, (lit_dot, lit_trail)  # the dot plus its fading trail
    assert (frames[0][..., :3].max(axis=2) > 30).sum() <= lit_dot + 2  # no trail on frame 0
    evaluator.close()
    evaluator.ctx.release_all()


def test_patchbay_run_headless_writes_pngs(require_gl, tmp_path: Path) -> None:
    source = Path(str(EXAMPLES / "feedback_trail.patchbay"))
    command = [sys.executable, "-c", "import sys; from app.cli.main import main; sys.exit(main())",
               "run", str(source), "--headless", "--frames", "5", "--size", "80x45",
               "--out", str(tmp_path)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    names = sorted(path.name for path in tmp_path.glob("*.png"))
    assert names == [f"frame_{n:05d}.png" for n in range(5)]
    assert Image.open(tmp_path / names[0]).size == (80, 45)


@pytest.mark.parametrize("where", ["proc", "file_in_the_way"])
def test_patchbay_run_reports_an_unwritable_out_in_one_line(
    require_gl, tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    from app.cli.main import main

    source = Path(str(EXAMPLES / "noise_color.patchbay"))
    if where == "proc":
        out = Path("/proc/patchbay-frames")  # no folder can be made there
    else:
        out = tmp_path / "frames"
        (out / "frame_00000.png").mkdir(parents=True)  # a folder where the first frame goes
    code = main(["run", str(source), "--headless", "--frames", "3", "--size", "32x18",
                 "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("patchbay run: ") and str(out) in err


def test_patchbay_run_rejects_a_bad_size(tmp_path: Path) -> None:
    source = Path(str(EXAMPLES / "noise_color.patchbay"))
    command = [sys.executable, "-c", "import sys; from app.cli.main import main; sys.exit(main())",
               "run", str(source), "--headless", "--frames", "1", "--size", "big"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "--size big: expected WIDTHxHEIGHT" in done.stderr


@pytest.mark.slow
def test_gpu_bench_reports_its_numbers(require_gl) -> None:
    from app.bench.gpu import gpu_bench

    report = gpu_bench(quick=True)
    assert report["chain_1080p"]["passes"] == 10 and report["chain_1080p"]["fps"] > 0
    assert set(report["per_pass_ms"]) == {"64x64", "512x512", "1920x1080"}
    assert report["readbacks_per_frame"] == {"chain": 0, "chain_with_readback_node": 1}
    pool = report["pool_after_edits"]
    assert pool["edits"] == 1000
    assert pool["allocated_after"] == pool["allocated_after_100_edits"]  # flat, not growing
    # the gradient's and the last pass's: the first pass gives its target back every frame
    assert pool["in_use_after"] == 2
    for timing in report["gpu_timing"].values():
        assert timing["timed_nodes"] >= 10  # every pass (and the gradient, once) drew timed
        assert timing["gpu_ms_per_frame_of_passes"] > 0
