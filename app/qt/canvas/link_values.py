"""Values on the canvas: a label at the pointer over a pin or a link, and live labels on links.

Hovering a pin or a link shows its current value in a small label next to the pointer (an input
pin nothing feeds shows its own value; a link and the pins at its ends show the value its source
output had in the last frame). View > Show Values on Links draws a label in the middle of every
link in view: a number in a short format, with a sparkline of its last `HISTORY` samples for a
float that changes; the shape and dtype of an array (`float64[128]`); the source node's
thumbnail for a texture (the one the editor already shows under that node); text for the rest.

Values come from a `values(path, pin)` callable given by the editor (the evaluator's output,
in-process or as the engine last reported it) and a `shapes(path, pin)` one for arrays whose
values arrive shortened. Neither is ever called from the frame loop itself: `refresh()` is
called by the editor at its throttled refresh rate and does nothing more often than every
`REFRESH_S`; it reads only the links whose middle is in the viewport (at most `MAX_LABELS`,
nearest the view's centre first), and none when nodes are drawn as plain rectangles (zoomed
out). Showing a value never makes a node run: in-process the evaluator's outputs are read as
they are; with an engine process the sources in `wanted()` (the hovered one first, then the
labelled ones, at most `REPORT_VALUES_CAP` = 16) are sent as the `report` list of the watch
message, whose values then travel in every engine report (about 30 a second): converting them
costs the engine's frame thread, so a view full of links must not make it send them all, and
watching them instead would make the engine rebuild its program whenever the view scrolls.

Known downsides: a node nothing needs shows no value (it does not run); beyond the cap, labels
with an engine show no value; sparklines sample at the refresh rate, not every frame.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from typing import Any

import numpy as np
from NodeGraphQt.qgraphics.pipe import LivePipeItem, PipeItem
from NodeGraphQt.qgraphics.port import PortItem
from PySide6.QtCore import QEvent, QObject, QPoint, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPainterPathStroker, QPen, QPixmap
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem
from shiboken6 import isValid

from app.engine.engine import REPORT_VALUES_CAP
from nodes import Link, is_picture

HISTORY = 60  # samples in a float link's sparkline
REFRESH_S = 0.1  # labels on links are updated at most ten times a second
MAX_LABELS = 120  # labels on links at once, at most
HOVER_REACH = 6.0  # screen pixels around a link that still count as over it
SPARK_SIZE = (60.0, 16.0)
THUMB_HEIGHT = 34
LABEL_Z = 50.0
TEXT_COLOR = QColor(235, 235, 235)
BACKGROUND = QColor(20, 22, 26, 215)
SPARK_COLOR = QColor(120, 190, 255)

Values = Callable[[str, str], Any]
Shapes = Callable[[str, str], tuple[int, ...] | None]


def short_number(value: float) -> str:
    """A number in at most about six characters: 0.523, 1.2e+04, -3."""
    if not np.isfinite(value):
        return str(value)
    return f"{value:.3g}"


def short_value(value: Any, shape: tuple[int, ...] | None = None) -> str:
    """A value in a few characters for a label on a link."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if isinstance(value, int | np.integer):
        return str(int(value))
    if isinstance(value, float | np.floating):
        return short_number(float(value))
    if isinstance(value, np.ndarray):
        dims = shape if shape is not None else value.shape
        return f"{value.dtype.name}[{', '.join(str(n) for n in dims)}]"
    size = getattr(value, "size", None)
    if isinstance(size, tuple) and len(size) == 2:
        return f"texture {size[0]}×{size[1]}"
    if isinstance(value, tuple | list) and len(value) <= 4:
        return "(" + ", ".join(short_value(v) for v in value) + ")"
    if value is None:
        return "—"
    text = str(value)
    return text if len(text) <= 24 else text[:23] + "…"


