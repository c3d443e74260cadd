"""The engine process: `python -m app.qt.engine_host --run-dir DIR [--file FILE] [--output ...]`.

It owns the GL service, the output window and the frame clock around an `app.engine.engine.Engine`:
a precise Qt timer calls `engine.step()` at frame deadlines (60 a second by default), and the output
window (when open) is painted and swapped right after each frame (`QtOutputWindow.present`).
Nothing here waits for an editor: editors talk to the engine through its socket (`EngineServer`),
and their messages are applied between frames: as soon as they arrive (a reader thread writes a
byte to a socket pair the event loop watches, and the loop calls `engine.between_frames()`, where
a small structural edit's program is rebuilt too), and in any case at the next frame.

GL: with a display, the GL service lives on a Qt context shared with the output window, so the
window can be opened at any time; without one (Qt's offscreen platform) a standalone EGL context
runs GPU nodes and no window can open; without either, GPU nodes fail with "no GPU context".

Frames presented: with the output window open, one `PATCHBAY_FRAME_LOG` line per buffer swap;
without it, one per frame run.

Node packs (nodes/packs.py) load before the file, as in the editor, so both know the same node
types; the user's nodes folder is watched, and a pack edited there is swapped in by
`engine.step()` between two frames (the import runs on the watcher's thread).

Once it listens, the engine writes `engine.json` (pid, address, and the supervisor's pid when it
has one) in its run folder so that editors find it; it removes it when it quits. SIGTERM and
SIGINT quit cleanly. With `--resume` (a restart by its supervisor) it plays what the engine before
it kept when its editor left (`playing.show`, see app.engine.engine), output window included. With
`--player` (`patchbay run`) q, Ctrl+Q, and Esc outside fullscreen, in the output window quit it.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSocketNotifier, Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from app.engine.client import engine_address, engine_key
from app.engine.engine import PLAYING_FILE, WATCHDOG_S, Engine, EngineServer, FrameLog, load_playing
from app.engine.options.exit_codes import EXIT_BAD_INPUT
from app.engine.options.limits import add_limit_arguments, apply_limits
from app.engine.options.services import add_service_arguments, service_options
from app.engine.protocol.channel import ProtocolError
from app.engine.reports.patch_info import parse_size
from app.qt.output import configure_qt_gl, screen_choices
from app.qt.output_host import QtOutputHost, create_engine_gl
from app.qt.support.fonts import register_bundled_fonts
from app.qt.support.signals import on_signals
from nodes import Patch, PatchError, PresetPlayer, load_packs, load_patch


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="patchbay-engine")
    parser.add_argument("--run-dir", required=True, type=Path)
    parser.add_argument("--file", default=None, help="the patch to play at start")
    parser.add_argument("--bypass", default="{}", help="JSON: node id -> reason")
    parser.add_argument("--fps", type=float, default=60.0)
    parser.add_argument("--frames", type=int, default=None, help="quit after N frames")
    parser.add_argument("--output", action="store_true", help="open the output window")
    parser.add_argument("--screen", type=int, default=None)
    parser.add_argument("--fullscreen", action="store_true")
    parser.add_argument("--size", default=None, help="render size WxH (default: the patch's)")
    parser.add_argument("--preset", default=None, help="start on this preset (not when resuming)")
    parser.add_argument("--watchdog", type=float, default=WATCHDOG_S)
    parser.add_argument(
        "--supervised", action="store_true", help="restarted by its supervisor, not by editors"
    )
    parser.add_argument(
        "--resume", action="store_true", help="play what the engine before played, if it kept it"
    )
    parser.add_argument(
        "--player", action="store_true", help="q, Ctrl+Q, Esc in its output window quit it"
    )
    add_limit_arguments(parser)
    add_service_arguments(parser)
    return parser


class QtEngineHost:
    """The Qt side of the engine process: the frame timer, and the output window
    (app.qt.output_host)."""

    def __init__(self, app: QApplication, engine: Engine, fps: float) -> None:
        self.app = app
        self.engine = engine
        self.output = QtOutputHost(engine)  # the output window
        self.frames_limit: int | None = None
        engine.on_quit = lambda: self.quit("its editor closed it")
        self.period = 1.0 / fps
        self._due = time.perf_counter()
        self.timer = QTimer()
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setSingleShot(True)
        self.timer.timeout.connect(self.tick)
        # Messages are applied (and a small edit rebuilt) as they arrive, between two frames. A
        # reader thread wakes the loop by writing a byte to a socket pair the loop watches (no Qt
        # call from a thread Qt did not make); a burst of messages writes one byte, as the flag
        # is cleared only when the loop drains.
        self._wake_pending = threading.Event()
        self._wake_in, self._wake_out = socket.socketpair()
        self._wake_in.setblocking(False)
        self._wake_out.setblocking(False)
        self._arrivals = QSocketNotifier(self._wake_in.fileno(), QSocketNotifier.Type.Read)
        self._arrivals.activated.connect(self.between_frames)
        engine.inbox.on_put = self._wake

    def _wake(self) -> None:
        """Called by reader threads after each message."""
        if not self._wake_pending.is_set():
            self._wake_pending.set()
            with contextlib.suppress(OSError):  # full or closed: the next frame drains anyway
                self._wake_out.send(b"\0")

    def between_frames(self, *_: object) -> None:
        self._wake_pending.clear()
        with contextlib.suppress(OSError):
            self._wake_in.recv(4096)
        self.engine.between_frames()

    def close_wake(self) -> None:
        self.engine.inbox.on_put = None
        self._arrivals.setEnabled(False)
        self._wake_in.close()
        self._wake_out.close()

    def start(self) -> None:
        self._due = time.perf_counter()
        self.timer.start(0)

    def tick(self) -> None:
        """One frame, then a timer for the next one at its due time: frames are paced by
        deadlines, so a late frame does not shift every later one."""
        if self.frames_limit is not None and self.engine.frame >= self.frames_limit:
            self.app.quit()  # the end asked for (--frames): nothing to explain
            return
        self.engine.step()
        self.output.present()
        now = time.perf_counter()
        self._due += self.period
        if self._due < now - self.period:  # far behind (a stall): start again from now
            self._due = now
        self.timer.start(max(0, round((self._due - now) * 1000)))

    def quit(self, why: str) -> None:
        """Stop the event loop before the end asked for, saying why in the engine's log."""
        print(f"patchbay engine: quitting ({why})", file=sys.stderr, flush=True)
        self.app.quit()


