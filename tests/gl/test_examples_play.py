"""Every bundled example patch, and the help example of every node type, plays a few frames
headless with no failed node, GPU nodes included.

Some nodes may fail by design, but only with one line: `debug.fail` (a demo of failure), nodes
that need a device this machine does not have (MIDI, audio input, a camera), `osc.out` (headless
playback does not allow sending) and nodes whose file pin the example leaves empty.
"""

from __future__ import annotations

import pytest

from app.engine.player import play_headless
from app.session.node_examples import example_patch, example_paths
from evaluators.services.gl import GLService
from nodes import LIBRARY, NodeSpec, Patch, load_patch

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]

FRAMES = 5
FAILS_BY_DESIGN = {"debug.fail", "osc.out"}
DEVICE_CATEGORIES = {"midi", "audio", "camera"}
DEVICE_TYPES = {"video.camera"}
EXAMPLES = example_paths()
LIBRARY_TYPES = sorted(
    type_id
    for type_id, spec in LIBRARY.items()
    if spec.compute.__module__.startswith("nodes.library")
)


def may_fail(spec: NodeSpec, values: dict[str, object]) -> bool:
    """Whether a node may fail in an example on this machine (see the module note)."""
    empty_file = any(pin.hint == "file" and not values.get(pin.name) for pin in spec.inputs)
    return (
        spec.id in FAILS_BY_DESIGN
        or spec.category in DEVICE_CATEGORIES
        or spec.id in DEVICE_TYPES
        or empty_file
    )


def failures(patch: Patch, gl: GLService) -> dict[str, str]:
    """Play the patch; the nodes that failed though they should not, with their errors."""
    patch.update_settings(resolution=[64, 36])
    evaluator = play_headless(patch, FRAMES, 30.0, [], gpu=gl)
    try:
        found = {}
        for node_id, inst in patch.nodes.items():
            if evaluator.status(node_id) != "failed":
                continue
            error = evaluator.error(node_id) or ""
            if not may_fail(inst.spec, dict(inst.values)) or "\n" in error.strip():
                found[node_id] = error
        return found
    finally:
        evaluator.close()
        evaluator.ctx.release_all()


def categories_used(patch: Patch) -> set[str]:
    """The categories of the nodes of a patch and of its document's definitions."""
    bodies = [patch, *(patch.definition(name) for name in patch.definitions)]
    return {inst.spec.category for body in bodies for inst in body.nodes.values()}


def test_every_category_of_the_library_has_an_example() -> None:
    used = set().union(*(categories_used(load_patch(path)) for path in EXAMPLES))
    missing = {LIBRARY[type_id].category for type_id in LIBRARY_TYPES} - used
    assert not missing, f"no example in resources/examples uses {sorted(missing)}"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_example_plays_without_failures(gl: GLService, path) -> None:
    assert failures(load_patch(path), gl) == {}


@pytest.mark.parametrize("type_id", LIBRARY_TYPES)
def test_help_example_plays_without_failures(gl: GLService, type_id: str) -> None:
    assert failures(example_patch(type_id), gl) == {}


def test_the_demo_shows_a_picture(gl: GLService) -> None:
    """The patch the editor opens on first shows something in its output: a warm circle in the
    middle of a dark background."""
    (demo,) = [path for path in EXAMPLES if path.name == "demo.patchbay"]
    patch = load_patch(demo)
    patch.update_settings(resolution=[64, 36])
    (output,) = [n for n, inst in patch.nodes.items() if inst.type_id == "gpu.output"]
    evaluator = play_headless(patch, FRAMES, 30.0, [], gpu=gl)
    try:
        picture = gl.readback(evaluator.output(output)).astype(int)
    finally:
        evaluator.close()
        evaluator.ctx.release_all()
    middle, corner = picture[18, 32], picture[2, 2]
    assert middle[0] > 150 and middle[2] < 120, middle  # orange
    assert corner[:3].max() < 60, corner  # dark blue
