"""The editor window: canvas, node library, inspector, preview, status bar, and its parts.

The window owns the Patch being edited and the one undo stack every gesture goes to; an engine
runs the patch (app.engine.engine): the engine process through `EngineClient` (`patchbay edit`), or
an engine in this process through `LocalEngineLink` (app.engine.local: tests, benches, tools), which
speaks the same messages and runs one frame each turn of the window's loop. A 60 Hz timer turns
that loop: it sends the document's edits, reads the engine's messages, and refreshes what shows
the engine's reports (node colours, the inspector's state, link values: a few times a second;
the status bar twice a second), so a large patch spends its time running rather than repainting.

The window class keeps its docks and layout, the document and that loop; what the rest does lives
in one module per part, each a class mixed into `QtEditorWindow`: the menus' actions
(app.qt.actions.file, app.qt.actions.edit, app.qt.actions.view with Help and the output window,
app.qt.actions.transport with the toolbar), live control (app.qt.live_control), the views of the
engine's reports and pictures (app.qt.report_views) and profiling (app.qt.profiling).

Pictures: the window makes no GL object. The engine pictures what the window asks for (`images`):
the selected node's textures while the Preview panel shows, the `gpu.output` texture while the
Output panel shows, and small thumbnails of the textured nodes in view (a new round at most every
`THUMBNAIL_ROUND_S`); they come back with its reports and the window shows them as images. The
output window (View > Output Window, fullscreen on a screen chosen in View > Output Screen) is the
engine's: the window asks for it. An engine without GL fails GPU nodes with "no GPU context";
the output window cannot be opened then.

Every refresh step of a turn (the engine's messages, node colours, thumbnails, the Output panel,
the status bar) runs isolated (app.engine.reports.refresh): one that raises never stops the others
or the next turn, and each distinct failure is written to stderr once.

Files: New / Open / Open Recent / Save / Save As, with a prompt before unsaved changes are lost.
A file that does not load is reported with its one-line reason and the current patch stays. The
document, its file, recent files, autosave and recovery, the clipboard's fragments and the patch
clock live in a Qt-free `EditorSession` (app.session.session); the window keeps widgets, actions and
dialogs, and calls it. Autosave runs a few seconds after the last edit, on the session's worker
thread; at start the editor offers back only the autosaved work of editors that are no longer
running, also when it attaches to a running engine (beside what the engine plays).

The engine process: `patchbay edit` runs the patch in a separate engine process (app.engine.engine,
app.qt.engine_host) that owns the evaluator, the GL service and the output window, so nothing the
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
app.qt.canvas.canvas), with the breadcrumb bar (app.qt.canvas.breadcrumbs) above it. Inside, edits
go to the definition's body and the inspector, preview and thumbnails read the evaluator at the
paths of the instance entered through. Edits made of many steps are `DocumentEditCommand`s (one undo
step each); the library lists the document's definitions to add instances from.

Values and feedback on the canvas live in their own modules, hooked in here: values of pins and
links (app.qt.canvas.link_values, refreshed with the node colours; with an engine their sources go
in the watch message's `report` list), refusals (app.qt.panels.messages: the Messages panel and a
bubble at the pointer), pins a dragged link fits (app.qt.canvas.pin_hints) and failure marks
downstream (app.qt.canvas.failure_marks, from the statuses `decorate_nodes` reads). Nodes added from
the library go in free space near the view's centre (app.session.placement).

Live control (app.qt.panels.bindings): the inspector's pin menu, and the presets panel's menus for a
preset or the crossfader, learn a binding (the engine answers `learned` with the control that
moved; the binding is added as an undo step) or bind an OSC address typed; the engine's
controls recall bound presets and move the crossfader on its preset deck; the Bindings panel
lists and edits them; `live_values` from the engine go into the document as live edits. A patch
opened from a file with `osc.out` nodes sends nothing until the person allows it
(app.qt.dialogs.allow_send; `--allow-send` skips the question).

Help: F1 opens the node help window (app.qt.panels.help) for the library entry under the pointer,
else the node selected on the canvas; with neither it shows or hides the legend. The window's "Open
example" opens a small patch using the node (app.session.node_examples) as a new untitled document,
and File > Examples opens each bundled example patch (resources/examples) the same way: saving one
asks for a file name, so the bundled files are never overwritten.

Profiling (app.qt.panels.profiler): the Profiler dock lists the costliest nodes and why the selected
one ran, from `profile` replies (app.engine.reports.profile_costs) the engine sends when asked; View
> Heat tint colours node bodies by cost through the canvas's tints.

Nothing silent: what changes what the show does reaches the window in one line, in the Messages
panel (its tab says how many are unread): a service that could not start
(app.qt.panels.service_status: also an indicator per service in the status bar, "OSC: listening on
127.0.0.1:9000"), the first failure of each node, the engine restarting and why, learn that no
source can reach, sending that stays off. File > Settings… (app.qt.dialogs.settings; also a click on
an indicator) changes the OSC port and host, the tempo and the MIDI options live: the engine
restarts only the service concerned.

Dialogs go through the `ask_*` / `report_error` methods so that tests can answer them.
Frozen exports (`meta["frozen"]`) open read-only, with a banner.
"""

