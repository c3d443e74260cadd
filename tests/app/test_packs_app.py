"""Node packs in the programs: `patchbay nodes` names each pack node's pack, `patchbay check`
warns of types not installed, and the engine swaps a pack edited while it plays between frames,
with the frame loop going on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.engine.client import EngineClient, EngineProcess
from app.engine.engine import Engine
from nodes import LIBRARY, Patch, apply_staged, load_packs
from nodes.packs import stage_file
from tests.app.test_engine_process import Editor
from tests.nodes.test_packs import PACK, library, scale_patch, write_pack  # noqa: F401
from tests.waiting import TIMEOUT_S

ROOT = Path(__file__).resolve().parents[2]


def run_cli(nodes_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATCHBAY_NODES_DIR": str(nodes_dir)}
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=120,
    )


def test_nodes_lists_pack_nodes_with_their_pack(tmp_path: Path) -> None:
    write_pack(tmp_path, 2.0)
    (tmp_path / "broken.py").write_text("def (\n")
    result = run_cli(tmp_path, "nodes")
    assert result.returncode == 0, result.stderr
    [line] = [line for line in result.stdout.splitlines() if line.startswith("mypack.scale")]
    assert "[pack mypack]" in line
    assert not any("[pack" in line for line in result.stdout.splitlines() if "math.add " in line)
    assert result.stderr.splitlines() == [
        "patchbay: node pack 'broken' not loaded: broken.py:1: SyntaxError: invalid syntax"
    ]
    listed = json.loads(run_cli(tmp_path, "nodes", "--json").stdout)
    packs = {entry["id"]: entry["pack"] for entry in listed}
    assert packs["mypack.scale"] == "mypack" and packs["math.add"] is None


def test_check_and_run_know_pack_nodes_and_warn_of_missing_ones(tmp_path: Path) -> None:
    packs, empty, show = tmp_path / "packs", tmp_path / "empty", tmp_path / "show"
    for folder in (packs, empty, show):
        folder.mkdir()
    write_pack(packs, 2.0)
    # the patch is written by a process that has the pack
    script = (
        "from nodes import load_packs, save_patch\n"
        "from tests.nodes.test_packs import scale_patch\n"
        "assert load_packs() == []\n"
        f"save_patch(scale_patch()[0], {str(show / 'show.patchbay')!r})\n"
    )
    env = {**os.environ, "PATCHBAY_NODES_DIR": str(packs), "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", script], check=True, cwd=ROOT, env=env, timeout=120)
    path = show / "show.patchbay"
    result = run_cli(packs, "check", str(path))
    assert result.returncode == 0 and "warning" not in result.stdout, result.stdout
    played = run_cli(packs, "run", str(path), "--headless", "--frames", "2", "--print", "out.out")
    assert played.stdout.splitlines() == ["0 out.out=10.0", "1 out.out=10.0"], played.stderr
    result = run_cli(empty, "check", str(path))
    assert result.returncode == 0
    assert result.stdout.splitlines()[1] == (
        f"{path}: warning: scale: node type 'mypack.scale' is not installed (missing pack?)"
    )
    played = run_cli(empty, "run", str(path), "--headless", "--frames", "1", "--print", "scale.out")
    assert played.stdout.splitlines() == [
        "0 scale.out=<failed: MissingNodeTypeError: node type 'mypack.scale' is not installed"
        " (missing pack?)>"
    ], played.stderr


@pytest.fixture
def nodes_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, library: None) -> Path:  # noqa: F811
    folder = tmp_path / "user-nodes"
    folder.mkdir()
    monkeypatch.setenv("PATCHBAY_NODES_DIR", str(folder))
    return folder


def test_the_engine_swaps_an_edited_pack_between_frames_and_plays_on(nodes_dir: Path) -> None:
    write_pack(nodes_dir, 2.0)
    assert load_packs() == []
    patch, out = scale_patch()
    engine = Engine(patch)
    engine.evaluator.watch([out])
    engine.watch_packs()
    try:
        engine.step(0.0)
        assert engine.evaluator.output(out) == 10.0
        frames = engine.frame
        (nodes_dir / "mypack.py").write_text(PACK.format(factor=3.0))
        deadline = time.monotonic() + TIMEOUT_S
        while engine.evaluator.output(out) != 15.0 and time.monotonic() < deadline:
            engine.step(engine.frame / 60)
            time.sleep(0.005)
        assert engine.evaluator.output(out) == 15.0
        assert engine.frame > frames
        assert engine.patch.nodes["scale"].spec is LIBRARY["mypack.scale"]
        # a broken edit: one line, the nodes of before go on
        (nodes_dir / "mypack.py").write_text("def (\n")
        lines: list[str] = []
        while not lines and time.monotonic() < deadline:
            while not engine._pack_problems.empty():
                lines.append(engine._pack_problems.get_nowait())
            time.sleep(0.005)
        assert lines and lines[0].startswith("node pack 'mypack' not loaded: mypack.py:1:")
        engine.step(engine.frame / 60)
        assert engine.evaluator.output(out) == 15.0
    finally:
        engine.close()


def test_a_patch_the_engine_receives_gets_the_specs_of_now(nodes_dir: Path) -> None:
    write_pack(nodes_dir, 2.0)
    assert load_packs() == []
    patch, out = scale_patch()
    engine = Engine(Patch())
    try:
        # a patch made before the pack was reloaded (on a reader thread, say)
        write_pack(nodes_dir, 5.0)
        assert stage_file(nodes_dir / "mypack.py") is None
        assert apply_staged() == []
        engine.replace_patch(patch)
        assert engine.patch.nodes["scale"].spec is LIBRARY["mypack.scale"]
        engine.evaluator.watch([out])
        engine.step(0.0)
        assert engine.evaluator.output(out) == 25.0
    finally:
        engine.close()


def test_the_engine_process_loads_packs_at_start_and_reloads_them_while_it_plays(
    nodes_dir: Path, tmp_path: Path
) -> None:
    write_pack(nodes_dir, 2.0)
    assert load_packs() == []  # the editor's side knows the type too
    run_dir = tmp_path / "engine"
    client = EngineClient(EngineProcess(run_dir))  # inherits PATCHBAY_NODES_DIR
    try:
        assert client.start() is False
        patch, out = scale_patch()
        editor = Editor(client, patch)
        editor.send_patch()
        remote = client.evaluator
        assert editor.wait(lambda: remote.output(out) == 10.0)
        write_pack(nodes_dir, 3.0)
        assert editor.wait(lambda: remote.output(out) == 15.0)
        assert not [m for m in editor.messages if m.TYPE == "error"]
        (nodes_dir / "mypack.py").write_text("def (\n")
        assert editor.wait(lambda: any(m.TYPE == "error" for m in editor.messages))
        [error] = [m.message for m in editor.messages if m.TYPE == "error"]
        assert error.startswith("node pack 'mypack' not loaded: mypack.py:1: SyntaxError")
        assert editor.wait(lambda: remote.output(out) == 15.0)
    finally:
        client.close()
        EngineProcess(run_dir).stop()
