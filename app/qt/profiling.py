"""The editor window's profiling: the Profiler dock, the heat tint and going to a node by path.

`Profiling` is a controller the editor window (app.qt.window) owns as `profiling`; it works on the
canvas and sends to the engine, and the window docks its panel. The Profiler panel
(app.qt.panels.profiler) asks the engine for `profile` replies (the costliest nodes, why the
selected one ran); View > Heat tint colours node bodies by cost through the canvas's tints (log
scale of self time per frame; an instance by its cumulative time). A row of the panel selects its
node on the canvas, entering the instances on its path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from app.engine.protocol.messages import Message, ProfileRequest
from app.qt.panels.profiler import QtProfilerPanel, heat_color

if TYPE_CHECKING:
    from app.qt.canvas.canvas import QtPatchCanvas


class Profiling:
    """The window's profiling (see the module note); owned by the window, which docks its
    panel."""

    def __init__(self, canvas: QtPatchCanvas, send: Callable[[Message], Any]) -> None:
        self.canvas = canvas
        self._send = send  # to the engine
        self.profiler_panel = QtProfilerPanel()
        self.profiler_panel.request = self._request_profile
        self.profiler_panel.type_of = self._type_at
        self.profiler_panel.node_activated.connect(self.show_node_path)
        self.profiler_panel.replied.connect(self._show_heat)
        canvas.selection_changed.connect(self._explain_selected)
        canvas.level_changed.connect(self._show_heat)

    def build_heat_action(self, view: QMenu, add_action: Callable[..., QAction]) -> None:
        """View > Heat tint, made by the window's `add_action`."""
        self.heat_action = add_action(
            view, "&Heat tint", lambda: self.show_heat_tint(self.heat_action.isChecked())
        )
        self.heat_action.setCheckable(True)
        self.heat_action.setStatusTip("Tint nodes by their cost per frame: blue-grey cold, red hot")

    def show_heat_tint(self, shown: bool) -> None:
        """View > Heat tint: node bodies coloured by cost (log scale of self time per frame;
        an instance by its cumulative time), or their class colours again."""
        self.heat_action.setChecked(shown)
        self.profiler_panel.heat_wanted = shown
        if shown:
            self.profiler_panel.refresh()
        self._show_heat()

    def _show_heat(self) -> None:
        if not self.profiler_panel.heat_wanted:
            self.canvas.set_tints({})
            return
        cost = self.profiler_panel.cost_of
        eval_id = self.canvas.eval_id
        self.canvas.set_tints(
            {node_id: heat_color(cost(eval_id(node_id))) for node_id in self.canvas.patch.nodes}
        )

    def _request_profile(self, node: str | None, top: int) -> None:
        """Ask the engine for a `profile` reply (the panel shows it)."""
        self._send(ProfileRequest(node, top))

    def _type_at(self, path: str) -> str:
        """The type of the node at an evaluator path (a definition's name for an instance)."""
        instance = self.canvas.node_at(path)
        if instance is None:
            return ""
        definition = instance.values.get("definition") if instance.type_id == "subpatch" else None
        return f"subpatch {definition}" if isinstance(definition, str) else instance.type_id

    def _explain_selected(self, node_ids: list[str]) -> None:
        if node_ids:
            self.profiler_panel.explain(self.canvas.eval_id(node_ids[0]))

    def show_node_path(self, path: str) -> None:
        """Select the node at an evaluator path (`blob1/lfo3`) on the canvas, entering the
        instances on the way, and bring it into view."""
        *through, node_id = path.split("/")
        if self.canvas.trail != through:
            if self.canvas.trail:
                self.canvas.go_to(0)
            for instance_id in through:
                if not self.canvas.enter(instance_id):
                    return
        if node_id in self.canvas.patch.nodes:
            self.canvas.select([node_id])
            self.canvas.frame([node_id])
