"""Show habits: Ctrl+C (SIGINT) and SIGTERM end the player and the editor cleanly, with nothing
left running, and the player's window quits on q, Ctrl+Q and Esc.

The processes run as a person starts them (`python -m app.cli.main run FILE`, `python -m
app.cli.main edit FILE`) on a private Xvfb display, each with its own state folder; waits are
deadlines.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.engine.client import EngineProcess, pid_alive
from app.qt.output import QtOutputWindow
from app.qt.support.signals import on_signals
from nodes import Patch, load_patch, save_patch
from tests.waiting import TIMEOUT_S, poll_until
from tests.xvfb import private_display

ROOT = Path(__file__).resolve().parents[2]
ENDINGS = [signal.SIGINT, signal.SIGTERM]


def show_file(folder: Path) -> Path:
    patch = Patch()
    patch.add_node("time.seconds", None, node_id="t")
    patch.add_node("gpu.solid", None, node_id="solid")
    patch.add_node("gpu.output", None, node_id="out")
    patch.connect("solid", "out", "out", "in")
    path = folder / "show.patchbay"
    save_patch(patch, path)
    return path


@pytest.fixture(scope="module")
def display() -> Iterator[dict[str, str]]:
    with private_display("800x600x24") as env:
        yield env


@pytest.fixture
def leftovers(tmp_path: Path) -> Iterator[None]:
    """Whatever a failing test leaves running is stopped (the checks are in the tests)."""
    yield
    EngineProcess(tmp_path / "state" / "engine").stop()


def start(command: str, tmp_path: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], int]:
    """`patchbay COMMAND show.patchbay` with its own state folder; returns the process and the
    pid of its engine once that plays (frames beating)."""
    env = {**env, "PATCHBAY_STATE_DIR": str(tmp_path / "state")}
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli.main", command, str(show_file(tmp_path))],
        env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    engine = EngineProcess(tmp_path / "state" / "engine")
    playing = poll_until(
        lambda: (
            process.poll() is not None
            or (engine.running_pid() is not None and engine.heartbeat_file.exists())
        ),
        2 * TIMEOUT_S,
    )
    pid = engine.running_pid()
    if not playing or pid is None:
        process.kill()
        _, errors = process.communicate(timeout=TIMEOUT_S)
        pytest.fail(f"patchbay {command} did not start its engine:\n{errors[-3000:]}")
    return process, pid


def assert_ends_cleanly(
    process: subprocess.Popen[str], engine_pid: int, run_dir: Path, number: int
) -> str:
    process.send_signal(number)
    try:
        _, errors = process.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        _, errors = process.communicate()
        pytest.fail(f"still running {TIMEOUT_S:.0f} s after {number!r}:\n{errors[-3000:]}")
    assert process.returncode == 0, errors[-3000:]
    assert "Traceback" not in errors, errors[-3000:]
    engine = EngineProcess(run_dir)
    assert poll_until(lambda: not pid_alive(engine_pid)), "the engine is still running"
    assert engine.running_pid() is None and engine.supervisor_pid() is None
    return errors


@pytest.mark.xvfb
@pytest.mark.parametrize("number", ENDINGS, ids=lambda n: signal.Signals(n).name)
def test_the_player_ends_on_sigint_and_sigterm_with_its_engine(
    display: dict[str, str], tmp_path: Path, number: int, leftovers: None
) -> None:
    player, engine_pid = start("run", tmp_path, display)
    errors = assert_ends_cleanly(player, engine_pid, tmp_path / "state" / "engine", number)
    assert "patchbay engine: quitting (signal SIGTERM)" in errors  # quit, not killed


@pytest.mark.xvfb
@pytest.mark.parametrize("number", ENDINGS, ids=lambda n: signal.Signals(n).name)
def test_the_editor_ends_on_sigint_and_sigterm_and_stops_its_engine_as_a_close_does(
    display: dict[str, str], tmp_path: Path, number: int, leftovers: None
) -> None:
    editor, engine_pid = start("edit", tmp_path, display)
    errors = assert_ends_cleanly(editor, engine_pid, tmp_path / "state" / "engine", number)
    assert f"patchbay: quitting ({signal.Signals(number).name})" in errors
    assert not list((tmp_path / "state" / "recovery").glob("*.patchbay"))  # nothing unsaved


def press_key_on_display(display: str, keysym: str, control: bool = False) -> None:
    """A real key press on an X display through the XTEST extension, at the screen's centre
    (without a window manager the key goes to the window under the pointer)."""
    x11 = ctypes.CDLL(ctypes.util.find_library("X11") or "libX11.so.6")
    xtest = ctypes.CDLL(ctypes.util.find_library("Xtst") or "libXtst.so.6")
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XKeysymToKeycode.argtypes = [ctypes.c_void_p, ctypes.c_ulong]
    x11.XStringToKeysym.restype = ctypes.c_ulong
    x11.XFlush.argtypes = x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    xtest.XTestFakeMotionEvent.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int,
                                           ctypes.c_int, ctypes.c_ulong]  # fmt: skip
    xtest.XTestFakeKeyEvent.argtypes = [ctypes.c_void_p, ctypes.c_uint, ctypes.c_int,
                                        ctypes.c_ulong]  # fmt: skip
    handle = x11.XOpenDisplay(display.encode())
    assert handle, f"cannot open display {display}"
    try:
        xtest.XTestFakeMotionEvent(handle, 0, 400, 300, 0)
        keys = [x11.XKeysymToKeycode(handle, x11.XStringToKeysym(keysym.encode()))]
        if control:
            keys.insert(0, x11.XKeysymToKeycode(handle, x11.XStringToKeysym(b"Control_L")))
        for key in keys:
            xtest.XTestFakeKeyEvent(handle, key, True, 0)
        for key in reversed(keys):
            xtest.XTestFakeKeyEvent(handle, key, False, 0)
        x11.XFlush(handle)
    finally:
        x11.XCloseDisplay(handle)


@pytest.mark.xvfb
@pytest.mark.parametrize(("keysym", "control"), [("q", False), ("q", True), ("Escape", False)],
                         ids=["q", "ctrl+q", "esc"])  # fmt: skip
def test_the_player_quits_on_its_keys(
    display: dict[str, str], tmp_path: Path, keysym: str, control: bool, leftovers: None
) -> None:
    player, engine_pid = start("run", tmp_path, display)
    deadline = time.monotonic() + TIMEOUT_S
    while player.poll() is None and time.monotonic() < deadline:
        # again until it quits: the window may map after the engine listens
        press_key_on_display(display["DISPLAY"], keysym, control)
        poll_until(lambda: player.poll() is not None, 1.0)
    _, errors = player.communicate(timeout=TIMEOUT_S)
    assert player.returncode == 0, errors[-3000:]
    assert "quitting (quit from the output window)" in errors
    assert poll_until(lambda: not pid_alive(engine_pid))


def test_a_signal_closes_the_editor_without_asking_and_keeps_unsaved_work(
    editor, dialogs, qtbot, tmp_path: Path
) -> None:
    editor.file_actions.open_path(show_file(tmp_path))
    editor.patch.add_node("math.add", {"a": 41.0}, node_id="unsaved")
    assert editor.modified
    restore = on_signals(lambda number: editor.end())
    try:
        os.kill(os.getpid(), signal.SIGINT)
        qtbot.waitUntil(lambda: not editor.isVisible())
    finally:
        restore()
    assert dialogs.asked_unsaved == 0
    recoveries = list((tmp_path / "state" / "recovery").glob("*.patchbay"))
    assert len(recoveries) == 1  # kept for the next editor to offer
    kept = load_patch(recoveries[0])
    assert kept.nodes["unsaved"].values["a"] == 41.0


@pytest.mark.parametrize(
    ("key", "modifiers"),
    [
        (Qt.Key.Key_Q, Qt.KeyboardModifier.NoModifier),
        (Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier),
        (Qt.Key.Key_Escape, Qt.KeyboardModifier.NoModifier),
    ],
    ids=["q", "ctrl+q", "esc"],
)
def test_the_players_window_quits_on_its_keys(qtbot, key, modifiers) -> None:
    window = QtOutputWindow()
    quits: list[bool] = []
    qtbot.keyClick(window, key, modifiers)
    assert quits == []  # an editor's output window: no quit keys
    window.on_quit = lambda: quits.append(True)
    qtbot.keyClick(window, Qt.Key.Key_F1)
    assert quits == []
    qtbot.keyClick(window, key, modifiers)
    assert quits == [True]
