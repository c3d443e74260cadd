"""`patchbay run FILE --preset NAME`: the first frame already has the preset's values; an unknown
name exits 2 with one line listing the names there are."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import main
from nodes import Patch, capture, save_patch


@pytest.fixture
def preset_file(tmp_path: Path) -> Path:
    patch = Patch()
    knob = patch.add_node("input.float", {"value": 0.0, "max": 100.0}, node_id="knob")
    double = patch.add_node("math.mul", {"b": 2.0}, node_id="double")
    patch.connect(knob, "out", double, "a")
    patch.presets["calm"] = capture(patch)
    patch.set_value(knob, "value", 10.0)
    patch.presets["wild"] = capture(patch)
    patch.set_value(knob, "value", 4.0)
    path = tmp_path / "presets.patchbay"
    save_patch(patch, path)
    return path


@pytest.mark.parametrize(("preset", "doubled"), [(None, 8.0), ("calm", 0.0), ("wild", 20.0)])
def test_run_starts_on_the_preset(
    preset_file: Path, capsys, preset: str | None, doubled: float
) -> None:
    flags = [] if preset is None else ["--preset", preset]
    code = main(
        ["run", str(preset_file), "--headless", "--frames", "1", "--print", "double", *flags]
    )
    assert code == 0
    assert capsys.readouterr().out.splitlines() == [f"0 double.out={doubled}"]


def test_unknown_preset_exits_2_listing_the_names(preset_file: Path, capsys) -> None:
    code = main(["run", str(preset_file), "--headless", "--frames", "1", "--preset", "loud"])
    assert code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == ["no preset 'loud' (presets: calm, wild)"]
