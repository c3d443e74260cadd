"""Starting the editor: `run_editor(path)` opens a window on a file, or on the built-in demo patch.

The patch runs in an engine process (app.qt.engine_host): `run_editor` attaches to the engine
already running for the state folder (an editor that was killed, or `patchbay run`, left it playing)
and takes its patch as the document; a FILE named without `--attach` is opened instead and sent to
that engine (never a second engine beside it). Only when none is running does it start one.
Before the QApplication exists it sets Qt's OpenGL defaults (3.3 core, contexts shared, no vsync
wait in the editor's own windows). It offers to restore a recovery file left by a session
that did not close cleanly, also when it attaches (the question then names what the engine plays,
which a restore replaces), and runs the event loop. Once its engine runs, the editor lowers its
own scheduling priority below the engine's (`give_way_to_engine`), so that where cores are few
the show's frames get them first. SIGINT and SIGTERM (Ctrl+C in its terminal) close the window
without asking: unsaved work is kept in its recovery file for the next start, and the engine
goes as on any close (app.qt.support.signals).
"""

from __future__ import annotations

import contextlib
import importlib.resources
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtWidgets import QApplication

from app.engine.client import EngineClient, EngineProcess, default_state_dir
from app.engine.local import LocalEngineLink
from app.engine.options.exit_codes import EXIT_BAD_INPUT
from app.engine.protocol.channel import ProtocolError
from app.qt.output import configure_qt_gl
from app.qt.support.gc import collect_on_gui_thread
from app.qt.support.signals import on_signals
from app.qt.window import QtEditorWindow
from app.session.session import describe_patch
from nodes import load_patch, remove_stale_temporary_files

DEMO_PATCH = "demo.patchbay"
EDITOR_NICENESS = 5
"""How much lower than its engine's the editor's scheduling priority is (`nice` steps)."""
_NICENESS_AT_START = os.getpriority(os.PRIO_PROCESS, 0) if hasattr(os, "getpriority") else 0


def give_way_to_engine() -> None:
    """Lower every thread of this process `EDITOR_NICENESS` steps below the priority it started
    with (the engine's: a process started from here inherits the priority of the thread that
    starts it, so call this once the engine and its supervisor run). The engine's frames then go
    first when both processes want the CPU; an idle editor loses nothing by it."""
    if not hasattr(os, "setpriority"):
        return
    niceness = min(19, _NICENESS_AT_START + EDITOR_NICENESS)
    tasks = Path("/proc/self/task")
    threads = [int(task.name) for task in tasks.iterdir()] if tasks.is_dir() else [0]
    for thread in threads:  # Linux: a priority per thread, and the threads run already
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, thread, niceness)


def demo_patch_path() -> Path:
    """The built-in demo patch in resources/examples."""
    return Path(str(importlib.resources.files("resources") / "examples" / DEMO_PATCH))


def open_editor(
    path: str | None,
    state_dir: Path | None,
    engine: EngineClient | LocalEngineLink,
    *,
    allow_send: bool = False,
) -> QtEditorWindow:
    """Show the editor window on `path` (the demo patch when None), restoring a crashed session's
    work first if the person wants it. A QApplication must exist. The window is shown before the
    file is read, so a file that does not open is reported over the (empty) editor. Temporary
    files left by killed saves, in the state folder and next to the file, are removed first.
    The patch runs in `engine` (a client, or an engine in this process: see app.qt.window).
    `allow_send` (`--allow-send`): patches from files may send OSC without asking."""
    window = QtEditorWindow(state_dir, engine=engine)
    window.live_control.always_allow_send = allow_send
    window.show()
    # Temporary files of saves that were killed (by a crash, a power cut) go now.
    remove_stale_temporary_files(window.state_dir)
    if path is not None:
        remove_stale_temporary_files(Path(path).absolute().parent)
    if not window.file_actions.offer_recovery():
        if path is None:
            # The demo is a starting point, not a file to overwrite: it opens as untitled.
            window.set_patch(load_patch(demo_patch_path()), None)
            window.file_actions.name_untitled("demo (example)")
        else:
            window.file_actions.open_path(path, ask=False)
    return window


