"""The preview panel: the latest values of the selected node's outputs.

Numbers, booleans and text are shown as text; 1-D numeric arrays as a small line plot with their
range; other arrays as their shape and first values. A texture output shows the engine's small
picture of it (`show_picture`; the engine sends one when its pixels change, so the last one stays
while they do not), and its size in words until a picture comes (an engine without GL sends
none). A picture with alpha is drawn over a checkerboard, so that text on a transparent frame
reads as text, not as a block of its colour. For a failed node a line at the top, always in the
same place, says so with its error, and each output reads `failed · last good: <value>`: what the
evaluator still holds is the last value the node made before it failed, not a result; a node that
never succeeded reads `failed · no good value yet` (its outputs hold only their defaults).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QImage, QPainter, QPen, QPixmap, QPolygonF
from PySide6.QtWidgets import QFormLayout, QLabel, QVBoxLayout, QWidget

from app.engine.client import RemoteTexture
from app.qt.canvas.failure_marks import NO_GOOD_VALUE
from app.qt.support.pictures import over_checkerboard

MAX_PLOT_POINTS = 512
TEXTURE_PREVIEW_HEIGHT = 150


class QtArrayPlot(QWidget):
    """A small line plot of a 1-D array."""

    def __init__(self) -> None:
        super().__init__()
        self.setMinimumSize(160, 80)
        self.values = np.zeros(0)

    def set_values(self, values: np.ndarray) -> None:
        self.values = values
        self.update()

    def paintEvent(self, event: Any) -> None:
        painter = QPainter(self)
        painter.fillRect(self.rect(), QColor(25, 28, 32))
        data = np.asarray(self.values, dtype=np.float64).ravel()
        data = data[np.isfinite(data)]
        if data.size == 0:
            painter.end()
            return
        if data.size > MAX_PLOT_POINTS:
            data = data[:: int(np.ceil(data.size / MAX_PLOT_POINTS))]
        low, high = float(data.min()), float(data.max())
        span = high - low or 1.0
        width, height = self.width() - 8, self.height() - 8
        xs = np.linspace(4, 4 + width, data.size) if data.size > 1 else np.array([4 + width / 2])
        ys = 4 + height - (data - low) / span * height
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(QPen(QColor(90, 220, 200), 1.5))
        painter.drawPolyline(QPolygonF([QPointF(x, y) for x, y in zip(xs, ys, strict=True)]))
        painter.setPen(QColor(160, 160, 160))
        painter.drawText(6, 14, f"{high:.3g}")
        painter.drawText(6, self.height() - 6, f"{low:.3g}")
        painter.end()


def describe(value: Any) -> str:
    """A one-line text for a value that has no richer preview."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, float | np.floating):
        return f"{float(value):.6g}"
    if isinstance(value, np.ndarray):
        head = np.array2string(value.ravel()[:6], precision=4, separator=", ")
        return f"array {value.shape} {value.dtype}: {head}"
    if isinstance(value, tuple):
        return "(" + ", ".join(describe(v) for v in value) + ")"
    if value is None:
        return "nothing"
    text = repr(value)
    return text if len(text) < 200 else text[:197] + "..."


def fitted_pixmap(image: QImage, width: int, height: int) -> QPixmap:
    """`image` scaled to fit `width` x `height`, keeping its aspect ratio, over a checkerboard
    where it is transparent (an opaque picture covers it)."""
    scaled = image.scaled(
        width,
        height,
        Qt.AspectRatioMode.KeepAspectRatio,
        Qt.TransformationMode.SmoothTransformation,
    )
    return QPixmap.fromImage(over_checkerboard(scaled) if scaled.hasAlphaChannel() else scaled)


def _is_plottable(value: Any) -> bool:
    return (
        isinstance(value, np.ndarray)
        and value.ndim == 1
        and value.size > 1
        and value.dtype.kind in "biuf"
    )


class QtPreview(QWidget):
    """Shows the values of a node's outputs; `show_values` is called every few frames."""

    def __init__(self) -> None:
        super().__init__()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.failure = QLabel()
        self.failure.setWordWrap(True)
        self.failure.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.failure.setStyleSheet("color: #ff7070;")
        self.failure.hide()
        layout.addWidget(self.failure)
        rows = QWidget()
        self._form = QFormLayout(rows)
        layout.addWidget(rows)
        layout.addStretch(1)
        self._rows: dict[str, QWidget] = {}
        self.node_id: str | None = None

    def set_outputs(self, node_id: str | None, output_names: list[str]) -> None:
        """Prepare one row per output of `node_id` (nothing when None)."""
        self.node_id = node_id
        self.failure.hide()
        self._rows.clear()
        while self._form.rowCount():
            self._form.removeRow(0)
        for name in output_names:
            label = QLabel()
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self._form.addRow(name, label)
            self._rows[name] = label

    def show_values(
        self, values: dict[str, Any], failed: str | None = None, never_good: bool = False
    ) -> None:
        """Show the outputs' values; `failed` is the node's error when it failed (the values are
        then its last good ones, or only defaults when it `never_good`: never succeeded)."""
        self.failure.setVisible(failed is not None)
        if failed is not None:
            self.failure.setText(f"failed: {failed}")
        for name, value in values.items():
            row = self._rows.get(name)
            if row is None:
                continue
            if isinstance(value, RemoteTexture):
                self.show_texture(name, value)
                continue
            plot = _is_plottable(value)
            if plot != isinstance(row, QtArrayPlot):
                row = self._replace_row(name, QtArrayPlot() if plot else QLabel())
            if isinstance(row, QtArrayPlot):
                row.set_values(value)
                row.setToolTip(describe(value))
            elif isinstance(row, QLabel):
                text = describe(value)
                if failed is not None:
                    text = (
                        f"failed · {NO_GOOD_VALUE}" if never_good else f"failed · last good: {text}"
                    )
                row.setText(text)

    def show_texture(self, name: str, texture: RemoteTexture) -> None:
        """The output `name` is a texture: its picture stays shown (a text would replace it),
        else its size in words."""
        row = self._rows[name]
        size = "x".join(str(v) for v in texture.size)
        if not isinstance(row, QLabel):
            row = self._replace_row(name, QLabel())
        assert isinstance(row, QLabel)
        if row.pixmap().isNull():
            row.setText(f"texture {size}")
        row.setToolTip(f"texture {size}")

    def show_picture(self, name: str, image: QImage) -> None:
        """A picture of the output `name` (a texture the engine process scaled down)."""
        row = self._rows.get(name)
        if row is None:
            return
        if not isinstance(row, QLabel):
            row = self._replace_row(name, QLabel())
        assert isinstance(row, QLabel)
        # A picture, not text: no height-for-width (a wrapping label let the panel's scroll area
        # squash the row to a strip of the picture's middle).
        row.setWordWrap(False)
        row.setMinimumHeight(TEXTURE_PREVIEW_HEIGHT)
        row.setAlignment(Qt.AlignmentFlag.AlignCenter)
        row.setPixmap(fitted_pixmap(image, max(64, self.width() - 60), TEXTURE_PREVIEW_HEIGHT))

    def _replace_row(self, name: str, widget: QWidget) -> QWidget:
        if isinstance(widget, QLabel):
            widget.setWordWrap(True)
        row_index = list(self._rows).index(name)
        self._form.removeRow(row_index)
        self._form.insertRow(row_index, name, widget)
        self._rows[name] = widget
        return widget

    def row_widget(self, name: str) -> QWidget | None:
        return self._rows.get(name)
