"""The output window of an engine, hosted in the engine's Qt process, and an engine for an editor's.

`QtOutputHost` answers an `Engine`'s `output` requests (`engine.on_output_request`): it opens the
`QtOutputWindow` on the running patch's `gpu.output` texture (on a screen, fullscreen or not),
closes it, and presents it after each frame (`present()`), keeping the engine's `output_open`,
`output_screen` and `output_fullscreen` as the window is: closed by its own close button or Esc,
the window is closed here as if the editor had asked, so the engine's reports say so. With a
frame log, the window's buffer swaps are the presented frames. The engine process
(app.qt.engine_host) hosts its window this way.

`local_engine_with_output()` is an engine in this process (app.engine.local) with a GL service
shared with Qt's contexts when there is a display (else a standalone EGL one, else none) and its
output window hosted here, presented after each frame the link steps: what an editor window, a
probe or a bench drives when it wants the engine's GL and output window in its own process.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

from PySide6.QtGui import QGuiApplication, QWindow

from app.engine.engine import Engine, FrameLog
from app.engine.local import LocalEngineLink
from app.engine.protocol.messages import Output
from app.engine.reports.patch_info import output_node
from app.qt.output import (
    QtOutputWindow,
    close_output_window,
    create_gl_service,
    qt_gl_available,
    screen_choices,
)

NO_WINDOW_PLATFORMS = ("offscreen", "minimal")
DESCRIBE_EVERY = 15  # frames between readings of the window's screen (Esc or F change it)


class QtOutputHost:
    """The output window of `engine`: see the module note."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.window: QtOutputWindow | None = None
        self.on_quit: Any = None  # the player's: the window's quit keys call it
        self._output_node: tuple[int, str | None] = (-1, None)
        engine.on_output_request = self.on_output_request

    def output_texture(self) -> Any:
        """The texture of the running patch's `gpu.output` node (the first by id)."""
        patch = self.engine.patch
        revision, node_id = self._output_node
        if revision != patch.revision:
            node_id = output_node(patch)
            self._output_node = (patch.revision, node_id)
        if node_id is None or node_id not in patch.nodes:
            return None
        return self.engine.evaluator.output(node_id)

    def on_output_request(self, message: Output) -> None:
        if message.open:
            self.open_window(message.screen, message.fullscreen)
        else:
            self.close_window()

    def open_window(self, screen: int | None, fullscreen: bool) -> bool:
        """Show the output window (False when this process cannot show windows)."""
        if self.engine.gpu is None or QGuiApplication.platformName() in NO_WINDOW_PLATFORMS:
            self.engine.output_open = False
            return False
        if self.window is None:
            self.window = QtOutputWindow(self.output_texture)
            self.window.on_quit = self.on_quit
            self.window.on_close = self.close_window
            log = self.engine.frame_log
            if log is not None:
                self.window.frameSwapped.connect(lambda: log.presented(self.engine.frame - 1))
                self.engine.presents_frames = True
        screens = QGuiApplication.screens()
        if screen is not None and not 0 <= screen < len(screens):
            screen = None
        if fullscreen:
            self.window.show_fullscreen(screen)
        else:
            if screen is not None:
                target = screens[screen]
                self.window.setScreen(target)
                self.window.setPosition(target.geometry().topLeft())
            self.window.show()
        self.engine.output_open = True
        return True

    def present(self) -> None:
        """Paint and swap the window (when open) with the frame that just ran."""
        if self.window is not None:
            self.window.present()
            if self.engine.frame % DESCRIBE_EVERY == 0:
                self._describe_window(self.window)

    def _describe_window(self, window: QtOutputWindow) -> None:
        screens = QGuiApplication.screens()
        screen = window.screen()
        index = screens.index(screen) if screen in screens else 0
        self.engine.output_screen = dict(screen_choices()).get(index)
        self.engine.output_fullscreen = window.visibility() == QWindow.Visibility.FullScreen

    def close_window(self) -> None:
        window, self.window = self.window, None
        self.engine.output_open = False
        self.engine.presents_frames = False
        if window is not None:
            close_output_window(window)


def create_engine_gl(size: tuple[int, int]) -> Any:
    """A GL service the output window can share (with a display), else standalone EGL, else
    None (GPU nodes then fail with "no GPU context")."""
    if QGuiApplication.platformName() not in NO_WINDOW_PLATFORMS and qt_gl_available():
        with contextlib.suppress(RuntimeError):
            return create_gl_service(size)
    try:
        from evaluators.services.gl import GLService

        return GLService.standalone(size)
    except Exception as error:  # no EGL either: the patch still plays its CPU nodes
        print(f"patchbay engine: no OpenGL ({error}); GPU nodes will fail", file=sys.stderr)
        return None


def local_engine_with_output(
    size: tuple[int, int] = (1280, 720), options: dict[str, Any] | None = None
) -> tuple[LocalEngineLink, QtOutputHost]:
    """An engine in this process with its own GL service (closed with it) and its output window
    hosted here (see the module note); `PATCHBAY_FRAME_LOG` logs the frames it presents."""
    link = LocalEngineLink(gpu=create_engine_gl(size), owns_gpu=True, options=options)
    link.engine.frame_log = FrameLog.from_environment()
    host = QtOutputHost(link.engine)
    link.after_step = host.present
    link.before_close = host.close_window
    return link, host
