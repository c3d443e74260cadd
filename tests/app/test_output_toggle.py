"""View > Output Window follows the engine's output window, however it was closed: by its title
bar's close button, by Esc, or by the engine; one press of Ctrl+Shift+O then always opens it
(and one closes it). Real windows under Xvfb, in a subprocess (output_toggle_probe.py); without
Xvfb these skip, except with PATCHBAY_REQUIRE_GL=1 (CI), where they fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.xvfb import private_display, unavailable

pytestmark = pytest.mark.xvfb

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("output_toggle_probe.py")
EXAMPLE = ROOT / "resources" / "examples" / "noise_color.patchbay"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict]:
    state = tmp_path_factory.mktemp("editor_state")
    shot = Path(os.environ.get("PATCHBAY_SHOTS", state)) / "stagewin-output-toggle.png"
    with private_display("1280x900x24") as env:
        command = [sys.executable, str(PROBE), str(state), str(EXAMPLE), str(shot)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
    if done.returncode != 0 or not lines:
        output = (done.stdout + done.stderr)[-3000:]
        if "no Qt platform plugin" in output or "could not create an OpenGL" in output:
            unavailable(f"Qt cannot show GL windows on Xvfb:\n{output}")
        pytest.fail(f"the output toggle probe failed ({done.returncode}):\n{output}")
    yield json.loads(lines[0].removeprefix("REPORT "))


def test_ctrl_shift_o_opens_the_output_window_and_checks_the_action(report: dict) -> None:
    assert report["platform"] == "xcb"
    assert report["opened"]


@pytest.mark.parametrize("how", ["close_button", "escape", "engine"])
def test_closed_any_way_the_action_unchecks_and_one_press_opens_it_again(
    report: dict, how: str
) -> None:
    assert report[how] == {
        "closed": True,
        "unchecked": True,
        "engine_says_closed": True,
        "one_press_opens": True,
        "checked_again": True,
    }


def test_one_press_closes_the_open_window(report: dict) -> None:
    assert report["one_press_closes"]
