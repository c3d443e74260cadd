"""The menus of the canvas: a node's own menu on a right-click, and which of the canvas menu's
commands can act.

`NodeMenu` is a controller of the editor window (app.qt.window), made and kept by its edit actions
(`edit_actions.node_menu`); the canvas calls it on a right-click (app.qt.canvas.canvas). A node's
menu holds Rename…, Delete, Duplicate, Help, Why did this run?, Learn (a submenu of the pins a
control can drive) and Expose (a submenu of the pins that can become an inlet or outlet of the
definition shown), each enabled only where it can act, with its tooltip saying why not:
- a right-click on a node outside the selection selects it first, and Delete / Duplicate act on
  the selection (as a click then Delete would);
- Rename gives a node a new id (its links, bindings and presets follow, one undo step); an inlet
  or outlet is renamed by the pin name it gives its instances;
- Why did this run? shows the Profiler with the node's explanation;
- Learn binds the next control moved (OSC, MIDI) to an unlinked number or toggle pin, at the
  document's level only (bindings belong to the document);
- Expose, inside a definition, adds a `subpatch.inlet` feeding an unlinked input (its default the
  pin's value) or a `subpatch.outlet` reading an output, linked, one undo step.
Nothing is offered on a read-only (frozen) patch but Help and Why did this run?.

Before the canvas menu shows, `update_canvas_menu` enables its commands by what is selected and
where the click was: Group with a selection, Ungroup / Make Unique / Enter Instance with one
instance selected, Leave Instance inside one, the backdrop commands over a backdrop.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QPoint
from PySide6.QtGui import QAction, QUndoCommand
from PySide6.QtWidgets import QInputDialog, QMenu

from app.qt.commands import AddNodesCommand, NodeRecord, record_nodes
from app.qt.panels.bindings import bindable
from nodes import LIBRARY, Link, Patch
from nodes.document.definitions import INLET, OUTLET, PORT_TYPES, SUBPATCH

if TYPE_CHECKING:
    from app.qt.actions.edit import EditActions
    from app.qt.window import QtEditorWindow

EXPOSE_GAP = 220.0  # how far left (inlets) or right (outlets) of the node a new port goes


def rename_node(patch: Patch, old: str, new: str) -> None:
    """Give node `old` of `patch` the id `new`: the same type, values and place, its links, and
    (in the document) the bindings and presets that name it. The caller checks that `new` is
    free and an id."""
    (record,) = record_nodes(patch, [old])
    links = [link for link in patch.links if old in (link.src, link.dst)]
    patch.remove_node(old)
    renamed = dataclasses.replace(record, id=new)
    patch.add_node(renamed.type_id, renamed.values, renamed.pos, node_id=new,
                   spec=renamed.placeholder)  # fmt: skip
    for link in links:
        src = new if link.src == old else link.src
        dst = new if link.dst == old else link.dst
        patch.connect(src, link.src_pin, dst, link.dst_pin)
    if patch.owner is not None:
        return  # a body: bindings and presets name the document's nodes
    for binding_id, binding in list(patch.bindings.items()):
        if binding.node == old:
            patch.set_binding(binding_id, dataclasses.replace(binding, node=new))
    for name, values in list(patch.presets.items()):
        if any(node == old for node, _pin in values):
            moved = {((new if node == old else node), pin): v for (node, pin), v in values.items()}
            patch.set_preset(name, moved)


class RenameNodeCommand(QUndoCommand):
    """Give a node a new id (see `rename_node`); undo gives the old one back."""

    def __init__(self, patch: Patch, old: str, new: str) -> None:
        super().__init__(f"rename {old} to {new}")
        self._patch, self._old, self._new = patch, old, new

    def redo(self) -> None:
        rename_node(self._patch, self._old, self._new)

    def undo(self) -> None:
        rename_node(self._patch, self._new, self._old)


class NodeMenu:
    """A node's context menu and the canvas menu's enabled states (see the module note)."""

    def __init__(self, window: QtEditorWindow, edit: EditActions) -> None:
        self.window = window
        self.edit = edit
        window.canvas.node_menu = self.show_for
        window.canvas.before_canvas_menu = self.update_canvas_menu

    # ------------------------------------------------------------------ the node's menu
    def build(self, node_id: str) -> QMenu:
        """The menu of the shown node `node_id`, each item enabled only where it can act."""
        window, canvas = self.window, self.window.canvas
        shown = canvas.patch
        node = shown.nodes[node_id]
        editable = not window.patch.frozen
        menu = QMenu(window)
        menu.setToolTipsVisible(True)
        selected = canvas.selected_ids()
        count = len(selected) if node_id in selected else 1
        many = f" {count} nodes" if count > 1 else ""

        def add(text: str, slot: Any, why_not: str | None = None) -> QAction:
            action = menu.addAction(text)
            action.triggered.connect(lambda _checked=False: slot())
            action.setEnabled(why_not is None)
            if why_not:
                action.setToolTip(why_not)
            return action

        read_only = None if editable else "the patch is read-only (a frozen export)"
        add("Rename…", lambda: self.rename(node_id), read_only)
        add(f"Delete{many}", self.edit.delete_selection, read_only)
        add(f"Duplicate{many}", self.edit.duplicate_selection, read_only)
        menu.addSeparator()
        help_type = node.type_id if node.type_id in LIBRARY else None
        add("Help", lambda: window.view_actions.show_help(node.type_id),
            None if help_type else f"no help for {node.type_id}: it is not installed")  # fmt: skip
        add("Why did this run?", lambda: self.why(node_id), self._why_not(node_id))
        menu.addSeparator()
        self._pins_menu(menu, "Learn", self._learnable(node_id), self._learn_not(),
                        lambda pin: window.live_control.learn.toggle(node_id, pin))  # fmt: skip
        expose_not = self._expose_not() or read_only
        self._pins_menu(menu, "Expose", self._exposable(node_id), expose_not,
                        lambda pin: self.expose(node_id, pin))  # fmt: skip
        return menu

    def _pins_menu(
        self, menu: QMenu, title: str, pins: list[tuple[str, str]], why_not: str | None, act: Any
    ) -> None:
        """A submenu of pins (name, text); disabled with a reason when it cannot act."""
        sub = menu.addMenu(title)
        sub.setToolTipsVisible(True)
        if why_not is None and not pins:
            why_not = f"{title}: this node has no pin for it"
        for pin, text in pins if why_not is None else []:
            action = sub.addAction(text)
            action.setData(pin)
            action.triggered.connect(lambda _checked=False, pin=pin: act(pin))
        sub.setEnabled(why_not is None)
        sub.menuAction().setEnabled(why_not is None)
        sub.menuAction().setToolTip(why_not or "")

    def show_for(self, node_id: str, global_pos: QPoint) -> None:
        """A right-click on a node: select it (unless it is in the selection) and run its
        menu at `global_pos`."""
        canvas = self.window.canvas
        if node_id not in canvas.selected_ids():
            canvas.select([node_id])
        menu = self.build(node_id)
        menu.exec(global_pos)
        menu.deleteLater()  # one menu per right-click

    # ------------------------------------------------------------------ what each item can do
    def _why_not(self, node_id: str) -> str | None:
        shown = self.window.canvas.patch
        if shown.nodes[node_id].type_id == SUBPATCH:
            return "an instance runs as its body's nodes: enter it and ask one of them"
        return None

    def _learn_not(self) -> str | None:
        if self.window.patch.frozen:
            return "the patch is read-only (a frozen export)"
        if self.window.canvas.definition_name is not None:
            return "bindings are the document's: learn on an instance's pin, outside"
        return None

    def _learnable(self, node_id: str) -> list[tuple[str, str]]:
        """The unlinked input pins a control can drive."""
        shown = self.window.canvas.patch
        node = shown.nodes[node_id]
        return [(pin.name, pin.name) for pin in node.inputs
                if bindable(pin) and shown.link_into(node_id, pin.name) is None]  # fmt: skip

    def _expose_not(self) -> str | None:
        if self.window.canvas.definition_name is None:
            return "only inside a definition: enter an instance (Enter) to expose its pins"
        return None

    def _exposable(self, node_id: str) -> list[tuple[str, str]]:
        """Pins that can become an inlet (an unlinked input) or outlet (an output) of the
        definition shown; an inlet's or outlet's own pins are not offered."""
        shown = self.window.canvas.patch
        node = shown.nodes[node_id]
        if node.type_id in PORT_TYPES:
            return []
        pins = [(f"in:{pin.name}", f"{pin.name} as an inlet") for pin in node.inputs
                if shown.link_into(node_id, pin.name) is None]  # fmt: skip
        pins += [(f"out:{out.name}", f"{out.name} as an outlet") for out in node.spec.outputs]
        return pins

    # ------------------------------------------------------------------ the items' actions
    def ask_node_name(self, title: str, label: str, current: str) -> str | None:
        """A name typed by the person (None: cancelled)."""
        text, accepted = QInputDialog.getText(self.window, title, label, text=current)
        return text.strip() if accepted else None

    def rename(self, node_id: str) -> None:
        """Rename a node (its id), or an inlet / outlet (the pin name it gives instances)."""
        shown = self.window.canvas.patch
        node = shown.nodes[node_id]
        if node.type_id in PORT_TYPES:
            current = str(node.values.get("name", ""))
            name = self.ask_node_name("Rename pin", "Pin name:", current)
            if name and name != current:
                self.edit.on_value_edited(node_id, "name", name, None)
            return
        name = self.ask_node_name("Rename node", "Node id:", node_id)
        if not name or name == node_id:
            return
        if name in shown.nodes or "/" in name:
            reason = "is already used" if name in shown.nodes else "cannot hold '/'"
            self.edit.on_refused(f"rename {node_id}: the id {name!r} {reason}")
            return
        self.window.undo_stack.push(RenameNodeCommand(shown, node_id, name))
        self.window.canvas.select([name])

    def why(self, node_id: str) -> None:
        """Show the Profiler with why the node ran."""
        dock = self.window.docks["Profiler"]
        dock.show()
        dock.raise_()
        self.window.profiling.profiler_panel.explain(self.window.canvas.eval_id(node_id))

    def expose(self, node_id: str, which: str) -> None:
        """Make `which` ("in:pin" / "out:pin") of a node of the definition shown a pin of its
        instances: an inlet feeding it or an outlet reading it, named after the pin."""
        shown = self.window.canvas.patch
        node = shown.nodes[node_id]
        side, pin = which.split(":", 1)
        x, y = node.pos
        if side == "in":
            port_id = shown.new_id(INLET)
            values = {"name": pin, "default": shown.value(node_id, pin)}
            record = NodeRecord(port_id, INLET, values, (x - EXPOSE_GAP, y))
            link = Link(port_id, "out", node_id, pin)
        else:
            port_id = shown.new_id(OUTLET)
            record = NodeRecord(port_id, OUTLET, {"name": pin}, (x + EXPOSE_GAP, y))
            link = Link(node_id, pin, port_id, "in")

        def add() -> bool:
            AddNodesCommand(shown, [record], [link], f"expose {node_id}.{pin}").redo()
            return True

        if self.edit._document_edit(f"expose {node_id}.{pin}", add):
            self.window.canvas.select([port_id])

    # ------------------------------------------------------------------ the canvas menu
    def update_canvas_menu(self) -> None:
        """Enable the canvas menu's commands that can act now (see the module note)."""
        canvas = self.window.canvas
        graph_menu = canvas.graph.get_context_menu("graph")
        selected = canvas.selected_ids()
        shown = canvas.patch
        one_instance = len(selected) == 1 and shown.nodes[selected[0]].type_id == SUBPATCH
        editable = not self.window.patch.frozen
        backdrop = self.edit.menu_backdrop(quiet=True) is not None
        for text, can in (
            ("Add Backdrop Around Selection", editable),
            ("Rename Backdrop…", editable and backdrop),
            ("Recolour Backdrop…", editable and backdrop),
            ("Remove Backdrop", editable and backdrop),
            ("Group (Ctrl+G)", editable and bool(selected)),
            ("Ungroup (Ctrl+Shift+G)", editable and one_instance),
            ("Make Unique", editable and one_instance),
            ("Enter Instance (Enter)", one_instance),
            ("Leave Instance (Backspace)", bool(canvas.trail)),
        ):
            command = graph_menu.get_command(text)
            if command is not None:
                command.qaction.setEnabled(can)