class QtValueLabel(QGraphicsItem):
    """A small label: text, and optionally a sparkline or a picture under it."""

    PAD = 3.0

    def __init__(self) -> None:
        super().__init__()
        self.text = ""
        self.samples: list[float] = []
        self.picture: QPixmap | None = None
        self.setZValue(LABEL_Z)
        self.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
        self.setAcceptHoverEvents(False)
        self._font = QFont()
        self._font.setPointSizeF(8.0)
        self._rect = QRectF()

    def set_content(self, text: str, samples: list[float], picture: QPixmap | None) -> None:
        if (text, samples, picture) == (self.text, self.samples, self.picture):
            return
        self.prepareGeometryChange()
        self.text, self.samples, self.picture = text, samples, picture
        metrics = QFontMetricsF(self._font)
        width = metrics.horizontalAdvance(text)
        height = metrics.height()
        if len(samples) > 1:
            width = max(width, SPARK_SIZE[0])
            height += SPARK_SIZE[1] + self.PAD
        if picture is not None:
            width = max(width, float(picture.width()))
            height += picture.height() + self.PAD
        pad = self.PAD
        self._rect = QRectF(-width / 2 - pad, -height / 2 - pad, width + 2 * pad, height + 2 * pad)
        self.update()

    @property
    def kind(self) -> str:
        """What the label draws besides text: sparkline, picture or text."""
        if self.picture is not None:
            return "picture"
        return "sparkline" if len(self.samples) > 1 else "text"

    def boundingRect(self) -> QRectF:
        return self._rect

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: Any) -> None:
        rect = self._rect
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(BACKGROUND)
        painter.drawRoundedRect(rect, 3.0, 3.0)
        painter.setFont(self._font)
        painter.setPen(TEXT_COLOR)
        metrics = QFontMetricsF(self._font)
        top = rect.top() + self.PAD
        painter.drawText(
            QRectF(rect.left(), top, rect.width(), metrics.height()),
            Qt.AlignmentFlag.AlignCenter,
            self.text,
        )
        top += metrics.height() + self.PAD
        if len(self.samples) > 1:
            self._draw_sparkline(painter, QRectF(-SPARK_SIZE[0] / 2, top, *SPARK_SIZE))
            top += SPARK_SIZE[1] + self.PAD
        if self.picture is not None:
            painter.drawPixmap(QPointF(-self.picture.width() / 2, top), self.picture)
        painter.restore()

    def _draw_sparkline(self, painter: QPainter, box: QRectF) -> None:
        data = np.asarray(self.samples, dtype=np.float64)
        low, high = float(data.min()), float(data.max())
        span = high - low or 1.0
        xs = np.linspace(box.left(), box.right(), data.size)
        ys = box.bottom() - (data - low) / span * box.height()
        pen = QPen(SPARK_COLOR, 1.0)
        pen.setCosmetic(True)
        painter.setPen(pen)
        painter.drawPolyline([QPointF(x, y) for x, y in zip(xs, ys, strict=True)])


