"""`patchbay bench --only show`: does the output keep its frames while the editor works?

On a private X display (Xvfb, started here when there is no DISPLAY) an editor opens a show patch
(a GPU noise chain into `gpu.output`, plus a 1,000-node chain on the canvas) with the output
window open, and goes through the stresses a person puts it through during a show: wheel zoom,
pan, select-all and paste of 1,000 nodes, opening a 2,000-node file, saving a patch with a 100 MB
array, 500 undo steps. The output's frame intervals are read from the frame log
(`PATCHBAY_FRAME_LOG`) of the process that presents them, per stress: p50, p99, max and the
frames longer than two frame periods. The same script runs twice, side by side in one run, after
the show played for a few seconds by `patchbay run` with no editor at all (`no editor`: what
"normal" is on this machine):

- `engine`: `patchbay edit` as shipped, the output in the engine process;
- `in_editor`: an engine in the editor's own process (app.engine.local) with its output window,
  stepped by the editor's loop (how patchbay ran before the engine process).

The editor waits in Qt's event loop, as `patchbay edit` does, and its stresses start once its
canvas has drawn the show patch (a large patch is drawn in slices): `idle` is an editor with
nothing to do.

Edit-to-output latency: a value edit's time against the presentation time of the first frame that
shows it (the engine reports which frame applied each batch of edits). In `engine` mode the bench
also kills the editor (SIGKILL) and starts another that attaches, and reports the intervals
meanwhile; that editor then kills the engine (SIGKILL), and the bench reports how long after
the kill the engine the editor restarted presented its first frame (`engine killed: output back
after s`).

Run as `python -m app.bench.show MODE STATE_DIR WORK_DIR` it is the editor side of one mode.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FRAME_PERIOD_S = 1 / 60
PHASE_IDLE_S = 2.0
LOAD_TIMEOUT_S = 120.0


# ----------------------------------------------------------------------------- the orchestrator


def show_bench(quick: bool) -> dict[str, Any]:
    """Both modes side by side, after the same patch played with no editor at all (`patchbay
    run`), which is what "normal" means on this machine (see the module note)."""
    with _display() as env, tempfile.TemporaryDirectory(prefix="patchbay-show-") as tmp:
        work = Path(tmp)
        _write_patches(work)
        report: dict[str, Any] = {"frame_period_ms": round(FRAME_PERIOD_S * 1000, 2)}
        report["no editor"] = _run_alone(work / "alone", env, 180 if quick else 360)
        for mode in ("engine", "in_editor"):
            report[mode] = _run_mode(mode, work, env, quick)
        return report


def _write_patches(work: Path) -> None:
    """The show (the noise example plus a 1,000-node chain) and a 2,000-node file to open."""
    from app.bench.patches import grid_chain
    from nodes import load_patch, save_patch

    examples = Path(__file__).resolve().parents[2] / "resources" / "examples"
    show = load_patch(examples / "noise_color.patchbay")
    chain = grid_chain(1000)
    for instance in chain.nodes.values():
        x, y = instance.pos
        show.add_node(instance.type_id, instance.values, (x, y + 600), node_id=instance.id)
    for link in chain.links:
        show.connect(*link)
    save_patch(show, work / "show.patchbay")
    save_patch(grid_chain(2000), work / "big.patchbay")


def _environment(env: dict[str, str], log: Path, state: Path) -> dict[str, str]:
    env = {**env, "PATCHBAY_FRAME_LOG": str(log), "PATCHBAY_STATE_DIR": str(state)}
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return env


def _run_alone(work: Path, env: dict[str, str], frames: int) -> dict[str, Any]:
    """The show played by `patchbay run` with no editor; its first second is left out."""
    work.mkdir(parents=True)
    log = work / "frames.log"
    show = work.parent / "show.patchbay"
    command = [sys.executable, "-m", "app.cli.main", "run", str(show), "--frames", str(frames)]
    subprocess.run(command, env=_environment(env, log, work / "state"), timeout=300, check=True)
    frames_logged = _read_log(log)
    start = frames_logged[min(60, len(frames_logged) - 1)][0] if frames_logged else 0.0
    return _intervals(frames_logged, start, float("inf"))


@contextlib.contextmanager
def _display() -> Iterator[dict[str, str]]:
    """An environment with an X display: this one, or a private Xvfb."""
    if os.environ.get("DISPLAY"):
        yield {**os.environ, "QT_QPA_PLATFORM": "xcb"}
        return
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        raise RuntimeError("the show benchmark needs a display or Xvfb (apt-get install xvfb)")
    read_end, write_end = os.pipe()
    server = subprocess.Popen(
        [xvfb, "-displayfd", str(write_end), "-nolisten", "tcp", "-screen", "0", "1600x900x24"],
        pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        number = pipe.readline().strip()
    try:
        yield {**os.environ, "DISPLAY": f":{number}", "QT_QPA_PLATFORM": "xcb"}
    finally:
        server.terminate()
        server.wait(timeout=10)


def _run_mode(mode: str, root: Path, env: dict[str, str], quick: bool) -> dict[str, Any]:
    work = root / mode
    work.mkdir(parents=True)
    log, state = work / "frames.log", work / "state"
    env = _environment(env, log, state)
    command = [sys.executable, "-m", "app.bench.show", mode, str(state), str(work)]
    if quick:
        command.append("--quick")
    editor = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    result: dict[str, Any] = {}
    try:
        assert editor.stdout is not None
        phases: list[list[Any]] = []
        for line in editor.stdout:
            if line.startswith("PHASES "):
                phases = json.loads(line.removeprefix("PHASES "))
                break
        if not phases:
            raise RuntimeError(f"the {mode} editor stopped before its stresses were done")
        latency = json.loads(editor.stdout.readline().removeprefix("LATENCY "))
        if mode == "engine":  # kill -9 of the editor, then a new editor attaches
            killed = time.monotonic()
            editor.kill()
            editor.wait()
            time.sleep(0.5)
            attach = [sys.executable, "-m", "app.bench.show", "attach", str(state), str(work)]
            attached = subprocess.run(
                attach, env=env, timeout=180, check=True, stdout=subprocess.PIPE, text=True
            )
            engine_killed = float(attached.stdout.split("ENGINE_KILLED ")[1].split()[0])
            phases.append(["editor killed and restarted", killed, engine_killed])
            result["engine killed: output back after s"] = _back_after(log, engine_killed)
    finally:
        if editor.poll() is None:
            editor.kill()
            editor.wait()
        _stop_engine(state)
    frames = _read_log(log)
    for name, start, end in phases:
        result[name] = _intervals(frames, start, end)
    result["edit_to_output"] = _latency(frames, latency)
    return result


def _back_after(log: Path, killed: float) -> float | None:
    """Seconds from the engine's kill to the first frame its successor presented."""
    later = [t for t, _ in _read_log(log) if t > killed]
    return round(later[0] - killed, 3) if later else None