def main(argv: Sequence[str] | None = None) -> int:
    options = _parser().parse_args(argv)
    run_dir: Path = options.run_dir
    playing_file = run_dir / PLAYING_FILE
    resumed: dict[str, Any] | None = None
    try:
        apply_limits(options)  # for the file and for every patch an editor sends
        # Node packs before the patch, so its pack nodes are real nodes (as in the editor).
        patch_folder = Path(options.file).absolute().parent if options.file else None
        for problem in load_packs(patch_folder):
            print(f"patchbay engine: {problem}", file=sys.stderr)
        patch = load_patch(options.file) if options.file else Patch()
        if options.resume and playing_file.exists():
            try:
                patch, resumed = load_playing(playing_file)
            except (PatchError, ProtocolError, OSError, ValueError) as error:
                print(f"patchbay engine: not resuming ({error})", file=sys.stderr)
        if options.size:
            patch.update_settings(resolution=list(parse_size(options.size)))
        if options.preset is not None and resumed is None:
            PresetPlayer(patch).jump(options.preset)
        bypass = json.loads(options.bypass)
        if not isinstance(bypass, dict):
            raise ValueError("--bypass takes a JSON object")
    except (PatchError, ValueError) as error:
        print(f"patchbay engine: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    configure_qt_gl()
    app = QApplication.instance() or QApplication(sys.argv[:1])
    register_bundled_fonts()  # the output window's screen menu shows text, on any machine
    QApplication.setQuitOnLastWindowClosed(False)  # the show plays on with its window closed
    screens = QGuiApplication.screens()
    if options.screen is not None and not 0 <= options.screen < len(screens):
        choices = ", ".join(label for _, label in screen_choices())
        print(f"--screen {options.screen}: no such screen ({choices})", file=sys.stderr)
        return EXIT_BAD_INPUT
    size = patch.settings.get("resolution", (1280, 720))
    gl = create_engine_gl((int(size[0]), int(size[1])))
    engine = Engine(
        patch,
        gpu=gl,
        bypass={str(k): str(v) for k, v in bypass.items()},
        frame_log=FrameLog.from_environment(),
        supervised=options.supervised,
        playing_file=playing_file,
        services=service_options(options),
        load_beside=True,  # a file opened during a show is built while the show plays on
    )
    if resumed is not None:
        path = resumed.get("path")
        engine.document_path = path if isinstance(path, str) else None
    engine.watch_packs()
    host = QtEngineHost(app, engine, options.fps)
    host.frames_limit = options.frames
    if options.player:  # `patchbay run`: the output window's quit keys end the engine
        host.output.on_quit = lambda: host.quit("quit from the output window")
    server = EngineServer(engine_address(run_dir), engine_key(run_dir), engine.inbox)
    info_path = run_dir / "engine.json"
    info = {"pid": os.getpid(), "address": server.address}
    if options.supervised:
        info["supervisor"] = os.getppid()
    info_path.write_text(json.dumps(info), "utf-8")
    restore_signals = on_signals(lambda n: host.quit(f"signal {signal.Signals(n).name}"))
    engine.start_watchdog(
        options.watchdog, run_dir / "hang.json", run_dir / "heartbeat", run_dir / "running.json"
    )
    if resumed is not None and resumed.get("output"):  # where the show was
        screen = resumed.get("screen")
        host.output.open_window(
            screen if isinstance(screen, int) else None, bool(resumed["fullscreen"])
        )
    elif options.output:
        host.output.open_window(options.screen, options.fullscreen)
    host.start()
    try:
        app.exec()
    finally:
        restore_signals()
        gc.unfreeze()  # Qt's wrappers are torn down in order, not left frozen to the exit
        host.timer.stop()
        server.close()
        host.close_wake()
        with contextlib.suppress(OSError):
            if json.loads(info_path.read_text("utf-8")).get("pid") == os.getpid():
                info_path.unlink()
        host.output.close_window()
        engine.close()
        if gl is not None:
            gl.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
