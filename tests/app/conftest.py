"""Fixtures for editor tests: a shown editor window whose dialogs are answered by the test, and
`ui`, helpers that drive the real widgets (mouse drags on the canvas viewport, key presses).

The window drives an engine in the test's process (app.engine.local) through the messages of
`patchbay edit`, so editor tests run the production path: edits reach the engine's own copy of
the patch, and what the window shows comes from the engine's reports.

The `editor` fixture's window does not run its loop by itself: its timer is stopped, and the test
turns the loop (`run_frames`, each frame reported; `run_until`, until something holds), so what
the window shows follows from exactly the frames the test ran, however loaded the machine is. A
test marked `live_loop` gets the window with its timer running, for what follows from wall-clock
time (the frame rate shown). `played` is the engine's evaluator, for tests that look at what
plays."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QPoint, QPointF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

import tests.qt_setup  # noqa: F401  (before any QApplication exists)
from app.engine.local import LocalEngineLink
from app.qt.window import QtEditorWindow
from nodes import Patch
from tests.waiting import TIMEOUT_S, wait_for


class ScriptedDialogs:
    """Answers the editor's questions; records errors instead of showing message boxes."""

    def __init__(self) -> None:
        self.unsaved_answer = "cancel"
        self.open_path: str | None = None
        self.save_path: str | None = None
        self.restore = False
        self.errors: list[str] = []
        self.asked_unsaved = 0
        self.allow_send = False
        self.asked_allow_send: list[list[str]] = []  # the targets of each question
        self.osc_address: str | None = None

    def install(self, window: QtEditorWindow) -> None:
        window.file_actions.ask_unsaved = self._ask_unsaved
        window.file_actions.ask_open_path = lambda: self.open_path
        window.file_actions.ask_save_path = lambda: self.save_path
        window.file_actions.ask_restore = lambda offered, playing: (
            offered[0] if self.restore else None
        )
        window.file_actions.report_error = self.errors.append
        window.live_control.ask_allow_send = self._ask_allow_send
        window.live_control.ask_osc_address = lambda target, suggested: self.osc_address

    def _ask_allow_send(self, targets: list[str]) -> bool:
        self.asked_allow_send.append(targets)
        return self.allow_send

    def _ask_unsaved(self) -> str:
        self.asked_unsaved += 1
        return self.unsaved_answer


def make_editor(
    qtbot: Any, state_dir: Path, dialogs: ScriptedDialogs, engine: Any = None
) -> QtEditorWindow:
    """A shown editor window driving `engine` (a test's fake engine), else an engine in this
    process (app.engine.local): the messages of `patchbay edit`, without the engine process."""
    window = QtEditorWindow(state_dir, engine=engine if engine is not None else LocalEngineLink())
    dialogs.install(window)
    qtbot.addWidget(window)
    window.resize(1400, 850)
    window.show()
    qtbot.waitExposed(window)
    return window


def run_frames(editor: QtEditorWindow, count: int = 1) -> None:
    """Turn the window's loop `count` times, each running one frame of its in-process engine
    and showing that frame's report: what the window shows then follows from those frames
    alone, without waiting on the window's timer. With a test's fake engine, each turn sends
    what the window has to send and handles what the fake delivers."""
    engine = getattr(editor.engine, "engine", None)  # an in-process one (or a test's)
    for _ in range(count):
        if engine is not None:
            engine.report_next_step()
        editor.tick()


def run_until(
    editor: QtEditorWindow, condition: Callable[[], object], what: str, max_frames: int = 30
) -> int:
    """Turn the window's loop (`run_frames`) until `condition()` holds, at most `max_frames`
    times; the number of frames it took. For what takes a known but not exact number of turns
    (node colours and the preview refresh every `DECORATE_EVERY` turns); a condition still false
    after `max_frames` fails the test, naming `what`."""
    for frames in range(max_frames + 1):
        if condition():
            return frames
        if frames < max_frames:
            run_frames(editor)
    raise AssertionError(f"{what}: not so after {max_frames} frames")


def stop_loop(editor: QtEditorWindow) -> None:
    """Stop the window's timer: its loop turns only when the test turns it (`run_frames`)."""
    editor._timer.stop()


def played(editor: QtEditorWindow) -> Any:
    """The evaluator of the window's in-process engine (what plays the document)."""
    return editor.engine.engine.evaluator


def wait_built(editor: QtEditorWindow) -> None:
    """Run the event loop until the canvas has built all of the level it shows. Showing a patch
    or a level (opening, entering, leaving, an edit that takes the canvas up a level) builds for
    one slice (`QtPatchCanvas.LOAD_SLICE_S`) and the rest from the event loop; how much one slice
    builds depends on the machine (its load, the fonts it lays text out with)."""
    canvas = editor.canvas
    wait_for(QCoreApplication.instance(), lambda: not canvas.loading, "the canvas to build")


