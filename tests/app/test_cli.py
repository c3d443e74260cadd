"""The command line: `patchbay nodes`, headless `run` with `--print`, and bad input."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from app.cli.main import main
from nodes import LIBRARY, Patch, save_patch

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


@pytest.fixture
def patch_file(tmp_path: Path) -> Path:
    patch = Patch()
    seconds = patch.add_node("time.seconds", node_id="t")
    frame = patch.add_node("time.frame", node_id="f")
    mul = patch.add_node("math.mul", {"b": 2.0}, node_id="double")
    patch.connect(seconds, "out", mul, "a")
    patch.add_node("array.linspace", {"count": 3}, node_id="space")
    out = patch.add_node("output.value", node_id="out")
    patch.connect(frame, "out", out, "in")
    path = tmp_path / "clock.patchbay"
    save_patch(patch, path)
    return path


def test_nodes_lists_the_library(capsys) -> None:
    assert main(["nodes"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(LIBRARY)
    by_id = {line.split()[0]: line for line in lines}
    assert set(by_id) == set(LIBRARY)
    assert "nondeterministic" in by_id["time.seconds"]
    assert "user_input" in by_id["input.float"]
    assert "sink" in by_id["output.value"]
    assert "in0:any~lazy" in by_id["logic.switch"]
    assert "in:any~feedback" in by_id["util.frame_delay"]
    assert "(a:num, b:num) -> out:num" in by_id["math.add"]
    cc = "(device:str, channel:int, control:int, value:float~live) -> out:float"
    assert cc in by_id["midi.cc"]
    assert by_id["math.add"].endswith(f"  -- {LIBRARY['math.add'].summary}")


def test_nodes_json() -> None:
    result = run_cli("nodes", "--json")
    assert result.returncode == 0, result.stderr
    entries = json.loads(result.stdout)
    assert isinstance(entries, list)
    assert {entry["id"] for entry in entries} == set(LIBRARY)
    for entry in entries:
        assert entry["determinism"] in ("deterministic", "nondeterministic", "user_input")
        assert entry["determinism"] == LIBRARY[entry["id"]].determinism.value
        assert isinstance(entry["inputs"], list) and isinstance(entry["outputs"], list)
        for pin in entry["inputs"]:
            assert {"name", "type", "default", "lazy", "feedback", "live"} <= set(pin)
    gate = next(entry for entry in entries if entry["id"] == "logic.gate")
    assert [(p["name"], p["lazy"]) for p in gate["inputs"]] == [("open", False), ("in", True)]
    assert next(e for e in entries if e["id"] == "output.value")["sink"] is True
    note = next(entry for entry in entries if entry["id"] == "midi.note")
    assert [p["name"] for p in note["inputs"] if p["live"]] == ["velocity"]


def test_nodes_json_carries_the_docs() -> None:
    result = run_cli("nodes", "--json")
    assert result.returncode == 0, result.stderr
    entries = {entry["id"]: entry for entry in json.loads(result.stdout)}
    lfo = entries["time.lfo"]
    spec = LIBRARY["time.lfo"]
    assert lfo["summary"] == spec.summary and lfo["summary"].endswith(".")
    assert lfo["doc"] == spec.doc and len(lfo["doc"]) > len(lfo["summary"])
    assert {pin["name"]: pin["doc"] for pin in lfo["inputs"]} == {
        "hz": spec.pin_docs["hz"],
        "shape": spec.pin_docs["shape"],
    }
    assert lfo["outputs"] == [{"name": "out", "type": "float", "doc": spec.pin_docs["out"]}]
    beat = entries["time.beat"]
    assert all(out["doc"] for out in beat["outputs"])


def test_run_headless_prints_one_line_per_frame(patch_file: Path) -> None:
    result = run_cli(
        "run",
        str(patch_file),
        "--headless",
        "--frames",
        "4",
        "--fps",
        "10",
        "--print",
        "t.out",
        "double",
        "out.out",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 4
    for frame, line in enumerate(lines):
        t = frame / 10
        assert line == f"{frame} t.out={t!r} double.out={2 * t!r} out.out={float(frame)!r}"


def test_run_headless_prints_a_failed_node_as_failed_and_exits_4(tmp_path: Path) -> None:
    patch = Patch()
    frame = patch.add_node("time.frame", node_id="f")
    div = patch.add_node("math.div", {"a": 6.0}, node_id="ratio")
    patch.connect(frame, "out", div, "b")  # b = 0 on frame 0 only
    path = tmp_path / "divides.patchbay"
    save_patch(patch, path)
    result = run_cli("run", str(path), "--headless", "--frames", "3", "--print", "ratio", "f")
    assert result.returncode == 4, result.stderr
    assert result.stdout.splitlines() == [
        "0 ratio.out=<failed: ZeroDivisionError: float division by zero> f.out=0.0",
        "1 ratio.out=6.0 f.out=1.0",
        "2 ratio.out=3.0 f.out=2.0",
    ]
    assert result.stderr.strip() == "patchbay run: printed node(s) failed: ratio"
    healthy = run_cli("run", str(path), "--headless", "--frames", "3", "--print", "f")
    assert healthy.returncode == 0, healthy.stderr  # only printed nodes count


def test_run_headless_prints_arrays_on_one_line(patch_file: Path, capsys) -> None:
    code = main(["run", str(patch_file), "--headless", "--frames", "2", "--print", "space"])
    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["0 space.out=[0. ,0.5,1. ]", "1 space.out=[0. ,0.5,1. ]"]


def test_run_headless_default_fps(patch_file: Path, capsys) -> None:
    assert main(["run", str(patch_file), "--headless", "--frames", "61", "--print", "t"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == "60 t.out=1.0"


def test_run_headless_without_print_prints_nothing(patch_file: Path, capsys) -> None:
    assert main(["run", str(patch_file), "--headless", "--frames", "3"]) == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("nope.out", "no node 'nope'"),
        ("double.result", "node 'double' has no output 'result'"),
        ("nope", "no node 'nope'"),
    ],
)
def test_run_bad_print_target_exits_2(patch_file: Path, capsys, target: str, message: str) -> None:
    code = main(["run", str(patch_file), "--headless", "--frames", "2", "--print", target])
    assert code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and message in lines[0] and target in lines[0]


def test_run_bad_input_in_a_subprocess_has_no_traceback(patch_file: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.patchbay"
    bad.write_text('{"format": "patchbay", "version": 1, "nodes": [')
    for args in (
        ["run", str(patch_file), "--headless", "--frames", "2", "--print", "nope.out"],
        ["run", str(patch_file), "--headless"],
        ["run", str(patch_file), "--headless", "--frames", "2", "--fps", "0"],
        ["run", str(bad), "--headless", "--frames", "2"],
        ["run", str(tmp_path / "missing.patchbay"), "--headless", "--frames", "2"],
    ):
        result = run_cli(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert len(result.stderr.splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert result.stdout == ""


def test_run_headless_zero_frames(patch_file: Path, capsys) -> None:
    assert main(["run", str(patch_file), "--headless", "--frames", "0", "--print", "t"]) == 0
    assert capsys.readouterr().out == ""


def test_run_headless_frame_delay_loop(tmp_path: Path, capsys) -> None:
    patch = Patch()
    delay = patch.add_node("util.frame_delay", {"init": 1.0}, node_id="d")
    mul = patch.add_node("math.mul", {"b": 2.0}, node_id="m")
    patch.connect(delay, "out", mul, "a")
    patch.connect(mul, "out", delay, "in")
    path = tmp_path / "loop.patchbay"
    save_patch(patch, path)
    assert main(["run", str(path), "--headless", "--frames", "5", "--print", "m"]) == 0
    values = [float(line.split("=")[1]) for line in capsys.readouterr().out.splitlines()]
    assert values == [math.pow(2, k + 1) for k in range(5)]


def test_exit_statuses_are_defined_in_one_module() -> None:
    definition = re.compile(r"^EXIT_\w+ *=", re.MULTILINE)
    modules = (ROOT / "app").rglob("*.py")
    defining = sorted(p.name for p in modules if definition.search(p.read_text(encoding="utf-8")))
    assert defining == ["exit_codes.py"]


def test_the_editor_without_a_display_says_so_in_one_line() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.pop("QT_QPA_PLATFORM", None)
    done = subprocess.run(
        [sys.executable, "-m", "app.cli.main"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no display" in done.stderr
    assert "Traceback" not in done.stderr


def test_bench_file_load_section_reports_both_link_orders_per_size() -> None:
    from app.bench.main import file_load_section

    report = file_load_section([20, 40], repeats=1)
    assert set(report) == {"forward/20", "forward/40", "reversed/20", "reversed/40"}
    for key, row in report.items():
        assert row["nodes"] == int(key.split("/")[1]) and row["mb"] > 0
        assert row["ms_per_mb"] > 0 and row["ms_per_1000_nodes"] > 0
    assert report["forward/20"]["vs_smallest"] == report["reversed/20"]["vs_smallest"] == 1.0
    assert "vs_forward" in report["reversed/40"]


@pytest.mark.parametrize(
    "arguments, says",
    [
        (["--limit", "nodez=3"], "unknown limit 'nodez'"),
        (["--limit", "nodes"], "expected NAME=VALUE"),
        (["--limit", "nodes=2"], "limit nodes = 2"),
    ],
)
def test_limit_flags(patch_file: Path, capsys, arguments: list[str], says: str) -> None:
    from nodes.limits import active_limits

    before = active_limits()
    assert main(["check", str(patch_file), *arguments]) == 2
    assert active_limits() is before  # the limits of a command end with it
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err
    assert main(["check", str(patch_file), "--trust", "--limit", "nodes=6"]) == 0


def test_a_command_run_in_process_leaves_the_limits_as_it_found_them(patch_file: Path) -> None:
    from nodes.limits import active_limits

    before = active_limits()
    assert main(["check", str(patch_file), "--trust", "--limit", "nodes=6"]) == 0
    assert main(["check", str(patch_file), "--limit", "nodes=2"]) == 2
    assert active_limits() == before


def test_check_warns_of_file_names_the_patch_may_not_use(tmp_path: Path, capsys) -> None:
    patch = Patch()
    patch.add_node("gpu.shader", {"source": "", "file": "noise"}, node_id="fine")
    patch.add_node("gpu.image", {"path": "pictures/a.png"}, node_id="missing_but_fine")
    path = tmp_path / "p.patchbay"
    save_patch(patch, path)
    text = path.read_text().replace('"noise"', '"/etc/passwd"')
    path.write_text(text.replace('"pictures/a.png"', '"../../\\u001b[2Jx.png"'))
    assert main(["check", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("ok: patch, 2 nodes, 0 links, 0 sinks")
    assert len(lines) == 3 and all(": warning: " in line for line in lines[1:])
    assert "fine.file" in lines[1] and "absolute paths are not allowed" in lines[1]
    assert "missing_but_fine.path" in lines[2] and "\x1b" not in lines[2]


def test_check_warns_of_a_shader_with_more_uniforms_than_a_node_may_have_pins(
    tmp_path: Path, capsys
) -> None:
    source = "uniform float a;\nuniform float b;\nuniform vec4 c;\nvoid main() {}\n"
    patch = Patch()
    patch.add_node("gpu.shader", {"source": source, "file": ""}, node_id="busy")
    path = tmp_path / "p.patchbay"
    save_patch(patch, path)
    assert main(["check", str(path)]) == 0
    assert "warning" not in capsys.readouterr().out  # three pins are within the default limit
    assert main(["check", str(path), "--limit", "pins_per_node=2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == [
        f"{path}: warning: busy: the shader declares 3 uniforms: 3 is above the limit "
        "pins_per_node = 2"
    ]


def test_edit_passes_its_output_and_attach_flags_to_the_editor(monkeypatch) -> None:
    import app.qt.launch

    calls: list[tuple] = []
    monkeypatch.setattr(app.qt.launch, "run_editor", lambda *a, **k: calls.append((a, k)) or 0)
    assert main(["edit", "show.patchbay", "--output", "--screen", "1", "--fullscreen"]) == 0
    assert main(["edit", "--attach"]) == 0
    (path,), options = calls[0]
    assert path == "show.patchbay"
    assert options["output"] and options["screen"] == 1 and options["fullscreen"]
    assert not options["attach"]
    (path,), options = calls[1]
    assert path is None and options["attach"] and not options["output"]


def test_subpatches_check_run_and_freeze_from_the_command_line(tmp_path: Path, capsys) -> None:
    body = Patch()
    body.add_node("subpatch.inlet", {"name": "x"}, node_id="inx")
    body.add_node("time.frame", node_id="frame")
    body.add_node("math.add", node_id="add")
    body.add_node("subpatch.outlet", {"name": "y"}, node_id="outy")
    body.connect("inx", "out", "add", "a")
    body.connect("frame", "out", "add", "b")
    body.connect("add", "out", "outy", "in")
    patch = Patch()
    patch.add_definition("blob", body)
    for i, x in ((1, 3.0), (2, 10.0)):
        patch.add_node("subpatch", {"definition": "blob", "x": x}, node_id=f"b{i}")
        patch.add_node("output.value", node_id=f"o{i}")
        patch.connect(f"b{i}", "y", f"o{i}", "in")
    path = tmp_path / "sub.patchbay"
    save_patch(patch, path)
    assert main(["check", str(path)]) == 0
    assert (
        capsys.readouterr()
        .out.strip()
        .endswith("ok: patch, 4 nodes, 2 links, 2 sinks, 1 definitions, 2 instances")
    )
    args = ["run", str(path), "--headless", "--frames", "2", "--print", "b2.y", "b1/add.out"]
    assert main(args) == 0
    assert capsys.readouterr().out.splitlines() == [
        "0 b2.y=10.0 b1/add.out=3.0",
        "1 b2.y=11.0 b1/add.out=4.0",
    ]
    frozen = tmp_path / "frozen.patchbay"
    assert main(["freeze", str(path), "-o", str(frozen)]) == 0
    capsys.readouterr()
    assert main(["run", str(frozen), "--headless", "--frames", "2", "--print", "o1", "o2"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "0 o1.out=3.0 o2.out=10.0",
        "1 o1.out=4.0 o2.out=11.0",
    ]
    assert main(["run", str(path), "--headless", "--frames", "1", "--print", "b1/nope.out"]) == 2
    assert "no node 'b1/nope'" in capsys.readouterr().err


class FakeClock:
    """A clock that only moves when slept on or told to: pacing without timing assertions."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class SlowOutput:
    """Lines printed per frame; frame `slow` takes `cost` seconds of the fake clock."""

    def __init__(self, clock: FakeClock, slow: int, cost: float) -> None:
        self.clock, self.slow, self.cost = clock, slow, cost
        self.starts: list[tuple[int, float]] = []

    def write(self, text: str) -> None:
        if text.strip():
            frame = int(text.split()[0])
            self.starts.append((frame, self.clock.now))
            if frame == self.slow:
                self.clock.now += self.cost


