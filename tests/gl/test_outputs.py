"""The output pass (evaluators/services/gl_outputs.py) against pictures computed with numpy, and
`patchbay run --headless --out DIR` writing each output's frames to `DIR/<name>/`.

Expected pictures sample the canvas as the GPU does (bilinear, clamped to the edge, texel centres
at half pixels), at points mapped by a homography solved here independently (a linear system of
the eight unknowns, not the closed form the module uses).
"""

from __future__ import annotations

import importlib.resources
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from app.cli.main import main
from evaluators.services.gl import GLService
from evaluators.services.gl_outputs import GLOutputMapper
from nodes import load_patch, save_patch
from nodes.document.outputs import OutputMapping, parse_outputs

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]

W, H = 64, 48


def one(**fields: object) -> OutputMapping:
    (output,) = parse_outputs([{"name": "out", **fields}])
    return output


def gradient() -> np.ndarray:
    """A smooth picture, different along both axes, opaque."""
    y, x = np.mgrid[0:H, 0:W].astype(np.float64)
    image = np.zeros((H, W, 4), np.uint8)
    image[..., 0] = np.round(x / (W - 1) * 255)
    image[..., 1] = np.round(y / (H - 1) * 255)
    image[..., 2] = np.round(127.5 + 100 * np.sin(x / 9.0) * np.cos(y / 7.0))
    image[..., 3] = 255
    return image


def sample(image: np.ndarray, cx: np.ndarray, cy: np.ndarray) -> np.ndarray:
    """Bilinear samples of `image` at canvas points (0..1, top left origin), clamped to edge."""
    height, width = image.shape[:2]
    fx = np.clip(cx * width - 0.5, 0, width - 1)
    fy = np.clip(cy * height - 0.5, 0, height - 1)
    x0, y0 = np.floor(fx).astype(int), np.floor(fy).astype(int)
    x1, y1 = np.minimum(x0 + 1, width - 1), np.minimum(y0 + 1, height - 1)
    tx, ty = (fx - x0)[..., None], (fy - y0)[..., None]
    pixels = image.astype(np.float64)
    top = pixels[y0, x0] * (1 - tx) + pixels[y0, x1] * tx
    bottom = pixels[y1, x0] * (1 - tx) + pixels[y1, x1] * tx
    return top * (1 - ty) + bottom * ty


def reference_homography(corners: list[list[float]]) -> np.ndarray:
    """The 3x3 map of the unit square's corners onto `corners`, from the 8x8 linear system."""
    square = [(0, 0), (1, 0), (1, 1), (0, 1)]
    rows, rhs = [], []
    for (u, v), (x, y) in zip(square, corners, strict=True):
        rows.append([u, v, 1, 0, 0, 0, -u * x, -v * x])
        rows.append([0, 0, 0, u, v, 1, -u * y, -v * y])
        rhs += [x, y]
    h = np.linalg.solve(np.array(rows, float), np.array(rhs, float))
    return np.append(h, 1.0).reshape(3, 3)


def pixel_centres(width: int, height: int) -> tuple[np.ndarray, np.ndarray]:
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    return (x + 0.5) / width, (y + 0.5) / height


@pytest.fixture(scope="module")
def mapper() -> Iterator[tuple[GLService, GLOutputMapper]]:
    service = GLService.standalone(size=(W, H))
    mapper = GLOutputMapper(service)
    try:
        yield service, mapper
    finally:
        mapper.close()
        service.close()


def picture(mapper: tuple[GLService, GLOutputMapper], image: np.ndarray,
            output: OutputMapping) -> np.ndarray:  # fmt: skip
    gl, outputs = mapper
    with gl.frame():
        canvas = gl.upload(image)
        try:
            target = outputs.picture(output, canvas)
            try:
                return gl.readback(target)
            finally:
                gl.release(target)
        finally:
            gl.release(canvas)


def test_the_identity_mapping_equals_the_canvas(mapper) -> None:
    image = gradient()
    image[::5, ::3, 3] = 90  # alpha goes through too
    assert np.array_equal(picture(mapper, image, one()), image)


def test_a_slice_of_the_left_half_at_twice_its_width_is_the_left_half_scaled(mapper) -> None:
    image = gradient()
    result = picture(mapper, image, one(slice=[0, 0, 0.5, 1], size=[W, H]))
    assert result.shape == (H, W, 4)
    x, y = pixel_centres(W, H)
    expected = sample(image, x * 0.5, y)
    assert np.abs(result.astype(float) - expected).max() <= 2