from __future__ import annotations

import dataclasses
import queue
import sys
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QUndoStack
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QLabel,
    QMainWindow,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app.engine.client import (
    EngineClient,
    EngineFailed,
    RemoteEvaluator,
    Restarted,
    default_state_dir,
)
from app.engine.local import LocalEngineLink
from app.engine.protocol.channel import EditBatch, patch_message
from app.engine.protocol.messages import (
    Error,
    FixedStep,
    Images,
    Learned,
    LearnUnreachable,
    Level,
    LiveValues,
    Message,
    NodeFailed,
    Pause,
    ProfileReply,
    Rate,
    ResyncNeeded,
    ServiceChanged,
    Watch,
    encode,
)
from app.engine.reports.refresh import RefreshSteps
from app.qt.actions.edit import EditActions
from app.qt.actions.file import FileActions
from app.qt.actions.transport import FRAME_INTERVAL_MS, TransportActions
from app.qt.actions.view import ViewActions
from app.qt.canvas.breadcrumbs import QtBreadcrumbBar
from app.qt.canvas.canvas import QtPatchCanvas
from app.qt.canvas.failure_marks import QtFailureMarks
from app.qt.canvas.legend import QtLegend
from app.qt.canvas.link_values import QtLinkValues
from app.qt.canvas.pin_hints import QtPinHints
from app.qt.dialogs.allow_send import osc_send_targets
from app.qt.dialogs.settings import QtSettingsDialog
from app.qt.live_control import LiveControl
from app.qt.panels.bindings import QtBindingsPanel, QtLearn
from app.qt.panels.help import QtNodeHelp
from app.qt.panels.inspector import QtInspector
from app.qt.panels.library import QtLibraryPanel
from app.qt.panels.messages import QtBubble, QtMessageLog, badge_dock
from app.qt.panels.presets import QtPresetsPanel
from app.qt.panels.preview import QtPreview
from app.qt.panels.service_status import QtServiceStatus, status_of
from app.qt.profiling import Profiling
from app.qt.report_views import ReportViews
from app.qt.support.focus import FieldUndoRouter
from app.qt.support.fonts import register_bundled_fonts
from app.session.session import EditorSession
from nodes import (
    DEFINITION_OPS,
    EditOp,
    PackWatcher,
    Patch,
    PatchEvent,
    TapTempo,
    apply_staged,
    library_revision,
    sync_instances,
    user_nodes_folder,
)
from nodes.document.bindings import PRESET_TARGET

DECORATE_EVERY = 6  # turns between node colour / preview updates (10 per second at 60 Hz)
THUMBNAIL_ROUND_S = 0.25  # a round over the visible nodes starts at most this often
STATUS_EVERY_S = 0.5
AUTOSAVE_POLL_MS = 250  # how often the window lets the session start or collect an autosave


