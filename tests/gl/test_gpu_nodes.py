"""GPU nodes through real evaluators on a standalone EGL context at 64x64.

Pixels are read back top row first. Reference images live in tests/gl/references; rewrite them
with `pytest --regenerate-references` (and look at them before committing).
"""

from __future__ import annotations

import concurrent.futures
import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from evaluators import DualEvaluator, EvaluatorKind, FlatEvaluator
from evaluators.services.gl import GLService
from nodes import Patch
from nodes.library.gpu import sources as gpu_library
from nodes.library.gpu.sources import NO_GPU_MESSAGE
from tests.evaluator_kinds import EVALUATOR_KINDS, evaluator_for_tests

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]

REFERENCES = Path(__file__).parent / "references"
RIG_KINDS: list[EvaluatorKind] = ["lazy", "flat"]  # the dual one is both; it runs in a few tests


class Rig:
    """A patch at 64x64 run by one evaluator on the shared GL service."""

    def __init__(self, gl: GLService, kind: EvaluatorKind = "flat") -> None:
        self.gl = gl
        self.patch = Patch()
        self.patch.update_settings(resolution=[64, 64])
        self.kind = kind
        self.evaluator: Any = None
        self.frame = 0

    def add(self, type_id: str, **values: Any) -> str:
        return self.patch.add_node(type_id, values)

    def link(self, src: str, dst: str, pin: str = "in", src_pin: str = "out") -> None:
        self.patch.connect(src, src_pin, dst, pin)

    def run(self, frames: int = 1) -> None:
        if self.evaluator is None:
            options = {"background": False} if self.kind == "dual" else {}
            self.evaluator = evaluator_for_tests(self.kind, self.patch, gpu=self.gl, **options)
        for _ in range(frames):
            with self.gl.frame():
                self.evaluator.run_frame(self.frame / 60.0, self.frame)
            self.frame += 1

    def pixels(self, node_id: str) -> np.ndarray:
        target = self.evaluator.output(node_id)
        assert target is not None, f"{node_id} has no texture ({self.evaluator.error(node_id)})"
        return self.gl.readback(target).astype(int)

    def close(self) -> None:
        if self.evaluator is not None:
            self.evaluator.close()
            self.evaluator.ctx.release_all()


@pytest.fixture
def rig(gl: GLService) -> Iterator[Rig]:
    made = Rig(gl)
    yield made
    made.close()


@pytest.fixture(params=RIG_KINDS)
def any_rig(gl: GLService, request: pytest.FixtureRequest) -> Iterator[Rig]:
    made = Rig(gl, request.param)
    yield made
    made.close()


def check_reference(request: pytest.FixtureRequest, name: str, image: np.ndarray) -> None:
    """Compare with tests/gl/references/NAME.png within 3/255 per channel."""
    path = REFERENCES / f"{name}.png"
    if request.config.getoption("--regenerate-references"):
        REFERENCES.mkdir(exist_ok=True)
        Image.fromarray(image.astype(np.uint8), "RGBA").save(path)
        return
    assert path.exists(), f"no reference {path.name}: run pytest --regenerate-references"
    reference = np.asarray(Image.open(path).convert("RGBA")).astype(int)
    assert reference.shape == image.shape
    worst = int(np.abs(reference - image).max())
    assert worst <= 3, f"{name}: differs from its reference by up to {worst}/255"


def near(actual: Any, expected: Any, tolerance: int = 2) -> bool:
    return bool(np.all(np.abs(np.asarray(actual, int) - np.asarray(expected, int)) <= tolerance))


# ----------------------------------------------------------------------------- generators


def test_solid(any_rig: Rig) -> None:
    solid = any_rig.add("gpu.solid", color=(1.0, 0.5, 0.0, 1.0))
    out = any_rig.add("gpu.output")
    any_rig.link(solid, out)
    any_rig.run()
    image = any_rig.pixels(out)
    assert image.shape == (64, 64, 4)
    assert near(image.reshape(-1, 4), (255, 128, 0, 255), 1)


