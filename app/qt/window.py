"""The editor window: canvas, node library, inspector, preview, status bar, and its parts.

The window owns the Patch being edited and the one undo stack every gesture goes to; an engine
runs the patch (app.engine.engine): the engine process through `EngineClient` (`patchbay edit`), or
an engine in this process through `LocalEngineLink` (app.engine.local: tests, benches, tools), which
speaks the same messages and runs one frame each turn of the window's loop. A 60 Hz timer turns
that loop: it sends the document's edits, reads the engine's messages, and refreshes what shows
the engine's reports (node colours, the inspector's state, link values: a few times a second;
the status bar twice a second), so a large patch spends its time running rather than repainting.

The window class keeps its docks and layout, the document and that loop; what the rest does lives
in controllers the window makes and owns, one module each, which reach the window's widgets,
session and engine through it: the menus' actions (`file_actions`: app.qt.actions.file,
`edit_actions`: app.qt.actions.edit, `view_actions`: app.qt.actions.view with Help and the output
window, `transport_actions`: app.qt.actions.transport with the toolbar), `live_control`
(app.qt.live_control: learn, bindings, live values, OSC sending), `report_views`
(app.qt.report_views: node colours, node state and the pictures) and `profiling`
(app.qt.profiling: the Profiler panel, docked here, and the heat tint). The window makes no GL
object: the engine pictures what the window asks for, and the output window is the engine's; an
engine without GL fails GPU nodes with "no GPU context" and cannot open the output window.

Every refresh step of a turn (the engine's messages, node colours, thumbnails, the Output panel,
the status bar) runs isolated (app.engine.reports.refresh): one that raises never stops the others
or the next turn, and each distinct failure is written to stderr once.

Files (app.qt.actions.file): the document, its file, recent files, autosave and recovery, the
clipboard's fragments and the patch clock live in a Qt-free `EditorSession` (app.session.session);
the window and its controllers keep widgets, actions and dialogs, and call it.

The engine process: `patchbay edit` runs the patch in a separate engine process (app.engine.engine,
app.qt.engine_host) that owns the evaluator, the GL service and the output window, so nothing the
editor does (a zoom on a big canvas, a save, a crash) can hold an output frame back. The window
is then a client (`engine=EngineClient`): every change event of the Patch goes to the engine as it
happens, the selection and the visible thumbnails become `watch` / `images` requests, and node
colours, the inspector's state, the preview, thumbnails and the status bar come from the engine's
reports (`RemoteEvaluator`), pictures included; an idle window costs its engine little (see
app.qt.report_views). When the engine restarts (it died, or its
watchdog stopped a hung node) the window resends the patch. Closing the window stops the engine
unless its output window is open (perform mode: the show goes on; `patchbay edit --attach`
attaches again). An engine in this process goes with the window.

Subpatches (grouping: app.qt.actions.edit): the canvas enters instances (app.qt.canvas.canvas),
with the breadcrumb bar (app.qt.canvas.breadcrumbs) above it. Inside, edits go to the definition's
body and the inspector, preview and thumbnails read the evaluator at the paths of the instance
entered through; the library lists the document's definitions to add instances from.

Values and feedback on the canvas live in their own modules, hooked in here: values of pins and
links (app.qt.canvas.link_values, refreshed with the node colours; with an engine their sources go
in the watch message's `report` list), refusals (app.qt.panels.messages: the Messages panel and a
bubble at the pointer), pins a dragged link fits (app.qt.canvas.pin_hints) and failure marks
downstream (app.qt.canvas.failure_marks, from the statuses `decorate_nodes` reads).

Nothing silent: what changes what the show does reaches the window in one line, in the Messages
panel (its tab says how many are unread): a service that could not start
(app.qt.panels.service_status: also an indicator per service in the status bar, "OSC: listening on
127.0.0.1:9000"), the first failure of each node, the engine restarting and why, learn that no
source can reach, sending that stays off; a click on an indicator opens File > Settings… (see
app.qt.actions.file).

Dialogs go through the controllers' `ask_*` / `report_error` methods so that tests can answer
them.
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
from app.qt.live_control import LiveControl
from app.qt.panels.bindings import QtBindingsPanel
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
    apply_staged,
    library_revision,
    sync_instances,
    user_nodes_folder,
)

DECORATE_EVERY = 6  # turns between node colour / preview updates (10 per second at 60 Hz)
STATUS_EVERY_S = 0.5
AUTOSAVE_POLL_MS = 250  # how often the window lets the session start or collect an autosave


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
        self.gl_problem = "" if engine.hello.gl else "no GL in the engine"
        self.undo_stack = QUndoStack(self)
        self.canvas = QtPatchCanvas(self.undo_stack)
        self.breadcrumbs = QtBreadcrumbBar(self.canvas)
        self.inspector = QtInspector()
        self.bindings_panel = QtBindingsPanel(self.undo_stack)
        self.preview = QtPreview()  # values, and the engine's pictures of textures
        self.output_picture = QLabel()  # the engine's picture of the gpu.output texture
        self.edits = EditBatch(Patch())  # the document's changes not yet sent to the engine
        self.library = QtLibraryPanel()
        self.presets_panel = QtPresetsPanel(self.undo_stack, self.send_to_engine)
        self.messages = QtMessageLog()
        self.bubble = QtBubble(self)
        self.service_status = QtServiceStatus()
        # The window's controllers (each module's note says what it does); the edit actions and
        # live control hear the panels' requests.
        self.file_actions = FileActions(self)
        self.edit_actions = EditActions(self)
        self.view_actions = ViewActions(self)
        self.transport_actions = TransportActions(self)
        self.live_control = LiveControl(self)
        self.report_views = ReportViews(self)
        self.profiling = Profiling(self.canvas, self.engine.send)
        self.link_values = QtLinkValues(
            self.canvas, self.report_views.link_value, self.report_views.link_shape
        )
        self.pin_hints = QtPinHints(self.canvas)
        self.failure_marks = QtFailureMarks(self.canvas)
        self.evaluator: RemoteEvaluator = engine.evaluator  # the engine's reports
        self._unsubscribe: Any = None
        self._frame = 0
        self._ticks = 0
        self.fps_since = time.perf_counter()
        self._fps = 0.0
        self._ending = False  # closing on a signal: nobody is asked anything
        self.refresh_steps = RefreshSteps("patchbay editor")

        self._build_layout()
        self.legend = QtLegend(self.canvas.widget)
        self.node_help = QtNodeHelp(self)
        self.node_help.open_example_requested.connect(self.view_actions.open_node_example)
        self._build_status_bar()
        self._build_actions()
        self.canvas.output_of = lambda path, pin: self.evaluator.output(path, pin)
        self._undo_router = FieldUndoRouter(self)
        app = QApplication.instance()
        if app is not None:
            app.installEventFilter(self._undo_router)
        self.canvas.selection_changed.connect(self._on_selection)
        self.inspector.retry_requested.connect(
            lambda node_id: self.report_views.retry_node(self.canvas.eval_id(node_id))
        )
        self.bindings_panel.node_requested.connect(self.view_actions.show_node)
        self.library.help_requested.connect(self.view_actions.show_help)
        self.canvas.level_changed.connect(self._on_level_changed)
        self.link_values.wanted_changed.connect(self.send_watch)
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
        self._autosave.timeout.connect(self.file_actions.poll_autosave)
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
            self.docks[title].visibilityChanged.connect(self.report_views.on_panel_shown)
        bottom, left = Qt.DockWidgetArea.BottomDockWidgetArea, Qt.DockWidgetArea.LeftDockWidgetArea
        for title, widget, area in (
            ("Messages", self.messages, bottom),
            ("Presets", self.presets_panel, left),
            ("Bindings", self.bindings_panel, bottom),
            ("Profiler", self.profiling.profiler_panel, bottom),
        ):
            self.docks[title] = self._dock(title, widget, area)
        self.tabifyDockWidget(self.docks["Messages"], self.docks["Bindings"])
        self.tabifyDockWidget(self.docks["Messages"], self.docks["Profiler"])
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
        self.service_status.settings_requested.connect(self.file_actions.open_settings)
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

    def add_action(self, menu: Any, text: str, slot: Any, *shortcuts: Any) -> QAction:
        """An action of the window in `menu` that calls `slot` (the controllers' menus too)."""
        action = QAction(text, self)
        if shortcuts:
            action.setShortcuts([QKeySequence(s) for s in shortcuts])
        action.triggered.connect(lambda _checked=False: slot())
        menu.addAction(action)
        return action

    def _build_actions(self) -> None:
        """The menus, each built by its actions' module, and the transport's toolbar."""
        menu = self.menuBar()
        self.file_actions.build_menu(menu.addMenu("&File"))
        frame_action = self.edit_actions.build_menu(menu.addMenu("&Edit"))
        self.view_actions.build_menu(menu.addMenu("&View"), frame_action)
        help_menu = menu.addMenu("&Help")
        self.help_action = self.add_action(
            help_menu, "&Node Help", self.view_actions.help_for_context, "F1"
        )

    def set_patch(
        self, patch: Patch, path: Path | None, *, send: bool = True, from_file: bool = False
    ) -> None:
        """Edit `patch` from now on (the undo history starts over). The patch is sent to the
        engine unless `send` is False (it came from the engine). A patch `from_file` (not
        made in this editor) with `osc.out` nodes may not send until the person allows it
        (`offer_allow_send`)."""
        self.live_control.set_patch(patch, from_file=from_file)
        if self._unsubscribe is not None:
            self._unsubscribe()
        self.undo_stack.clear()
        self.session.set_document(patch, path)
        self.canvas.set_patch(patch)
        self.presets_panel.set_patch(patch)
        self.edits = EditBatch(patch)
        unsubscribe = [patch.subscribe(self._on_patch_event), patch.subscribe(self.edits.add)]
        self._unsubscribe = lambda: [stop() for stop in unsubscribe]
        self.report_views.ask_anew()
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
        for part in (self.inspector, self.bindings_panel, self.library, self.presets_panel,
                     self.file_actions.save_action, *self.edit_actions.actions):  # fmt: skip
            part.setEnabled(not read_only)
        self.undo_stack.setClean()
        self.update_title()
        self.update_status()
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
        self.update_title()

    def update_title(self) -> None:
        self.setWindowTitle(self.session.title())

    def _on_patch_event(self, event: PatchEvent) -> None:
        self.update_title()  # an edit no undo step holds marks the document modified too
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
        self.live_control.on_patch_event(event)
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
        self.report_views.decorate_nodes()

    def _send_level(self) -> None:
        """Tell the engine which level the canvas shows: its reports carry those statuses."""
        self.send_edits()
        self.engine.send(Level("/".join(self.canvas.trail)))

    def send_patch(self) -> None:
        """Send the whole document and what the window asks of it (after a start, a restart or
        a resync)."""
        self.edits.clear()  # the whole patch supersedes them
        self.live_control.tell_send_allowed()  # first: the patch must not send before it may
        message, blobs = patch_message(self.patch)
        path = str(self.path) if self.path else None
        # `seq`: it holds every edit batched so far
        self.engine.send(dataclasses.replace(message, path=path, seq=self.edits.sent), blobs)
        self.send_watch()
        self._send_level()
        self.report_views.ask_anew()
        self.report_views.request_images()
        if self.transport_actions.paused:
            self.engine.send(Pause(True))
        clock = self.session.clock
        if clock.rate != 1.0:
            self.engine.send(Rate(clock.rate))
        if clock.fixed_fps is not None:
            self.engine.send(FixedStep(clock.fixed_fps))

    def send_to_engine(self, message: Message) -> None:
        """Send `message` after the edits before it (it may name what they made)."""
        self.send_edits()
        self.engine.send(message)

    def send_edits(self) -> None:
        """Send the document's changes since the last call (each turn of the loop, and before
        any other message, which may refer to them)."""
        batch = self.edits.take()
        if batch is not None:
            self.engine.send(*batch)

    def send_watch(self) -> None:
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
        self.report_views.refresh(now, decorate=self._ticks % DECORATE_EVERY == 0)
        if now - self.fps_since >= STATUS_EVERY_S:
            self._fps, self.fps_since = remote.fps, now
            step("status bar", self.update_status)

    def _on_engine_message(self, message: Any, blobs: list[bytes] | None = None) -> None:
        if isinstance(message, LiveValues):
            self.live_control.apply_live_values(message.values, blobs or [], message.seq)
        elif isinstance(message, Restarted):
            bypassed = message.bypassed
            why = message.why + (f"; {bypassed} bypassed" if bypassed else "")
            self.statusBar().showMessage(f"Engine restarted ({why})", 10000)
            self.messages.add("engine", f"restarted ({why}); the patch was sent to it again")
            self.service_status.clear()  # the new engine says what its services do
            self.send_patch()
            self.view_actions.reopen_output()
        elif isinstance(message, ResyncNeeded):
            self.send_patch()
        elif isinstance(message, Error | EngineFailed):
            self.statusBar().showMessage(f"Engine: {message.message}", 10000)
            self.messages.add("engine", message.message)
        elif isinstance(message, Learned):
            self.live_control.on_learned(message)
        elif isinstance(message, LearnUnreachable):
            self.live_control.on_learn_unreachable(message)
        elif isinstance(message, ServiceChanged):
            self.file_actions.show_service(message.name, status_of(message))
        elif isinstance(message, NodeFailed):
            self.messages.add("node", f"{message.node} failed: {message.error}")
        elif isinstance(message, ProfileReply):
            self.profiling.profiler_panel.show_reply(encode(message))

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
        self.send_watch()
        self.report_views.request_images()
        self.report_views.show_node_state()

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

    def update_status(self) -> None:
        ev, labels, paused = self.evaluator, self.status_labels, self.transport_actions.paused
        mode = "engine restarting" if ev.problem is not None else str(ev.mode)
        labels["mode"].setText(f"{mode}{' · paused' if paused else ''}")
        labels["fps"].setText("paused" if paused else f"{self._fps:.0f} fps")
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
        if not ending and not self.file_actions.maybe_save_changes():
            event.ignore()
            return
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self._undo_router)
        self._timer.stop()
        self._autosave.stop()
        if self.pack_watcher is not None:
            self.pack_watcher.close()
        self.live_control.learn.cancel(quiet=True)  # and its key filter leaves the application
        self.node_help.close()  # a window of its own: it would outlive the editor
        self.send_edits()  # perform mode: an open output window plays on
        self.engine.close(stop_engine=True, unless_showing=True)
        self.session.close(keep_unsaved=ending)
        event.accept()
