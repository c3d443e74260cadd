"""The patch canvas: a NodeGraphQt view of a Patch, synced both ways without echo loops.

The Patch is the truth. Patch events, status colours and selections are applied to the view with
`push_undo=False`, so NodeGraphQt's private undo stack stays empty; NodeGraphQt never changes its
own links or node set. User gestures are caught at NodeGraph's gesture slots
(connection drag, slice, node move, tab search) and turned into commands on the app's undo stack;
the resulting Patch events then update the view. A gesture the Patch refuses is reported through
`refused` and the pipes the viewer had detached are put back.

Levels: the canvas shows the document (`set_patch`) or, once an instance is entered (double-click,
Enter; `enter`), the live body of its definition, so that edits there are edits of every
instance; Backspace or U (`leave`) and `go_to` go back up. `trail` holds the ids of the instances
entered, and `eval_id` turns a shown node's id into the evaluator's path (`blob1/lfo3`), which is
what colours, previews and the inspector's state read. The canvas follows the document's events
only for the level it shows (an event's `definition` names the body it happened in); an edit that
removes an instance entered, or its definition, takes the canvas up to the deepest level left.
Titles show a node's id and type (`lfo3 · time.lfo`); inlets and outlets are titled with the pin
name they give (`in: freq`); an instance has a badge with its definition's name and how many
instances share it (`blob ×3`). A patch or level opens framed no further out than `readable_zoom`
(titles `READABLE_TITLE_PX` tall). Links are drawn above node bodies, so that one passing behind a
node never reads as that node's, but a press there still takes the node or pin. Hovering a pin
shows its type, its sentence (app.qt.panels.help.pin_doc) and its current value (`output_of`, set by
the editor); a node's tooltip carries its summary. Backdrops of the level shown are items of
`app.qt.canvas.backdrops.BackdropLayer`. The canvas menu holds the document's Undo / Redo only
(NodeGraphQt's own are taken out) and the tab search our node types, listed with their summary
(typing matches both), and definitions only; what is typed ranks an id with that exact word first
(`search_ranked`: "level" lists audio.level before gpu.levels). A node added by tab search or
dropped from the library goes where the pointer is, or the nearest spot there on no other node
(app.session.placement), and is selected, so the inspector shows it at once. An empty patch (a
new document) opens at 100 % around the origin, not at the zoom the last one left. A right-click
on a node opens the node's own menu (`node_menu`, set by the editor: app.qt.actions.node_menu)
instead of the canvas menu.

Assumptions and known costs:
    * NodeGraphQt 0.6.44 is pinned: the gesture slots overridden here are private to it.
    * NodeGraphQt's own cycle check is exponential and its `connect_to` from an input drops links,
      so acyclic checking is off (the Patch checks cycles) and links are made from the output side.
    * Node names are our unique node ids, so the quadratic unique-name search is skipped, and there
      are no embedded widgets (values are edited in the inspector), which keeps 2,000-node patches
      loadable in seconds.
    * `fit_to_selection` is replaced by a bounding-rect fit; NodeGraphQt's is O(N) with a huge
      constant.
    * Building a NodeGraphQt node costs about 1-2 ms of Python (items, ports, labels, layout), so
      a large patch is built progressively: `set_patch` builds what fits in one time slice, a
      zero-interval timer builds the rest slice by slice while the rest of the window stays
      responsive, with a progress bar over the frozen canvas. The half-built canvas is never seen
      by anything else: a Patch edit, a call that names nodes or reads the view, or a mouse or key
      press on the canvas first builds the rest at once.
    * With a large patch all in view, drawing every node, port, label and curve in full took
      0.5-0.8 s per repaint at 2,000 nodes (NodeGraphQt paints in Python, and the item pixmap
      cache no longer held all those items). Below `SIMPLE_BELOW_ZOOM` nodes are drawn as plain
      rectangles and links as straight lines, with no text, port circles or arrows: about 30 ms
      per repaint and 0.1 s per zoom step at 2,000 nodes (`app/bench/qt.py`). Ports cannot be
      dragged at that zoom; a press there takes the node.
    * A node can carry a small picture under its body (`set_thumbnail`: the editor's thumbnails
      of GPU textures), a child pixmap item hidden with the other details at that zoom.
      `thumbnail_candidates` tells which nodes are worth one: on screen, not zoomed out.
"""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import numpy as np
from NodeGraphQt import BaseNode, NodeGraph
from NodeGraphQt.constants import Z_VAL_NODE, PortTypeEnum
from NodeGraphQt.qgraphics.node_base import NodeItem
from NodeGraphQt.qgraphics.pipe import PipeItem
from NodeGraphQt.qgraphics.port import PortItem
from NodeGraphQt.widgets.viewer import NodeViewer
from PySide6.QtCore import QEvent, QObject, QPoint, QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QContextMenuEvent,
    QFontMetricsF,
    QHelpEvent,
    QImage,
    QPainter,
    QPen,
    QPixmap,
    QUndoStack,
)
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsPixmapItem,
    QGraphicsSimpleTextItem,
    QProgressBar,
    QStyleOptionGraphicsItem,
    QToolTip,
)

from app.qt.canvas.backdrops import BackdropLayer
from app.qt.commands import (
    AddNodesCommand,
    DocumentEditCommand,
    MoveNodesCommand,
    NodeRecord,
    RewireCommand,
)
from app.qt.panels.help import pin_doc
from app.qt.pin_types import pin_color
from app.qt.support.pictures import over_checkerboard
from app.session.placement import free_offset, free_position
from evaluators import NodeClass, NodeStatus
from nodes import (
    DEFINITION_OPS,
    LIBRARY,
    EditOp,
    Link,
    NodeInstance,
    Patch,
    PatchError,
    PatchEvent,
)

SUBPATCH, INLET, OUTLET = "subpatch", "subpatch.inlet", "subpatch.outlet"
DEFINITION_TYPE = "patchbay.definition."  # tab search entries of the document's definitions
SEARCH_SEPARATOR = " — "  # between a node type's id and its summary in tab search
BADGE_COLOR = (255, 214, 120)
BADGE_GAP = 4.0  # scene units between a node's top and its badge

# Node body colours by evaluation class and status.
CLASS_COLORS = {
    NodeClass.CONST: (46, 72, 110),
    NodeClass.USER: (38, 110, 80),
    NodeClass.HOT: (176, 96, 20),
}
FAILED_COLOR = (190, 30, 30)
DEFERRED_BORDER = (200, 120, 255)
IDLE_OPACITY = 0.4


