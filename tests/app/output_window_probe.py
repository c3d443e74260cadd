"""Run by test_output_window.py in a subprocess on an X display with two screens: opens the output
window on a patch, checks what it shows, and prints a JSON report.

A separate process because Qt's platform (xcb here, offscreen for the other app tests) is chosen
once per process.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtGui import QColor, QGuiApplication, QWindow
from PySide6.QtWidgets import QApplication

from app.qt.output import (
    QtOutputWindow,
    close_output_window,
    configure_qt_gl,
    create_gl_service,
    screen_choices,
)
from evaluators import FlatEvaluator
from nodes import Patch
from tests.waiting import wait_for

SPLIT = """#version 330
in vec2 uv;
out vec4 fragColor;
uniform vec4 top;
uniform vec4 bottom;
void main() { fragColor = uv.y > 0.5 ? top : bottom; }
"""


def grab(app: QApplication, window) -> list[tuple[int, int, int]]:
    """Top and bottom centre pixels, captured inside paintGL (before the swap)."""
    captured = {}

    def hook(win) -> None:
        image = win.grabFramebuffer()
        x = image.width() // 2
        captured["pixels"] = [
            QColor(image.pixel(x, image.height() // 4)).getRgb()[:3],
            QColor(image.pixel(x, image.height() * 3 // 4)).getRgb()[:3],
        ]
        captured["size"] = [image.width(), image.height()]

    window.paint_hooks.append(hook)
    window.update()
    wait_for(app, lambda: "pixels" in captured, "a paint of the output window")
    window.paint_hooks.remove(hook)
    return captured.get("pixels", [])


class FrameLoop:
    """Frames of `evaluator` at about 60 fps on a Qt timer, each followed by presenting
    `window`, as the engine runs them; each frame is `busy_s` longer than its GL work."""

    def __init__(self, evaluator: FlatEvaluator, gl: Any, window: Any) -> None:
        self.count = 0
        self.busy_s = 0.0
        self.timer = QTimer()
        self.timer.setInterval(16)
        self.timer.timeout.connect(lambda: self.step(evaluator, gl, window))
        self.timer.start()

    def step(self, evaluator: FlatEvaluator, gl: Any, window: Any) -> None:
        with gl.frame():
            evaluator.run_frame(self.count / 60.0, self.count)
        time.sleep(self.busy_s)
        self.count += 1
        window.present()


def main() -> int:
    configure_qt_gl()
    app = QApplication(sys.argv[:1])
    report: dict = {"platform": app.platformName(), "screens": screen_choices()}
    gl = create_gl_service((64, 48))
    patch = Patch()
    patch.update_settings(resolution=[64, 48])
    shader = patch.add_node("gpu.shader", {"source": SPLIT, "top": (1.0, 0.5, 0.0, 1.0),
                                           "bottom": (0.0, 0.5, 1.0, 1.0)})  # fmt: skip
    out = patch.add_node("gpu.output")
    patch.connect(shader, "out", out, "in")
    evaluator = FlatEvaluator(patch, gpu=gl)
    screens = QGuiApplication.screens()
    target = screens[-1]
    window = QtOutputWindow(lambda: evaluator.output(out))
    window.show_fullscreen(len(screens) - 1)
    frames = FrameLoop(evaluator, gl, window)
    wait_for(app, lambda: frames.count >= 5, "5 frames")
    report["frames"] = frames.count
    # frames that take most of their period: each is still presented, once
    swaps: list[int] = []
    window.frameSwapped.connect(lambda: swaps.append(frames.count))
    frames.busy_s = 0.012
    first = frames.count
    wait_for(app, lambda: frames.count >= first + 30, "30 long frames")
    frames.busy_s = 0.0
    report["long_frames"] = [first + 1, first + 30]
    report["long_frames_presented"] = [n for n in swaps if first < n <= first + 30]
    report["fullscreen"] = window.visibility() == QWindow.Visibility.FullScreen
    report["on_target"] = window.screen() is target
    report["geometry_is_screen"] = window.geometry() == target.geometry()
    report["pixels"] = grab(app, window)

    # a live edit shows in the next frames
    patch.set_value(shader, "top", (0.0, 1.0, 0.0, 1.0))
    frame = frames.count
    wait_for(app, lambda: frames.count >= frame + 3, "3 frames after the edit")
    report["edited_pixels"] = grab(app, window)

    # Esc leaves fullscreen, then move to the first screen fullscreen at runtime
    from PySide6.QtCore import QEvent, Qt
    from PySide6.QtGui import QKeyEvent

    app.sendEvent(window, QKeyEvent(QEvent.Type.KeyPress, Qt.Key.Key_Escape,
                                    Qt.KeyboardModifier.NoModifier))  # fmt: skip
    wait_for(
        app, lambda: window.visibility() != QWindow.Visibility.FullScreen, "Esc to leave fullscreen"
    )
    report["after_escape"] = window.visibility().name
    window.show_fullscreen(0)
    wait_for(
        app,
        lambda: window.screen() is screens[0] and window.geometry() == screens[0].geometry(),
        "the window fullscreen on the first screen",
    )
    report["moved_to_first"] = window.screen() is screens[0]
    report["moved_geometry"] = window.geometry() == screens[0].geometry()
    report["moved_pixels"] = grab(app, window)
    menu = window.screen_menu()
    report["menu"] = [action.text() for action in menu.actions()]

    report["pool"] = gl.pool_stats()
    frames.timer.stop()
    close_output_window(window)
    print("REPORT " + json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
