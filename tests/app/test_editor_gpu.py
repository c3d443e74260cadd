"""The editor's GPU side.

With OpenGL (Xvfb, two screens, in a subprocess: editor_gpu_probe.py): the editor drives an
engine in its process with a GL service and an output window (app.qt.output_host), as it drives
the engine process; the engine's pictures of the selected GPU node's texture show in the preview
panel and of the `gpu.output` texture in the Output panel and in the whole-editor screenshot
(tests/artifacts/editor_gpu.png), the engine's View > Output Window shows that texture, each
compared point by point with the texture read back from the GL service. GPU nodes show a thumbnail
of their texture on the canvas (compared the same way, on the node and in the screenshot; the
paused frame's while paused, none asked for while zoomed out), other nodes none. The output window
goes fullscreen on a screen chosen in View > Output Screen, is closed and reopened, Space still
pauses, File > New gives the old patch's textures back to the pool, and closing the editor closes
the output window and the GL service. Without Xvfb these skip, except with
PATCHBAY_REQUIRE_GL=1 (CI), where they fail.

Without OpenGL (this process, offscreen with no X server, an engine without GL): the editor makes
no GL widget, GPU nodes fail with "no GPU context", textures are described in words, canvas nodes
have no thumbnails and the output window cannot be opened.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtOpenGLWidgets import QOpenGLWidget
from PySide6.QtWidgets import QLabel

from nodes import load_patch
from tests.app.conftest import played
from tests.xvfb import private_display, unavailable

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("editor_gpu_probe.py")
EXAMPLE = ROOT / "resources" / "examples" / "noise_color.patchbay"
ARTIFACT = ROOT / "tests" / "artifacts" / "editor_gpu.png"
SAME = 4  # a shown colour may lie this far outside the range of the texels it comes from


@pytest.fixture(scope="module")
def xvfb_env() -> Iterator[dict[str, str]]:
    """Environment for a child process on a fresh Xvfb with screens 1600x1000 and 640x480."""
    with private_display("1600x1000x24", "640x480x24") as env:
        yield env


@pytest.fixture(scope="module")
def report(xvfb_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict:
    state = tmp_path_factory.mktemp("editor_state")
    command = [sys.executable, str(PROBE), str(state), str(EXAMPLE), str(ARTIFACT)]
    done = subprocess.run(command, env=xvfb_env, capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
    if done.returncode != 0 or not lines:
        output = (done.stdout + done.stderr)[-3000:]
        if "no Qt platform plugin" in output:
            unavailable(f"Qt cannot use Xvfb:\n{output}")
        pytest.fail(f"the editor GPU probe failed ({done.returncode}):\n{output}")
    return json.loads(lines[0].removeprefix("REPORT "))


def shows(picture: dict | None, colourful: bool) -> bool:
    """The texture, point by point, and a picture rather than a flat or black fill."""
    assert picture is not None
    assert picture["max_diff"] <= SAME, picture
    assert picture["mean"] > 20 and picture["std"] > 10, picture
    assert (picture["colourful"] > 30) == colourful, picture  # noise is grey, its colouring not
    return True


def test_editor_runs_gpu_nodes_on_its_engines_gl_service(report: dict) -> None:
    assert report["platform"] == "xcb" and report["gl"]
    assert report["gpu_label"].startswith("engine GL: ")
    assert report["output_action_enabled"]
    assert report["errors"] == {}
    assert report["statuses"]["colorize"] == "ok" and report["statuses"]["output"] == "ok"


def test_preview_panel_draws_the_selected_gpu_node(report: dict) -> None:
    assert report["preview_widget"] == "QLabel"  # the engine's picture
    assert shows(report["preview"], colourful=False)


def test_output_panel_draws_the_gpu_output_texture(report: dict) -> None:
    assert report["textures_differ"] > 50  # the noise and the output are different pictures
    assert shows(report["output_panel"], colourful=True)


def test_screenshot_of_the_editor_includes_the_gl_previews(report: dict) -> None:
    assert report["screenshot_saved"] and ARTIFACT.exists()
    assert shows(report["screenshot_preview"], colourful=False)


def test_gpu_nodes_show_a_thumbnail_of_their_texture_on_the_canvas(report: dict) -> None:
    assert report["thumbnail_while_running"]
    assert report["thumbnail_size"] == [96, 54]  # the 1280x720 texture, fitted
    assert shows(report["thumbnail"], colourful=False)
    assert report["thumbnail_vs_scaled"] <= SAME  # the GPU downscale, as read back
    assert shows(report["screenshot_thumbnail"], colourful=False)
    has = report["thumbnails_of_other_nodes"]
    assert has["noise"] and has["colorize"] and has["output"]  # GPU nodes
    assert not has["time"] and not has["contrast"]  # no texture output
    assert not report["thumbnail_zoomed_out"] and report["thumbnail_zoomed_in"]


def test_view_output_window_shows_the_gpu_output(report: dict) -> None:
    assert report["output_checked"]
    assert shows(report["output_window"], colourful=True)


def test_output_window_goes_fullscreen_on_a_screen_from_the_view_menu(report: dict) -> None:
    assert report["screen_menu_enabled"]
    assert report["screen_menu"] == [
        "Fullscreen on 0: screen (1600x1000)",
        "Fullscreen on 1: screen (640x480)",
        "",
        "Leave fullscreen",
    ]
    assert report["fullscreen_on_last"]
    assert shows(report["fullscreen_window"], colourful=True)
    assert report["after_escape"] == "Windowed"


def test_output_window_closes_and_reopens_with_the_action(report: dict) -> None:
    assert report["toggled_closed"] and report["reopened"]


def test_space_pauses_and_resumes_with_gl(report: dict) -> None:
    assert report["paused"] and report["status_mode"].endswith("paused")
    assert report["frames_while_paused"] == 0
    assert report["resumed_frames"] >= 10
    assert "paused" not in report["status_after_resume"]


def test_new_patch_gives_textures_back_and_close_closes_gl(report: dict) -> None:
    assert report["in_use_before_new"] > 0
    assert report["textures_back"]
    assert report["output_closed"] and report["gl_closed"]


# ---------------------------------------------------------------------------- without OpenGL


def test_without_gl_the_editor_degrades_to_text(editor, ui, qtbot) -> None:
    assert editor.findChildren(QOpenGLWidget) == []  # offscreen, no X server: no GL engine
    assert editor.status_labels["gpu"].text() == "engine: no GL"
    assert not editor.view_actions.output_action.isEnabled()
    editor.view_actions.toggle_output_window()
    assert not editor.evaluator.output_open and not editor.view_actions.output_action.isChecked()
    ui.show_patch(editor, load_patch(EXAMPLE))
    assert played(editor).status("noise") == "failed"
    assert "no GPU context" in played(editor).error("noise")
    editor.canvas.select(["noise"])
    editor.tick()
    assert isinstance(editor.preview.row_widget("out"), QLabel)
    assert editor.findChildren(QOpenGLWidget) == []
    assert all(editor.canvas.thumbnail_item(node_id) is None for node_id in editor.patch.nodes)