def test_a_slice_at_another_size_and_place(mapper) -> None:
    image = gradient()
    result = picture(mapper, image, one(slice=[0.25, 0.5, 0.5, 0.5], size=[40, 30]))
    assert result.shape == (30, 40, 4)
    x, y = pixel_centres(40, 30)
    expected = sample(image, 0.25 + x * 0.5, 0.5 + y * 0.5)
    assert np.abs(result.astype(float) - expected).max() <= 2


CORNERS = [[0.1, 0.15], [0.92, 0.05], [0.8, 0.95], [0.05, 0.7]]


def test_the_corner_pin_follows_the_homography_of_its_corners(mapper) -> None:
    image = gradient()
    slice_ = [0.1, 0.2, 0.8, 0.6]
    result = picture(mapper, image, one(slice=slice_, corners=CORNERS)).astype(float)
    x, y = pixel_centres(W, H)
    inverse = np.linalg.inv(reference_homography(CORNERS))
    u, v, w = (inverse @ np.stack([x.ravel(), y.ravel(), np.ones(x.size)])).reshape(3, H, W)
    s, t = u / w, v / w
    inside = (s > 0.02) & (s < 0.98) & (t > 0.02) & (t < 0.98)  # away from the picture's edge
    outside = (s < -0.05) | (s > 1.05) | (t < -0.05) | (t > 1.05)
    assert inside.sum() > W * H // 4 and outside.sum() > W * H // 10
    expected = sample(image, slice_[0] + s * slice_[2], slice_[1] + t * slice_[3])
    assert np.abs(result[inside] - expected[inside]).max() <= 2
    assert np.array_equal(result[outside], np.tile([0.0, 0.0, 0.0, 255.0], (outside.sum(), 1)))


