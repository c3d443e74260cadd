"""Run by test_editor_gpu.py in a subprocess on an X display with two screens: opens the editor on
a GPU example patch with OpenGL, checks what its GL previews, its node thumbnails and its output
window show against the patch's textures read back from the GL service, saves a screenshot of the
whole editor, and prints a JSON report.

Usage: editor_gpu_probe.py STATE_DIR PATCH SCREENSHOT. A separate process because Qt's platform
(xcb here, offscreen for the other app tests) is chosen once per process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QEvent, QObject, QPoint, Qt
from PySide6.QtGui import QGuiApplication, QImage, QKeyEvent, QWindow
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget

from app.editor import open_editor
from app.qt_output import QtTexturePreview, configure_qt_gl
from tests.waiting import run_for, wait_for, wait_until


def image_array(image: QImage) -> np.ndarray:
    """HxWx3 uint8, rows top to bottom."""
    image = image.convertToFormat(QImage.Format.Format_RGB888)
    width, height, stride = image.width(), image.height(), image.bytesPerLine()
    data = np.frombuffer(image.constBits(), np.uint8, stride * height)
    return data.reshape(height, stride)[:, : width * 3].reshape(height, width, 3).copy()


def compare(shown: np.ndarray, texture: np.ndarray) -> dict[str, Any]:
    """`shown` is `texture` (HxWx4, top to bottom) letterboxed and filtered into a window:
    at a grid of points inside the picture, how far the shown colour lies outside the range of
    the texels around the matching point (filtering mixes only those); and the picture's
    brightness, contrast and colour."""
    height, width = shown.shape[:2]
    tex_h, tex_w = texture.shape[:2]
    scale = min(width / tex_w, height / tex_h)
    drawn_w, drawn_h = round(tex_w * scale), round(tex_h * scale)
    left, top = (width - drawn_w) // 2, (height - drawn_h) // 2
    reach = int(np.ceil(1 / scale)) + 1
    diffs = []
    for fy in np.linspace(0.1, 0.9, 7):
        for fx in np.linspace(0.1, 0.9, 9):
            colour = shown[int(top + fy * drawn_h), int(left + fx * drawn_w)].astype(int)
            x, y = int(fx * tex_w), int(fy * tex_h)
            around = texture[y - reach : y + reach + 1, x - reach : x + reach + 1, :3]
            low, high = around.reshape(-1, 3).min(0), around.reshape(-1, 3).max(0)
            diffs.append(int(np.maximum(low - colour, colour - high).clip(0).max()))
    picture = shown[top : top + drawn_h, left : left + drawn_w].reshape(-1, 3)
    return {
        "max_diff": max(diffs),
        "mean": float(picture.mean()),
        "std": float(picture.std()),
        "colourful": float(np.abs(picture[:, 0].astype(int) - picture[:, 2]).mean()),
    }


def grab_window(app: QApplication, window) -> np.ndarray | None:
    """The output window's picture, captured inside paintGL (before the swap)."""
    captured: dict[str, QImage] = {}

    def hook(win) -> None:
        captured["image"] = win.grabFramebuffer()

    window.paint_hooks.append(hook)
    window.update()
    wait_for(app, lambda: "image" in captured, "a paint of the output window")
    window.paint_hooks.remove(hook)
    return image_array(captured["image"]) if "image" in captured else None


class PaintCounter(QObject):
    """Counts the paint events each of `widgets` receives from now on."""

    def __init__(self, *widgets: QWidget) -> None:
        super().__init__()
        self.paints = {widget: 0 for widget in widgets}
        for widget in widgets:
            widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and watched in self.paints:
            self.paints[watched] += 1
        return False

    def all_painted(self) -> bool:
        return all(self.paints.values())


