"""Failure marks on the canvas: what failed, and what its failure holds back.

A failed node gets a caption under its body (`failed: ZeroDivisionError: … · last good: 0.5`,
the full message in its tooltip; the last good value is what its outputs still carry, and a node
that has not succeeded since the editor watched it says `no good value yet`); every
node downstream of a failed one (along the shown level's links) gets a dashed red outline and an
"upstream failed" caption, since it keeps showing the outputs it showed last.
Both are computed from the statuses the editor already reads for node colours (`update`, called
at that same throttled rate) and are child items of the node items, so they move with their
nodes and go with them when the level is rebuilt; an item is only touched when what it says
changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsRectItem, QGraphicsSimpleTextItem

from nodes import Patch

MARK_COLOR = QColor(255, 90, 90)
CAPTION_CHARS = 48
OUTLINE_GAP = 5.0
CAPTION_GAP = 4.0
UPSTREAM_FAILED = "upstream failed"
NO_GOOD_VALUE = "no good value yet"  # a failed node's outputs hold only their defaults


def downstream_of(patch: Patch, failed: Iterable[str]) -> set[str]:
    """The nodes reachable from `failed` along links, the failed ones themselves excluded."""
    failed = set(failed)
    seen: set[str] = set()
    stack = list(failed)
    while stack:
        for link in patch.links_out_of(stack.pop()):
            if link.dst not in seen and link.dst not in failed:
                seen.add(link.dst)
                stack.append(link.dst)
    return seen


def caption_of(error: str, last_good: str | None) -> str:
    """`failed: ERROR · last good: VALUE` (`· no good value yet` when `last_good` is
    NO_GOOD_VALUE), the error shortened to fit `CAPTION_CHARS`."""
    text = f"failed: {error}"
    if len(text) > CAPTION_CHARS:
        text = text[: CAPTION_CHARS - 1] + "…"
    if last_good == NO_GOOD_VALUE:
        return f"{text} · {NO_GOOD_VALUE}"
    return text if last_good is None else f"{text} · last good: {last_good}"


class QtFailureMarks:
    """The failure captions and downstream outlines of one canvas."""

    def __init__(self, canvas: Any) -> None:
        self.canvas = canvas
        self.marked: dict[str, str] = {}  # node id -> what its mark says

    def update(self, errors: Mapping[str, str], last_good: Mapping[str, str] | None = None) -> None:
        """Mark the shown nodes: `errors` maps the failed ones to their error, `last_good` to
        the short text of the value their first output still carries (when there is one), or
        NO_GOOD_VALUE for one that never succeeded."""
        canvas = self.canvas
        patch = canvas.patch
        good = last_good or {}
        wanted = {
            node_id: caption_of(error, good.get(node_id)) for node_id, error in errors.items()
        }
        for node_id in downstream_of(patch, errors):
            wanted[node_id] = UPSTREAM_FAILED
        for node_id in list(self.marked):
            if node_id not in wanted:
                self._set(node_id, None, "")
        for node_id, text in wanted.items():
            self._set(node_id, text, errors.get(node_id, ""))

    def _set(self, node_id: str, text: str | None, error: str) -> None:
        views = self.canvas._views
        view = views.get(node_id)
        if view is None:
            self.marked.pop(node_id, None)
            return
        item = view.view
        caption: QGraphicsSimpleTextItem | None = getattr(item, "failure_caption", None)
        outline: QGraphicsRectItem | None = getattr(item, "failure_outline", None)
        if text is None:
            for child in (caption, outline):
                if child is not None:
                    child.setVisible(False)
            self.marked.pop(node_id, None)
            return
        if self.marked.get(node_id) == text and caption is not None and caption.isVisible():
            return
        self.marked[node_id] = text
        if caption is None:
            caption = QGraphicsSimpleTextItem(item)
            caption.setBrush(MARK_COLOR)
            caption.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
            caption.setOpacity(0.0 if item.simple else 1.0)  # details hide when zoomed out
            item.failure_caption = caption
        body = QRectF(0.0, 0.0, item.width, item.height)
        caption.setText(text)
        caption.setToolTip(f"failed: {error}" if error else "a node upstream failed")
        below = body.bottom() + CAPTION_GAP
        thumbnail = self.canvas.thumbnail_item(node_id)
        if thumbnail is not None:
            below = thumbnail.pos().y() + thumbnail.boundingRect().height() + CAPTION_GAP
        caption.setPos(0.0, below)
        caption.setVisible(True)
        downstream = text == UPSTREAM_FAILED
        if downstream and outline is None:
            outline = QGraphicsRectItem(item)
            pen = QPen(MARK_COLOR, 2.0, Qt.PenStyle.DashLine)
            pen.setCosmetic(True)
            outline.setPen(pen)
            outline.setAcceptedMouseButtons(Qt.MouseButton.NoButton)
            outline.setFlag(QGraphicsItem.GraphicsItemFlag.ItemStacksBehindParent)
            outline.setOpacity(0.0 if item.simple else 1.0)
            item.failure_outline = outline
        if outline is not None:
            gap = OUTLINE_GAP
            outline.setRect(body.adjusted(-gap, -gap, gap, gap))
            outline.setVisible(downstream)

    def mark_of(self, node_id: str) -> str | None:
        """What the mark on a shown node says (None: unmarked)."""
        return self.marked.get(node_id)
