"""GPU effect and instancing nodes, pixel by pixel against numpy references.

Each test uploads a small texture (16x16 unless said otherwise) through `gpu.from_array`, runs the
node through a real evaluator on the shared EGL context and compares the read-back pixels with the
same formula computed in numpy on the same input, within 2/255. Geometry effects sample between
texels, so their references sample the input as GL does (bilinear, clamped to the edge, texel
centres at half-integers) and their inputs are smooth gradients.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from app.engine.player import play_headless
from evaluators.services.gl import GLService
from nodes import Patch, load_patch
from nodes.library.gpu import effects as gpu_effects
from nodes.library.gpu import instancing as gpu_instancing
from nodes.library.gpu.effects import COMPOSITE_MODES
from nodes.library.gpu.glsl import builtin_shader
from nodes.limits import active_limits, set_active_limits
from nodes.spec import LIBRARY, Determinism
from tests.evaluator_kinds import evaluator_for_tests

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]

SIDE = 16
TOLERANCE = 2
LUMA = np.array([0.2126, 0.7152, 0.0722])


class Rig:
    """A patch at 64x64 run by the flat evaluator on the shared GL service."""

    def __init__(self, gl: GLService) -> None:
        self.gl = gl
        self.patch = Patch()
        self.patch.update_settings(resolution=[64, 64])
        self.evaluator: Any = None
        self.frame = 0

    def add(self, type_id: str, **values: Any) -> str:
        return self.patch.add_node(type_id, values)

    def texture(self, image: np.ndarray) -> str:
        """A gpu.from_array node holding `image` (HxWx4 uint8, rows top to bottom)."""
        return self.add("gpu.from_array", array=image)

    def sink(self, node_id: str) -> str:
        """Link `node_id` to a new gpu.output, so that the evaluator runs it; returns it."""
        self.link(node_id, self.add("gpu.output"))
        return node_id

    def link(self, src: str, dst: str, pin: str = "in") -> None:
        self.patch.connect(src, "out", dst, pin)

    def run(self, frames: int = 1) -> None:
        if self.evaluator is None:
            self.evaluator = evaluator_for_tests("flat", self.patch, gpu=self.gl)
        for _ in range(frames):
            with self.gl.frame():
                self.evaluator.run_frame(self.frame / 60.0, self.frame)
            self.frame += 1

    def pixels(self, node_id: str) -> np.ndarray:
        target = self.evaluator.output(node_id)
        assert target is not None, f"{node_id} has no texture ({self.evaluator.error(node_id)})"
        return self.gl.readback(target).astype(int)

    def effect(self, type_id: str, image: np.ndarray, **values: Any) -> np.ndarray:
        """Run `type_id` on `image` (linked to its `in`) and return the result's pixels."""
        effect = self.sink(self.add(type_id, **values))
        self.link(self.texture(image), effect)
        self.run()
        return self.pixels(effect)

    def close(self) -> None:
        if self.evaluator is not None:
            self.evaluator.close()
            self.evaluator.ctx.release_all()


@pytest.fixture
def rig(gl: GLService) -> Iterator[Rig]:
    made = Rig(gl)
    yield made
    made.close()


# ----------------------------------------------------------------------------- inputs and helpers


def random_image(seed: int, side: int = SIDE, opaque: bool = False) -> np.ndarray:
    image = np.random.default_rng(seed).integers(0, 256, (side, side, 4), dtype=np.uint8)
    if opaque:
        image[..., 3] = 255
    return image


