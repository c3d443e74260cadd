"""The Bindings panel: every binding of the document (which control drives which pin), editable.

One row per binding: its source (`osc:/fader/1`, `midi:cc:1:7`), device, target (the node's
title and pin, "preset NAME" or "crossfader"; a binding whose node or preset is gone stays, greyed
and marked "missing", since an undo may bring it back), range low / high (spin boxes), curve and
takeover (combo boxes). Source and device are edited in their cells. Every edit is one
`SetBindingCommand` on the editor's undo stack; Delete (the button, or the Delete key in the
table) removes the selected bindings as one step. A double-click on a target asks the editor to
select that node (`node_requested`).

The panel reads the Patch and never keeps its own copy: it follows the document's change events
(bindings, nodes added or removed) and updates its rows in place when the same bindings are
listed, so an edit made in a cell's widget never deletes that widget under it.

Learn (`QtLearn`) waits for one target at a time (a node's pin, a preset, the crossfader): it
sends `learn` to the process that receives controls, says so in the status bar, and stops on Esc,
on a second learn of the target, or when the `learned` answer comes (the editor then adds the
binding with an undo step).

Also here, for the inspector, the presets panel and the editor: which pins a control can drive
(`bindable`), the range and takeover a new binding of a pin gets (`default_range`, a range that
holds the pin's value; `LEARN_TAKEOVER`, pick-up), the bindings of a target
(`bindings_of`) and how a target reads (`target_label`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QKeyEvent, QUndoStack
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.engine.protocol.messages import Learn, Learned
from app.qt.canvas.canvas import title_of
from app.qt.commands import SetBindingCommand
from nodes import EditOp, NodeInstance, Patch, PatchError, PatchEvent, PinSpec, is_bindable
from nodes.document.bindings import (
    CROSSFADER_TARGET,
    CURVES,
    PRESET_TARGET,
    TAKEOVERS,
    Binding,
    Takeover,
)

LEARN_TEXT = "Learn MIDI/OSC…"
BIND_OSC_TEXT = "Bind to OSC address…"
UNBIND_TEXT = "Remove binding"
CANCEL_LEARN_TEXT = "Cancel learn"


def binding_menu(owner: Any, node_id: str, pin: str) -> QMenu:
    """The menu that learns, binds to an OSC address or unbinds the target `node_id`.`pin` (a
    node's pin, a preset, the crossfader). `owner` (the inspector, the presets panel) is a widget
    with `patch`, `learning` (the target learn waits for) and the signals
    `learn_requested`, `bind_osc_requested` and `unbind_requested` (node id, pin)."""
    menu = QMenu(owner)
    waiting = owner.learning == (node_id, pin)
    learn = menu.addAction(CANCEL_LEARN_TEXT if waiting else LEARN_TEXT)
    learn.triggered.connect(lambda _=False: owner.learn_requested.emit(node_id, pin))
    bind = menu.addAction(BIND_OSC_TEXT)
    bind.triggered.connect(lambda _=False: owner.bind_osc_requested.emit(node_id, pin))
    if owner.patch is not None and bindings_of(owner.patch, node_id, pin):
        unbind = menu.addAction(UNBIND_TEXT)
        unbind.triggered.connect(lambda _=False: owner.unbind_requested.emit(node_id, pin))
    return menu


COLUMNS = ("Source", "Device", "Target", "Low", "High", "Curve", "Takeover")
SOURCE, DEVICE, TARGET, LOW, HIGH, CURVE, TAKEOVER = range(len(COLUMNS))
MISSING_COLOR = QColor(130, 130, 130)
INT_RANGE = (0.0, 127.0)  # a new binding of an int pin without a range: a MIDI control's steps
_REFRESHING_OPS = (
    EditOp.BINDING, EditOp.ADD_NODE, EditOp.REMOVE_NODE, EditOp.ADD_DEFINITION,
    EditOp.REMOVE_DEFINITION, EditOp.PRESET,
)  # fmt: skip


def bindable(pin: PinSpec) -> bool:
    """Whether a control can drive the pin: a float, int or bool input the runtime does not
    write itself (hint "live")."""
    return is_bindable(pin.type) and pin.hint != "live"


LEARN_TAKEOVER: Takeover = "pickup"
"""How a binding made by learn (or bound to a typed address) takes over: the control moves the
value only once it reaches it, so neither the learning message nor the next ones jump it."""


def default_range(inst: NodeInstance, pin: PinSpec) -> tuple[float, float]:
    """The range a new binding of `pin` gets: the pin's declared minimum / maximum, else a
    slider's `min` / `max` inputs (as the inspector's slider), else 0..1 (0..127 for an int),
    with a one-sided declared bound kept. A range that does not hold the pin's current value is
    widened so that it sits in the middle of the travel (a gain at 3.0 with no declared range
    gets 0..6), within the declared bounds: the control can reach the value it picks up."""
    low: float
    high: float
    if pin.minimum is not None and pin.maximum is not None:
        low, high = float(pin.minimum), float(pin.maximum)
    else:
        low, high = INT_RANGE if pin.type == "int" else (0.0, 1.0)
        span = high - low
        if pin.hint == "slider" and _numbers(inst.values.get("min"), inst.values.get("max")):
            low, high = float(inst.values["min"]), float(inst.values["max"])
        elif pin.minimum is not None:
            low, high = float(pin.minimum), float(pin.minimum) + span
        elif pin.maximum is not None:
            low, high = float(pin.maximum) - span, float(pin.maximum)
    value = inst.values.get(pin.name, pin.default)
    if _numbers(value) and math.isfinite(value) and pin.type != "bool":
        if value > high:
            high = 2 * value - low
        elif value < low:
            low = 2 * value - high
        if pin.minimum is not None:
            low = max(low, float(pin.minimum))
        if pin.maximum is not None:
            high = min(high, float(pin.maximum))
    if pin.type == "int":
        low, high = float(math.floor(low)), float(math.ceil(high))
    return (low, high) if high > low else (low, low + 1.0)


def _numbers(*values: Any) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def bindings_of(patch: Patch, node_id: str, pin: str) -> list[str]:
    """The ids of the bindings that drive `node_id`'s `pin`."""
    return [key for key, b in patch.bindings.items() if (b.node, b.pin) == (node_id, pin)]