# Below this zoom nodes are plain rectangles and links straight lines: a node of NodeGraphQt's
# minimum width (160) is then under 40 px wide on screen, too small for its text to be read.
SIMPLE_BELOW_ZOOM = 0.25
SELECTED_OUTLINE = (254, 207, 42)
PIPE_Z = Z_VAL_NODE + 2  # links over node bodies (a selected node is at Z_VAL_NODE + 1)
READABLE_TITLE_PX = 11.0  # the least height of a title line on screen when a patch is framed
THUMBNAIL_GAP = 4.0  # scene units between a node's body and its thumbnail


def _zoom(painter: QPainter, option: QStyleOptionGraphicsItem) -> float:
    """Screen pixels per scene unit for an item painted with `painter`."""
    return option.levelOfDetailFromTransform(painter.worldTransform())


class _PatchNodeItem(NodeItem):
    """A NodeItem laid out once, when it enters the scene, and drawn as a plain rectangle when it
    is small on screen.

    NodeGraphQt lays a node out on each `layout_direction` assignment, twice before the item is in
    a scene, and again in `post_init` once it is; only that last layout is kept.

    Level of detail: NodeGraphQt's proxy mode, switched at the start of each `paint`, with three
    changes. The switch compares the view's zoom, read from the painter's transform, with
    `SIMPLE_BELOW_ZOOM`, where NodeGraphQt maps the node to global coordinates twice per paint.
    A simple node is a filled rectangle in its colour (failed red, idle at its opacity; selected
    and deferred nodes get a 2 px outline). And its child items (name, icon, port circles and
    labels) are made fully transparent instead of hidden: Qt then skips them, their Python
    `paint` and `boundingRect` included, and presses go to the node, while NodeGraphQt's layout
    and pipes, which test `isVisible()`, see no change. With the item cache a node is painted,
    so switches, whenever the zoom changes.
    """

    @property
    def simple(self) -> bool:
        """True while the node is drawn as a plain rectangle."""
        return self._proxy_mode

    def draw_node(self) -> None:
        if self.scene() is not None:
            super().draw_node()

    def auto_switch_mode(self) -> None:
        pass  # decided in paint() from the painter's transform

    def set_proxy_mode(self, mode: bool) -> None:
        if mode is self._proxy_mode:
            return
        self._proxy_mode = mode
        self._x_item.proxy_mode = mode
        self._show_details()

    def _show_details(self) -> None:
        opacity = 0.0 if self._proxy_mode else 1.0
        for child in self.childItems():
            if child is not self._x_item:
                child.setOpacity(opacity)

    def _add_port(self, port: Any) -> Any:
        port = super()._add_port(port)
        if self._proxy_mode:  # a pin added while zoomed out
            self._show_details()
        return port

    def mouseDoubleClickEvent(self, event: Any) -> None:
        # NodeGraphQt edits the title on a double-click there; titles are not names here.
        viewer = self.viewer()
        if event.button() == Qt.MouseButton.LeftButton and viewer is not None:
            viewer.node_double_clicked.emit(self.id)
        QGraphicsItem.mouseDoubleClickEvent(self, event)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: Any) -> None:
        zoom = _zoom(painter, option)
        self.set_proxy_mode(zoom < SIMPLE_BELOW_ZOOM)
        if not self._proxy_mode:
            super().paint(painter, option, widget)
            return
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        rect = QRectF(0.0, 0.0, self._width, self._height)
        painter.fillRect(rect, QColor(*self.color))
        outline = SELECTED_OUTLINE if self.selected else None
        if outline is None and tuple(self.border_color[:3]) == DEFERRED_BORDER:
            outline = DEFERRED_BORDER
        if outline is not None:
            pen = QPen(QColor(*outline), 2.0)
            pen.setCosmetic(True)  # 2 px on screen whatever the zoom, inside the node
            painter.setPen(pen)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            inset = 1.0 / zoom
            painter.drawRect(rect.adjusted(inset, inset, -inset, -inset))
        painter.restore()


class _PatchPipeItem(PipeItem):
    """A link: below `SIMPLE_BELOW_ZOOM` a 1 px straight line in its colour without the direction
    arrow (made fully transparent), above it NodeGraphQt's curve and arrow."""

    def __init__(self) -> None:
        super().__init__()
        self.simple = False
        # Above node bodies (NodeGraphQt draws links below them), so that a link passing
        # behind a node never reads as a link to that node. Not selectable: a press on a node
        # under a link then reaches the node (and `_PatchViewer._items_near` puts links last).
        self.setZValue(PIPE_Z)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable, False)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: Any) -> None:
        simple = _zoom(painter, option) < SIMPLE_BELOW_ZOOM
        if simple is not self.simple:
            self.simple = simple
            self._dir_pointer.setOpacity(0.0 if simple else 1.0)
        if not simple:
            super().paint(painter, option, widget)
            return
        path = self.path()
        pen = QPen(self.pen().color(), 1.0)
        pen.setCosmetic(True)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        painter.setPen(pen)
        start = path.elementAt(0)
        painter.drawLine(QPointF(start.x, start.y), path.currentPosition())
        painter.restore()


class _PatchViewer(NodeViewer):
    """NodeGraphQt's viewer making `_PatchPipeItem` links, and taking a node or pin under the
    pointer before a link drawn over it."""

    def _items_near(
        self, pos: Any, item_type: Any = None, width: int = 20, height: int = 20
    ) -> list:
        items = super()._items_near(pos, item_type, width, height)
        return sorted(items, key=lambda item: isinstance(item, PipeItem))  # stable: z order kept

    def establish_connection(self, start_port: Any, end_port: Any) -> None:
        # NodeViewer.establish_connection with our pipe class.
        pipe = _PatchPipeItem()
        self.scene().addItem(pipe)
        pipe.set_connections(start_port, end_port)
        pipe.draw_path(pipe.input_port, pipe.output_port)
        if start_port.node.selected or end_port.node.selected:
            pipe.highlight()
        if not start_port.node.visible or not end_port.node.visible:
            pipe.hide()


class QtPatchNode(BaseNode):
    """A canvas node for one node spec: ports only, no embedded widgets."""

    __identifier__ = "patchbay"
    NODE_NAME = "node"
    SPEC_ID = ""

    def __init__(self) -> None:
        super().__init__(qgraphics_item=_PatchNodeItem)
        spec = LIBRARY.get(self.SPEC_ID)
        for pin in spec.inputs if spec is not None else ():
            self.add_input(pin.name, color=pin_color(pin.type))
        for out in spec.outputs if spec is not None else ():
            self.add_output(out.name, color=pin_color(out.type))
        self.set_port_deletion_allowed(True)


def _node_class(spec_id: str) -> type[QtPatchNode]:
    # The class name becomes the second half of NodeGraphQt's type: "patchbay.math.add".
    return type(spec_id, (QtPatchNode,), {"NODE_NAME": spec_id, "SPEC_ID": spec_id})


