"""The editor gives way to its engine: once the engine runs, every thread of the editor process
(those running already too) is `EDITOR_NICENESS` steps below the priority it started with, which
the engine it started keeps. Run in a process of its own: a priority lowered cannot be raised."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from app.qt.launch import EDITOR_NICENESS

PROBE = """
import os, threading
from pathlib import Path
from app.qt.launch import give_way_to_engine
started = threading.Event()
threading.Thread(target=lambda: started.wait(), daemon=True).start()
before = os.getpriority(os.PRIO_PROCESS, 0)
give_way_to_engine()
give_way_to_engine()  # once is enough: a second call lowers nothing more
after = sorted({os.getpriority(os.PRIO_PROCESS, int(t.name))
                for t in Path("/proc/self/task").iterdir()})
print(before, *after)
started.set()
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="threads listed by Linux only")
def test_every_editor_thread_runs_below_the_engine() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                          timeout=60, check=True)  # fmt: skip
    before, *after = (int(word) for word in done.stdout.split())
    assert after == [min(19, before + EDITOR_NICENESS)]
