"""Editor benchmark: how long a large patch takes to open in the editor and to repaint.

For each size a chain of `math.add` nodes on a grid (fed by `time.seconds`, ending in an
`output.value`) is opened in a real editor window, then the canvas is repainted with a view at
normal zoom (what panning costs) and with the whole patch in view (the worst case, where nodes are
drawn simplified: see app/qt/canvas/canvas.py), also while panning and zooming at that scale. A
large patch is drawn on the canvas progressively (app/qt/canvas/canvas.py), so opening is measured
three ways: until the window is back in the event loop, until the canvas is complete, and the
longest single event-loop turn in between (the worst freeze a user sees while it loads). The window
drives an engine in this process (app.engine.local), paused; a frame is one run of that engine's
evaluator. Works under QT_QPA_PLATFORM=offscreen; it makes a QApplication if there is none.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QRectF, Qt
from PySide6.QtWidgets import QApplication

from app.bench.patches import grid_chain
from app.engine.local import LocalEngineLink
from app.qt.window import QtEditorWindow

REPEATS = 5
LOAD_TIMEOUT_S = 120.0  # a canvas still loading after this is broken, not slow


def _median_seconds(action: Any) -> float:
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def editor_bench(sizes: tuple[int, ...] = (200, 1000, 2000)) -> dict[str, dict[str, float]]:
    """Seconds to open and repaint patches of the given sizes: {"<size>": {measure: seconds}}.

    Measures: `open_s` (open the patch in the editor until the event loop runs again),
    `load_s` (until the canvas shows the whole patch), `stall_s` (the longest event-loop turn
    from opening until the canvas is complete), `repaint_zoom1_s` (one repaint at normal zoom, as
    when panning), `pan_step_s` (scroll then repaint), `repaint_all_s` (one repaint with every
    node in view), `pan_all_s` and `zoom_all_s` (one pan step as a middle-button drag makes it, or
    one wheel-notch zoom step, then a repaint, with every node in view), `frame_s` (one evaluator
    frame).
    """
    QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
    app = QApplication.instance() or QApplication([])
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as state:
        link = LocalEngineLink()
        window = QtEditorWindow(Path(state), engine=link)
        window.resize(1600, 1000)
        window.show()
        window.transport_actions.toggle_pause()  # the frame loop would compete with measurements
        app.processEvents()
        viewer = window.canvas.viewer()
        sign = [1]  # pan and zoom steps alternate in direction, so the view stays put

        def pan_all() -> None:
            sign[0] = -sign[0]
            viewer._set_viewer_pan(40 * sign[0], 0)  # as a middle-button drag does
            viewer.grab()

        def zoom_all() -> None:
            sign[0] = -sign[0]
            viewer._set_viewer_zoom(120 * sign[0])  # as one wheel notch does
            viewer.grab()

        for size in sizes:
            patch = grid_chain(size)
            started = time.perf_counter()
            window.set_patch(patch, None)
            app.processEvents()
            opened = time.perf_counter()
            stall = opened - started
            deadline = time.monotonic() + LOAD_TIMEOUT_S
            while window.canvas.loading:  # no sleep: the loading runs in these turns
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the editor canvas was still drawing the {size}-node patch "
                        f"after {LOAD_TIMEOUT_S:.0f} s"
                    )
                turn = time.perf_counter()
                app.processEvents()
                stall = max(stall, time.perf_counter() - turn)
            load = time.perf_counter() - started
            repaint_all = _median_seconds(viewer.grab)
            pan_all_s = _median_seconds(pan_all)
            zoom_all_s = _median_seconds(zoom_all)
            viewer.fitInView(QRectF(0, 0, 1400, 800), Qt.AspectRatioMode.KeepAspectRatio)
            viewer.grab()
            repaint_zoom1 = _median_seconds(viewer.grab)
            bar = viewer.horizontalScrollBar()

            def pan() -> None:
                bar.setValue(bar.value() + 40)  # noqa: B023 - used within the iteration
                viewer.grab()

            pan_step = _median_seconds(pan)
            link.step()  # the engine takes the patch (paused: no frame runs)
            played = link.engine.evaluator
            played.wait_for_flat(30.0)
            frame = _median_seconds(lambda: played.run_frame(0.0, 0))  # noqa: B023
            results[str(size)] = {
                "open_s": opened - started,
                "load_s": load,
                "stall_s": stall,
                "repaint_zoom1_s": repaint_zoom1,
                "pan_step_s": pan_step,
                "repaint_all_s": repaint_all,
                "pan_all_s": pan_all_s,
                "zoom_all_s": zoom_all_s,
                "frame_s": frame,
            }
        window.undo_stack.setClean()
        window.close()
    return results
