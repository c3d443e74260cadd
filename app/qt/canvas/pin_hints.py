"""Which pins fit while a link is dragged: a green ring around each pin the link may end on.

While NodeGraphQt's live pipe follows the pointer (a drag from a pin), every pin of the shown
level that would accept the link is ringed: the other kind of pin (input for an output), on
another node, of a compatible type and not closing a cycle (`Patch.check_link`, which tests
`types_compatible` first; a feedback input may close a loop). An input that already has a link is
offered too, since a drop there replaces that link. The rings are computed once when the drag
starts and removed when it ends.
"""

from __future__ import annotations

from typing import Any

from NodeGraphQt.constants import PortTypeEnum
from PySide6.QtCore import QEvent, QObject, QRectF, Qt
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QGraphicsEllipseItem

from nodes import InputOccupiedError, Patch, PatchError

RING_COLOR = QColor(120, 255, 140)
RING_GAP = 4.0


def fits(patch: Patch, src: str, src_pin: str, dst: str, dst_pin: str) -> bool:
    """Whether linking `src.src_pin` to `dst.dst_pin` would be accepted (replacing the input's
    link if it has one)."""
    try:
        patch.check_link(src, src_pin, dst, dst_pin)
    except InputOccupiedError:
        # Types fit (checked first); a replacement closes a cycle exactly when a new link would.
        pin = patch.nodes[dst].input(dst_pin)
        return pin is not None and (pin.feedback or not _reaches(patch, dst, src))
    except PatchError:
        return False
    return True


def _reaches(patch: Patch, start: str, goal: str) -> bool:
    """A path start -> ... -> goal along links into non-feedback inputs."""
    seen, stack = {start}, [start]
    while stack:
        current = stack.pop()
        if current == goal:
            return True
        for link in patch.links_out_of(current):
            pin = patch.nodes[link.dst].input(link.dst_pin)
            if link.dst not in seen and pin is not None and not pin.feedback:
                seen.add(link.dst)
                stack.append(link.dst)
    return False


class QtPinHints(QObject):
    """Rings the pins a dragged link fits (see the module note)."""

    def __init__(self, canvas: Any) -> None:
        super().__init__(canvas)
        self.canvas = canvas
        self.rings: dict[tuple[str, str], QGraphicsEllipseItem] = {}
        self._dragging = False
        canvas.viewer().viewport().installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.MouseMove and not self._dragging:
            viewer = self.canvas.viewer()
            start = viewer._start_port  # NodeGraphQt 0.6.44: the pin a live pipe starts from
            if start is not None and viewer._LIVE_PIPE.isVisible():
                self._dragging = True
                self._show(start)
        elif kind == QEvent.Type.MouseButtonRelease and self._dragging:
            self._dragging = False
            self.clear()
        return False

    def fitting(self, start: Any) -> list[tuple[str, str, Any]]:
        """(node id, pin, port item) of the shown pins a link from port item `start` fits."""
        canvas = self.canvas
        origin = canvas.pin_of_port(start)
        if origin is None:
            return []
        patch = canvas.patch
        from_output = start.port_type == PortTypeEnum.OUT.value
        found = []
        for node_id in patch.nodes:
            if node_id == origin[0]:
                continue
            view = canvas.view_node(node_id)
            ports = view.input_ports() if from_output else view.output_ports()
            for port in ports:
                pin = port.name()
                link = (*origin, node_id, pin) if from_output else (node_id, pin, *origin)
                if fits(patch, *link):
                    found.append((node_id, pin, port.view))
        return found

    def _show(self, start: Any) -> None:
        self.clear()
        for node_id, pin, item in self.fitting(start):
            box = item.boundingRect()
            radius = min(box.width(), box.height()) / 2 + RING_GAP
            center = box.center()
            ring = QGraphicsEllipseItem(
                QRectF(center.x() - radius, center.y() - radius, 2 * radius, 2 * radius), item
            )
            pen = QPen(RING_COLOR, 2.0)
            pen.setCosmetic(True)
            ring.setPen(pen)
            ring.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
            self.rings[(node_id, pin)] = ring
        self.canvas.viewer().viewport().update()

    def clear(self) -> None:
        for ring in self.rings.values():
            scene = ring.scene()
            ring.setParentItem(None)
            if scene is not None:
                scene.removeItem(ring)
        self.rings.clear()

    def ringed(self) -> set[tuple[str, str]]:
        """The (node id, pin) ringed now."""
        return set(self.rings)
