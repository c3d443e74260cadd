"""Run by test_output_toggle.py in a subprocess on an X display: the editor drives an engine in its
process with an output window (app.qt.output_host); Ctrl+Shift+O opens the window, which is then
closed three ways (its title bar's close button, as an X window manager asks it: a WM_DELETE_WINDOW
message; Esc; the engine itself), and after each View > Output Window is unchecked and one press of
Ctrl+Shift+O opens it again. Saves a screenshot and prints a JSON report.

Usage: output_toggle_probe.py STATE_DIR PATCH SCREENSHOT.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from app.qt.launch import open_editor
from app.qt.output import configure_qt_gl
from app.qt.output_host import local_engine_with_output
from tests.waiting import wait_for, wait_until

CTRL_SHIFT = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier


class _ClientMessage(ctypes.Structure):
    _fields_ = [
        ("type", ctypes.c_int),
        ("serial", ctypes.c_ulong),
        ("send_event", ctypes.c_int),
        ("display", ctypes.c_void_p),
        ("window", ctypes.c_ulong),
        ("message_type", ctypes.c_ulong),
        ("format", ctypes.c_int),
        ("data", ctypes.c_long * 5),
    ]


class _Event(ctypes.Union):
    _fields_ = [("client", _ClientMessage), ("pad", ctypes.c_long * 24)]


def press_close_button(window_id: int) -> None:
    """What a window manager sends when its title bar's close button is clicked: a
    WM_PROTOCOLS client message with WM_DELETE_WINDOW, to the window (Xvfb has no manager)."""
    xlib = ctypes.CDLL(ctypes.util.find_library("X11"))
    xlib.XOpenDisplay.restype = ctypes.c_void_p
    xlib.XOpenDisplay.argtypes = [ctypes.c_char_p]
    xlib.XInternAtom.restype = ctypes.c_ulong
    xlib.XInternAtom.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
    xlib.XSendEvent.argtypes = [
        ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_long, ctypes.POINTER(_Event)
    ]  # fmt: skip
    xlib.XFlush.argtypes = [ctypes.c_void_p]
    xlib.XCloseDisplay.argtypes = [ctypes.c_void_p]
    display = xlib.XOpenDisplay(None)
    event = _Event()
    event.client.type = 33  # ClientMessage
    event.client.window = window_id
    event.client.message_type = xlib.XInternAtom(display, b"WM_PROTOCOLS", 0)
    event.client.format = 32
    event.client.data[0] = xlib.XInternAtom(display, b"WM_DELETE_WINDOW", 0)
    event.client.data[1] = 0  # CurrentTime
    xlib.XSendEvent(display, window_id, 0, 0, ctypes.byref(event))
    xlib.XFlush(display)
    xlib.XCloseDisplay(display)


def main() -> int:
    state_dir, patch_path, screenshot = (Path(arg) for arg in sys.argv[1:4])
    configure_qt_gl(swap_interval=0)
    app = QApplication(sys.argv[:1])
    link, output = local_engine_with_output()
    editor = open_editor(str(patch_path), state_dir, engine=link)
    editor.resize(1200, 800)
    editor.move(0, 0)
    wait_for(app, editor.isVisible, "the editor to show")
    action = editor.view_actions.output_action
    report: dict[str, Any] = {"platform": app.platformName()}

    def shown() -> bool:
        return output.window is not None and output.window.isExposed()

    def press_ctrl_shift_o() -> None:
        """One press, in the editor (shortcuts reach the active window only; Xvfb has no
        window manager to activate it)."""
        editor.activateWindow()
        wait_for(app, editor.isActiveWindow, "the editor to be the active window")
        QTest.keyClick(editor.canvas.viewer(), Qt.Key.Key_O, CTRL_SHIFT)

    def closed_then_one_press_opens(how: str) -> dict[str, bool]:
        result = {"closed": wait_until(app, lambda: output.window is None)}
        result["unchecked"] = wait_until(app, lambda: not action.isChecked())
        result["engine_says_closed"] = not link.engine.output_open
        press_ctrl_shift_o()
        result["one_press_opens"] = wait_until(app, shown)
        result["checked_again"] = wait_until(app, action.isChecked)
        report[how] = result
        return result

    press_ctrl_shift_o()
    report["opened"] = wait_until(app, shown) and wait_until(app, action.isChecked)

    press_close_button(int(output.window.winId()))
    wait_until(app, lambda: not action.isChecked())
    view_menu = next(a.menu() for a in editor.menuBar().actions() if a.text() == "&View")
    view_menu.popup(editor.mapToGlobal(editor.rect().center()))  # as it shows now: unchecked
    wait_until(app, view_menu.isVisible)
    screenshot.parent.mkdir(parents=True, exist_ok=True)
    report["screenshot_saved"] = view_menu.grab().save(str(screenshot))
    view_menu.hide()
    closed_then_one_press_opens("close_button")

    QTest.keyClick(output.window, Qt.Key.Key_Escape)  # not fullscreen: Esc closes it
    closed_then_one_press_opens("escape")

    output.close_window()  # the engine closes it (as on a restart without GL)
    closed_then_one_press_opens("engine")

    press_ctrl_shift_o()  # and one press closes it
    report["one_press_closes"] = wait_until(app, lambda: output.window is None) and wait_until(
        app, lambda: not action.isChecked()
    )
    editor.undo_stack.setClean()
    editor.close()
    app.processEvents()
    print("REPORT " + json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
