"""GPU time per node from GL timer queries, on a real standalone EGL context (llvmpipe on CI).

The times are read at least `GPUTimer.lag` frames late and only once GL says they are available;
frames here run without `finish` so nothing but the queries' own availability brings them in.
The panel test writes tests/artifacts/profiler_gpu.png.
"""

from __future__ import annotations

import ctypes
import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from app.cli.main import main
from app.engine.reports.profile_costs import profile_costs
from evaluators import EvaluatorKind, Profiler
from evaluators.insight.gpu_timer import GL_QUERY_RESULT, GL_QUERY_RESULT_AVAILABLE, GPUTimer
from evaluators.services.gl import GLService
from nodes import Patch, save_patch
from tests.evaluator_kinds import evaluator_for_tests

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]

FRAMES = 10
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def blur_patch() -> Patch:
    """A HOT noise blurred twice: `small` at 16x16 pixels, `big` at 384x384 (576x the pixels)."""
    patch = Patch()
    patch.update_settings(resolution=[64, 64])
    patch.add_node("time.seconds", node_id="t")
    patch.add_node("gpu.noise", node_id="noise")
    patch.connect("t", "out", "noise", "time")
    for node_id, side in (("small", 16), ("big", 384)):
        patch.add_node("gpu.blur", {"radius": 8.0, "resolution": [side, side]}, node_id=node_id)
        patch.connect("noise", "out", node_id, "in")
        patch.add_node("gpu.output", node_id=f"{node_id}_out")
        patch.connect(node_id, "out", f"{node_id}_out", "in")
    return patch


@pytest.fixture
def service() -> Iterator[GLService]:
    """A service of its own: these tests look at its timer from its first query on."""
    made = GLService.standalone((64, 64))
    yield made
    made.close()


def timed_evaluator(service: GLService, kind: EvaluatorKind = "flat", sample_every: int = 1) -> Any:
    """An evaluator of `blur_patch` whose profiler samples every `sample_every`-th frame (the
    frames whose draws are timed; a fixed period, not stretched to bound the overhead)."""
    evaluator = evaluator_for_tests(kind, blur_patch(), gpu=service)
    evaluator.observer.profiler = Profiler(sample_every=sample_every, max_overhead=None)
    return evaluator


def run(service: GLService, kind: EvaluatorKind, frames: int) -> Any:
    evaluator = timed_evaluator(service, kind)
    for frame in range(frames):
        with service.frame(finish=False):
            evaluator.run_frame(frame / 60.0, frame)
    return evaluator


@pytest.mark.parametrize("kind", ["flat", "lazy", "dual"])
def test_a_node_doing_more_work_gets_more_gpu_time(service: GLService, kind: EvaluatorKind) -> None:
    evaluator = run(service, kind, FRAMES)
    try:
        profiler = evaluator.observer.profiler
        assert profiler.gpu_problem == ""
        gpu_ms = profiler.gpu_ms()
        assert set(gpu_ms) == {"noise", "small", "big"}  # the nodes that draw, no others
        assert gpu_ms["big"] > gpu_ms["small"] > 0.0
        # Every frame but the last `lag` ones has its times, filed under the frame they measure.
        timed = [record.frame for record in profiler.frames if record.gpu is not None]
        assert timed == list(range(FRAMES - GPUTimer.lag))
        assert profiler.gpu_frames == FRAMES - GPUTimer.lag
        report = {row["node"]: row for row in profiler.report()}
        assert report["big"]["gpu_ms"] == pytest.approx(gpu_ms["big"])
        assert report["t"]["gpu_ms"] is None  # no draws
    finally:
        evaluator.close()
        evaluator.ctx.release_all()


class GLCalls:
    """Wraps the timer's GL entry points: which query results were read, and whether GL had said
    they were available first."""

    def __init__(self, timer: GPUTimer) -> None:
        self.available: dict[int, bool] = {}
        self.read: list[tuple[int, bool]] = []  # (query, available when read)
        self.waits = 0
        self.begun: list[int] = []
        gl = timer._gl
        check, fetch, begin = (
            gl["glGetQueryObjectiv"],
            gl["glGetQueryObjectui64v"],
            gl["glBeginQuery"],
        )

        def get_status(query: int, name: int, out: Any) -> None:
            check(query, name, out)
            if name == GL_QUERY_RESULT_AVAILABLE:
                self.available[query] = bool(ctypes.cast(out, ctypes.POINTER(ctypes.c_int))[0])

        def get_result(query: int, name: int, out: Any) -> None:
            assert name == GL_QUERY_RESULT
            self.read.append((query, self.available.get(query, False)))
            fetch(query, name, out)

        def begin_query(target: int, query: int) -> None:
            self.begun.append(query)
            begin(target, query)

        def finish() -> None:
            self.waits += 1

        gl.update(glGetQueryObjectiv=get_status, glGetQueryObjectui64v=get_result,
                  glBeginQuery=begin_query, glFinish=finish)  # fmt: skip


def test_results_are_read_late_and_only_when_available(service: GLService) -> None:
    evaluator = timed_evaluator(service)
    try:
        profiler = evaluator.observer.profiler
        calls: GLCalls | None = None
        for frame in range(FRAMES):
            with service.frame(finish=False):
                evaluator.run_frame(frame / 60.0, frame)
            if calls is None:  # the timer is made (and warmed up) in the first profiled frame
                assert service._timer is not None
                calls = GLCalls(service._timer)
            newest = profiler.frames[-1]
            assert newest.frame == frame and newest.gpu is None  # never read in its own frame
            read = [record.frame for record in profiler.frames if record.gpu is not None]
            assert all(frame - measured >= GPUTimer.lag for measured in read)
        assert calls is not None
        assert calls.read, "no result was read"
        assert all(available for _, available in calls.read)  # GL said so before each read
        assert calls.waits == 0  # the timer never waited for the GPU
        assert len(calls.begun) == 5 * (FRAMES - 1)  # a query per draw: noise 1, each blur 2
    finally:
        evaluator.close()
        evaluator.ctx.release_all()


