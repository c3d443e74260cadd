"""The editor window's View and Help actions: framing, link values, the output window, help.

`ViewActions` is a controller the editor window (app.qt.window) owns as `view_actions`. The output
window is the engine's: View > Output Window asks the engine to open or close it, View > Output
Screen to put it fullscreen on a screen (by name and resolution, as the screens are now); without GL
in the engine it cannot be opened. F1 opens the node help (app.qt.panels.help) for the library entry
under the pointer, else the selected node, else shows or hides the legend; a help example opens as a
new untitled document. The window's layout (app.qt.layout: docks, sizes, the legend) is kept
from one run to the next; View > Reset Layout puts the first one back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

from app.engine.protocol.messages import Output
from app.qt.layout import WindowLayout
from app.qt.output import screen_choices
from app.session.node_examples import example_patch
from nodes import PatchError

if TYPE_CHECKING:
    from app.qt.window import QtEditorWindow


class ViewActions:
    """The window's View and Help menus and what they do (see the module note); owned by the
    window."""

    def __init__(self, window: QtEditorWindow) -> None:
        self.window = window
        # A node's line in Messages (its failure) selects it, entering the instances on its path.
        window.messages.node_activated.connect(lambda path: window.profiling.show_node_path(path))

    def build_menu(self, view: QMenu, frame_action: QAction) -> None:
        """View: framing, the transport (app.qt.actions.transport), link values, the output
        window, sending, the legend, the heat tint (app.qt.profiling) and the panels."""
        frame_action.setShortcut(QKeySequence("F"))
        frame_action.triggered.connect(
            lambda _checked=False: self.window.edit_actions.frame_selection()
        )
        view.addAction(frame_action)
        self.window.add_action(view, "Frame &all", self.frame_all, "Home")
        self.window.transport_actions.build_menu(view)
        self.link_values_action = self.window.add_action(
            view,
            "Show &Values on Links",
            lambda: self.show_link_values(not self.window.link_values.enabled),
        )
        self.link_values_action.setCheckable(True)
        view.addSeparator()
        self.output_action = self.window.add_action(
            view, "&Output Window", self.toggle_output_window, "Ctrl+Shift+O"
        )
        self.output_action.setCheckable(True)
        self.output_action.setEnabled(self._can_show_output)
        if not self._can_show_output:
            self.output_action.setStatusTip(f"No OpenGL: {self.window.gl_problem}")
        self.output_screen_menu = view.addMenu("Output &Screen")
        self.output_screen_menu.setEnabled(False)
        self.output_screen_menu.aboutToShow.connect(self._fill_output_screen_menu)
        self.allow_send_action = self.window.add_action(
            view, "Allow OSC &Sending…", self.window.live_control.offer_allow_send
        )
        view.addSeparator()
        self.legend_action = self.window.add_action(view, "&Legend", self._toggle_legend)
        self.legend_action.setToolTip("Show or hide the legend (F1 when no node is chosen)")
        self.legend_action.setCheckable(True)
        self.legend_action.setChecked(True)
        self.window.legend.closed.connect(lambda: self.legend_action.setChecked(False))
        self.window.profiling.build_heat_action(view, self.window.add_action)
        # The legend shows the heat scale while nodes are tinted by cost, the class colours else.
        self.window.profiling.heat_action.toggled.connect(self.window.legend.show_heat)
        panels = view.addMenu("&Panels")
        for dock in self.window.docks.values():
            panels.addAction(dock.toggleViewAction())
        self.layout = WindowLayout(self.window)  # the last run's layout, now the menus exist
        self.reset_layout_action = self.window.add_action(view, "&Reset Layout", self.layout.reset)
        self.reset_layout_action.setToolTip(
            "Put every panel, the toolbar and the legend back where they were at first"
        )

    def frame_all(self) -> None:
        """View > Frame all: a person asking to see everything sees it now, even while a big
        patch is still being drawn (what is left is drawn first)."""
        canvas = self.window.canvas
        canvas.finish_loading()
        canvas.frame(None)

    @property
    def _can_show_output(self) -> bool:
        return bool(self.window.engine.hello.gl)

    def toggle_output_window(self) -> None:
        """View > Output Window: open the engine's output window, or close it."""
        if self.window.evaluator.output_open:
            self.close_output_window()
        else:
            self.open_output_window()

    def open_output_window(self) -> None:
        """Show the engine's output window (the patch's `gpu.output` texture); nothing when the
        engine has no GL."""
        if self._can_show_output:
            self.show_output_on(None, fullscreen=False)

    def show_output_on(self, screen: int | None, *, fullscreen: bool) -> None:
        """The engine's output window, on `screen` (an index), fullscreen or not."""
        self.window.engine.send(Output(True, screen, fullscreen))
        self.window.evaluator.output_open = True
        self.output_action.setChecked(True)
        self.output_screen_menu.setEnabled(True)

    def reopen_output(self) -> None:
        """After the engine restarted: its output window as it was before, if it was open (same
        screen, fullscreen or not)."""
        was_open, label, fullscreen = self.window.engine.evaluator.output_before
        if was_open:
            screen = int(label.split(":")[0]) if label and label[:1].isdigit() else None
            self.show_output_on(screen, fullscreen=fullscreen)

    def close_output_window(self) -> None:
        """Close the engine's output window."""
        self.window.engine.send(Output(False))
        self.window.evaluator.output_open = False
        self.output_action.setChecked(False)
        self.output_screen_menu.setEnabled(False)

    def _fill_output_screen_menu(self) -> None:
        """Screens by name and resolution (as they are now: a projector may have been plugged
        in), to put the output window fullscreen on, and "Leave fullscreen"."""
        menu = self.output_screen_menu
        for action in menu.actions():
            menu.removeAction(action)
        for child in menu.findChildren(QMenu):
            child.deleteLater()
        for index, label in screen_choices():
            action = menu.addAction(f"Fullscreen on {label}")
            action.triggered.connect(
                lambda _=False, i=index: self.show_output_on(i, fullscreen=True)
            )
        menu.addSeparator()
        leave = menu.addAction("Leave fullscreen")
        leave.triggered.connect(lambda _=False: self.show_output_on(None, fullscreen=False))

    def show_link_values(self, shown: bool) -> None:
        """View > Show Values on Links."""
        self.link_values_action.setChecked(shown)
        self.window.link_values.set_enabled(shown)

    def _toggle_legend(self) -> None:
        self.window.legend.setVisible(self.legend_action.isChecked())
        if self.window.legend.isVisible():
            self.window.legend.raise_()

    def help_for_context(self) -> None:
        """F1: the help of the library entry pointed at, else of the node selected on the
        canvas; with neither, the legend is shown or hidden."""
        type_id = self.window.library.help_type()
        if type_id is None:
            selected = self.window.canvas.selected_ids()
            shown = self.window.canvas.patch
            if selected and selected[0] in shown.nodes:
                type_id = shown.nodes[selected[0]].type_id
        if type_id is None:
            self.legend_action.trigger()
            return
        self.show_help(type_id)

    def show_help(self, type_id: str) -> None:
        self.window.node_help.show_type(type_id)

    def open_node_example(self, type_id: str) -> bool:
        """Open the help example of `type_id` as a new untitled document."""
        if not self.window.file_actions.maybe_save_changes():
            return False
        try:
            patch = example_patch(type_id)
        except PatchError as error:
            self.window.file_actions.report_error(str(error))
            return False
        self.window.set_patch(patch, None, from_file=True)
        self.window.file_actions.name_untitled(f"{type_id} (example)")
        self.window.canvas.frame(None)
        return True

    def show_node(self, node_id: str) -> None:
        """Select a node of the document on the canvas and bring it into view."""
        if self.window.canvas.trail:
            self.window.canvas.go_to(0)
        if node_id in self.window.canvas.patch.nodes:
            self.window.canvas.select([node_id])
            self.window.canvas.frame([node_id])