NODE_CLASSES = {spec_id: _node_class(spec_id) for spec_id in sorted(LIBRARY)}
# The view of a node whose type has no class here: a node pack's type loaded after this module,
# or a placeholder for a type that is not installed. Its ports come from the instance.
OTHER_NODE_CLASS = _node_class("other")


class _GestureGraph(NodeGraph):
    """A NodeGraph whose user gestures go to the canvas instead of changing the graph."""

    def __init__(self, canvas: QtPatchCanvas) -> None:
        # A private stack: nothing the view does is undoable by itself.
        stack = QUndoStack()
        super().__init__(undo_stack=stack, viewer=_PatchViewer(undo_stack=stack))
        self._canvas = canvas

    def get_unique_name(self, name: str) -> str:
        return name  # names are patch node ids, already unique

    def _on_connection_changed(self, disconnected: list, connected: list) -> None:
        if disconnected or connected:
            self._canvas._gesture_rewire(disconnected, connected)

    def _on_connection_sliced(self, ports: list) -> None:
        if ports:
            self._canvas._gesture_rewire(ports, [])

    def _on_nodes_moved(self, node_data: dict) -> None:
        self._canvas._gesture_move(node_data)

    def _on_search_triggered(self, node_type: str, pos: tuple[float, float]) -> None:
        if node_type.startswith(DEFINITION_TYPE):
            self._canvas.add_by_gesture("definition", node_type.removeprefix(DEFINITION_TYPE), pos)
        else:
            self._canvas.add_by_gesture("type", node_type.removeprefix("patchbay."), pos)

    def _on_node_data_dropped(self, mimedata: Any, pos: Any) -> None:
        # A node type or a definition dragged from the library; NodeGraphQt's own formats
        # (sessions, its node URNs) would change the view behind the Patch's back.
        payload = bytes(mimedata.data("nodegraphqt/nodes").data()).decode(errors="replace")
        _, kind, name = [*payload.split(":", 2), "", ""][:3]
        if kind in ("definition", "type"):
            self._canvas.add_by_gesture(kind, name, (pos.x(), pos.y()))

    def _on_node_name_changed(self, node_id: str, name: str) -> None:
        # Names are node ids; renaming on the canvas is not an edit. Put the id back.
        node = self.get_node_by_id(node_id)
        if node is not None:
            self._canvas._retitle(self._canvas.node_id_of(node))


class _InputFilter(QObject):
    """Finishes a progressive load before any press, wheel turn or drag-and-drop on the canvas
    reaches it (a frame asked for while loading moves the view when the load ends: a drop mapped
    before that would land away from the pointer, a zoom would be undone), opens the tab search
    when Tab is pressed over the canvas, enters the selected instance on Enter and leaves one
    level on Backspace or U (keys that reach the canvas only while it has the focus)."""

    PRESSES = (
        QEvent.Type.MouseButtonPress,
        QEvent.Type.MouseButtonDblClick,
        QEvent.Type.KeyPress,
        QEvent.Type.Wheel,
        QEvent.Type.DragEnter,
        QEvent.Type.DragMove,
        QEvent.Type.Drop,
    )

    def __init__(self, canvas: QtPatchCanvas) -> None:
        super().__init__(canvas)
        self._canvas = canvas

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in self.PRESSES:
            self._canvas.finish_loading()
        if event.type() in (QEvent.Type.ContextMenu, QEvent.Type.ToolTip):
            viewer = self._canvas.viewer()
            on_viewport = watched is viewer.viewport()
            if on_viewport and isinstance(event, QContextMenuEvent):
                self._canvas.menu_scene_pos = viewer.mapToScene(event.pos())
                return self._canvas._context_menu(event)
            elif on_viewport and isinstance(event, QHelpEvent):
                return self._canvas._show_pin_tooltip(event)
        if event.type() != QEvent.Type.KeyPress:
            return False
        key, plain = event.key(), event.modifiers() == Qt.KeyboardModifier.NoModifier
        if key == Qt.Key.Key_Tab:
            self._canvas.open_tab_search()
            return True
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            return self._canvas.enter_selected()
        if key in (Qt.Key.Key_Backspace, Qt.Key.Key_U) and plain:
            return self._canvas.leave()
        return False


