"""Messages for the person editing: a log panel and a bubble next to the pointer.

Every refused edit (incompatible pins, a cycle, a value a pin cannot hold, a group of nothing)
and every engine message goes to `QtMessageLog`, a dock panel keeping the full text of each with
its time, selectable and copied whole with Copy All; a refusal also shows in `QtBubble`, a small
transient box next to where the pointer was, for `BUBBLE_S` seconds, so the reason is seen where
the gesture happened instead of only in the status bar. The log keeps the last `MAX_ENTRIES`.

A node's line (`node: <path> failed: <error>`, the first failure of each node, as the engine
reports it) names the node: a click on it emits `node_activated(path)`, and the editor selects that
node on the canvas (entering the instances on its path).

Unread: a message added while the panel is not on screen (closed, or a tab behind another dock)
counts as unread until its dock shows; `unread_changed` carries the count, and `badge_dock` puts
it in the dock's title, which is what its tab shows ("Messages (3)").
"""

from __future__ import annotations

import re
import time

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

BUBBLE_S = 5.0
BUBBLE_WIDTH = 420
MAX_ENTRIES = 1000
NODE_LINE = re.compile(r"^\S+\s+node: (\S+) failed: ")  # `HH:MM:SS  node: <path> failed: …`


class QtMessageLog(QWidget):
    """The message log panel: one timestamped line per message, full text, copyable; counts the
    messages added while it was not on screen (`unread`)."""

    unread_changed = Signal(int)
    node_activated = Signal(str)  # the path of the node whose line was clicked

    def __init__(self) -> None:
        super().__init__()
        self.unread = 0
        self.view = QPlainTextEdit()
        self.view.setReadOnly(True)
        self.view.viewport().installEventFilter(self)
        self.view.viewport().setMouseTracking(True)
        self.view.setMaximumBlockCount(MAX_ENTRIES)
        self.view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.copy_button = QPushButton("Copy All")
        self.copy_button.clicked.connect(self.copy_all)
        clear = QPushButton("Clear")
        clear.clicked.connect(self.view.clear)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.copy_button)
        buttons.addWidget(clear)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.view, 1)
        layout.addLayout(buttons)

    def add(self, kind: str, text: str) -> str:
        """Append `HH:MM:SS kind: text`; returns the line."""
        line = f"{time.strftime('%H:%M:%S')}  {kind}: {text}"
        self.view.appendPlainText(line)
        if not self.isVisible() or self.visibleRegion().isEmpty():  # closed, or a tab behind
            self.unread += 1
            self.unread_changed.emit(self.unread)
        return line

    def node_at(self, pos: QPoint) -> str | None:
        """The node named by the line at a point of the view's viewport, if it names one."""
        found = NODE_LINE.match(self.view.cursorForPosition(pos).block().text())
        return found.group(1) if found else None

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.view.viewport() and isinstance(event, QMouseEvent):
            node = self.node_at(event.position().toPoint())
            if event.type() == QEvent.Type.MouseMove:
                shape = Qt.CursorShape.PointingHandCursor if node else Qt.CursorShape.IBeamCursor
                self.view.viewport().setCursor(shape)
            elif (
                event.type() == QEvent.Type.MouseButtonRelease
                and event.button() == Qt.MouseButton.LeftButton
                and node is not None
                and not self.view.textCursor().hasSelection()  # selecting text to copy it
            ):
                self.node_activated.emit(node)
        return False

    def mark_read(self) -> None:
        if self.unread:
            self.unread = 0
            self.unread_changed.emit(0)

    def text(self) -> str:
        return self.view.toPlainText()

    def copy_all(self) -> None:
        QApplication.clipboard().setText(self.text())


def badge_dock(dock: QDockWidget, log: QtMessageLog) -> None:
    """Show the log's unread count in the dock's title (and so on its tab); showing the dock
    (its tab chosen, or the panel opened) reads them."""
    title = dock.windowTitle()
    log.unread_changed.connect(
        lambda count: dock.setWindowTitle(f"{title} ({count})" if count else title)
    )
    dock.visibilityChanged.connect(lambda shown: log.mark_read() if shown else None)


class QtBubble(QLabel):
    """A transient message box over `parent`, placed next to a global position."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setMaximumWidth(BUBBLE_WIDTH)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setStyleSheet(
            "background: #5a1d1d; color: white; border: 1px solid #d06060;"
            " border-radius: 6px; padding: 6px;"
        )
        self.hide()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.hide)

    def show_at(self, global_pos: QPoint, text: str) -> None:
        """Show `text` just below and right of `global_pos`, kept inside the parent."""
        parent = self.parentWidget()
        self.setText(text)
        self.adjustSize()
        pos = parent.mapFromGlobal(global_pos) + QPoint(16, 16)
        pos.setX(max(0, min(pos.x(), parent.width() - self.width())))
        pos.setY(max(0, min(pos.y(), parent.height() - self.height())))
        self.move(pos)
        self.show()
        self.raise_()
        self._timer.start(int(BUBBLE_S * 1000))
