"""The example patches open tidy: at their saved positions no two nodes overlap, measured as the
canvas draws them, with room under each node that shows a texture thumbnail."""

from __future__ import annotations

from importlib import resources

import pytest
from PySide6.QtCore import QRectF

from app.engine.engine import THUMBNAIL_SIZE
from app.qt.canvas.canvas import THUMBNAIL_GAP
from nodes import load_patch

EXAMPLES = sorted(
    entry.name
    for entry in resources.files("resources").joinpath("examples").iterdir()
    if entry.name.endswith(".patchbay")
)


def test_there_are_examples():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("name", EXAMPLES)
def test_no_two_nodes_of_an_example_overlap(editor, ui, name):
    with resources.as_file(resources.files("resources").joinpath("examples", name)) as path:
        patch = load_patch(path)
    ui.show_patch(editor, patch)
    canvas = editor.canvas
    rects = {}
    for node_id, inst in patch.nodes.items():
        rect = canvas.view_node(node_id).view.sceneBoundingRect()
        if any(out.type == "texture" for out in inst.spec.outputs):
            rect = rect.united(QRectF(rect.left(), rect.bottom(), THUMBNAIL_SIZE[0],
                                      THUMBNAIL_GAP + THUMBNAIL_SIZE[1]))  # fmt: skip
        rects[node_id] = rect
    overlapping = [
        (one, other)
        for i, one in enumerate(sorted(rects))
        for other in sorted(rects)[i + 1 :]
        if rects[one].intersects(rects[other])
    ]
    assert overlapping == []
