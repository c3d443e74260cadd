"""The node palette: every node type of the library by category, with a filter field.

Double-clicking a type emits `create_requested(type_id)`; the editor
creates the node in the middle of the canvas. Tab search on the canvas itself is NodeGraphQt's
(see qt_canvas.py); this panel is the browsable alternative and shows each type's determinism.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLineEdit, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from nodes import LIBRARY

TYPE_ROLE = Qt.ItemDataRole.UserRole


class QtLibraryPanel(QWidget):
    """A filterable tree of node types."""

    create_requested = Signal(str)

    def __init__(self) -> None:
        super().__init__()
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter node types…")
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Node type", "Runs"])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.filter)
        layout.addWidget(self.tree)
        categories: dict[str, QTreeWidgetItem] = {}
        for type_id in sorted(LIBRARY):
            spec = LIBRARY[type_id]
            parent = categories.get(spec.category)
            if parent is None:
                parent = categories[spec.category] = QTreeWidgetItem(self.tree, [spec.category])
            item = QTreeWidgetItem(parent, [type_id, spec.determinism.value])
            item.setData(0, TYPE_ROLE, type_id)
            item.setToolTip(0, spec.doc or type_id)
        self.tree.expandAll()
        self.tree.resizeColumnToContents(0)
        self.tree.itemDoubleClicked.connect(self._activated)
        self.filter.textChanged.connect(self._apply_filter)

    def _activated(self, item: QTreeWidgetItem) -> None:
        type_id = item.data(0, TYPE_ROLE)
        if type_id:
            self.create_requested.emit(type_id)

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