def gradient_image(side: int = SIDE) -> np.ndarray:
    """Red rises to the right, green upwards, blue along the diagonal; opaque."""
    ramp = (np.arange(side) * 255 // (side - 1)).astype(np.uint8)
    image = np.empty((side, side, 4), np.uint8)
    image[..., 0] = ramp[np.newaxis, :]
    image[..., 1] = ramp[::-1, np.newaxis]
    image[..., 2] = ((image[..., 0].astype(int) + image[..., 1]) // 2).astype(np.uint8)
    image[..., 3] = 255
    return image


def unit(image: np.ndarray) -> np.ndarray:
    return image.astype(np.float64) / 255.0


def to_bytes(values: np.ndarray) -> np.ndarray:
    return np.round(np.clip(values, 0.0, 1.0) * 255.0).astype(int)


def pixel_uv(width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    """GL uv of each output pixel centre, as HxW arrays in image order (row 0 at the top)."""
    u = (np.arange(width) + 0.5) / width
    v = 1.0 - (np.arange(height) + 0.5) / height
    return np.meshgrid(u, v)


def sample(image: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """`image` (rows top to bottom, values 0..1) read at uv as GL does: bilinear, clamp to edge."""
    height, width = image.shape[:2]
    gl_rows = image[::-1]  # GL row 0 is the bottom one
    x = u * width - 0.5
    y = v * height - 0.5
    x0, y0 = np.floor(x).astype(int), np.floor(y).astype(int)
    fx, fy = (x - x0)[..., np.newaxis], (y - y0)[..., np.newaxis]

    def at(xi: np.ndarray, yi: np.ndarray) -> np.ndarray:
        return gl_rows[np.clip(yi, 0, height - 1), np.clip(xi, 0, width - 1)]

    bottom = at(x0, y0) * (1 - fx) + at(x0 + 1, y0) * fx
    top = at(x0, y0 + 1) * (1 - fx) + at(x0 + 1, y0 + 1) * fx
    return bottom * (1 - fy) + top * fy


def assert_close(actual: np.ndarray, expected: np.ndarray, tolerance: int = TOLERANCE) -> None:
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    worst = int(np.abs(actual - expected).max())
    assert worst <= tolerance, f"differs from the numpy reference by up to {worst}/255"


def smoothstep(low: float, high: float, x: np.ndarray) -> np.ndarray:
    t = np.clip((x - low) / (high - low), 0.0, 1.0)
    return t * t * (3 - 2 * t)


# ----------------------------------------------------------------------------- specs

NEW_MODULES = (gpu_effects.__name__, gpu_instancing.__name__)
NEW_NODES = [spec for spec in LIBRARY.values() if spec.compute.__module__ in NEW_MODULES]


def test_every_new_node_and_pin_has_one_sentence_and_is_deterministic() -> None:
    assert len(NEW_NODES) == 14
    for spec in NEW_NODES:
        assert spec.summary.endswith(".") and spec.category == spec.id.split(".")[0]
        pins = [pin.name for pin in spec.inputs] + [out.name for out in spec.outputs]
        assert sorted(spec.pin_docs) == sorted(pins), spec.id
        assert all(text.endswith(".") for text in spec.pin_docs.values()), spec.id
        assert spec.determinism is Determinism.DETERMINISTIC, spec.id


# ----------------------------------------------------------------------------- colour


def test_levels(rig: Rig) -> None:
    image = random_image(1)
    params = {"in_low": 0.1, "in_high": 0.8, "gamma": 1.6, "out_low": 0.05, "out_high": 0.9}
    result = rig.effect("gpu.levels", image, **params)
    x = np.clip((unit(image[..., :3]) - 0.1) / 0.7, 0.0, 1.0) ** (1 / 1.6)
    expected = np.concatenate([to_bytes(0.05 + 0.85 * x), image[..., 3:].astype(int)], axis=2)
    assert_close(result, expected)


def rgb_to_hsv(rgb: np.ndarray) -> np.ndarray:
    high, low = rgb.max(axis=-1), rgb.min(axis=-1)
    delta = high - low
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    safe = np.where(delta > 1e-6, delta, 1.0)
    hue = np.where(high == r, np.mod((g - b) / safe, 6.0),
                   np.where(high == g, (b - r) / safe + 2.0, (r - g) / safe + 4.0))  # fmt: skip
    hue = np.where(delta > 1e-6, hue, 0.0) / 6.0
    saturation = np.where(high > 1e-6, delta / np.where(high > 1e-6, high, 1.0), 0.0)
    return np.stack([hue, saturation, high], axis=-1)


def hsv_to_rgb(hsv: np.ndarray) -> np.ndarray:
    h, s, v = hsv[..., 0:1], hsv[..., 1:2], hsv[..., 2:3]
    k = np.mod(np.array([5.0, 3.0, 1.0]) + h * 6.0, 6.0)
    return v - v * s * np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)


def test_hsv(rig: Rig) -> None:
    image = random_image(2)
    result = rig.effect("gpu.hsv", image, hue=0.3, saturation=0.6, value=1.2)
    hsv = rgb_to_hsv(unit(image[..., :3]))
    hsv[..., 0] = np.mod(hsv[..., 0] + 0.3, 1.0)
    hsv[..., 1] = np.clip(hsv[..., 1] * 0.6, 0, 1)
    hsv[..., 2] = np.clip(hsv[..., 2] * 1.2, 0, 1)
    expected = np.concatenate([to_bytes(hsv_to_rgb(hsv)), image[..., 3:].astype(int)], axis=2)
    assert_close(result, expected)


def test_hsv_neutral_settings_keep_the_image(rig: Rig) -> None:
    image = random_image(3)
    assert_close(rig.effect("gpu.hsv", image), image.astype(int))


def test_invert(rig: Rig) -> None:
    image = random_image(4)
    result = rig.effect("gpu.invert", image, amount=0.75)
    rgb = unit(image[..., :3])
    expected = np.concatenate([to_bytes(rgb + 0.75 * (1 - 2 * rgb)), image[..., 3:]], axis=2)
    assert_close(result, expected)


@pytest.mark.parametrize("softness", [0.0, 0.2])
def test_threshold(rig: Rig, softness: float) -> None:
    image = random_image(5, opaque=True)
    low, high = (0.1, 0.2, 0.3, 1.0), (1.0, 0.9, 0.0, 0.5)
    result = rig.effect("gpu.threshold", image, level=0.5, softness=softness, low=low, high=high)
    luma = unit(image[..., :3]) @ LUMA
    if softness:
        t = smoothstep(0.5 - softness / 2, 0.5 + softness / 2, luma)
    else:
        t = (luma >= 0.5).astype(float)
    expected = to_bytes(np.array(low) + t[..., np.newaxis] * (np.array(high) - np.array(low)))
    decided = np.abs(luma - 0.5) > 0.004  # pixels right at the level may round either way
    assert decided.sum() > 200
    assert_close(result[decided], expected[decided])


def test_chroma_key(rig: Rig) -> None:
    image = random_image(6)
    image[2:6, 2:6] = (0, 255, 0, 255)  # the key itself
    image[8:10, 8:10] = (40, 230, 30, 200)  # near it
    result = rig.effect("gpu.chroma_key", image, key=(0.0, 1.0, 0.0, 1.0), tolerance=0.2,
                        softness=0.3)  # fmt: skip
    distance = np.linalg.norm(unit(image[..., :3]) - np.array([0.0, 1.0, 0.0]), axis=-1)
    alpha = unit(image[..., 3]) * smoothstep(0.2, 0.5, distance)
    expected = np.concatenate([image[..., :3].astype(int), to_bytes(alpha)[..., None]], axis=2)
    assert_close(result, expected)
    assert np.all(result[2:6, 2:6, 3] == 0)
    assert np.all(result[8:10, 8:10, :3] == image[8:10, 8:10, :3])  # colours are kept


# ----------------------------------------------------------------------------- geometry


@pytest.mark.parametrize("mode", ["horizontal", "vertical", "both"])
def test_mirror(rig: Rig, mode: str) -> None:
    image = random_image(7)
    result = rig.effect("gpu.mirror", image, mode=mode)
    expected = image.astype(int).copy()
    half = SIDE // 2
    if mode in ("horizontal", "both"):
        expected[:, half:] = expected[:, :half][:, ::-1]
    if mode in ("vertical", "both"):  # the bottom half (image rows at the end) goes up
        expected[:half] = expected[half:][::-1]
    assert_close(result, expected)


def test_kaleidoscope(rig: Rig) -> None:
    image = gradient_image()
    segments, rotate, center = 5.0, 0.4, (0.45, 0.55)
    result = rig.effect("gpu.kaleidoscope", image, segments=segments, rotate=rotate,
                        center=center)  # fmt: skip
    u, v = pixel_uv(SIDE, SIDE)
    x, y = u - 0.5, v - 0.5
    radius = np.hypot(x, y)
    wedge = np.pi / segments
    angle = np.mod(np.arctan2(y, x), 2 * wedge)
    angle = np.where(angle > wedge, 2 * wedge - angle, angle) + rotate
    expected = sample(unit(image), center[0] + radius * np.cos(angle),
                      center[1] + radius * np.sin(angle))  # fmt: skip
    assert_close(result, to_bytes(expected))


def test_kaleidoscope_is_symmetric_across_the_wedges(rig: Rig) -> None:
    image = random_image(8, side=32, opaque=True)
    result = rig.effect("gpu.kaleidoscope", image, segments=2.0)
    # four mirrored wedges (quadrant boundaries) about the centre: left-right symmetric
    assert_close(result, result[:, ::-1], 3)


def test_displace(rig: Rig) -> None:
    image = gradient_image()
    displacement = random_image(9, opaque=True)
    effect = rig.sink(rig.add("gpu.displace", amount=0.1))
    rig.link(rig.texture(image), effect)
    rig.link(rig.texture(displacement), effect, "map")
    rig.run()
    u, v = pixel_uv(SIDE, SIDE)
    offset = (unit(displacement[..., :2]) - 0.5) * 2 * 0.1
    expected = sample(unit(image), u + offset[..., 0], v + offset[..., 1])
    assert_close(rig.pixels(effect), to_bytes(expected))


def test_displace_without_a_map_passes_the_input(rig: Rig) -> None:
    image = random_image(10)
    assert_close(rig.effect("gpu.displace", image, amount=0.3), image.astype(int))


def test_tile(rig: Rig) -> None:
    image = random_image(11)
    result = rig.effect("gpu.tile", image, repeat=(2.0, 2.0), offset=(0.5, 0.0),
                        resolution=(32, 32))  # fmt: skip
    shifted = np.roll(image.astype(int), SIDE // 2, axis=1)  # half a tile to the right
    assert_close(result, np.tile(shifted, (2, 2, 1)))


def test_tile_between_texels(rig: Rig) -> None:
    image = gradient_image()
    result = rig.effect("gpu.tile", image, repeat=(3.0, 2.0))
    u, v = pixel_uv(SIDE, SIDE)
    expected = sample(unit(image), np.mod(u * 3, 1.0), np.mod(v * 2, 1.0))
    assert_close(result, to_bytes(expected))


def test_crop_keeps_the_rectangle_at_its_own_size(rig: Rig) -> None:
    image = random_image(12)
    result = rig.effect("gpu.crop", image, low=(0.25, 0.5), high=(0.75, 1.0))
    assert result.shape == (8, 8, 4)
    assert_close(result, image[0:8, 4:12].astype(int))  # the top half, middle columns


def test_crop_stretches_to_a_given_resolution(rig: Rig) -> None:
    image = gradient_image()
    result = rig.effect("gpu.crop", image, low=(0.1, 0.2), high=(0.6, 0.9), resolution=(20, 12))
    u, v = pixel_uv(20, 12)
    expected = sample(unit(image), 0.1 + 0.5 * u, 0.2 + 0.7 * v)
    assert_close(result, to_bytes(expected))


# ----------------------------------------------------------------------------- edges


def test_edges_sobel(rig: Rig) -> None:
    blocks = (np.indices((SIDE, SIDE)) // 4).sum(axis=0) % 2  # a 4-pixel checker
    image = np.zeros((SIDE, SIDE, 4), np.uint8)
    image[..., 0] = np.where(blocks, 220, 30)
    image[..., 1] = np.arange(SIDE, dtype=np.uint8)[:, None] * 8
    image[..., 2] = 60
    image[..., 3] = 255
    result = rig.effect("gpu.edges", image, strength=0.5)
    luma = np.pad(unit(image[..., :3]) @ LUMA, 1, mode="edge")

    def at(dy: int, dx: int) -> np.ndarray:  # image rows: dy = -1 is the row above
        return luma[1 + dy : 1 + dy + SIDE, 1 + dx : 1 + dx + SIDE]

    gx = (at(-1, 1) + 2 * at(0, 1) + at(1, 1)) - (at(-1, -1) + 2 * at(0, -1) + at(1, -1))
    gy = (at(-1, -1) + 2 * at(-1, 0) + at(-1, 1)) - (at(1, -1) + 2 * at(1, 0) + at(1, 1))
    magnitude = to_bytes(np.hypot(gx, gy) * 0.5)
    expected = np.stack([magnitude] * 3 + [np.full_like(magnitude, 255)], axis=-1)
    assert_close(result, expected)
    assert result[..., 0].max() > 80 and result[1, 1, 0] < 30  # edges bright, flat dark


# ----------------------------------------------------------------------------- composite


def blend_formula(mode: str, b: np.ndarray, s: np.ndarray) -> np.ndarray:
    overlay = np.where(b < 0.5, 2 * b * s, 1 - 2 * (1 - b) * (1 - s))
    hard_light = np.where(s < 0.5, 2 * b * s, 1 - 2 * (1 - b) * (1 - s))
    return {
        "normal": s,
        "add": np.minimum(b + s, 1.0),
        "multiply": b * s,
        "screen": b + s - b * s,
        "overlay": overlay,
        "difference": np.abs(b - s),
        "subtract": np.maximum(b - s, 0.0),
        "lighten": np.maximum(b, s),
        "darken": np.minimum(b, s),
        "hard_light": hard_light,
    }[mode]


def composite_reference(base: np.ndarray, layer: np.ndarray, mode: str, opacity: float,
                        base_fade: float = 0.0) -> np.ndarray:  # fmt: skip
    b = unit(base) * (1 - base_fade)
    s = unit(layer)
    coverage = (s[..., 3] * opacity)[..., np.newaxis]
    rgb = b[..., :3] + coverage * (blend_formula(mode, b[..., :3], s[..., :3]) - b[..., :3])
    alpha = coverage + b[..., 3:] * (1 - coverage)
    return to_bytes(np.concatenate([rgb, alpha], axis=-1))


def run_composite(rig: Rig, base: np.ndarray, layer: np.ndarray, **values: Any) -> np.ndarray:
    composite = rig.sink(rig.add("gpu.composite", **values))
    rig.link(rig.texture(base), composite, "base")
    rig.link(rig.texture(layer), composite, "layer")
    rig.run()
    return rig.pixels(composite)


def test_composite_modes_cover_the_usual_ones() -> None:
    usual = {"normal", "add", "multiply", "screen", "overlay", "difference", "subtract",
             "lighten", "darken"}  # fmt: skip
    assert usual <= set(COMPOSITE_MODES)


@pytest.mark.parametrize("mode", list(COMPOSITE_MODES))
def test_composite_mode_matches_its_formula(rig: Rig, mode: str) -> None:
    base, layer = random_image(20), random_image(21)
    # values right at overlay's switch (0.5 = 127.5/255) cannot occur in uint8 input
    result = run_composite(rig, base, layer, mode=mode, opacity=0.7)
    assert_close(result, composite_reference(base, layer, mode, 0.7))


def test_composite_base_fade_for_trails(rig: Rig) -> None:
    base, layer = random_image(22), random_image(23)
    result = run_composite(rig, base, layer, mode="screen", opacity=0.4, base_fade=0.25)
    assert_close(result, composite_reference(base, layer, "screen", 0.4, 0.25))


def test_composite_without_a_layer_is_the_base(rig: Rig) -> None:
    base = random_image(24)
    composite = rig.sink(rig.add("gpu.composite", mode="difference"))
    rig.link(rig.texture(base), composite, "base")
    rig.run()
    assert_close(rig.pixels(composite), base.astype(int))


@pytest.mark.parametrize("mode", ["dissolve", "x" * 500])
def test_composite_unknown_mode_fails_in_one_line(rig: Rig, mode: str) -> None:
    composite = rig.sink(rig.add("gpu.composite", mode=mode))
    rig.run()
    error = rig.evaluator.error(composite)
    assert error is not None and "\n" not in error
    assert error.startswith(f"ValueError: unknown blend mode {mode[:20]!r}"[:-1])
    assert error.endswith("(use " + ", ".join(COMPOSITE_MODES) + ")") and len(error) < 400


def test_composite_in_a_feedback_loop_fades_old_frames(rig: Rig) -> None:
    dot = random_image(25, opaque=True)
    previous = rig.add("gpu.feedback", resolution=(SIDE, SIDE))
    composite = rig.add("gpu.composite", mode="normal", opacity=0.0, base_fade=0.5)
    layer = rig.texture(dot)
    rig.link(previous, composite, "base")
    rig.link(layer, composite, "layer")
    rig.link(composite, previous)
    rig.link(composite, rig.add("gpu.output"))
    rig.run()  # frame 1: the base is transparent black, the layer is not drawn
    assert np.all(rig.pixels(composite) == 0)
    rig.patch.set_value(composite, "opacity", 1.0)
    rig.run()  # frame 2: the layer covers everything
    assert_close(rig.pixels(composite), dot.astype(int))
    rig.patch.set_value(composite, "opacity", 0.0)
    rig.run(2)  # two frames of fading by half: a quarter is left
    expected = to_bytes(unit(dot) * 0.25)
    assert_close(rig.pixels(composite), expected)


# ----------------------------------------------------------------------------- determinism


def test_effects_with_constant_inputs_render_once(rig: Rig) -> None:
    levels = rig.add("gpu.levels", gamma=2.0)
    rig.link(rig.texture(random_image(30)), levels)
    rig.link(levels, rig.add("gpu.output"))
    rig.run(2)
    assert rig.evaluator.status(levels) == "cached"
    before = rig.pixels(levels)
    rig.patch.set_value(levels, "gamma", 0.5)
    rig.run()
    assert rig.evaluator.status(levels) == "ok"
    assert not np.array_equal(rig.pixels(levels), before)


# ----------------------------------------------------------------------------- instancing

RED, GREEN, BLUE = (1.0, 0.0, 0.0, 1.0), (0.0, 1.0, 0.0, 1.0), (0.0, 0.0, 1.0, 1.0)
THREE_POSITIONS = np.array([[0.25, 0.25], [0.75, 0.5], [0.5, 0.75]])


def pixel_at(image: np.ndarray, x: float, y: float) -> np.ndarray:
    """The pixel at uv (x, y) of an image read back top row first."""
    height, width = image.shape[:2]
    return image[height - 1 - int(y * height), int(x * width)]


def draw(rig: Rig, **values: Any) -> str:
    instances = rig.add("gpu.instances", background=(0.0, 0.0, 0.0, 1.0), **values)
    rig.link(instances, rig.add("gpu.output"))
    rig.run()
    return instances


def test_instances_draw_three_circles_where_asked(rig: Rig) -> None:
    instances = draw(rig, positions=THREE_POSITIONS, sizes=np.array([0.08, 0.1, 0.12]),
                     colors=np.array([RED, GREEN, BLUE]))  # fmt: skip
    image = rig.pixels(instances)
    assert image.shape == (64, 64, 4)
    for (x, y), color in zip(THREE_POSITIONS, (RED, GREEN, BLUE), strict=True):
        assert_close(pixel_at(image, x, y), to_bytes(np.array(color)), 0)
    coverage = image[..., :3].max(axis=-1) / 255.0  # anti-aliased edges count in part
    # three discs of radius 0.08, 0.1 and 0.12 of 64 pixels, and nothing else
    expected_area = np.pi * (64**2) * (0.08**2 + 0.1**2 + 0.12**2)
    assert abs(coverage.sum() - expected_area) < 0.05 * expected_area
    for x, y in ((0.05, 0.05), (0.95, 0.95), (0.05, 0.95), (0.5, 0.45)):
        assert_close(pixel_at(image, x, y), np.array([0, 0, 0, 255]), 0)


def test_instances_squares_fill_their_corners(rig: Rig) -> None:
    positions = np.array([[0.5, 0.5]])
    black = (0.0, 0.0, 0.0, 1.0)
    circle, square = (
        rig.sink(
            rig.add("gpu.instances", positions=positions, size=0.25, shape=shape, background=black)
        )
        for shape in ("circle", "square")
    )
    rig.run()
    corner = (0.5 + 0.22, 0.5 + 0.22)  # inside the square, outside the circle
    assert_close(pixel_at(rig.pixels(square), *corner), np.array([255, 255, 255, 255]), 0)
    assert_close(pixel_at(rig.pixels(circle), *corner), np.array([0, 0, 0, 255]), 0)


def test_instances_single_size_and_colour_and_rgb_colours(rig: Rig) -> None:
    colors = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0]])
    instances = draw(rig, positions=THREE_POSITIONS, size=0.05, colors=colors)
    image = rig.pixels(instances)
    assert_close(pixel_at(image, 0.25, 0.25), np.array([255, 255, 0, 255]), 0)
    assert_close(pixel_at(image, 0.5, 0.75), np.array([255, 0, 255, 255]), 0)
    assert_close(pixel_at(image, 0.25 + 0.07, 0.25), np.array([0, 0, 0, 255]), 0)


def test_instances_blend_over_the_background(rig: Rig) -> None:
    instances = draw(rig, positions=np.array([[0.5, 0.5]]), size=0.2,
                     color=(1.0, 1.0, 1.0, 0.5))  # fmt: skip
    assert_close(pixel_at(rig.pixels(instances), 0.5, 0.5), np.array([128, 128, 128, 255]), 1)


def test_instances_smaller_than_a_pixel_still_show_faintly(rig: Rig) -> None:
    centre = (20.5 / 64, 40.5 / 64)  # a pixel centre
    instances = draw(rig, positions=np.array([centre]), size=0.3 / 64)
    image = rig.pixels(instances)
    assert 0 < pixel_at(image, *centre)[0] < 255
    assert (image[..., 0] > 0).sum() <= 9


def test_instances_zero_shapes_draw_nothing(rig: Rig) -> None:
    instances = draw(rig, positions=np.zeros((0, 2)))
    image = rig.pixels(instances)
    assert rig.evaluator.error(instances) is None
    assert np.all(image == np.array([0, 0, 0, 255]))


def test_instances_sprite_and_tint_multiply_the_colour(rig: Rig) -> None:
    sprite_image = np.full((4, 4, 4), 255, np.uint8)
    sprite_image[:2] = (255, 0, 0, 255)  # top half red, bottom half white
    tint_image = np.full((8, 8, 4), 255, np.uint8)
    tint_image[:, :4] = (128, 255, 255, 255)  # the left half dims red
    positions = np.array([[0.25, 0.5], [0.75, 0.5]])
    instances = rig.sink(rig.add("gpu.instances", positions=positions, size=0.2, shape="square",
                                 background=(0.0, 0.0, 0.0, 1.0)))  # fmt: skip
    rig.link(rig.texture(sprite_image), instances, "sprite")
    rig.link(rig.texture(tint_image), instances, "tint")
    rig.run()
    image = rig.pixels(instances)
    assert_close(pixel_at(image, 0.75, 0.6), np.array([255, 0, 0, 255]), 1)  # sprite's top
    assert_close(pixel_at(image, 0.75, 0.4), np.array([255, 255, 255, 255]), 1)
    assert_close(pixel_at(image, 0.25, 0.4), np.array([128, 255, 255, 255]), 1)  # tinted
    assert_close(pixel_at(image, 0.25, 0.6), np.array([128, 0, 0, 255]), 1)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"sizes": np.array([0.1, 0.1])}, "sizes has 2 values but positions has 3 points"),
        ({"colors": np.ones((4, 4))}, "colors has 4 rows but positions has 3 points"),
        ({"colors": np.ones((3, 2))}, "colors: expected an Nx3 or Nx4 array, got shape (3, 2)"),
        ({"shape": "star"}, "unknown shape 'star' (use circle, square)"),
    ],
)
def test_instances_mismatched_arrays_fail_in_one_line(
    rig: Rig, values: dict[str, Any], message: str
) -> None:
    instances = rig.sink(rig.add("gpu.instances", positions=THREE_POSITIONS, **values))
    rig.run()
    error = rig.evaluator.error(instances)
    assert error is not None and "\n" not in error
    assert error.endswith(message), error


