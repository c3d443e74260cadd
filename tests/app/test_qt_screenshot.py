"""Screenshot of the editor on the built-in demo patch, kept as tests/artifacts/editor_demo.png and
checked for what it must show: a red failed node, orange HOT nodes and blue cached CONST nodes."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest

from app.engine.local import LocalEngineLink
from app.qt.canvas.canvas import CLASS_COLORS, FAILED_COLOR
from app.qt.launch import open_editor
from app.qt.window import DECORATE_EVERY
from tests.app.conftest import run_frames, stop_loop, wait_built

ARTIFACT = Path(__file__).resolve().parents[1] / "artifacts" / "editor_demo.png"


def count_color(image: QImage, rgb: tuple[int, int, int], tolerance: int = 10) -> int:
    count = 0
    for y in range(0, image.height(), 2):
        for x in range(0, image.width(), 2):
            pixel = image.pixelColor(x, y)
            if all(abs(a - b) <= tolerance for a, b in zip(pixel.getRgb()[:3], rgb, strict=True)):
                count += 1
    return count


def test_demo_patch_screenshot(qtbot, tmp_path, dialogs):
    window = open_editor(None, tmp_path / "state", LocalEngineLink())
    dialogs.install(window)
    qtbot.addWidget(window)
    window.resize(1400, 850)
    window.show()
    qtbot.waitExposed(window)
    stop_loop(window)  # the test turns it
    wait_built(window)
    # View > Frame all: every node shows, whatever room the docks leave the canvas
    QTest.keyClick(window.canvas.viewer(), Qt.Key.Key_Home)
    run_frames(window)  # the engine plays the demo from its first frame, flat (built at load)
    assert window.evaluator.status("broken") == "failed"
    assert window.evaluator.mode == "flat"
    window.canvas.select(["breathing"])
    # two decoration passes: colours and preview catch up
    run_frames(window, 2 * DECORATE_EVERY)
    image = window.grab().toImage()
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    assert image.save(str(ARTIFACT))
    assert count_color(image, FAILED_COLOR) > 120  # the one failed node, the whole patch framed
    assert count_color(image, CLASS_COLORS["HOT"]) > 1000
    assert count_color(image, CLASS_COLORS["CONST"]) > 300
    assert window.windowTitle().startswith("demo (example)")  # no file holds it yet
