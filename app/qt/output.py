"""The output window and GL texture previews: showing GPU textures of a running patch in Qt.

Pieces:
- `configure_qt_gl()`: OpenGL 3.3 core as Qt's default format and shared GL contexts
  (`AA_ShareOpenGLContexts`); call it before the QApplication exists. `qt_gl_available()` tells
  whether Qt can make GL contexts at all (no X server: no), before any GL widget is made.
- `create_gl_service(size)`: the GL service of a patch that runs inside Qt. Its context is a Qt
  `QOpenGLContext` on a `QOffscreenSurface`, shared with Qt's global share context, so every
  output window samples its textures directly, without copies. Any failure
  is a RuntimeError, so callers need not import moderngl.
- `QtOutputWindow`: a top-level `QOpenGLWindow` that shows the `gpu.output` texture, letterboxed.
  Fullscreen on a chosen screen (`show_fullscreen(screen)`), movable between screens at runtime,
  Esc leaves fullscreen, a right click (or `screen_menu()`) lists screens by name and resolution.
  With `on_quit` set (the player's window) q, Ctrl+Q, Esc when not fullscreen and the title bar's
  close button call it. Otherwise Esc when not fullscreen and the close button call `on_close`
  (the engine's host: it hides and frees the window, and says so in the engine's reports, so
  the editor's View > Output Window follows), from the event loop; without one they hide it.
  The process that runs the frames presents it after each frame (`present()`; app.qt.output_host
  opens one for an engine). `close_output_window()` frees and hides one.

Running frames and playing a patch (`patchbay run`) are not here: the engine process
(app.qt.engine_host) and the player (app.engine.player) use these windows.

Rules from the GL notes that this module follows:
- moderngl contexts are made with a Qt-based function loader (`QtGLLoader`), never with a bare
  `moderngl.create_context()` (which detects GLX only and keeps a process-wide default).
- The GL service's frame (`with gl.frame():`) finishes GPU work before display contexts
  sample its textures. Display contexts only wrap textures (`external_texture`), never own them.
- A standalone EGL service (headless) cannot share textures with Qt: windows need this service.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import moderngl
import numpy as np
from PySide6.QtCore import QCoreApplication, QPoint, QRect, Qt, QTimer
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QCursor,
    QGuiApplication,
    QKeyEvent,
    QMouseEvent,
    QOffscreenSurface,
    QOpenGLContext,
    QPaintEvent,
    QScreen,
    QSurfaceFormat,
    QWindow,
)
from PySide6.QtOpenGL import QOpenGLWindow
from PySide6.QtWidgets import QMenu

from evaluators.services.gl import GLService, GLTarget, texture_alive

TextureSource = Callable[[], Any]

_BLIT_VS = """#version 330
in vec2 in_pos;
out vec2 uv;
void main() { uv = in_pos * 0.5 + 0.5; gl_Position = vec4(in_pos, 0.0, 1.0); }
"""
_BLIT_FS = """#version 330
in vec2 uv;
out vec4 fragColor;
uniform sampler2D src;
void main() { fragColor = vec4(texture(src, uv).rgb, 1.0); }
"""
_QUAD = np.array([-1.0, -1.0, 1.0, -1.0, -1.0, 1.0, 1.0, 1.0], dtype="f4")


def configure_qt_gl(swap_interval: int = 1) -> None:
    """OpenGL 3.3 core by default and shared contexts; must run before QApplication exists."""
    fmt = QSurfaceFormat()
    fmt.setVersion(3, 3)
    fmt.setProfile(QSurfaceFormat.OpenGLContextProfile.CoreProfile)
    fmt.setSwapInterval(swap_interval)
    QSurfaceFormat.setDefaultFormat(fmt)
    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)


class QtGLLoader:
    """What moderngl needs from a context it did not create: GL functions from Qt, and making
    the context current (`with ctx:`) on its surface while restoring what was current before."""

    def __init__(self, qt_context: QOpenGLContext, surface: Any = None) -> None:
        self._qt_context = qt_context
        self._surface = surface
        self._previous: list[tuple[Any, Any]] = []

    def load_opengl_function(self, name: str) -> int:
        return self._qt_context.getProcAddress(name.encode()) or 0

    def __enter__(self) -> None:
        current = QOpenGLContext.currentContext()
        self._previous.append((current, current.surface() if current is not None else None))
        if self._surface is not None and current is not self._qt_context:
            self._qt_context.makeCurrent(self._surface)

    def __exit__(self, *exc: object) -> None:
        current, surface = self._previous.pop()
        if current is not None and current is not self._qt_context:
            current.makeCurrent(surface)

    def release(self) -> None:
        """Qt owns the context; nothing to free."""


def _moderngl_for_current_qt_context() -> moderngl.Context:
    qt_context = QOpenGLContext.currentContext()
    if qt_context is None:
        raise RuntimeError("no current QOpenGLContext")
    return moderngl.create_context(context=QtGLLoader(qt_context), require=330)


def qt_gl_available() -> bool:
    """Whether Qt can make an OpenGL context here; safe to call when it cannot (e.g. the
    offscreen platform with no X server), where creating GL widgets would crash later."""
    share = QOpenGLContext.globalShareContext()
    if share is None or not share.isValid():
        return False
    probe = QOpenGLContext()
    probe.setFormat(QSurfaceFormat.defaultFormat())
    probe.setShareContext(share)
    if not probe.create():
        return False
    surface = QOffscreenSurface()
    surface.setFormat(probe.format())
    surface.create()
    current = probe.makeCurrent(surface)
    if current:
        probe.doneCurrent()
    surface.destroy()
    return current


def create_gl_service(size: tuple[int, int] = (1280, 720)) -> GLService:
    """A GL service on a Qt offscreen context shared with every Qt GL surface of the app.

    Needs a Q(Gui)Application made after `configure_qt_gl()`. `size` is the default resolution.
    """
    share = QOpenGLContext.globalShareContext()
    if share is None:
        raise RuntimeError("Qt has no global share context: call configure_qt_gl() first")
    surface = QOffscreenSurface()
    surface.setFormat(QSurfaceFormat.defaultFormat())
    surface.create()
    qt_context = QOpenGLContext()
    qt_context.setFormat(QSurfaceFormat.defaultFormat())
    qt_context.setShareContext(share)
    problem = ""
    if not qt_context.create() or not qt_context.makeCurrent(surface):
        problem = "Qt could not create an OpenGL 3.3 context"
    else:
        try:
            ctx = moderngl.create_context(context=QtGLLoader(qt_context, surface), require=330)
            ctx.gc_mode = "context_gc"
            service = GLService.from_context(ctx, size)
        except moderngl.Error as error:
            problem = f"OpenGL 3.3 is not usable here: {error}"
        finally:
            qt_context.doneCurrent()
    if problem:
        # Freed now, on this thread: the traceback would keep them for a garbage collection,
        # which may run on any thread, where deleting Qt GL objects crashes.
        surface.destroy()
        del qt_context, surface
        raise RuntimeError(problem)
    # The Qt objects must live as long as the service's context.
    service.qt_objects = (qt_context, surface)  # type: ignore[attr-defined]
    return service


class QtTextureView:
    """Draws a shared texture in one display context (each context has its own program and
    vertex array; the texture itself is only wrapped)."""

    max_wrapped = 64

    def __init__(self, ctx: moderngl.Context) -> None:
        self.ctx = ctx
        self.program = ctx.program(vertex_shader=_BLIT_VS, fragment_shader=_BLIT_FS)
        self.quad = ctx.buffer(_QUAD.tobytes())
        self.vao = ctx.vertex_array(self.program, [(self.quad, "2f", "in_pos")])
        self._wrapped: dict[tuple[int, tuple[int, int], int, str], moderngl.Texture] = {}

    def draw(self, source: Any, framebuffer: int, width: int, height: int, fit: bool = True):
        """Clear to black and draw `source` (a GLTarget or texture, or None) letterboxed."""
        fbo = self.ctx.detect_framebuffer(framebuffer)
        fbo.use()
        self.ctx.viewport = (0, 0, width, height)
        self.ctx.clear(0.0, 0.0, 0.0, 1.0)
        texture = source.texture if isinstance(source, GLTarget) else source
        if texture is None or not texture_alive(texture) or width <= 0 or height <= 0:
            return  # a released texture shows as black
        tex_w, tex_h = texture.size
        key = (texture.glo, (tex_w, tex_h), texture.components, texture.dtype)
        wrapped = self._wrapped.get(key)
        if wrapped is None:
            if len(self._wrapped) >= self.max_wrapped:
                self._wrapped.clear()
            wrapped = self.ctx.external_texture(key[0], key[1], key[2], 0, key[3])
            self._wrapped[key] = wrapped
        if fit:
            scale = min(width / tex_w, height / tex_h)
            w, h = max(1, round(tex_w * scale)), max(1, round(tex_h * scale))
            self.ctx.viewport = ((width - w) // 2, (height - h) // 2, w, h)
        wrapped.use(0)
        self.program["src"] = 0
        self.vao.render(moderngl.TRIANGLE_STRIP)

    def release(self) -> None:
        self._wrapped.clear()
        self.vao.release()
        self.quad.release()
        self.program.release()


def screen_label(screen: QScreen, index: int = 0) -> str:
    """The label menus list a screen by: "N: NAME (WIDTHxHEIGHT)", N as in `--screen N`."""
    size = screen.size()
    return f"{index}: {screen.name() or 'screen'} ({size.width()}x{size.height()})"


def screen_choices() -> list[tuple[int, str]]:
    """(index, label) of every screen, in Qt's order."""
    screens = QGuiApplication.screens()
    return [(index, screen_label(screen, index)) for index, screen in enumerate(screens)]


