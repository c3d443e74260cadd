"""An engine the kernel kills for want of memory is not restarted into the same death again and
again: after two such deaths in a row while the same node ran, its supervisor restarts it with
that node bypassed and says so. A real engine process dies the same way here: a test node pack
(in this test's own nodes folder, never the library) kills its own process with SIGKILL after
running for a while, as the out-of-memory killer does to a process taking the machine's memory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.engine.client import EngineProcess, OutOfMemoryDeaths
from nodes import LIBRARY, Determinism, Patch, node, save_patch

ROOT = Path(__file__).resolve().parents[2]

PACK = '''
import os
import signal
import time

from nodes import Determinism, node


@node("oomtest.dies", determinism=Determinism.NONDETERMINISTIC)
def dies(x: float = 0.0) -> float:
    """Runs for a while, then its process is killed as the out-of-memory killer kills."""
    time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGKILL)
    return x
'''


@pytest.fixture
def dying_node() -> Iterator[None]:
    """The pack's node type in this process too, to build and save the patch."""

    @node("oomtest.dies", determinism=Determinism.NONDETERMINISTIC)
    def dies(x: float = 0.0) -> float:
        return x

    yield
    del LIBRARY["oomtest.dies"]


def test_two_memory_deaths_in_a_row_restart_the_engine_with_the_node_bypassed(
    tmp_path: Path, dying_node: None
) -> None:
    nodes_dir = tmp_path / "nodes"
    nodes_dir.mkdir()
    (nodes_dir / "oomtest.py").write_text(PACK)
    patch = Patch()
    patch.add_node("time.frame", None, node_id="clock")
    patch.add_node("output.value", None, node_id="shown")
    patch.add_node("oomtest.dies", None, node_id="hog")
    patch.add_node("output.value", None, node_id="hog_out")
    patch.connect("clock", "out", "shown", "in")
    patch.connect("clock", "out", "hog", "x")
    patch.connect("hog", "out", "hog_out", "in")
    save_patch(patch, tmp_path / "hog.patchbay")
    env = {**os.environ, "PATCHBAY_STATE_DIR": str(tmp_path / "state")}
    env["PATCHBAY_NODES_DIR"] = str(nodes_dir)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, "-m", "app.cli.main", "run", str(tmp_path / "hog.patchbay"),
               "--frames", "20"]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]  # the third engine played all its frames
    restarts = [line for line in done.stderr.splitlines() if "restarting the engine" in line]
    assert restarts == [
        "patchbay run: restarting the engine (killed (SIGKILL: out of memory?) while hog ran)",
        "patchbay run: restarting the engine (killed 2 times in a row while hog ran (out of "
        "memory?); hog bypassed)",
    ], done.stderr[-3000:]
    assert EngineProcess(tmp_path / "state" / "engine").running_pid() is None


def test_only_deaths_in_a_row_with_the_same_node_count(tmp_path: Path) -> None:
    engine = EngineProcess(tmp_path / "engine")
    deaths = OutOfMemoryDeaths()

    def killed_while(node_id: str | None, code: int = -signal.SIGKILL) -> str | None:
        if node_id is not None:
            engine.running_file.write_text(json.dumps({"node": node_id}))
        return deaths.died(code, engine)

    assert killed_while("a") == "killed (SIGKILL: out of memory?) while a ran"
    assert killed_while("b") == "killed (SIGKILL: out of memory?) while b ran"  # another node
    assert killed_while("b", 1) is None  # another death in between: not in a row
    assert killed_while("b") is not None and engine.bypass == {}
    assert killed_while(None) == "killed (SIGKILL: out of memory?)"  # no node named
    engine.stalled = 5.0  # killed by its supervisor for not beating: not memory
    assert killed_while("c") is None
    engine.stalled = 0.0
    killed_while("c")
    assert killed_while("c") == ("killed 2 times in a row while c ran (out of memory?); c bypassed")
    assert engine.bypass["c"].startswith("bypassed: the engine was killed 2 times in a row")
    assert not engine.running_file.exists()