def test_instances_positions_must_be_pairs(rig: Rig) -> None:
    instances = rig.sink(rig.add("gpu.instances", positions=np.ones((3, 3))))
    rig.run()
    assert rig.evaluator.error(instances) == (
        "ValueError: positions: expected an Nx2 array of x, y, got shape (3, 3)"
    )


def test_instances_are_bounded_by_the_limit(rig: Rig) -> None:
    limits = active_limits()
    set_active_limits(limits.replaced(instances=2))
    try:
        instances = rig.sink(rig.add("gpu.instances", positions=THREE_POSITIONS))
        rig.run()
        assert rig.evaluator.error(instances) == (
            "ValueError: 3 shapes is above the limit instances = 2"
        )
    finally:
        set_active_limits(limits)


def test_instances_leave_fullscreen_passes_unblended(gl: GLService) -> None:
    canvas, shapes = gl.acquire((8, 8)), gl.acquire((8, 8))
    try:
        gl.clear(canvas, (0.0, 0.0, 1.0, 1.0))
        one = np.ones((1, 2), np.float32) * 0.5
        gl.draw_instances(shapes, one, np.full(1, 0.3, np.float32), np.ones((1, 4), np.float32))
        gl.render(canvas, builtin_shader("solid"), {"color": (1.0, 0.0, 0.0, 0.5)})
        assert np.all(gl.readback(canvas) == np.array([255, 0, 0, 128]))  # replaced, not blended
    finally:
        gl.release(canvas)
        gl.release(shapes)


