"""GPU failures never flood the editor: with a texture released under a node (as a failed
reallocation leaves it), 100 turns of the editor's loop driving an engine with GL in its process
(under Xvfb, in a subprocess: editor_refresh_probe.py) let no exception escape, keep the other
nodes' thumbnails and the pictures of the Preview and Output panels updating, and log the failure
once. An edit of the node shows its thumbnail again. How often the engine tries that node's
picture is in tests/gl/test_engine_gl.py."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.xvfb import private_display, unavailable

PROBE = Path(__file__).with_name("editor_refresh_probe.py")


def test_a_released_texture_never_floods_the_editor(tmp_path: Path) -> None:
    with private_display("1600x1000x24") as env:
        command = [sys.executable, str(PROBE), str(tmp_path / "state")]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
    if done.returncode != 0 or not lines:
        output = (done.stdout + done.stderr)[-3000:]
        if "no Qt platform plugin" in output:
            unavailable(f"Qt cannot use Xvfb:\n{output}")
        raise AssertionError(f"the probe failed ({done.returncode}):\n{output}")
    report = json.loads(lines[0].removeprefix("REPORT "))
    assert report["escaped"] == []
    assert report["frames"] >= 100
    assert report["shown"].get("noise", 0) >= 3, report  # the others go on
    assert report["preview_paints"] >= 10 and report["output_paints"] >= 10, report
    assert report["failures"] == 2 and report["logged"] == 1, report  # one distinct failure
    log = done.stderr.split("PROBE released", 1)[1]
    assert log.count("reported once") == 1, log[-3000:]
    assert log.count("Traceback") == 1, log[-3000:]
    assert "its texture was released" in log
    assert report["shown_after_edit"]
