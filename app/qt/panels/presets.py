"""The Presets panel: the document's presets, their undoable edits, recalls and the crossfader.

Capture names a new preset holding every editable, unlinked value of the whole patch or of the
nodes selected on the canvas (the choice beside it; nodes `preset_pins`); a capture that would hold
nothing is not made, and the panel says why. Update takes the current values of a preset's pins
again; Rename and Delete act on the selected one. Below, the selected preset's contents: one row
per value (`node.pin = value`; a value whose node is gone is greyed, an empty preset says that
recalling it changes nothing). Remove (or Delete in the list) takes the selected values out; Add
puts in the pin chosen in the inspector (the last one clicked there), or else every preset pin of
the selected nodes, with its current value. Each is one undo command (`SetPresetCommand`,
`RenamePresetCommand`) editing the Patch through `Patch.set_preset`, so the engine's copy follows
as any edit does. What is selected comes from the editor: `selected_nodes()` and `chosen_pin()`.

Recalls: a double click jumps to a preset; Recall goes there as the row below it says (over a
duration with an easing and a switch point for toggles and strings, starting now or on the next
beat or bar; 0 s is a jump). The crossfader blends the presets chosen as A and B. These become
`preset` and `crossfade` messages to the engine (`engine_send`), whose preset deck plays them:
what they set comes back as live values, not undo steps.

Bindings: right-click a preset for "Learn MIDI/OSC…" (bind a control to recall it: target
`@preset`, the name as pin), "Bind to OSC address…" and "Remove binding"; right-click the
crossfader, or its Learn button, to bind the crossfader (`@crossfader` `position`, range 0..1).
The panel only emits the requests (`learn_requested`, `bind_osc_requested`, `unbind_requested`,
as the inspector's pin menu does); the editor binds. A bound preset shows its sources after its
name, the one learn waits for is highlighted. Renaming a preset moves its bindings along in the
same undo step.

Dialogs go through `ask_name`, which tests replace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QKeyEvent, QUndoCommand, QUndoStack
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QGridLayout,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QSlider,
    QVBoxLayout,
    QWidget,
)

from app.engine.protocol.messages import Crossfade, Message, PresetRecall
from app.qt.panels.bindings import CANCEL_LEARN_TEXT, LEARN_TEXT, binding_menu, bindings_of
from app.qt.pin_types import format_value
from nodes import (
    EASINGS,
    START_POINTS,
    SWITCH_POINTS,
    EditOp,
    Patch,
    PatchEvent,
    capture,
    changes_nothing,
    preset_pins,
)
from nodes.document.bindings import CROSSFADER_TARGET, PRESET_TARGET

CROSSFADE_STEPS = 1000
MAX_NAME = 200  # as Patch.set_preset takes
Values = Mapping[tuple[str, str], Any]
NAME_ROLE = Qt.ItemDataRole.UserRole  # a list item's preset name (its text adds binding marks)
LEARNING_COLOR, LEARNING_TEXT_COLOR = QColor(74, 58, 8), QColor(255, 233, 160)  # the inspector's
CROSSFADER = (CROSSFADER_TARGET, "position")
CROSSFADE_TITLE = "Crossfade A ↔ B"
PIN_ROLE = Qt.ItemDataRole.UserRole  # a contents row's (node id, pin)
WHOLE_PATCH, SELECTED_NODES = "Whole patch", "Selected nodes"
MISSING_COLOR = QColor(130, 130, 130)
WARNING_STYLE = "color: #ffb040;"
EMPTY_TEXT = "(empty: recalling it changes nothing; Add puts a pin in)"
PinRef = tuple[str, str]


class _ContentsList(QListWidget):
    """A preset's values; Delete and Backspace remove the selected ones."""

    delete_pressed = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace):
            self.delete_pressed.emit()
            event.accept()
            return
        super().keyPressEvent(event)


def _mark(sources: list[str], learning: bool) -> str:
    """What follows a bound target's name: its sources, or that learn waits for it."""
    if learning:
        return "  ⟳ learning…"
    return "  ◉ " + ", ".join(sources) if sources else ""


