"""The output window under Xvfb with two screens: it opens, shows the patch's colours, presents
every frame once even when frames take most of their period, goes fullscreen on the chosen
screen, leaves fullscreen on Esc and moves between screens, with the patch's one texture in
use; `patchbay run FILE` opens only the window.

Qt picks its platform once per process and the other app tests run offscreen, so the window runs
in a subprocess (output_window_probe.py) on a private Xvfb display with two screens. Without Xvfb
the tests skip, except with PATCHBAY_REQUIRE_GL=1 (CI), where they fail.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.xvfb import private_display, unavailable

pytestmark = pytest.mark.xvfb

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("output_window_probe.py")


@pytest.fixture(scope="module")
def two_screens() -> Iterator[dict[str, str]]:
    """Environment for a child process on a fresh Xvfb with screens 800x600 and 640x480."""
    with private_display("800x600x24", "640x480x24") as env:
        yield env


@pytest.fixture(scope="module")
def report(two_screens: dict[str, str]) -> dict:
    done = subprocess.run(
        [sys.executable, str(PROBE)], env=two_screens, capture_output=True, text=True, timeout=300
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
    if done.returncode != 0 or not lines:
        output = (done.stdout + done.stderr)[-3000:]
        if "could not create an OpenGL" in output or "no Qt platform plugin" in output:
            unavailable(f"Qt has no OpenGL on Xvfb:\n{output}")
        pytest.fail(f"the output window probe failed ({done.returncode}):\n{output}")
    return json.loads(lines[0].removeprefix("REPORT "))


ORANGE, AZURE, GREEN = [255, 128, 0], [0, 128, 255], [0, 255, 0]


def close(actual: list[int], expected: list[int]) -> bool:
    return all(abs(a - b) <= 2 for a, b in zip(actual, expected, strict=True))


def test_window_opens_and_shows_the_output_texture(report: dict) -> None:
    assert report["platform"] == "xcb"
    assert report["frames"] >= 5  # frame swaps drive the patch
    top, bottom = report["pixels"]
    assert close(top, ORANGE) and close(bottom, AZURE)  # and the image is upright


def test_every_frame_is_presented_once_even_when_frames_take_most_of_their_period(
    report: dict,
) -> None:
    """`present()` paints and swaps right after the frame, not when Qt's update timer fires
    (which then comes due during the next frame, and every other frame would not show)."""
    first, last = report["long_frames"]
    assert report["long_frames_presented"] == list(range(first, last + 1))  # each, once


def test_window_goes_fullscreen_on_the_chosen_screen(report: dict) -> None:
    assert [label for _, label in report["screens"]] == [
        "0: screen (800x600)",
        "1: screen (640x480)",
    ]
    assert report["fullscreen"] and report["on_target"] and report["geometry_is_screen"]


def test_live_edits_show_in_the_window(report: dict) -> None:
    top, bottom = report["edited_pixels"]
    assert close(top, GREEN) and close(bottom, AZURE)


def test_escape_leaves_fullscreen_and_the_window_moves_between_screens(report: dict) -> None:
    assert report["after_escape"] == "Windowed"
    assert report["moved_to_first"] and report["moved_geometry"]
    top, bottom = report["moved_pixels"]
    assert close(top, GREEN) and close(bottom, AZURE)
    assert report["menu"] == [
        "Fullscreen on 0: screen (800x600)",
        "Fullscreen on 1: screen (640x480)",
        "",
        "Leave fullscreen (Esc)",
    ]


def test_the_window_holds_no_texture_of_its_own(report: dict) -> None:
    assert report["pool"]["in_use"] == 1  # the shader's: the window samples it, no copy


def test_patchbay_run_opens_only_the_output_window(
    two_screens: dict[str, str], tmp_path: Path
) -> None:
    """`patchbay run` plays in the engine process, its output window presenting frames."""
    example = ROOT / "resources" / "examples" / "feedback_trail.patchbay"
    frame_log = tmp_path / "frames.log"
    env = {**two_screens, "PATCHBAY_STATE_DIR": str(tmp_path), "PATCHBAY_FRAME_LOG": str(frame_log)}
    command = [sys.executable, "-c", "import sys; from app.cli.main import main; sys.exit(main())",
               "run", str(example), "--frames", "10", "--size", "64x36",
               "--fullscreen", "--screen", "1"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    presented = [line.split() for line in frame_log.read_text().splitlines()]
    assert len(presented) >= 5  # swaps of the output window, each logged with its time
    times = [float(seconds) for seconds, _ in presented]
    assert times == sorted(times)
    bad = [*command[:-1], "7"]
    done = subprocess.run(bad, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "--screen 7: no such screen (0: screen (800x600), 1: screen (640x480))" in (done.stderr)