def test_the_slice_corners_land_where_the_corners_say(mapper) -> None:
    # A canvas whose quarters are red, green, blue and white: each corner of the output shows
    # its quarter's colour right inside the pinned corner.
    image = np.zeros((H, W, 4), np.uint8)
    image[..., 3] = 255
    image[: H // 2, : W // 2, 0] = 255
    image[: H // 2, W // 2 :, 1] = 255
    image[H // 2 :, W // 2 :, 2] = 255
    image[H // 2 :, : W // 2, :3] = 255
    result = picture(mapper, image, one(corners=CORNERS, size=[200, 150]))
    colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255)]
    centre = np.mean(CORNERS, axis=0)
    for (cx, cy), colour in zip(CORNERS, colours, strict=True):
        # a point 8% of the way from the corner to the quad's centre
        px = cx + 0.08 * (centre[0] - cx)
        py = cy + 0.08 * (centre[1] - cy)
        assert tuple(result[int(py * 150), int(px * 200), :3]) == colour
        # and a point just beyond the corner, away from the centre, is black
        qx, qy = cx - 0.04 * (centre[0] - cx), cy - 0.04 * (centre[1] - cy)
        assert tuple(result[int(qy * 150), int(qx * 200)]) == (0, 0, 0, 255)


@pytest.mark.parametrize("gamma", [1.0, 2.2])
def test_blend_ramps_are_gamma_correct(mapper, gamma: float) -> None:
    image = np.full((H, W, 4), 255, np.uint8)
    widths = {"left": 0.25, "right": 0.125, "top": 0.0, "bottom": 0.5, "gamma": gamma}
    result = picture(mapper, image, one(blend=widths)).astype(float)
    x, y = pixel_centres(W, H)

    def ramp(distance: np.ndarray, width: float) -> np.ndarray:
        return np.clip(distance / width, 0, 1) ** (1 / gamma) if width else np.ones_like(distance)

    factor = ramp(x, 0.25) * ramp(1 - x, 0.125) * ramp(1 - y, 0.5)
    assert np.abs(result[..., 0] - 255 * factor).max() <= 2
    assert np.all(result[..., 3] == 255)  # alpha untouched
    row = result[2, :, 0]  # the top rows are past the bottom ramp
    assert row[0] <= 255 * (0.5 / 16) ** (1 / gamma) + 2  # nearly 0 at the edge
    assert np.all(row[16:-8] == 255)  # past the widths, 1
    assert np.all(np.diff(row[:17]) >= 0)  # rising across the width


def test_an_identity_mesh_changes_nothing(mapper) -> None:
    image = gradient()
    cols, rows = 4, 3
    points = [[c / (cols - 1), r / (rows - 1)] for r in range(rows) for c in range(cols)]
    mesh = {"cols": cols, "rows": rows, "points": points}
    assert np.array_equal(picture(mapper, image, one(mesh=mesh)), image)
    pinned = picture(mapper, image, one(corners=CORNERS))
    assert np.abs(picture(mapper, image, one(corners=CORNERS, mesh=mesh)).astype(int)
                  - pinned).max() <= 1  # fmt: skip


def test_a_moved_mesh_point_moves_the_picture_there(mapper) -> None:
    # A picture that is a horizontal ramp: the middle point of a 3x3 mesh moved right carries the
    # canvas's middle column with it.
    image = np.zeros((H, W, 4), np.uint8)
    image[..., 0] = np.round((np.arange(W) + 0.5) / W * 255)
    image[..., 3] = 255
    points = [[c / 2, r / 2] for r in range(3) for c in range(3)]
    points[4] = [0.7, 0.5]
    result = picture(mapper, image, one(mesh={"cols": 3, "rows": 3, "points": points}))
    middle = result[H // 2, :, 0].astype(float)
    # left of the moved point the middle row stretches 0..0.5 over 0..0.7, right of it 0.5..1
    # over 0.7..1
    x = (np.arange(W) + 0.5) / W
    expected = np.where(x < 0.7, x / 0.7 * 0.5, 0.5 + (x - 0.7) / 0.3 * 0.5) * 255
    assert np.abs(middle - expected).max() <= 3
    assert abs(middle[int(0.7 * W)] - 127.5) <= 6
    # the top edge did not move (its pixel centres, half a pixel in, move a little)
    assert np.abs(result[0].astype(int) - image[0]).max() <= 2


def test_outputs_keep_the_pool_in_balance(mapper) -> None:
    gl, _ = mapper
    before = gl.pool_stats()["in_use"]
    picture(mapper, gradient(), one(size=[10, 10]))
    assert gl.pool_stats()["in_use"] == before


EXAMPLES = importlib.resources.files("resources") / "examples"


def test_run_headless_out_writes_each_output_in_its_folder(tmp_path: Path) -> None:
    patch = load_patch(str(EXAMPLES / "feedback_trail.patchbay"))
    patch.update_settings(resolution=[64, 36], outputs=[
        {"name": "whole"},
        {"name": "left", "slice": [0, 0, 0.5, 1], "size": [64, 72], "blend": {"right": 0.2}},
    ])  # fmt: skip
    source = tmp_path / "show.patchbay"
    save_patch(patch, source)
    out = tmp_path / "frames"
    assert main(["run", str(source), "--headless", "--frames", "3", "--out", str(out)]) == 0
    canvas = sorted(out.glob("frame_*.png"))
    whole = sorted((out / "whole").glob("frame_*.png"))
    left = sorted((out / "left").glob("frame_*.png"))
    assert [p.name for p in canvas] == [p.name for p in whole] == [p.name for p in left]
    assert len(canvas) == 3
    for canvas_file, whole_file, left_file in zip(canvas, whole, left, strict=True):
        frame = np.asarray(Image.open(canvas_file))
        assert np.array_equal(np.asarray(Image.open(whole_file)), frame)
        assert np.asarray(Image.open(left_file)).shape == (72, 64, 4)


def test_no_outputs_section_writes_the_canvas_only(tmp_path: Path) -> None:
    out = tmp_path / "frames"
    patch = str(EXAMPLES / "feedback_trail.patchbay")
    code = main(["run", patch, "--headless", "--frames", "1", "--size", "32x18", "--out", str(out)])
    assert code == 0
    assert sorted(p.name for p in out.iterdir()) == ["frame_00000.png"]


def test_an_output_beyond_the_memory_budget_is_one_line(tmp_path: Path, capsys) -> None:
    patch = load_patch(str(EXAMPLES / "feedback_trail.patchbay"))
    patch.update_settings(resolution=[64, 36], outputs=[{"name": "big", "size": [2048, 2048]}])
    source = tmp_path / "show.patchbay"
    save_patch(patch, source)
    out = tmp_path / "frames"
    code = main(["run", str(source), "--headless", "--frames", "1", "--out", str(out),
                 "--limit", "memory_bytes=4000000"])  # fmt: skip
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("patchbay run: output big: "), err
    assert "memory_bytes" in err[-1]