class SetPresetCommand(QUndoCommand):
    """Add, replace (capture, update) or remove (None) one preset."""

    def __init__(self, patch: Patch, name: str, values: Values | None, text: str) -> None:
        super().__init__(text)
        self._patch, self.name = patch, name
        old = patch.presets.get(name)
        self._old = None if old is None else dict(old)
        self._new = None if values is None else dict(values)

    def redo(self) -> None:
        self._patch.set_preset(self.name, self._new)

    def undo(self) -> None:
        self._patch.set_preset(self.name, self._old)


class RenamePresetCommand(QUndoCommand):
    """Give a preset another (unused) name; the bindings that recall it follow."""

    def __init__(self, patch: Patch, old: str, new: str) -> None:
        super().__init__(f"rename preset {old} to {new}")
        self._patch, self.old, self.new = patch, old, new
        self.bound = bindings_of(patch, PRESET_TARGET, old)

    def _move(self, source: str, target: str) -> None:
        patch = self._patch
        patch.set_preset(target, patch.presets[source])
        for binding_id in self.bound:
            binding = patch.bindings.get(binding_id)
            if binding is not None:
                patch.set_binding(binding_id, dataclasses.replace(binding, pin=target))
        patch.set_preset(source, None)

    def redo(self) -> None:
        self._move(self.old, self.new)

    def undo(self) -> None:
        self._move(self.new, self.old)


