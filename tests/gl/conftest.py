"""Fixtures for tests that need a real OpenGL 3.3 context (standalone EGL, e.g. Mesa llvmpipe).

GL is probed once, in a subprocess, so a crashing driver cannot take pytest down with it.
If the probe fails the GL tests are skipped, unless PATCHBAY_REQUIRE_GL=1 (set on CI), in which
case they fail with the probe's output.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

import tests.qt_setup  # noqa: F401  (before any QApplication exists)
from evaluators.services.gl import GLService

GL_TEST_SIZE = (64, 64)

_PROBE = """
import moderngl
ctx = moderngl.create_standalone_context(backend="egl", require=330)
tex = ctx.texture((4, 4), 4)
fbo = ctx.framebuffer([tex])
fbo.clear(1.0, 0.0, 0.0, 1.0)
assert tex.read()[:4] == bytes([255, 0, 0, 255]), tex.read()[:4]
print(ctx.info["GL_RENDERER"], "|", ctx.info["GL_VERSION"])
ctx.__exit__(None, None, None)
ctx.release()
"""


@dataclass(frozen=True)
class GLProbe:
    ok: bool
    output: str


def _run_probe() -> GLProbe:
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE],
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired as exc:
        return GLProbe(False, f"GL probe timed out after {exc.timeout}s")
    output = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0:
        return GLProbe(False, f"GL probe exited with code {proc.returncode}:\n{output}")
    return GLProbe(True, output)


@pytest.fixture(scope="session")
def gl_probe() -> GLProbe:
    """Result of probing standalone EGL once per session, in a subprocess."""
    return _run_probe()


@pytest.fixture(scope="session")
def require_gl(gl_probe: GLProbe) -> GLProbe:
    """Skip (or fail, with PATCHBAY_REQUIRE_GL=1) when no OpenGL 3.3 context can be made."""
    if not gl_probe.ok:
        message = f"no standalone EGL OpenGL 3.3 context:\n{gl_probe.output}"
        if os.environ.get("PATCHBAY_REQUIRE_GL") == "1":
            pytest.fail(f"PATCHBAY_REQUIRE_GL=1 but {message}", pytrace=False)
        pytest.skip(message)
    return gl_probe


@pytest.fixture(scope="module")
def gl(require_gl: GLProbe) -> Iterator[GLService]:
    """A headless GLService at 64x64, shared by the tests of one module."""
    service = GLService.standalone(size=GL_TEST_SIZE)
    try:
        yield service
    finally:
        service.close()
