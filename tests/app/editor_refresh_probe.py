"""Run by test_editor_refresh.py in a subprocess on an X display: the editor drives an engine in
its process with a GL service (app.qt.output_host) that plays a patch where a constant shader's
texture is then released, as a failed reallocation leaves it, and runs 100 more turns of the
window's loop; prints a JSON report of what escaped and what kept updating. Its stderr is the
editor's and the engine's log.

Usage: editor_refresh_probe.py STATE_DIR. A separate process because Qt's platform (xcb here,
offscreen for the other app tests) is chosen once per process.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject
from PySide6.QtWidgets import QApplication, QLabel

from app.qt.output import configure_qt_gl
from app.qt.output_host import local_engine_with_output
from app.qt.window import QtEditorWindow
from nodes import Patch
from tests.waiting import wait_for, wait_until

FRAMES = 100


def patch() -> Patch:
    made = Patch()
    made.update_settings(resolution=[256, 144])
    made.add_node("time.seconds", None, (0.0, 0.0), node_id="time")
    made.add_node("gpu.noise", None, (250.0, 0.0), node_id="noise")
    made.add_node("gpu.output", None, (500.0, 0.0), node_id="output")
    made.add_node("gpu.shader", None, (250.0, 250.0), node_id="still")  # constant
    made.add_node("gpu.output", None, (500.0, 250.0), node_id="still_output")
    made.connect("time", "out", "noise", "time")
    made.connect("noise", "out", "output", "in")
    made.connect("still", "out", "still_output", "in")
    return made


class Paints(QObject):
    def __init__(self, widget: Any) -> None:
        super().__init__()
        self.count = 0
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            self.count += 1
        return False


def main() -> int:
    configure_qt_gl(swap_interval=0)
    app = QApplication(sys.argv[:1])
    link, _output = local_engine_with_output()
    engine = link.engine
    editor = QtEditorWindow(Path(sys.argv[1]), engine=link)
    editor.resize(1400, 850)
    editor.show()
    wait_for(app, editor.isVisible, "the editor to show")
    editor.set_patch(patch(), None)
    editor.canvas.frame(None)

    def plays() -> bool:
        ev = engine.evaluator  # the engine's: a new one for each patch it is sent
        return (
            ev.mode == "flat"
            and "still_output" in ev.patch.nodes  # the patch sent, not the empty one it began with
            and ev.status("still_output") in ("ok", "cached")
            and ev.status("output") in ("ok", "cached")
        )

    wait_for(app, plays, "the patch to run flat")
    canvas = editor.canvas
    wait_for(app, lambda: canvas.thumbnail_item("still") and canvas.thumbnail_item("noise"),
             "thumbnails of both shaders")  # fmt: skip
    editor.canvas.select(["noise"])
    wait_for(app, lambda: isinstance(editor.preview.row_widget("out"), QLabel)
             and editor.preview.row_widget("out").pixmap() is not None
             and not editor.preview.row_widget("out").pixmap().isNull(),
             "the engine's picture of the selected node")  # fmt: skip
    preview = Paints(editor.preview.row_widget("out"))
    output_panel = Paints(editor.output_picture)
    shown: dict[str, int] = {}
    set_thumbnail = canvas.set_thumbnail

    def recorded(node_id: str, image: Any) -> None:
        if image is not None:
            shown[node_id] = shown.get(node_id, 0) + 1
        set_thumbnail(node_id, image)

    canvas.set_thumbnail = recorded

    with engine.gpu.current():
        engine.evaluator.output("still").texture.release()
    sys.stderr.write("PROBE released\n")
    escaped: list[str] = []
    frames = editor._frame
    for _ in range(FRAMES):
        try:
            editor.tick()
        except Exception as error:  # what the editor let through
            escaped.append(f"{type(error).__name__}: {error}")
        app.processEvents()
        time.sleep(1 / 60)
    report = {
        "escaped": escaped,
        "frames": editor._frame - frames,
        "shown": dict(shown),
        "preview_paints": preview.count,
        "output_paints": output_panel.count,
        "failures": editor.refresh_steps.failures + engine.refresh_steps.failures,
        "logged": editor.refresh_steps.logged + engine.refresh_steps.logged,
    }
    # an edit of the node: its thumbnail is tried again, and shows
    editor.patch.set_value("still", "resolution", (64, 32))
    shown.clear()
    report["shown_after_edit"] = wait_until(app, lambda: shown.get("still"))
    editor.file_actions.ask_unsaved = lambda: "discard"
    editor.close()
    print("REPORT " + json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