def _stop_engine(state: Path) -> None:
    from app.engine.client import EngineProcess

    EngineProcess(state / "engine").stop()


def _read_log(path: Path) -> list[tuple[float, int]]:
    if not path.exists():
        return []
    rows = [line.split() for line in path.read_text().splitlines()]
    return [(float(t), int(frame)) for t, frame in rows if t and frame]


def _intervals(frames: list[tuple[float, int]], start: float, end: float) -> dict[str, Any]:
    times = [t for t, _ in frames if start <= t <= end]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    if len(gaps) < 2:
        return {"frames": len(times), "note": "too few frames to measure"}
    ordered = sorted(gaps)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {
        "frames": len(times),
        "p50_ms": round(statistics.median(gaps) * 1000, 2),
        "p99_ms": round(p99 * 1000, 2),
        "max_ms": round(max(gaps) * 1000, 2),
        "over_two_periods": sum(1 for gap in gaps if gap > 2 * FRAME_PERIOD_S),
        "p99_vs_period": round(p99 / FRAME_PERIOD_S, 2),
    }


def _latency(frames: list[tuple[float, int]], edits: list[list[Any]]) -> dict[str, Any]:
    """Each edit's time against the presentation of the first frame at or after the one that
    shows it, in frame periods."""
    presented = dict(((frame, t) for t, frame in reversed(frames)))  # first time a frame shows
    delays = []
    for sent_at, frame in edits:
        shown = [presented[f] for f in range(frame, frame + 120) if f in presented]
        if shown:
            delays.append((shown[0] - sent_at) / FRAME_PERIOD_S)
    if not delays:
        return {"note": "no edit was seen presented"}
    return {
        "edits": len(delays),
        "median_frames": round(statistics.median(delays), 2),
        "max_frames": round(max(delays), 2),
    }


# ----------------------------------------------------------------------------- the editor side


def wheel_step(viewer: Any, delta: int) -> None:
    """One mouse-wheel step over the middle of the canvas (negative `delta` zooms out), as a
    person's wheel sends it."""
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent

    centre = QPointF(viewer.viewport().rect().center())
    event = QWheelEvent(centre, viewer.mapToGlobal(centre.toPoint()).toPointF(), QPoint(0, 0),
                        QPoint(0, delta), Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                        Qt.ScrollPhase.NoScrollPhase, False)  # fmt: skip
    viewer.wheelEvent(event)


