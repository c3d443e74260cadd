"""Frozen GPU patches render the same pixels as their editable sources (64x64, standalone EGL):
textures are never baked, GPU nodes with constant inputs are kept to run once, CPU constants
around them are baked."""

from __future__ import annotations

import time
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evaluators import FlatEvaluator, freeze
from evaluators.services.gl import GLService, GLTarget
from nodes import Patch, load_patch, save_patch

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]

FRAMES = 6


def _record(patch: Patch, gl: GLService, frames: int = FRAMES) -> list[dict[str, Any]]:
    """Every sink's output each frame, textures read back as pixels. A frame in which a node is
    deferred (loading in the background, which takes as long as it takes) runs again until none
    is, so that both runs compare frames with everything loaded."""
    evaluator = FlatEvaluator(patch, gpu=gl)
    sinks = [node.id for node in patch.nodes.values() if node.spec.sink]
    recorded = []
    try:
        for frame in range(frames):
            deadline = time.monotonic() + 30
            while True:
                with gl.frame():
                    evaluator.run_frame(frame / 60.0, frame)
                deferred = [n for n in patch.nodes if evaluator.status(n) == "deferred"]
                if not deferred or time.monotonic() > deadline:
                    break
                time.sleep(0.002)
            values = {}
            for sink in sinks:
                value = evaluator.output(sink)
                values[sink] = gl.readback(value) if isinstance(value, GLTarget) else value
            recorded.append(values)
    finally:
        evaluator.close()
        evaluator.ctx.release_all()
    return recorded


def _assert_same_frames(expected: list[dict[str, Any]], got: list[dict[str, Any]]) -> None:
    for frame, (want, have) in enumerate(zip(expected, got, strict=True)):
        assert set(want) == set(have)
        for sink, value in want.items():
            if isinstance(value, np.ndarray):
                assert isinstance(have[sink], np.ndarray), (frame, sink)
                assert value.dtype == have[sink].dtype, (frame, sink)
                assert np.array_equal(value, have[sink]), f"frame {frame}, {sink}: pixels differ"
            else:
                assert type(value) is type(have[sink]) and value == have[sink], (frame, sink)


def _gpu_patch() -> Patch:
    patch = Patch()
    patch.update_settings(resolution=[64, 64])
    add = patch.add_node
    add("gpu.gradient", {"color_a": (1.0, 0.0, 0.0, 1.0), "angle": 0.5}, node_id="grad")
    add("gpu.blur", {"radius": 3.0}, node_id="soft")  # CONST on a CONST texture: run once
    add("time.seconds", node_id="t")
    add("gpu.noise", {"scale": 4.0}, node_id="noise")
    add("input.float", {"value": 0.4}, node_id="amount")
    add("math.mul", {"b": 1.5}, node_id="opacity")
    add("gpu.blend", {"mode": "add"}, node_id="mix")
    add("gpu.feedback", node_id="trail")
    add("gpu.blend", {"mode": "mix", "opacity": 0.5}, node_id="echo")
    add("gpu.output", node_id="screen")
    add("array.linspace", {"count": 64}, node_id="ramp")
    add("gpu.from_array", node_id="strip")
    add("gpu.readback", node_id="read")
    add("array.mean", node_id="mean")
    add("output.value", node_id="brightness")
    add("gpu.output", node_id="strip_out")
    link = patch.connect
    link("grad", "out", "soft", "in")
    link("t", "out", "noise", "time")
    link("amount", "out", "opacity", "a")
    link("soft", "out", "mix", "a")
    link("noise", "out", "mix", "b")
    link("opacity", "out", "mix", "opacity")
    link("mix", "out", "echo", "a")
    link("trail", "out", "echo", "b")
    link("echo", "out", "trail", "in")
    link("echo", "out", "screen", "in")
    link("ramp", "out", "strip", "array")
    link("strip", "out", "strip_out", "in")
    link("soft", "out", "read", "in")
    link("read", "out", "mean", "x")
    link("mean", "out", "brightness", "in")
    return patch


def test_frozen_gpu_patch_renders_the_same_pixels(gl: GLService, tmp_path: Path) -> None:
    patch = _gpu_patch()
    frozen = freeze(patch)
    # Textures are kept as nodes (run once when constant); CPU constants around them are baked.
    for kept in ("grad", "soft", "read", "mean", "strip", "noise", "trail"):
        assert frozen.nodes[kept].type_id == patch.nodes[kept].type_id, kept
    assert frozen.nodes["opacity"].type_id == "value.float"
    assert frozen.nodes["ramp"].type_id == "value.array"
    assert "amount" not in frozen.nodes
    assert {"grad", "soft", "read", "mean", "strip"} <= set(frozen.meta["schedule"]["once"])
    path = tmp_path / "gpu.frozen.patchbay"
    save_patch(frozen, path)

    expected = _record(patch, gl)
    got = _record(load_patch(path), gl)
    _assert_same_frames(expected, got)


def _reads_files(patch: Patch) -> bool:
    """Whether a node reads a file: its frozen copy, elsewhere, would not find it (and the first
    frames depend on how fast it loads)."""
    return any(
        pin.hint == "file" and node.values.get(pin.name)
        for node in patch.nodes.values()
        for pin in node.spec.inputs
    )


def _gpu_examples() -> list[Path]:
    folder = resources.files("resources") / "examples"
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".patchbay"):
            path = Path(str(entry))
            patch = load_patch(path)
            if _reads_files(patch):
                continue
            if any(n.type_id.startswith("gpu.") for n in patch.nodes.values()):
                found.append(path)
    return found


@pytest.mark.parametrize("path", _gpu_examples(), ids=lambda path: path.name)
def test_gpu_examples_freeze_to_the_same_pixels(gl: GLService, path: Path, tmp_path: Path) -> None:
    patch = load_patch(path)
    patch.update_settings(resolution=[64, 64])
    frozen_path = tmp_path / path.name
    save_patch(freeze(patch, source_path=path), frozen_path)
    frozen = load_patch(frozen_path)
    frozen.folder = path.parent  # written elsewhere, it reads the example's files (clips)
    _assert_same_frames(_record(patch, gl), _record(frozen, gl))