def main() -> int:
    state_dir, patch_path, screenshot = (Path(arg) for arg in sys.argv[1:4])
    configure_qt_gl(swap_interval=0)
    app = QApplication(sys.argv[:1])
    editor = open_editor(str(patch_path), state_dir)
    editor.resize(1400, 850)
    editor.move(0, 0)
    wait_for(app, editor.isVisible, "the editor to show")
    ev = editor.evaluator
    report: dict[str, Any] = {
        "platform": app.platformName(),
        "gl": editor.gl is not None,
        "gpu_label": editor.status_labels["gpu"].text(),
        "output_action_enabled": editor.output_action.isEnabled(),
    }
    wait_for(
        app,
        lambda: ev.mode == "flat" and ev.status("output") in ("ok", "cached"),
        "the patch to run flat with its output ok",
    )
    report["statuses"] = {node_id: ev.status(node_id) for node_id in editor.patch.nodes}
    report["errors"] = {n: ev.error(n) for n in editor.patch.nodes if ev.error(n)}

    # the selected GPU node's texture in the preview panel
    editor.canvas.select(["noise"])
    wait_for(
        app,
        lambda: isinstance(editor.preview.row_widget("out"), QtTexturePreview),
        "a GL texture preview of the selected node",
    )
    row = editor.preview.row_widget("out")
    report["preview_widget"] = type(row).__name__
    frames = editor._frame
    wait_for(app, lambda: editor._frame >= frames + 6, "6 frames")
    canvas = editor.canvas
    thumbnail_of = canvas.thumbnail_item
    report["thumbnail_while_running"] = wait_until(app, lambda: thumbnail_of("noise") is not None)

    # Space pauses: the textures hold still while they are compared. (Xvfb has no window
    # manager to activate the window, and shortcuts only reach the active window.)
    editor.activateWindow()
    wait_for(app, editor.isActiveWindow, "the editor to be the active window")
    viewer = editor.canvas.viewer()
    viewer.setFocus()
    QTest.keyClick(viewer, Qt.Key.Key_Space)
    report["paused"] = editor.paused
    report["status_mode"] = editor.status_labels["mode"].text()
    frames = editor._frame
    run_for(app, 0.2)
    report["frames_while_paused"] = editor._frame - frames

    gl = editor.gl
    noise = gl.readback(ev.output("noise"))
    output = gl.readback(ev.output("output"))
    report["textures_differ"] = int(np.abs(noise.astype(int) - output).max())

    # canvas thumbnails: the paused frame's, once the one from before the pause is taken away
    canvas.set_thumbnail("noise", None)
    wait_for(app, lambda: canvas.thumbnail_item("noise") is not None, "a paused thumbnail")
    item = canvas.thumbnail_item("noise")
    thumb = image_array(item.pixmap().toImage()) if item is not None else None
    if thumb is not None:
        report["thumbnail_size"] = [thumb.shape[1], thumb.shape[0]]
        report["thumbnail"] = compare(thumb, noise)
        scaled = gl.readback_scaled(ev.output("noise"), (thumb.shape[1], thumb.shape[0]))
        report["thumbnail_vs_scaled"] = int(np.abs(thumb.astype(int) - scaled[..., :3]).max())
    report["thumbnails_of_other_nodes"] = {
        node_id: canvas.thumbnail_item(node_id) is not None for node_id in editor.patch.nodes
    }
    report["preview"] = compare(image_array(row.grabFramebuffer()), noise)
    report["output_panel"] = compare(image_array(editor.output_preview.grabFramebuffer()), output)

    # the whole editor, GL widgets composited
    painted = PaintCounter(row, editor.output_preview)
    editor.refresh_textures()
    wait_for(app, painted.all_painted, "a paint of both GL previews")
    shot = editor.grab().toImage()
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    report["screenshot_saved"] = shot.save(str(screenshot))
    shot_pixels = image_array(shot)
    corner = row.mapTo(editor, QPoint(0, 0))
    ratio = shot.width() / editor.width()
    x0, y0 = round(corner.x() * ratio), round(corner.y() * ratio)
    inside = shot_pixels[
        y0 : y0 + round(row.height() * ratio), x0 : x0 + round(row.width() * ratio)
    ]
    report["screenshot_preview"] = compare(inside, noise)
    if item is not None:  # the thumbnail as drawn on the canvas, scaled by the view's zoom
        box = viewer.mapFromScene(item.sceneBoundingRect()).boundingRect()
        corner = viewer.viewport().mapTo(editor, box.topLeft())
        x0, y0 = round(corner.x() * ratio), round(corner.y() * ratio)
        drawn = shot_pixels[y0 : y0 + round(box.height() * ratio),
                            x0 : x0 + round(box.width() * ratio)]  # fmt: skip
        report["screenshot_thumbnail"] = compare(drawn, noise)

    # View > Output Window: a separate window with the gpu.output texture
    editor.output_action.trigger()
    window = editor.output_window
    wait_for(
        app, lambda: window.isExposed() and window.view is not None, "the output window to show"
    )
    report["output_checked"] = editor.output_action.isChecked()
    shown = grab_window(app, window)
    report["output_window"] = compare(shown, output) if shown is not None else None

    # View > Output Screen: fullscreen on the second screen, Esc leaves fullscreen
    menu = editor.output_screen_menu
    menu.aboutToShow.emit()
    menu.aboutToShow.emit()  # refilled, not appended
    report["screen_menu_enabled"] = menu.isEnabled()
    report["screen_menu"] = [action.text() for action in menu.actions()]
    screens = QGuiApplication.screens()
    menu.actions()[len(screens) - 1].trigger()
    wait_for(app, lambda: window.visibility() == QWindow.Visibility.FullScreen
             and window.geometry() == screens[-1].geometry(),
             "the output window fullscreen on the last screen")  # fmt: skip
    report["fullscreen_on_last"] = (window.visibility() == QWindow.Visibility.FullScreen
                                    and window.screen() is screens[-1])  # fmt: skip
    shown = grab_window(app, window)
    report["fullscreen_window"] = compare(shown, output) if shown is not None else None
    app.sendEvent(window, QKeyEvent(QEvent.Type.KeyPress, Qt.Key.Key_Escape,
                                    Qt.KeyboardModifier.NoModifier))  # fmt: skip
    wait_for(
        app,
        lambda: window.visibility() != QWindow.Visibility.FullScreen,
        "Esc to leave fullscreen",
    )
    report["after_escape"] = window.visibility().name

    # Space resumes; the output window follows the frames
    editor.activateWindow()
    wait_for(app, editor.isActiveWindow, "the editor to be the active window again")
    viewer.setFocus()
    QTest.keyClick(viewer, Qt.Key.Key_Space)
    frames = editor._frame
    wait_for(app, lambda: editor._frame >= frames + 10, "10 frames after resuming")
    report["resumed_frames"] = editor._frame - frames
    report["status_after_resume"] = editor.status_labels["mode"].text()

    # zoomed out to plain rectangles, no thumbnail is made; zoomed back in, it is
    viewer.scale(0.1, 0.1)
    canvas.set_thumbnail("noise", None)
    frames = editor._frame
    wait_for(app, lambda: editor._frame >= frames + 30, "30 frames zoomed out")
    report["thumbnail_zoomed_out"] = canvas.thumbnail_item("noise") is not None
    viewer.scale(10.0, 10.0)
    report["thumbnail_zoomed_in"] = wait_until(app, lambda: thumbnail_of("noise") is not None)

    # closing the window from the window manager goes through the editor; the action follows
    window.close()
    wait_for(app, lambda: editor.output_window is None, "the output window to close")
    report["closed_by_wm"] = editor.output_window is None
    report["output_unchecked"] = not editor.output_action.isChecked()
    editor.output_action.trigger()  # and it opens again
    wait_for(
        app,
        lambda: editor.output_window is not None and editor.output_window.isExposed(),
        "the output window to open again",
    )
    report["reopened"] = editor.output_window is not None
    editor.output_action.trigger()
    report["toggled_closed"] = editor.output_window is None

    # File > New: the old patch's textures go back to the pool
    report["in_use_before_new"] = gl.pool_stats()["in_use"]
    editor.undo_stack.setClean()
    editor.new_patch()
    report["in_use_after_new"] = gl.pool_stats()["in_use"]

    editor.close()
    app.processEvents()
    report["gl_closed"] = gl.closed
    print("REPORT " + json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
