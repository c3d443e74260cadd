"""GPU timing where it cannot work (no GL needed): a context without timer queries, a loader that
cannot resolve them, and what the profiler then reports ("n/a" in one way, nothing raised)."""

from __future__ import annotations

from typing import Any

from evaluators import Profiler
from evaluators.insight.gpu_timer import GPUTimer


class Loader:
    def __init__(self, missing: str = "") -> None:
        self.missing = missing

    def load_opengl_function(self, name: str) -> int:
        return 0 if name == self.missing else 0x1000


class Handle:
    def __init__(self, loader: Any) -> None:
        self._context = loader


class Context:
    def __init__(self, version_code: int, extensions: set[str], loader: Any = None) -> None:
        self.version_code = version_code
        self.extensions = extensions
        self.mglo = Handle(loader)


def test_a_context_without_timer_queries_has_no_timer() -> None:
    timer = GPUTimer(Context(320, set(), Loader()))
    assert not timer.available
    assert timer.problem == "no GL timer queries (OpenGL 3.2, no ARB_timer_query)"
    timer.arm("frame 0")
    assert not timer.armed and not timer.open("node")  # nothing begun, nothing to collect
    timer.arm("frame 1")
    assert timer.collect() == [] and timer.pending == 0


def test_a_loader_that_cannot_resolve_the_queries() -> None:
    missing = GPUTimer(Context(450, set(), Loader(missing="glGetQueryObjectui64v")))
    assert missing.problem == "no GL timer queries (glGetQueryObjectui64v is not available)"
    foreign = GPUTimer(Context(450, set(), object()))
    assert foreign.problem == "no GL timer queries (the context's loader cannot resolve functions)"
    assert not missing.available and not foreign.available


class UntimedService:
    """What the profiler sees of a GL service whose context cannot time draws."""

    def __init__(self) -> None:
        self.tokens: list[Any] = []

    def node_timing_problem(self) -> str:
        return "no GL timer queries (OpenGL 3.2, no ARB_timer_query)"

    def time_nodes(self, token: Any) -> None:
        self.tokens.append(token)

    def node_gpu_times(self) -> list[Any]:
        raise AssertionError("nothing to collect from a service that cannot time")


def test_the_profiler_says_why_there_is_no_gpu_time() -> None:
    profiler = Profiler()
    assert profiler.gpu_problem is None  # no GL service seen yet
    profiler.begin(0)
    profiler.end()
    assert profiler.gpu_problem is None
    service = UntimedService()
    for frame in range(1, 5):
        profiler.begin(frame, service)
        profiler.end()
    assert profiler.gpu_problem == "no GL timer queries (OpenGL 3.2, no ARB_timer_query)"
    assert all(token is None for token in service.tokens)  # never asked to time a frame
    assert profiler.gpu_ms() == {} and profiler.gpu_frames == 0
    assert all(record.gpu is None for record in profiler.frames)


class TimedService:
    """A GL service that can time: hands back each frame's times `lag` frames later."""

    lag = 3

    def __init__(self) -> None:
        self.armed: list[Any] = []
        self.stopped = 0

    def node_timing_problem(self) -> str:
        return ""

    def time_nodes(self, token: Any) -> None:
        if token is None:
            self.stopped += 1
        else:
            self.armed.append(token)

    def node_gpu_times(self) -> list[tuple[Any, dict[str, float]]]:
        if len(self.armed) <= self.lag:
            return []
        token = self.armed.pop(0)
        return [(token, {"blur": 0.004})]


def test_gpu_times_are_filed_under_their_frame_and_stop_with_the_profiler() -> None:
    profiler = Profiler(sample_every=1)  # every frame sampled, so every frame timed
    service = TimedService()
    for frame in range(6):
        profiler.begin(frame, service)
        profiler.end()
    assert [record.frame for record in profiler.frames if record.gpu] == [0, 1, 2]
    assert profiler.gpu_ms() == {"blur": 4.0}
    profiler.enabled = False
    profiler.begin(6, service)
    assert service.stopped == 1  # switched off: the service stops timing
    profiler.begin(7, service)
    assert service.stopped == 1