def is_special_target(node_id: str) -> bool:
    """Whether `node_id` names a target that is no node: a preset or the crossfader."""
    return node_id in (PRESET_TARGET, CROSSFADER_TARGET)


def special_target_exists(patch: Patch, node_id: str, pin: str) -> bool:
    """Whether a preset / crossfader target is there to drive: the preset exists, the
    crossfader's pin is `position`."""
    if node_id == PRESET_TARGET:
        return pin in patch.presets
    return node_id == CROSSFADER_TARGET and pin == "position"


def target_label(node_id: str, pin: str) -> str:
    """How a binding target reads in messages: "knob.value", "preset A", "crossfader"."""
    if node_id == PRESET_TARGET:
        return f"preset {pin}"
    if node_id == CROSSFADER_TARGET:
        return "crossfader" if pin == "position" else f"crossfader.{pin}"
    return f"{node_id}.{pin}"


def target_text(patch: Patch, binding: Binding) -> tuple[str, bool]:
    """How a binding's target reads in the panel, and whether it is there to drive."""
    if is_special_target(binding.node):
        label = target_label(binding.node, binding.pin)
        present = special_target_exists(patch, binding.node, binding.pin)
        return (label if present else f"{label} (missing)"), present
    inst = patch.nodes.get(binding.node)
    if inst is None or inst.input(binding.pin) is None:
        return f"{binding.node}.{binding.pin} (missing)", False
    return f"{title_of(inst)} › {binding.pin}", True


def _binding_order(binding_id: str) -> tuple[int, str]:
    return len(binding_id), binding_id  # binding2 before binding10


class _Table(QTableWidget):
    """The bindings table; Delete and Backspace remove the selected rows."""

    delete_pressed = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace):
            self.delete_pressed.emit()
            event.accept()
            return
        super().keyPressEvent(event)


