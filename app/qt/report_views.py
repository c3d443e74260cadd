"""What the editor window shows of the engine's reports: node colours, node state, pictures.

`ReportViews` is a part of `QtEditorWindow` (app.qt.window). The window asks the engine for
pictures (`images`): the selected node's textures while the Preview panel shows, the
`gpu.output` texture while the Output panel shows, and thumbnails of the textured nodes in view
(`QtPatchCanvas.thumbnail_candidates`; none when zoomed out to plain rectangles). They come with
the reports and are shown once each, each isolated (app.engine.reports.refresh). Node colours follow
the statuses (with failure marks downstream, app.qt.canvas.failure_marks), the inspector and the
preview the selected node's state and values, links their values (app.qt.canvas.link_values).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QImage

from app.engine.protocol.messages import Images, Retry
from app.engine.reports.patch_info import output_node
from app.qt.canvas.link_values import short_value
from app.qt.panels.preview import fitted_pixmap
from evaluators import NodeClass, NodeStatus
from nodes import UnknownNodeError, is_picture, library_revision


class ReportViews:
    """The views of the engine's reports (see the module note); mixed into `QtEditorWindow`."""

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
                         if is_picture(out.type)]  # fmt: skip
        if thumbnails is None:
            thumbnails = self._image_request.thumbnails if self._image_request else []
        request = Images(thumbnails, previews)
        if request != self._image_request:
            self._image_request = request
            self.send_edits()
            self.engine.send(request)

    def _request_visible_thumbnails(self) -> None:
        shown = self.canvas.thumbnail_candidates(self._textured_nodes())
        self._request_images([self.canvas.eval_id(node_id) for node_id in shown])

    def _show_engine_thumbnails(self) -> None:
        """The thumbnails the engine sent, each isolated."""
        remote = self.engine.evaluator
        asked = self._image_request.thumbnails if self._image_request else []
        for path in asked:  # paths inside an instance
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

    def _thumbnail_pin(self, node_id: str) -> str | None:
        """The shown node's first texture output, if it has one."""
        outputs = self.canvas.patch.nodes[node_id].spec.outputs
        return next((out.name for out in outputs if is_picture(out.type)), None)

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
        self.engine.send(Retry(node_id))
        self.statusBar().showMessage(f"Retrying {node_id}", 3000)


def _qimage(size: tuple[int, int], pixels: bytes) -> QImage:
    """A QImage owning a copy of RGBA pixels (rows top to bottom, as `GLService.readback`)."""
    width, height = size
    image = QImage(pixels, width, height, width * 4, QImage.Format.Format_RGBX8888)
    return image.copy()
