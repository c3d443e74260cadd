"""The editor window: canvas, node library, inspector, preview, status bar, files and transport.

The window owns the Patch being edited and the one undo stack every gesture goes to; an engine
runs the patch (app.engine): the engine process through `EngineClient` (`patchbay edit`), or an
engine in this process through `LocalEngineLink` (app.engine_local: tests, benches, tools), which
speaks the same messages and runs one frame each turn of the window's loop. A 60 Hz timer turns
that loop: it sends the document's edits, reads the engine's messages, and refreshes what shows
the engine's reports (node colours, the inspector's state, link values: a few times a second;
the status bar twice a second), so a large patch spends its time running rather than repainting.

Pictures: the window makes no GL object. The engine pictures what the window asks for (`images`):
the selected node's textures while the Preview panel shows, the `gpu.output` texture while the
Output panel shows, and small thumbnails of the textured nodes in view (a new round at most every
`THUMBNAIL_ROUND_S`); they come back with its reports and the window shows them as images. The
output window (View > Output Window, fullscreen on a screen chosen in View > Output Screen) is the
engine's: the window asks for it. An engine without GL fails GPU nodes with "no GPU context";
the output window cannot be opened then.

Every refresh step of a turn (the engine's messages, node colours, thumbnails, the Output panel,
the status bar) runs isolated (app.refresh): one that raises never stops the others or the next
turn, and each distinct failure is written to stderr once.

Files: New / Open / Open Recent / Save / Save As, with a prompt before unsaved changes are lost.
A file that does not load is reported with its one-line reason and the current patch stays. The
document, its file, recent files, autosave and recovery, the clipboard's fragments and the patch
clock live in a Qt-free `EditorSession` (app.session); the window keeps widgets, actions and
dialogs, and calls it. Autosave runs a few seconds after the last edit, on the session's worker
thread; at start the editor offers back only the autosaved work of editors that are no longer
running, also when it attaches to a running engine (beside what the engine plays).

The engine process: `patchbay edit` runs the patch in a separate engine process (app.engine,
app.qt_engine) that owns the evaluator, the GL service and the output window, so nothing the
editor does (a zoom on a big canvas, a save, a crash) can hold an output frame back. The window
is then a client (`engine=EngineClient`): every change event of the Patch goes to the engine as it
happens, the selection and the visible thumbnails become `watch` / `images` requests, and node
colours, the inspector's state, the preview, thumbnails and the status bar come from the engine's
reports (`RemoteEvaluator`), pictures included. An idle window costs its engine little: it
asks for the pictures of the Preview and Output panels only while they show, repaints pictures
only when a report brought new ones, and redraws node colours only when a report changed a
status (`RemoteEvaluator.states`) or the canvas changed. When the engine restarts (it died, or its
watchdog stopped a hung node) the window resends the patch. Closing the window stops the engine
unless its output window is open (perform mode: the show goes on; `patchbay edit --attach`
attaches again). An engine in this process goes with the window.

Subpatches: Edit > Group (Ctrl+G) turns the selection into a definition and an instance, Ungroup
(Ctrl+Shift+G) and Make Unique undo that for one instance; the canvas enters instances (see
app.qt_canvas), with the breadcrumb bar (app.qt_breadcrumbs) above it. Inside, edits go to the
definition's body and the inspector, preview and thumbnails read the evaluator at the paths of
the instance entered through. Edits made of many steps are `DocumentEditCommand`s (one undo step
each); the library lists the document's definitions to add instances from.

Values and feedback on the canvas live in their own modules, hooked in here: values of pins and
links (app.qt_link_values, refreshed with the node colours; with an engine their sources go in
the watch message's `report` list), refusals (app.qt_messages: the Messages panel and a bubble
at the pointer), pins a dragged link fits (app.qt_pin_hints) and failure marks downstream
(app.qt_failure_marks, from the statuses `decorate_nodes` reads). Nodes added from the library go
in free space near the view's centre (app.placement).

Live control (app.qt_bindings): the inspector's pin menu, and the presets panel's menus for a
preset or the crossfader, learn a binding (the engine answers `learned` with the control that
moved; the binding is added as an undo step) or bind an OSC address typed; the engine's
controls recall bound presets and move the crossfader on its preset deck; the Bindings panel
lists and edits them; `live_values` from the engine go into the document as live edits. A patch
opened from a file with `osc.out` nodes sends nothing until the person allows it
(app.qt_allow_send; `--allow-send` skips the question).

Help: F1 opens the node help window (app.qt_help) for the library entry under the pointer, else
the node selected on the canvas; with neither it shows or hides the legend. The window's "Open
example" opens a small patch using the node (app.node_examples) as a new untitled document, and
File > Examples opens each bundled example patch (resources/examples) the same way: saving one
asks for a file name, so the bundled files are never overwritten.

Profiling (app.qt_profiler): the Profiler dock lists the costliest nodes and why the selected one
ran, from `profile` replies (app.profile_costs) the engine sends when asked; View > Heat tint
colours node bodies by cost through the canvas's tints.

Nothing silent: what changes what the show does reaches the window in one line, in the Messages
panel (its tab says how many are unread): a service that could not start (app.qt_service_status:
also an indicator per service in the status bar, "OSC: listening on 127.0.0.1:9000"), the first
failure of each node, the engine restarting and why, learn that no source can reach, sending
that stays off. File > Settings… (app.qt_settings; also a click on an indicator) changes the OSC
port and host, the tempo and the MIDI options live: the engine restarts only the service
concerned.

Dialogs go through the `ask_*` / `report_error` methods so that tests can answer them.
Frozen exports (`meta["frozen"]`) open read-only, with a banner.
"""

from __future__ import annotations