def test_realtime_paces_frame_k_to_start_plus_k_over_fps() -> None:
    from app.engine.player import play_headless

    patch = Patch()
    patch.add_node("time.seconds", node_id="t")
    clock = FakeClock()
    out = SlowOutput(clock, slow=2, cost=0.25)  # frame 2 runs late past frames 3..6's starts
    evaluator = play_headless(patch, 10, 20.0, ["t"], out=out, realtime=True, clock=clock,
                              sleep=clock.sleep)  # fmt: skip
    evaluator.close()
    starts = dict(out.starts)
    assert [starts[k] for k in (0, 1, 2)] == pytest.approx([100.0, 100.05, 100.1])
    assert starts[3] == pytest.approx(100.35)  # late: at once, no sleep, and no frame skipped
    assert starts[6] == pytest.approx(100.35)  # 6 / 20 = 0.3 s: still behind
    assert [starts[k] for k in (7, 8, 9)] == pytest.approx([100.35, 100.4, 100.45])
    assert sum(clock.sleeps) == pytest.approx(0.2)  # before frames 1, 2, 8 and 9
    assert all(0 < s <= 0.05 + 1e-9 for s in clock.sleeps)
    assert sorted(starts) == list(range(10))


def test_without_realtime_frames_never_wait() -> None:
    from app.engine.player import play_headless

    patch = Patch()
    patch.add_node("time.seconds", node_id="t")
    clock = FakeClock()
    out = SlowOutput(clock, slow=-1, cost=0.0)
    play_headless(patch, 5, 60.0, ["t"], out=out, clock=clock, sleep=clock.sleep).close()
    assert clock.sleeps == [] and len(out.starts) == 5


