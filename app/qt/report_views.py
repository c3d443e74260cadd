"""What the editor window shows of the engine's reports: node colours, node state, pictures.

`ReportViews` is a controller the editor window (app.qt.window) owns as `report_views`; each turn of
the window's loop calls its `refresh`. It asks the engine for pictures (`images`): the selected
node's textures while the Preview panel shows, the `gpu.output` texture while the Output panel
shows, and thumbnails of the textured nodes in view (`QtPatchCanvas.thumbnail_candidates`; none when
zoomed out to plain rectangles). They come with the reports and are shown once each, each isolated
(app.engine.reports.refresh). Node colours follow the statuses (with failure marks downstream,
app.qt.canvas.failure_marks), the inspector and the preview the selected node's state and values,
links their values (app.qt.canvas.link_values). An idle window costs its engine little: it asks for
the pictures of the Preview and Output panels only while they show, repaints pictures only when a
report brought new ones, and redraws node colours only when a report changed a status
(`RemoteEvaluator.states`) or the canvas changed. Thumbnails and the preview keep the pictures'
alpha (drawn over a checkerboard, app.qt.support.pictures); the Output panel shows the output
opaque, as the output window does. A failed node that no report has seen succeed says "no good
value yet" rather than its outputs' defaults (`RemoteEvaluator.ever_good`). A new document (File >
New, Open) clears the Output panel at once, and a document without a `gpu.output` node says so
there instead of keeping the last picture.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QImage

from app.engine.protocol.messages import Images, Retry
from app.engine.reports.patch_info import output_node
from app.qt.canvas.failure_marks import NO_GOOD_VALUE
from app.qt.canvas.link_values import short_value
from app.qt.panels.preview import fitted_pixmap
from app.qt.support.pictures import rgba_image
from evaluators import NodeClass, NodeStatus
from nodes import UnknownNodeError, is_picture, library_revision

if TYPE_CHECKING:
    from app.qt.window import QtEditorWindow

THUMBNAIL_ROUND_S = 0.25  # a round over the visible nodes starts at most this often
NO_OUTPUT_TEXT = "<span style='color: gray'>No picture: the patch has no gpu.output node</span>"


class ReportViews:
    """The views of the engine's reports (see the module note); owned by the window."""

    def __init__(self, window: QtEditorWindow) -> None:
        self.window = window
        self._output_node: str | None = None  # the gpu.output node the Output panel shows
        self.image_request: Images | None = None  # the last asked (None: ask anew)
        self._textured: tuple[Any, list[str]] = ((), [])  # (shown patch, revisions), its nodes
        self._reports_shown = -1  # the engine's report whose pictures were last shown
        self.reports_decorated = -1  # the engine's report node colours were last made from
        self._decorated: tuple[Any, ...] = ()  # what the node colours last showed
        self._thumbnail_round_at = 0.0  # perf_counter() time the next round may start
        self._document: Any = None  # the document whose pictures the panels show

    def refresh(self, now: float, *, decorate: bool) -> None:
        """The views of the engine's reports, one turn of the window's loop (each step isolated):
        a new round of thumbnails at most every `THUMBNAIL_ROUND_S`; when `decorate` and a new
        report came, node colours (only when a status, the engine's nodes or the canvas
        changed), node state and link values; the pictures of a new report."""
        window = self.window
        step = window.refresh_steps.run
        remote = window.engine.evaluator
        if window.patch is not self._document:  # New, Open: not the last document's pictures
            self._document = window.patch
            step("clear pictures", self.clear_pictures)
        if now >= self._thumbnail_round_at:
            self._thumbnail_round_at = now + THUMBNAIL_ROUND_S
            step("image request", self._request_visible_thumbnails)
        if decorate and remote.reports != self.reports_decorated:
            self.reports_decorated = remote.reports
            shown = window.canvas.patch
            decorated = (remote.states, shown, shown.revision, tuple(window.canvas.trail))
            if decorated != self._decorated:  # a status, the engine's nodes or the canvas
                self._decorated = decorated
                step("node colours", self.decorate_nodes)
            step("node state", self.show_node_state)
            step("link values", window.link_values.refresh)
            window.view_actions.output_action.setChecked(remote.output_open)
            window.view_actions.output_screen_menu.setEnabled(remote.output_open)
        if remote.reports != self._reports_shown:  # pictures come with reports
            self._reports_shown = remote.reports
            step("thumbnails", self._show_engine_thumbnails)
            step("output panel", self._show_engine_output)
            step("beat", window.transport_actions.show_beat)

    def ask_anew(self) -> None:
        """Forget the last request, so that the next is sent even if it is the same (a new
        document, or the whole patch sent again)."""
        self.image_request = None

    def on_panel_shown(self, _shown: bool) -> None:
        self.request_images()

    def request_images(self, thumbnails: list[str] | None = None) -> None:
        """Ask the engine for pictures: the selected node's textures while the Preview panel
        shows, the `gpu.output` texture while the Output panel shows, and thumbnails of the
        textured nodes in view."""
        self._output_node = output_node(self.window.patch)
        output = self.window.output_picture
        previews = (
            [[self._output_node, "out"]]
            if self._output_node and output.isVisibleTo(self.window)
            else []
        )
        node_id = self.window.preview.node_id  # an evaluator path inside an instance
        node = self.window.canvas.node_at(node_id) if node_id is not None else None
        if node is not None and self.window.preview.isVisibleTo(self.window):
            previews += [[node_id, out.name] for out in node.spec.outputs
                         if is_picture(out.type)]  # fmt: skip
        if thumbnails is None:
            thumbnails = self.image_request.thumbnails if self.image_request else []
        request = Images(thumbnails, previews)
        if request != self.image_request:
            self.image_request = request
            self.window.send_edits()
            self.window.engine.send(request)

    def _request_visible_thumbnails(self) -> None:
        shown = self.window.canvas.thumbnail_candidates(self._textured_nodes())
        self.request_images([self.window.canvas.eval_id(node_id) for node_id in shown])

    def _show_engine_thumbnails(self) -> None:
        """The thumbnails the engine sent, each isolated."""
        remote = self.window.engine.evaluator
        asked = self.image_request.thumbnails if self.image_request else []
        for path in asked:  # paths inside an instance
            node_id = path.rsplit("/", 1)[-1]
            shown = (
                self.window.canvas.eval_id(node_id) == path
                and node_id in self.window.canvas.patch.nodes
            )
            pin = self._thumbnail_pin(node_id) if shown else None
            picture = remote.take_image(path, pin, "thumbnail") if pin else None
            if picture is not None:
                image = self.window.refresh_steps.run("thumbnail", rgba_image, *picture)
                if image is not None:
                    self.window.canvas.set_thumbnail(node_id, image)

    def clear_pictures(self) -> None:
        """Another document shows: the Output panel drops the last one's frame (and pictures
        of it not shown yet are dropped), and says when the new one has no gpu.output."""
        self.window.engine.evaluator.forget_images()
        self.window.output_picture.clear()
        self.window.output_picture.setWordWrap(True)
        self._output_node = output_node(self.window.patch)
        self._show_engine_output()

    def _show_engine_output(self) -> None:
        label = self.window.output_picture
        if self._output_node is None:
            if not label.text():  # no gpu.output (any more): no picture of one
                label.setText(NO_OUTPUT_TEXT)
            return
        picture = self.window.engine.evaluator.take_image(self._output_node, "out", "preview")
        if picture is not None:
            label.setPixmap(fitted_pixmap(_qimage(*picture), label.width(), label.height()))

    def _thumbnail_pin(self, node_id: str) -> str | None:
        """The shown node's first texture output, if it has one."""
        outputs = self.window.canvas.patch.nodes[node_id].spec.outputs
        return next((out.name for out in outputs if is_picture(out.type)), None)

    def _textured_nodes(self) -> list[str]:
        """The shown nodes with a texture output (worked out again after structural edits)."""
        shown = self.window.canvas.patch
        key = (shown, shown.revision, library_revision())
        if self._textured[0] != key:
            self._textured = (key, [n for n in shown.nodes if self._thumbnail_pin(n) is not None])
        return self._textured[1]

    def node_state(self, path: str) -> tuple[NodeClass, NodeStatus, str | None]:
        """The evaluator's class, status and error of a node (an instance's inner node by its
        path, `blob1/lfo3`); one the evaluator does not know (yet) is idle."""
        ev = self.window.evaluator
        try:
            return ev.node_class(path), ev.status(path), ev.error(path)
        except (UnknownNodeError, KeyError):
            return NodeClass.CONST, NodeStatus.IDLE, None

    def decorate_nodes(self) -> None:
        """Node colours by class and status, and the marks of failures and what they hold back."""
        failed: dict[str, str] = {}
        last_good: dict[str, str] = {}
        shown = self.window.canvas.patch
        for node_id in shown.nodes:
            path = self.window.canvas.eval_id(node_id)
            node_class, status, error = self.node_state(path)
            self.window.canvas.decorate(node_id, node_class, status, error)
            if status == NodeStatus.FAILED:
                failed[node_id] = error or "no message"
                outputs = shown.nodes[node_id].spec.outputs
                if not self.window.evaluator.ever_good(path):
                    last_good[node_id] = NO_GOOD_VALUE
                elif outputs and outputs[0].type != "texture":  # a texture's is its thumbnail
                    last_good[node_id] = short_value(self.link_value(path, outputs[0].name))
        self.window.failure_marks.update(failed, last_good)

    def link_value(self, path: str, pin: str) -> Any:
        return self.window.evaluator.output(path, pin)

    def link_shape(self, path: str, pin: str) -> tuple[int, ...] | None:
        return self.window.evaluator.output_shape(path, pin)

    def show_node_state(self) -> None:
        path = self.window.preview.node_id
        node = self.window.canvas.node_at(path) if path is not None else None
        if path is None or node is None:
            return
        ev = self.window.evaluator
        node_class, status, error = self.node_state(path)
        self.window.inspector.set_state(node_class, status, error, self.is_bypassed(path))
        try:
            values = {o.name: ev.output(path, o.name) for o in node.spec.outputs}
        except (UnknownNodeError, KeyError):
            return
        failed = (error or "no message") if status == NodeStatus.FAILED else None
        self.window.preview.show_values(values, failed, never_good=not ev.ever_good(path))
        for out in node.spec.outputs:
            picture = ev.take_image(path, out.name, "preview")
            if picture is not None:
                self.window.preview.show_picture(out.name, rgba_image(*picture))

    def is_bypassed(self, node_id: str) -> bool:
        """Whether the node is bypassed (it took too long in a frame, or hung the engine)."""
        return node_id in self.window.evaluator.bypassed

    def retry_node(self, node_id: str) -> None:
        """Run a bypassed node again from the next frame (the inspector's Retry)."""
        self.window.engine.send(Retry(node_id))
        self.window.statusBar().showMessage(f"Retrying {node_id}", 3000)


def _qimage(size: tuple[int, int], pixels: bytes) -> QImage:
    """A QImage owning a copy of RGBA pixels (rows top to bottom, as `GLService.readback`),
    opaque (the Output panel: what the output shows)."""
    width, height = size
    image = QImage(pixels, width, height, width * 4, QImage.Format.Format_RGBX8888)
    return image.copy()
