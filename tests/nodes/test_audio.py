"""Audio nodes on signals the tests write as WAV files: audio.file in step with the patch clock,
level, bands, onsets and the beat, in every evaluator; audio.input without a device; file paths.

Files decode on the context's workers: a test first runs frame 0 until audio.file is no longer
deferred (by deadline), then plays frames at 60 fps (t = k / 60), so frame k takes the samples
from k / 60 s for 1 / 60 s: 800 samples at 48 kHz.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import soundfile

from evaluators import Controls, ExecutionContext, NodeStatus
from evaluators.services.audio import NO_PORTAUDIO, AudioService
from evaluators.services.registry import FACTORIES
from nodes import LIBRARY, Determinism, Patch
from nodes.library.media.audio import NO_AUDIO_INPUT
from nodes.library.media.dsp import AUDIO_RATE, log_band_edges
from tests.waiting import poll_until

RATE = AUDIO_RATE
FPS = 60


def tone(hz: float, seconds: float, amplitude: float = 0.5) -> np.ndarray:
    t = np.arange(round(seconds * RATE)) / RATE
    return (amplitude * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def clicks(times: list[float], seconds: float) -> np.ndarray:
    """Short decaying noise bursts (10 ms) starting at `times`, silence between."""
    signal = np.zeros(round(seconds * RATE), np.float32)
    burst = np.random.default_rng(7).standard_normal(RATE // 100) * np.exp(
        -np.arange(RATE // 100) / (0.002 * RATE)
    )
    for at in times:
        start = round(at * RATE)
        part = signal[start : start + len(burst)]
        part += (0.5 * burst[: len(part)]).astype(np.float32)
    return signal


def write_wav(folder: Path, name: str, samples: np.ndarray, rate: int = RATE) -> str:
    soundfile.write(folder / name, samples, rate, subtype="FLOAT")
    return name


class Player:
    """audio.file -> the node under test -> a sink, in a patch saved in `folder`."""

    def __init__(self, make_evaluator: Callable[..., Any], folder: Path, file: str,
                 analysis: str, values: dict[str, Any] | None = None,
                 loop: bool = False) -> None:  # fmt: skip
        self.patch = Patch()
        self.patch.folder = folder
        self.patch.add_node("audio.file", {"path": file, "loop": loop}, node_id="file")
        self.patch.add_node(analysis, values or {}, node_id="analysis")
        self.patch.connect("file", "out", "analysis", "in")
        for pin in [out.name for out in LIBRARY[analysis].outputs]:
            self.patch.add_node("output.value", node_id=f"sink_{pin}")
            self.patch.connect("analysis", pin, f"sink_{pin}", "in")
        self.evaluator = make_evaluator(self.patch)

    def wait_for_the_file(self) -> None:
        def loaded() -> bool:
            self.evaluator.run_frame(0.0, 0)
            return self.evaluator.status("file") != NodeStatus.DEFERRED

        assert poll_until(loaded)
        assert self.evaluator.status("file") == NodeStatus.OK, self.evaluator.error("file")

    def play(self, frames: range, pin: str = "out") -> list[Any]:
        values = []
        for frame in frames:
            self.evaluator.run_frame(frame / FPS, frame)
            values.append(self.evaluator.output("analysis", pin))
        return values


@pytest.fixture
def player(make_evaluator: Callable[..., Any], tmp_path: Path) -> Callable[..., Player]:
    made: list[Player] = []

    def make(*args: Any, **kwargs: Any) -> Player:
        made.append(Player(make_evaluator, tmp_path, *args, **kwargs))
        made[-1].wait_for_the_file()
        return made[-1]

    yield make
    for one in made:
        one.evaluator.ctx.release_all()


# ----------------------------------------------------------------------------- the library


def test_audio_nodes_and_their_pins() -> None:
    pins = {
        type_id: ([p.name for p in LIBRARY[type_id].inputs],
                  [(o.name, o.type) for o in LIBRARY[type_id].outputs])
        for type_id in ("audio.input", "audio.file", "audio.level", "audio.bands",
                        "audio.onset", "audio.beat")
    }  # fmt: skip
    assert pins == {
        "audio.input": (["device", "latency"], [("out", "array")]),
        "audio.file": (["path", "loop"], [("out", "array")]),
        "audio.level": (["in"], [("out", "float")]),
        "audio.bands": (["in", "count", "smoothing"], [("out", "array")]),
        "audio.onset": (["in", "threshold"], [("out", "bool")]),
        "audio.beat": (["in", "drive_tempo"], [("bpm", "float"), ("pulse", "bool")]),
    }
    assert LIBRARY["audio.level"].determinism is Determinism.DETERMINISTIC
    for type_id in ("audio.input", "audio.file", "audio.bands", "audio.onset", "audio.beat"):
        assert LIBRARY[type_id].determinism is Determinism.NONDETERMINISTIC
    assert LIBRARY["audio.file"].input("path").hint == "file"  # type: ignore[union-attr]


# ----------------------------------------------------------------------------- audio.file, level


def test_file_level_is_high_during_the_tone_and_low_in_the_silence(
    player: Callable[..., Player], tmp_path: Path
) -> None:
    name = write_wav(tmp_path, "tone.wav", np.concatenate([tone(440, 1.0), np.zeros(RATE)]))
    levels = player(name, "audio.level").play(range(130))
    assert levels[30] == pytest.approx(0.5 / np.sqrt(2), abs=0.01)  # a 0.5 sine's RMS
    assert levels[90] == pytest.approx(0.0, abs=1e-6)
    assert all(level > 0.3 for level in levels[:60])  # the tone: frames 0..59 (t < 1 s)
    assert all(level < 1e-6 for level in levels[60:120])  # the silence: frames 60..119
    assert all(level == 0.0 for level in levels[120:])  # past the end without loop: silence


def test_file_frames_are_the_samples_at_the_patch_time(
    player: Callable[..., Player], tmp_path: Path
) -> None:
    ramp = (np.arange(RATE, dtype=np.float32) / RATE).astype(np.float32)  # 1 s, value = time
    one = player(write_wav(tmp_path, "ramp.wav", ramp), "audio.level")
    one.play(range(2))
    samples = one.evaluator.output("file")
    assert samples.dtype == np.float32 and samples.shape == (RATE // FPS,)
    np.testing.assert_allclose(samples, ramp[800:1600])  # frame 1: 1/60 s .. 2/60 s
    one.evaluator.run_frame(0.5, 30)  # a jump: the samples from that time, for the step's time
    np.testing.assert_allclose(one.evaluator.output("file"), ramp[24000 : 24000 + 29 * 800])
    one.evaluator.run_frame(31 / FPS, 31)
    np.testing.assert_allclose(one.evaluator.output("file"), ramp[24800:25600])


def test_file_loops(player: Callable[..., Player], tmp_path: Path) -> None:
    name = write_wav(tmp_path, "tone.wav", np.concatenate([tone(440, 1.0), np.zeros(RATE)]))
    levels = player(name, "audio.level", loop=True).play(range(250))
    assert levels[120 + 30] > 0.3 and levels[240 + 5] > 0.3  # the tone again, each 2 s
    assert levels[120 + 90] < 1e-6


def test_a_file_at_another_rate_plays_at_its_own_speed(
    player: Callable[..., Player], tmp_path: Path
) -> None:
    t = np.arange(22050) / 22050  # one second at 22.05 kHz: 0.5 s of tone, 0.5 s of silence
    samples = np.where(t < 0.5, 0.5 * np.sin(2 * np.pi * 440 * t), 0.0).astype(np.float32)
    name = write_wav(tmp_path, "low.wav", samples, 22050)
    levels = player(name, "audio.level").play(range(60))
    assert all(level > 0.3 for level in levels[2:28]) and all(level < 0.01 for level in levels[32:])


# ----------------------------------------------------------------------------- bands


@pytest.mark.parametrize("hz", [100.0, 5000.0])
def test_a_tone_lands_in_the_band_that_holds_it(
    player: Callable[..., Player], tmp_path: Path, hz: float
) -> None:
    name = write_wav(tmp_path, "tone.wav", tone(hz, 1.0))
    count = 8
    bands = player(name, "audio.bands", {"count": count}).play(range(30))[-1]
    edges = log_band_edges(count)
    holding = int(np.searchsorted(edges, hz, side="right")) - 1
    assert edges[holding] <= hz < edges[holding + 1]
    assert bands.shape == (count,)
    assert int(np.argmax(bands)) == holding
    assert bands[holding] == pytest.approx(0.5 / np.sqrt(2), rel=0.15)


def test_bands_follow_the_sound_smoothly(player: Callable[..., Player], tmp_path: Path) -> None:
    name = write_wav(tmp_path, "tone.wav", np.concatenate([tone(1000, 0.5), np.zeros(RATE)]))
    bands = player(name, "audio.bands", {"count": 4, "smoothing": 0.8}).play(range(80))
    loudest = [float(np.max(b)) for b in bands]
    assert loudest[25] > 0.3
    falling = loudest[31:45]
    assert all(a > b for a, b in itertools.pairwise(falling))  # decays, no jump
    assert loudest[79] < 0.01


# ----------------------------------------------------------------------------- onsets


def test_clicks_give_onsets_at_their_frames_and_silence_none(
    player: Callable[..., Player], tmp_path: Path
) -> None:
    times = [0.25, 0.6, 1.0, 1.33, 1.7123, 2.05, 2.5]
    name = write_wav(tmp_path, "clicks.wav", clicks(times, 4.0))
    onsets = player(name, "audio.onset").play(range(240))
    found = [frame for frame, onset in enumerate(onsets) if onset]
    expected = [int(at * FPS) for at in times]
    assert len(found) == len(expected)
    assert all(abs(a - b) <= 1 for a, b in zip(found, expected, strict=True)), (found, expected)
    assert not any(onsets[160:])  # 2.67 s .. 4 s: silence


def test_a_steady_tone_has_one_onset(player: Callable[..., Player], tmp_path: Path) -> None:
    name = write_wav(tmp_path, "tone.wav", np.concatenate([np.zeros(RATE // 2), tone(440, 2.0)]))
    onsets = player(name, "audio.onset").play(range(140))
    assert [frame for frame, onset in enumerate(onsets) if onset] == [30]


# ----------------------------------------------------------------------------- beat


@pytest.mark.parametrize("bpm", [100.0, 128.0])
def test_beat_finds_the_tempo_and_pulses_on_the_clicks(
    player: Callable[..., Player], tmp_path: Path, bpm: float
) -> None:
    times = list(np.arange(0.1, 10.0, 60.0 / bpm))
    name = write_wav(tmp_path, "beat.wav", clicks(times, 10.0))
    one = player(name, "audio.beat")
    bpms = one.play(range(600), "bpm")
    assert bpms[60] == 0.0  # one second: not known yet
    assert bpms[-1] == pytest.approx(bpm, abs=1.5)
    one2 = player(name, "audio.beat")  # the pulses of a fresh run, frame by frame
    pulses = [frame for frame, pulse in enumerate(one2.play(range(600), "pulse")) if pulse]
    click_frames = [round(at * FPS) for at in times if at > 6.0]
    late_pulses = [frame for frame in pulses if frame > 6.0 * FPS]
    assert len(late_pulses) == len(click_frames)
    assert all(abs(a - b) <= 1 for a, b in zip(late_pulses, click_frames, strict=True))


def test_beat_drives_the_patch_tempo_when_asked(
    player: Callable[..., Player], tmp_path: Path
) -> None:
    times = list(np.arange(0.1, 10.0, 60.0 / 100.0))
    one = player(write_wav(tmp_path, "beat.wav", clicks(times, 10.0)), "audio.beat")
    ctx = one.evaluator.ctx
    one.play(range(300), "bpm")
    assert ctx.live_bpm is None and ctx.bpm == 120.0  # drive_tempo off: the setting's tempo
    one.patch.set_value("analysis", "drive_tempo", True)
    one.play(range(300, 310), "bpm")
    assert ctx.bpm == pytest.approx(100.0, abs=1.5)
    one.patch.set_value("analysis", "drive_tempo", False)
    one.play(range(310, 312), "bpm")
    assert ctx.live_bpm is None and ctx.bpm == 120.0
    one.patch.set_value("analysis", "drive_tempo", True)
    one.play(range(312, 314), "bpm")
    one.patch.remove_node("analysis")  # removed: the tempo goes back too
    assert ctx.live_bpm is None


# ----------------------------------------------------------------------------- failures


def test_a_path_outside_the_patch_folder_is_refused_in_one_line(
    make_evaluator: Callable[..., Any], tmp_path: Path
) -> None:
    inside = tmp_path / "show"
    inside.mkdir()
    write_wav(tmp_path, "outside.wav", tone(440, 0.1))
    patch = Patch()
    patch.folder = inside
    patch.add_node("audio.file", {"path": "../outside.wav"}, node_id="file")
    patch.add_node("audio.level", node_id="level")
    patch.connect("file", "out", "level", "in")
    patch.add_node("output.value", node_id="sink")
    patch.connect("level", "out", "sink", "in")
    evaluator = make_evaluator(patch)
    evaluator.run_frame(0.0, 0)
    assert evaluator.status("file") == NodeStatus.FAILED
    error = evaluator.error("file") or ""
    assert "outside the patch's folder" in error and "'../outside.wav'" in error
    assert "\n" not in error


def test_a_file_that_is_no_audio_fails_in_one_line_until_it_changes(
    make_evaluator: Callable[..., Any], tmp_path: Path
) -> None:
    (tmp_path / "noise.wav").write_bytes(b"RIFF\x00\x00not really a wave file" * 3)
    patch = Patch()
    patch.folder = tmp_path
    patch.add_node("audio.file", {"path": "noise.wav"}, node_id="file")
    patch.add_node("output.value", node_id="sink")
    patch.connect("file", "out", "sink", "in")
    evaluator = make_evaluator(patch)

    def settled() -> bool:
        evaluator.run_frame(0.0, 0)
        return evaluator.status("file") != NodeStatus.DEFERRED

    assert poll_until(settled)
    error = evaluator.error("file") or ""
    assert error.startswith("OSError: audio file 'noise.wav': not an audio file"), error
    assert "\n" not in error
    write_wav(tmp_path, "noise.wav", tone(440, 0.5))  # fixed on disk: it plays
    assert poll_until(settled) and evaluator.status("file") == NodeStatus.OK
    evaluator.ctx.release_all()


class NoDevices:
    def inputs(self) -> list[Any]:
        return []

    def default_input(self) -> None:
        return None

    def open_input(self, *args: Any) -> Any:
        raise AssertionError("nothing to open")


@pytest.mark.parametrize(
    ("service", "device", "expected"),
    [
        (lambda: AudioService(NoDevices()), "", "no input device on this machine"),
        (lambda: AudioService(NoDevices()), "Scarlett", "no input device matching 'Scarlett'"),
        (lambda: AudioService(unavailable=NO_PORTAUDIO), "", "the PortAudio library is missing"),
        (AudioService, "", ""),  # this machine as it is: no device, perhaps no PortAudio
    ],
)
def test_audio_input_without_a_device_fails_in_one_line_and_the_rest_plays(
    make_evaluator: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    service: Callable[[], AudioService],
    device: str,
    expected: str,
) -> None:
    monkeypatch.setitem(FACTORIES, "audio", lambda ctx: service())
    patch = Patch()
    patch.add_node("audio.input", {"device": device}, node_id="mic")
    patch.add_node("audio.level", node_id="level")
    patch.connect("mic", "out", "level", "in")
    patch.add_node("time.frame", node_id="clock")
    for source in ("level", "clock"):
        patch.add_node("output.value", node_id=f"sink_{source}")
        patch.connect(source, "out", f"sink_{source}", "in")
    evaluator = make_evaluator(patch)
    frames = iter(range(1000))

    def settled() -> bool:
        frame = next(frames)
        evaluator.run_frame(frame / FPS, frame)
        return evaluator.status("mic") != NodeStatus.DEFERRED

    assert poll_until(settled)
    assert evaluator.status("mic") == NodeStatus.FAILED
    error = evaluator.error("mic") or ""
    assert error.startswith(f"RuntimeError: {NO_AUDIO_INPUT}: ") and expected in error, error
    assert "\n" not in error
    evaluator.run_frame(2000 / FPS, 2000)
    assert evaluator.status("mic") == NodeStatus.FAILED
    assert evaluator.status("clock") == NodeStatus.OK  # the rest of the patch plays
    assert evaluator.output("clock") == 2000.0
    assert evaluator.output("level") == 0.0
    evaluator.ctx.release_all()


def test_audio_input_without_services_fails_saying_so() -> None:
    with pytest.raises(RuntimeError, match=f"^{NO_AUDIO_INPUT}: this player has no audio service"):
        LIBRARY["audio.input"].compute(SimpleNamespace(dt=0.0), "", 0.0)


def test_analysis_takes_any_input_without_raising() -> None:
    ctx = ExecutionContext()
    for value in (np.zeros(0), np.full(800, np.nan), np.array(["a"]), np.ones((800, 2)), 3.0):
        assert 0.0 <= LIBRARY["audio.level"].compute(value) <= 1.0
        bands = LIBRARY["audio.bands"]
        assert bands.compute(bands.init_state(""), value, 8, 0.5).shape == (8,)  # type: ignore[misc]
        onset = LIBRARY["audio.onset"]
        assert onset.compute(onset.init_state(""), value, 2.5) in (True, False)  # type: ignore[misc]
        beat = LIBRARY["audio.beat"]
        assert beat.compute(ctx, beat.init_state(""), value, True) == (0.0, False)  # type: ignore[misc]


def test_the_controls_runtime_leaves_the_tempo_audio_sets(
    player: Callable[..., Player], tmp_path: Path
) -> None:
    """Live controls run before every frame and drive the MIDI clock's tempo: a tempo set by
    audio.beat is not theirs to clear."""
    times = list(np.arange(0.1, 10.0, 60.0 / 100.0))
    one = player(write_wav(tmp_path, "beat.wav", clicks(times, 10.0)), "audio.beat",
                 {"drive_tempo": True})  # fmt: skip
    controls = Controls(one.patch, one.evaluator.ctx)
    for frame in range(1, 330):
        controls.before_frame()
        one.evaluator.run_frame(frame / FPS, frame)
    assert one.evaluator.ctx.live_bpm == pytest.approx(100.0, abs=1.5)
    controls.before_frame()
    assert one.evaluator.ctx.live_bpm == pytest.approx(100.0, abs=1.5)
