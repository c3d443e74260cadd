"""The inspector: the selected node's inputs, each editable live, plus its class, status and error.

Widgets are chosen once per pin from the pin's UI hint and type by the editor's pin-type table
(app.qt.pin_types): a slider with a number field for `slider` pins, a check box for `toggle` and
bool pins, number fields for numbers and 2- and 3-vectors, a swatch that opens a colour dialog
(with alpha) beside r, g, b, a fields for colours, a drop-down for text pins with choices, a line
with a Browse button (opening in the patch's folder) for files, a line edit for other text,
and a GLSL editor across the panel's width for `code` pins (app.qt.panels.code_editor: applied after
a pause in typing or on Ctrl+Enter, one undo step each, the node's compile error marked at its
line). The inspector is the widgets' `PinEditorHost`. Linked inputs show where they come from and
are not editable.

The inspector never writes to the Patch. It emits `value_edited(node_id, pin, value, gesture)`;
the editor turns that into an undoable command. A slider drag carries one gesture token from press
to release, so the whole drag merges into one undo step. `refresh_values` puts Patch values back
into the widgets (after undo, say) with their signals blocked, so nothing echoes.

Bindings: right-click a float, int or bool input (its name or its field) for "Learn MIDI/OSC…",
"Bind to OSC address…" and, when it is bound, "Remove binding"; the inspector only emits the
request (`learn_requested`, `bind_osc_requested`, `unbind_requested`). A bound pin's name carries
a mark with its sources (`◉ midi:cc:1:7`); the pin that learn waits for is highlighted
(`set_learning`). Pins the live-control runtime writes (hint "live") are shown, not edited.
Hovering an input's name shows its sentence (app.qt.panels.help.pin_doc) and its bindings.

A subpatch inlet's `default` is stored untyped; the inspector edits it with the widget of the pin
the inlet gives its instances (nodes.document.definitions.inlet_pin: the type of what it feeds
inside, else a float) and shows the default in force (an unset one follows the pin it feeds).
The pin last clicked or focused is the inspector's `chosen_pin` (what the presets panel adds).
"""

from __future__ import annotations

import dataclasses
import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, Signal
from PySide6.QtGui import QContextMenuEvent
from PySide6.QtWidgets import QFormLayout, QLabel, QMenu, QPushButton, QVBoxLayout, QWidget

from app.qt.panels.bindings import bindable, binding_menu, bindings_of
from app.qt.panels.code_editor import QtCodeField
from app.qt.panels.help import pin_doc
from app.qt.pin_types import editor_for
from nodes import Patch, PinSpec
from nodes.document.definitions import INLET, inlet_pin

BOUND_COLOR = "#6ab0ff"
LEARNING_STYLE = "background: #4a3a08; color: #ffe9a0; border: 1px solid #e0b030; padding: 2px;"


