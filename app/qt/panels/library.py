"""The node palette: every node type of the library by category, with a filter field, and the
document's definitions.

Double-clicking a type emits `create_requested(type_id)`; the editor creates the node near the
middle of the canvas, on no other node. Enter in the filter field does the same for the first
item the filter leaves (a definition or a node type, in the order shown). The "Definitions"
section lists the document's definitions with how many instances use each (`set_definitions`);
double-clicking one emits `instance_requested(name)`, and its context menu asks to rename or
remove it (`rename_requested`, `remove_requested`).
Items can also be dragged onto the canvas (`drag_payload` is what they carry). Tab search on the
canvas itself is NodeGraphQt's (see qt_canvas.py); this panel is the browsable alternative and
shows how each type runs: its determinism and the canvas class (CONST / USER / HOT) it
leads to (`class_words`).

Each node type's one-sentence summary is its tooltip and shows in the description line under the
tree for the item under the pointer (or, with none, the current item). `help_type()` is the type
the person points at, for F1; the context menu of a type offers "Help" (`help_requested`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from PySide6.QtCore import QEvent, QMimeData, QObject, QPoint, Qt, Signal
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import (
    QLabel,
    QLineEdit,
    QMenu,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.qt.panels.help import class_words, determinism_words
from nodes import LIBRARY

TYPE_ROLE = Qt.ItemDataRole.UserRole
DEFINITION_ROLE = Qt.ItemDataRole.UserRole + 1
DEFINITIONS = "Definitions"
DRAG_MIME = "nodegraphqt/nodes"  # the format the canvas accepts drops of


def drag_payload(kind: str, name: str) -> str:
    """What a dragged item carries: `patchbay:type:math.add` or `patchbay:definition:blob`."""
    return f"patchbay:{kind}:{name}"


class _Tree(QTreeWidget):
    """The tree, whose type and definition items drag onto the canvas."""

    def mimeData(self, items: Sequence[QTreeWidgetItem]) -> QMimeData:
        data = QMimeData()
        for item in items[:1]:
            definition, type_id = item.data(0, DEFINITION_ROLE), item.data(0, TYPE_ROLE)
            if definition:
                data.setData(DRAG_MIME, drag_payload("definition", definition).encode())
            elif type_id:
                data.setData(DRAG_MIME, drag_payload("type", type_id).encode())
        return data


class QtLibraryPanel(QWidget):
    """A filterable tree of node types and of the document's definitions."""

    create_requested = Signal(str)
    instance_requested = Signal(str)  # definition name
    rename_requested = Signal(str)
    remove_requested = Signal(str)
    help_requested = Signal(str)  # node type id

    def __init__(self) -> None:
        super().__init__()
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter node types…")
        self.tree = _Tree()
        self.tree.setHeaderLabels(["Node type", "Runs"])
        self.tree.setDragEnabled(True)
        self.tree.setMouseTracking(True)
        self.description = QLabel()
        self.description.setWordWrap(True)
        self.description.setStyleSheet("color: #b8c0c8; padding: 2px;")
        self.description.setMinimumHeight(self.description.fontMetrics().lineSpacing() * 3)
        self.description.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.filter)
        layout.addWidget(self.tree)
        layout.addWidget(self.description)
        self._hovered_type: str | None = None  # the type under the pointer
        self.definitions = QTreeWidgetItem(self.tree, [DEFINITIONS])
        self.definitions.setToolTip(0, "This patch's definitions: double-click adds an instance")
        self.definitions.setHidden(True)
        self._categories: list[QTreeWidgetItem] = []
        self.show_types()
        self.tree.itemDoubleClicked.connect(self._activated)
        self.tree.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(self._context_menu)
        self.filter.textChanged.connect(self._apply_filter)
        self.filter.returnPressed.connect(self.activate_first_match)
        self.tree.itemEntered.connect(self._on_item_entered)
        self.tree.currentItemChanged.connect(lambda *_: self._describe(self.tree.currentItem()))
        self.tree.viewport().installEventFilter(self)

    def show_types(self) -> None:
        """List the library's node types by category (again, after node packs changed it),
        keeping the filter."""
        for category in self._categories:
            self.tree.invisibleRootItem().removeChild(category)
        categories: dict[str, QTreeWidgetItem] = {}
        for type_id in sorted(LIBRARY):
            spec = LIBRARY[type_id]
            parent = categories.get(spec.category)
            if parent is None:
                parent = categories[spec.category] = QTreeWidgetItem(self.tree, [spec.category])
            item = QTreeWidgetItem(parent, [type_id, class_words(spec)])
            item.setToolTip(1, determinism_words(spec))
            item.setData(0, TYPE_ROLE, type_id)
            item.setToolTip(0, f"{spec.summary or type_id}\nF1: help and an example")
        self._categories = list(categories.values())
        self._hovered_type = None
        self.tree.expandAll()
        self.tree.resizeColumnToContents(0)
        self._apply_filter(self.filter.text())

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is not self.tree.viewport():
            return False
        left = event.type() == QEvent.Type.Leave
        off_items = (
            isinstance(event, QMouseEvent)
            and event.type() == QEvent.Type.MouseMove
            and self.tree.itemAt(event.position().toPoint()) is None
        )
        if left or off_items:
            self._hovered_type = None
            self._describe(self.tree.currentItem())
        return False

    def _on_item_entered(self, item: QTreeWidgetItem) -> None:
        type_id = item.data(0, TYPE_ROLE)
        self._hovered_type = str(type_id) if type_id else None
        self._describe(item)

    def _describe(self, item: QTreeWidgetItem | None) -> None:
        """Show the summary of the type `item` names in the description line."""
        type_id = item.data(0, TYPE_ROLE) if item is not None else None
        spec = LIBRARY.get(type_id) if type_id else None
        self.description.setText(f"<b>{type_id}</b>: {spec.summary}" if spec else "")

    def help_type(self) -> str | None:
        """The node type the person points at: the item under the pointer, else the current one
        while the tree has the focus."""
        if self._hovered_type is not None:
            return self._hovered_type
        current = self.tree.currentItem() if self.tree.hasFocus() else None
        type_id = current.data(0, TYPE_ROLE) if current is not None else None
        return str(type_id) if type_id else None

    def set_definitions(self, counts: Mapping[str, int]) -> None:
        """List these definitions (name -> instances using it), in order."""
        shown = [self.definitions.child(i).data(0, DEFINITION_ROLE)
                 for i in range(self.definitions.childCount())]  # fmt: skip
        if shown == list(counts) and all(
            self.definitions.child(i).text(1) == _uses(counts[name]) for i, name in enumerate(shown)
        ):
            return
        self.definitions.takeChildren()
        for name, count in counts.items():
            item = QTreeWidgetItem(self.definitions, [name, _uses(count)])
            item.setData(0, DEFINITION_ROLE, name)
            item.setToolTip(0, f"definition {name}: double-click or drag to add an instance")
        self.definitions.setExpanded(True)
        self._apply_filter(self.filter.text())

    def definition_item(self, name: str) -> QTreeWidgetItem | None:
        for index in range(self.definitions.childCount()):
            item = self.definitions.child(index)
            if item.data(0, DEFINITION_ROLE) == name:
                return item
        return None

    def _activated(self, item: QTreeWidgetItem) -> None:
        definition, type_id = item.data(0, DEFINITION_ROLE), item.data(0, TYPE_ROLE)
        if definition:
            self.instance_requested.emit(definition)
        elif type_id:
            self.create_requested.emit(type_id)

    def first_match(self) -> QTreeWidgetItem | None:
        """The first definition or node type the filter leaves shown."""
        for index in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(index)
            if group.isHidden():
                continue
            for child_index in range(group.childCount()):
                child = group.child(child_index)
                if not child.isHidden():
                    return child
        return None

    def activate_first_match(self) -> None:
        item = self.first_match()
        if item is not None:
            self.tree.setCurrentItem(item)
            self._activated(item)

    def _context_menu(self, pos: QPoint) -> None:
        item = self.tree.itemAt(pos)
        type_id = item.data(0, TYPE_ROLE) if item is not None else None
        if type_id:
            menu = QMenu(self)
            menu.addAction("Help", lambda: self.help_requested.emit(type_id))
            menu.popup(self.tree.viewport().mapToGlobal(pos))
            return
        name = item.data(0, DEFINITION_ROLE) if item is not None else None
        if not name:
            return
        menu = QMenu(self)
        menu.addAction("Add an instance", lambda: self.instance_requested.emit(name))
        menu.addAction("Rename…", lambda: self.rename_requested.emit(name))
        menu.addAction("Remove", lambda: self.remove_requested.emit(name))
        menu.popup(self.tree.viewport().mapToGlobal(pos))

    def _apply_filter(self, text: str) -> None:
        needle = text.strip().lower()
        for index in range(self.tree.topLevelItemCount()):
            category = self.tree.topLevelItem(index)
            shown = 0
            for child_index in range(category.childCount()):
                child = category.child(child_index)
                hidden = bool(needle) and needle not in child.text(0).lower()
                child.setHidden(hidden)
                shown += not hidden
            category.setHidden(shown == 0)


def _uses(count: int) -> str:
    return f"×{count}"
