"""Another editor, as a process of its own that holds a session, autosaves and then crashes or
keeps running: recovery tests need editors that are really gone or really alive (a lock held by a
live process), not windows of the test's own process.

No Qt: the session is what owns recovery files and their locks.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.waiting import TIMEOUT_S, read_line

ROOT = Path(__file__).resolve().parents[2]

EDITOR_SCRIPT = """
import os, sys
from pathlib import Path
from app.session.session import EditorSession
from nodes import Patch
session = EditorSession(Path(sys.argv[1]))
patch = Patch()
patch.add_node("input.float", {{"value": float(sys.argv[2])}}, node_id="speed")
session.set_document(patch, Path(sys.argv[3]) if len(sys.argv) > 3 else None)
patch.set_value("speed", "value", float(sys.argv[2]) / 2)
session.autosave().result(timeout=30)
print("saved", flush=True)
{ending}
"""
CRASH = "os._exit(1)  # no clean close: the recovery stays"
KEEP_RUNNING = "sys.stdin.readline()  # runs until told to stop"


def run_editor(state: Path, value: float, ending: str, *extra: str) -> subprocess.Popen[str]:
    """An editor with state folder `state` whose patch has one `input.float` ("speed") at
    `value`, edited to `value / 2` and autosaved (the optional extra argument is the document's
    file); returns once the autosave is written, then the process runs `ending`."""
    script = EDITOR_SCRIPT.format(ending=ending)
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(state), str(value), *extra],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    # longer than the child's own 30 s for its autosave, so that its error is what shows
    line = read_line(process, "the editor process's autosave", timeout=2 * TIMEOUT_S)
    assert line.strip() == "saved", f"the editor process did not save ({line!r})"
    return process
