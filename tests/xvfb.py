"""A private Xvfb display for tests that need real windows and OpenGL, in a child process.

Qt picks its platform once per process and most app tests run offscreen, so window tests run a
probe script in a subprocess on a fresh Xvfb. Without Xvfb they skip, except with
PATCHBAY_REQUIRE_GL=1 (CI), where they fail.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 60.0  # until Xvfb names its display


def unavailable(message: str) -> None:
    """Skip, or fail when CI requires GL."""
    if os.environ.get("PATCHBAY_REQUIRE_GL") == "1":
        pytest.fail(f"PATCHBAY_REQUIRE_GL=1 but {message}", pytrace=False)
    pytest.skip(message)


@contextmanager
def private_display(*screens: str) -> Iterator[dict[str, str]]:
    """Environment for a child process on a fresh Xvfb with the given screens ("800x600x24")."""
    xvfb = shutil.which("Xvfb")
    if xvfb is None:
        unavailable("Xvfb is not installed (apt-get install xvfb)")
    read_end, write_end = os.pipe()
    arguments = [xvfb, "-displayfd", str(write_end), "-nolisten", "tcp"]
    for number, geometry in enumerate(screens):
        arguments += ["-screen", str(number), geometry]
    server = subprocess.Popen(
        arguments, pass_fds=(write_end,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    os.close(write_end)
    with os.fdopen(read_end) as pipe:
        started, _, _ = select.select([pipe], [], [], START_TIMEOUT_S)
        display = pipe.readline().strip() if started else ""
    if not display:
        server.kill()
        server.wait()
        unavailable("Xvfb did not start" + ("" if started else f" in {START_TIMEOUT_S:.0f} s"))
    env = {**os.environ, "DISPLAY": f":{display}", "QT_QPA_PLATFORM": "xcb"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    try:
        yield env
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
