"""The transport: patch time at a rate, steps back, the fixed step for rendering; the clock on a
wall clock of the test's own, and the engine driven by its messages."""

from __future__ import annotations

import pytest

from app.engine.engine import Engine
from app.engine.transport import TransportClock
from nodes import Patch
from tests.app.test_engine import EditorEnd
from tests.waiting import TIMEOUT_S, poll_until


class FakeClock:
    def __init__(self) -> None:
        self.t = 500.0

    def __call__(self) -> float:
        return self.t


def test_a_rate_change_keeps_patch_time_continuous() -> None:
    wall = FakeClock()
    clock = TransportClock(wall)
    wall.t += 2.0
    assert clock.seconds() == pytest.approx(2.0)
    clock.set_rate(4.0)
    assert clock.seconds() == pytest.approx(2.0)  # no jump
    wall.t += 1.0
    assert clock.seconds() == pytest.approx(6.0)
    clock.set_rate(0.5)
    wall.t += 2.0
    assert clock.seconds() == pytest.approx(7.0)
    clock.set_paused(True)
    wall.t += 10.0
    assert clock.seconds() == pytest.approx(7.0)
    clock.set_paused(False)
    wall.t += 2.0
    assert clock.seconds() == pytest.approx(8.0)  # the rate outlives a pause


@pytest.mark.parametrize("rate", [0.0, -1.0, 16.5, float("nan"), float("inf"), "2", True])
def test_rates_out_of_range_are_refused(rate: object) -> None:
    clock = TransportClock(FakeClock())
    with pytest.raises(ValueError, match="rate must be"):
        clock.set_rate(rate)
    assert clock.rate == 1.0


def test_the_fixed_step_ignores_the_wall_clock_and_real_time_continues_after_it() -> None:
    wall = FakeClock()
    clock = TransportClock(wall)
    wall.t += 3.0
    clock.set_fixed_step(50.0)
    times = []
    for _ in range(4):
        times.append(clock.frame_time())
        wall.t += 1.7  # a slow frame: patch time does not care
    assert times == pytest.approx([3.0, 3.02, 3.04, 3.06])
    clock.set_fixed_step(None)
    assert clock.seconds() == pytest.approx(3.08)  # from where the fixed step left it
    wall.t += 0.5
    assert clock.frame_time() == pytest.approx(3.58)
    assert clock.frame_time() == pytest.approx(3.58)  # real time: frames do not move it


def test_the_fixed_step_is_still_while_paused_and_steps_move_it() -> None:
    wall = FakeClock()
    clock = TransportClock(wall)
    clock.set_fixed_step(10.0)
    clock.set_paused(True)
    assert [clock.frame_time() for _ in range(3)] == [0.0, 0.0, 0.0]
    clock.advance(0.1)
    clock.advance(-0.25)
    assert clock.frame_time() == pytest.approx(-0.15)


def watched_time_patch() -> Patch:
    patch = Patch()
    patch.add_node("time.seconds", None, node_id="t")
    patch.add_node("time.frame", None, node_id="frame")
    return patch


def playing_engine(wall: FakeClock) -> tuple[Engine, EditorEnd]:
    engine = Engine(Patch(), now=wall)
    editor = EditorEnd(engine, watched_time_patch())
    editor.channel.send({"type": "watch", "nodes": ["t", "frame"]})
    editor.read_until("report", lambda m: "t" in m["values"])
    return engine, editor


def seen(engine: Engine) -> tuple[float, float]:
    return engine.evaluator.output("t"), engine.evaluator.output("frame")


def test_the_engine_plays_at_the_rate_it_is_sent() -> None:
    wall = FakeClock()
    engine, editor = playing_engine(wall)
    wall.t += 1.0
    engine.step()
    assert seen(engine)[0] == pytest.approx(1.0)
    editor.channel.send({"type": "rate", "rate": 2.0})
    report = editor.read_until("report", lambda m: m["rate"] == 2.0)
    assert report["fixed_fps"] is None
    before = engine.clock()
    wall.t += 0.25
    engine.step()
    assert seen(engine)[0] == pytest.approx(before + 0.5)
    editor.channel.send({"type": "rate", "rate": 0})
    error = editor.read_until("error")
    assert "rate must be above 0 and at most 16" in error["message"]
    assert engine.transport.rate == 2.0
    engine.close()


def test_a_step_back_moves_time_and_the_frame_index_back_one_frame() -> None:
    wall = FakeClock()
    engine, editor = playing_engine(wall)
    editor.channel.send({"type": "pause", "paused": True})
    editor.read_until("report", lambda m: m["paused"])
    editor.channel.send({"type": "step", "seconds": 0.5})
    editor.read_until("report", lambda m: seen(engine)[0] == pytest.approx(0.5))
    t, frame = seen(engine)
    editor.channel.send({"type": "step", "seconds": -1 / 60})
    editor.read_until("report", lambda m: seen(engine)[0] < t)
    assert seen(engine) == (pytest.approx(t - 1 / 60), frame - 1)
    # Two steps back before a frame runs: two frames back, one frame shown.
    editor.channel.send({"type": "step", "seconds": -1 / 60})
    editor.channel.send({"type": "step", "seconds": -1 / 60})
    editor.read_until("report", lambda m: seen(engine)[1] == frame - 3)
    assert seen(engine)[0] == pytest.approx(t - 3 / 60)
    editor.channel.send({"type": "step", "seconds": -1.5})
    error = editor.read_until("error")
    assert "seconds must be within -1 and 1" in error["message"]
    engine.close()


def test_the_engine_renders_a_fixed_step_per_frame_whatever_the_wall_clock() -> None:
    wall = FakeClock()
    engine, editor = playing_engine(wall)
    wall.t += 2.0

    def drained(message: dict) -> None:
        """Send `message` and run the step that drains it (no frame before it, which in
        fixed-step mode would move time on)."""
        editor.channel.send(message)
        assert poll_until(lambda: not engine.inbox.empty(), TIMEOUT_S, interval=0.002)
        engine.step()

    drained({"type": "fixed_step", "fps": 25.0})
    assert engine.transport.fixed_fps == 25.0
    start = seen(engine)[0]  # the frame that drained it ran at the time reached
    assert start == pytest.approx(2.0)
    times = []
    for _ in range(5):
        wall.t += 3.0  # each frame takes three seconds to render
        engine.step()
        times.append(seen(engine)[0])
    assert times == pytest.approx([start + k / 25 for k in range(1, 6)])
    drained({"type": "fixed_step", "fps": None})
    assert engine.transport.fixed_fps is None
    assert seen(engine)[0] == pytest.approx(start + 6 / 25)  # real time from where it was
    wall.t += 0.5
    engine.step()
    assert seen(engine)[0] == pytest.approx(start + 6 / 25 + 0.5)
    report = editor.read_until("report", lambda m: m["fixed_fps"] is None)
    assert report["rate"] == 1.0
    editor.channel.send({"type": "fixed_step", "fps": -3})
    assert "fps must be above 0" in editor.read_until("error")["message"]
    engine.close()
