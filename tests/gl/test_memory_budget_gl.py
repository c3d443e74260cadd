"""Textures count against the patch-wide memory budget: the GL service counts the bytes of the
targets it holds, and a node whose texture would pass the budget fails with the budget's line
while the others keep drawing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evaluators import ExecutionContext
from evaluators.services.gl import GLService
from nodes.limits import DEFAULT_LIMITS, MIB, active_limits, set_active_limits
from tests.evaluator_kinds import EVALUATOR_KINDS
from tests.gl.test_gpu_nodes import Rig

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]


@pytest.fixture
def budget_of_one_mib() -> Iterator[None]:
    before = active_limits()
    set_active_limits(DEFAULT_LIMITS.replaced(memory_bytes=MIB))
    yield
    set_active_limits(before)


def test_the_service_counts_its_textures_and_refuses_one_over_the_budget(
    gl: GLService, budget_of_one_mib: None
) -> None:
    gl.trim()
    ctx = ExecutionContext(gl)
    assert gl.memory is ctx.memory and gl.texture_bytes == 0
    first = gl.acquire((256, 256))  # 256 KiB of RGBA8
    assert ctx.memory.use == gl.texture_bytes == 256 * 1024
    with pytest.raises(Exception, match="memory budget: a 512x512 texture of 1.00 MiB would "
                       r"bring use to 1.25 MiB of 1.00 MiB \(limits.memory_bytes\)"):  # fmt: skip
        gl.acquire((512, 512))
    gl.release(first)  # pooled, not freed: it still counts ...
    assert gl.texture_bytes == 256 * 1024
    second = gl.acquire((512, 512))  # ... until a texture that needs the room frees it
    assert gl.texture_bytes == MIB
    gl.release(second)
    gl.trim()
    assert gl.texture_bytes == 0
    gl.memory = None


@pytest.mark.parametrize("kind", EVALUATOR_KINDS)
def test_a_node_whose_texture_would_pass_the_budget_fails_and_the_rest_draws(
    gl: GLService, budget_of_one_mib: None, kind: str
) -> None:
    gl.trim()
    rig = Rig(gl, kind)  # type: ignore[arg-type]
    try:
        small = rig.add("gpu.solid", color=(1.0, 0.0, 0.0, 1.0))
        rig.link(small, rig.add("gpu.output"))
        big = rig.add("gpu.solid", resolution=(1024, 1024))
        rig.link(big, rig.add("gpu.preview"))
        rig.run(3)
        assert rig.evaluator.status(big) == "failed"
        assert rig.evaluator.error(big).startswith(
            "memory budget: a 1024x1024 texture of 4.00 MiB would bring use to"
        )
        assert rig.evaluator.error(small) is None
        assert rig.pixels(small)[0, 0].tolist() == [255, 0, 0, 255]
    finally:
        rig.close()
        gl.memory = None
