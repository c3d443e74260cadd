"""Tempo: the `bpm` setting, `time.beat` on the patch clock, tap tempo, nudge and resync."""

from __future__ import annotations

import itertools

import pytest

from evaluators import FlatEvaluator, LazyEvaluator
from nodes import Patch, PatchError, PatchValueError, patch_from_dict, patch_to_dict
from nodes.tempo import DEFAULT_BPM, BeatClock, TapTempo, checked_bpm


def beat_patch(**settings: float) -> tuple[Patch, str, str]:
    patch = Patch()
    if settings:
        patch.update_settings(**settings)
    beat = patch.add_node("time.beat")
    sink = patch.add_node("output.value")
    patch.connect(beat, "phase", sink, "in")
    return patch, beat, sink


def play(evaluator, beat: str, frames: range, fps: float = 60.0) -> list[tuple]:
    rows = []
    for frame in frames:
        evaluator.run_frame(frame / fps, frame)
        rows.append(tuple(evaluator.output(beat, pin) for pin in ("phase", "beat", "bar", "pulse")))
    return rows


# ----------------------------------------------------------------------------- the setting


def test_bpm_defaults_to_120_and_is_checked() -> None:
    patch = Patch()
    assert FlatEvaluator(patch).ctx.bpm == DEFAULT_BPM == 120.0
    patch.update_settings(bpm=90)
    assert patch.settings["bpm"] == 90.0
    for bad in (0, 19.9, 1000, "fast", True, None):
        with pytest.raises(PatchValueError, match="bpm"):
            patch.update_settings(bpm=bad)
    assert patch.settings["bpm"] == 90.0
    assert checked_bpm(20) == 20.0 and checked_bpm(999) == 999.0


def test_bpm_is_saved_and_checked_on_load() -> None:
    patch = Patch()
    patch.update_settings(bpm=128.5)
    document = patch_to_dict(patch)
    assert document["settings"]["bpm"] == 128.5
    assert patch_from_dict(document).settings["bpm"] == 128.5
    document["settings"]["bpm"] = 5000
    with pytest.raises(PatchError, match=r"settings\.bpm: 5000 is not a tempo from 20 to 999"):
        patch_from_dict(document)
    document["settings"]["bpm"] = "x"
    with pytest.raises(PatchError, match=r"settings\.bpm"):
        patch_from_dict(document)


# ----------------------------------------------------------------------------- time.beat


@pytest.mark.parametrize("kind", [LazyEvaluator, FlatEvaluator])
def test_beat_at_120_bpm_and_60_fps(kind) -> None:
    patch, beat, _ = beat_patch()
    rows = play(kind(patch), beat, range(0, 250))
    pulses = [frame for frame, row in enumerate(rows) if row[3]]
    assert pulses == list(range(0, 250, 30))
    for frame, (phase, count, bar, _) in enumerate(rows):
        assert count == frame // 30
        assert phase == pytest.approx((frame % 30) / 30, abs=1e-9)
        assert bar == frame // 120
    assert rows[119][2] == 0 and rows[120][1:3] == (4, 1)  # a bar after 4 beats
    assert isinstance(rows[45][1], int) and isinstance(rows[45][3], bool)


def test_beats_per_bar() -> None:
    patch, beat, _ = beat_patch()
    patch.set_value(beat, "beats_per_bar", 3)
    rows = play(FlatEvaluator(patch), beat, range(0, 100))
    assert [row[2] for row in rows[::30]] == [0, 0, 0, 1]


def test_a_tempo_change_keeps_the_phase_continuous() -> None:
    patch, beat, _ = beat_patch()
    evaluator = FlatEvaluator(patch)
    before = play(evaluator, beat, range(0, 46))  # frame 45: 1.5 beats at 120 BPM
    patch.update_settings(bpm=60)
    after = play(evaluator, beat, range(46, 106))
    assert before[-1][:2] == (pytest.approx(0.5), 1)
    # at 60 BPM and 60 fps a beat moves 1/60 a frame, from where it was
    assert after[0][:2] == (pytest.approx(0.5 + 1 / 60), 1)
    assert after[14][:2] == (pytest.approx(0.75), 1)  # frame 60: not 0.0 (t = 1 s at 60 BPM)
    assert [46 + k for k, row in enumerate(after) if row[3]] == [75]
    assert after[-1][:2] == (pytest.approx(0.5), 2)
    beats = [count + phase for phase, count, _, _ in before + after]
    steps = [b - a for a, b in itertools.pairwise(beats)]
    assert max(steps) == pytest.approx(1 / 30) and min(steps) == pytest.approx(1 / 60)