def test_gradient(any_rig: Rig, request: pytest.FixtureRequest) -> None:
    gradient = any_rig.add("gpu.gradient", color_a=(1, 0, 0, 1), color_b=(0, 0, 1, 1))
    any_rig.link(gradient, any_rig.add("gpu.output"))
    any_rig.run()
    image = any_rig.pixels(gradient)
    assert near(image[:, 0], (251, 0, 4, 255), 3)  # the first column centre is 0.5/64 along
    assert near(image[:, -1], (4, 0, 251, 255), 3)
    assert np.all(np.diff(image[10, :, 0]) <= 0) and np.all(np.diff(image[10, :, 2]) >= 0)
    check_reference(request, "gradient", image)


def test_noise_follows_time(any_rig: Rig, request: pytest.FixtureRequest) -> None:
    noise = any_rig.add("gpu.noise", scale=4.0, time=0.5)
    any_rig.link(noise, any_rig.add("gpu.output"))
    any_rig.run()
    first = any_rig.pixels(noise)
    assert np.all(first[..., 0] == first[..., 1]) and np.all(first[..., 3] == 255)
    assert first[..., 0].std() > 20  # a pattern, not a flat colour
    check_reference(request, "noise", first)
    any_rig.patch.set_value(noise, "time", 1.5)
    any_rig.run()
    assert np.abs(any_rig.pixels(noise) - first).mean() > 10


def test_circle(any_rig: Rig, request: pytest.FixtureRequest) -> None:
    circle = any_rig.add("gpu.circle", center=(0.25, 0.75), radius=0.2, color=(0, 1, 0, 1),
                         background=(0, 0, 0, 1))  # fmt: skip
    any_rig.link(circle, any_rig.add("gpu.output"))
    any_rig.run()
    image = any_rig.pixels(circle)
    assert near(image[16, 16], (0, 255, 0, 255))  # centre: x = 0.25, y = 0.75 from the bottom
    assert near(image[48, 48], (0, 0, 0, 255))
    check_reference(request, "circle", image)


def test_shader_uniforms_reach_the_shader(any_rig: Rig) -> None:
    source = """#version 330
in vec2 uv;
out vec4 fragColor;
uniform vec4 tint = vec4(0.0, 0.0, 1.0, 1.0);
uniform float gain;
uniform vec3 rgb;
uniform sampler2D src;
void main() { fragColor = texture(src, uv) * gain + tint + vec4(rgb, 0.0); }
"""
    solid = any_rig.add("gpu.solid", color=(0.5, 0.0, 0.0, 1.0))
    shader = any_rig.add("gpu.shader", source=source, gain=0.5, rgb=(0.0, 0.25, 0.0))
    any_rig.link(solid, shader, "src")
    any_rig.link(shader, any_rig.add("gpu.output"))
    pins = {pin.name: pin for pin in any_rig.patch.nodes[shader].inputs}
    assert pins["tint"].type == "color" and pins["tint"].default == (0.0, 0.0, 1.0, 1.0)
    assert pins["src"].type == "texture" and pins["gain"].type == "float"
    any_rig.run()
    assert near(any_rig.pixels(shader)[32, 32], (64, 64, 255, 255))


def test_shader_from_a_bundled_file(any_rig: Rig) -> None:
    shader = any_rig.add("gpu.shader", source="", file="solid.glsl", color=(0, 1, 1, 1))
    any_rig.link(shader, any_rig.add("gpu.output"))
    assert [p.name for p in any_rig.patch.nodes[shader].inputs][3:] == ["color"]
    any_rig.run()
    assert near(any_rig.pixels(shader)[5, 5], (0, 255, 255, 255))


# ----------------------------------------------------------------------------- filters


@pytest.mark.parametrize(
    ("mode", "opacity", "expected"),
    [
        ("mix", 0.5, (128, 64, 128, 255)),
        ("add", 1.0, (255, 128, 255, 255)),
        ("multiply", 1.0, (128, 0, 0, 255)),
        ("screen", 1.0, (255, 128, 255, 255)),
    ],
)
def test_blend_modes(rig: Rig, mode: str, opacity: float, expected: tuple[int, ...]) -> None:
    a = rig.add("gpu.solid", color=(1.0, 0.0, 0.0, 1.0))
    b = rig.add("gpu.solid", color=(0.5, 0.5, 1.0, 1.0))
    blend = rig.add("gpu.blend", mode=mode, opacity=opacity)
    rig.link(a, blend, "a")
    rig.link(b, blend, "b")
    rig.link(blend, rig.add("gpu.output"))
    rig.run()
    expected = expected if mode != "mix" else (191, 64, 128, 255)
    assert near(rig.pixels(blend)[10, 10], expected, 2)


