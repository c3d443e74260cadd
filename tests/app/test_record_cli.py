"""`patchbay run --record OUT [--codec C]`: what it refuses, in one line with exit status 2,
before anything runs or is written (the recordings themselves: tests/gl/test_record.py)."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import pytest

from app.cli.main import main
from nodes import Patch, save_patch

NOISE = str(importlib.resources.files("resources") / "examples" / "noise_color.patchbay")


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(["run", *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    ("name", "codec", "says"),
    [
        ("take.mkv", "divx", "--codec divx: unknown codec; use one of ffv1, png, prores"),
        ("take.mp4", "ffv1", "--codec ffv1: a .mp4 file cannot hold ffv1"),
        ("take.mkv", "png", "--codec png: a .mkv file cannot hold png"),
        ("take.mp4", "prores", "--codec prores: a .mp4 file cannot hold prores"),
        ("take.avi", None, "unknown container '.avi'; use one of .mkv, .mov, .mp4"),
        ("take", "ffv1", "unknown container '(no extension)'"),
    ],
)
def test_a_codec_or_container_it_cannot_record_is_one_line_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, codec: str | None, says: str
) -> None:
    codec_flags = ["--codec", codec] if codec else []
    err = refused(capsys, NOISE, "--headless", "--frames", "2", "--size", "64x36",
                  "--record", str(tmp_path / name), *codec_flags)  # fmt: skip
    assert err.startswith("patchbay run: ") and says in err, err
    assert list(tmp_path.iterdir()) == []


def test_a_codec_missing_from_this_pyav_build_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import av

    monkeypatch.setattr(av, "codecs_available", set(av.codecs_available) - {"libx264"})
    err = refused(capsys, NOISE, "--headless", "--frames", "2", "--record",
                  str(tmp_path / "take.mp4"))  # fmt: skip
    assert "--codec h264: this build of PyAV has no libx264 encoder" in err
    assert list(tmp_path.iterdir()) == []


def test_record_needs_a_gpu_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    patch = Patch()
    patch.add_node("output.value", node_id="out")
    source = tmp_path / "values.patchbay"
    save_patch(patch, source)
    err = refused(capsys, str(source), "--headless", "--frames", "2", "--record",
                  str(tmp_path / "take.mkv"))  # fmt: skip
    assert "--record needs a gpu.output node" in err
    assert not (tmp_path / "take.mkv").exists()


def test_record_from_the_window_is_not_built_yet(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refused(capsys, NOISE, "--record", str(tmp_path / "take.mkv"))
    assert "--record records a headless render for now" in err


def test_codec_without_record_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    err = refused(capsys, NOISE, "--headless", "--frames", "1", "--codec", "ffv1")
    assert "--codec needs --record OUT" in err


def test_a_folder_as_the_record_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "take.mkv"
    folder.mkdir()
    err = refused(capsys, NOISE, "--headless", "--frames", "1", "--record", str(folder))
    assert "is a folder, not a file name" in err


def test_dropped_frames_are_reported_at_the_end(capsys: pytest.CaptureFixture[str]) -> None:
    from app.engine.player import _finish_recording

    class Recorder:
        dropped, frames_submitted = 3, 120

        def close(self) -> Path:
            return Path("take.mkv")

    _finish_recording(Recorder(), finished=True)
    err = capsys.readouterr().err
    assert err == (
        "patchbay run: --record take.mkv: 3 of 120 frame(s) dropped "
        "(the encoder could not keep up)\n"
    )