def test_a_render_gives_the_same_beats_every_run() -> None:
    runs = []
    for _ in range(2):
        patch, beat, _ = beat_patch(bpm=137)
        runs.append(play(FlatEvaluator(patch), beat, range(200), fps=30.0))
    assert runs[0] == runs[1]


def test_a_clock_reset_starts_the_beats_again() -> None:
    clock = BeatClock()
    assert clock.advance(0.0, 120.0, 4) == (0.0, True)
    assert clock.advance(0.25, 120.0, 4) == (0.5, False)
    assert clock.advance(0.0, 120.0, 4) == (0.0, True)


# ----------------------------------------------------------------------------- nudge and resync


def test_nudge_shifts_the_phase_at_the_next_frame() -> None:
    clock = BeatClock()
    clock.advance(0.0, 120.0, 4)
    clock.nudge(0.1)
    assert clock.advance(0.25, 120.0, 4)[0] == pytest.approx(0.6)
    assert clock.advance(0.5, 120.0, 4)[0] == pytest.approx(1.1)  # stays shifted
    clock.nudge(-0.2)
    assert clock.advance(0.75, 120.0, 4)[0] == pytest.approx(1.4)


def test_resync_makes_the_next_frame_a_downbeat() -> None:
    clock = BeatClock()
    clock.advance(0.0, 120.0, 4)
    beat, _ = clock.advance(1.1, 120.0, 4)
    assert beat == pytest.approx(2.2)
    clock.resync()
    assert clock.advance(1.2, 120.0, 4) == (4, True)  # beat 0 of bar 1
    assert clock.advance(1.45, 120.0, 4)[0] == pytest.approx(4.5)


def test_resync_through_a_node_state() -> None:
    patch, beat, _ = beat_patch()
    evaluator = FlatEvaluator(patch)
    play(evaluator, beat, range(0, 40))
    for state in evaluator.ctx.states.values():
        if isinstance(state, BeatClock):
            state.resync()
    phase, count, bar, pulse = play(evaluator, beat, range(40, 41))[0]
    assert (phase, count, bar, pulse) == (0.0, 4, 1, True)


# ----------------------------------------------------------------------------- tap tempo


def test_tap_tempo_at_500_ms_gives_120_bpm_with_an_outlier_ignored() -> None:
    taps = TapTempo()
    assert taps.tap(10.0) is None
    assert taps.tap(10.5) is None
    assert taps.tap(11.0) == pytest.approx(120.0, abs=0.5)
    taps.tap(11.5)
    bpm = taps.tap(12.2)  # late: an interval of 0.7 s
    assert bpm == pytest.approx(120.0, abs=0.5)
    assert taps.tap(12.5) == pytest.approx(120.0, abs=0.5)  # 0.3 s: ignored too


def test_tap_tempo_follows_uneven_human_taps() -> None:
    taps = TapTempo()
    for t in (0.0, 0.49, 1.01, 1.5, 2.02, 2.49):
        bpm = taps.tap(t)
    assert bpm == pytest.approx(60.0 / (2.49 / 5), abs=0.5)


def test_a_long_pause_restarts_tap_tempo() -> None:
    taps = TapTempo(restart_after=2.0)
    for t in (0.0, 0.5, 1.0):
        taps.tap(t)
    assert taps.tap(5.0) is None  # a new series: one tap
    assert taps.tap(5.4) is None
    assert taps.tap(5.8) == pytest.approx(150.0, abs=0.5)


def test_a_tap_at_the_same_time_or_earlier_restarts() -> None:
    taps = TapTempo()
    for t in (0.0, 0.5, 1.0):
        taps.tap(t)
    assert taps.tap(1.0) is None
    assert taps.taps == [1.0]
