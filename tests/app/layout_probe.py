"""Run by test_layout_reattach.py: the real editor window with its engine in another process, as
`patchbay edit` starts them, on a new patch built at known places and never saved. Prints one
JSON report line (`REPORT {...}`: the layout on the canvas, and where the autosave is) once the
engine has every edit and the autosave holds them, then runs until it is killed.

    layout_probe.py STATE_DIR
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from PySide6.QtWidgets import QApplication

from app.engine.client import RemoteEvaluator
from app.qt.canvas.canvas import QtPatchCanvas
from app.qt.commands import MoveNodesCommand
from app.qt.launch import launch_editor
from nodes import Patch
from tests.waiting import wait_for

PLACES = [
    ("time.seconds", (-420.5, 80.25)),
    ("math.sin", (-150.0, 95.0)),
    ("math.mul", (130.75, -60.0)),
    ("value.float", (-400.0, 360.0)),
    ("math.add", (-120.0, 380.5)),
    ("output.value", (420.0, 10.0)),
]


def layout(patch: Patch) -> dict[str, Any]:
    """Positions and backdrops of a patch, as JSON."""
    return {
        "positions": {node_id: list(node.pos) for node_id, node in patch.nodes.items()},
        "backdrops": {
            key: [b.title, list(b.color), list(b.rect)] for key, b in patch.backdrops.items()
        },
    }


def shown(canvas: QtPatchCanvas) -> dict[str, list[float]]:
    """Where the canvas draws the nodes of the level it shows."""
    canvas.finish_loading()
    return {node_id: [float(v) for v in canvas.view_node(node_id).pos()]
            for node_id in canvas.patch.nodes}  # fmt: skip


def build(app: QApplication, state_dir: Path) -> None:
    editor = launch_editor(None, state_dir=state_dir)
    editor.file_actions.ask_unsaved = lambda: "discard"  # type: ignore[method-assign]
    editor.edit_actions.ask_definition_name = lambda title, default: "pair"  # type: ignore[method-assign]
    editor.session.autosave_delay_s = 0.0
    remote = editor.evaluator
    assert isinstance(remote, RemoteEvaluator) and editor.engine is not None
    editor.file_actions.new_patch()
    canvas = editor.canvas
    made = [canvas.create_node(type_id, pos) for type_id, pos in PLACES]
    ids = [node_id for node_id in made if node_id is not None]
    patch = editor.patch
    # what a drag of two nodes pushes, then a backdrop made around two others and renamed
    canvas.stack.push(MoveNodesCommand(patch, {
        ids[1]: (patch.node(ids[1]).pos, (-160.0, 140.5)),
        ids[2]: (patch.node(ids[2]).pos, (150.25, -30.0)),
    }))  # fmt: skip
    backdrop = canvas.backdrops.create_around([ids[0], ids[1]], "Clock")
    canvas.backdrops.retitle(backdrop, "The clock")
    # two nodes grouped into a definition; inside it, a node moved and a backdrop made
    canvas.select([ids[3], ids[4]])
    editor.edit_actions.group_selection()
    [instance] = canvas.selected_ids()
    assert canvas.enter(instance)
    body = canvas.patch
    inner = sorted(body.nodes)[0]
    canvas.stack.push(MoveNodesCommand(body, {inner: (body.node(inner).pos, (33.5, -77.0))}))
    canvas.backdrops.create_around([inner], "Inside")
    inside = {"layout": layout(body), "shown": shown(canvas)}
    canvas.leave()

    editor.send_edits()
    sent = editor.edits.sent  # the last batch of edits: the engine has them all once applied
    wait_for(app, lambda: remote.applied[0] == sent, "the engine to apply every edit")
    editor.session.wait_for_autosave()
    editor.file_actions.autosave()  # holds every edit
    assert editor.session.wait_for_autosave() == []
    report = {
        "editor_pid": os.getpid(),
        "engine_pid": editor.engine.engine.running_pid(),
        "recovery_file": str(editor.session.recovery_file),
        "layout": layout(patch),
        "shown": shown(canvas),
        "definitions": {"pair": inside},
        "instance": instance,
    }
    print("REPORT " + json.dumps(report), flush=True)
    app.exec()  # until killed


def main() -> int:
    app = QApplication(sys.argv[:1])
    build(app, Path(sys.argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