def show_patch(editor: QtEditorWindow, patch: Patch) -> None:
    """Show `patch`, framed, once the canvas has built it; an in-process engine plays it from
    then on (it has run a frame of it)."""
    editor.set_patch(patch, None)
    editor.canvas.frame(None)
    wait_built(editor)
    QCoreApplication.processEvents()
    if isinstance(editor.engine, LocalEngineLink):
        run_frames(editor)


def viewport_point(editor: QtEditorWindow, scene_pos: QPointF) -> QPoint:
    return editor.canvas.viewer().mapFromScene(scene_pos)


def drag(editor: QtEditorWindow, start: QPointF, end: QPointF) -> None:
    """Press at `start`, move in steps, release at `end` (scene positions) on the viewport."""
    viewport = editor.canvas.viewer().viewport()
    a, b = viewport_point(editor, start), viewport_point(editor, end)
    QTest.mousePress(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, a)
    for step in (0.25, 0.5, 0.75, 1.0):
        QTest.mouseMove(viewport, a + (b - a) * step)
    QTest.mouseRelease(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, b)
    QCoreApplication.processEvents()


def drag_link(editor: QtEditorWindow, src: str, src_pin: str, dst: str, dst_pin: str) -> None:
    canvas = editor.canvas
    drag(
        editor,
        canvas.port_scene_pos(src, src_pin, output=True),
        canvas.port_scene_pos(dst, dst_pin, output=False),
    )


def view_links(editor: QtEditorWindow) -> set[tuple[str, str, str, str]]:
    """The links the canvas shows once it has built its level, as (src, src_pin, dst, dst_pin)."""
    wait_built(editor)
    canvas = editor.canvas
    shown = set()
    for view in canvas.graph.all_nodes():
        for port in view.input_ports():
            for other in port.connected_ports():
                shown.add(
                    (canvas.node_id_of(other.node()), other.name(), canvas.node_id_of(view),
                     port.name())
                )  # fmt: skip
    return shown


def model_links(patch: Patch) -> set[tuple[str, str, str, str]]:
    return {tuple(link) for link in patch.links}


def press(widget: Any, key: Any, modifiers: Any = Qt.KeyboardModifier.NoModifier) -> None:
    QTest.keyClick(widget, key, modifiers)
    QCoreApplication.processEvents()


_KEPT: list[Any] = []


@pytest.fixture(autouse=True)
def keep_qt_windows() -> Iterator[None]:
    """Keep every window a test made (closed by qtbot) until the process ends. A closed editor
    is garbage in reference cycles once its evaluator is closed; collecting it deletes its Qt
    objects in whatever order the collector picks, on whatever thread triggers it (a background
    build), which crashes."""
    yield
    _KEPT.extend(QApplication.topLevelWidgets())


@pytest.fixture
def qtbot(qtbot: Any) -> Any:
    """pytest-qt's qtbot whose waits give up after tens of seconds rather than 5: a deadline only
    a real failure reaches, on a busy machine too (see tests/waiting.py)."""
    timeout_ms = int(TIMEOUT_S * 1000)
    qtbot.waitUntil = functools.partial(type(qtbot).waitUntil, qtbot, timeout=timeout_ms)
    qtbot.waitExposed = functools.partial(type(qtbot).waitExposed, qtbot, timeout=timeout_ms)
    return qtbot


@pytest.fixture
def dialogs() -> ScriptedDialogs:
    return ScriptedDialogs()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "live_loop: the editor fixture's window runs its loop by itself (its timer), as in use",
    )


@pytest.fixture
def editor(
    qtbot: Any, tmp_path: Path, dialogs: ScriptedDialogs, request: pytest.FixtureRequest
) -> Iterator[QtEditorWindow]:
    """A shown editor window with an engine in this process; its loop turns only when the test
    turns it (`run_frames`, `run_until`), unless the test is marked `live_loop`."""
    window = make_editor(qtbot, tmp_path / "state", dialogs)
    if request.node.get_closest_marker("live_loop") is None:
        stop_loop(window)
    yield window
    dialogs.unsaved_answer = "discard"  # unsaved changes must not keep the window open
    # Closed here, not only by qtbot (which may close it before this teardown, when the answer
    # was still "cancel"): a window left open stays under the pointer of the next tests.
    window.close()


@pytest.fixture
def ui() -> SimpleNamespace:
    """The input and inspection helpers of this module, for test modules."""
    return SimpleNamespace(
        drag=drag,
        drag_link=drag_link,
        model_links=model_links,
        press=press,
        show_patch=show_patch,
        wait_built=wait_built,
        view_links=view_links,
        make_editor=make_editor,
        run_frames=run_frames,
        run_until=run_until,
        played=played,
    )