class QtPatchCanvas(QObject):
    """Shows a Patch in a NodeGraphQt graph and turns gestures into undo commands."""

    refused = Signal(str)  # one-line reason of a refused gesture
    selection_changed = Signal(list)  # selected node ids
    level_changed = Signal()  # the canvas entered or left an instance

    LOAD_SLICE_S = 0.04  # building time per event-loop turn while a large patch loads

    def __init__(self, undo_stack: QUndoStack) -> None:
        super().__init__()
        self.stack = undo_stack
        self.graph = _GestureGraph(self)
        self.graph.set_acyclic(False)
        self.graph.register_nodes([*NODE_CLASSES.values(), OTHER_NODE_CLASS])
        viewer = self.graph.viewer()
        graph_menu = viewer.context_menus()["graph"]
        for action in (viewer.qaction_for_undo(), viewer.qaction_for_redo()):
            action.setShortcuts([])  # Ctrl+Z belongs to the app's stack
            graph_menu.removeAction(action)  # and so do the menu's Undo / Redo
        for action in graph_menu.actions():
            if action.isSeparator():
                graph_menu.removeAction(action)
        self._input_filter = _InputFilter(self)
        viewer.installEventFilter(self._input_filter)
        viewer.viewport().installEventFilter(self._input_filter)
        viewer._search_widget._fuzzy_finder = search_ranked  # exact words in the id first
        self.graph.node_selection_changed.connect(self._on_selection)
        self.graph.node_double_clicked.connect(self._on_double_click)
        self.document: Patch | None = None  # the patch given to set_patch
        self.patch: Patch | None = None  # what the canvas shows: the document or a body
        self.trail: list[str] = []  # ids of the instances entered, outermost first
        self._badges: dict[str, QGraphicsSimpleTextItem] = {}
        self._unsubscribe: Callable[[], None] | None = None
        self._views: dict[str, BaseNode] = {}  # node id -> canvas node
        self._ids: dict[str, str] = {}  # canvas node id (NodeGraphQt's) -> node id
        self._decor: dict[str, tuple[Any, ...]] = {}
        self._tints: dict[str, tuple[int, int, int]] = {}  # body colours over the class colours
        self._thumbnails: dict[str, QGraphicsPixmapItem] = {}
        self._applying = 0
        self._pending: deque[Callable[[], None]] = deque()  # build steps of a progressive load
        self._load_timer = QTimer(self)
        self._load_timer.setInterval(0)
        self._load_timer.timeout.connect(self._load_slice)
        self._progress = QProgressBar(self.graph.widget)
        self._progress.setFormat("Drawing the patch: %p%")
        self._progress.resize(260, 22)
        self._progress.move(12, 12)
        self._progress.hide()
        # A frame() asked for while loading: (node ids, readable).
        self._frame_request: tuple[list[str], bool] | None = None
        # (evaluator id, output pin) -> its current value, for pin tooltips; set by the editor.
        self.output_of: Callable[[str, str], Any] | None = None
        self.backdrops = BackdropLayer(self)
        self.menu_scene_pos: QPointF | None = None  # where the canvas menu was last asked for
        # Set by the editor: the menu of a node right-clicked (node id, global position), and
        # what brings the canvas menu's commands up to date before it shows.
        self.node_menu: Callable[[str, QPoint], None] | None = None
        self.before_canvas_menu: Callable[[], None] | None = None

    @property
    def widget(self) -> Any:
        return self.graph.widget

    def viewer(self) -> Any:
        return self.graph.viewer()

    # ------------------------------------------------------------------ patch -> view
    def set_patch(self, patch: Patch) -> None:
        """Show the document `patch` (replacing what was shown, at its top level) and follow its
        edits from now on.

        What is not built within one `LOAD_SLICE_S` is built from the event loop (see `loading`).
        """
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.document, self.trail = patch, []
        self._unsubscribe = patch.subscribe(self._on_patch_event)
        self._show(patch)

    def _show(self, patch: Patch) -> None:
        """Build the view of `patch` (the document or one of its bodies)."""
        self._pending.clear()  # the rest of a load still under way
        self._frame_request = None
        self._begin_load()
        self._applying += 1
        try:
            self.graph.clear_session()
            self._views.clear()
            self._ids.clear()
            self._decor.clear()
            self._tints.clear()
            self._thumbnails.clear()  # items gone with the session
            self._badges.clear()
            self.patch = patch
            self.backdrops.show(patch.backdrops.values())
        finally:
            self._applying -= 1
        self.graph.undo_stack().clear()
        self._pending.extend(partial(self._add_view, node_id) for node_id in patch.nodes)
        self._pending.extend(partial(self._link_view, link) for link in patch.links)
        self._progress.setRange(0, len(self._pending))
        self._load_slice()
        if self.loading:
            self._progress.show()
            self._progress.raise_()
            self._load_timer.start()

    @property
    def loading(self) -> bool:
        """True while part of the patch is still to be built on the canvas."""
        return bool(self._pending)

    def finish_loading(self) -> None:
        """Build what is left of a progressive load now, from the Patch as it is now."""
        if not self.loading:
            return
        self._pending.clear()
        self._applying += 1
        try:
            for node_id in self.patch.nodes:
                if node_id not in self._views:
                    self._add_view(node_id)
            for link in self.patch.links:
                self._link_view(link)
        finally:
            self._applying -= 1
        self._end_load()

    def _begin_load(self) -> None:
        # No repaint while building: with the whole patch in view one costs ~0.5 s at 2,000
        # nodes. (Turning the scene's BSP index off meanwhile saves nothing, and switching it
        # back after a load spread over event-loop turns left it answering every item.)
        self.viewer().setUpdatesEnabled(False)

    def _load_slice(self) -> None:
        deadline = time.perf_counter() + self.LOAD_SLICE_S
        self._applying += 1
        try:
            while self._pending:
                self._pending.popleft()()
                if time.perf_counter() >= deadline:
                    break
        finally:
            self._applying -= 1
        self._progress.setValue(self._progress.maximum() - len(self._pending))
        if not self._pending:
            self._end_load()

    def _end_load(self) -> None:
        self._load_timer.stop()
        self._progress.hide()
        self.viewer().setUpdatesEnabled(True)
        if self._frame_request is not None:
            (node_ids, readable), self._frame_request = self._frame_request, None
            self.frame(node_ids, readable=readable)

    def view_node(self, node_id: str) -> BaseNode:
        self.finish_loading()
        return self._views[node_id]

    def node_id_of(self, view_node: Any) -> str:
        return self._ids[view_node.id]

    # ------------------------------------------------------------------ levels
    @property
    def definition_name(self) -> str | None:
        """The definition whose body is shown; None at the document's top level."""
        return self.patch.name if self.patch is not None else None

    def eval_id(self, node_id: str) -> str:
        """The evaluator's id of a shown node: its path through the instances entered."""
        return "/".join([*self.trail, node_id])

    def node_under(self, viewport_pos: QPoint) -> str | None:
        """The id of the shown node under a point of the viewport (its body, title, pins or
        thumbnail), or None."""
        self.finish_loading()
        for item in self.viewer().items(viewport_pos):
            while item is not None and not isinstance(item, NodeItem):
                item = item.parentItem()
            if item is not None and item.id in self._ids:
                return self._ids[item.id]
        return None

    def _context_menu(self, event: QContextMenuEvent) -> bool:
        """A right-click: a node's own menu over a node, else NodeGraphQt's canvas menu, its
        commands enabled only where they can act. True when handled here."""
        node_id = self.node_under(event.pos())
        if node_id is not None and self.node_menu is not None:
            self.node_menu(node_id, event.globalPos())
            return True
        if self.before_canvas_menu is not None:
            self.before_canvas_menu()
        return False

    def node_at(self, path: str) -> NodeInstance | None:
        """The node an evaluator id (`blob1/lfo3`) names in the document, if there is one."""
        container: Patch | None = self.document
        *through, last = path.split("/")
        for instance_id in through:
            container = _body_of(container, instance_id)
        return container.nodes.get(last) if container is not None else None

    def instances_sharing(self, name: str) -> int:
        """How many instances (in the document and in bodies) use definition `name`."""
        document = self.document
        if document is None:
            return 0
        containers = (document, *document.definitions.values())
        return sum(container.instance_counts.get(name, 0) for container in containers)

    def enter(self, instance_id: str) -> bool:
        """Show the body of the shown instance `instance_id` (its definition, as reached through
        it); False if it is not an instance."""
        body = _body_of(self.patch, instance_id)
        if body is None:
            return False
        self.finish_loading()
        self.trail.append(instance_id)
        self._show(body)
        self.frame(None, readable=True)
        self.level_changed.emit()
        return True

    def enter_selected(self) -> bool:
        selected = self.selected_ids()
        return len(selected) == 1 and self.enter(selected[0])

    def leave(self) -> bool:
        """Show the patch holding the instance entered last (selected); False at the top."""
        return bool(self.trail) and self.go_to(len(self.trail) - 1)

    def go_to(self, depth: int) -> bool:
        """Show the level `depth` of the trail (0: the document's top level)."""
        if not 0 <= depth < len(self.trail):
            return False
        left = self.trail[depth]
        del self.trail[depth:]
        container = self.document
        for instance_id in self.trail:
            container = _body_of(container, instance_id)
        assert container is not None
        self._show(container)
        self.frame(None, readable=True)
        if left in container.nodes:
            self.select([left])
        self.level_changed.emit()
        return True

    def _check_trail(self) -> bool:
        """After an edit: if an instance entered (or its definition) is gone, or follows another
        definition now, show the deepest level still there; True if the level changed."""
        container: Patch | None = self.document
        for depth, instance_id in enumerate(self.trail):
            body = _body_of(container, instance_id)
            if body is None:
                del self.trail[depth:]
                break
            container = body
        if container is self.patch:
            return False
        assert container is not None
        self._show(container)
        # Said after this edit's event has reached every listener: an evaluator asked about the
        # new level from inside the event would not have seen the edit yet.
        QTimer.singleShot(0, self.level_changed.emit)
        return True

    def _on_double_click(self, view: Any) -> None:
        if view is not None and view.id in self._ids:
            self.enter(self._ids[view.id])

    # ------------------------------------------------------------------ titles and badges
    def _retitle(self, node_id: str) -> None:
        """Show the node's title (see `title_of`)."""
        view = self._views.get(node_id)
        if view is None:
            return
        title = title_of(self.patch.nodes[node_id])
        if view.view.name != title:
            view.view.name = title
            view.view.draw_node()

    def badge_text(self, node_id: str) -> str | None:
        """What the badge over a shown instance says (`blob ×3`), None for other nodes."""
        item = self._badges.get(node_id)
        return item.text() if item is not None else None

    def _badge(self, node_id: str) -> None:
        """Show over an instance its definition and how many instances share it."""
        inst = self.patch.nodes.get(node_id)  # None: removed, its view not yet
        view = self._views.get(node_id)
        if view is None or inst is None or inst.type_id != SUBPATCH:
            return
        name = str(inst.values.get("definition"))
        text = f"{name} ×{self.instances_sharing(name)}"
        item = self._badges.get(node_id)
        if item is None:
            item = QGraphicsSimpleTextItem(view.view)
            item.setBrush(QColor(*BADGE_COLOR))
            item.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
            item.setOpacity(0.0 if view.view.simple else 1.0)
            self._badges[node_id] = item
        if item.text() != text:
            item.setText(text)
            item.setToolTip(f"instance of {name}; {text.split('×')[1]} instance(s) share it")
        item.setPos(0.0, -item.boundingRect().height() - BADGE_GAP)

    def _refresh_badges(self) -> None:
        for node_id in list(self._badges):
            self._badge(node_id)

    def _on_patch_event(self, event: PatchEvent) -> None:
        if self.trail and self._check_trail():
            return  # the level shown was rebuilt from the Patch as it is now
        if event.op in DEFINITION_OPS or event.pin == "definition":
            self.graph.viewer().rebuild_tab_search()
            self._refresh_badges()
        elif self._badges and event.op in (EditOp.ADD_NODE, EditOp.REMOVE_NODE):
            self._refresh_badges()  # an instance may have come or gone somewhere
        if event.definition != self.definition_name:
            return  # an edit of another definition's body
        if event.kind == "value":
            if event.pin == "name":
                self._retitle(event.node_id)
            return
        # Finishing a load builds from the Patch, which already holds this edit: hence the
        # membership checks below.
        self.finish_loading()
        self._applying += 1
        try:
            if event.op == EditOp.ADD_NODE:
                if event.node_id not in self._views:
                    self._add_view(event.node_id)
            elif event.op == EditOp.REMOVE_NODE:
                self._remove_view(event.node_id)
            elif event.op == EditOp.CONNECT:
                self._link_view(event.link)
            elif event.op == EditOp.DISCONNECT:
                self._unlink_view(event.link)
            elif event.op == EditOp.PINS:
                self._sync_ports(event.node_id)
            elif event.op == EditOp.BACKDROP:
                self.backdrops.follow(event.value)
            elif event.op == EditOp.MOVE:
                pos = self.patch.nodes[event.node_id].pos
                view = self._views[event.node_id]
                if tuple(view.pos()) != pos:
                    view.set_property("pos", [float(pos[0]), float(pos[1])], push_undo=False)
        finally:
            self._applying -= 1

    def _add_view(self, node_id: str) -> None:
        inst = self.patch.nodes[node_id]
        view = self.graph.create_node(
            NODE_CLASSES.get(inst.type_id, OTHER_NODE_CLASS).type_,
            name=title_of(inst),
            pos=inst.pos,
            selected=False,
            push_undo=False,
        )
        self._views[node_id] = view
        self._ids[view.id] = node_id
        if (
            len(inst.inputs) != len(inst.spec.inputs)
            or inst.type_id == SUBPATCH
            or inst.type_id not in NODE_CLASSES  # a placeholder, a pack loaded since
            or inst.spec is not LIBRARY.get(inst.type_id)  # a pack reloaded since
        ):
            self._sync_ports(node_id)
        view.view.setToolTip(f"{node_id} ({inst.type_id})\n{inst.spec.summary}".strip())
        self._badge(node_id)
        if node_id in self._decor:
            self._show_decor(node_id)

    def _remove_view(self, node_id: str) -> None:
        self._decor.pop(node_id, None)
        self._thumbnails.pop(node_id, None)
        self._badges.pop(node_id, None)
        view = self._views.pop(node_id, None)
        if view is None:  # removed before a load had built it
            return
        self._ids.pop(view.id, None)
        self.graph.remove_node(view, push_undo=False)

    def _sync_ports(self, node_id: str) -> None:
        """Give the view the node's input pins and its spec's outputs (an instance's follow its
        definition)."""
        view = self._views[node_id]
        inst = self.patch.nodes[node_id]
        for ports, wanted, delete, add in (
            (view.inputs(), inst.inputs, view.delete_input, view.add_input),
            (view.outputs(), inst.spec.outputs, view.delete_output, view.add_output),
        ):
            names = {pin.name: pin for pin in wanted}
            for name, port in list(ports.items()):
                if name not in names:
                    for other in port.connected_ports():
                        other.disconnect_from(port, push_undo=False)
                    delete(port)
            for name, pin in names.items():
                if name not in ports:
                    add(name, color=pin_color(pin.type))

    def _ports(self, link: Link) -> tuple[Any, Any]:
        out_port = self._views[link.src].get_output(link.src_pin)
        in_port = self._views[link.dst].get_input(link.dst_pin)
        return out_port, in_port

    def _link_view(self, link: Link) -> None:
        out_port, in_port = self._ports(link)
        if out_port in in_port.connected_ports():
            if out_port.view not in in_port.view.connected_ports:
                self.viewer().establish_connection(out_port.view, in_port.view)
            return
        for other in in_port.connected_ports():
            other.disconnect_from(in_port, push_undo=False)
        out_port.connect_to(in_port, push_undo=False)  # from the output side

    def _unlink_view(self, link: Link) -> None:
        if link.src not in self._views or link.dst not in self._views:
            return
        out_port, in_port = self._ports(link)
        if out_port in in_port.connected_ports():
            out_port.disconnect_from(in_port, push_undo=False)

    # ------------------------------------------------------------------ pins and links shown
    simple_zoom = SIMPLE_BELOW_ZOOM  # below it nodes are plain rectangles (no pins to hover)

    def link_of_pipe(self, pipe: Any) -> Link | None:
        """The Patch link a pipe item draws (None: not one of the shown links)."""
        a, b = pipe.input_port, pipe.output_port
        if a is None or b is None or a.node.id not in self._ids or b.node.id not in self._ids:
            return None
        link = self._link_of(a, b)
        return link if self.patch.link_into(link.dst, link.dst_pin) == link else None

    def pin_of_port(self, port: Any) -> tuple[str, str] | None:
        """(node id, pin name) of a port item of a shown node."""
        node_id = self._ids.get(port.node.id)
        return (node_id, port.name) if node_id is not None else None

    def source_of(self, node_id: str, pin: str) -> tuple[str, str] | None:
        """The output whose value a shown pin carries: itself for an output, the linked output
        for a linked input, None for an input nothing feeds."""
        inst = self.patch.nodes.get(node_id)
        if inst is None:
            return None
        if inst.spec.output_index(pin) is not None:
            return node_id, pin
        link = self.patch.link_into(node_id, pin)
        return (link.src, link.src_pin) if link is not None else None

    def output_type(self, node_id: str, pin: str) -> str | None:
        inst = self.patch.nodes.get(node_id)
        index = inst.spec.output_index(pin) if inst is not None else None
        return inst.spec.outputs[index].type if index is not None else None

    # ------------------------------------------------------------------ view -> patch
    def _link_of(self, port_a: Any, port_b: Any) -> Link:
        in_item, out_item = (
            (port_a, port_b) if port_a.port_type == PortTypeEnum.IN.value else (port_b, port_a)
        )
        return Link(self._ids[out_item.node.id], out_item.name, self._ids[in_item.node.id],
                    in_item.name)  # fmt: skip

    def _gesture_rewire(self, disconnected: list, connected: list) -> None:
        if self._applying:
            return
        drop = [self._link_of(a, b) for a, b in disconnected]
        add = [self._link_of(a, b) for a, b in connected]
        present = set(self.patch.links)
        drop = list(dict.fromkeys(link for link in drop if link in present))
        add = [link for link in add if link not in present]
        if drop or add:
            command = RewireCommand(self.patch, drop, add)
            try:
                command.apply()
            except PatchError as error:
                self.refused.emit(str(error))
            else:
                self.stack.push(command)
        self._restore_pipes(disconnected)

    def _restore_pipes(self, pairs: Iterable[tuple[Any, Any]]) -> None:
        """Redraw pipes the viewer detached during a gesture that the Patch did not drop."""
        present = set(self.patch.links)
        for a, b in pairs:
            if self._link_of(a, b) in present and b not in a.connected_ports:
                self.viewer().establish_connection(a, b)

    def _gesture_move(self, node_data: dict) -> None:
        moves = {}
        for item, previous in node_data.items():
            node_id = self._ids.get(item.id)
            if node_id is None:
                continue
            old = (float(previous[0]), float(previous[1]))
            new = (float(item.xy_pos[0]), float(item.xy_pos[1]))
            if old != new:
                moves[node_id] = (old, new)
        if moves:
            self.stack.push(MoveNodesCommand(self.patch, moves))

    def create_node(self, type_id: str, pos: tuple[float, float]) -> str | None:
        """Create a node of `type_id` at scene position `pos` as one undo step; returns its id."""
        if type_id not in LIBRARY:
            self.refused.emit(f"unknown node type {type_id!r}")
            return None
        node_id = self.patch.new_id(type_id)
        record = NodeRecord(node_id, type_id, {}, (float(pos[0]), float(pos[1])))
        self.stack.push(AddNodesCommand(self.patch, [record], [], f"create {type_id}"))
        return node_id

    def create_instance(self, name: str, pos: tuple[float, float]) -> str | None:
        """Add an instance of definition `name` at scene position `pos` as one undo step."""
        patch = self.patch
        command = DocumentEditCommand(
            self.document,
            f"add an instance of {name}",
            lambda: patch.add_node(SUBPATCH, {"definition": name}, (float(pos[0]), float(pos[1]))),
        )
        try:
            command.apply()
        except PatchError as error:
            self.refused.emit(str(error))
            return None
        self.stack.push(command)
        return str(command.result)

    def add_by_gesture(self, kind: str, name: str, pos: tuple[float, float]) -> str | None:
        """Add a node of type `name` (`kind` "type") or an instance of definition `name`
        ("definition") where a gesture put it (the pointer, a drop): at `pos`, or the nearest spot
        on no other node; selected, so the inspector shows it."""
        spot = free_position(self.node_rects(), pos)
        if kind == "definition":
            node_id = self.create_instance(name, spot)
        else:
            node_id = self.create_node(name, spot)
        if node_id is not None:
            self.select([node_id])
        return node_id

    def open_tab_search(self) -> None:
        """Show NodeGraphQt's tab search at the cursor (node types and the document's
        definitions); the choice arrives in create_node or create_instance."""
        self.finish_loading()
        viewer = self.viewer()
        # The library's types (NodeGraphQt registers its own, Backdrop, too; node packs may have
        # added types since the canvas classes were made), each named with its summary, which
        # typing matches as well: create_node makes them.
        names = {search_name(type_id): [f"patchbay.{type_id}"] for type_id in sorted(LIBRARY)}
        for name in self.document.definitions if self.document is not None else ():
            names[f"{name} - definition"] = [DEFINITION_TYPE + name]
        viewer.tab_search_set_nodes(names)
        viewer.tab_search_toggle()

    # ------------------------------------------------------------------ selection and framing
    def _on_selection(self, *_: Any) -> None:
        self.selection_changed.emit(self.selected_ids())

    def selected_ids(self) -> list[str]:
        return [self._ids[n.id] for n in self.graph.selected_nodes() if n.id in self._ids]

    def select(self, node_ids: Iterable[str]) -> None:
        self.finish_loading()
        for view in self._views.values():
            view.set_property("selected", False, push_undo=False)
        for node_id in node_ids:
            self._views[node_id].set_property("selected", True, push_undo=False)
        self._on_selection()

    def frame(self, node_ids: Iterable[str] | None = None, *, readable: bool = False) -> None:
        """Fit the view to the given nodes (all when None or empty); while loading, once built.
        `readable` (a patch or level opened): not below `readable_zoom`, so that titles can be
        read; the view then shows the start of the patch (left, top)."""
        if self.loading:
            self._frame_request = (list(node_ids or ()), readable)
            return
        views = [self._views[n] for n in (node_ids or ()) if n in self._views]
        views = views or list(self._views.values())
        if not views:
            if readable:  # an empty patch: 100 %, the origin near the top left
                self._show_at_full_size()
            return
        rect = QRectF()
        for view in views:
            rect = rect.united(view.view.sceneBoundingRect())
        rect.adjust(-60, -60, 60, 60)
        viewer = self.viewer()
        least = self.readable_zoom()
        port = viewer.viewport().rect()
        if readable and min(port.width() / rect.width(), port.height() / rect.height()) < least:
            # Along a side that does not fit, the start of the patch (its sources, on the left).
            # (fitInView keeps a 2 px margin on each side.)
            shown = QRectF(0.0, 0.0, (port.width() - 4) / least, (port.height() - 4) / least)
            shown.moveCenter(rect.center())
            if shown.width() < rect.width():
                shown.moveLeft(rect.left())
            if shown.height() < rect.height():
                shown.moveTop(rect.top())
            rect = shown
        viewer.set_scene_rect([rect.x(), rect.y(), rect.width(), rect.height()])
        viewer.fitInView(rect, Qt.AspectRatioMode.KeepAspectRatio)
        viewer._update_scene()

    def _show_at_full_size(self) -> None:
        """Zoom to 100 % with the scene's origin near the viewport's top left."""
        viewer = self.viewer()
        port = viewer.viewport().rect()
        # fitInView keeps 2 px on each side: a rect 4 px smaller than the viewport is 100 %.
        rect = QRectF(-80.0, -80.0, port.width() - 4.0, port.height() - 4.0)
        viewer.set_scene_rect([rect.x(), rect.y(), rect.width(), rect.height()])

    def zoom(self) -> float:
        """The view's scale (1.0: 100 %)."""
        return float(self.viewer().transform().m11())

    def readable_zoom(self) -> float:
        """The least zoom at which a node title is `READABLE_TITLE_PX` tall on screen."""
        some = next(iter(self._views.values()), None)
        font = some.view._text_item.font() if some is not None else self.graph.widget.font()
        return READABLE_TITLE_PX / QFontMetricsF(font).height()

    def view_center(self) -> tuple[float, float]:
        self.finish_loading()  # a pending frame() moves the view
        viewer = self.viewer()
        center = viewer.mapToScene(viewer.viewport().rect().center())
        return center.x(), center.y()

    def node_rects(self) -> list[tuple[float, float, float, float]]:
        """(x, y, width, height) in the scene of every shown node, its thumbnail included."""
        return list(self.node_rects_by_id().values())

    def node_rects_by_id(self) -> dict[str, tuple[float, float, float, float]]:
        """`node_rects` by node id."""
        self.finish_loading()
        rects = {}
        for node_id, view in self._views.items():
            rect = view.view.sceneBoundingRect()
            thumbnail = self._thumbnails.get(node_id)
            if thumbnail is not None:
                rect = rect.united(thumbnail.sceneBoundingRect())
            rects[node_id] = (rect.x(), rect.y(), rect.width(), rect.height())
        return rects

    def move_clear_of_others(self, node_ids: Iterable[str]) -> None:
        """Shift the shown nodes `node_ids` together, by the least amount (app.session.placement)
        at which none of them lies on another node: what was just duplicated, pasted or
        ungrouped keeps its own layout but hides nothing. Position edits of the shown patch: the
        caller makes them part of its undo step."""
        rects = self.node_rects_by_id()
        moving = [node_id for node_id in node_ids if node_id in rects]
        others = [rect for node_id, rect in rects.items() if node_id not in moving]
        dx, dy = free_offset(others, [rects[node_id] for node_id in moving], (0.0, 0.0))
        if (dx, dy) == (0.0, 0.0):
            return
        for node_id in moving:
            x, y = self.patch.nodes[node_id].pos
            self.patch.set_position(node_id, (x + dx, y + dy))

    def port_scene_pos(self, node_id: str, pin: str, output: bool) -> QPointF:
        view = self.view_node(node_id)
        port = view.get_output(pin) if output else view.get_input(pin)
        return port.view.sceneBoundingRect().center()

    # ------------------------------------------------------------------ evaluation state
    def decorate(
        self, node_id: str, node_class: NodeClass, status: NodeStatus, error: str | None
    ) -> None:
        """Colour a node by its class and status; failed red with the message as tooltip.

        A node not built yet (while loading) is decorated when it is built."""
        key = (node_class, status, error)
        if self._decor.get(node_id) == key or node_id not in self.patch.nodes:
            return
        self._decor[node_id] = key
        if node_id in self._views:
            self._show_decor(node_id)

    def set_tints(self, tints: dict[str, tuple[int, int, int]]) -> None:
        """Body colours (RGB) shown instead of the class colours, by shown node id: the
        profiler's heat tint. Failed nodes stay red; `{}` gives every node its class colour back."""
        changed = {n for n in set(self._tints) | set(tints) if self._tints.get(n) != tints.get(n)}
        self._tints = dict(tints)
        for node_id in changed:
            if node_id in self._views and node_id in self._decor:
                self._show_decor(node_id)

    def body_color(self, node_id: str) -> tuple[int, int, int]:
        """The body colour a shown node has now (RGB)."""
        self.finish_loading()
        red, green, blue, *_ = self._views[node_id].color()
        return red, green, blue

    def _show_decor(self, node_id: str) -> None:
        node_class, status, error = self._decor[node_id]
        view = self._views[node_id]
        inst = self.patch.nodes[node_id]
        failed = status == NodeStatus.FAILED
        class_color = CLASS_COLORS.get(node_class, (60, 60, 60))
        color = FAILED_COLOR if failed else self._tints.get(node_id, class_color)
        view.set_property("color", (*color, 255), push_undo=False)
        item = view.view
        deferred = status == NodeStatus.DEFERRED
        item.border_color = (*DEFERRED_BORDER, 255) if deferred else (74, 84, 85, 255)
        item.setOpacity(IDLE_OPACITY if status == NodeStatus.IDLE else 1.0)
        tip = f"{node_id} ({inst.type_id}) · {node_class} · {status}\n{inst.spec.summary}"
        if error:
            tip += f"\n{error}"
        item.setToolTip(tip)
        item.update()

    # ------------------------------------------------------------------ pin tooltips
    def pin_at(self, viewport_pos: QPoint) -> tuple[str, str, bool] | None:
        """(node id, pin name, is output) of the pin under a viewport position, if any."""
        viewer = self.viewer()
        for item in viewer.items(viewport_pos):
            if isinstance(item, PortItem) and item.node is not None and item.node.id in self._ids:
                output = item.port_type == PortTypeEnum.OUT.value
                return self._ids[item.node.id], item.name, output
        return None

    def pin_tooltip(self, node_id: str, pin: str, output: bool) -> str:
        """What hovering a pin says: its name and type, its sentence, and its current value."""
        inst = self.patch.nodes[node_id]
        specs = inst.spec.outputs if output else inst.inputs
        pin_type = next((p.type for p in specs if p.name == pin), "?")
        if output:
            value = self._output(node_id, pin)
            source = ""
        else:
            link = self.patch.link_into(node_id, pin)
            value = self._output(link.src, link.src_pin) if link else inst.values.get(pin)
            source = f" (from {link.src}.{link.src_pin})" if link else ""
        doc = pin_doc(inst.spec, pin) or f"A pin of a {inst.type_id} node."
        lines = [
            f"{'output' if output else 'input'} {pin}: {pin_type}",
            doc,
            f"value{source}: {describe_value(value)}",
        ]
        return "\n".join(lines)

    def _output(self, node_id: str, pin: str) -> Any:
        if self.output_of is None:
            return None
        try:
            return self.output_of(self.eval_id(node_id), pin)
        except LookupError:  # not evaluated yet
            return None

    def _show_pin_tooltip(self, event: QHelpEvent) -> bool:
        found = self.pin_at(event.pos())
        if found is None:
            return False
        QToolTip.showText(event.globalPos(), self.pin_tooltip(*found), self.viewer().viewport())
        return True

    # ------------------------------------------------------------------ thumbnails
    def thumbnail_candidates(self, node_ids: Iterable[str]) -> list[str]:
        """Those of `node_ids` whose body is in the viewport; none while loading or while nodes
        are drawn as plain rectangles (zoomed out below `SIMPLE_BELOW_ZOOM`)."""
        viewer = self.viewer()
        if self.loading or viewer.transform().m11() < SIMPLE_BELOW_ZOOM:
            return []
        shown = viewer.mapToScene(viewer.viewport().rect()).boundingRect()
        return [
            node_id
            for node_id in node_ids
            if node_id in self._views
            and self._views[node_id].view.sceneBoundingRect().intersects(shown)
        ]

    def set_thumbnail(self, node_id: str, image: QImage | None) -> None:
        """Show `image` centred under the node's body (None removes it), over a checkerboard
        where it is transparent."""
        view = self._views.get(node_id)
        item = self._thumbnails.get(node_id)
        if image is None or view is None:
            if item is not None:
                self._thumbnails.pop(node_id)
                item.setParentItem(None)
                if item.scene() is not None:
                    item.scene().removeItem(item)
            return
        node_item = view.view
        if item is None:
            item = QGraphicsPixmapItem(node_item)
            item.setTransformationMode(Qt.TransformationMode.SmoothTransformation)
            item.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
            item.setOpacity(0.0 if node_item.simple else 1.0)
            self._thumbnails[node_id] = item
        shown = over_checkerboard(image) if image.hasAlphaChannel() else image
        item.setPixmap(QPixmap.fromImage(shown))
        rect = node_item.boundingRect()
        item.setPos(rect.center().x() - image.width() / 2, rect.bottom() + THUMBNAIL_GAP)

    def thumbnail_item(self, node_id: str) -> QGraphicsPixmapItem | None:
        """The item showing the node's thumbnail, if it has one."""
        return self._thumbnails.get(node_id)