def test_blend_refuses_an_unknown_mode(rig: Rig) -> None:
    blend = rig.add("gpu.blend", mode="overlay")
    rig.link(blend, rig.add("gpu.output"))
    rig.run()
    assert rig.evaluator.status(blend) == "failed"
    assert "unknown blend mode 'overlay'" in rig.evaluator.error(blend)


def test_transform_scales_and_moves(any_rig: Rig, request: pytest.FixtureRequest) -> None:
    solid = any_rig.add("gpu.solid", color=(1, 1, 1, 1))
    transform = any_rig.add("gpu.transform", scale=0.5, translate=(0.25, 0.0))
    any_rig.link(solid, transform)
    any_rig.link(transform, any_rig.add("gpu.output"))
    any_rig.run()
    image = any_rig.pixels(transform)
    # a white square of half size, centred at x = 0.75
    assert near(image[32, 48], (255, 255, 255, 255))
    assert near(image[32, 16], (0, 0, 0, 0))
    assert near(image[4, 48], (0, 0, 0, 0))
    check_reference(request, "transform", image)


def test_blur_softens_an_edge(any_rig: Rig, request: pytest.FixtureRequest) -> None:
    half = np.zeros((64, 64, 4), np.uint8)
    half[..., 3] = 255
    half[:, 32:, :3] = 255
    source = any_rig.add("gpu.from_array", array=half)
    blur = any_rig.add("gpu.blur", radius=8.0)
    any_rig.link(source, blur)
    any_rig.link(blur, any_rig.add("gpu.output"))
    any_rig.run()
    row = any_rig.pixels(blur)[32, :, 0]
    assert row[0] == 0 and row[-1] == 255
    assert 20 < row[30] < 128 < row[33] < 235
    assert np.all(np.diff(row) >= 0)
    check_reference(request, "blur", any_rig.pixels(blur))


# ----------------------------------------------------------------------------- CPU <-> GPU


def test_from_array_and_readback_round_trip(any_rig: Rig) -> None:
    rng = np.random.default_rng(1)
    pixels = rng.integers(0, 256, (20, 30, 4), dtype=np.uint8)
    upload = any_rig.add("gpu.from_array", array=pixels)
    readback = any_rig.add("gpu.readback")
    any_rig.link(upload, readback)
    result = any_rig.add("output.value")
    any_rig.link(readback, result)
    any_rig.run()
    assert np.array_equal(any_rig.evaluator.output(result), pixels)
    assert any_rig.gl.last_frame_readbacks == 1
    any_rig.run()  # constant input: the readback node is cached and does not read again
    assert any_rig.gl.last_frame_readbacks == 0