def test_instances_follow_a_grid(rig: Rig) -> None:
    grid = rig.add("array.grid", columns=4, rows=2)
    instances = rig.sink(rig.add("gpu.instances", size=0.05, background=(0.0, 0.0, 0.0, 1.0)))
    rig.link(grid, instances, "positions")
    rig.run()
    image = rig.pixels(instances)
    for column in range(4):
        for row in range(2):
            x, y = (column + 0.5) / 4, (row + 0.5) / 2
            assert_close(pixel_at(image, x, y), np.array([255, 255, 255, 255]), 0)
    assert_close(pixel_at(image, 0.25, 0.5), np.array([0, 0, 0, 255]), 0)


# ----------------------------------------------------------------------------- examples

ARTIFACTS = Path(__file__).parents[1] / "artifacts"


def play_example(gl: GLService, name: str, frames: int, folder: Path) -> list[np.ndarray]:
    """Play a bundled example headless at 320x180; its frames, oldest first, read from PNGs."""
    with resources.as_file(resources.files("resources").joinpath("examples", name)) as path:
        patch = load_patch(path)
    patch.update_settings(resolution=[320, 180])
    evaluator = play_headless(patch, frames, 30.0, [], gpu=gl, out_dir=folder)
    try:
        failed = {n: evaluator.error(n) for n in patch.nodes if evaluator.error(n) is not None}
        assert failed == {}
    finally:
        evaluator.close()
        evaluator.ctx.release_all()
    paths = sorted(folder.glob("*.png"))
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copy(paths[-1], ARTIFACTS / name.replace(".patchbay", ".png"))
    return [np.asarray(Image.open(p)).astype(int) for p in paths]