class QtBindingsPanel(QWidget):
    """Lists and edits the document's bindings (see the module note)."""

    node_requested = Signal(str)  # a target was double-clicked: show that node
    refused = Signal(str)  # an edit the binding refused (a source that names no control)

    def __init__(self, undo_stack: QUndoStack) -> None:
        super().__init__()
        self.undo_stack = undo_stack
        self.patch: Patch | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self.ids: list[str] = []  # the bindings the rows show, in order
        self.table = _Table(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(
            QAbstractItemView.EditTrigger.DoubleClicked
            | QAbstractItemView.EditTrigger.EditKeyPressed
        )
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(TARGET, QHeaderView.ResizeMode.Stretch)
        self.table.itemChanged.connect(self._item_changed)
        self.table.cellDoubleClicked.connect(self._double_clicked)
        self.table.delete_pressed.connect(self.delete_selected)
        self.empty_label = QLabel(
            "No bindings. Right-click a number or toggle in the Inspector: Learn MIDI/OSC…"
        )
        self.empty_label.setWordWrap(True)
        self.delete_button = QPushButton("Delete")
        self.delete_button.setToolTip("Remove the selected bindings (Delete)")
        self.delete_button.clicked.connect(lambda _checked=False: self.delete_selected())
        buttons = QHBoxLayout()
        buttons.addWidget(self.empty_label, 1)
        buttons.addStretch(0)  # keeps the button small when the label is hidden
        buttons.addWidget(self.delete_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(buttons)
        layout.addWidget(self.table, 1)

    def set_patch(self, patch: Patch | None) -> None:
        """Show (and follow) the bindings of `patch`."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self.patch = patch
        if patch is not None:
            self._unsubscribe = patch.subscribe(self._on_patch_event)
        self.refresh()

    def _on_patch_event(self, event: PatchEvent) -> None:
        if event.op in _REFRESHING_OPS or (event.op == EditOp.PINS and event.definition is None):
            self.refresh()

    # ------------------------------------------------------------------ rows
    def refresh(self) -> None:
        """Show the document's bindings: the rows updated in place when they list the same
        bindings, else made again."""
        patch = self.patch
        ids = sorted(patch.bindings, key=_binding_order) if patch is not None else []
        if ids != self.ids:
            self._rebuild(ids)
        if patch is not None:
            self.table.blockSignals(True)
            for row, binding_id in enumerate(ids):
                self._show_row(row, patch.bindings[binding_id])
            self.table.blockSignals(False)
        self.empty_label.setVisible(not ids)
        self.delete_button.setEnabled(bool(ids))

    def _rebuild(self, ids: list[str]) -> None:
        self.table.blockSignals(True)
        self.table.setRowCount(0)
        self.table.setRowCount(len(ids))
        for row, binding_id in enumerate(ids):
            for column in (SOURCE, DEVICE, TARGET):
                item = QTableWidgetItem()
                if column == TARGET:
                    item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEditable)
                    item.setToolTip("Double-click to select the node")
                self.table.setItem(row, column, item)
            for column in (LOW, HIGH):
                number = QDoubleSpinBox()
                number.setDecimals(4)
                number.setRange(-1e9, 1e9)
                number.setKeyboardTracking(False)
                number.setFrame(False)
                field = "low" if column == LOW else "high"
                number.valueChanged.connect(
                    lambda v, key=binding_id, name=field: self._edit(key, **{name: float(v)})
                )
                self.table.setCellWidget(row, column, number)
            for column, choices in ((CURVE, CURVES), (TAKEOVER, TAKEOVERS)):
                combo = QComboBox()
                combo.addItems(list(choices))
                field = "curve" if column == CURVE else "takeover"
                combo.currentTextChanged.connect(
                    lambda text, key=binding_id, name=field: self._edit(key, **{name: text})
                )
                self.table.setCellWidget(row, column, combo)
        self.table.blockSignals(False)
        self.ids = ids

    def _show_row(self, row: int, binding: Binding) -> None:
        assert self.patch is not None
        text, present = target_text(self.patch, binding)
        self.table.item(row, SOURCE).setText(binding.source)
        self.table.item(row, DEVICE).setText(binding.device)
        target = self.table.item(row, TARGET)
        target.setText(text)
        target.setForeground(QBrush(MISSING_COLOR) if not present else QBrush())
        font = target.font()
        font.setItalic(not present)
        target.setFont(font)
        for column, value in ((LOW, binding.low), (HIGH, binding.high)):
            _quiet(self.table.cellWidget(row, column), "setValue", float(value))
        for column, text in ((CURVE, binding.curve), (TAKEOVER, binding.takeover)):
            _quiet(self.table.cellWidget(row, column), "setCurrentText", text)

    def widget_at(self, binding_id: str, column: int) -> Any:
        """The editor widget of a binding's cell (the spin boxes and combo boxes)."""
        return self.table.cellWidget(self.ids.index(binding_id), column)

    # ------------------------------------------------------------------ edits
    def _edit(self, binding_id: str, **changes: Any) -> None:
        """Change fields of one binding, as one undo step (a refused change is reported and
        the row shows the binding as it is)."""
        patch = self.patch
        old = patch.bindings.get(binding_id) if patch is not None else None
        if patch is None or old is None:
            return
        try:
            new = dataclasses.replace(old, **changes)
        except PatchError as error:
            self.refused.emit(str(error))
            self.refresh()
            return
        if new == old:
            self.refresh()  # e.g. spaces typed around a device name: show it as it is
            return
        what = ", ".join(changes)
        self.undo_stack.push(
            SetBindingCommand(patch, binding_id, new, f"edit binding {old.source}: {what}")
        )

    def _item_changed(self, item: QTableWidgetItem) -> None:
        if item.row() >= len(self.ids):
            return
        binding_id = self.ids[item.row()]
        if item.column() == SOURCE:
            self._edit(binding_id, source=item.text().strip())
        elif item.column() == DEVICE:
            self._edit(binding_id, device=item.text().strip())

    def selected_ids(self) -> list[str]:
        rows = sorted({index.row() for index in self.table.selectionModel().selectedRows()})
        return [self.ids[row] for row in rows if row < len(self.ids)]

    def delete_selected(self) -> None:
        """Remove the selected bindings, as one undo step."""
        doomed = self.selected_ids()
        if self.patch is None or not doomed:
            return
        count = len(doomed)
        self.undo_stack.beginMacro(f"delete {count} binding{'s' if count != 1 else ''}")
        for binding_id in doomed:
            self.undo_stack.push(SetBindingCommand(self.patch, binding_id, None, "delete binding"))
        self.undo_stack.endMacro()

    def _double_clicked(self, row: int, column: int) -> None:
        if column != TARGET or self.patch is None or row >= len(self.ids):
            return
        binding = self.patch.bindings[self.ids[row]]
        if binding.node in self.patch.nodes:
            self.node_requested.emit(binding.node)


def _quiet(widget: QWidget, setter: str, value: Any) -> None:
    widget.blockSignals(True)
    getattr(widget, setter)(value)
    widget.blockSignals(False)


class QtLearn(QObject):
    """Learn, one pin at a time: `toggle` arms it for a pin (or cancels it, for the pin it waits
    for), `cancel` or Esc anywhere in the application stops waiting, and `take` hands over a
    `learned` answer for the armed pin. `send` carries the `learn` messages to the process that
    receives controls; `show_status(text)` tells the person what is going on."""

    changed = Signal(object)  # the (node id, pin) waited for, or None

    def __init__(
        self,
        send: Callable[[Learn], None],
        show_status: Callable[[str], None],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._send, self._show_status = send, show_status
        self.target: tuple[str, str] | None = None

    def toggle(self, node_id: str, pin: str) -> None:
        """Wait for a control to bind `node_id`'s `pin` to; a second learn of it cancels."""
        if self.target == (node_id, pin):
            self.cancel()
            return
        if self.target is None:
            app = QApplication.instance()
            if app is not None:
                app.installEventFilter(self)
        self.target = (node_id, pin)
        self._send(Learn(node_id, pin))
        self._show_status(f"Move a control to bind {target_label(node_id, pin)}… (Esc cancels)")
        self.changed.emit(self.target)

    def cancel(self, *, quiet: bool = False) -> None:
        """Stop waiting (`quiet`: say nothing, the patch it was for is gone)."""
        if self.target is None:
            return
        node_id, pin = self.target
        self._stop()
        self._send(Learn(None))
        if not quiet:
            self._show_status(f"Learn cancelled: {target_label(node_id, pin)} not bound")

    def _stop(self) -> None:
        self.target = None
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)
        self.changed.emit(None)

    def take(self, message: Learned) -> tuple[str, str, str, str] | None:
        """(node, pin, source, device) of a `learned` message for the armed pin, which learn
        then stops waiting for; None for an answer nobody waits for any more (cancelled)."""
        if self.target is None or (message.node, message.pin) != self.target:
            return None
        source, device = message.source, message.device or ""
        node_id, pin = self.target
        self._stop()
        return node_id, pin, source, device

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            self.target is not None
            and event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_Escape
        ):
            self.cancel()
            return True
        return super().eventFilter(watched, event)