def run_until_settled(rig: Rig, node_id: str) -> None:
    """Run frames until the node is no longer deferred (the loader thread needs the GIL)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rig.run()
        if rig.evaluator.status(node_id) != "deferred":
            return
        time.sleep(0.002)


def test_image_loads_in_the_background(
    any_rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    picture = np.zeros((16, 8, 4), np.uint8)
    picture[:8] = (255, 0, 0, 255)
    picture[8:] = (0, 0, 255, 255)
    path = tmp_path / "picture.png"
    Image.fromarray(picture, "RGBA").save(path)
    release = threading.Event()
    real_load = gpu_library._load_image

    def slow_load(name: str) -> np.ndarray:
        release.wait(60)
        return real_load(name)

    monkeypatch.setattr(gpu_library, "_load_image", slow_load)
    any_rig.patch.folder = tmp_path
    image = any_rig.add("gpu.image", path="picture.png")
    any_rig.link(image, any_rig.add("gpu.output"))
    any_rig.run(3)
    assert any_rig.evaluator.status(image) == "deferred"
    assert any_rig.evaluator.output(image) is None
    release.set()
    run_until_settled(any_rig, image)
    assert any_rig.evaluator.status(image) == "ok"
    assert np.array_equal(any_rig.pixels(image), picture)
    any_rig.run()
    assert any_rig.evaluator.status(image) == "cached"


def test_image_reports_a_missing_file(rig: Rig, tmp_path: Path) -> None:
    rig.patch.folder = tmp_path
    image = rig.add("gpu.image", path="missing.png")
    rig.link(image, rig.add("gpu.output"))
    run_until_settled(rig, image)
    assert rig.evaluator.status(image) == "failed"
    assert "missing.png" in rig.evaluator.error(image)


def test_preview_is_small(rig: Rig) -> None:
    rig.patch.update_settings(resolution=[640, 360])
    solid = rig.add("gpu.solid", color=(0, 0, 1, 1))
    preview = rig.add("gpu.preview", max_side=64)
    rig.link(solid, preview)
    rig.run()
    target = rig.evaluator.output(preview)
    assert target.size == (64, 36)
    assert near(rig.pixels(preview)[10, 10], (0, 0, 255, 255))


# ----------------------------------------------------------------------------- behaviour


def test_resolution_setting_and_override(rig: Rig) -> None:
    solid = rig.add("gpu.solid")
    small = rig.add("gpu.solid", resolution=(16, 8))
    blur = rig.add("gpu.blur")
    rig.link(small, blur)
    for node in (solid, blur):
        rig.link(node, rig.add("gpu.output"))
    rig.run()
    assert rig.evaluator.output(solid).size == (64, 64)
    assert rig.evaluator.output(small).size == (16, 8)
    assert rig.evaluator.output(blur).size == (16, 8)  # filters follow their input
    rig.patch.update_settings(resolution=[32, 48])
    rig.run()  # a constant node is rendered again at the new size
    assert rig.evaluator.output(solid).size == (32, 48)
    assert rig.evaluator.output(small).size == (16, 8)


def test_constant_gradient_renders_once(rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    renders: list[str] = []
    real_render = rig.gl.render

    def counting_render(target: Any, source: str, *args: Any, **kwargs: Any) -> None:
        renders.append(source.split("\n", 3)[1])
        real_render(target, source, *args, **kwargs)

    monkeypatch.setattr(rig.gl, "render", counting_render)
    gradient = rig.add("gpu.gradient")
    noise = rig.add("gpu.noise")
    rig.link(rig.add("time.seconds"), noise, "time")
    blend = rig.add("gpu.blend", mode="add")
    rig.link(gradient, blend, "a")
    rig.link(noise, blend, "b")
    rig.link(blend, rig.add("gpu.output"))
    rig.run(10)
    assert rig.evaluator.node_class(gradient) == "CONST"
    assert rig.evaluator.node_class(noise) == "HOT"
    assert sum("Linear gradient" in line for line in renders) == 1
    assert sum("value noise" in line for line in renders) == 10
    frames = [rig.pixels(blend)]
    rig.run()
    assert np.abs(rig.pixels(blend) - frames[0]).max() > 0  # the noise moved


def test_dynamic_uniform_pins_follow_the_source(rig: Rig) -> None:
    first = (
        "#version 330\nin vec2 uv; out vec4 fragColor;\nuniform float a;\nuniform vec4 b;\n"
        "uniform sampler2D img;\nvoid main() { fragColor = texture(img, uv) + b * a; }\n"
    )
    shader = rig.add("gpu.shader", source=first)
    rig.link(rig.add("gpu.solid"), shader, "img")
    value = rig.add("input.float", value=0.5)
    rig.link(value, shader, "a")
    names = [pin.name for pin in rig.patch.nodes[shader].inputs]
    assert names == ["source", "file", "resolution", "a", "b", "img"]
    second = first.replace("uniform float a;\n", "uniform vec2 offset;\n").replace("* a", "")
    rig.patch.set_value(shader, "source", second)
    names = [pin.name for pin in rig.patch.nodes[shader].inputs]
    assert names == ["source", "file", "resolution", "offset", "b", "img"]
    assert rig.patch.link_into(shader, "a") is None  # the link to the vanished pin is gone
    assert rig.patch.link_into(shader, "img") is not None
    assert "a" not in rig.patch.nodes[shader].values
    rig.patch.set_value(shader, "offset", (1.0, 2.0))
    rig.link(shader, rig.add("gpu.output"))
    rig.run()
    assert rig.evaluator.status(shader) == "ok"


def test_broken_shader_keeps_the_last_good_image(any_rig: Rig) -> None:
    good = "#version 330\nin vec2 uv; out vec4 fragColor;\nuniform vec4 color;\n" \
        "void main() { fragColor = color; }\n"  # fmt: skip
    shader = any_rig.add("gpu.shader", source=good, color=(0, 1, 0, 1))
    any_rig.link(shader, any_rig.add("gpu.output"))
    any_rig.run()
    assert near(any_rig.pixels(shader)[0, 0], (0, 255, 0, 255))
    broken = good.replace("fragColor = color;", "fragColor = color }")
    any_rig.patch.set_value(shader, "source", broken)
    any_rig.patch.set_value(shader, "color", (1, 0, 0, 1))
    any_rig.run(2)
    assert any_rig.evaluator.status(shader) == "failed"
    error = any_rig.evaluator.error(shader)
    assert error.startswith("ShaderError: line 4"), error
    # the last good program keeps rendering, with the current uniform values
    assert near(any_rig.pixels(shader)[0, 0], (255, 0, 0, 255))
    any_rig.patch.set_value(shader, "source", good)
    any_rig.run()
    assert any_rig.evaluator.status(shader) == "ok" and any_rig.evaluator.error(shader) is None


def test_broken_shader_without_a_good_one_fails(rig: Rig) -> None:
    shader = rig.add("gpu.shader", source="#version 330\nvoid main() { nope; }\n")
    rig.link(shader, rig.add("gpu.output"))
    rig.run()
    assert rig.evaluator.status(shader) == "failed"
    assert "line 2" in rig.evaluator.error(shader)
    assert rig.evaluator.output(shader) is None


def test_feedback_accumulates(any_rig: Rig) -> None:
    feedback = any_rig.add("gpu.feedback")
    step = any_rig.add("gpu.solid", color=(0.1, 0.0, 0.0, 0.0))
    blend = any_rig.add("gpu.blend", mode="add")
    any_rig.link(feedback, blend, "a")
    any_rig.link(step, blend, "b")
    any_rig.link(blend, any_rig.add("gpu.output"))
    any_rig.link(blend, feedback)
    reds = []
    for _ in range(6):
        any_rig.run()
        reds.append(int(any_rig.pixels(blend)[32, 32, 0]))
    assert near(reds, [26 * (n + 1) for n in range(6)], 3), reds
    # the feedback output is the previous frame of the blend
    assert near(any_rig.pixels(feedback)[32, 32, 0], reds[-2], 1)


def test_feedback_of_a_source_that_runs_first_is_still_last_frame(any_rig: Rig) -> None:
    """No loop: the source redraws its texture every frame before the feedback node runs; the
    feedback node must still show what the source drew on the previous frame."""
    clock = any_rig.add("time.frame")
    scale = any_rig.add("math.mul", b=0.1)
    any_rig.patch.connect(clock, "out", scale, "a")
    noise = any_rig.add("gpu.noise")
    any_rig.patch.connect(scale, "out", noise, "time")
    feedback = any_rig.add("gpu.feedback")
    any_rig.link(noise, any_rig.add("gpu.output"))
    any_rig.link(feedback, any_rig.add("gpu.preview"))
    any_rig.link(noise, feedback)
    previous = None
    for _ in range(4):
        any_rig.run()
        current = any_rig.pixels(noise)
        if previous is not None:
            assert not np.array_equal(current, previous)  # the noise moves
            assert np.array_equal(any_rig.pixels(feedback), previous)
        previous = current


def test_pool_stays_flat_over_a_thousand_edits(rig: Rig) -> None:
    gradient = rig.add("gpu.gradient")
    blend = rig.add("gpu.blend", mode="screen")
    rig.link(gradient, blend, "a")
    out = rig.add("gpu.output")
    rig.link(blend, out)
    rig.run(2)
    baseline = None
    for cycle in range(1000):
        rig.patch.set_value(gradient, "angle", cycle * 0.01)
        rig.patch.set_value(gradient, "resolution", (32, 32) if cycle % 2 else (0, 0))
        solid = rig.add("gpu.solid", color=(cycle % 7 / 7, 0.0, 0.0, 1.0))
        rig.link(solid, blend, "b")
        rig.run()
        rig.patch.remove_node(solid)
        rig.run()
        stats = rig.gl.pool_stats()
        if cycle == 10:
            baseline = stats["allocated"]
    assert baseline is not None
    assert rig.gl.pool_stats()["allocated"] <= baseline
    assert rig.gl.pool_stats()["in_use"] == 2  # the gradient's and the blend's textures


def test_removing_a_node_returns_its_texture(rig: Rig) -> None:
    solid = rig.add("gpu.solid")
    out = rig.add("gpu.output")
    rig.link(solid, out)
    rig.run()
    in_use = rig.gl.pool_stats()["in_use"]
    rig.patch.remove_node(solid)
    assert rig.gl.pool_stats()["in_use"] == in_use - 1
    rig.run()
    assert rig.evaluator.output(out) is None


def test_without_gpu_nodes_fail_clearly(make_evaluator) -> None:
    patch = Patch()
    solid = patch.add_node("gpu.solid")
    out = patch.add_node("gpu.output")
    patch.connect(solid, "out", out, "in")
    evaluator = make_evaluator(patch)
    evaluator.run_frame(0.0, 0)
    assert evaluator.status(solid) == "failed"
    assert evaluator.error(solid) == f"RuntimeError: {NO_GPU_MESSAGE}"
    assert evaluator.output(out) is None


def test_evaluators_render_the_same(gl: GLService) -> None:
    images = []
    for kind in EVALUATOR_KINDS:
        rig = Rig(gl, kind)
        noise = rig.add("gpu.noise", scale=3.0)
        rig.link(rig.add("time.seconds"), noise, "time")
        circle = rig.add("gpu.circle", radius=0.3, softness=0.1, color=(1, 0.5, 0, 1))
        blend = rig.add("gpu.blend", mode="screen", opacity=0.7)
        rig.link(noise, blend, "a")
        rig.link(circle, blend, "b")
        blur = rig.add("gpu.blur", radius=3.0)
        rig.link(blend, blur)
        rig.link(blur, rig.add("gpu.output"))
        rig.run(5)
        images.append(rig.pixels(blur))
        rig.close()
    assert np.array_equal(images[0], images[1]) and np.array_equal(images[0], images[2])


def test_angles_are_radians(rig: Rig) -> None:
    gradient = rig.add("gpu.gradient", angle=math.pi / 2)
    rig.link(gradient, rig.add("gpu.output"))
    rig.run()
    image = rig.pixels(gradient)
    assert image[0, 32, 0] > 245 and image[-1, 32, 0] < 10  # white on top, black at the bottom


def test_a_uniform_the_compiler_removed_is_not_an_error(rig: Rig) -> None:
    source = (
        "#version 330\nin vec2 uv; out vec4 fragColor;\nuniform float unused = 3.0;\n"
        "uniform vec4 color;\nvoid main() { fragColor = color; }\n"
    )
    shader = rig.add("gpu.shader", source=source, color=(0, 0, 1, 1), unused=7.0)
    rig.link(rig.add("input.float", value=0.25), shader, "unused")
    rig.link(shader, rig.add("gpu.output"))
    rig.run()
    assert rig.evaluator.status(shader) == "ok"
    assert near(rig.pixels(shader)[0, 0], (0, 0, 255, 255))


def test_a_new_resolution_reaches_a_running_flat_program(gl: GLService) -> None:
    patch = Patch()
    patch.update_settings(resolution=[64, 64])
    gradient = patch.add_node("gpu.gradient")
    patch.connect(gradient, "out", patch.add_node("gpu.output"), "in")
    dual = DualEvaluator(patch, gpu=gl, debounce=0.0, background=False)
    for frame in range(3):
        dual.run_frame(frame / 60, frame)
    assert dual.mode == "flat"
    patch.update_settings(resolution=[40, 20])
    dual.run_frame(0.1, 3)
    assert dual.mode == "flat" and dual.output(gradient).size == (40, 20)
    dual.close()
    dual.ctx.release_all()


# ----------------------------------------------------------------------------- failures and files


def traceback_depth(error: BaseException) -> int:
    depth, tb = 0, error.__traceback__
    while tb is not None:
        depth, tb = depth + 1, tb.tb_next
    return depth


def test_a_broken_shader_on_a_hot_input_raises_fresh_errors(
    any_rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One cached exception raised every frame grew its traceback without bound, keeping every
    # frame it went through (and their programs and targets) alive.
    raised: list[BaseException] = []
    real = any_rig.gl.shader_error

    def recording(source: str) -> Any:
        error = real(source)
        if error is not None:
            raised.append(error)
        return error

    monkeypatch.setattr(any_rig.gl, "shader_error", recording)
    broken = "#version 330\nout vec4 fragColor;\nuniform float t;\nvoid main() { nope(t); }\n"
    shader = any_rig.add("gpu.shader", source=broken)
    any_rig.link(any_rig.add("time.seconds"), shader, "t")
    any_rig.link(shader, any_rig.add("gpu.output"))
    any_rig.run(200)
    assert any_rig.evaluator.status(shader) == "failed"
    assert "line 4" in any_rig.evaluator.error(shader)
    assert len(raised) >= 200
    depths = {traceback_depth(error) for error in raised}
    assert max(depths) <= 20, sorted(depths)[-3:]


def _counting_reads(monkeypatch: pytest.MonkeyPatch, watched: Path) -> list[str]:
    """The names of the threads that read `watched`, one per read."""
    reads: list[str] = []
    real = gpu_library.read_patch_file

    def read_patch_file(path: Path, kind: Any) -> bytes:
        if path.name == watched.name:
            reads.append(threading.current_thread().name)
        return real(path, kind)

    monkeypatch.setattr(gpu_library, "read_patch_file", read_patch_file)
    return reads


TINT = "#version 330\nout vec4 fragColor;\nuniform vec4 tint;\nuniform float t;\n" \
    "void main() { fragColor = tint * (1.0 + 0.0 * t); }\n"  # fmt: skip


def test_a_hot_shader_file_is_read_once_until_it_changes(
    rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from nodes.library.gpu import glsl as _glsl

    path = tmp_path / "tint.glsl"
    text = f"{TINT}// {tmp_path}\n"  # a text no test parsed before
    path.write_text(text)
    reads = _counting_reads(monkeypatch, path)
    scans: list[str] = []
    real_comments = _glsl._without_comments

    def counting_comments(text: str) -> str:
        scans.append(text)
        return real_comments(text)

    monkeypatch.setattr(_glsl, "_without_comments", counting_comments)
    rig.patch.folder = tmp_path
    shader = rig.add("gpu.shader", source="", file="tint.glsl", tint=(0, 1, 0, 1))
    rig.link(rig.add("time.seconds"), shader, "t")
    rig.link(shader, rig.add("gpu.output"))
    reads.clear()
    scans.clear()
    rig.run(10)
    assert rig.evaluator.node_class(shader) == "HOT"
    assert near(rig.pixels(shader)[0, 0], (0, 255, 0, 255))
    assert reads == []  # read once already, when the patch derived the node's pins
    assert len(scans) <= 1  # the uniforms of a text are parsed once
    path.write_text(text.replace("tint * ", "tint.bgra * "))
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    deadline = time.monotonic() + 30
    while not reads or rig.evaluator.status(shader) == "deferred":  # read on the worker pool
        assert time.monotonic() < deadline, "the new version was never read"
        rig.run()
        time.sleep(0.002)
    rig.run(3)
    assert len(reads) == 1  # read again once it changed, and only once
    assert reads[0].startswith("patchbay-worker")  # not on the frame path
    assert near(rig.pixels(shader)[0, 0], (0, 255, 0, 255))  # green stays green, alpha moved
    rig.patch.set_value(shader, "tint", (1, 0, 0, 1))
    rig.run()
    assert near(rig.pixels(shader)[0, 0], (0, 0, 255, 255))


def _shader_project(folder: Path, with_file: bool = True) -> Path:
    """A patch in `folder` whose shader is `shaders/tint.glsl`, with a uniform value, a link into
    a uniform and a linked output; returns the patch file."""
    from nodes import save_patch

    (folder / "shaders").mkdir(parents=True)
    (folder / "shaders" / "tint.glsl").write_text(TINT)
    patch = Patch()
    patch.folder = folder
    patch.update_settings(resolution=[64, 64])
    patch.add_node("gpu.shader", {"source": "", "file": "shaders/tint.glsl",
                                  "tint": (0.0, 0.0, 1.0, 1.0)}, node_id="shader1")  # fmt: skip
    patch.add_node("input.float", {"value": 0.5}, node_id="speed")
    patch.connect("speed", "out", "shader1", "t")
    patch.connect("shader1", "out", patch.add_node("gpu.output", node_id="out"), "in")
    path = folder / "show.patchbay"
    save_patch(patch, path)
    if not with_file:
        (folder / "shaders" / "tint.glsl").unlink()
    return path


def test_a_shader_file_is_found_next_to_the_patch_from_any_directory(
    gl: GLService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nodes import load_patch

    path = _shader_project(tmp_path / "project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    patch = load_patch(path)
    assert patch.folder == tmp_path / "project"
    pins = {pin.name: pin.type for pin in patch.nodes["shader1"].inputs}
    assert pins["tint"] == "color" and pins["t"] == "float"
    evaluator = FlatEvaluator(patch, gpu=gl)
    try:
        with gl.frame():
            evaluator.run_frame(0.0, 0)
        assert evaluator.status("shader1") == "ok", evaluator.error("shader1")
        assert near(gl.readback(evaluator.output("shader1"))[0, 0], (0, 0, 255, 255))
    finally:
        evaluator.close()
        evaluator.ctx.release_all()


def test_a_patch_whose_shader_file_is_missing_still_loads(gl: GLService, tmp_path: Path) -> None:
    import json

    from nodes import load_patch, save_patch

    path = _shader_project(tmp_path / "project", with_file=False)
    before = json.loads(path.read_text())
    patch = load_patch(path)  # the saved uniform values and links are kept
    assert patch.value("shader1", "tint") == [0.0, 0.0, 1.0, 1.0]
    assert patch.link_into("shader1", "t") is not None
    evaluator = FlatEvaluator(patch, gpu=gl)
    try:
        with gl.frame():
            evaluator.run_frame(0.0, 0)
        assert evaluator.status("shader1") == "failed"
        error = evaluator.error("shader1")
        assert error == "FileNotFoundError: shader file 'shaders/tint.glsl' not found", error
    finally:
        evaluator.close()
        evaluator.ctx.release_all()
    save_patch(patch, path)
    after = json.loads(path.read_text())
    assert after["nodes"] == before["nodes"] and after["links"] == before["links"]
    # The file comes back: the pins are typed again, and keep their values and links.
    (tmp_path / "project" / "shaders" / "tint.glsl").write_text(TINT)
    patch.set_value("shader1", "file", "shaders/tint.glsl")  # set again: the pins follow
    reloaded = load_patch(path)
    for current in (reloaded, patch):
        pins = {pin.name: pin.type for pin in current.nodes["shader1"].inputs}
        assert pins["tint"] == "color" and pins["t"] == "float"
        assert current.link_into("shader1", "t") is not None
    assert reloaded.value("shader1", "tint") == (0.0, 0.0, 1.0, 1.0)


def test_an_image_that_does_not_decode_is_not_loaded_again(
    gl: GLService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node that runs every frame (its path fed by a HOT node, say) with a broken file: it
    fails with the decoding error every frame, without decoding the file again."""
    import os
    from types import SimpleNamespace

    from nodes import Deferred

    path = tmp_path / "broken.png"
    path.write_bytes(b"not a png at all")
    loads: list[str] = []
    real_load = gpu_library._load_image

    def counting_load(name: str) -> np.ndarray:
        loads.append(name)
        return real_load(name)

    monkeypatch.setattr(gpu_library, "_load_image", counting_load)
    workers = concurrent.futures.ThreadPoolExecutor(1)
    ctx = SimpleNamespace(gpu=gl, folder=tmp_path, submit=workers.submit, ready=lambda w: w.done())
    state = gpu_library.ImageState()

    def run(name: str) -> Any:
        """One frame of the node, after its background load is done."""
        for _ in range(2):
            try:
                return gpu_library.gpu_image(ctx, state, name)
            except Deferred:
                assert state.pending is not None
                concurrent.futures.wait([state.pending], timeout=30)
        raise AssertionError("still loading")

    errors = []
    for _ in range(20):
        with pytest.raises(OSError) as info:
            run("broken.png")  # relative to the patch's folder
        errors.append(str(info.value))
    assert len(loads) == 1
    assert len(set(errors)) == 1 and "broken.png" in errors[0] and "\n" not in errors[0]
    # The file is fixed (a new modification time): it is loaded again.
    picture = np.full((4, 4, 4), 255, np.uint8)
    Image.fromarray(picture, "RGBA").save(path, format="PNG")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    target = run("broken.png")
    assert len(loads) == 2 and target.size == (4, 4)
    assert np.array_equal(gl.readback(target), picture)
    state.close()
    workers.shutdown()