def test_generative_grid_example_draws_a_moving_coloured_grid(
    gl: GLService, tmp_path: Path
) -> None:
    frames = play_example(gl, "generative_grid.patchbay", 20, tmp_path)
    first, last = frames[0], frames[-1]
    assert last.shape == (180, 320, 4) and np.all(last[..., 3] == 255)
    # a 32 x 18 grid: every cell centre is lit, the corners between cells are background
    for column in (0, 13, 31):
        for row in (0, 9, 17):
            x, y = (column + 0.5) / 32, (row + 0.5) / 18
            assert pixel_at(last, x, y)[:3].max() > 60, (column, row)
    assert pixel_at(last, 1 / 32, 1 / 18)[:3].max() < 30
    blue_side, pink_side = pixel_at(last, 0.5 / 32, 0.5 / 18), pixel_at(last, 31.5 / 32, 17.5 / 18)
    assert blue_side[2] > blue_side[0] and pink_side[0] > pink_side[2]
    assert np.abs(first - last).mean() > 2  # sizes and colours move with the clock


def test_kaleido_trails_example_is_symmetric_and_leaves_trails(
    gl: GLService, tmp_path: Path
) -> None:
    frames = play_example(gl, "kaleido_trails.patchbay", 45, tmp_path)
    last = frames[-1]
    assert np.all(last[..., 3] == 255)
    assert last[..., :3].max() > 150 and np.median(last[..., :3]) < 40  # bright dots on black
    # six mirrored wedge pairs: mirror lines run across and up the frame through its centre
    assert np.abs(last - last[::-1]).mean() < 3
    assert np.abs(last - last[:, ::-1]).mean() < 3
    # trails: faint pixels, neither black nor as bright as the dots, cover part of the frame
    brightness = last[..., :3].max(axis=-1)
    assert ((brightness > 10) & (brightness < 100)).mean() > 0.05