def _editor_main(mode: str, state: Path, work: Path, quick: bool) -> int:
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from app.engine.client import RemoteEvaluator
    from app.qt.launch import launch_editor
    from app.qt.output import configure_qt_gl
    from app.qt.output_host import local_engine_with_output
    from app.qt.window import QtEditorWindow

    configure_qt_gl(swap_interval=0)
    app = QApplication(sys.argv[:1])
    app.setApplicationName("patchbay")

    def run_for(seconds: float) -> None:
        """Qt's event loop for `seconds`, as the editor's own (`app.exec`) runs it."""
        loop = QEventLoop()
        QTimer.singleShot(round(seconds * 1000), loop.quit)
        loop.exec()

    if mode == "attach":  # then the engine is killed: the editor brings it back
        window = launch_editor(None, attach=True, state_dir=state)
        run_for(0.5)
        window.file_actions.ask_unsaved = lambda: "discard"  # type: ignore[method-assign]
        assert window.engine is not None
        first = window.engine.engine.running_pid()
        assert first is not None
        print(f"ENGINE_KILLED {time.monotonic():.6f}", flush=True)
        os.kill(first, signal.SIGKILL)
        remote = window.evaluator
        assert isinstance(remote, RemoteEvaluator)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not window.engine.restarts:
            run_for(0.05)
        reports = remote.reports  # then two seconds of the new engine, output window open
        while time.monotonic() < deadline and not (
            remote.reports > reports + 60 and remote.output_open
        ):
            run_for(0.05)
        window.close()
        return 0

    show_path, big_path = work.parent / "show.patchbay", work.parent / "big.patchbay"

    if mode == "engine":
        window = launch_editor(str(show_path), output=True, state_dir=state)
    else:
        link, _output = local_engine_with_output()
        window = QtEditorWindow(state, engine=link)
        window.show()
        window.file_actions.open_path(show_path, ask=False)
        window.view_actions.open_output_window()
    window.resize(1400, 850)
    window.file_actions.ask_unsaved = lambda: "discard"  # type: ignore[method-assign]
    run_for(3.0)  # started, built, output shown
    loaded_by = time.monotonic() + LOAD_TIMEOUT_S  # the canvas draws a large patch in slices
    while window.canvas.loading and time.monotonic() < loaded_by:
        run_for(0.1)
    run_for(1.0)
    phases: list[list[Any]] = []

    def phase(name: str, action: Any) -> None:
        start = time.monotonic()
        action()
        phases.append([name, start, time.monotonic()])

    viewer = window.canvas.viewer()

    def wheel(steps: int, delta: int) -> None:
        for _ in range(steps):
            wheel_step(viewer, delta)
            run_for(0.05)

    def zoom() -> None:
        wheel(12 if quick else 25, -120)
        wheel(12 if quick else 25, 120)

    def pan() -> None:
        bar = viewer.horizontalScrollBar()
        for step in range(30 if quick else 60):
            bar.setValue(bar.value() + (40 if step % 60 < 30 else -40))
            run_for(0.016)

    def paste() -> None:
        window.edit_actions.select_all()
        window.edit_actions.copy_selection()
        window.edit_actions.paste()
        run_for(0.5)

    def open_big() -> None:
        window.file_actions.open_path(big_path, ask=False)
        run_for(1.0)

    def save_big() -> None:
        import numpy as np

        window.patch.add_node("value.array", {"value": np.ones(100 * 2**20 // 8)}, node_id="big")
        window.file_actions.ask_save_path = lambda: str(work / "saved.patchbay")  # type: ignore
        window.file_actions.save_as()
        run_for(1.0)

    def undo() -> None:
        window.patch.add_node("input.float", None, (0.0, -200.0), node_id="knob")
        window.undo_stack.clear()
        for step in range(250):
            window.edit_actions.on_value_edited("knob", "value", step / 250, None)
            if step % 10 == 0:
                app.processEvents()
        for step in range(250):
            window.undo_stack.undo()
            if step % 10 == 0:
                app.processEvents()
        run_for(0.5)

    phase("idle", lambda: run_for(PHASE_IDLE_S))
    phase("wheel zoom", zoom)
    phase("pan", pan)
    phase("select-all and paste", paste)
    phase("open 2,000 nodes", open_big)
    phase("save with a 100 MB array", save_big)
    phase("500 undo steps", undo)

    # edit-to-output: value edits of a node the output depends on
    window.file_actions.open_path(show_path, ask=False)
    run_for(2.0)
    edits: list[list[Any]] = []
    remote = window.evaluator
    for step in range(10 if quick else 20):
        sent_at = time.monotonic()
        window.edit_actions.on_value_edited("contrast", "value", 1.0 + step / 10, None)
        window.send_edits()
        seq = window.edits.sent
        deadline = time.monotonic() + 5
        while remote.applied[0] != seq and time.monotonic() < deadline:
            app.processEvents()
            time.sleep(0.001)
        frame = remote.applied[1]
        if frame is not None:
            edits.append([sent_at, frame])
        run_for(0.2)
    print("PHASES " + json.dumps(phases), flush=True)
    print("LATENCY " + json.dumps(edits), flush=True)
    if mode == "engine":
        app.exec()  # until the bench kills this editor
    else:
        window.undo_stack.setClean()
        window.close()
    return 0


if __name__ == "__main__":
    arguments = sys.argv[1:]
    quick_run = "--quick" in arguments
    arguments = [a for a in arguments if a != "--quick"]
    sys.exit(_editor_main(arguments[0], Path(arguments[1]), Path(arguments[2]), quick_run))
