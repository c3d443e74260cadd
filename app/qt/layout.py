"""The editor window's layout, kept from one run of the editor to the next.

`WindowLayout` is a controller the View actions (app.qt.actions.view) make once the window's docks,
toolbar and menus exist, as `view_actions.layout`. What a person sets stays set: the window's
geometry, the docks' places, sizes, tabs and visibility and the toolbar (`QMainWindow.saveState`)
and whether the legend shows are written when the window closes and read back when the next
window opens. They live in an INI file in the editor's state folder (`LAYOUT_FILE`), so every
state folder (a test's temporary one, `PATCHBAY_STATE_DIR`) has its own and the user's real
settings are never touched by another. View > Reset Layout puts the first layout back.

The default layout gives the bottom docks (Messages, Bindings, Profiler) a height of several rows
(`BOTTOM_HEIGHT`), under the canvas only (the side docks keep the window's height); they cannot
float: dragging at their edge, aiming for the splitter above them,
would otherwise easily tear one off over the canvas (they still move between dock areas, and the
other docks still float).

A layout written by another version of the window's docks (`LAYOUT_VERSION`) is not restored:
the default stays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings, QSize, Qt

if TYPE_CHECKING:
    from app.qt.window import QtEditorWindow

LAYOUT_FILE = "editor-layout.ini"
LAYOUT_VERSION = 1  # bump when the window's docks or toolbars change
BOTTOM_DOCKS = ("Messages", "Bindings", "Profiler")
BOTTOM_HEIGHT = 220  # several rows of the Messages and Profiler panels
RIGHT_HEIGHTS = {"Inspector": 380, "Preview": 220, "Output": 200}


class WindowLayout(QObject):
    """Remembers the window's layout (see the module note)."""

    def __init__(self, window: QtEditorWindow) -> None:
        super().__init__(window)
        self.window = window
        path = window.state_dir / LAYOUT_FILE
        self.settings = QSettings(str(path), QSettings.Format.IniFormat)
        # the side docks run the window's height; the bottom docks lie under the canvas only
        window.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        window.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        for title in BOTTOM_DOCKS:
            dock = window.docks[title]
            dock.setFeatures(dock.features() & ~dock.DockWidgetFeature.DockWidgetFloatable)
        self._default_size = window.size()
        self._default_sizes()
        self._default_state = window.saveState(LAYOUT_VERSION)
        self.restored = self.restore()
        window.installEventFilter(self)

    def _default_sizes(self) -> None:
        window = self.window
        if not window.isVisible():  # laid out at its size first: sizes asked of a window never
            window.layout().setGeometry(window.rect())  # laid out fall short
        vertical = Qt.Orientation.Vertical
        window.resizeDocks([window.docks[t] for t in RIGHT_HEIGHTS], list(RIGHT_HEIGHTS.values()),
                           vertical)  # fmt: skip
        window.resizeDocks([window.docks["Messages"]], [BOTTOM_HEIGHT], vertical)

    def restore(self) -> bool:
        """The layout of the last window that closed, if there is one of this version."""
        settings = self.settings
        geometry, state = settings.value("window/geometry"), settings.value("window/state")
        if not isinstance(geometry, QByteArray) or not isinstance(state, QByteArray):
            return False
        self.window.restoreGeometry(geometry)  # first: the docks' state is laid out in it
        if not self.window.restoreState(state, LAYOUT_VERSION):
            self.window.resize(self._default_size)
            return False
        self.window.layout().setGeometry(self.window.rect())
        self._show_legend(settings.value("legend/visible", True, type=bool))
        return True

    def save(self) -> None:
        """Write the window's layout now (it is written when the window closes)."""
        settings = self.settings
        settings.setValue("window/geometry", self.window.saveGeometry())
        settings.setValue("window/state", self.window.saveState(LAYOUT_VERSION))
        settings.setValue("legend/visible", self.window.view_actions.legend_action.isChecked())
        settings.sync()

    def reset(self) -> None:
        """View > Reset Layout: every dock where and as big as at first, shown, the toolbar,
        the window's size and the legend."""
        window = self.window
        if window.isMaximized() or window.isFullScreen():
            window.showNormal()
        window.restoreState(self._default_state, LAYOUT_VERSION)  # places, tabs, shown docks
        window.resize(QSize(self._default_size))
        self._default_sizes()
        self._show_legend(True)

    def _show_legend(self, shown: bool) -> None:
        action = self.window.view_actions.legend_action
        action.setChecked(shown)
        self.window.legend.setVisible(shown)
        if shown:
            self.window.legend.raise_()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.window and event.type() == QEvent.Type.Close:
            self.save()
        return False
