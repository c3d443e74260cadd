"""GLService on a real standalone EGL context (64x64 targets)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evaluators.services.gl import (
    _ERROR_LINE_RES,
    FrameWriteError,
    GLFrameWriter,
    GLService,
    GLTarget,
    ShaderError,
)
from nodes.library.gpu.glsl import builtin_shader, builtin_shader_names, parse_uniforms

pytestmark = [pytest.mark.gl, pytest.mark.usefixtures("require_gl")]

W, H = 64, 64


def render(gl: GLService, name: str, uniforms=None, textures=None, size=(W, H)) -> np.ndarray:
    target = gl.acquire(size)
    try:
        gl.render(target, builtin_shader(name), uniforms or {}, textures or {})
        return gl.readback(target).astype(int)
    finally:
        gl.release(target)


def solid(gl: GLService, rgba) -> GLTarget:
    target = gl.acquire((W, H))
    gl.render(target, builtin_shader("solid"), {"color": rgba})
    return target


def close(pixel, expected, tol=1) -> bool:
    return bool(np.all(np.abs(np.asarray(pixel, int) - np.asarray(expected, int)) <= tol))


# -- default shaders --------------------------------------------------------------------------


def test_all_builtin_shaders_compile(gl: GLService) -> None:
    names = builtin_shader_names()
    expected = {"solid", "gradient", "noise", "circle", "blend", "transform", "blur"}
    assert expected | {"passthrough"} <= set(names)
    for name in names:
        source = builtin_shader(name)
        assert source.startswith("#version 330")
        assert gl.shader_error(source) is None, name


def test_solid_red_everywhere(gl: GLService) -> None:
    img = render(gl, "solid", {"color": (1.0, 0.0, 0.0, 1.0)})
    assert img.shape == (H, W, 4)
    assert (img == (255, 0, 0, 255)).all()


def test_gradient_horizontal_corners(gl: GLService) -> None:
    img = render(gl, "gradient", {"color_a": (0, 0, 0, 1), "color_b": (1, 1, 1, 1), "angle": 0.0})
    # Left column dark, right column bright, same along each column; alpha stays 1.
    assert img[:, 0, 0].max() <= 4
    assert img[:, -1, 0].min() >= 251
    assert (img[0] == img[-1]).all()
    assert (np.diff(img[0, :, 0]) >= 0).all()
    assert (img[..., 3] == 255).all()


def test_gradient_vertical_runs_bottom_to_top(gl: GLService) -> None:
    img = render(
        gl, "gradient", {"color_a": (1, 0, 0, 1), "color_b": (0, 0, 1, 1), "angle": math.pi / 2}
    )
    # Readback rows are top-to-bottom: the bottom row (last) is color_a, the top row color_b.
    assert close(img[-1, 0], (251, 0, 4, 255), tol=4)
    assert close(img[0, 0], (4, 0, 251, 255), tol=4)


def test_gradient_diagonal_corners(gl: GLService) -> None:
    img = render(
        gl, "gradient", {"color_a": (0, 0, 0, 1), "color_b": (1, 1, 1, 1), "angle": math.pi / 4}
    )
    bottom_left, top_right = img[-1, 0, 0], img[0, -1, 0]
    assert bottom_left <= 8
    assert top_right >= 247
    assert abs(int(img[0, 0, 0]) - 128) <= 8  # top-left sits half way


def test_circle_center_vs_corner(gl: GLService) -> None:
    uniforms = {
        "center": (0.5, 0.5),
        "radius": 0.25,
        "softness": 0.0,
        "color": (1, 1, 1, 1),
        "background": (0, 0, 0, 1),
    }
    img = render(gl, "circle", uniforms)
    assert (img[W // 2, H // 2] == (255, 255, 255, 255)).all()
    for corner in (img[0, 0], img[0, -1], img[-1, 0], img[-1, -1]):
        assert (corner == (0, 0, 0, 255)).all()
    # Radius 0.25 of the height: roughly pi * 16^2 pixels inside.
    inside = int((img[..., 0] == 255).sum())
    assert abs(inside - math.pi * 16 * 16) < 60


def test_circle_stays_round_when_wide(gl: GLService) -> None:
    uniforms = {"center": (0.5, 0.5), "radius": 0.25, "color": (1, 1, 1, 1)}
    img = render(gl, "circle", uniforms, size=(128, 64))
    row = img[32, :, 0] > 127
    col = img[:, 64, 0] > 127
    assert abs(int(row.sum()) - int(col.sum())) <= 1  # as wide as it is tall, in pixels


def test_noise_is_animated_and_in_range(gl: GLService) -> None:
    a = render(gl, "noise", {"time": 0.0, "scale": 8.0})
    b = render(gl, "noise", {"time": 0.0, "scale": 8.0})
    c = render(gl, "noise", {"time": 0.5, "scale": 8.0})
    assert (a == b).all()  # deterministic
    assert (a[..., 3] == 255).all()
    assert (a[..., 0] == a[..., 1]).all() and (a[..., 1] == a[..., 2]).all()  # grey
    assert a[..., 0].std() > 10  # not flat
    assert np.abs(a - c).mean() > 2  # time changes it


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (0, (0.2 * 0.5 + 0.6 * 0.5, 0.4 * 0.5 + 0.2 * 0.5, 0.8 * 0.5 + 0.5 * 0.5)),  # mix
        (1, (0.2 + 0.6 * 0.5, 0.4 + 0.2 * 0.5, min(1.0, 0.8 + 0.5 * 0.5))),  # add
        (2, (0.2 * (0.5 + 0.5 * 0.6), 0.4 * (0.5 + 0.5 * 0.2), 0.8 * (0.5 + 0.5 * 0.5))),  # mul
        (
            3,  # screen: a + (s - a) * opacity, s = 1 - (1 - a)(1 - b)
            tuple(
                a + (1 - (1 - a) * (1 - b) - a) * 0.5
                for a, b in ((0.2, 0.6), (0.4, 0.2), (0.8, 0.5))
            ),
        ),
    ],
)
def test_blend_modes(gl: GLService, mode: int, expected) -> None:
    a = solid(gl, (0.2, 0.4, 0.8, 1.0))
    b = solid(gl, (0.6, 0.2, 0.5, 1.0))
    try:
        img = render(gl, "blend", {"mode": mode, "opacity": 0.5}, {"a": a, "b": b})
    finally:
        gl.release(a)
        gl.release(b)
    want = [round(v * 255) for v in expected] + [255]
    assert (img == img[0, 0]).all()
    assert close(img[10, 10], want, tol=2), (img[10, 10], want)


def test_blend_opacity_zero_keeps_a_and_one_gives_b(gl: GLService) -> None:
    a = solid(gl, (1.0, 0.0, 0.0, 1.0))
    b = solid(gl, (0.0, 0.0, 1.0, 1.0))
    try:
        keep = render(gl, "blend", {"mode": 0, "opacity": 0.0}, {"a": a, "b": b})
        full = render(gl, "blend", {"mode": 0, "opacity": 1.0}, {"a": a, "b": b})
    finally:
        gl.release(a)
        gl.release(b)
    assert (keep == (255, 0, 0, 255)).all()
    assert (full == (0, 0, 255, 255)).all()


def _quadrants() -> np.ndarray:
    img = np.zeros((H, W, 4), np.uint8)
    img[..., 3] = 255
    img[: H // 2, : W // 2, 0] = 255  # top-left red
    img[: H // 2, W // 2 :, 1] = 255  # top-right green
    img[H // 2 :, : W // 2, 2] = 255  # bottom-left blue
    img[H // 2 :, W // 2 :] = 255  # bottom-right white
    return img


def test_transform_identity_and_translate(gl: GLService) -> None:
    src = gl.upload(_quadrants())
    try:
        same = render(gl, "transform", {"scale": 1.0}, {"src": src})
        moved = render(gl, "transform", {"scale": 1.0, "translate": (0.5, 0.0)}, {"src": src})
    finally:
        gl.release(src)
    assert (same == _quadrants()).all()
    # Shifted right by half the frame: the left half is now empty, the right half shows
    # what was the left half (red on top, blue at the bottom).
    assert (moved[:, : W // 2 - 1] == 0).all()
    assert (moved[5, W - 5] == (255, 0, 0, 255)).all()
    assert (moved[H - 5, W - 5] == (0, 0, 255, 255)).all()


def test_transform_rotate_quarter_turn_and_scale(gl: GLService) -> None:
    src = gl.upload(_quadrants())
    try:
        turned = render(gl, "transform", {"scale": 1.0, "rotate": math.pi / 2}, {"src": src})
        small = render(gl, "transform", {"scale": 0.5}, {"src": src})
    finally:
        gl.release(src)
    # Counter-clockwise quarter turn: the top-right (green) quadrant moves to the top-left.
    assert (turned[5, 5] == (0, 255, 0, 255)).all()
    assert (turned[H - 5, W - 5] == (0, 0, 255, 255)).all()
    # Half size: corners empty, centre shows all four quadrants.
    assert (small[2, 2] == 0).all()
    assert (small[H // 2 - 4, W // 2 - 4] == (255, 0, 0, 255)).all()


def test_blur_softens_an_edge_and_radius_zero_copies(gl: GLService) -> None:
    img = np.zeros((H, W, 4), np.uint8)
    img[..., 3] = 255
    img[:, W // 2 :, :3] = 255  # right half white
    src = gl.upload(img)
    try:
        copy = render(gl, "blur", {"radius": 0.0, "direction": (1, 0)}, {"src": src})
        blurred = render(gl, "blur", {"radius": 8.0, "direction": (1, 0)}, {"src": src})
    finally:
        gl.release(src)
    assert (copy == img).all()
    row = blurred[H // 2, :, 0]
    assert row[0] == 0 and row[-1] == 255  # far from the edge: unchanged
    assert 30 < row[W // 2 - 1] < 225 and 30 < row[W // 2] < 225  # at the edge: in between
    assert (np.diff(row) >= 0).all()  # still monotonic
    assert (blurred[:, :, 0] == blurred[0:1, :, 0]).all()  # horizontal pass only


def test_passthrough_copies(gl: GLService) -> None:
    src = gl.upload(_quadrants())
    try:
        out = render(gl, "passthrough", textures={"src": src})
    finally:
        gl.release(src)
    assert (out == _quadrants()).all()


# -- shader errors and uniforms --------------------------------------------------------------

BROKEN = "#version 330\nin vec2 uv;\nout vec4 fragColor;\nvoid main() { fragColor = vec4(1) }\n"


def render_error(gl: GLService, source: str) -> ShaderError:
    """The ShaderError that rendering `source` raises."""
    target = gl.acquire()
    try:
        with pytest.raises(ShaderError) as info:
            gl.render(target, source)
    finally:
        gl.release(target)
    return info.value


def test_broken_shader_raises_with_line_and_column(gl: GLService) -> None:
    err = render_error(gl, BROKEN)
    assert err.line == 4
    assert err.column is not None and err.column > 0
    assert "syntax error" in err.message
    assert str(err).startswith(f"line 4, column {err.column}: syntax error")
    assert "\n" not in str(err)
    assert "GLSL Compiler failed" in err.log


def test_type_error_reports_first_error_and_count(gl: GLService) -> None:
    src = (
        "#version 330\nin vec2 uv;\nout vec4 fragColor;\n"
        "void main() {\n  vec3 c = uv;\n  fragColor = vec4(c, 1.0); nope();\n}\n"
    )
    error = render_error(gl, src)
    assert error.line == 5
    assert "vec2" in error.message
    assert "(+1 more error)" in str(error)


def test_link_error_has_no_line(gl: GLService) -> None:
    error = render_error(gl, "#version 330\nout vec4 fragColor;\n")
    assert error.line is None
    assert "main" in str(error)


def test_failed_source_is_cached(gl: GLService, monkeypatch: pytest.MonkeyPatch) -> None:
    source = BROKEN.replace("vec4(1)", "vec4(0.5)")
    render_error(gl, source)
    calls: list[dict] = []
    real_program = gl.ctx.program

    def counting_program(**kwargs):
        calls.append(kwargs)
        return real_program(**kwargs)

    monkeypatch.setattr(gl.ctx, "program", counting_program)
    target = gl.acquire()
    try:
        for _ in range(3):
            with pytest.raises(ShaderError):
                gl.render(target, source)
    finally:
        gl.release(target)
    assert calls == []
    assert gl.shader_error(source) is not None
    assert gl.shader_error(builtin_shader("solid")) is None


def traceback_depth(error: BaseException) -> int:
    depth, tb = 0, error.__traceback__
    while tb is not None:
        depth, tb = depth + 1, tb.tb_next
    return depth


def test_a_cached_failure_raises_a_new_error_each_time(gl: GLService) -> None:
    # Re-raising one cached exception grows its traceback on every raise and keeps every
    # frame it went through alive (with their programs and targets).
    source = BROKEN.replace("vec4(1)", "vec4(0.25)")
    errors = [render_error(gl, source) for _ in range(200)]
    assert len({id(error) for error in errors}) == len(errors)
    assert traceback_depth(errors[-1]) == traceback_depth(errors[0]) <= 5
    assert str(errors[-1]) == str(errors[0]) and errors[-1].log == errors[0].log
    first, second = gl.shader_error(source), gl.shader_error(source)
    assert first is not second and first is not None and first.__traceback__ is None
    assert (first.line, first.column, first.error_count) == (errors[0].line, errors[0].column,
                                                             errors[0].error_count)  # fmt: skip


def test_program_is_cached_by_source(gl: GLService, monkeypatch: pytest.MonkeyPatch) -> None:
    source = builtin_shader("solid").replace("void main", "// cached\nvoid main")
    render_source(gl, source, {"color": (1, 0, 0, 1)})
    monkeypatch.setattr(gl.ctx, "program", None)  # compiling again would fail
    img = render_source(gl, source, {"color": (0, 1, 0, 1)})
    assert (img == (0, 255, 0, 255)).all()


def test_optimized_away_and_unknown_uniforms_are_ignored(gl: GLService) -> None:
    source = (
        "#version 330\nin vec2 uv;\nout vec4 fragColor;\n"
        "uniform float unused;\nuniform vec4 color;\n"
        "void main() { fragColor = color; }\n"
    )
    assert ("unused", "float") in parse_uniforms(source)
    img = render_source(gl, source, {"unused": 3.0, "not_declared": 1, "color": (0, 1, 0, 1)})
    assert (img == (0, 255, 0, 255)).all()


def test_uniform_values_are_converted(gl: GLService) -> None:
    source = (
        "#version 330\nin vec2 uv;\nout vec4 fragColor;\n"
        "uniform int level;\nuniform bool on;\nuniform float gain;\n"
        "void main() { fragColor = on ? vec4(float(level) / 4.0 * gain) : vec4(0); }\n"
    )
    img = render_source(gl, source, {"level": 2.0, "on": True, "gain": 1})
    assert close(img[0, 0], (128, 128, 128, 128))


def test_bad_uniform_shape_raises_value_error(gl: GLService) -> None:
    with pytest.raises(ValueError, match="uniform 'color'"):
        render_source(gl, builtin_shader("solid"), {"color": (1, 0, 0)})


def test_reading_the_target_being_rendered_is_refused(gl: GLService) -> None:
    target = gl.acquire()
    try:
        with pytest.raises(ValueError, match="sampler 'src'"):
            gl.render(target, builtin_shader("passthrough"), textures={"src": target})
    finally:
        gl.release(target)


def test_unbound_sampler_reads_transparent_black(gl: GLService) -> None:
    img = render(gl, "passthrough")
    assert (img == 0).all()


def render_source(gl: GLService, source: str, uniforms) -> np.ndarray:
    target = gl.acquire()
    try:
        gl.render(target, source, uniforms)
        return gl.readback(target).astype(int)
    finally:
        gl.release(target)


def test_uniforms_of_parses_declarations() -> None:
    source = """#version 330
    // uniform float commented_out;
    /* uniform vec4 also_commented;
       uniform int still_commented; */
    uniform float time;
    uniform  vec2 offset ;
    uniform highp vec3 tint;
    uniform vec4 a, b;
    uniform int mode;
    uniform bool flag;
    uniform sampler2D src;
    uniform mat4 ignored_matrix;
    uniform float ignored_array[4];
    uniform float time;
    """
    assert parse_uniforms(source) == [
        ("time", "float"),
        ("offset", "vec2"),
        ("tint", "vec3"),
        ("a", "vec4"),
        ("b", "vec4"),
        ("mode", "int"),
        ("flag", "bool"),
        ("src", "sampler2D"),
    ]
    assert parse_uniforms(builtin_shader("blend")) == [
        ("a", "sampler2D"),
        ("b", "sampler2D"),
        ("mode", "int"),
        ("opacity", "float"),
    ]


# -- pool ---------------------------------------------------------------------------------


def test_releasing_none_is_refused_and_close_frees_the_service() -> None:
    gl = GLService.standalone(size=(8, 8))
    try:
        target = gl.acquire()
        with pytest.raises(TypeError, match="close"):
            gl.release(None)  # type: ignore[arg-type]
        assert not gl.closed
        gl.release(target)
        assert gl.pool_stats()["free"] == 1
    finally:
        gl.close()
    assert gl.closed
    gl.close()  # twice is harmless
    with pytest.raises(RuntimeError, match="closed"):
        gl.acquire()


def test_frame_ends_when_the_frame_raises(gl: GLService) -> None:
    index = gl.frame_index
    target = gl.acquire()
    gl.readback(target)
    with pytest.raises(ZeroDivisionError), gl.frame():
        assert gl.readback_count == 0  # begun
        gl.readback(target)
        1 / 0  # noqa: B018
    assert gl.frame_index == index + 1 and gl.last_frame_readbacks == 1  # and ended
    with gl.frame(finish=False):
        pass
    assert gl.frame_index == index + 2
    gl.release(target)


def test_pool_reuses_targets(gl: GLService) -> None:
    first = gl.acquire((32, 16))
    texture = first.texture
    gl.release(first)
    second = gl.acquire((32, 16))
    assert second.texture is texture
    assert second.size == (32, 16) and second.components == 4 and second.dtype == "f1"
    gl.release(second)
    with pytest.raises(ValueError):
        gl.release(second)


def test_pool_stays_flat_over_1000_edit_cycles() -> None:
    gl = GLService.standalone(size=(W, H))
    try:
        sizes = [(64, 64), (32, 48)]
        source = builtin_shader("solid")
        for i in range(1000):
            gl.begin_frame()
            target = gl.acquire(sizes[i % 2])
            gl.render(target, source, {"color": (i % 2, 0, 0, 1)})
            gl.release(target)
            gl.end_frame(finish=(i % 100 == 0))
            if i == 9:
                baseline = gl.pool_stats()
        stats = gl.pool_stats()
        assert stats == baseline
        assert stats["allocated"] == 2
        assert stats["in_use"] == 0
        assert stats["free"] == 2
        assert len(gl.ctx.objects) == 0  # nothing waits for ctx.gc()
    finally:
        gl.close()
    assert gl.closed


def test_pool_frees_beyond_max_free_at_end_frame() -> None:
    gl = GLService.standalone(size=(16, 16))
    try:
        targets = [gl.acquire() for _ in range(gl.max_free_per_key + 3)]
        for target in targets:
            gl.release(target)
        stats = gl.pool_stats()
        assert stats["free"] == gl.max_free_per_key and stats["pending"] == 3
        gl.end_frame()
        stats = gl.pool_stats()
        assert stats["allocated"] == gl.max_free_per_key and stats["pending"] == 0
        gl.trim()
        assert gl.pool_stats()["allocated"] == 0
    finally:
        gl.close()


def test_idle_sizes_are_dropped_after_many_frames() -> None:
    gl = GLService.standalone(size=(16, 16))
    gl.max_idle_frames = 3
    try:
        gl.release(gl.acquire((8, 8)))
        for _ in range(5):
            gl.begin_frame()
            gl.release(gl.acquire((16, 16)))
            gl.end_frame()
        assert gl.pool_stats()["allocated"] == 1
    finally:
        gl.close()


# -- upload / readback ---------------------------------------------------------------------


@pytest.mark.parametrize("channels", [None, 1, 2, 3, 4])
def test_upload_readback_roundtrip_uint8(gl: GLService, channels) -> None:
    rng = np.random.default_rng(7)
    shape = (H, W - 3) if channels is None else (H, W - 3, channels)  # odd width on purpose
    data = rng.integers(0, 256, size=shape, dtype=np.uint8)
    target = gl.upload(data)
    try:
        assert target.size == (W - 3, H)
        out = gl.readback(target)
    finally:
        gl.release(target)
    assert out.shape == (H, W - 3, 4) and out.dtype == np.uint8
    planes = data.reshape(H, W - 3, -1)
    n = planes.shape[2]
    assert (out[..., :n] == planes).all()
    if n < 4:
        assert (out[..., 3] == 255).all()


def test_upload_readback_roundtrip_rgba8_exact(gl: GLService) -> None:
    data = np.random.default_rng(1).integers(0, 256, size=(H, W, 4), dtype=np.uint8)
    target = gl.upload(data)
    try:
        assert (gl.readback(target) == data).all()
    finally:
        gl.release(target)


def test_upload_float32_reads_back_as_uint8(gl: GLService) -> None:
    data = np.zeros((4, 4, 4), np.float32)
    data[..., 0] = 0.5
    data[..., 1] = 2.0  # clamped
    data[..., 3] = 1.0
    target = gl.upload(data)
    try:
        assert target.dtype == "f4"
        out = gl.readback(target).astype(int)
    finally:
        gl.release(target)
    assert close(out[0, 0], (128, 255, 0, 255))


def test_upload_rejects_bad_arrays(gl: GLService) -> None:
    with pytest.raises(ValueError):
        gl.upload(np.zeros((4, 4, 5), np.uint8))
    with pytest.raises(ValueError):
        gl.upload(np.zeros((4, 4), np.int64))


def test_readback_counter(gl: GLService) -> None:
    target = solid(gl, (1, 1, 1, 1))
    try:
        gl.begin_frame()
        total = gl.readback_total
        gl.readback(target)
        gl.readback(target)
        assert gl.readback_count == 2
        gl.end_frame()
        assert gl.last_frame_readbacks == 2
        gl.begin_frame()
        assert gl.readback_count == 0
        gl.readback(target)
        gl.end_frame()
        assert gl.readback_total == total + 3
    finally:
        gl.release(target)


def test_readback_scaled_is_a_small_counted_readback(gl: GLService) -> None:
    src = gl.upload(_quadrants())
    try:
        in_use, total = gl.pool_stats()["in_use"], gl.readback_total
        small = gl.readback_scaled(src, (8, 4))
        assert gl.readback_total == total + 1
        assert gl.pool_stats()["in_use"] == in_use  # the small target went back to the pool
    finally:
        gl.release(src)
    assert small.shape == (4, 8, 4)
    assert (small[:2, :4] == (255, 0, 0, 255)).all() and (small[2:, 4:] == 255).all()
    assert (small[:2, 4:] == (0, 255, 0, 255)).all() and (small[2:, :4] == (0, 0, 255, 255)).all()


# -- PNG output ------------------------------------------------------------------------------


def test_to_png(gl: GLService, tmp_path: Path) -> None:
    from PIL import Image

    src = gl.upload(_quadrants())
    try:
        path = gl.to_png(src, tmp_path / "out.png")
    finally:
        gl.release(src)
    with Image.open(path) as img:
        assert img.size == (W, H) and img.mode == "RGBA"
        assert (np.asarray(img) == _quadrants()).all()


def test_frame_writer_writes_numbered_frames(gl: GLService, tmp_path: Path) -> None:
    from PIL import Image

    target = gl.acquire()
    try:
        with GLFrameWriter(gl, tmp_path / "frames") as writer:
            for i in range(5):
                gl.render(target, builtin_shader("solid"), {"color": (i / 4, 0, 0, 1)})
                writer.write(target)
    finally:
        gl.release(target)
    files = sorted((tmp_path / "frames").glob("*.png"))
    assert [f.name for f in files] == [f"frame_{i:05d}.png" for i in range(5)]
    assert writer.frames_written == 5
    with Image.open(files[4]) as img:
        assert np.asarray(img)[0, 0].tolist() == [255, 0, 0, 255]
    with Image.open(files[2]) as img:
        assert close(np.asarray(img)[0, 0], (128, 0, 0, 255))


def test_frame_writer_refuses_a_folder_it_cannot_make(gl: GLService, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(FrameWriteError, match="cannot make"):
        GLFrameWriter(gl, tmp_path / "file" / "frames")


def test_frame_writer_reports_encoding_errors(gl: GLService, tmp_path: Path) -> None:
    target = solid(gl, (0, 0, 0, 1))
    (tmp_path / "frames").mkdir()
    (tmp_path / "frames" / "frame_00000.png").mkdir()  # a directory where the file should go
    try:
        writer = GLFrameWriter(gl, tmp_path / "frames")
        writer.write(target)
        with pytest.raises(FrameWriteError, match="writing a PNG frame failed"):
            writer.close()
    finally:
        gl.release(target)


# -- lifecycle -------------------------------------------------------------------------------


def test_context_is_not_left_current(gl: GLService) -> None:
    # Entering and leaving is balanced, nested calls included.
    with gl.current(), gl.current():
        assert gl._depth == 2
    assert gl._depth == 0


def test_from_context_does_not_release_the_context() -> None:
    import moderngl

    options: dict[str, Any] = {"backend": "egl", "require": 330}
    ctx = moderngl.create_standalone_context(**options)
    ctx.__exit__(None, None, None)
    service = GLService.from_context(ctx, size=(8, 8))
    assert ctx.gc_mode == "context_gc"
    img = render(service, "solid", {"color": (0, 0, 1, 1)}, size=(8, 8))
    assert (img == (0, 0, 255, 255)).all()
    service.close()
    with pytest.raises(RuntimeError):
        service.acquire()
    with ctx:
        assert ctx.info["GL_VERSION"]  # still alive
    ctx.release()


def test_default_size(gl: GLService) -> None:
    assert gl.default_size == (W, H)
    target = gl.acquire()
    assert target.size == (W, H)
    gl.release(target)
    with pytest.raises(ValueError):
        gl.default_size = (0, 10)


@pytest.mark.parametrize(
    ("log", "line", "column", "message"),
    [
        ("0:3(39): error: syntax error, unexpected '}'", 3, 39, "syntax error, unexpected '}'"),
        ("0(3) : error C0000: bad thing", 3, None, "bad thing"),
        ("ERROR: 0:7: 'foo' : undeclared", 7, None, "'foo' : undeclared"),
    ],
)
def test_driver_logs_are_read_line_by_line(log, line, column, message) -> None:
    # Blank lines before the error (a hostile source can make a long log of them): a pattern
    # that ran past its own line would rescan the log from every line start.
    error = ShaderError.from_log(" \n" * 5000 + log + "\n" + "\t\n" * 5000)
    assert (error.line, error.column, error.message) == (line, column, message)
    for pattern in _ERROR_LINE_RES:  # no blank that can match a line break
        assert "\\s" not in pattern.pattern
