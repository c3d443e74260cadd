"""Backdrops on the canvas: titled, coloured frames behind nodes, to comment and group a patch.

A backdrop is layout only (`nodes.Backdrop`, kept by the Patch shown: the document or a
definition's body, and saved with it). Dragging its title bar moves it with the nodes lying
wholly inside it; the grip at its bottom-right corner resizes it; a double-click on the title bar
asks for a new title. Each of these, and creating, recolouring and removing one, is one
`LayoutCommand` on the app's undo stack; the items follow the Patch's `backdrop` events, as nodes
follow theirs.

Only the title bar and the grip take the mouse (the item's shape): a press on the body of a
backdrop is a press on the empty canvas (rubber-band selection), and nodes and links are drawn
above it. NodeGraphQt's own BackdropNode is not used: it is a node in its graph, with its own
undo and session format.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Protocol

from NodeGraphQt.constants import Z_VAL_BACKDROP
from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPainterPath, QPen, QUndoStack
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsSceneMouseEvent,
    QStyleOptionGraphicsItem,
)

from app.qt.commands import LayoutCommand
from nodes import Backdrop, Patch

HEADER = 30.0  # scene units: the title bar, where a backdrop is grabbed
GRIP = 18.0  # the resize grip's side, at the bottom-right corner
MARGIN = 40.0  # around the nodes a new backdrop frames
MIN_SIZE = (120.0, 80.0)
DEFAULT_COLOR = (70, 90, 120)
DEFAULT_TITLE = "Comment"


class BackdropCanvas(Protocol):
    """What the backdrop layer needs from the canvas it lies on
    (`app.qt.canvas.canvas.QtPatchCanvas`, which builds the layer: naming the class here would make
    the two modules import each other)."""

    @property
    def patch(self) -> Patch: ...

    @property
    def stack(self) -> QUndoStack: ...

    def viewer(self) -> Any: ...

    def view_node(self, node_id: str) -> Any: ...

    def view_center(self) -> tuple[float, float]: ...


class BackdropItem(QGraphicsItem):
    """One backdrop: its frame, title bar and resize grip."""

    def __init__(self, layer: BackdropLayer, backdrop: Backdrop) -> None:
        super().__init__()
        self._layer = layer
        self.backdrop = backdrop
        self.setZValue(Z_VAL_BACKDROP)
        self.setAcceptHoverEvents(True)
        self.show_backdrop(backdrop)

    def show_backdrop(self, backdrop: Backdrop) -> None:
        self.prepareGeometryChange()
        self.backdrop = backdrop
        x, y, _, _ = backdrop.rect
        self.setPos(x, y)
        self.setToolTip(f"{backdrop.title}: drag the title bar to move it with its nodes")
        self.update()

    def size(self) -> tuple[float, float]:
        return self.backdrop.rect[2], self.backdrop.rect[3]

    def boundingRect(self) -> QRectF:
        width, height = self.size()
        return QRectF(0.0, 0.0, width, height)

    def grip_rect(self) -> QRectF:
        width, height = self.size()
        return QRectF(width - GRIP, height - GRIP, GRIP, GRIP)

    def header_rect(self) -> QRectF:
        return QRectF(0.0, 0.0, self.size()[0], min(HEADER, self.size()[1]))

    def shape(self) -> QPainterPath:
        path = QPainterPath()
        path.addRect(self.header_rect())
        path.addRect(self.grip_rect())
        return path

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: Any) -> None:
        r, g, b = self.backdrop.color
        rect = self.boundingRect()
        painter.save()
        painter.setPen(QPen(QColor(r, g, b, 230), 1.5))
        painter.setBrush(QColor(r, g, b, 55))
        painter.drawRoundedRect(rect, 6.0, 6.0)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QColor(r, g, b, 200))
        painter.drawRoundedRect(self.header_rect(), 6.0, 6.0)
        painter.setBrush(QBrush(QColor(r, g, b, 230)))
        grip = self.grip_rect()
        painter.drawPolygon([grip.topRight(), grip.bottomRight(), grip.bottomLeft()])
        font = QFont(painter.font())
        font.setPointSizeF(11.0)
        font.setBold(True)
        painter.setFont(font)
        painter.setPen(QColor(255, 255, 255))
        text_rect = self.header_rect().adjusted(10.0, 0.0, -10.0, 0.0)
        flags = Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft
        painter.drawText(text_rect, int(flags), self.backdrop.title)
        painter.restore()

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if event.button() != Qt.MouseButton.LeftButton:
            event.ignore()
            return
        resize = self.grip_rect().contains(event.pos())
        self._layer.begin_drag(self, event.scenePos(), resize)
        event.accept()

    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        self._layer.drag_to(event.scenePos())

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        self._layer.end_drag()

    def mouseDoubleClickEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if self.header_rect().contains(event.pos()) and self._layer.rename_requested:
            self._layer.rename_requested(self.backdrop.id)
        event.accept()

    def hoverMoveEvent(self, event: Any) -> None:
        on_grip = self.grip_rect().contains(event.pos())
        self.setCursor(Qt.CursorShape.SizeFDiagCursor if on_grip else Qt.CursorShape.SizeAllCursor)


class _Drag:
    """A backdrop drag under way: where it started and what it carries."""

    def __init__(self, item: BackdropItem, start: QPointF, resize: bool, nodes: dict) -> None:
        self.item, self.start, self.resize = item, start, resize
        self.before = item.backdrop
        self.nodes: dict[str, tuple[float, float]] = nodes  # node id -> position at the start


class BackdropLayer:
    """The backdrops of the level a canvas shows, kept in step with its Patch."""

    def __init__(self, canvas: BackdropCanvas) -> None:
        self._canvas = canvas
        self.items: dict[str, BackdropItem] = {}
        self._drag: _Drag | None = None
        self.rename_requested: Callable[[str], None] | None = None  # set by the editor

    def _scene(self) -> Any:
        return self._canvas.viewer().scene()

    def show(self, backdrops: Iterable[Backdrop]) -> None:
        """Replace every item with those of `backdrops` (a new level is shown)."""
        for item in self.items.values():
            if item.scene() is not None:
                item.scene().removeItem(item)
        self.items.clear()
        self._drag = None
        for backdrop in backdrops:
            self.follow(backdrop.id)

    def follow(self, backdrop_id: str) -> None:
        """Show the Patch's backdrop `backdrop_id` as it is now (or remove its item)."""
        backdrop = self._canvas.patch.backdrops.get(backdrop_id)
        item = self.items.get(backdrop_id)
        if backdrop is None:
            if item is not None:
                del self.items[backdrop_id]
                self._scene().removeItem(item)
            return
        if item is None:
            item = BackdropItem(self, backdrop)
            self.items[backdrop_id] = item
            self._scene().addItem(item)
        elif item.backdrop != backdrop:
            item.show_backdrop(backdrop)

    def at(self, scene_pos: QPointF) -> str | None:
        """The backdrop whose frame holds `scene_pos` (the topmost), if any."""
        for backdrop_id, item in reversed(self.items.items()):
            if item.sceneBoundingRect().contains(scene_pos):
                return backdrop_id
        return None

    def nodes_inside(self, backdrop: Backdrop) -> list[str]:
        """The shown nodes lying wholly inside a backdrop's frame."""
        frame = QRectF(*backdrop.rect)
        canvas = self._canvas
        return [
            node_id
            for node_id in canvas.patch.nodes
            if frame.contains(canvas.view_node(node_id).view.sceneBoundingRect())
        ]

    # ------------------------------------------------------------------ gestures
    def begin_drag(self, item: BackdropItem, start: QPointF, resize: bool) -> None:
        # The viewer recorded the selected nodes' positions to report their move on release;
        # this gesture moves nodes itself, as one command.
        self._canvas.viewer()._node_positions = {}
        patch = self._canvas.patch
        carried = [] if resize else self.nodes_inside(item.backdrop)
        self._drag = _Drag(item, start, resize, {n: patch.nodes[n].pos for n in carried})

    def drag_to(self, pos: QPointF) -> None:
        drag = self._drag
        if drag is None:
            return
        dx, dy = pos.x() - drag.start.x(), pos.y() - drag.start.y()
        x, y, width, height = drag.before.rect
        if drag.resize:
            rect = (x, y, max(MIN_SIZE[0], width + dx), max(MIN_SIZE[1], height + dy))
        else:
            rect = (x + dx, y + dy, width, height)
            for node_id, (nx, ny) in drag.nodes.items():
                self._canvas.view_node(node_id).view.xy_pos = [nx + dx, ny + dy]
        drag.item.show_backdrop(drag.before._replace(rect=rect))

    def end_drag(self) -> None:
        drag, self._drag = self._drag, None
        if drag is None:
            return
        after = drag.item.backdrop
        if after == drag.before:
            return
        dx, dy = after.rect[0] - drag.before.rect[0], after.rect[1] - drag.before.rect[1]
        moves = {node_id: (pos, (pos[0] + dx, pos[1] + dy)) for node_id, pos in drag.nodes.items()}
        text = "resize backdrop" if drag.resize else f"move backdrop {after.title!r}"
        self._push(text, {after.id: (drag.before, after)}, moves)

    # ------------------------------------------------------------------ edits
    def _push(self, text: str, changes: dict, moves: dict | None = None) -> None:
        self._canvas.stack.push(LayoutCommand(self._canvas.patch, text, changes, moves))

    def create_around(self, node_ids: Iterable[str], title: str = DEFAULT_TITLE) -> str:
        """Add a backdrop framing the given nodes (none: one at the view's centre); its id."""
        rect = QRectF()
        for node_id in node_ids:
            rect = rect.united(self._canvas.view_node(node_id).view.sceneBoundingRect())
        if rect.isNull():
            x, y = self._canvas.view_center()
            rect = QRectF(x - 200.0, y - 120.0, 400.0, 240.0)
        else:
            rect.adjust(-MARGIN, -MARGIN - HEADER, MARGIN, MARGIN)
        patch = self._canvas.patch
        backdrop_id = patch.new_backdrop_id()
        geometry = (rect.x(), rect.y(), rect.width(), rect.height())
        backdrop = Backdrop(backdrop_id, title, DEFAULT_COLOR, geometry)
        self._push(f"add backdrop {title!r}", {backdrop_id: (None, backdrop)})
        return backdrop_id

    def retitle(self, backdrop_id: str, title: str) -> None:
        old = self._canvas.patch.backdrops[backdrop_id]
        if title != old.title:
            self._push(
                f"rename backdrop to {title!r}", {backdrop_id: (old, old._replace(title=title))}
            )

    def recolor(self, backdrop_id: str, color: tuple[int, int, int]) -> None:
        old = self._canvas.patch.backdrops[backdrop_id]
        if color != old.color:
            self._push(
                f"recolour backdrop {old.title!r}", {backdrop_id: (old, old._replace(color=color))}
            )

    def remove(self, backdrop_id: str) -> None:
        old = self._canvas.patch.backdrops[backdrop_id]
        self._push(f"remove backdrop {old.title!r}", {backdrop_id: (old, None)})
