"""Run by test_editor_gpu.py in a subprocess on an X display with two screens: opens the editor on
a GPU example patch, driving an engine in its process with a GL service and an output window
(app.qt.output_host), checks what the engine's pictures show in the Preview and Output panels and
the node thumbnails, and what its output window shows, against the patch's textures read back from
the GL service, saves a screenshot of the whole editor, and prints a JSON report.

Usage: editor_gpu_probe.py STATE_DIR PATCH SCREENSHOT. A separate process because Qt's platform
(xcb here, offscreen for the other app tests) is chosen once per process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QGuiApplication, QImage, QKeyEvent, QWindow
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLabel, QWidget

from app.qt.launch import open_editor
from app.qt.output import configure_qt_gl
from app.qt.output_host import local_engine_with_output
from tests.waiting import wait_for, wait_until


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


def label_array(label: QLabel) -> np.ndarray:
    """The picture a label shows (its pixmap)."""
    return image_array(label.pixmap().toImage())


def shown_picture(label: QLabel) -> bool:
    pixmap = label.pixmap()
    return pixmap is not None and not pixmap.isNull()


def drawn_in(shot: QImage, editor: QWidget, label: QLabel) -> np.ndarray:
    """The part of a screenshot of `editor` where `label` draws its pixmap (centred in it)."""
    size = label.pixmap().size()
    corner = label.mapTo(editor, QPoint((label.width() - size.width()) // 2,
                                        (label.height() - size.height()) // 2))  # fmt: skip
    ratio = shot.width() / editor.width()
    x0, y0 = round(corner.x() * ratio), round(corner.y() * ratio)
    pixels = image_array(shot)
    return pixels[y0 : y0 + round(size.height() * ratio), x0 : x0 + round(size.width() * ratio)]


def main() -> int:
    state_dir, patch_path, screenshot = (Path(arg) for arg in sys.argv[1:4])
    configure_qt_gl(swap_interval=0)
    app = QApplication(sys.argv[:1])
    link, output = local_engine_with_output()
    engine = link.engine
    gl = engine.gpu
    editor = open_editor(str(patch_path), state_dir, engine=link)
    editor.resize(1400, 850)
    editor.move(0, 0)
    wait_for(app, editor.isVisible, "the editor to show")
    editor.view_actions.frame_all()  # every node in view, whatever room the docks leave
    remote = editor.evaluator  # what the window knows: the engine's reports

    def ev():  # the engine's evaluator (a new one for each patch it is sent)
        return engine.evaluator

    def reports(count: int, what: str) -> None:
        """Turn the loop until `count` more reports came (each picture due was taken)."""
        done = remote.reports + count
        wait_for(app, lambda: remote.reports >= done, what)

    report: dict[str, Any] = {
        "platform": app.platformName(),
        "gl": bool(link.hello.gl),
        "gpu_label": editor.status_labels["gpu"].text(),
        "output_action_enabled": editor.view_actions.output_action.isEnabled(),
    }
    wait_for(
        app,
        lambda: ev().mode == "flat" and remote.status("output") in ("ok", "cached"),
        "the patch to run flat with its output ok",
    )
    report["statuses"] = {node_id: remote.status(node_id) for node_id in editor.patch.nodes}
    report["errors"] = {n: remote.error(n) for n in editor.patch.nodes if remote.error(n)}

    # the selected GPU node's picture in the preview panel
    editor.canvas.select(["noise"])
    wait_for(
        app,
        lambda: (
            isinstance(editor.preview.row_widget("out"), QLabel)
            and shown_picture(editor.preview.row_widget("out"))
        ),
        "the engine's picture of the selected node",
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
    report["paused"] = editor.transport_actions.paused
    report["status_mode"] = editor.status_labels["mode"].text()
    reports(2, "the pause to reach the engine")
    frames = engine.frame
    reports(20, "reports while paused")  # the paused frame's pictures, all of them
    report["frames_while_paused"] = engine.frame - frames

    noise = gl.readback(ev().output("noise"))
    output_texture = gl.readback(ev().output("output"))
    report["textures_differ"] = int(np.abs(noise.astype(int) - output_texture).max())

    # canvas thumbnails: the paused frame's
    item = canvas.thumbnail_item("noise")
    thumb = image_array(item.pixmap().toImage()) if item is not None else None
    if thumb is not None:
        report["thumbnail_size"] = [thumb.shape[1], thumb.shape[0]]
        report["thumbnail"] = compare(thumb, noise)
        scaled = gl.readback_scaled(ev().output("noise"), (thumb.shape[1], thumb.shape[0]))
        report["thumbnail_vs_scaled"] = int(np.abs(thumb.astype(int) - scaled[..., :3]).max())
    report["thumbnails_of_other_nodes"] = {
        node_id: canvas.thumbnail_item(node_id) is not None for node_id in editor.patch.nodes
    }
    report["preview"] = compare(label_array(row), noise)
    report["output_panel"] = compare(label_array(editor.output_picture), output_texture)

    # the whole editor, pictures included
    shot = editor.grab().toImage()
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    report["screenshot_saved"] = shot.save(str(screenshot))
    report["screenshot_preview"] = compare(drawn_in(shot, editor, row), noise)
    if item is not None:  # the thumbnail as drawn on the canvas, scaled by the view's zoom
        ratio = shot.width() / editor.width()
        box = viewer.mapFromScene(item.sceneBoundingRect()).boundingRect()
        corner = viewer.viewport().mapTo(editor, box.topLeft())
        x0, y0 = round(corner.x() * ratio), round(corner.y() * ratio)
        drawn = image_array(shot)[y0 : y0 + round(box.height() * ratio),
                                  x0 : x0 + round(box.width() * ratio)]  # fmt: skip
        report["screenshot_thumbnail"] = compare(drawn, noise)

    # View > Output Window: the engine's window with the gpu.output texture
    editor.view_actions.output_action.trigger()
    wait_for(
        app,
        lambda: (
            output.window is not None
            and output.window.isExposed()
            and output.window.view is not None
        ),
        "the output window to show",
    )
    window = output.window
    report["output_checked"] = editor.view_actions.output_action.isChecked()
    shown = grab_window(app, window)
    report["output_window"] = compare(shown, output_texture) if shown is not None else None

    # View > Output Screen: fullscreen on the second screen, Esc leaves fullscreen
    menu = editor.view_actions.output_screen_menu
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
    report["fullscreen_window"] = compare(shown, output_texture) if shown is not None else None
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

    # zoomed out to plain rectangles, no thumbnail is asked for; zoomed back in, it is
    viewer.scale(0.1, 0.1)
    views = editor.report_views
    asked = lambda: views.image_request is not None and not views.image_request.thumbnails  # noqa: E731
    wait_for(app, asked, "no thumbnail asked for")
    reports(2, "the request to reach the engine")
    canvas.set_thumbnail("noise", None)
    frames = editor._frame
    wait_for(app, lambda: editor._frame >= frames + 30, "30 frames zoomed out")
    report["thumbnail_zoomed_out"] = canvas.thumbnail_item("noise") is not None
    viewer.scale(10.0, 10.0)
    report["thumbnail_zoomed_in"] = wait_until(app, lambda: thumbnail_of("noise") is not None)

    # the action closes the window and opens it again
    editor.view_actions.output_action.trigger()
    wait_for(app, lambda: output.window is None, "the output window to close")
    report["toggled_closed"] = (
        output.window is None and not editor.view_actions.output_action.isChecked()
    )
    editor.view_actions.output_action.trigger()
    wait_for(
        app,
        lambda: output.window is not None and output.window.isExposed(),
        "the output window to open again",
    )
    report["reopened"] = editor.view_actions.output_action.isChecked()

    # File > New: the old patch's textures go back to the pool
    report["in_use_before_new"] = gl.pool_stats()["in_use"]
    editor.undo_stack.setClean()
    editor.file_actions.new_patch()
    report["textures_back"] = wait_until(app, lambda: gl.pool_stats()["in_use"] == 0)

    editor.close()
    app.processEvents()
    report["output_closed"] = output.window is None
    report["gl_closed"] = gl.closed
    print("REPORT " + json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