def test_no_query_while_the_profiler_is_off(service: GLService) -> None:
    evaluator = timed_evaluator(service)
    try:
        profiler = evaluator.observer.profiler
        profiler.enabled = False
        for frame in range(FRAMES):
            with service.frame(finish=False):
                evaluator.run_frame(frame / 60.0, frame)
        assert service._timer is None  # never made: no query, not even the warm-up
        assert profiler.gpu_frames == 0 and profiler.gpu_ms() == {}
        profiler.enabled = True
        for frame in range(FRAMES, 2 * FRAMES):
            with service.frame(finish=False):
                evaluator.run_frame(frame / 60.0, frame)
        assert profiler.gpu_frames == FRAMES - GPUTimer.lag
        assert set(profiler.gpu_ms()) == {"noise", "small", "big"}
        assert profile_costs(evaluator, 10)["gpu_status"] == ""
    finally:
        evaluator.close()
        evaluator.ctx.release_all()


def test_only_sampled_frames_are_timed(service: GLService) -> None:
    evaluator = timed_evaluator(service, sample_every=4)
    try:
        profiler = evaluator.observer.profiler
        profiler.budget = math.inf  # no frame over budget forces sampling on a busy machine
        for frame in range(11):
            with service.frame(finish=False):
                evaluator.run_frame(frame / 60.0, frame)
        # Sampled: the first frame, then every 4th (frames 4 and 8); frame 8's times are due
        # three frames later, at frame 11.
        assert [record.frame for record in profiler.frames if record.gpu] == [0, 4]
        assert profiler.gpu_frames == 2 and set(profiler.gpu_ms()) == {"noise", "small", "big"}
    finally:
        evaluator.close()
        evaluator.ctx.release_all()


def test_profile_command_reports_gpu_time_and_a_gpu_track(tmp_path: Path, capsys: Any) -> None:
    path = tmp_path / "blur.patchbay"
    save_patch(blur_patch(), path)
    trace_path = tmp_path / "trace.json"
    arguments = ["profile", str(path), "--frames", str(FRAMES), "--json"]
    assert main([*arguments, "--trace", str(trace_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["gpu_status"] == ""
    by_node = {row["node"]: row for row in report["nodes"]}
    assert by_node["big"]["gpu_ms"] > by_node["small"]["gpu_ms"] > 0.0
    assert by_node["t"]["gpu_ms"] is None
    events = json.loads(trace_path.read_text(encoding="utf-8"))["traceEvents"]
    gpu_events = [event for event in events if event.get("cat") == "gpu"]
    assert {event["name"] for event in gpu_events} == {"noise", "small", "big"}
    assert {event["args"]["frame"] for event in gpu_events} == set(range(FRAMES - GPUTimer.lag))
    assert main(["profile", str(path), "--frames", str(FRAMES)]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {line.split()[0]: line.split() for line in lines[2:-1]}
    assert float(rows["big"][5]) > float(rows["small"][5]) > 0.0  # the gpu ms column
    assert rows["t"][5:] == ["non-deterministic", str(FRAMES)]  # blank: t does not draw
    assert lines[-1] == "gpu ms: mean GPU time per frame (GL timer queries)"


def test_the_profiler_panel_shows_gpu_ms(service: GLService, qtbot: Any) -> None:
    from app.engine.reports.profile_costs import profile_reply
    from app.qt.panels.profiler import GPU_MS, QtProfilerPanel

    evaluator = run(service, "dual", FRAMES)
    try:
        panel = QtProfilerPanel()
        qtbot.addWidget(panel)
        panel.resize(900, 260)
        panel.show_reply(profile_reply(evaluator, None, 50))
        paths = panel.shown_paths()
        gpu = {path: panel.proxy.index(r, GPU_MS).data() for r, path in enumerate(paths)}
        assert float(gpu["big"]) > float(gpu["small"]) > 0.0
        assert gpu["t"] == "" and gpu["big_out"] == ""  # they do not draw
        panel.table.sortByColumn(GPU_MS, Qt.SortOrder.DescendingOrder)
        assert panel.shown_paths()[0] == "big"
        assert "GPU n/a" not in panel.summary.text()
        ARTIFACTS.mkdir(exist_ok=True)
        assert panel.grab().save(str(ARTIFACTS / "profiler_gpu.png"))
    finally:
        evaluator.close()
        evaluator.ctx.release_all()


def test_a_closed_service_or_a_frame_left_open_never_breaks_a_frame() -> None:
    service = GLService.standalone((64, 64))
    evaluator = run(service, "flat", 2)
    try:
        timer = service._timer
        assert timer is not None
        timer.max_spans = 3
        timer.arm(("a frame nobody closes", None))
        # Its profiler gone, a new one that is off (so never told the service anything): the
        # draws go on, timed at most 3 times.
        evaluator.observer.profiler = Profiler()
        evaluator.observer.profiler.enabled = False
        for frame in range(2, 6):
            with service.frame(finish=False):
                evaluator.run_frame(frame / 60.0, frame)
        assert timer._slot is not None and len(timer._slot.spans) == 3
        service.close()
        evaluator.observer.profiler.enabled = True
        evaluator.run_frame(6 / 60.0, 6)  # GPU nodes fail on a closed service; nothing raises
        assert "GLService is closed" in (evaluator.error("noise") or "")
        assert service.node_timing_problem() == "the GL service is closed"
    finally:
        evaluator.close()
        evaluator.ctx.release_all()
        service.close()
