"""The editor's layout stays as a person sets it, through real input: the bottom dock starts several
rows tall and does not float off at a double click on its title, a dragged splitter, the
window's size, a closed legend and a hidden panel come back in the next editor on the same state
folder (an INI file there: a test's temporary folder never touches the user's settings), and
View > Reset Layout puts the first layout back."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QPoint, QPointF, QSettings, QSize, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QTabBar, QToolButton

from app.engine.local import LocalEngineLink
from app.qt.layout import BOTTOM_DOCKS, LAYOUT_FILE
from app.qt.window import QtEditorWindow

LEFT = Qt.MouseButton.LeftButton
NO_MODIFIER = Qt.KeyboardModifier.NoModifier


def open_window(qtbot: Any, state: Path, dialogs: Any) -> QtEditorWindow:
    """An editor window as `patchbay edit` opens one: at the size its layout says."""
    window = QtEditorWindow(state, engine=LocalEngineLink())
    dialogs.install(window)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    return window


def close_window(window: QtEditorWindow) -> None:
    window.undo_stack.setClean()
    window.close()


def bottom_height(window: QtEditorWindow) -> int:
    return window.docks["Messages"].height()


def mouse(window: QtEditorWindow, kind: QEvent.Type, point: QPoint, buttons: Any) -> None:
    """A mouse event of the left button at `point` of the window, `buttons` held after it."""
    at = QPointF(point)
    event = QMouseEvent(kind, at, window.mapToGlobal(at), LEFT, buttons, NO_MODIFIER)
    QApplication.sendEvent(window, event)


def drag_separator_above_bottom_docks(qtbot: Any, window: QtEditorWindow, dy: int) -> None:
    """Drag the splitter between the canvas and the bottom docks by `dy` pixels, with the
    mouse (the window applies each move at its next turn)."""
    central = window.centralWidget().geometry()
    top = window.docks["Messages"].geometry().top()
    start = QPoint(central.center().x(), (central.bottom() + top) // 2 + 1)
    QTest.mouseMove(window, start)
    assert window.cursor().shape() == Qt.CursorShape.SplitVCursor  # on the splitter
    mouse(window, QEvent.Type.MouseButtonPress, start, LEFT)
    before = bottom_height(window)
    for step in (0.25, 0.5, 0.75, 1.0):
        mouse(window, QEvent.Type.MouseMove, start + QPoint(0, round(dy * step)), LEFT)
        qtbot.waitUntil(lambda s=step: abs(bottom_height(window) - before + dy * s) <= 2)
    mouse(window, QEvent.Type.MouseButtonRelease, start + QPoint(0, dy), Qt.MouseButton.NoButton)


def test_the_bottom_dock_is_several_rows_tall_and_stays_docked(editor, qtbot):
    assert bottom_height(editor) >= 180  # not one Profiler row
    for title in BOTTOM_DOCKS:
        dock = editor.docks[title]
        assert not dock.features() & dock.DockWidgetFeature.DockWidgetFloatable
    dock = editor.docks["Messages"]
    title_bar = QPoint(dock.width() // 2, 8)  # a double click on the title floats a dock
    QTest.mouseDClick(dock, LEFT, NO_MODIFIER, title_bar)
    assert not dock.isFloating()
    preview = editor.docks["Preview"]  # the side docks still float
    assert preview.features() & preview.DockWidgetFeature.DockWidgetFloatable


def test_the_layout_is_remembered_from_one_run_to_the_next(qtbot, tmp_path, dialogs):
    state = tmp_path / "state"
    first = open_window(qtbot, state, dialogs)
    assert bottom_height(first) >= 180
    default_height = bottom_height(first)
    # what a window manager does when the person resizes it: near the smallest the window
    # goes, for the test's screen (800x800) to hold it
    size = QSize(first.minimumSizeHint().width(), first.minimumSizeHint().height() + 60)
    first.resize(size)
    qtbot.waitUntil(lambda: first.size() == size)
    shrunk = bottom_height(first)  # the side docks keep their height in a smaller window
    drag_separator_above_bottom_docks(qtbot, first, 30)
    dragged = bottom_height(first)
    assert dragged == shrunk - 30
    close = next(b for b in first.legend.findChildren(QToolButton) if b.text() == "×")
    qtbot.mouseClick(close, LEFT)  # the legend's own close button
    assert not first.legend.isVisible()
    first.docks["Presets"].toggleViewAction().trigger()  # View > Panels > Presets
    assert not first.docks["Presets"].isVisible()
    close_window(first)
    assert (state / LAYOUT_FILE).exists()

    second = open_window(qtbot, state, dialogs)
    assert second.view_actions.layout.restored
    screen = second.screen().availableGeometry()  # a window wider than its screen is fitted
    assert second.height() == size.height()
    assert min(size.width(), screen.width()) <= second.width() <= size.width()
    assert abs(bottom_height(second) - dragged) <= 2
    assert not second.legend.isVisible() and not second.view_actions.legend_action.isChecked()
    assert not second.docks["Presets"].isVisible()
    assert not second.docks["Presets"].toggleViewAction().isChecked()
    shots = os.environ.get("PATCHBAY_SHOTS")
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        second.grab().save(str(Path(shots) / "stagewin-layout-restored.png"))

    second.view_actions.reset_layout_action.trigger()  # View > Reset Layout
    assert second.legend.isVisible() and second.view_actions.legend_action.isChecked()
    assert second.docks["Presets"].isVisible()
    assert (second.width(), second.height()) == (1400, 850)
    qtbot.waitUntil(lambda: abs(bottom_height(second) - default_height) <= 2)
    if shots:  # once the bottom docks' tabs have moved under them too
        below = second.docks["Messages"].geometry().bottom()

        def tabs_placed() -> bool:  # the old tab bars go at the event loop's next turn
            bars = [b for b in second.findChildren(QTabBar) if b.parent() is second]
            return all(b.y() >= below for b in bars if b.isVisible())

        qtbot.waitUntil(tabs_placed)
        second.grab().save(str(Path(shots) / "stagewin-layout-reset.png"))
    close_window(second)


def test_a_layout_of_other_docks_is_not_restored(qtbot, tmp_path, dialogs):
    state = tmp_path / "state"
    state.mkdir()
    settings = QSettings(str(state / LAYOUT_FILE), QSettings.Format.IniFormat)
    settings.setValue("window/geometry", b"not a geometry")
    settings.setValue("window/state", b"not a state")
    settings.sync()
    window = open_window(qtbot, state, dialogs)
    assert not window.view_actions.layout.restored
    assert window.legend.isVisible()
    assert bottom_height(window) >= 180  # the default
    close_window(window)