class QtOutputWindow(QOpenGLWindow):
    """The show output: a window with the `gpu.output` texture; see the module note."""

    def __init__(self, source: TextureSource | None = None) -> None:
        super().__init__(QOpenGLWindow.UpdateBehavior.NoPartialUpdate)
        self.source: TextureSource = source or (lambda: None)
        self.view: QtTextureView | None = None
        self.ctx: moderngl.Context | None = None
        self.paint_hooks: list[Callable[[QtOutputWindow], None]] = []
        self.on_quit: Callable[[], None] | None = None  # the player's: its quit keys call it
        self.on_close: Callable[[], None] | None = None  # the host's: frees and hides the window
        self.setTitle("patchbay output")
        self.resize(960, 540)

    # -- GL ------------------------------------------------------------------------------
    def initializeGL(self) -> None:
        self.ctx = _moderngl_for_current_qt_context()
        self.view = QtTextureView(self.ctx)
        self.context().aboutToBeDestroyed.connect(self._release_gl)

    def paintGL(self) -> None:
        if self.view is None:
            return
        ratio = self.devicePixelRatio()
        width, height = round(self.width() * ratio), round(self.height() * ratio)
        self.view.draw(self.source(), self.defaultFramebufferObject(), width, height)
        for hook in list(self.paint_hooks):
            hook(self)

    def present(self) -> None:
        """Paint and swap now, right after the frame that was run: `update()` alone paints when
        Qt's update timer fires, and when a frame loop keeps the event loop busy that timer
        comes due during the next frame, so a window would show every other frame once frames
        take most of their period."""
        if self.isExposed():  # a paint event paints at once, and schedules nothing more
            QCoreApplication.sendEvent(self, QPaintEvent(QRect(QPoint(0, 0), self.size())))
        else:
            self.update()

    def _release_gl(self) -> None:
        _release_view(self)

    def release_gl(self) -> None:
        """Free this window's GL objects now; call it before dropping a window that was shown
        (Qt would otherwise ask for it while the window is being destroyed)."""
        context = self.context()
        if context is not None:
            context.aboutToBeDestroyed.disconnect(self._release_gl)
        self._release_gl()
        self.ctx = None

    # -- screens -------------------------------------------------------------------------
    def show_fullscreen(self, screen: QScreen | int | None = None) -> None:
        """Go fullscreen on `screen` (a QScreen or an index into the screen list; default:
        the window's current screen). Works while shown, to move between screens."""
        if isinstance(screen, int):
            screens = QGuiApplication.screens()
            if not 0 <= screen < len(screens):
                raise ValueError(f"no screen {screen}: there are {len(screens)}")
            screen = screens[screen]
        screen = screen or self.screen()
        if self.visibility() == QWindow.Visibility.FullScreen:
            self.showNormal()
        self.setScreen(screen)
        self.setGeometry(screen.geometry())
        self.showFullScreen()
        self.setCursor(QCursor(Qt.CursorShape.BlankCursor))

    def leave_fullscreen(self) -> None:
        """Back to a normal window on the same screen."""
        if self.visibility() != QWindow.Visibility.FullScreen:
            return
        screen = self.screen()
        self.showNormal()
        self.unsetCursor()
        area = screen.availableGeometry()
        width, height = min(960, area.width()), min(540, area.height())
        self.setGeometry(area.x() + (area.width() - width) // 2,
                         area.y() + (area.height() - height) // 2, width, height)  # fmt: skip

    def screen_menu(self, parent: Any = None) -> QMenu:
        """A menu with "Fullscreen on NAME (WxH)" per screen and "Leave fullscreen"."""
        menu = QMenu("Output screen", parent)
        for index, label in screen_choices():
            action = QAction(f"Fullscreen on {label}", menu)
            action.triggered.connect(lambda _=False, i=index: self.show_fullscreen(i))
            menu.addAction(action)
        menu.addSeparator()
        leave = QAction("Leave fullscreen (Esc)", menu)
        leave.triggered.connect(self.leave_fullscreen)
        leave.setEnabled(self.visibility() == QWindow.Visibility.FullScreen)
        menu.addAction(leave)
        return menu

    def keyPressEvent(self, event: QKeyEvent) -> None:
        fullscreen = self.visibility() == QWindow.Visibility.FullScreen
        quits = event.key() == Qt.Key.Key_Q or (event.key() == Qt.Key.Key_Escape and not fullscreen)
        if quits and self.on_quit is not None:  # q, Ctrl+Q; Esc leaves fullscreen first
            self.on_quit()
        elif event.key() == Qt.Key.Key_Escape and not fullscreen:
            self._closed_by_user()
        elif event.key() == Qt.Key.Key_Escape:
            self.leave_fullscreen()
        elif event.key() in (Qt.Key.Key_F, Qt.Key.Key_F11):
            if self.visibility() == QWindow.Visibility.FullScreen:
                self.leave_fullscreen()
            else:
                self.show_fullscreen()
        else:
            super().keyPressEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        """The title bar's close button: never Qt's close, which destroys the native window
        under the GL context (see `close_output_window`); the owner closes it instead."""
        event.ignore()
        self._closed_by_user()

    def _closed_by_user(self) -> None:
        """Closed by its close button or Esc: quit the player, else let the owner close it
        (after this event: the owner deletes the window), else hide it."""
        if self.on_quit is not None:
            QTimer.singleShot(0, self.on_quit)
        elif self.on_close is not None:
            QTimer.singleShot(0, self.on_close)
        else:
            self.hide()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.RightButton:
            self._menu = self.screen_menu()
            self._menu.popup(event.globalPosition().toPoint())
        else:
            super().mousePressEvent(event)


def _release_view(surface: QtOutputWindow) -> None:
    """Free a GL surface's texture view, with the surface's context current."""
    if surface.view is not None:
        surface.makeCurrent()
        surface.view.release()
        surface.view = None
        surface.doneCurrent()


def close_output_window(window: QtOutputWindow) -> None:
    """Free the window's GL objects, hide it and delete it through Qt's event loop (deleting a
    shown QOpenGLWindow from Python's garbage collector crashes).

    Hidden, not closed: `close()` destroys the native window, and the QOpenGLWindow destructor
    then makes its context current on the destroyed surface, which crashes in the GL driver."""
    window.release_gl()
    window.hide()
    QCoreApplication.processEvents()
    window.deleteLater()
    QCoreApplication.sendPostedEvents(None, 0)
