"""The status bar's service indicators: one per live service (OSC, MIDI, audio) the patch has
opened, saying what it does ("OSC: listening on 127.0.0.1:9000") or that it is off and why ("OSC
off: cannot listen on 127.0.0.1:9000 (Address already in use)"), with a dot coloured by state and
what to do in its tooltip. Clicking one asks for the Settings dialog.

What it shows comes from `service` messages (app.engine.protocol.channel), or from the window's own
services when it runs the patch itself; `service_line` is the same news as one line for the
Messages panel. A long line is elided in the bar; the tooltip has it whole.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QWidget

from app.engine.protocol.messages import ServiceChanged
from evaluators import ServiceStatus

NAMES = {"osc": "OSC", "midi": "MIDI", "audio": "Audio in"}
DOT_COLORS = {"on": "#3fb950", "off": "#f85149", "waiting": "#9e9e9e"}
MAX_LABEL_WIDTH = 340


def status_of(message: ServiceChanged) -> ServiceStatus:
    """The ServiceStatus a `service` message carries."""
    return ServiceStatus(message.state, message.text, message.advice, message.address)


def headline(name: str, status: ServiceStatus) -> str:
    """ "OSC: listening on 127.0.0.1:9000", "OSC off: cannot listen on ..."."""
    label = NAMES.get(name, name)
    return f"{label} off: {status.text}" if status.state == "off" else f"{label}: {status.text}"


def service_line(name: str, status: ServiceStatus) -> str:
    """The news of a service's status in one line, with what to do when it is off."""
    advice = f" ({status.advice})" if status.state == "off" and status.advice else ""
    return headline(name, status) + advice


class QtServiceIndicator(QLabel):
    """One service in the status bar: a coloured dot and its status, elided."""

    clicked = Signal()

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.status = ServiceStatus("waiting", "")
        self.full_text = ""
        self.setTextFormat(Qt.TextFormat.RichText)
        self.setMaximumWidth(MAX_LABEL_WIDTH)
        self.setCursor(Qt.CursorShape.PointingHandCursor)

    def show_status(self, status: ServiceStatus) -> None:
        self.status = status
        self.full_text = headline(self.name, status)
        width = MAX_LABEL_WIDTH - self.fontMetrics().horizontalAdvance("● ") - 8
        shown = self.fontMetrics().elidedText(self.full_text, Qt.TextElideMode.ElideRight, width)
        color = DOT_COLORS.get(status.state, DOT_COLORS["waiting"])
        self.setText(f'<span style="color:{color}">●</span> {_escaped(shown)}')
        advice = f"\n{status.advice}" if status.advice else ""
        self.setToolTip(f"{self.full_text}{advice}\nClick for Settings")

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit()
        super().mousePressEvent(event)


class QtServiceStatus(QWidget):
    """The indicators of every service heard of, in the order they first came."""

    settings_requested = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.indicators: dict[str, QtServiceIndicator] = {}
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 6, 0)
        self._layout.setSpacing(12)

    def show_status(self, name: str, status: ServiceStatus) -> bool:
        """Show `status` for service `name`; True when it is news (a new state or line)."""
        indicator = self.indicators.get(name)
        if indicator is None:
            indicator = self.indicators[name] = QtServiceIndicator(name)
            indicator.clicked.connect(self.settings_requested)
            self._layout.addWidget(indicator)
            indicator.show()  # now, not once the event loop turns
        elif indicator.status == status:
            return False
        indicator.show_status(status)
        return True

    def text(self, name: str) -> str:
        """The whole line an indicator shows ("" for a service not heard of)."""
        indicator = self.indicators.get(name)
        return indicator.full_text if indicator is not None else ""

    def status(self, name: str) -> ServiceStatus | None:
        indicator = self.indicators.get(name)
        return indicator.status if indicator is not None else None

    def clear(self) -> None:
        """Forget every service (the engine that had them is gone)."""
        for indicator in self.indicators.values():
            indicator.deleteLater()
        self.indicators.clear()


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