class QtEditorWindow(
    FileActions,
    EditActions,
    ViewActions,
    TransportActions,
    LiveControl,
    ReportViews,
    Profiling,
    QMainWindow,
):
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
        self.gl_problem = "" if engine.hello.gl else "no GL in the engine"
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
        self._image_request: Images | None = None  # the last asked (None: ask anew)
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
        if self.engine.hello.gl:
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
        renderer = str(self.engine.hello.gl_renderer or "")
        gpu.setText(f"engine GL: {renderer.split(' (')[0]}" if renderer else "engine: no GL")
        gpu.setToolTip(f"The patch runs in engine process {self.engine.hello.pid}")

    def _action(self, menu: Any, text: str, slot: Any, *shortcuts: Any) -> QAction:
        action = QAction(text, self)
        if shortcuts:
            action.setShortcuts([QKeySequence(s) for s in shortcuts])
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        return action

    def _build_actions(self) -> None:
        """The menus, each built by its actions' module, and the transport's toolbar."""
        menu = self.menuBar()
        self._build_file_menu(menu.addMenu("&File"))
        frame_action = self._build_edit_menu(menu.addMenu("&Edit"))
        self._build_view_menu(menu.addMenu("&View"), frame_action)
        help_menu = menu.addMenu("&Help")
        self.help_action = self._action(help_menu, "&Node Help", self.help_for_context, "F1")

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
        self._image_request = None
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
        if event.op in DEFINITION_OPS or (
            event.op in (EditOp.ADD_NODE, EditOp.REMOVE_NODE, EditOp.PINS)
            and event.kind == "structural"
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
        removed = (
            event.node_id if event.op == EditOp.REMOVE_NODE and event.definition is None else None
        )
        if learning is not None and learning[0] == removed:
            self.learn.cancel()
        elif (
            learning is not None
            and learning[0] == PRESET_TARGET
            and event.op == EditOp.PRESET
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
        if event.op == EditOp.REMOVE_NODE and event.node_id == node_id:
            self._on_selection([])
        if event.op == EditOp.BINDING:
            self.inspector.refresh_bindings()

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
        self.engine.send(Level("/".join(self.canvas.trail)))

    def send_patch(self) -> None:
        """Send the whole document and what the window asks of it (after a start, a restart or
        a resync)."""
        self._edits.clear()  # the whole patch supersedes them
        self._tell_send_allowed()  # first: the patch must not send before it may
        message, blobs = patch_message(self.patch)
        path = str(self.path) if self.path else None
        # `seq`: it holds every edit batched so far
        self.engine.send(dataclasses.replace(message, path=path, seq=self._edits.sent), blobs)
        self._send_watch()
        self._send_level()
        self._image_request = None
        self._request_images()
        if self.paused:
            self.engine.send(Pause(True))
        clock = self.session.clock
        if clock.rate != 1.0:
            self.engine.send(Rate(clock.rate))
        if clock.fixed_fps is not None:
            self.engine.send(FixedStep(clock.fixed_fps))

    def _send_to_engine(self, message: Message) -> None:
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
        on the canvas (see app.qt.canvas.link_values)."""
        self.send_edits()
        node_id = self.preview.node_id
        watched = [node_id] if node_id else []
        report = self.link_values.wanted()
        self.engine.send(Watch(watched, report))

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

    def _on_engine_message(self, message: Any, blobs: list[bytes] | None = None) -> None:
        if isinstance(message, LiveValues):
            self._apply_live_values(message.values, blobs or [], message.seq)
        elif isinstance(message, Restarted):
            bypassed = message.bypassed
            why = message.why + (f"; {bypassed} bypassed" if bypassed else "")
            self.statusBar().showMessage(f"Engine restarted ({why})", 10000)
            self.messages.add("engine", f"restarted ({why}); the patch was sent to it again")
            self.service_status.clear()  # the new engine says what its services do
            self.send_patch()
            was_open, label, fullscreen = self.engine.evaluator.output_before
            if was_open:  # as it was: same screen, fullscreen or not
                screen = int(label.split(":")[0]) if label and label[:1].isdigit() else None
                self.show_output_on(screen, fullscreen=fullscreen)
        elif isinstance(message, ResyncNeeded):
            self.send_patch()
        elif isinstance(message, Error | EngineFailed):
            self.statusBar().showMessage(f"Engine: {message.message}", 10000)
            self.messages.add("engine", message.message)
        elif isinstance(message, Learned):
            self._on_learned(message)
        elif isinstance(message, LearnUnreachable):
            self._on_learn_unreachable(message)
        elif isinstance(message, ServiceChanged):
            self.show_service(message.name, status_of(message))
        elif isinstance(message, NodeFailed):
            self.messages.add("node", f"{message.node} failed: {message.error}")
        elif isinstance(message, ProfileReply):
            self.profiler_panel.show_reply(encode(message))

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