class QtPresetsPanel(QWidget):
    """The presets of the document: see the module note. `engine_send` sends a message to the
    engine that plays the patch."""

    learn_requested = Signal(str, str)  # target node, pin: bind it to the next control moved
    bind_osc_requested = Signal(str, str)  # target node, pin: bind it to an OSC address typed
    unbind_requested = Signal(str, str)  # target node, pin: remove its bindings

    def __init__(self, undo_stack: QUndoStack, engine_send: Callable[[Message], None]) -> None:
        super().__init__()
        self.undo_stack = undo_stack
        self.patch = Patch()
        self.engine_send = engine_send
        self.on_error: Callable[[str], None] = lambda _message: None
        self.learning: tuple[str, str] | None = None  # the target learn waits for
        self.menu: QMenu | None = None  # the last binding menu opened
        self._unsubscribe: Callable[[], None] | None = None
        self._listing = False  # while `refresh` lists the presets again
        # What the editor has selected: the nodes on the canvas (of the document), and the pin
        # chosen in the inspector (None: none).
        self.selected_nodes: Callable[[], list[str]] = lambda: []
        self.chosen_pin: Callable[[], PinRef | None] = lambda: None

        self.list = QListWidget()
        self.list.setObjectName("presets")
        self.list.itemDoubleClicked.connect(lambda item: self.jump(item.data(NAME_ROLE)))
        # (not while `refresh` lists the presets again: a button disabled meanwhile, even for
        # that moment, would hand the keyboard focus on)
        self.list.currentItemChanged.connect(
            lambda *_: None if self._listing else self.refresh_contents()
        )
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._preset_menu_at)
        buttons = QHBoxLayout()
        self.buttons: dict[str, QPushButton] = {}
        for label, slot, tip in (
            (
                "Capture",
                self.capture,
                "A new preset of every editable, unlinked value of the "
                "whole patch or of the selected nodes (as chosen beside)",
            ),
            ("Update", self.update_selected, "Take the current values of its pins again"),
            ("Rename", self.rename_selected, "Rename the selected preset"),
            ("Delete", self.delete_selected, "Remove the selected preset"),
        ):
            button = QPushButton(label)
            button.setToolTip(tip)
            button.clicked.connect(lambda _checked=False, slot=slot: slot())
            buttons.addWidget(button)
            self.buttons[label] = button
            if label == "Capture":
                self.scope = self._combo((WHOLE_PATCH, SELECTED_NODES), "What Capture takes")
                buttons.addWidget(self.scope)

        self.contents_label = QLabel()
        self.contents_label.setWordWrap(True)
        self.contents = _ContentsList()
        self.contents.setObjectName("preset contents")
        self.contents.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.contents.delete_pressed.connect(self.remove_values)
        self.contents.itemSelectionChanged.connect(self._enable)
        edits = QHBoxLayout()
        for label, slot, tip in (
            ("Add", self.add_pins, "Put the pin chosen in the inspector (else the values of the "
             "selected nodes) into the selected preset, with its current value"),
            ("Remove", self.remove_values, "Take the selected values out of the preset (Delete)"),
        ):  # fmt: skip
            button = QPushButton(label)
            button.setToolTip(tip)
            button.clicked.connect(lambda _checked=False, slot=slot: slot())
            edits.addWidget(button)
            self.buttons[label] = button
        edits.addStretch(1)
        self.notice = QLabel()  # why a capture or an edit did nothing
        self.notice.setWordWrap(True)
        self.notice.setStyleSheet(WARNING_STYLE)
        self.notice.hide()

        self.seconds = QDoubleSpinBox()
        self.seconds.setRange(0.0, 600.0)
        self.seconds.setDecimals(2)
        self.seconds.setSingleStep(0.25)
        self.seconds.setValue(1.0)
        self.seconds.setSuffix(" s")
        self.seconds.setToolTip("Transition time (0: jump)")
        self.easing = self._combo(EASINGS, "Easing of the transition")
        self.switch = self._combo(SWITCH_POINTS, "When toggles and strings switch")
        self.switch.setCurrentText("middle")
        self.start = self._combo(START_POINTS, "Start now, or on the next beat or bar")
        recall = QPushButton("Recall")
        recall.setToolTip("Go to the selected preset as set here (double click: jump)")
        recall.clicked.connect(lambda _checked=False: self.recall_selected())
        self.buttons["Recall"] = recall
        transition = QGridLayout()
        right = Qt.AlignmentFlag.AlignRight
        transition.addWidget(recall, 0, 0)
        transition.addWidget(self.seconds, 0, 1)
        transition.addWidget(self.easing, 0, 2, 1, 2)
        transition.addWidget(QLabel("switch"), 1, 0, right)
        transition.addWidget(self.switch, 1, 1)
        transition.addWidget(QLabel("start"), 1, 2, right)
        transition.addWidget(self.start, 1, 3)

        self.a = QComboBox()
        self.a.setToolTip("Crossfader: preset A (slider left)")
        self.b = QComboBox()
        self.b.setToolTip("Crossfader: preset B (slider right)")
        for combo in (self.a, self.b):  # a new pair plays at once, and a bound fader blends it
            combo.activated.connect(lambda _index: self.crossfade())
        self.crossfader = QSlider(Qt.Orientation.Horizontal)
        self.crossfader.setRange(0, CROSSFADE_STEPS)
        # A click in the track moves a tenth of the way, an arrow key 1 %, as a fader should.
        self.crossfader.setPageStep(CROSSFADE_STEPS // 10)
        self.crossfader.setSingleStep(CROSSFADE_STEPS // 100)
        self.crossfader.setToolTip("Blend A and B")
        self.crossfader.valueChanged.connect(lambda _value: self.crossfade())
        self.crossfader.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.crossfader.customContextMenuRequested.connect(
            lambda pos: self._show_menu(self.binding_menu(*CROSSFADER), self.crossfader, pos)
        )
        self.crossfader_learn = QPushButton(LEARN_TEXT)
        self.crossfader_learn.clicked.connect(
            lambda _checked=False: self.learn_requested.emit(*CROSSFADER)
        )
        fader = QHBoxLayout()
        fader.addWidget(self.a)
        fader.addWidget(self.crossfader, 1)
        fader.addWidget(self.b)
        self.crossfader_label = QLabel(CROSSFADE_TITLE)
        heading = QHBoxLayout()
        heading.addWidget(self.crossfader_label, 1)
        heading.addWidget(self.crossfader_learn)

        layout = QVBoxLayout(self)
        layout.addWidget(self.list, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.notice)
        layout.addWidget(self.contents_label)
        layout.addWidget(self.contents, 1)
        layout.addLayout(edits)
        layout.addLayout(transition)
        layout.addLayout(heading)
        layout.addLayout(fader)
        self._enable()

    def _combo(self, choices: Mapping[str, Any] | tuple[str, ...], tip: str) -> QComboBox:
        combo = QComboBox()
        combo.addItems(list(choices))
        combo.setToolTip(tip)
        return combo

    # ------------------------------------------------------------------ the document
    def set_patch(self, patch: Patch) -> None:
        """Show and edit the presets of `patch`."""
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.patch = patch
        self._unsubscribe = patch.subscribe(self._on_event)
        self.notice.hide()  # said of the document shown before
        self.refresh()

    def _on_event(self, event: PatchEvent) -> None:
        if event.op == EditOp.PRESET:
            self.refresh()
        elif event.op == EditOp.BINDING:
            self.refresh_bindings()
        elif event.op in (EditOp.ADD_NODE, EditOp.REMOVE_NODE) and event.definition is None:
            self.refresh_contents()  # a value whose node went is greyed (an undo brings it)

    def refresh(self) -> None:
        """List the presets again (keeping the selection and the crossfader's pair)."""
        names = list(self.patch.presets)
        current = self.selected()
        self._listing = True
        self.list.clear()
        for name in names:
            item = QListWidgetItem(name)
            item.setData(NAME_ROLE, name)
            self.list.addItem(item)
        if current in names:
            self.list.setCurrentRow(names.index(current))
        self._listing = False
        self.refresh_bindings()
        # A keeps its preset while it exists, else takes the first; B likewise, else the first
        # other than A's.
        taken = ""
        for combo in (self.a, self.b):
            chosen = combo.currentText()
            combo.blockSignals(True)
            combo.clear()
            combo.addItems(names)
            if chosen not in names or chosen == taken:
                chosen = next((n for n in names if n != taken), names[0] if names else "")
            combo.setCurrentText(chosen)
            combo.blockSignals(False)
            taken = chosen
        self.refresh_contents()

    def refresh_contents(self) -> None:
        """Show the values of the selected preset (keeping the rows selected)."""
        name = self.selected()
        values = self.patch.presets.get(name, {}) if name is not None else {}
        kept = set(self.selected_values())
        self.contents.blockSignals(True)
        self.contents.clear()
        for (node_id, pin), value in values.items():
            item = QListWidgetItem(f"{node_id}.{pin} = {format_value(value)}")
            item.setData(PIN_ROLE, (node_id, pin))
            inst = self.patch.nodes.get(node_id)
            if inst is None or inst.input(pin) is None:
                item.setText(item.text() + "  (node removed)")
                item.setForeground(QBrush(MISSING_COLOR))
                item.setToolTip("Its node is gone: a recall skips it (an undo may bring it back)")
            self.contents.addItem(item)
            item.setSelected((node_id, pin) in kept)
        if name is not None and not values:
            empty = QListWidgetItem(EMPTY_TEXT)
            empty.setFlags(Qt.ItemFlag.NoItemFlags)
            self.contents.addItem(empty)
        self.contents.blockSignals(False)
        count = len(values)
        self.contents_label.setText(
            "No preset selected"
            if name is None
            else f"<b>{name}</b> holds {count} value{'s' if count != 1 else ''}"
        )
        self._enable()

    def _enable(self) -> None:
        chosen = self.selected() is not None
        for label in ("Update", "Rename", "Delete", "Recall", "Add"):
            self.buttons[label].setEnabled(chosen)
        self.buttons["Remove"].setEnabled(chosen and bool(self.selected_values()))
        self.crossfader.setEnabled(len(self.patch.presets) >= 2)

    def contents_rows(self) -> list[str]:
        """The contents list's rows as they read."""
        return [self.contents.item(row).text() for row in range(self.contents.count())]

    def selected_values(self) -> list[PinRef]:
        """The (node id, pin) of the selected rows of the contents list."""
        return [
            tuple(item.data(PIN_ROLE))  # type: ignore[misc]
            for item in self.contents.selectedItems()
            if item.data(PIN_ROLE) is not None
        ]

    def select_values(self, refs: list[PinRef]) -> None:
        """Select the rows of these values in the contents list."""
        for row in range(self.contents.count()):
            item = self.contents.item(row)
            data = item.data(PIN_ROLE)
            item.setSelected(data is not None and tuple(data) in refs)

    def warn(self, text: str) -> None:
        """Say in the panel (and to the editor's messages) why nothing happened."""
        self.notice.setText(text)
        self.notice.show()
        self.on_error(text)

    def names(self) -> list[str]:
        """The presets listed, in order."""
        return [self.list.item(row).data(NAME_ROLE) for row in range(self.list.count())]

    def selected(self) -> str | None:
        item = self.list.currentItem()
        return item.data(NAME_ROLE) if item is not None else None

    def select(self, name: str) -> None:
        names = self.names()
        if name in names:
            self.list.setCurrentRow(names.index(name))

    # ------------------------------------------------------------------ bindings
    def _sources(self, node_id: str, pin: str) -> list[str]:
        bindings = self.patch.bindings
        return [bindings[key].source for key in bindings_of(self.patch, node_id, pin)]

    def refresh_bindings(self) -> None:
        """Mark bound presets and the crossfader with their sources, and what learn waits for."""
        for row in range(self.list.count()):
            item = self.list.item(row)
            name = item.data(NAME_ROLE)
            sources = self._sources(PRESET_TARGET, name)
            waiting = self.learning == (PRESET_TARGET, name)
            item.setText(name + _mark(sources, waiting))
            item.setToolTip(f"Recalled by {', '.join(sources)}" if sources else "")
            item.setBackground(QBrush(LEARNING_COLOR) if waiting else QBrush())
            item.setForeground(QBrush(LEARNING_TEXT_COLOR) if waiting else QBrush())
        waiting = self.learning == CROSSFADER
        sources = self._sources(*CROSSFADER)
        self.crossfader_learn.setText(CANCEL_LEARN_TEXT if waiting else LEARN_TEXT)
        tip = f"Bound to {', '.join(sources)}. " if sources else ""
        learn_tip = "Bind the crossfader to the next MIDI/OSC control moved"
        self.crossfader_learn.setToolTip(tip + learn_tip)
        self.crossfader_label.setText(CROSSFADE_TITLE + _mark(sources, waiting))
        self.crossfader.setToolTip(
            "Blend A and B" + (f" (bound to {', '.join(sources)})" if sources else "")
        )

    def set_learning(self, target: tuple[str, str] | None) -> None:
        """Highlight the preset (or crossfader) learn waits for (None: learn is not armed)."""
        self.learning = target
        self.refresh_bindings()

    def binding_menu(self, node_id: str, pin: str) -> QMenu:
        """The binding menu of a preset (`@preset`, name) or the crossfader."""
        return binding_menu(self, node_id, pin)

    def _preset_menu_at(self, pos: QPoint) -> None:
        item = self.list.itemAt(pos)
        if item is None:
            return
        self.list.setCurrentItem(item)
        menu = self.binding_menu(PRESET_TARGET, item.data(NAME_ROLE))
        self._show_menu(menu, self.list.viewport(), pos)

    def _show_menu(self, menu: QMenu, widget: QWidget, pos: QPoint) -> None:
        if self.menu is not None:
            self.menu.deleteLater()
        self.menu = menu
        menu.popup(widget.mapToGlobal(pos))

    def ask_name(self, title: str, current: str) -> str | None:
        name, accepted = QInputDialog.getText(self, title, "Preset name:", text=current)
        return name.strip() if accepted else None

    def _free_name(self, name: str | None) -> str | None:
        """`name` when a preset may take it, else None (the user told why)."""
        if not name:
            return None
        if name in self.patch.presets:
            self.on_error(f"a preset named {name!r} exists already")
            return None
        if len(name) > MAX_NAME:
            self.on_error(f"a preset name has at most {MAX_NAME} characters")
            return None
        return name

    def capture_pins(self) -> list[PinRef]:
        """What Capture takes now: the preset pins of the whole patch or of the selected nodes."""
        if self.scope.currentText() == SELECTED_NODES:
            return preset_pins(self.patch, self.selected_nodes())
        return preset_pins(self.patch)

    def capture(self) -> None:
        """Capture the values Capture takes (see `capture_pins`) as a new preset named by the
        user; nothing, and a warning, when there are none."""
        self.notice.hide()
        pins = self.capture_pins()
        if not pins:
            kinds = "(an unlinked number, toggle, colour, vector or text)"
            if self.scope.currentText() == WHOLE_PATCH:
                why = f"the patch has no value a preset can hold {kinds}"
            elif self.selected_nodes():
                why = f"the selected nodes have no value a preset can hold {kinds}"
            else:
                why = "no node is selected (select nodes, or capture the whole patch)"
            self.warn(f"Nothing to capture: {why}; no preset made")
            return
        suggested = next(
            f"Preset {n}" for n in range(1, 10_000) if f"Preset {n}" not in self.patch.presets
        )
        name = self._free_name(self.ask_name("Capture preset", suggested))
        if name is not None:
            values = capture(self.patch, pins)
            self.undo_stack.push(
                SetPresetCommand(self.patch, name, values, f"capture preset {name}")
            )
            self.select(name)

    def add_pins(self) -> None:
        """Put the pin chosen in the inspector, or else the preset pins of the selected nodes,
        into the selected preset with their current values (one undo step)."""
        name = self.selected()
        if name is None:
            return
        self.notice.hide()
        chosen = self.chosen_pin()
        pins = [chosen] if chosen is not None else preset_pins(self.patch, self.selected_nodes())
        old = self.patch.presets[name]
        new = [ref for ref in pins if ref not in old and ref[0] in self.patch.nodes]
        if not new:
            self.warn(
                f"Nothing to add to {name}: "
                + (
                    f"{chosen[0]}.{chosen[1]} is in it already"
                    if chosen is not None and chosen in old
                    else "click a value in the Inspector (or select nodes) first"
                )
            )
            return
        what = f"{new[0][0]}.{new[0][1]}" if len(new) == 1 else f"{len(new)} values"
        values = {**old, **capture(self.patch, new)}
        self.undo_stack.push(
            SetPresetCommand(self.patch, name, values, f"add {what} to preset {name}")
        )
        self.select_values(new)

    def remove_values(self) -> None:
        """Take the selected values out of the selected preset (one undo step)."""
        name = self.selected()
        doomed = set(self.selected_values())
        if name is None or not doomed:
            return
        values = {ref: v for ref, v in self.patch.presets[name].items() if ref not in doomed}
        first = next(iter(doomed))
        what = f"{first[0]}.{first[1]}" if len(doomed) == 1 else f"{len(doomed)} values"
        self.undo_stack.push(
            SetPresetCommand(self.patch, name, values, f"remove {what} from preset {name}")
        )

    def update_selected(self) -> None:
        """Take the current values of the selected preset's pins (of nodes still there)."""
        name = self.selected()
        if name is None:
            return
        pins = [(n, p) for n, p in self.patch.presets[name] if n in self.patch.nodes]
        values = capture(self.patch, pins)
        self.undo_stack.push(SetPresetCommand(self.patch, name, values, f"update preset {name}"))

    def rename_selected(self) -> None:
        old = self.selected()
        if old is None:
            return
        new = self.ask_name("Rename preset", old)
        if new == old:
            return
        new = self._free_name(new)
        if new is not None:
            self.undo_stack.push(RenamePresetCommand(self.patch, old, new))
            self.select(new)

    def delete_selected(self) -> None:
        name = self.selected()
        if name is not None:
            self.undo_stack.push(SetPresetCommand(self.patch, name, None, f"delete preset {name}"))

    # ------------------------------------------------------------------ recalls
    def _recalls_nothing(self, name: str) -> bool:
        """Say so when recalling preset `name` would change nothing (it holds no value of the
        patch), and nothing is sent."""
        preset = self.patch.presets.get(name)
        if preset is None or not changes_nothing(self.patch, preset):
            self.notice.hide()
            return False
        self.warn(f"Preset {name} holds no value of this patch: recalling it changes nothing")
        return True

    def jump(self, name: str) -> None:
        """Jump to preset `name` now, on the engine's deck."""
        if self._recalls_nothing(name):
            return
        self.engine_send(PresetRecall(name, mode="jump", start="now"))

    def recall_selected(self) -> None:
        """Recall the selected preset as the transition row says."""
        name = self.selected()
        if name is None or self._recalls_nothing(name):
            return
        seconds = self.seconds.value()
        start = self.start.currentText()
        if seconds == 0 and start == "now":
            self.jump(name)
            return
        self.engine_send(
            PresetRecall(
                name,
                mode="transition" if seconds > 0 else "jump",
                seconds=seconds,
                easing=self.easing.currentText(),
                switch=self.switch.currentText(),
                start=start,
            )
        )

    def crossfade(self) -> None:
        """Blend the A and B presets at the crossfader's position."""
        a, b = self.a.currentText(), self.b.currentText()
        if not a or not b:
            return
        position = self.crossfader.value() / CROSSFADE_STEPS
        self.engine_send(Crossfade(a, b, position))