import contextlib
import queue
import sys
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QColor,
    QCursor,
    QImage,
    QKeySequence,
    QUndoStack,
)
from PySide6.QtWidgets import (
    QApplication,
    QColorDialog,
    QDialog,
    QDockWidget,
    QDoubleSpinBox,
    QFileDialog,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app.engine_client import EngineClient, RemoteEvaluator, default_state_dir
from app.engine_local import LocalEngineLink
from app.engine_protocol import (
    EditBatch,
    ProtocolError,
    decode_value,
    patch_from_message,
    patch_message,
)
from app.node_examples import example_patch, example_paths
from app.patch_info import output_node
from app.placement import free_position
from app.qt_allow_send import QtAllowSendDialog, osc_send_targets
from app.qt_bindings import (
    QtBindingsPanel,
    QtLearn,
    bindings_of,
    default_range,
    is_special_target,
    special_target_exists,
    target_label,
)
from app.qt_breadcrumbs import QtBreadcrumbBar
from app.qt_canvas import QtPatchCanvas
from app.qt_commands import (
    AddNodesCommand,
    DocumentEditCommand,
    NodeRecord,
    RemoveNodesCommand,
    RenameDefinitionCommand,
    SetBindingCommand,
    SetValueCommand,
    same_value,
)
from app.qt_export import export_frozen_dialog
from app.qt_failure_marks import QtFailureMarks
from app.qt_focus import FieldUndoRouter, canvas_only
from app.qt_fonts import register_bundled_fonts
from app.qt_help import QtNodeHelp
from app.qt_inspector import QtInspector
from app.qt_legend import QtLegend
from app.qt_library import QtLibraryPanel
from app.qt_link_values import QtLinkValues, short_value
from app.qt_messages import QtBubble, QtMessageLog, badge_dock
from app.qt_output import screen_choices
from app.qt_pin_hints import QtPinHints
from app.qt_presets import QtPresetsPanel
from app.qt_preview import QtPreview, fitted_pixmap
from app.qt_profiler import QtProfilerPanel, heat_color
from app.qt_service_status import QtServiceStatus, service_line, status_of
from app.qt_settings import QtSettingsDialog, SettingsChoice, SettingsCommand
from app.refresh import RefreshSteps
from app.session import EditorSession, Recovery
from evaluators import NodeClass, NodeStatus, ServiceStatus
from nodes import (
    DEFAULT_BPM,
    PackWatcher,
    Patch,
    PatchError,
    PatchEvent,
    TapTempo,
    UnknownNodeError,
    apply_staged,
    library_revision,
    sync_instances,
    user_nodes_folder,
)
from nodes._bindings import PRESET_TARGET, Binding

FRAME_INTERVAL_MS = 16
NUDGE_BEATS = 0.05  # how far one nudge shifts the beat (25 ms at 120 BPM)
FIXED_STEP_FPS = 60.0  # the Fixed step toggle's frames per second of patch time
MIN_RATE, MAX_EDITOR_RATE = 0.1, 4.0  # the rate box's range (the engine takes up to 16)
DECORATE_EVERY = 6  # turns between node colour / preview updates (10 per second at 60 Hz)
THUMBNAIL_ROUND_S = 0.25  # a round over the visible nodes starts at most this often
STATUS_EVERY_S = 0.5
AUTOSAVE_POLL_MS = 250  # how often the window lets the session start or collect an autosave
FILE_FILTER = "patchbay patches (*.patchbay);;All files (*)"
ATTACH_TIMEOUT_S = 30.0  # for the running engine's patch (a big one is tens of MB of blobs)


class QtEditorWindow(QMainWindow):
    """The patchbay editor; the patch runs in `engine`: a client of the engine process, or an
    engine in this process that the window steps (see the module note)."""

    def __init__(
        self, state_dir: Path | None = None, *, engine: EngineClient | LocalEngineLink
    ) -> None:
        super().__init__()
        register_bundled_fonts()  # text shows even on a machine with no fonts of its own
        self.state_dir = Path(state_dir) if state_dir else default_state_dir()
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.session = EditorSession(self.state_dir)
        self.engine = engine
        # An engine in this process runs a frame each turn of the window's loop.
        self._local_engine = engine if isinstance(engine, LocalEngineLink) else None
        self.gl_problem = "" if engine.hello.get("gl") else "no GL in the engine"
        self.undo_stack = QUndoStack(self)
        self.canvas = QtPatchCanvas(self.undo_stack)
        self.breadcrumbs = QtBreadcrumbBar(self.canvas)
        self.inspector = QtInspector()
        self.bindings_panel = QtBindingsPanel(self.undo_stack)
        self.learn = QtLearn(self._send_learn, self.statusBar().showMessage, self)
        self.always_allow_send = False  # `patchbay edit --allow-send`: every patch may send
        self.send_allowed = True  # whether the document's osc.out nodes may send
        self.preview = QtPreview()  # values, and the engine's pictures of textures
        self.output_picture = QLabel()  # the engine's picture of the gpu.output texture
        self._output_node: str | None = None  # the gpu.output node the Output panel shows
        self._image_request: dict[str, Any] = {}
        self._edits = EditBatch(Patch())  # the document's changes not yet sent to the engine
        self.library = QtLibraryPanel()
        self.presets_panel = QtPresetsPanel(self.undo_stack, self._send_to_engine)
        self.presets_panel.on_error = self._on_refused
        self.messages = QtMessageLog()
        self.bubble = QtBubble(self)
        self.service_status = QtServiceStatus()
        self.settings_dialog: QtSettingsDialog | None = None
        self.link_values = QtLinkValues(self.canvas, self._link_value, self._link_shape)
        self.pin_hints = QtPinHints(self.canvas)
        self.failure_marks = QtFailureMarks(self.canvas)
        self.taps = TapTempo()
        self.tap_clock = time.monotonic  # tests tap on a clock of their own
        self.evaluator: RemoteEvaluator = engine.evaluator  # the engine's reports
        self._unsubscribe: Any = None
        self._frame = 0
        self._ticks = 0
        self._textured: tuple[Any, list[str]] = ((), [])  # (shown patch, revisions), its nodes
        self._reports_shown = -1  # the engine's report whose pictures were last shown
        self._reports_decorated = -1  # the engine's report node colours were last made from
        self._decorated: tuple[Any, ...] = ()  # what the node colours last showed
        self._fps_since = time.perf_counter()
        self._fps = 0.0
        self._thumbnail_round_at = 0.0  # perf_counter() time the next round may start
        self._ending = False  # closing on a signal: nobody is asked anything
        self.refresh_steps = RefreshSteps("patchbay editor")

        self._build_layout()
        self._build_profiler()
        self.legend = QtLegend(self.canvas.widget)
        self.node_help = QtNodeHelp(self)
        self.node_help.open_example_requested.connect(self.open_node_example)
        self._build_status_bar()
        self._build_actions()
        self.canvas.output_of = lambda path, pin: self.evaluator.output(path, pin)
        self.canvas.backdrops.rename_requested = self.rename_backdrop
        self._undo_router = FieldUndoRouter(self)
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self._undo_router)
        self.canvas.refused.connect(self._on_refused)
        self.canvas.selection_changed.connect(self._on_selection)
        self.inspector.value_edited.connect(self._on_value_edited)
        self.inspector.retry_requested.connect(
            lambda node_id: self.retry_node(self.canvas.eval_id(node_id))
        )
        self.inspector.learn_requested.connect(self.learn.toggle)
        self.inspector.bind_osc_requested.connect(self.bind_to_osc_address)
        self.inspector.unbind_requested.connect(self.unbind_pin)
        self.learn.changed.connect(self.inspector.set_learning)
        self.learn.changed.connect(self.presets_panel.set_learning)
        self.presets_panel.learn_requested.connect(self.learn.toggle)
        self.presets_panel.bind_osc_requested.connect(self.bind_to_osc_address)
        self.presets_panel.unbind_requested.connect(self.unbind_pin)
        self.bindings_panel.node_requested.connect(self.show_node)
        self.bindings_panel.refused.connect(self._on_refused)
        self.library.create_requested.connect(self._create_at_center)
        self.library.instance_requested.connect(self._instance_at_center)
        self.library.rename_requested.connect(self.rename_definition)
        self.library.remove_requested.connect(self.remove_definition)
        self.library.help_requested.connect(self.show_help)
        self.canvas.level_changed.connect(self._on_level_changed)
        self.link_values.wanted_changed.connect(self._send_watch)
        self.undo_stack.cleanChanged.connect(self._on_clean_changed)

        self._pack_revision = library_revision()
        self.pack_watcher: PackWatcher | None = None  # see watch_packs
        self._pack_problems: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(FRAME_INTERVAL_MS)
        self._timer.timeout.connect(self.tick)
        self._autosave = QTimer(self)
        self._autosave.setInterval(AUTOSAVE_POLL_MS)
        self._autosave.timeout.connect(self._poll_autosave)
        self.set_patch(Patch(), None, send=False)  # an attached engine plays on meanwhile
        self._timer.start()
        self._autosave.start()

    # ------------------------------------------------------------------ layout
    def _build_layout(self) -> None:
        self.banner = QLabel()
        self.banner.setStyleSheet("background: #6a4b00; color: white; padding: 4px;")
        self.banner.hide()
        central = QWidget()
        layout = QVBoxLayout(central)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.banner)
        layout.addWidget(self.breadcrumbs)
        layout.addWidget(self.canvas.widget, 1)
        self.setCentralWidget(central)
        self.docks: dict[str, QDockWidget] = {}
        for title, widget, area in (
            ("Library", self.library, Qt.DockWidgetArea.LeftDockWidgetArea),
            ("Inspector", self.inspector, Qt.DockWidgetArea.RightDockWidgetArea),
            ("Preview", self.preview, Qt.DockWidgetArea.RightDockWidgetArea),
        ):
            scroll = QScrollArea()
            scroll.setWidgetResizable(True)
            scroll.setWidget(widget)
            self.docks[title] = self._dock(title, scroll, area)
        if self.engine.hello.get("gl"):
            self.output_picture.setMinimumHeight(160)
            ignored = QSizePolicy.Policy.Ignored  # the picture follows the dock, not the reverse
            self.output_picture.setSizePolicy(ignored, ignored)
            self.output_picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
            output: QWidget = self.output_picture
        else:
            output = QLabel(f"No OpenGL: GPU nodes do not run ({self.gl_problem}).")
            output.setWordWrap(True)
        self.docks["Output"] = self._dock("Output", output, Qt.DockWidgetArea.RightDockWidgetArea)
        for title in ("Preview", "Output"):  # pictures are asked for only while they show
            self.docks[title].visibilityChanged.connect(self._on_panel_shown)
        self.docks["Messages"] = self._dock(
            "Messages", self.messages, Qt.DockWidgetArea.BottomDockWidgetArea
        )
        self.docks["Presets"] = self._dock(
            "Presets", self.presets_panel, Qt.DockWidgetArea.LeftDockWidgetArea
        )
        self.docks["Bindings"] = self._dock(
            "Bindings", self.bindings_panel, Qt.DockWidgetArea.BottomDockWidgetArea
        )
        self.tabifyDockWidget(self.docks["Messages"], self.docks["Bindings"])
        self.docks["Messages"].raise_()
        badge_dock(self.docks["Messages"], self.messages)
        self.resize(1400, 850)
        right = [self.docks[title] for title in ("Inspector", "Preview", "Output")]
        self.resizeDocks(right, [380, 220, 200], Qt.Orientation.Vertical)
        self.resizeDocks([self.docks["Messages"]], [110], Qt.Orientation.Vertical)

    def _dock(self, title: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(title)
        dock.setMinimumWidth(280)
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        bar.addPermanentWidget(self.service_status)
        self.service_status.settings_requested.connect(self.open_settings)
        self.status_labels: dict[str, QLabel] = {}
        for key in ("mode", "fps", "frame", "build", "nodes", "gpu"):
            label = QLabel()
            label.setMinimumWidth(90)
            bar.addPermanentWidget(label)
            self.status_labels[key] = label
        gpu = self.status_labels["gpu"]
        renderer = str(self.engine.hello.get("gl_renderer") or "")
        gpu.setText(f"engine GL: {renderer.split(' (')[0]}" if renderer else "engine: no GL")
        gpu.setToolTip(f"The patch runs in engine process {self.engine.hello.get('pid')}")

    def _action(self, menu: Any, text: str, slot: Any, *shortcuts: Any) -> QAction:
        action = QAction(text, self)
        if shortcuts:
            action.setShortcuts([QKeySequence(s) for s in shortcuts])
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        return action

    def _build_actions(self) -> None:
        menu = self.menuBar()
        file_menu = menu.addMenu("&File")
        self._action(file_menu, "&New", self.new_patch, QKeySequence.StandardKey.New)
        self._action(file_menu, "&Open…", self.open_dialog, QKeySequence.StandardKey.Open)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self.examples_menu = file_menu.addMenu("E&xamples")
        for path in example_paths():
            self._action(self.examples_menu, path.stem, lambda p=path: self.open_example(p))
        self.save_action = self._action(
            file_menu, "&Save", self.save, QKeySequence.StandardKey.Save
        )
        self._action(file_menu, "Save &As…", self.save_as, "Ctrl+Shift+S")
        self._action(file_menu, "Export &Frozen…", self.export_frozen, "Ctrl+E")
        file_menu.addSeparator()
        self._action(file_menu, "Se&ttings…", self.open_settings, "Ctrl+,")
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", self.close, QKeySequence.StandardKey.Quit)

        edit = menu.addMenu("&Edit")
        undo = self.undo_stack.createUndoAction(self, "&Undo")
        undo.setShortcuts([QKeySequence("Ctrl+Z")])
        redo = self.undo_stack.createRedoAction(self, "&Redo")
        redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        edit.addActions([undo, redo])
        edit.addSeparator()
        self.edit_actions = [
            self._action(edit, "&Copy", self.copy_selection, "Ctrl+C"),
            self._action(edit, "&Paste", self.paste, "Ctrl+V"),
            self._action(edit, "&Duplicate", self.duplicate_selection, "Ctrl+D"),
            self._action(edit, "De&lete", self.delete_selection, "Delete"),
            self._action(edit, "&Group", self.group_selection, "Ctrl+G"),
            self._action(edit, "U&ngroup", self.ungroup_selection, "Ctrl+Shift+G"),
            self._action(edit, "Make &Unique", self.make_unique_selection),
            undo,
            redo,
        ]
        # Enter and Backspace / U are the canvas's own keys (while it has the focus).
        self._action(edit, "&Enter Instance (Enter)", self.canvas.enter_selected)
        self._action(edit, "Lea&ve Instance (Backspace)", self.canvas.leave)
        graph_menu = self.canvas.graph.get_context_menu("graph")
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
            ("Enter Instance (Enter)", self.canvas.enter_selected),
            ("Leave Instance (Backspace)", self.canvas.leave),
        ):
            graph_menu.add_command(text, lambda _graph, slot=slot: slot())
        select_all = self._action(edit, "Select &All", self.select_all, "Ctrl+A")
        self._action(edit, "New node (Tab search)", self.canvas.open_tab_search)
        self._action(edit, "Add &Backdrop Around Selection", self.add_backdrop, "Ctrl+B")
        # These act on the canvas: in a text field, Delete, Ctrl+C or Ctrl+A edit the field.
        frame_action = QAction("&Frame selection", self)
        canvas_only([*self.edit_actions[:6], select_all, frame_action], self.canvas.widget)

        view = menu.addMenu("&View")
        frame_action.setShortcut(QKeySequence("F"))
        frame_action.triggered.connect(lambda _checked=False: self.frame_selection())
        view.addAction(frame_action)
        self._action(view, "Frame &all", lambda: self.canvas.frame(None), "Home")
        self.pause_action = self._action(view, "&Pause / resume", self.toggle_pause, "Space")
        self.step_action = self._action(view, "S&tep one frame", self.step_frame, ".")
        self.step_back_action = self._action(view, "Step &back one frame", self.step_back, ",")
        self.reset_time_action = self._action(view, "&Reset time", self.reset_time, "Ctrl+Home")
        transport = self.addToolBar("Transport")
        transport.setObjectName("Transport")
        view.addSeparator()
        self.tap_action = self._action(view, "Tap &tempo", self.tap_tempo)
        self.nudge_earlier_action = self._action(
            view, "Nudge beat &earlier", lambda: self.nudge_beat(NUDGE_BEATS)
        )
        self.nudge_later_action = self._action(
            view, "Nudge beat &later", lambda: self.nudge_beat(-NUDGE_BEATS)
        )
        self.resync_action = self._action(view, "Resync to &downbeat", self.resync_beat)
        self.fixed_step_action = self._action(
            view, "&Fixed step (render)", lambda: self.set_fixed_step(not self._fixed_step)
        )
        self.fixed_step_action.setCheckable(True)
        self.rate_box = QDoubleSpinBox()
        self.rate_box.setRange(MIN_RATE, MAX_EDITOR_RATE)
        self.rate_box.setSingleStep(0.1)
        self.rate_box.setDecimals(2)
        self.rate_box.setValue(1.0)
        self.rate_box.setSuffix("×")
        self.rate_box.setToolTip("Rate: patch time runs at this many times wall time")
        self.rate_box.valueChanged.connect(self.set_rate)
        # Short labels on the toolbar (the menu keeps the long ones, tooltips the keys).
        for action, label in (
            (self.pause_action, "Pause"),
            (self.step_back_action, "◀ Step"),
            (self.step_action, "Step ▶"),
            (self.reset_time_action, "Reset"),
            (self.fixed_step_action, "Fixed step"),
            (self.tap_action, "Tap"),
            (self.nudge_earlier_action, "Nudge −"),
            (self.nudge_later_action, "Nudge +"),
            (self.resync_action, "Resync"),
        ):
            action.setIconText(label)
            keys, text = action.shortcut().toString(), action.text().replace("&", "")
            action.setToolTip(f"{text} ({keys})" if keys else text)
        self.fixed_step_action.setToolTip(
            f"Fixed step: every frame advances 1/{FIXED_STEP_FPS:g} s of patch time (rendering)"
        )
        transport.addActions([self.pause_action, self.step_back_action, self.step_action,
                              self.reset_time_action])  # fmt: skip
        transport.addSeparator()
        transport.addWidget(QLabel(" Rate "))
        transport.addWidget(self.rate_box)
        transport.addAction(self.fixed_step_action)
        transport.addSeparator()
        transport.addActions([self.tap_action, self.nudge_earlier_action,
                              self.nudge_later_action, self.resync_action])  # fmt: skip
        self.link_values_action = self._action(
            view,
            "Show &Values on Links",
            lambda: self.show_link_values(not self.link_values.enabled),
        )
        self.link_values_action.setCheckable(True)
        view.addSeparator()
        self.output_action = self._action(
            view, "&Output Window", self.toggle_output_window, "Ctrl+Shift+O"
        )
        self.output_action.setCheckable(True)
        self.output_action.setEnabled(self._can_show_output)
        if not self._can_show_output:
            self.output_action.setStatusTip(f"No OpenGL: {self.gl_problem}")
        self.output_screen_menu = view.addMenu("Output &Screen")
        self.output_screen_menu.setEnabled(False)
        self.output_screen_menu.aboutToShow.connect(self._fill_output_screen_menu)
        self.allow_send_action = self._action(view, "Allow OSC &Sending…", self.offer_allow_send)
        view.addSeparator()
        self.legend_action = self._action(view, "&Legend", self._toggle_legend)
        self.legend_action.setToolTip("Show or hide the legend (F1 when no node is chosen)")
        self.legend_action.setCheckable(True)
        self.legend_action.setChecked(True)
        self.legend.closed.connect(lambda: self.legend_action.setChecked(False))
        self._build_heat_action(view)
        panels = view.addMenu("&Panels")
        for dock in self.docks.values():
            panels.addAction(dock.toggleViewAction())
        help_menu = menu.addMenu("&Help")
        self.help_action = self._action(help_menu, "&Node Help", self.help_for_context, "F1")

    # ------------------------------------------------------------------ help and examples
    def help_for_context(self) -> None:
        """F1: the help of the library entry pointed at, else of the node selected on the
        canvas; with neither, the legend is shown or hidden."""
        type_id = self.library.help_type()
        if type_id is None:
            selected = self.canvas.selected_ids()
            shown = self.canvas.patch
            if selected and selected[0] in shown.nodes:
                type_id = shown.nodes[selected[0]].type_id
        if type_id is None:
            self.legend_action.trigger()
            return
        self.show_help(type_id)

    def show_help(self, type_id: str) -> None:
        self.node_help.show_type(type_id)

    def open_node_example(self, type_id: str) -> bool:
        """Open the help example of `type_id` as a new untitled document."""
        if not self.maybe_save_changes():
            return False
        try:
            patch = example_patch(type_id)
        except PatchError as error:
            self.report_error(str(error))
            return False
        self.set_patch(patch, None, from_file=True)
        self.canvas.frame(None)
        return True

    def open_example(self, path: Path) -> bool:
        """Open a bundled example patch as a new untitled document (Save asks for a name)."""
        if not self.open_path(path, untitled=True):
            return False
        self.canvas.frame(None)
        return True

    # ------------------------------------------------------------------ profiler
    def _build_profiler(self) -> None:
        """The Profiler dock (app.qt_profiler), tabbed with Messages and Bindings."""
        self.profiler_panel = QtProfilerPanel()
        self.profiler_panel.request = self._request_profile
        self.profiler_panel.type_of = self._type_at
        self.profiler_panel.node_activated.connect(self.show_node_path)
        self.profiler_panel.replied.connect(self._show_heat)
        self.canvas.selection_changed.connect(self._explain_selected)
        self.canvas.level_changed.connect(self._show_heat)
        self.docks["Profiler"] = self._dock(
            "Profiler", self.profiler_panel, Qt.DockWidgetArea.BottomDockWidgetArea
        )
        self.tabifyDockWidget(self.docks["Messages"], self.docks["Profiler"])
        self.docks["Messages"].raise_()
        self.resizeDocks([self.docks["Messages"]], [110], Qt.Orientation.Vertical)

    def _build_heat_action(self, view: QMenu) -> None:
        self.heat_action = self._action(
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
        self.engine.send({"type": "profile", "node": node, "top": top})

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

    def _toggle_legend(self) -> None:
        self.legend.setVisible(self.legend_action.isChecked())
        if self.legend.isVisible():
            self.legend.raise_()

    # ------------------------------------------------------------------ backdrops
    def _menu_backdrop(self) -> str | None:
        """The backdrop under the canvas menu's click, else the one holding the selection."""
        canvas = self.canvas
        found = canvas.backdrops.at(canvas.menu_scene_pos) if canvas.menu_scene_pos else None
        if found is None:
            selected = set(canvas.selected_ids())
            for backdrop in canvas.patch.backdrops.values():
                if selected and selected <= set(canvas.backdrops.nodes_inside(backdrop)):
                    found = backdrop.id
        if found is None:
            self._on_refused("no backdrop there: right-click inside a backdrop")
        return found

    def add_backdrop(self) -> None:
        """Frame the selected nodes (or the view's centre) with a new backdrop."""
        self.canvas.backdrops.create_around(self.canvas.selected_ids())

    def ask_backdrop_title(self, current: str) -> str | None:
        title, accepted = QInputDialog.getText(self, "Backdrop", "Title:", text=current)
        return title.strip() if accepted else None

    def ask_backdrop_color(self, current: tuple[int, int, int]) -> tuple[int, int, int] | None:
        color = QColorDialog.getColor(QColor(*current), self, "Backdrop colour")
        return (color.red(), color.green(), color.blue()) if color.isValid() else None

    def rename_backdrop(self, backdrop_id: str | None) -> None:
        if backdrop_id is None:
            return
        title = self.ask_backdrop_title(self.canvas.patch.backdrops[backdrop_id].title)
        if title:
            self.canvas.backdrops.retitle(backdrop_id, title)

    def recolor_backdrop(self, backdrop_id: str | None) -> None:
        if backdrop_id is None:
            return
        color = self.ask_backdrop_color(self.canvas.patch.backdrops[backdrop_id].color)
        if color is not None:
            self.canvas.backdrops.recolor(backdrop_id, color)

    def remove_backdrop(self, backdrop_id: str | None) -> None:
        if backdrop_id is not None:
            self.canvas.backdrops.remove(backdrop_id)

    @property
    def _can_show_output(self) -> bool:
        return bool(self.engine.hello.get("gl"))

    # ------------------------------------------------------------------ the patch
    def set_patch(
        self, patch: Patch, path: Path | None, *, send: bool = True, from_file: bool = False
    ) -> None:
        """Edit `patch` from now on (the undo history starts over). The patch is sent to the
        engine unless `send` is False (it came from the engine). A patch `from_file` (not
        made in this editor) with `osc.out` nodes may not send until the person allows it
        (`offer_allow_send`)."""
        self.learn.cancel(quiet=True)
        self.send_allowed = self.always_allow_send or not from_file or not osc_send_targets(patch)
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.undo_stack.clear()
        self.session.set_document(patch, path)
        self.canvas.set_patch(patch)
        self.presets_panel.set_patch(patch)
        self._edits = EditBatch(patch)
        unsubscribe = [patch.subscribe(self._on_patch_event), patch.subscribe(self._edits.add)]
        self._unsubscribe = lambda: [stop() for stop in unsubscribe]
        self._image_request = {}
        if send:
            self.send_patch()
        self.bindings_panel.set_patch(patch)
        self.inspector.set_node(None, None)
        self.preview.set_outputs(None, [])
        self.breadcrumbs.refresh()
        self._show_definitions()
        read_only = patch.frozen
        self.banner.setVisible(read_only)
        self.banner.setText("Frozen export: read-only. Open the source patch to edit.")
        self.canvas.viewer().setInteractive(not read_only)
        self.inspector.setEnabled(not read_only)
        self.bindings_panel.setEnabled(not read_only)
        self.library.setEnabled(not read_only)
        self.presets_panel.setEnabled(not read_only)
        self.save_action.setEnabled(not read_only)
        for action in self.edit_actions:
            action.setEnabled(not read_only)
        self.undo_stack.setClean()
        self._update_title()
        self._update_status()
        self.canvas.frame(None, readable=True)

    @property
    def patch(self) -> Patch:
        """The document (the session's)."""
        return self.session.patch

    @property
    def path(self) -> Path | None:
        return self.session.path

    @property
    def modified(self) -> bool:
        return self.session.modified

    def _on_clean_changed(self, clean: bool) -> None:
        self.session.set_clean(clean)
        self._update_title()

    def _update_title(self) -> None:
        self.setWindowTitle(self.session.title())

    def _on_patch_event(self, event: PatchEvent) -> None:
        if event.op in ("add_definition", "remove_definition", "rename_definition") or (
            event.op in ("add_node", "remove_node", "pins") and event.kind == "structural"
        ):
            self._show_definitions()
            self.breadcrumbs.refresh()
        inside = self.canvas.definition_name
        if inside is not None and event.definition == inside and event.kind != "ui":
            count = self.canvas.instances_sharing(inside)
            self.statusBar().showMessage(
                f"Edited definition {inside}: affects {count} instance{'s' if count != 1 else ''}",
                4000,
            )
        learning = self.learn.target
        removed = event.node_id if event.op == "remove_node" and event.definition is None else None
        if learning is not None and learning[0] == removed:
            self.learn.cancel()
        elif (
            learning is not None
            and learning[0] == PRESET_TARGET
            and event.op == "preset"
            and learning[1] not in self.patch.presets
        ):
            self.learn.cancel()  # the preset learn waits for was removed
        node_id = self.inspector.node_id
        if node_id is None or event.definition != inside:
            return
        touches = event.node_id == node_id or (
            event.link is not None and node_id in (event.link.src, event.link.dst)
        )
        if touches:
            self.inspector.refresh_values()
        if event.op == "remove_node" and event.node_id == node_id:
            self._on_selection([])
        if event.op == "binding":
            self.inspector.refresh_bindings()

    # ------------------------------------------------------------------ the engine
    def _show_definitions(self) -> None:
        """The library's Definitions section: the document's definitions, with their use."""
        self.library.set_definitions(
            {name: self.canvas.instances_sharing(name) for name in self.patch.definitions}
        )

    def _on_level_changed(self) -> None:
        self._send_level()
        self._on_selection(self.canvas.selected_ids())
        self.decorate_nodes()

    def _send_level(self) -> None:
        """Tell the engine which level the canvas shows: its reports carry those statuses."""
        self.send_edits()
        self.engine.send({"type": "level", "path": "/".join(self.canvas.trail)})

    def send_patch(self) -> None:
        """Send the whole document and what the window asks of it (after a start, a restart or
        a resync)."""
        self._edits.clear()  # the whole patch supersedes them
        self._tell_send_allowed()  # first: the patch must not send before it may
        message, blobs = patch_message(self.patch)
        message["path"] = str(self.path) if self.path else None
        message["seq"] = self._edits.sent  # it holds every edit batched so far
        self.engine.send(message, blobs)
        self._send_watch()
        self._send_level()
        self._image_request = {}
        self._request_images()
        if self.paused:
            self.engine.send({"type": "pause", "paused": True})
        clock = self.session.clock
        if clock.rate != 1.0:
            self.engine.send({"type": "rate", "rate": clock.rate})
        if clock.fixed_fps is not None:
            self.engine.send({"type": "fixed_step", "fps": clock.fixed_fps})

    def _send_to_engine(self, message: dict[str, Any]) -> None:
        """Send `message` after the edits before it (it may name what they made)."""
        self.send_edits()
        self.engine.send(message)

    def send_edits(self) -> None:
        """Send the document's changes since the last call (each turn of the loop, and before
        any other message, which may refer to them)."""
        batch = self._edits.take()
        if batch is not None:
            self.engine.send(*batch)

    def _send_watch(self) -> None:
        """Ask the engine to watch the previewed node, and for the values of the sources shown
        on the canvas (see app.qt_link_values)."""
        self.send_edits()
        node_id = self.preview.node_id
        watched = [node_id] if node_id else []
        report = self.link_values.wanted()
        self.engine.send({"type": "watch", "nodes": watched, "report": report})

    def _on_panel_shown(self, _shown: bool) -> None:
        self._request_images()

    def _request_images(self, thumbnails: list[str] | None = None) -> None:
        """Ask the engine for pictures: the selected node's textures while the Preview panel
        shows, the `gpu.output` texture while the Output panel shows, and thumbnails of the
        textured nodes in view."""
        self._output_node = output_node(self.patch)
        output = self.output_picture
        previews = (
            [[self._output_node, "out"]] if self._output_node and output.isVisibleTo(self) else []
        )
        node_id = self.preview.node_id  # an evaluator path inside an instance
        node = self.canvas.node_at(node_id) if node_id is not None else None
        if node is not None and self.preview.isVisibleTo(self):
            previews += [[node_id, out.name] for out in node.spec.outputs
                         if out.type == "texture"]  # fmt: skip
        if thumbnails is None:
            thumbnails = self._image_request.get("thumbnails", [])
        request = {"type": "images", "thumbnails": thumbnails, "previews": previews}
        if request != self._image_request:
            self._image_request = request
            self.send_edits()
            self.engine.send(request)

    def tick(self) -> None:
        """One turn of the window's loop: node packs, the edits, a frame of an engine in this
        process, the engine's messages, then the views of its reports."""
        self.refresh_steps.run("packs", self.follow_packs)
        step = self.refresh_steps.run
        step("edits", self.send_edits)
        if self._local_engine is not None:
            step("engine frame", self._local_engine.step)
        for message, blobs in step("engine messages", self.engine.poll) or ():
            step("engine message", self._on_engine_message, message, blobs)
        remote = self.engine.evaluator
        self._frame = remote.frame
        self._ticks += 1
        now = time.perf_counter()
        if now >= self._thumbnail_round_at:
            self._thumbnail_round_at = now + THUMBNAIL_ROUND_S
            step("image request", self._request_visible_thumbnails)
        if self._ticks % DECORATE_EVERY == 0 and remote.reports != self._reports_decorated:
            self._reports_decorated = remote.reports
            shown = self.canvas.patch
            decorated = (remote.states, shown, shown.revision, tuple(self.canvas.trail))
            if decorated != self._decorated:  # a status, the engine's nodes or the canvas
                self._decorated = decorated
                step("node colours", self.decorate_nodes)
            step("node state", self._show_node_state)
            step("link values", self.link_values.refresh)
            self.output_action.setChecked(remote.output_open)
            self.output_screen_menu.setEnabled(remote.output_open)
        if remote.reports != self._reports_shown:  # pictures come with reports
            self._reports_shown = remote.reports
            step("thumbnails", self._show_engine_thumbnails)
            step("output panel", self._show_engine_output)
        if now - self._fps_since >= STATUS_EVERY_S:
            self._fps, self._fps_since = remote.fps, now
            step("status bar", self._update_status)

    def _on_engine_message(self, message: dict[str, Any], blobs: list[bytes] | None = None) -> None:
        kind = message.get("type")
        if kind == "live_values":
            seq = message.get("seq")
            self._apply_live_values(
                message.get("values"), blobs or [], seq if isinstance(seq, int) else 0
            )
        elif kind == "restarted":
            bypassed = message.get("bypassed")
            why = f"{message.get('why')}" + (f"; {bypassed} bypassed" if bypassed else "")
            self.statusBar().showMessage(f"Engine restarted ({why})", 10000)
            self.messages.add("engine", f"restarted ({why}); the patch was sent to it again")
            self.service_status.clear()  # the new engine says what its services do
            self.send_patch()
            was_open, label, fullscreen = self.engine.evaluator.output_before
            if was_open:  # as it was: same screen, fullscreen or not
                screen = int(label.split(":")[0]) if label and label[:1].isdigit() else None
                self.show_output_on(screen, fullscreen=fullscreen)
        elif kind == "resync":
            self.send_patch()
        elif kind in ("error", "engine_failed"):
            self.statusBar().showMessage(f"Engine: {message.get('message')}", 10000)
            self.messages.add("engine", str(message.get("message")))
        elif kind == "learned":
            self._on_learned(message)
        elif kind == "learn_unreachable":
            self._on_learn_unreachable(message)
        elif kind == "service":
            self.show_service(str(message.get("name")), status_of(message))
        elif kind == "node_failed":
            self.messages.add("node", f"{message.get('node')} failed: {message.get('error')}")
        elif kind == "profile":
            self.profiler_panel.show_reply(message)

    def show_service(self, name: str, status: ServiceStatus) -> None:
        """A service's status: in its status-bar indicator and the open Settings dialog; in
        Messages when it is off, or works again after being off."""
        before = self.service_status.status(name)
        if not self.service_status.show_status(name, status):
            return
        if self.settings_dialog is not None:
            self.settings_dialog.show_status(name, status)
        recovered = status.state == "on" and before is not None and before.state == "off"
        if status.state == "off" or recovered:
            self.messages.add("service", service_line(name, status))

    def open_settings(self) -> QtSettingsDialog:
        """File > Settings…: the dialog, open beside the window (app.qt_settings)."""
        if self.settings_dialog is not None:
            self.settings_dialog.raise_()
            return self.settings_dialog
        statuses = {
            name: status
            for name in ("osc", "midi")
            if (status := self.service_status.status(name)) is not None
        }
        dialog = QtSettingsDialog(self.patch.settings, statuses, self)
        dialog.applied.connect(self.apply_settings)
        dialog.finished.connect(self._settings_closed)
        self.settings_dialog = dialog
        dialog.open()
        return dialog

    def _settings_closed(self) -> None:
        if self.settings_dialog is not None:
            self.settings_dialog.deleteLater()
        self.settings_dialog = None

    def apply_settings(self, choice: SettingsChoice) -> None:
        """The Settings dialog's changes: patch settings as one undo step (the engine hears of
        them as edits), the OSC host as the engine's own option."""
        if choice.settings:  # valid by the dialog's ranges: the push applies them
            self.undo_stack.push(SettingsCommand(self.patch, choice.settings, choice.previous))
        if choice.osc_host is not None:
            self.send_edits()  # a port changed with it is restarted first
            self.engine.send({"type": "services", "osc_host": choice.osc_host})
        self.statusBar().showMessage("Settings applied", 4000)

    def _apply_live_values(self, values: Any, blobs: list[bytes], seq: int = 0) -> None:
        """What the engine's live controls set, as live edits of the document (not sent back,
        not undone); the inspector follows through the patch's events. A pin the document set
        in edits after `seq` (the last the engine had applied) keeps the document's value."""
        for entry in values if isinstance(values, list) else ():
            if not (isinstance(entry, list) and len(entry) == 3):
                continue
            node_id, pin, value = (str(entry[0]), str(entry[1]), entry[2])
            instance = self.patch.nodes.get(node_id)
            if instance is None or instance.input(pin) is None:
                continue
            if self._edits.edited_after(node_id, pin, seq):
                continue
            with contextlib.suppress(PatchError, ProtocolError, ValueError, TypeError):
                value = decode_value(value, blobs)
                if not same_value(instance.values.get(pin), value):
                    self.patch.set_value(node_id, pin, value, live=True)

    def _request_visible_thumbnails(self) -> None:
        shown = self.canvas.thumbnail_candidates(self._textured_nodes())
        self._request_images([self.canvas.eval_id(node_id) for node_id in shown])

    def _show_engine_thumbnails(self) -> None:
        """The thumbnails the engine sent, each isolated."""
        remote = self.engine.evaluator
        for path in self._image_request.get("thumbnails", []):  # paths inside an instance
            node_id = path.rsplit("/", 1)[-1]
            shown = self.canvas.eval_id(node_id) == path and node_id in self.canvas.patch.nodes
            pin = self._thumbnail_pin(node_id) if shown else None
            picture = remote.take_image(path, pin, "thumbnail") if pin else None
            if picture is not None:
                image = self.refresh_steps.run("thumbnail", _qimage, *picture)
                if image is not None:
                    self.canvas.set_thumbnail(node_id, image)

    def _show_engine_output(self) -> None:
        if self._output_node is not None:
            picture = self.engine.evaluator.take_image(self._output_node, "out", "preview")
            if picture is not None:
                label = self.output_picture
                label.setPixmap(fitted_pixmap(_qimage(*picture), label.width(), label.height()))

    def attach(self, timeout: float = ATTACH_TIMEOUT_S) -> bool:
        """Take the running engine's patch as the document (an editor attaching to a show);
        False if it did not come within `timeout` seconds."""
        if not self.engine.send({"type": "get_patch"}):
            return False
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for message, blobs in self.engine.poll():
                if message.get("type") == "patch":
                    path = message.get("path")
                    patch = patch_from_message(message, blobs)
                    where = Path(path) if isinstance(path, str) else None
                    # Its osc.out nodes send once allowed here (as a file's: it may be one).
                    self.set_patch(patch, where, send=False, from_file=True)
                    self.session.mark_unsaved()  # what the engine plays may not be saved
                    self._update_title()
                    self._send_watch()
                    if not self.send_allowed:
                        self.offer_allow_send()
                    return True
            time.sleep(0.01)
        return False

    # ------------------------------------------------------------------ files
    def new_patch(self) -> bool:
        if not self.maybe_save_changes():
            return False
        self.set_patch(Patch(), None)
        return True

    def open_dialog(self) -> bool:
        path = self.ask_open_path()
        return self.open_path(path) if path else False

    def open_path(self, path: str | Path, *, ask: bool = True, untitled: bool = False) -> bool:
        """Open a patch file; a bad file is reported and the current patch stays. `untitled`:
        as a new document that no file holds yet (an example), not a recent file."""
        if ask and not self.maybe_save_changes():
            return False
        try:
            patch = self.session.load(path)
        except PatchError as error:
            self.report_error(str(error))
            return False
        self.set_patch(patch, None if untitled else Path(path), from_file=True)
        if not untitled:
            self.session.remember_recent(Path(path))
        if not self.send_allowed:
            self.offer_allow_send()
        return True

    def save(self) -> bool:
        if self.path is None:
            return self.save_as()
        return self._write(self.path)

    def save_as(self) -> bool:
        path = self.ask_save_path()
        if not path:
            return False
        path = Path(path)
        if not path.suffix:
            path = path.with_suffix(".patchbay")
        if not self._write(path):
            return False
        self.session.remember_recent(path)
        return True

    def export_frozen(self) -> None:
        """File > Export Frozen…: the live patch as a frozen runtime patch (see app.qt_export)."""
        export_frozen_dialog(
            self, self.patch, self.path, saved=not self.modified, report_error=self.report_error
        )

    def _write(self, path: Path) -> bool:
        folder = self.patch.folder
        problem = self.session.save(path)
        if problem is not None:
            self.report_error(problem)
            return False
        if self.patch.folder != folder:
            self.send_patch()  # the engine's copy resolves file names in the new folder too
        else:
            self.engine.send({"type": "path", "path": str(path)})
        self.undo_stack.setClean()
        self._update_title()
        self.statusBar().showMessage(f"Saved {path}", 3000)
        return True

    def maybe_save_changes(self) -> bool:
        """True when it is fine to drop the current patch (saved, discarded or unchanged)."""
        if not self.modified:
            return True
        answer = self.ask_unsaved()
        if answer == "save":
            return self.save()
        return answer == "discard"

    def recent_files(self) -> list[str]:
        return self.session.recent_files()

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        for entry in self.recent_files():
            action = self.recent_menu.addAction(entry)
            action.triggered.connect(lambda _checked=False, p=entry: self.open_path(p))
        self.recent_menu.setEnabled(bool(self.recent_files()))

    # ------------------------------------------------------------------ recovery
    def autosave(self) -> None:
        """Start writing the patch to this editor's recovery file now (on the session's worker
        thread; edits normally trigger it, a few seconds after the last one)."""
        self.session.autosave()

    def _poll_autosave(self) -> None:
        for message in self.session.poll():
            self.statusBar().showMessage(message, 8000)

    def offer_recovery(self, playing: str | None = None) -> bool:
        """If editors that are no longer running left autosaved work, offer to restore it
        (one of it); True if restored. `playing` describes what the engine plays when this
        editor attached to it: the offer shows it beside the autosaved work, and a restore
        replaces it. Declining removes what was offered; work that fails to load is never
        removed. This editor's own autosave has a file of its own: it never replaces what is
        offered."""
        offered = self.session.orphaned_recoveries()
        if not offered:
            return False
        chosen = self.ask_restore(offered, playing)
        if chosen is None:
            self.session.discard(offered)
            return False
        self.session.release(r for r in offered if r != chosen)  # offered again next time
        try:
            patch = self.session.restore(chosen)
        except PatchError as error:  # kept: offered again next time, and there to open by hand
            self.session.release([chosen])
            self.report_error(f"{error}; the autosaved work stays in {chosen.patch_file}")
            return False
        self.set_patch(patch, chosen.original, from_file=True)
        self.session.mark_unsaved()
        self._update_title()
        if not self.send_allowed:
            self.offer_allow_send()
        return True

    # ------------------------------------------------------------------ dialogs (tests replace)
    def ask_unsaved(self) -> str:
        """'save', 'discard' or 'cancel'."""
        buttons = QMessageBox.StandardButton
        answer = QMessageBox.question(
            self,
            "Unsaved changes",
            f"Save the changes to {self.path.name if self.path else 'untitled'}?",
            buttons.Save | buttons.Discard | buttons.Cancel,
        )
        return {buttons.Save: "save", buttons.Discard: "discard"}.get(answer, "cancel")

    def ask_open_path(self) -> str | None:
        path, _ = QFileDialog.getOpenFileName(self, "Open patch", "", FILE_FILTER)
        return path or None

    def ask_save_path(self) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, "Save patch", "", FILE_FILTER)
        return path or None

    def ask_restore(
        self, recoveries: list[Recovery], playing: str | None = None
    ) -> Recovery | None:
        """Which autosaved work to restore (newest first), or None; `playing`: what the engine
        plays, shown beside it (see `offer_recovery`)."""
        plays = (
            f"\n\nThe engine plays {playing}. Restoring replaces it; declining keeps it."
            if playing is not None
            else ""
        )
        if len(recoveries) == 1:
            answer = QMessageBox.question(
                self,
                "Recover unsaved work",
                "An editor ended without saving. Restore its autosaved patch "
                f"({recoveries[0].describe()})?{plays}",
            )
            return recoveries[0] if answer == QMessageBox.StandardButton.Yes else None
        labels = [recovery.describe() for recovery in recoveries]
        label, accepted = QInputDialog.getItem(
            self,
            "Recover unsaved work",
            f"Editors ended without saving.{plays}\n\nRestore:",
            labels,
            0,
            False,
        )
        return recoveries[labels.index(label)] if accepted and label in labels else None

    def ask_definition_name(self, title: str, default: str) -> str | None:
        """A definition name (None: cancelled); the Patch explains a name it refuses."""
        name, accepted = QInputDialog.getText(self, title, "Definition name:", text=default)
        return name.strip() if accepted else None

    def ask_allow_send(self, targets: list[str]) -> bool:
        """Whether the document's osc.out nodes may send to `targets`."""
        name = self.path.name if self.path is not None else "This patch"
        return QtAllowSendDialog(name, targets, self).exec() == QDialog.DialogCode.Accepted

    def ask_osc_address(self, target: str, suggested: str) -> str | None:
        """An OSC address to bind `target` (node.pin) to (None: cancelled)."""
        address, accepted = QInputDialog.getText(
            self, "Bind to OSC address", f"OSC address driving {target}:", text=suggested
        )
        return address.strip() if accepted else None

    def report_error(self, message: str) -> None:
        self.statusBar().showMessage(message, 10000)
        QMessageBox.warning(self, "patchbay", message)

    # ------------------------------------------------------------------ editing
    def _on_refused(self, reason: str) -> None:
        """A refused edit: in the status bar, the message log and a bubble at the pointer (where
        it was last over the canvas, or where it is now)."""
        self.statusBar().showMessage(f"Refused: {reason}", 8000)
        self.messages.add("refused", reason)
        pointer = self.link_values.pointer
        viewport = self.canvas.viewer().viewport()
        if pointer is None or not viewport.rect().contains(viewport.mapFromGlobal(pointer)):
            pointer = QCursor.pos()
        self.bubble.show_at(pointer, f"Refused: {reason}")

    def _on_value_edited(self, node_id: str, pin: str, value: Any, gesture: Any) -> None:
        shown = self.canvas.patch
        if node_id in shown.nodes and same_value(shown.value(node_id, pin), value):
            return  # e.g. Return, then leaving the field: one typed edit, one undo step
        command = SetValueCommand(self.canvas.patch, node_id, pin, value, gesture)
        try:
            command.apply()
        except PatchError as error:
            self._on_refused(str(error))
            self.inspector.refresh_values()
            return
        self.undo_stack.push(command)

    # ------------------------------------------------------------------ bindings
    def _send_learn(self, message: dict[str, Any]) -> None:
        self.send_edits()  # the pin's node may be new
        self.engine.send(message)

    def _on_learn_unreachable(self, message: dict[str, Any]) -> None:
        """No source can reach the armed learn: say so now (learn stays armed; Esc cancels)."""
        if self.learn.target != (message.get("node"), message.get("pin")):
            return  # cancelled meanwhile
        label = target_label(*self.learn.target)
        advice = f" ({message.get('advice')})" if message.get("advice") else ""
        line = f"nothing can reach {label}: {message.get('reason')}{advice}"
        self.messages.add("learn", line)
        self.statusBar().showMessage(f"Learn: {line}", 15000)

    def _on_learned(self, message: dict[str, Any]) -> None:
        """The engine's answer to learn: bind the pin to the control that moved."""
        taken = self.learn.take(message)
        if taken is None:
            return  # cancelled meanwhile
        node_id, pin, source, device = taken
        if self.bind_pin(node_id, pin, source, device):
            self.docks["Bindings"].raise_()
            on = f" on {device}" if device else ""
            label = target_label(node_id, pin)
            self.statusBar().showMessage(f"Bound {label} to {source}{on}", 8000)

    def bind_pin(self, node_id: str, pin: str, source: str, device: str = "") -> bool:
        """Bind a target to a control as one undo step: a pin of the document over the pin's
        range (app.qt_bindings.default_range), a preset (`@preset`, its name) or the
        crossfader (`@crossfader`, `position`) over 0..1; False (and why) if it cannot be or
        already is."""
        patch = self.patch
        label = target_label(node_id, pin)
        if is_special_target(node_id):
            if not special_target_exists(patch, node_id, pin):
                what = "preset" if node_id == PRESET_TARGET else "target"
                self._on_refused(f"cannot bind {label}: the document has no such {what}")
                return False
            low, high = 0.0, 1.0
        else:
            inst = patch.nodes.get(node_id)
            spec = inst.input(pin) if inst is not None else None
            if inst is None or spec is None:
                self._on_refused(f"cannot bind {label}: the document has no such input")
                return False
            low, high = default_range(inst, spec)
        for key in bindings_of(patch, node_id, pin):
            if (patch.bindings[key].source, patch.bindings[key].device) == (source, device):
                self.statusBar().showMessage(f"{label} is bound to {source} already", 6000)
                return False
        try:
            binding = Binding(source, node_id, pin, low, high, device=device)
        except PatchError as error:
            self._on_refused(str(error))
            return False
        text = f"bind {label} to {source}"
        self.undo_stack.push(SetBindingCommand(patch, patch.new_binding_id(), binding, text))
        return True

    def bind_to_osc_address(self, node_id: str, pin: str) -> None:
        """ "Bind to OSC address…" (the inspector's pin menu, the presets panel): bind the
        target to an address typed."""
        label = target_label(node_id, pin)
        if node_id == PRESET_TARGET:
            suggested = "/preset/" + "_".join(pin.split())
        elif is_special_target(node_id):
            suggested = "/crossfader"
        else:
            suggested = f"/{node_id}/{pin}"
        address = self.ask_osc_address(label, suggested)
        if not address:
            return
        source = "osc:" + (address if address.startswith("/") else "/" + address)
        if self.bind_pin(node_id, pin, source):
            self.statusBar().showMessage(f"Bound {label} to {source}", 8000)

    def unbind_pin(self, node_id: str, pin: str) -> None:
        """Remove the bindings of a target, as one undo step."""
        doomed = bindings_of(self.patch, node_id, pin)
        if not doomed:
            return
        label = target_label(node_id, pin)
        self.undo_stack.beginMacro(f"remove the binding of {label}")
        for key in doomed:
            self.undo_stack.push(SetBindingCommand(self.patch, key, None, "remove binding"))
        self.undo_stack.endMacro()
        self.statusBar().showMessage(f"{label} is no longer bound", 6000)

    def show_node(self, node_id: str) -> None:
        """Select a node of the document on the canvas and bring it into view."""
        if self.canvas.trail:
            self.canvas.go_to(0)
        if node_id in self.canvas.patch.nodes:
            self.canvas.select([node_id])
            self.canvas.frame([node_id])

    def _tell_send_allowed(self) -> None:
        """Tell the engine whether the document's osc.out nodes may send."""
        self.engine.send({"type": "allow_send", "allow": self.send_allowed})

    def offer_allow_send(self) -> None:
        """Ask whether the document's osc.out nodes may send (View > Allow OSC Sending…, and
        on opening a file that has some)."""
        targets = osc_send_targets(self.patch)
        if not targets:
            self.statusBar().showMessage("This patch has no osc.out node: it sends nothing", 6000)
            return
        self.send_allowed = self.ask_allow_send(targets)
        self._tell_send_allowed()
        if not self.send_allowed:
            self.messages.add(
                "send",
                f"osc.out nodes send nothing to {', '.join(targets)} "
                "(View > Allow OSC Sending… lets them)",
            )
        count = len(targets)
        state = "may send" if self.send_allowed else "stays off"
        plural = "s" if count != 1 else ""
        self.statusBar().showMessage(f"OSC sending to {count} target{plural} {state}", 6000)

    def _free_spot(self) -> tuple[float, float]:
        """Where a node added from the library goes: near the view's centre, on no other
        node (see app.placement)."""
        x, y = self.canvas.view_center()
        return free_position(self.canvas.node_rects(), (x - 80.0, y - 30.0))

    def _create_at_center(self, type_id: str) -> None:
        node_id = self.canvas.create_node(type_id, self._free_spot())
        if node_id is not None:
            self.canvas.select([node_id])

    def _instance_at_center(self, name: str) -> None:
        node_id = self.canvas.create_instance(name, self._free_spot())
        if node_id is not None:
            self.canvas.select([node_id])

    def _document_edit(self, text: str, edit: Any) -> Any:
        """Run a many-step edit of definitions and instances as one undo step; None (and the
        reason in the status bar) if the Patch refuses it."""
        command = DocumentEditCommand(self.patch, text, edit)
        try:
            command.apply()
        except PatchError as error:
            self._on_refused(str(error))
            return None
        self.undo_stack.push(command)
        return command.result

    def _new_definition_name(self, base: str) -> str:
        taken = self.patch.definitions
        return next(f"{base}{n}" for n in range(1, len(taken) + 2) if f"{base}{n}" not in taken)

    def group_selection(self) -> None:
        """Turn the selected nodes into a new definition and one instance in their place."""
        ids = self.canvas.selected_ids()
        if not ids:
            self._on_refused("nothing to group: select nodes first")
            return
        name = self.ask_definition_name("Group", self._new_definition_name("group"))
        shown = self.canvas.patch
        if name is not None:
            instance_id = self._document_edit(f"group {len(ids)} nodes as {name}",
                                              lambda: shown.group(ids, name))  # fmt: skip
            if instance_id is not None:
                self.canvas.select([instance_id])

    def _selected_instance(self, what: str) -> str | None:
        ids = self.canvas.selected_ids()
        shown = self.canvas.patch
        if len(ids) != 1 or shown.nodes[ids[0]].type_id != "subpatch":
            self._on_refused(f"{what}: select one instance of a definition")
            return None
        return ids[0]

    def ungroup_selection(self) -> None:
        """Put the selected instance's nodes in its place."""
        instance_id = self._selected_instance("ungroup")
        shown = self.canvas.patch
        if instance_id is not None:
            added = self._document_edit(f"ungroup {instance_id}",
                                        lambda: shown.ungroup(instance_id))  # fmt: skip
            if added is not None:
                self.canvas.select(added)

    def make_unique_selection(self) -> None:
        """Detach the selected instance onto a copy of its definition."""
        instance_id = self._selected_instance("make unique")
        if instance_id is None:
            return
        shown = self.canvas.patch
        old = str(shown.value(instance_id, "definition"))
        name = self.ask_definition_name("Make unique", self._new_definition_name(old))
        if name is not None:
            self._document_edit(f"make {instance_id} unique as {name}",
                                lambda: shown.make_unique(instance_id, name))  # fmt: skip

    def rename_definition(self, old: str) -> None:
        new = self.ask_definition_name(f"Rename {old}", old)
        if new is None or new == old:
            return
        command = RenameDefinitionCommand(self.patch, old, new)
        try:
            command.apply()
        except PatchError as error:
            self._on_refused(str(error))
            return
        self.undo_stack.push(command)

    def remove_definition(self, name: str) -> None:
        """Remove a definition no instance uses (refused, with where it is used, otherwise)."""
        self._document_edit(f"remove definition {name}", lambda: self.patch.remove_definition(name))

    def _insert(self, piece: Patch, text: str) -> None:
        """Add a copy of `piece` with fresh ids, offset, as one undo step; select it."""
        target = self.canvas.patch
        nodes, links = self.session.placed_copy(piece, target)
        if not nodes:
            return
        records = [NodeRecord(*node) for node in nodes]
        definitions = self.session.definitions_to_add(piece)

        def add() -> bool:
            for name, body in definitions:  # what its instances follow, if the document lacks it
                self.patch.add_definition(name, body)
            AddNodesCommand(target, records, links, text).redo()
            return True

        # One step for the whole document: an instance may be refused there (a definition
        # inside itself), and definitions may come along.
        if self._document_edit(text, add):
            self.canvas.select([node[0] for node in nodes])

    def copy_selection(self) -> None:
        """Copy the selected nodes: to the system clipboard as a patch document, and kept in the
        session (nodes with large arrays, which need a sidecar file, paste in this window only)."""
        ids = self.canvas.selected_ids()
        if not ids:
            return
        text = self.session.copy(ids, self.canvas.patch)
        clipboard = QApplication.clipboard()
        if text:
            clipboard.setText(text)
        else:  # large arrays: nothing to put there, but an older copy must go
            clipboard.clear()

    def paste(self) -> None:
        """Paste the last copy: a patch on the system clipboard (copied in any patchbay window),
        else this window's last copy."""
        try:
            piece = self.session.to_paste(QApplication.clipboard().text())
        except PatchError as error:  # a patch on the clipboard that a file could not hold
            self._on_refused(str(error))
            return
        if piece is not None:
            self._insert(piece, "paste")

    def duplicate_selection(self) -> None:
        ids = self.canvas.selected_ids()
        if ids:
            self._insert(self.session.fragment(ids, self.canvas.patch), "duplicate")

    def delete_selection(self) -> None:
        ids = self.canvas.selected_ids()
        if ids:
            self.undo_stack.push(RemoveNodesCommand(self.canvas.patch, ids))

    def select_all(self) -> None:
        self.canvas.select(list(self.canvas.patch.nodes))

    def frame_selection(self) -> None:
        self.canvas.frame(self.canvas.selected_ids())

    def _on_selection(self, node_ids: list[str]) -> None:
        """Inspect the one node selected; inside an instance the inspector edits the body (every
        instance) and the preview shows the values of the instance entered through."""
        shown = self.canvas.patch
        node_id = node_ids[0] if len(node_ids) == 1 else None
        if node_id is not None and node_id not in shown.nodes:
            node_id = None
        self.inspector.bindings_enabled = self.canvas.definition_name is None  # the document's
        self.inspector.set_node(shown if node_id else None, node_id)
        outputs = [o.name for o in shown.nodes[node_id].spec.outputs] if node_id else []
        path = self.canvas.eval_id(node_id) if node_id else None
        self.preview.set_outputs(path, outputs)
        self._send_watch()
        self._request_images()
        self._show_node_state()

    # ------------------------------------------------------------------ transport
    def toggle_pause(self) -> None:
        self._send_to_engine({"type": "pause", "paused": not self.paused})
        self.session.clock.toggle()
        self._fps_since = time.perf_counter()  # paused time is no frame
        self._update_status()

    def step_frame(self) -> None:
        """Pause (when playing) and run one frame of patch time, FRAME_INTERVAL_MS on."""
        if not self.paused:
            self.toggle_pause()
        seconds = self._frame_seconds()
        self.session.clock.advance(seconds)
        self._send_to_engine({"type": "step", "seconds": seconds})

    def step_back(self) -> None:
        """Pause (when playing) and run the frame one frame of patch time back."""
        if not self.paused:
            self.toggle_pause()
        seconds = -self._frame_seconds()
        self.session.clock.advance(seconds)
        self._send_to_engine({"type": "step", "seconds": seconds})

    def _frame_seconds(self) -> float:
        fixed = self.session.clock.fixed_fps
        return 1.0 / fixed if fixed is not None else FRAME_INTERVAL_MS / 1000

    def set_rate(self, rate: float) -> None:
        """Patch time runs at `rate` times wall time (continuous: no jump)."""
        self.session.clock.set_rate(rate)
        self._send_to_engine({"type": "rate", "rate": rate})

    @property
    def _fixed_step(self) -> bool:
        return self.session.clock.fixed_fps is not None

    def set_fixed_step(self, fixed: bool) -> None:
        """Every frame advances exactly 1 / FIXED_STEP_FPS of patch time (rendering), or real
        time again from the time reached."""
        fps = FIXED_STEP_FPS if fixed else None
        self.session.clock.set_fixed_step(fps)
        self.fixed_step_action.setChecked(fixed)
        self._send_to_engine({"type": "fixed_step", "fps": fps})

    def reset_time(self) -> None:
        """Patch time and the frame count back to 0, so time nodes start over; paused, the
        frame at time 0 shows."""
        self.session.clock.reset()
        self._send_to_engine({"type": "reset_time"})

    def tap_tempo(self) -> None:
        """One tap (on `tap_clock`): from the third tap on in a series, the patch tempo follows
        the taps (the `bpm` setting, which reaches the engine as any settings edit)."""
        bpm = self.taps.tap(self.tap_clock())
        if bpm is not None:
            self.patch.update_settings(bpm=round(bpm, 1))
        tempo = self.patch.settings.get("bpm", DEFAULT_BPM)
        self.tap_action.setToolTip(f"Tap tempo ({tempo:g} BPM)")

    def nudge_beat(self, beats: float) -> None:
        """Shift the beat of every `time.beat` by `beats` (positive: earlier) next frame."""
        self.engine.send({"type": "nudge", "beats": beats})

    def resync_beat(self) -> None:
        """Make the next frame the downbeat (beat 0 of a bar) of every `time.beat`."""
        self.engine.send({"type": "resync"})

    @property
    def paused(self) -> bool:
        return self.session.clock.paused

    def clock(self) -> float:
        """Seconds of patch time: wall time since start, minus the time spent paused."""
        return self.session.clock.seconds()

    def watch_packs(self, folder: Path | None = None) -> None:
        """Follow the user's nodes folder (or `folder`): a pack file changed there is imported
        on the watcher's thread and swapped in by `tick`, between two frames."""
        if self.pack_watcher is None:
            self.pack_watcher = PackWatcher(folder or user_nodes_folder(), self._pack_problems.put)

    def follow_packs(self) -> None:
        """Swap staged node packs into the library and give the document's instances the new
        specs (placeholders when a type went); a pack that did not load is one line shown."""
        problems = apply_staged()
        while not self._pack_problems.empty():
            problems.append(self._pack_problems.get_nowait())
        document = self.canvas.document
        if library_revision() != self._pack_revision:
            self._pack_revision = library_revision()
            self.library.show_types()  # the pack's types come and go in the panel too
            if document is not None:
                sync_instances(document)
        for problem in problems:
            print(f"patchbay: {problem}", file=sys.stderr)
            self.statusBar().showMessage(problem, 10000)

    def _thumbnail_pin(self, node_id: str) -> str | None:
        """The shown node's first texture output, if it has one."""
        outputs = self.canvas.patch.nodes[node_id].spec.outputs
        return next((out.name for out in outputs if out.type == "texture"), None)

    def _textured_nodes(self) -> list[str]:
        """The shown nodes with a texture output (worked out again after structural edits)."""
        shown = self.canvas.patch
        key = (shown, shown.revision, library_revision())
        if self._textured[0] != key:
            self._textured = (key, [n for n in shown.nodes if self._thumbnail_pin(n) is not None])
        return self._textured[1]

    def node_state(self, path: str) -> tuple[NodeClass, NodeStatus, str | None]:
        """The evaluator's class, status and error of a node (an instance's inner node by its
        path, `blob1/lfo3`); one the evaluator does not know (yet) is idle."""
        ev = self.evaluator
        try:
            return ev.node_class(path), ev.status(path), ev.error(path)
        except (UnknownNodeError, KeyError):
            return NodeClass.CONST, NodeStatus.IDLE, None

    def decorate_nodes(self) -> None:
        """Node colours by class and status, and the marks of failures and what they hold back."""
        failed: dict[str, str] = {}
        last_good: dict[str, str] = {}
        shown = self.canvas.patch
        for node_id in shown.nodes:
            path = self.canvas.eval_id(node_id)
            node_class, status, error = self.node_state(path)
            self.canvas.decorate(node_id, node_class, status, error)
            if status == NodeStatus.FAILED:
                failed[node_id] = error or "no message"
                outputs = shown.nodes[node_id].spec.outputs
                if outputs and outputs[0].type != "texture":  # a texture's is its thumbnail
                    last_good[node_id] = short_value(self._link_value(path, outputs[0].name))
        self.failure_marks.update(failed, last_good)

    def show_link_values(self, shown: bool) -> None:
        """View > Show Values on Links."""
        self.link_values_action.setChecked(shown)
        self.link_values.set_enabled(shown)

    def _link_value(self, path: str, pin: str) -> Any:
        return self.evaluator.output(path, pin)

    def _link_shape(self, path: str, pin: str) -> tuple[int, ...] | None:
        return self.evaluator.output_shape(path, pin)

    def _show_node_state(self) -> None:
        path = self.preview.node_id
        node = self.canvas.node_at(path) if path is not None else None
        if path is None or node is None:
            return
        ev = self.evaluator
        node_class, status, error = self.node_state(path)
        self.inspector.set_state(node_class, status, error, self.is_bypassed(path))
        try:
            values = {o.name: ev.output(path, o.name) for o in node.spec.outputs}
        except (UnknownNodeError, KeyError):
            return
        failed = (error or "no message") if status == NodeStatus.FAILED else None
        self.preview.show_values(values, failed)
        for out in node.spec.outputs:
            picture = ev.take_image(path, out.name, "preview")
            if picture is not None:
                self.preview.show_picture(out.name, _qimage(*picture))

    def is_bypassed(self, node_id: str) -> bool:
        """Whether the node is bypassed (it took too long in a frame, or hung the engine)."""
        return node_id in self.evaluator.bypassed

    def retry_node(self, node_id: str) -> None:
        """Run a bypassed node again from the next frame (the inspector's Retry)."""
        self.engine.send({"type": "retry", "node": node_id})
        self.statusBar().showMessage(f"Retrying {node_id}", 3000)

    def _update_status(self) -> None:
        ev = self.evaluator
        labels = self.status_labels
        mode = str(ev.mode)
        if ev.problem is not None:
            mode = "engine restarting"
        labels["mode"].setText(f"{mode}{' · paused' if self.paused else ''}")
        labels["fps"].setText("paused" if self.paused else f"{self._fps:.0f} fps")
        labels["frame"].setText(f"frame {ev.last_frame_seconds * 1000:.2f} ms")
        build = ev.last_build_seconds
        labels["build"].setText(f"build {build * 1000:.1f} ms" if build else "build —")
        labels["nodes"].setText(f"{len(self.patch.nodes)} nodes")

    # ------------------------------------------------------------------ output window
    def toggle_output_window(self) -> None:
        """View > Output Window: open the engine's output window, or close it."""
        if self.evaluator.output_open:
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
        message = {"type": "output", "open": True, "screen": screen, "fullscreen": fullscreen}
        self.engine.send(message)
        self.evaluator.output_open = True
        self.output_action.setChecked(True)
        self.output_screen_menu.setEnabled(True)

    def close_output_window(self) -> None:
        """Close the engine's output window."""
        self.engine.send({"type": "output", "open": False})
        self.evaluator.output_open = False
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

    # ------------------------------------------------------------------ closing
    def end(self) -> None:
        """Close without asking (SIGINT, SIGTERM): unsaved work stays in this editor's recovery
        file, which the next editor offers back; the engine goes as on a normal close."""
        self._ending = True
        self.close()

    def closeEvent(self, event: QCloseEvent) -> None:
        ending = self._ending
        if not ending and not self.maybe_save_changes():
            event.ignore()
            return
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self._undo_router)
        self._timer.stop()
        self._autosave.stop()
        if self.pack_watcher is not None:
            self.pack_watcher.close()
        self.learn.cancel(quiet=True)  # and its key filter leaves the application
        self.send_edits()  # perform mode: an open output window plays on
        self.engine.close(stop_engine=True, unless_showing=True)
        self.session.close(keep_unsaved=ending)
        event.accept()


def _qimage(size: tuple[int, int], pixels: bytes) -> QImage:
    """A QImage owning a copy of RGBA pixels (rows top to bottom, as `GLService.readback`)."""
    width, height = size
    image = QImage(pixels, width, height, width * 4, QImage.Format.Format_RGBX8888)
    return image.copy()