def test_run_passes_realtime_to_headless_play(patch_file: Path, monkeypatch) -> None:
    import app.engine.player

    calls: list[dict] = []
    real = app.engine.player.play_headless

    def recording(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(app.engine.player, "play_headless", recording)
    assert main(["run", str(patch_file), "--headless", "--frames", "2", "--realtime"]) == 0
    assert main(["run", str(patch_file), "--headless", "--frames", "2"]) == 0
    assert [call["realtime"] for call in calls] == [True, False]


def test_run_realtime_headless_plays_in_a_subprocess(patch_file: Path) -> None:
    result = run_cli("run", str(patch_file), "--headless", "--frames", "3", "--fps", "100",
                     "--realtime", "--print", "f")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["0 f.out=0.0", "1 f.out=1.0", "2 f.out=2.0"]


def test_the_beat_example_pulses_at_its_tempo(capsys) -> None:
    path = ROOT / "resources" / "examples" / "beat.patchbay"
    assert (
        main(["run", str(path), "--headless", "--frames", "226", "--print", "pulse", "beat.bar"])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    pulses = [int(line.split()[0]) for line in lines if "pulse.out=True" in line]
    # 128 BPM at 60 fps: a beat every 28.125 frames, on the first frame at or after each
    assert pulses == [math.ceil(k * 28.125) for k in range(9)]
    assert lines[225] == "225 pulse.out=True beat.bar=2"


def test_a_render_runs_flat_from_its_first_frame():
    import io

    from app.bench.patches import hot_chain
    from app.engine.player import play_headless

    evaluator = play_headless(hot_chain(500), 1, 60.0, ["sink.out"], out=io.StringIO())
    try:
        assert evaluator.mode == "flat" and evaluator.swaps == 1
        assert evaluator.program is not None and evaluator.program.hot_code is not None
        assert evaluator.program.hot_code.ready  # generated before frame 0, not meanwhile
    finally:
        evaluator.close()