class QtLinkValues(QObject):
    """The hover label and the labels on links of one canvas (see the module note)."""

    wanted_changed = Signal()  # the sources to watch changed (see `wanted`)

    def __init__(self, canvas: Any, values: Values, shapes: Shapes) -> None:
        super().__init__(canvas)
        self.canvas = canvas
        self.values = values
        self.shapes = shapes
        self.enabled = False
        self.labels: dict[Link, QtValueLabel] = {}
        self.hover = QtValueLabel()
        self.hover.setZValue(LABEL_Z + 1)
        self.hover_target: tuple[str, str] | None = None  # (node id, pin) hovered
        self.pointer: QPoint | None = None  # global position of the pointer last over the canvas
        self._history: dict[tuple[str, str], deque[float]] = {}
        self._refreshed = 0.0
        self._wanted: list[str] = []
        self._hover_source: str | None = None
        viewport = canvas.viewer().viewport()
        viewport.setMouseTracking(True)
        viewport.installEventFilter(self)

    # ------------------------------------------------------------------ the option
    def set_enabled(self, enabled: bool) -> None:
        """Show labels on links (from the next `refresh`) or remove them."""
        self.enabled = enabled
        if not enabled:
            self._clear_labels()
            self._history.clear()
        self._refreshed = 0.0
        self._set_wanted()
        self.refresh()

    def wanted(self) -> list[str]:
        """Evaluator paths whose outputs the labels show, hovered source first; at most
        `REPORT_VALUES_CAP`."""
        return list(self._wanted)

    def refresh(self, now: bool = False) -> None:
        """Update the labels on the links in view (at most every `REFRESH_S`, unless `now`: a
        frame stepped while paused)."""
        started = time.perf_counter()
        if started - self._refreshed < REFRESH_S and not now:
            return
        self._refreshed = started
        target = self.hover_target
        if target is not None and target[0] not in self.canvas.patch.nodes:
            self._hide_hover()  # its node went (an undo, another level shown)
        elif target is not None and self.hover.scene() is not None:
            self._show_hover(*target)
        if not self.enabled:
            return
        links = self._visible_links()
        for link in [link for link in self.labels if link not in links]:
            self._remove_label(link)
        for link, middle in links.items():
            self._show_label(link, middle)
        sources = {(self.canvas.eval_id(link.src), link.src_pin) for link in links}
        for key in [key for key in self._history if key not in sources]:
            del self._history[key]
        self._set_wanted()

    def _visible_links(self) -> dict[Link, QPointF]:
        canvas = self.canvas
        viewer = canvas.viewer()
        if canvas.loading or viewer.transform().m11() < canvas.simple_zoom:
            return {}
        shown = viewer.mapToScene(viewer.viewport().rect()).boundingRect()
        found: dict[Link, QPointF] = {}
        for item in viewer.scene().items(shown):
            if not isinstance(item, PipeItem) or isinstance(item, LivePipeItem):
                continue
            link = canvas.link_of_pipe(item)
            if link is None or not item.isVisible():
                continue
            middle = item.path().pointAtPercent(0.5)
            if shown.contains(middle):
                found[link] = middle
        if len(found) > MAX_LABELS:
            center = shown.center()
            nearest = sorted(found, key=lambda link: _distance(found[link], center))
            found = {link: found[link] for link in nearest[:MAX_LABELS]}
        return found

    def _show_label(self, link: Link, middle: QPointF) -> None:
        label = self.labels.get(link)
        if label is None or not isValid(label):
            label = self.labels[link] = QtValueLabel()
            self.canvas.viewer().scene().addItem(label)
        path = self.canvas.eval_id(link.src)
        text, samples, picture = self._content(path, link.src, link.src_pin)
        label.set_content(text, samples, picture)
        label.setPos(middle)

    def _content(self, path: str, node_id: str, pin: str) -> tuple[str, list[float], Any]:
        value = self._value(path, pin)
        picture_pin = is_picture(self.canvas.output_type(node_id, pin))
        samples: list[float] = []
        picture = None
        if picture_pin:
            thumbnail = self.canvas.thumbnail_item(node_id)
            if thumbnail is not None and isValid(thumbnail) and not thumbnail.pixmap().isNull():
                picture = thumbnail.pixmap().scaledToHeight(
                    THUMB_HEIGHT, Qt.TransformationMode.SmoothTransformation
                )
        if isinstance(value, float | np.floating) and not isinstance(value, bool):
            history = self._history.setdefault((path, pin), deque(maxlen=HISTORY))
            history.append(float(value))
            if min(history) != max(history):  # a constant draws no line, only its number
                samples = list(history)
        text = short_value(value, self._shape(path, pin, value))
        if picture_pin and text == "—":
            text = "texture"
        return text, samples, picture

    def _value(self, path: str, pin: str) -> Any:
        try:
            return self.values(path, pin)
        except Exception:
            return None

    def _shape(self, path: str, pin: str, value: Any) -> tuple[int, ...] | None:
        return self.shapes(path, pin) if isinstance(value, np.ndarray) else None

    def _remove_label(self, link: Link) -> None:
        label = self.labels.pop(link)
        if isValid(label) and label.scene() is not None:
            label.scene().removeItem(label)

    def _clear_labels(self) -> None:
        for link in list(self.labels):
            self._remove_label(link)

    def label_text(self, link: Link) -> str | None:
        """What the label on `link` says now (None: no label)."""
        label = self.labels.get(link)
        return label.text if label is not None else None

    def _set_wanted(self) -> None:
        wanted = [self._hover_source] if self._hover_source else []
        if self.enabled:
            for link in self.labels:
                path = self.canvas.eval_id(link.src)
                if path not in wanted:
                    wanted.append(path)
        wanted = wanted[:REPORT_VALUES_CAP]
        if wanted != self._wanted:
            self._wanted = wanted
            self.wanted_changed.emit()

    # ------------------------------------------------------------------ hover
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.MouseMove:
            self.pointer = event.globalPosition().toPoint()
            if event.buttons() == Qt.MouseButton.NoButton:
                self._hover_at(event.position().toPoint())
            else:
                self._hide_hover()
        elif kind in (QEvent.Type.Leave, QEvent.Type.MouseButtonPress):
            self._hide_hover()
        return False

    def _hover_at(self, pos: QPoint) -> None:
        target = self._target_at(pos)
        if target is None:
            self._hide_hover()
            return
        viewer = self.canvas.viewer()
        if self.hover.scene() is None:
            viewer.scene().addItem(self.hover)
        self.hover_target = target
        self._show_hover(*target)
        # Beside the pointer, whatever the zoom: 14 px right of it and centred on it.
        scale = viewer.transform().m11() or 1.0
        rect = self.hover.boundingRect()
        self.hover.setPos(viewer.mapToScene(pos) + QPointF(14 / scale - rect.left(), 0.0))
        source = self.canvas.source_of(*target)
        self._hover_source = self.canvas.eval_id(source[0]) if source else None
        self._set_wanted()

    def _show_hover(self, node_id: str, pin: str) -> None:
        text, samples, picture = self.describe_pin(node_id, pin)
        self.hover.set_content(text, samples, picture)

    def describe_pin(self, node_id: str, pin: str) -> tuple[str, list[float], Any]:
        """The hover label's content for a pin (`node.pin: value`)."""
        source = self.canvas.source_of(node_id, pin)
        if source is None:  # an input nothing feeds: its own value
            value = self.canvas.patch.value(node_id, pin)
            return f"{node_id}.{pin} = {short_value(value)}", [], None
        path = self.canvas.eval_id(source[0])
        text, samples, picture = self._content(path, *source)
        where = f"{source[0]}.{source[1]}"
        if (node_id, pin) != source:
            where += f" → {node_id}.{pin}"
        return f"{where} = {text}", samples, picture

    def _target_at(self, pos: QPoint) -> tuple[str, str] | None:
        """The (node id, pin) under a viewport position: a port, else the input end of the
        link within `HOVER_REACH` pixels."""
        viewer = self.canvas.viewer()
        scale = viewer.transform().m11() or 1.0
        if scale < self.canvas.simple_zoom:
            return None
        reach = HOVER_REACH / scale
        point = viewer.mapToScene(pos)
        area = QRectF(point.x() - reach, point.y() - reach, 2 * reach, 2 * reach)
        stroker = QPainterPathStroker()
        stroker.setWidth(2 * reach)
        for item in viewer.scene().items(area):
            if isinstance(item, PortItem):
                found = self.canvas.pin_of_port(item)
                if found is not None:
                    return found
        for item in viewer.scene().items(area):
            if isinstance(item, PipeItem) and not isinstance(item, LivePipeItem):
                link = self.canvas.link_of_pipe(item)
                if link is not None and stroker.createStroke(item.path()).contains(point):
                    return link.dst, link.dst_pin
        return None

    def _hide_hover(self) -> None:
        self.hover_target = None
        if self.hover.scene() is not None:
            self.hover.scene().removeItem(self.hover)
        if self._hover_source is not None:
            self._hover_source = None
            self._set_wanted()

    def hover_text(self) -> str | None:
        """What the hover label says now (None: none shown)."""
        return self.hover.text if self.hover.scene() is not None else None


def _distance(a: QPointF, b: QPointF) -> float:
    return (a.x() - b.x()) ** 2 + (a.y() - b.y()) ** 2