class QtInspector(QWidget):
    """Edits the input values of one node."""

    value_edited = Signal(str, str, object, object)  # node id, pin, value, gesture token or None
    retry_requested = Signal(str)  # node id: run a node bypassed for taking too long again
    learn_requested = Signal(str, str)  # node id, pin: bind it to the next control moved
    bind_osc_requested = Signal(str, str)  # node id, pin: bind it to an OSC address typed
    unbind_requested = Signal(str, str)  # node id, pin: remove its bindings

    def __init__(self) -> None:
        super().__init__()
        self.patch: Patch | None = None
        self.node_id: str | None = None
        self._setters: dict[str, Callable[[Any], None]] = {}
        self._labels: dict[str, QLabel] = {}  # pin -> its name in the form
        self.bindings_enabled = True  # False while the inspected node is a definition's
        self.learning: tuple[str, str] | None = None  # the pin learn waits for
        self.menu: QMenu | None = None  # the last pin menu opened
        self._code_fields: dict[str, QtCodeField] = {}
        self._reusable: dict[str, QtCodeField] = {}  # while set_node rebuilds the same node
        self._inlet_default: PinSpec | None = None  # the typed pin an inlet's default shows as
        self._built_types: dict[str, str] = {}  # the type of each pin when its widget was made
        self.current_pin: str | None = None  # of the shown node: the last clicked or focused
        self._title = QLabel("No node selected")
        self._title.setWordWrap(True)
        self._title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self._state = QLabel()
        self._error = QLabel()
        self._error.setWordWrap(True)
        self._error.setStyleSheet("color: #ff6060;")
        self.retry_button = QPushButton("Retry")
        self.retry_button.setToolTip("Run this node again (it was bypassed for taking too long)")
        self.retry_button.clicked.connect(self._retry)
        self.retry_button.hide()
        self._form_host = QWidget()
        self._form = QFormLayout(self._form_host)
        layout = QVBoxLayout(self)
        # The error and Retry come after the inputs: appearing, they never move a field.
        for widget in (self._title, self._state, self._form_host, self._error, self.retry_button):
            layout.addWidget(widget)
        layout.addStretch(1)
        self._error.hide()

    def set_node(self, patch: Patch | None, node_id: str | None) -> None:
        """Show the inputs of `node_id` (or nothing)."""
        for field in [f for f in self._code_fields.values() if f.pending]:
            field.apply()  # typing not applied yet goes to the node it was typed for
        # The same node rebuilt (a shader edit added a uniform pin): its code editors stay, with
        # their focus, cursor and scroll position.
        same = patch is self.patch and node_id == self.node_id
        if not same:
            self.current_pin = None
        self._inlet_default = None
        self._reusable = self._take_code_fields() if same else {}
        self._code_fields = {}
        self.patch, self.node_id = patch, node_id
        self._setters.clear()
        self._labels.clear()
        while self._form.rowCount():
            self._form.removeRow(0)
        self._error.hide()
        self.retry_button.hide()
        self._state.clear()
        if patch is None or node_id is None or node_id not in patch.nodes:
            self.node_id = None
            self._title.setText("No node selected")
            return
        inst = patch.nodes[node_id]
        self._built_types = {pin.name: pin.type for pin in inst.inputs}
        summary = html.escape(inst.spec.summary)
        self._title.setText(f"<b>{node_id}</b> · {inst.type_id}<br><i>{summary}</i> (F1: help)")
        for pin in inst.inputs:
            widget = self._pin_widget(pin)
            if isinstance(widget, QtCodeField):
                self._form.addRow(widget)  # the panel's whole width: code needs it
            else:
                label = QLabel(pin.name)
                label.setTextFormat(Qt.TextFormat.RichText)
                self._labels[pin.name] = label
                self._form.addRow(label, widget)
                for part in (label, widget, *widget.findChildren(QWidget)):
                    part.installEventFilter(self)
        self.refresh_bindings()
        for unused in self._reusable.values():
            unused.deleteLater()
        self._reusable = {}
        self.refresh_values()

    def _take_code_fields(self) -> dict[str, QtCodeField]:
        """Take the code editors out of the form without deleting them."""
        for field in self._code_fields.values():
            row, _role = self._form.getWidgetPosition(field)
            if row >= 0:
                self._form.takeRow(row)
        return dict(self._code_fields)

    def pin_widget(self, pin: str) -> QWidget:
        """The editor widget of an input (for tests and focus handling)."""
        row = self._row_of(pin)
        item = self._form.itemAt(row, QFormLayout.ItemRole.FieldRole)
        if item is None:
            item = self._form.itemAt(row, QFormLayout.ItemRole.SpanningRole)
        return item.widget()

    def _row_of(self, pin: str) -> int:
        return [p.name for p in self.patch.nodes[self.node_id].inputs].index(pin)

    def _pin_widget(self, pin: PinSpec) -> QWidget:
        link = self.patch.link_into(self.node_id, pin.name)
        if link is not None:
            return QLabel(f"← {link.src}.{link.src_pin}")
        typed = self._typed_inlet_default(pin.name)
        if typed is not None:
            self._inlet_default = pin = typed
        editor = editor_for(pin)(pin, self)
        self._setters[pin.name] = editor.show
        return editor.widget

    def _typed_inlet_default(self, pin: str) -> PinSpec | None:
        """For an inlet's `default`: that pin as its instances' pin (type, range, the default in
        force); None for every other pin."""
        inst = self.patch.nodes[self.node_id]
        if inst.type_id != INLET or pin != "default":
            return None
        return dataclasses.replace(inlet_pin(self.patch, inst), name="default")

    def _shown_value(self, pin: str) -> Any:
        if pin == "default" and self._inlet_default is not None:
            typed = self._typed_inlet_default(pin)
            return typed.default if typed is not None else None
        return self.patch.nodes[self.node_id].values[pin]

    def chosen_pin(self) -> tuple[str, str] | None:
        """(node id, pin) of the input last clicked or focused here, or None."""
        if self.node_id is None or self.current_pin is None:
            return None
        return self.node_id, self.current_pin

    # ------------------------------------------------------------------ PinEditorHost
    def emit(self, pin: str, value: Any, gesture: int | None = None) -> None:
        """Report an edit of an input of the shown node (`value_edited`)."""
        self.value_edited.emit(self.node_id, pin, value, gesture)

    def slider_range(self, pin: PinSpec) -> tuple[float, float]:
        """A slider's range: the pin's bounds, else the node's own `min` / `max` values."""
        values = self.patch.nodes[self.node_id].values
        low = pin.minimum if pin.minimum is not None else values.get("min", 0.0)
        high = pin.maximum if pin.maximum is not None else values.get("max", 1.0)
        low, high = float(low), float(high)
        return (low, high) if high > low else (low, low + 1.0)

    def show_stored(self) -> None:
        """Show the stored values again (an edit that could not be read)."""
        self.refresh_values()

    def code_field(self, pin: str) -> QtCodeField:
        """The code editor of `pin`: the one kept while the same node is rebuilt, or a new one."""
        code = self._reusable.pop(pin, None)
        if code is None:
            code = QtCodeField(pin)
            code.applied.connect(lambda text, name=pin: self.emit(name, text))
        self._code_fields[pin] = code
        return code

    def folder(self) -> Path | None:
        """The folder the shown patch's file names are relative to (None: never saved)."""
        return self.patch.folder if self.patch is not None else None

    def refresh_values(self) -> None:
        """Show the Patch's current values (and rebuild if the node's pins or links changed)."""
        if self.patch is None or self.node_id is None:
            return
        if self.node_id not in self.patch.nodes:
            self.set_node(None, None)
            return
        inst = self.patch.nodes[self.node_id]
        editable = {
            p.name for p in inst.inputs if self.patch.link_into(self.node_id, p.name) is None
        }
        # An instance's pin, or an inlet's default, linked inside to another type: other widgets.
        retyped = self._built_types != {p.name: p.type for p in inst.inputs} or (
            self._inlet_default is not None
            and (self._typed_inlet_default("default") or self._inlet_default).type
            != self._inlet_default.type
        )
        if self._form.rowCount() != len(inst.inputs) or set(self._setters) != editable or retyped:
            self.set_node(self.patch, self.node_id)
            return
        for name, setter in self._setters.items():
            setter(self._shown_value(name))

    # ------------------------------------------------------------------ bindings
    def pin_label(self, pin: str) -> QLabel:
        """The name of an input in the form (with its binding mark)."""
        return self._labels[pin]

    def refresh_bindings(self) -> None:
        """Mark the bound inputs with their sources, and the one learn waits for."""
        if self.patch is None or self.node_id is None:
            return
        bindings = self.patch.bindings
        for pin, label in self._labels.items():
            sources = [bindings[key].source for key in bindings_of(self.patch, self.node_id, pin)]
            text = pin
            if self.bindings_enabled and sources:
                marks = "<br>".join(f"◉ {html.escape(source)}" for source in sources)
                text += f"<br><small style='color: {BOUND_COLOR}'>{marks}</small>"
            waiting = self.learning == (self.node_id, pin)
            if waiting:
                text += "<br><small>⟳ learning…</small>"
            label.setText(text)
            label.setStyleSheet(LEARNING_STYLE if waiting else "")
            inst = self.patch.nodes.get(self.node_id)  # gone when its removal is being shown
            tip = pin_doc(inst.spec, pin) if inst is not None else ""
            if sources:
                tip = "\n".join(part for part in (tip, "Bound to " + ", ".join(sources)) if part)
            label.setToolTip(tip)

    def set_learning(self, target: tuple[str, str] | None) -> None:
        """Highlight the pin learn waits for (None: learn is not armed)."""
        self.learning = target
        self.refresh_bindings()

    def pin_menu(self, pin: str) -> QMenu | None:
        """The binding menu of an input, or None for one no control can drive."""
        if self.patch is None or self.node_id is None or not self.bindings_enabled:
            return None
        spec = self.patch.nodes[self.node_id].input(pin)
        if spec is None or not bindable(spec) or self.patch.link_into(self.node_id, pin):
            return None
        return binding_menu(self, self.node_id, pin)

    def _pin_of(self, widget: QObject) -> str | None:
        for pin, label in self._labels.items():
            field = self.pin_widget(pin)
            inside = isinstance(widget, QWidget) and field.isAncestorOf(widget)
            if widget is label or widget is field or inside:
                return pin
        return None

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() in (QEvent.Type.MouseButtonPress, QEvent.Type.FocusIn):
            self.current_pin = self._pin_of(watched) or self.current_pin
        if event.type() == QEvent.Type.ContextMenu and isinstance(event, QContextMenuEvent):
            pin = self._pin_of(watched)
            menu = self.pin_menu(pin) if pin is not None else None
            if menu is not None:
                self._show_menu(menu, event.globalPos())
                return True
        return super().eventFilter(watched, event)

    def _show_menu(self, menu: QMenu, where: QPoint) -> None:
        if self.menu is not None:
            self.menu.deleteLater()
        self.menu = menu
        menu.popup(where)

    def set_state(
        self, node_class: str, status: str, error: str | None, bypassed: bool = False
    ) -> None:
        """Show the node's evaluation class and status, its error message if it failed, and a
        Retry button if it is bypassed."""
        self._state.setText(f"class {node_class} · {status}")
        self._error.setVisible(bool(error))
        self._error.setText(error or "")
        self.retry_button.setVisible(bypassed)
        for field in self._code_fields.values():
            field.show_error(error)

    def _retry(self) -> None:
        if self.node_id is not None:
            self.retry_requested.emit(self.node_id)