def search_name(type_id: str) -> str:
    """How tab search lists a node type: its id and its summary."""
    spec = LIBRARY.get(type_id)
    return f"{type_id}{SEARCH_SEPARATOR}{spec.summary}" if spec and spec.summary else type_id


def search_ranked(typed: str, names: Iterable[str]) -> list[str]:
    """The tab search's names (`type id — summary`) that match `typed`, best first: an id with a
    word equal to it (`level`: audio.level), an id with a word starting with it (gpu.levels), an id
    containing it, one whose letters come in order in the id, then the summaries' matches (as
    words, contained, letters in order). Ties: shorter ids first, then by name. Case is ignored;
    what NodeGraphQt's own finder matched (letters in order anywhere) is all still listed."""
    key = typed.strip().lower()
    if not key:
        return []
    letters = re.compile(".*?".join(re.escape(c) for c in key))
    ranked = []
    for name in names:
        lowered = name.lower()
        type_id, _, summary = lowered.partition(SEARCH_SEPARATOR.lower())
        words = [w for w in re.split(r"[._\s\-/]+", type_id) if w]
        summary_words = re.findall(r"[a-z0-9]+", summary)
        if key == type_id or key in words:
            tier = 0
        elif any(w.startswith(key) for w in words):
            tier = 1
        elif key in type_id:
            tier = 2
        elif letters.search(type_id):
            tier = 3
        elif key in summary_words:
            tier = 4
        elif key in summary:
            tier = 5
        elif letters.search(lowered):
            tier = 6
        else:
            continue
        ranked.append((tier, len(type_id), name))
    return [name for _tier, _length, name in sorted(ranked)]


