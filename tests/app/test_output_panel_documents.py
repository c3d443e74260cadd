"""The Output panel shows the document that is open, never the last one's frame: File > New clears
it (and says the patch has no gpu.output), File > Open shows the opened patch's picture and
never the previous document's. The editor drives an engine in this process with a standalone GL
service, through real key presses (Ctrl+N, Ctrl+O)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage

from app.engine.local import LocalEngineLink
from nodes import Patch, save_patch
from tests.app.conftest import make_editor, run_frames

CTRL = Qt.KeyboardModifier.ControlModifier
RED, BLUE = (1.0, 0.0, 0.0, 1.0), (0.0, 0.0, 1.0, 1.0)


def solid_patch(color: tuple[float, ...]) -> Patch:
    patch = Patch()
    patch.add_node("gpu.solid", {"color": color, "resolution": (64, 36)}, (0, 0), node_id="fill")
    patch.add_node("gpu.output", None, (300, 0), node_id="output")
    patch.connect("fill", "out", "output", "in")
    return patch


@pytest.fixture
def gl_editor(qtbot: Any, tmp_path: Path, dialogs: Any) -> Any:
    try:
        from evaluators.services.gl import GLService

        gpu = GLService.standalone((64, 36))
    except Exception as error:  # no EGL here
        from tests.xvfb import unavailable

        unavailable(f"no standalone GL context: {error}")
    engine = LocalEngineLink(gpu=gpu, owns_gpu=True)
    window = make_editor(qtbot, tmp_path / "state", dialogs, engine)
    yield window
    dialogs.unsaved_answer = "discard"
    window.close()


def centre(editor: Any) -> tuple[int, int, int] | None:
    """The colour at the middle of the Output panel's picture, or None without one."""
    pixmap = editor.output_picture.pixmap()
    if pixmap is None or pixmap.isNull():
        return None
    image = pixmap.toImage().convertToFormat(QImage.Format.Format_RGB888)
    colour = image.pixelColor(image.width() // 2, image.height() // 2)
    return colour.red(), colour.green(), colour.blue()


def frames_until(qtbot: Any, editor: Any, condition: Any) -> None:
    """Run frames of the engine (each reported) until `condition()` holds."""

    def stepped() -> bool:
        run_frames(editor)
        return bool(condition())

    qtbot.waitUntil(stepped)


def test_new_and_open_clear_the_output_panel(gl_editor, dialogs, qtbot, tmp_path):
    editor = gl_editor
    red, blue = tmp_path / "red.patchbay", tmp_path / "blue.patchbay"
    save_patch(solid_patch(RED), red)
    save_patch(solid_patch(BLUE), blue)
    viewer = editor.canvas.viewer()
    dialogs.unsaved_answer = "discard"

    dialogs.open_path = str(red)
    viewer.setFocus()
    qtbot.keyClick(viewer, Qt.Key.Key_O, CTRL)
    assert editor.path == red
    frames_until(qtbot, editor, lambda: centre(editor) == (255, 0, 0))

    viewer = editor.canvas.viewer()
    viewer.setFocus()
    qtbot.keyClick(viewer, Qt.Key.Key_N, CTRL)  # File > New
    assert editor.path is None and not editor.patch.nodes
    run_frames(editor)
    assert centre(editor) is None  # not the red frame
    assert "no gpu.output" in editor.output_picture.text()
    shots = os.environ.get("PATCHBAY_SHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        editor.grab().save(str(Path(shots) / "stagewin-output-after-new.png"))

    dialogs.open_path = str(red)
    viewer.setFocus()
    qtbot.keyClick(viewer, Qt.Key.Key_O, CTRL)
    frames_until(qtbot, editor, lambda: centre(editor) == (255, 0, 0))
    dialogs.open_path = str(blue)  # the same node ids, another picture
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    qtbot.keyClick(viewer, Qt.Key.Key_O, CTRL)
    assert editor.path == blue
    seen: list[Any] = []
    frames_until(qtbot, editor, lambda: seen.append(centre(editor)) or seen[-1] == (0, 0, 255))
    assert (255, 0, 0) not in seen  # from the open on, never the previous document's frame