# ----------------------------------------------------------------------------- benchmark


def test_bench_grid_patch_draws_its_circles(gl: GLService) -> None:
    from app.bench.instancing import grid_patch

    patch = grid_patch(1000)
    instances = next(n.id for n in patch.nodes.values() if n.type_id == "gpu.instances")
    grid = next(n for n in patch.nodes.values() if n.type_id == "array.grid")
    assert 900 <= grid.values["columns"] * grid.values["rows"] <= 1000
    evaluator = evaluator_for_tests("flat", patch, gpu=gl)
    try:
        with gl.frame():
            evaluator.run_frame(0.5, 30)
        image = gl.readback(evaluator.output(instances))
        assert image.shape == (720, 1280, 4)
        lit = image[..., :3].max(axis=-1) > 128
        assert 0.02 < lit.mean() < 0.5  # many small white circles on black
    finally:
        evaluator.close()
        evaluator.ctx.release_all()


@pytest.mark.slow
def test_instancing_bench_reports_both_counts(require_gl: Any) -> None:
    from app.bench.instancing import instancing_bench

    report = instancing_bench(quick=True)
    for part in ("draw_ms", "draw_1px_ms", "frame_ms"):
        assert set(report[part]) == {"1000_shapes", "10000_shapes"}
        assert all(value > 0 for value in report[part].values())
