"""The editor window's Edit actions: copy, paste, delete, groups, definitions and backdrops.

`EditActions` is a controller the editor window (app.qt.window) owns as `edit_actions`. Each edit is
one undo step on the window's stack: a many-step edit of definitions and instances is a
`DocumentEditCommand` (app.qt.commands), refused with its reason in the status bar, the Messages
panel and a bubble at the pointer. Copies go to the system clipboard as a patch document (and stay
in the session for arrays too large for it); nodes added from the library go in free space near the
view's centre (app.session.placement), and what is pasted, duplicated or ungrouped moves as one
piece off any node it would cover (`QtPatchCanvas.move_clear_of_others`), in the same undo step.
Backdrops are made, retitled, recoloured and removed from the canvas menu. Edit > Group (Ctrl+G)
turns the selection into a definition and an instance, Ungroup (Ctrl+Shift+G) and Make Unique undo
that for one instance. A node's own menu, and which of the canvas menu's commands are enabled,
are app.qt.actions.node_menu's (`node_menu`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QAction, QColor, QCursor, QKeySequence
from PySide6.QtWidgets import QApplication, QColorDialog, QInputDialog, QMenu

from app.qt.actions.node_menu import NodeMenu
from app.qt.commands import (
    AddNodesCommand,
    DocumentEditCommand,
    NodeRecord,
    RemoveNodesCommand,
    RenameDefinitionCommand,
    SetValueCommand,
    same_value,
)
from app.qt.support.focus import canvas_only
from app.session.placement import free_position
from nodes import Patch, PatchError

if TYPE_CHECKING:
    from app.qt.window import QtEditorWindow


class EditActions:
    """The window's Edit menu, the canvas menu's commands and what they do (see the module
    note); owned by the window."""

    def __init__(self, window: QtEditorWindow) -> None:
        self.window = window
        self.actions: list[QAction] = []  # disabled on a read-only (frozen) patch
        for refused in (window.canvas.refused, window.bindings_panel.refused):
            refused.connect(self.on_refused)
        window.presets_panel.on_error = self.on_refused
        window.presets_panel.selected_nodes = self.selected_document_nodes
        window.presets_panel.chosen_pin = self.chosen_document_pin
        window.canvas.backdrops.rename_requested = self.rename_backdrop
        window.inspector.value_edited.connect(self.on_value_edited)
        library = window.library
        library.create_requested.connect(self.create_at_center)
        library.instance_requested.connect(self.instance_at_center)
        library.rename_requested.connect(self.rename_definition)
        library.remove_requested.connect(self.remove_definition)
        self.node_menu = NodeMenu(window, self)  # a node's right-click menu; the canvas menu's

    def build_menu(self, edit: QMenu) -> QAction:
        """Edit, and the canvas menu's commands; the Frame selection action (View's, which acts
        on the canvas only, as the edit actions do) is made here and returned."""
        undo = self.window.undo_stack.createUndoAction(self.window, "&Undo")
        undo.setShortcuts([QKeySequence("Ctrl+Z")])
        redo = self.window.undo_stack.createRedoAction(self.window, "&Redo")
        redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        edit.addActions([undo, redo])
        edit.addSeparator()
        self.actions = [
            self.window.add_action(edit, "&Copy", self.copy_selection, "Ctrl+C"),
            self.window.add_action(edit, "&Paste", self.paste, "Ctrl+V"),
            self.window.add_action(edit, "&Duplicate", self.duplicate_selection, "Ctrl+D"),
            self.window.add_action(edit, "De&lete", self.delete_selection, "Delete"),
            self.window.add_action(edit, "&Group", self.group_selection, "Ctrl+G"),
            self.window.add_action(edit, "U&ngroup", self.ungroup_selection, "Ctrl+Shift+G"),
            self.window.add_action(edit, "Make &Unique", self.make_unique_selection),
        ]  # Undo / Redo follow the stack (empty on a read-only patch): enabling them would lie
        # Enter and Backspace / U are the canvas's own keys (while it has the focus).
        self.window.add_action(edit, "&Enter Instance (Enter)", self.window.canvas.enter_selected)
        self.window.add_action(edit, "Lea&ve Instance (Backspace)", self.window.canvas.leave)
        graph_menu = self.window.canvas.graph.get_context_menu("graph")
        # The canvas menu offers the document's Undo / Redo (NodeGraphQt's own are removed).
        graph_menu.qmenu.addActions([undo, redo])
        graph_menu.qmenu.addSeparator()
        for text, slot in (
            ("Add Backdrop Around Selection", self.add_backdrop),
            ("Rename Backdrop…", lambda: self.rename_backdrop(self._menu_backdrop())),
            ("Recolour Backdrop…", lambda: self.recolor_backdrop(self._menu_backdrop())),
            ("Remove Backdrop", lambda: self.remove_backdrop(self._menu_backdrop())),
        ):
            graph_menu.add_command(text, lambda _graph, slot=slot: slot())
        graph_menu.qmenu.addSeparator()
        for text, slot in (
            ("Group (Ctrl+G)", self.group_selection),
            ("Ungroup (Ctrl+Shift+G)", self.ungroup_selection),
            ("Make Unique", self.make_unique_selection),
            ("Enter Instance (Enter)", self.window.canvas.enter_selected),
            ("Leave Instance (Backspace)", self.window.canvas.leave),
        ):
            graph_menu.add_command(text, lambda _graph, slot=slot: slot())
        select_all = self.window.add_action(edit, "Select &All", self.select_all, "Ctrl+A")
        self.window.add_action(edit, "New node (Tab search)", self.window.canvas.open_tab_search)
        self.window.add_action(edit, "Add &Backdrop Around Selection", self.add_backdrop, "Ctrl+B")
        # These act on the canvas: in a text field, Delete, Ctrl+C or Ctrl+A edit the field.
        frame_action = QAction("&Frame selection", self.window)
        canvas_only([*self.actions[:6], select_all, frame_action], self.window.canvas.widget)
        return frame_action

    def on_refused(self, reason: str) -> None:
        """A refused edit: in the status bar, the message log and a bubble at the pointer (where
        it was last over the canvas, or where it is now)."""
        self.window.statusBar().showMessage(f"Refused: {reason}", 8000)
        self.window.messages.add("refused", reason)
        pointer = self.window.link_values.pointer
        viewport = self.window.canvas.viewer().viewport()
        if pointer is None or not viewport.rect().contains(viewport.mapFromGlobal(pointer)):
            pointer = QCursor.pos()
        self.window.bubble.show_at(pointer, f"Refused: {reason}")

    def selected_document_nodes(self) -> list[str]:
        """The nodes selected on the canvas while it shows the document (presets hold values of
        the document's nodes only; inside a definition, none)."""
        canvas = self.window.canvas
        return canvas.selected_ids() if canvas.patch is self.window.patch else []

    def chosen_document_pin(self) -> tuple[str, str] | None:
        """The input last clicked in the inspector, when it shows a node of the document."""
        inspector = self.window.inspector
        return inspector.chosen_pin() if inspector.patch is self.window.patch else None

    def on_value_edited(self, node_id: str, pin: str, value: Any, gesture: Any) -> None:
        shown = self.window.canvas.patch
        if node_id in shown.nodes and same_value(shown.value(node_id, pin), value):
            return  # e.g. Return, then leaving the field: one typed edit, one undo step
        command = SetValueCommand(self.window.canvas.patch, node_id, pin, value, gesture)
        try:
            command.apply()
        except PatchError as error:
            self.on_refused(str(error))
            self.window.inspector.refresh_values()
            return
        self.window.undo_stack.push(command)

    def _free_spot(self) -> tuple[float, float]:
        """Where a node added from the library goes: near the view's centre, on no other
        node (see app.session.placement)."""
        x, y = self.window.canvas.view_center()
        return free_position(self.window.canvas.node_rects(), (x - 80.0, y - 30.0))

    def create_at_center(self, type_id: str) -> None:
        node_id = self.window.canvas.create_node(type_id, self._free_spot())
        if node_id is not None:
            self.window.canvas.select([node_id])

    def instance_at_center(self, name: str) -> None:
        node_id = self.window.canvas.create_instance(name, self._free_spot())
        if node_id is not None:
            self.window.canvas.select([node_id])

    def _document_edit(self, text: str, edit: Any) -> Any:
        """Run a many-step edit of definitions and instances as one undo step; None (and the
        reason in the status bar) if the Patch refuses it."""
        command = DocumentEditCommand(self.window.patch, text, edit)
        try:
            command.apply()
        except PatchError as error:
            self.on_refused(str(error))
            return None
        self.window.undo_stack.push(command)
        return command.result

    def _new_definition_name(self, base: str) -> str:
        taken = self.window.patch.definitions
        return next(f"{base}{n}" for n in range(1, len(taken) + 2) if f"{base}{n}" not in taken)

    def group_selection(self) -> None:
        """Turn the selected nodes into a new definition and one instance in their place."""
        ids = self.window.canvas.selected_ids()
        if not ids:
            self.on_refused("nothing to group: select nodes first")
            return
        name = self.ask_definition_name("Group", self._new_definition_name("group"))
        shown = self.window.canvas.patch
        if name is not None:
            instance_id = self._document_edit(f"group {len(ids)} nodes as {name}",
                                              lambda: shown.group(ids, name))  # fmt: skip
            if instance_id is not None:
                self.window.canvas.select([instance_id])

    def _selected_instance(self, what: str) -> str | None:
        ids = self.window.canvas.selected_ids()
        shown = self.window.canvas.patch
        if len(ids) != 1 or shown.nodes[ids[0]].type_id != "subpatch":
            self.on_refused(f"{what}: select one instance of a definition")
            return None
        return ids[0]

    def ungroup_selection(self) -> None:
        """Put the selected instance's nodes in its place."""
        instance_id = self._selected_instance("ungroup")
        canvas = self.window.canvas
        shown = canvas.patch
        if instance_id is None:
            return

        def ungroup() -> list[str]:
            added = shown.ungroup(instance_id)
            canvas.move_clear_of_others(added)  # the body is wider than the instance was
            return added

        added = self._document_edit(f"ungroup {instance_id}", ungroup)
        if added is not None:
            canvas.select(added)

    def make_unique_selection(self) -> None:
        """Detach the selected instance onto a copy of its definition."""
        instance_id = self._selected_instance("make unique")
        if instance_id is None:
            return
        shown = self.window.canvas.patch
        old = str(shown.value(instance_id, "definition"))
        name = self.ask_definition_name("Make unique", self._new_definition_name(old))
        if name is not None:
            self._document_edit(f"make {instance_id} unique as {name}",
                                lambda: shown.make_unique(instance_id, name))  # fmt: skip

    def rename_definition(self, old: str) -> None:
        new = self.ask_definition_name(f"Rename {old}", old)
        if new is None or new == old:
            return
        command = RenameDefinitionCommand(self.window.patch, old, new)
        try:
            command.apply()
        except PatchError as error:
            self.on_refused(str(error))
            return
        self.window.undo_stack.push(command)

    def remove_definition(self, name: str) -> None:
        """Remove a definition no instance uses (refused, with where it is used, otherwise)."""
        self._document_edit(
            f"remove definition {name}", lambda: self.window.patch.remove_definition(name)
        )

    def ask_definition_name(self, title: str, default: str) -> str | None:
        """A definition name (None: cancelled); the Patch explains a name it refuses."""
        name, accepted = QInputDialog.getText(self.window, title, "Definition name:", text=default)
        return name.strip() if accepted else None

    def _insert(self, piece: Patch, text: str) -> None:
        """Add a copy of `piece` with fresh ids, offset, as one undo step; select it."""
        target = self.window.canvas.patch
        nodes, links = self.window.session.placed_copy(piece, target)
        if not nodes:
            return
        records = [NodeRecord(*node) for node in nodes]
        definitions = self.window.session.definitions_to_add(piece)

        def add() -> bool:
            for name, body in definitions:  # what its instances follow, if the document lacks it
                self.window.patch.add_definition(name, body)
            AddNodesCommand(target, records, links, text).redo()
            # Off the originals and every other node, the copy's own layout kept.
            self.window.canvas.move_clear_of_others([node[0] for node in nodes])
            return True

        # One step for the whole document: an instance may be refused there (a definition
        # inside itself), and definitions may come along.
        if self._document_edit(text, add):
            self.window.canvas.select([node[0] for node in nodes])

    def copy_selection(self) -> None:
        """Copy the selected nodes: to the system clipboard as a patch document, and kept in the
        session (nodes with large arrays, which need a sidecar file, paste in this window only)."""
        ids = self.window.canvas.selected_ids()
        if not ids:
            return
        text = self.window.session.copy(ids, self.window.canvas.patch)
        clipboard = QApplication.clipboard()
        if text:
            clipboard.setText(text)
        else:  # large arrays: nothing to put there, but an older copy must go
            clipboard.clear()

    def paste(self) -> None:
        """Paste the last copy: a patch on the system clipboard (copied in any patchbay window),
        else this window's last copy."""
        try:
            piece = self.window.session.to_paste(QApplication.clipboard().text())
        except PatchError as error:  # a patch on the clipboard that a file could not hold
            self.on_refused(str(error))
            return
        if piece is not None:
            self._insert(piece, "paste")

    def duplicate_selection(self) -> None:
        ids = self.window.canvas.selected_ids()
        if ids:
            self._insert(self.window.session.fragment(ids, self.window.canvas.patch), "duplicate")

    def delete_selection(self) -> None:
        ids = self.window.canvas.selected_ids()
        if ids:
            self.window.undo_stack.push(RemoveNodesCommand(self.window.canvas.patch, ids))

    def select_all(self) -> None:
        self.window.canvas.select(list(self.window.canvas.patch.nodes))

    def frame_selection(self) -> None:
        self.window.canvas.frame(self.window.canvas.selected_ids())

    def _menu_backdrop(self) -> str | None:
        return self.menu_backdrop()

    def menu_backdrop(self, *, quiet: bool = False) -> str | None:
        """The backdrop under the canvas menu's click, else the one holding the selection;
        None (refused, unless `quiet`) when there is none."""
        canvas = self.window.canvas
        found = canvas.backdrops.at(canvas.menu_scene_pos) if canvas.menu_scene_pos else None
        if found is None:
            selected = set(canvas.selected_ids())
            for backdrop in canvas.patch.backdrops.values():
                if selected and selected <= set(canvas.backdrops.nodes_inside(backdrop)):
                    found = backdrop.id
        if found is None and not quiet:
            self.on_refused("no backdrop there: right-click inside a backdrop")
        return found

    def add_backdrop(self) -> None:
        """Frame the selected nodes (or the view's centre) with a new backdrop."""
        self.window.canvas.backdrops.create_around(self.window.canvas.selected_ids())

    def ask_backdrop_title(self, current: str) -> str | None:
        title, accepted = QInputDialog.getText(self.window, "Backdrop", "Title:", text=current)
        return title.strip() if accepted else None

    def ask_backdrop_color(self, current: tuple[int, int, int]) -> tuple[int, int, int] | None:
        color = QColorDialog.getColor(QColor(*current), self.window, "Backdrop colour")
        return (color.red(), color.green(), color.blue()) if color.isValid() else None

    def rename_backdrop(self, backdrop_id: str | None) -> None:
        if backdrop_id is None:
            return
        title = self.ask_backdrop_title(self.window.canvas.patch.backdrops[backdrop_id].title)
        if title:
            self.window.canvas.backdrops.retitle(backdrop_id, title)

    def recolor_backdrop(self, backdrop_id: str | None) -> None:
        if backdrop_id is None:
            return
        color = self.ask_backdrop_color(self.window.canvas.patch.backdrops[backdrop_id].color)
        if color is not None:
            self.window.canvas.backdrops.recolor(backdrop_id, color)

    def remove_backdrop(self, backdrop_id: str | None) -> None:
        if backdrop_id is not None:
            self.window.canvas.backdrops.remove(backdrop_id)