def no_display_reason() -> str | None:
    """Why the editor cannot open a window here (Linux without an X or Wayland display), or None."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return None
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    return (
        "patchbay: no display for the editor (DISPLAY is not set); run it under a desktop or "
        "xvfb-run, or play a patch without one: patchbay run FILE --headless --frames N"
    )


def launch_editor(
    path: str | None,
    *,
    attach: bool = False,
    output: bool = False,
    screen: int | None = None,
    fullscreen: bool = False,
    state_dir: Path | None = None,
    engine_args: Sequence[str] = (),
    allow_send: bool = False,
) -> QtEditorWindow:
    """Show the editor with its engine (see the module note). A running engine is always attached
    to; `attach` takes its patch as the document even when `path` is given; `output` opens the
    output window (on `screen`, fullscreen or not); `engine_args` go to the engine process (the
    resource limits). A QApplication must exist. Raises RuntimeError when no engine can be
    started. `allow_send` (`--allow-send`): patches from files may send OSC without asking."""
    state_dir = state_dir or default_state_dir()
    try:
        client = EngineClient(EngineProcess(state_dir / "engine", engine_args))
        attached = client.start()
    except (OSError, EOFError, ProtocolError) as error:
        raise RuntimeError(str(error)) from None
    give_way_to_engine()
    if attached and (attach or path is None):
        window = QtEditorWindow(state_dir, engine=client)
        window.live_control.always_allow_send = allow_send
        window.show()
        if not window.file_actions.attach():
            window.file_actions.report_error("The running engine did not send its patch.")
        else:  # an editor that ended without saving: its work, beside what the engine plays
            window.file_actions.offer_recovery(playing=describe_patch(window.patch, window.path))
    else:
        window = open_editor(path, state_dir, engine=client, allow_send=allow_send)
    if output:
        window.view_actions.show_output_on(screen, fullscreen=fullscreen)
    return window


def run_editor(
    path: str | None,
    *,
    attach: bool = False,
    output: bool = False,
    screen: int | None = None,
    fullscreen: bool = False,
    engine_args: Sequence[str] = (),
    allow_send: bool = False,
) -> int:
    """Run the editor until its window closes; returns the process exit code (see
    `launch_editor` for the options)."""
    reason = no_display_reason()
    if reason is not None and QApplication.instance() is None:
        print(reason, file=sys.stderr)
        return EXIT_BAD_INPUT
    app = QApplication.instance()
    if app is None:
        configure_qt_gl(swap_interval=0)
        app = QApplication(sys.argv[:1])
    app.setApplicationName("patchbay")
    app.setOrganizationName("patchbay")
    collect_on_gui_thread(app)
    windows: list[QtEditorWindow] = []
    signalled: list[int] = []

    def end(number: int) -> None:  # SIGINT, SIGTERM: see app.qt.support.signals
        print(f"patchbay: quitting ({signal.Signals(number).name})", file=sys.stderr, flush=True)
        signalled.append(number)
        for window in windows:
            window.end()
        app.quit()

    restore_signals = on_signals(end)
    try:  # the window is held here: it lives as long as the event loop
        windows.append(
            launch_editor(
                path,
                attach=attach,
                output=output,
                screen=screen,
                fullscreen=fullscreen,
                engine_args=engine_args,
                allow_send=allow_send,
            )
        )
        windows[0].watch_packs()  # node packs edited while it runs (loaded by the CLI at start)
        if signalled:  # it came while the editor started (a dialog ran the loop)
            windows[0].end()
            code = 0
        else:
            code = app.exec()
    except RuntimeError as error:
        print(f"patchbay: cannot start the engine: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        restore_signals()
    windows[0].deleteLater()
    return code
