"""Run by test_engine_editor.py on a private X display: the real editor window with its engine in
another process, started as `patchbay edit` starts it (`launch_editor`). Prints one JSON report
line (`REPORT {...}`), then keeps running until it is killed (mode `show`) or closes (`attach`).

    engine_editor_probe.py show STATE_DIR PATCH SCREENSHOT
        the editor on PATCH with the output window open; checks that statuses, pictures and
        thumbnails come back, and that edits, a paste of 1,000 nodes, zoom steps, 500 undo
        steps, panning, opening a 2,000-node file and saving a 100 MB array reach the engine
        (or leave it alone) while it plays
    engine_editor_probe.py attach STATE_DIR
        an editor attaching to the running engine; then kills the engine (SIGKILL) and reports
        how the editor brought it back
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from PySide6.QtWidgets import QApplication, QLabel

from app.bench.show import wheel_step
from app.engine.client import RemoteEvaluator
from app.qt.launch import launch_editor
from app.qt.output import configure_qt_gl
from nodes import Patch, patch_to_dict, save_patch
from tests.waiting import run_for, wait_until


def report(values: dict[str, Any]) -> None:
    print("REPORT " + json.dumps(values), flush=True)


def show(app: QApplication, state_dir: Path, patch_path: str, screenshot: Path) -> None:
    editor = launch_editor(patch_path, output=True, screen=1, fullscreen=True, state_dir=state_dir)
    editor.resize(1400, 850)
    editor.file_actions.ask_unsaved = lambda: "discard"  # type: ignore[method-assign]
    remote = editor.evaluator
    assert isinstance(remote, RemoteEvaluator) and editor.engine is not None
    values: dict[str, Any] = {"editor_pid": os.getpid()}
    values["engine_pid"] = editor.engine.engine.running_pid()
    values["playing"] = wait_until(app, lambda: remote.frame > 30 and remote.output_open)
    editor.view_actions.frame_all()  # every node and link in view, whatever room the docks leave
    values["output_on"] = wait_until(app, lambda: remote.output_fullscreen) and remote.output_screen
    values["statuses"] = {node: remote.status(node) for node in editor.patch.nodes}
    values["classes"] = {node: remote.node_class(node) for node in editor.patch.nodes}
    values["thumbnail"] = wait_until(app, lambda: editor.canvas.thumbnail_item("noise") is not None)
    editor.canvas.select(["noise"])

    def preview_picture() -> bool:
        row = editor.preview.row_widget("out")
        return isinstance(row, QLabel) and not row.pixmap().isNull()

    values["preview_picture"] = wait_until(app, preview_picture)
    picture = editor.output_picture
    values["output_picture"] = wait_until(
        app, lambda: picture is not None and not picture.pixmap().isNull()
    )

    # values on links, as the engine reports them (textures as its thumbnails)
    editor.view_actions.show_link_values(True)
    link_values = editor.link_values

    def link_labels() -> dict[str, list[Any]]:
        return {f"{link.src}->{link.dst}.{link.dst_pin}": [label.kind, label.text,
                                                            len(label.samples)]
                for link, label in link_values.labels.items()}  # fmt: skip

    def labels_live() -> bool:
        labels = link_labels()
        return (
            labels.get("time->noise.time", ["", "", 0])[2] >= 20
            and labels.get("noise->colorize.noise", [""])[0] == "picture"
            and labels.get("colorize->output.in", [""])[0] == "picture"
        )

    values["link_labels_live"] = wait_until(app, labels_live)
    values["link_labels"] = link_labels()
    values["link_values_asked"] = link_values.wanted()
    editor.grab().save(str(screenshot.with_name("live_values.png")))
    editor.view_actions.show_link_values(False)

    # an edit on the canvas reaches the engine, and so does its undo
    added = editor.canvas.create_node("time.frame", (0.0, 300.0))
    values["added_arrives"] = wait_until(app, lambda: added in remote.nodes())
    editor.undo_stack.undo()
    values["undo_arrives"] = wait_until(app, lambda: added not in remote.nodes())

    # a paste of 1,000 nodes (through the system clipboard, as between windows)
    piece = Patch()
    for index in range(1000):
        piece.add_node("value.float", {"value": float(index)}, (index % 40 * 200, index // 40 * 90))
    QApplication.clipboard().setText(json.dumps(patch_to_dict(piece)))
    frame = remote.frame
    editor.edit_actions.select_all()
    editor.edit_actions.paste()
    values["pasted_in_editor"] = len(editor.patch.nodes)
    values["paste_arrives"] = wait_until(
        app, lambda: len(remote.nodes()) == len(editor.patch.nodes)
    )
    values["frames_during_paste"] = remote.frame - frame

    # zoom steps on the big canvas while the engine plays
    viewer = editor.canvas.viewer()
    frame = remote.frame
    zoom_before = viewer.transform().m11()
    for step in range(20):
        wheel_step(viewer, -120 if step < 10 else 120)
        if step == 9:
            values["zoomed_out"] = viewer.transform().m11() < zoom_before
        run_for(app, 0.02)
    values["frames_during_zoom"] = (
        wait_until(app, lambda: remote.frame > frame + 10) and remote.frame - frame
    )

    # 500 undo steps: 250 value edits and their undos; the engine ends where the editor does
    editor.canvas.select(["contrast"])
    editor.undo_stack.clear()
    for step in range(250):
        editor.edit_actions.on_value_edited("contrast", "value", 1.0 + step / 100, None)
    for _ in range(250):
        editor.undo_stack.undo()
    expected = editor.patch.value("contrast", "value")
    values["undo_steps_arrive"] = wait_until(app, lambda: remote.output("contrast") == expected)

    # pan across the big canvas
    bar = viewer.horizontalScrollBar()
    frame = remote.frame
    for step in range(40):
        bar.setValue(bar.value() + (60 if step < 20 else -60))
        run_for(app, 0.016)
    values["frames_during_pan"] = remote.frame - frame

    # open a 2,000-node file: the engine plays it
    big = Patch()
    previous = big.add_node("time.seconds", None, (0.0, 0.0), node_id="n0")
    for index in range(1, 2000):
        node = big.add_node("math.add", {"b": 1.0}, (index % 40 * 220.0, index // 40 * 130.0))
        big.connect(previous, "out", node, "a")
        previous = node
    big_path = screenshot.parent / "engine_editor_2000.patchbay"
    save_patch(big, big_path)
    frame = remote.frame
    editor.file_actions.open_path(big_path, ask=False)
    values["open_arrives"] = wait_until(app, lambda: remote.nodes() == set(big.nodes))
    values["frames_during_open"] = remote.frame - frame
    big_path.unlink()

    # save a patch with a 100 MB array while the engine plays it
    frame = remote.frame
    editor.patch.add_node("value.array", {"value": np.ones(100 * 2**20 // 8)}, node_id="array")
    saved = screenshot.parent / "engine_editor_saved.patchbay"
    editor.file_actions.ask_save_path = lambda: str(saved)  # type: ignore[method-assign]
    values["saved"] = editor.file_actions.save_as()
    sidecars = list(saved.parent.glob(saved.name + ".*npz"))
    values["sidecar_mb"] = sum(path.stat().st_size for path in sidecars) / 2**20
    values["array_arrives"] = wait_until(app, lambda: "array" in remote.nodes())
    values["frames_during_save"] = remote.frame - frame
    for path in [saved, *sidecars]:
        path.unlink()
    values["final_nodes"] = len(editor.patch.nodes)
    values["resyncs_or_errors"] = editor.statusBar().currentMessage()

    run_for(app, 0.5)
    editor.grab().save(str(screenshot))
    report(values)
    app.exec()  # until killed


def attach(app: QApplication, state_dir: Path) -> None:
    started = time.monotonic()
    editor = launch_editor(None, attach=True, state_dir=state_dir)
    editor.file_actions.ask_unsaved = lambda: "discard"  # type: ignore[method-assign]
    remote = editor.evaluator
    assert isinstance(remote, RemoteEvaluator) and editor.engine is not None
    values: dict[str, Any] = {"attached": editor.engine.attached}
    values["attach_seconds"] = time.monotonic() - started
    values["nodes"] = len(editor.patch.nodes)
    values["title"] = editor.windowTitle()
    values["playing"] = wait_until(app, lambda: remote.frame > 0 and len(remote.nodes()) > 0)
    values["same_nodes"] = wait_until(app, lambda: remote.nodes() == set(editor.patch.nodes))
    first = editor.engine.engine.running_pid()
    values["engine_pid"] = first
    assert first is not None
    os.kill(first, signal.SIGKILL)
    killed = time.monotonic()
    values["restarted"] = wait_until(app, lambda: editor.engine.restarts > 0)
    reports = remote.reports  # the new engine's reports from here on
    values["new_engine_plays"] = wait_until(
        app, lambda: remote.reports > reports + 5 and remote.frame > 0
    )
    values["restart_seconds"] = time.monotonic() - killed
    values["nodes_after_restart"] = wait_until(
        app, lambda: remote.nodes() == set(editor.patch.nodes)
    )
    values["new_engine_pid"] = editor.engine.engine.running_pid()
    values["output_open_after_restart"] = wait_until(app, lambda: remote.output_open)
    values["output_after_restart"] = (
        wait_until(app, lambda: remote.output_fullscreen) and remote.output_screen
    )
    report(values)
    editor.close()


def main() -> int:
    mode, state_dir = sys.argv[1], Path(sys.argv[2])
    configure_qt_gl(swap_interval=0)
    app = QApplication(sys.argv[:1])
    if mode == "show":
        show(app, state_dir, sys.argv[3], Path(sys.argv[4]))
    else:
        attach(app, state_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
