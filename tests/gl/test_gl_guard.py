"""The GL fixture's guard: without a usable GL it skips, or fails when PATCHBAY_REQUIRE_GL=1.

No GL is simulated by pointing libglvnd at a missing EGL vendor file, in a pytest subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEST = "tests/gl/test_gl_service.py::test_solid_red_everywhere"


def _run_without_gl(require: bool) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["__EGL_VENDOR_LIBRARY_FILENAMES"] = str(ROOT / "no-such-egl-vendor.json")
    env.pop("PATCHBAY_REQUIRE_GL", None)
    if require:
        env["PATCHBAY_REQUIRE_GL"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:xvfb", TEST],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_without_gl_the_fixture_skips() -> None:
    proc = _run_without_gl(require=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 skipped" in proc.stdout
    assert "no standalone EGL OpenGL 3.3 context" in proc.stdout


def test_without_gl_the_fixture_fails_when_required() -> None:
    proc = _run_without_gl(require=True)
    assert proc.returncode != 0
    assert "PATCHBAY_REQUIRE_GL=1 but no standalone EGL" in proc.stdout
    assert "GL probe exited with code" in proc.stdout  # the probe's output is shown
