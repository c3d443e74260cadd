"""`patchbay run FILE --preset NAME`: the first frame already has the preset's values; an unknown
name exits 2 with one line listing the names there are."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli.main import main
from nodes import Patch, capture, load_patch, save_patch


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


def test_an_empty_preset_runs_with_a_warning(preset_file: Path, capsys) -> None:
    patch = load_patch(preset_file)
    patch.set_preset("blank", {})  # as an older capture of a patch without input nodes saved
    save_patch(patch, preset_file)
    code = main(["run", str(preset_file), "--headless", "--frames", "1", "--preset", "blank"])
    assert code == 0
    assert capsys.readouterr().err.splitlines() == [
        "warning: preset 'blank' holds no value of this patch: it changes nothing"
    ]


def test_run_in_window_mode_plays_the_preset(preset_file: Path, tmp_path: Path) -> None:
    """Without --headless the engine process starts on the preset: an editor attaching to it
    gets a running patch holding the preset's values."""
    import os
    import subprocess
    import sys

    from app.engine.client import EngineClient, EngineProcess
    from app.engine.protocol.channel import patch_from_message
    from app.engine.protocol.messages import PatchDocument
    from tests.waiting import poll_until

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PATCHBAY_STATE_DIR": str(tmp_path / "state")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "app.cli.main", "run", str(preset_file), "--preset", "wild",
               "--frames", "100000"]  # fmt: skip
    player = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    engine = EngineProcess(tmp_path / "state" / "engine")
    try:
        assert poll_until(lambda: engine.running_pid() is not None or player.poll() is not None)
        client = EngineClient(engine)
        assert client.start() is True  # attached to the player's engine
        client.send({"type": "get_patch"})
        got: list[Patch] = []

        def patch_came() -> bool:
            for message, blobs in client.poll():
                if isinstance(message, PatchDocument):
                    got.append(patch_from_message(message, blobs))
            return bool(got)

        assert poll_until(patch_came)
        assert got[0].value("knob", "value") == 10.0  # wild's, not the file's 4.0
        client.close()  # stops the engine: the player ends with it
        player.communicate(timeout=120)
    finally:
        player.kill()
        EngineProcess(tmp_path / "state" / "engine").stop()
