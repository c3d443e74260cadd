"""The breadcrumb bar above the canvas: where the canvas is, `patch / blob1 / inner2`.

Each level is a button that shows it again (the document's top level first, then each instance
entered, with its definition's name). While the canvas is inside a definition the bar says how
many instances an edit there affects, and it is highlighted so that the level is never missed.
The bar only reads the canvas (`trail`, `instances_sharing`) and follows its `level_changed`;
the editor calls `refresh` after edits that may change the count.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QWidget

from app.qt.canvas.canvas import QtPatchCanvas

INSIDE_STYLE = "background: #2d3b55; color: white;"


class QtBreadcrumbBar(QWidget):
    """`patch / blob1 / inner2` buttons and, inside a definition, "affects N instances"."""

    def __init__(self, canvas: QtPatchCanvas) -> None:
        super().__init__()
        self.canvas = canvas
        self.setObjectName("breadcrumbs")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(6, 2, 6, 2)
        self._layout.setSpacing(2)
        self.buttons: list[QPushButton] = []
        self.affects = QLabel()
        canvas.level_changed.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        """Show the canvas's level now (nothing is rebuilt when nothing it shows changed)."""
        canvas = self.canvas
        container = canvas.document
        labels = ["patch"]
        for instance_id in canvas.trail:
            inst = container.nodes.get(instance_id) if container is not None else None
            name = str(inst.values.get("definition")) if inst is not None else "?"
            labels.append(f"{instance_id} ({name})")
            container = container.definitions.get(name) if container is not None else None
        inside = canvas.definition_name
        affects = ""
        if inside is not None:
            count = canvas.instances_sharing(inside)
            affects = f"editing definition {inside}: affects {count} instance"
            affects += "s" if count != 1 else ""
        if labels == [button.text() for button in self.buttons] and affects == self.affects.text():
            return
        while self._layout.count():
            item = self._layout.takeAt(0)
            widget = item.widget()
            if widget is not None and widget is not self.affects:
                widget.hide()
                widget.deleteLater()
        self.buttons = []
        for depth, label in enumerate(labels):
            if depth:
                self._add(QLabel("/"))
            button = QPushButton(label)
            button.setFlat(True)
            button.setEnabled(depth < len(labels) - 1)  # the level shown is not a link
            button.clicked.connect(lambda _=False, d=depth: canvas.go_to(d))
            self._add(button)
            self.buttons.append(button)
        self._layout.addStretch(1)
        self._add(self.affects)
        self.affects.setText(affects)
        inside_style = f"#breadcrumbs {{{INSIDE_STYLE}}} QLabel, QPushButton {{color: white;}}"
        self.setStyleSheet(inside_style if inside is not None else "")
        self._layout.activate()  # laid out now: what is drawn next is the new trail

    def _add(self, widget: QWidget) -> None:
        self._layout.addWidget(widget)
        widget.show()  # now, not when the layout's queued show comes (a grab may come first)

    def text(self) -> str:
        """The trail as shown, `patch / blob1 (blob)`."""
        return " / ".join(button.text() for button in self.buttons)