def describe_value(value: Any) -> str:
    """A value in a few words: numbers, short text, an array's shape, a texture's size."""
    if value is None:
        return "none yet"
    if isinstance(value, np.ndarray):
        return f"array {value.shape} {value.dtype}"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return f"{value:.6g}"
    if isinstance(value, tuple) and all(isinstance(v, (int, float)) for v in value):
        return "(" + ", ".join(f"{v:.4g}" for v in value) + ")"
    texture = getattr(value, "texture", value)
    size = getattr(texture, "size", None)
    if hasattr(texture, "glo") and size is not None:
        return f"texture {size[0]}×{size[1]}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def title_of(inst: NodeInstance) -> str:
    """A node's title on the canvas: its id and its type (`lfo3 · time.lfo`, `wave · math.sin`;
    an instance's type is its definition's badge); an inlet or outlet shows the pin name it
    gives."""
    if inst.type_id in (INLET, OUTLET):
        return f"{'in' if inst.type_id == INLET else 'out'}: {inst.values.get('name')}"
    if inst.type_id == SUBPATCH:
        return inst.id
    return f"{inst.id} · {inst.type_id}"


def _body_of(container: Patch | None, instance_id: str) -> Patch | None:
    """The body an instance in `container` follows (None: no such instance)."""
    inst = container.nodes.get(instance_id) if container is not None else None
    if inst is None or inst.type_id != SUBPATCH:
        return None
    return container.definitions.get(str(inst.values.get("definition")))
