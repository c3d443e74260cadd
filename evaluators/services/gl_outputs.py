"""The output pass: the canvas mapped onto one output (slice, corner pin, mesh warp, soft edges).

One draw per output, from the canvas texture (`gpu.output`) into a target of the output's size
(nodes/document/outputs.py says what each field means). The draw is the output's mesh (a 2 x 2
grid, the whole output, when it has none): each vertex sits where the mesh puts it and carries
the regular grid point it came from, so the fragment shader receives the point of the
corner-pinned picture that lands on its pixel (exact within each triangle of the mesh, and
everywhere for a mesh that changes nothing). The shader then applies the inverse corner pin, a
3x3 homography computed here from the four corners, per pixel (a true perspective map, not two
affine triangles), reads the slice of the canvas there (linear filtering), and multiplies the
colour by the soft-edge ramps: clamp(d / width, 0, 1) ** (1 / gamma) for each edge, d the
distance from it in the slice (fractions of the slice), alpha untouched. What falls outside the
slice, or behind the pin's horizon, is opaque black.

Part of the GL service (this module and evaluators/services/gl.py are the only ones in
`evaluators` that import moderngl; pyproject.toml's import contract names both). Assumes the
service's conventions: called on the GL thread, textures with row 0 at the bottom, so a
top-left coordinate y is 1 - y in GL. Vertex buffers are made once per mesh and kept while the
mapper lives (`close()` frees them).
"""

from __future__ import annotations

from collections.abc import Sequence

import moderngl
import numpy as np

from evaluators.services.gl import GLService, GLTarget, TextureLike
from nodes.document.outputs import Mesh, OutputMapping

__all__ = ["GLOutputMapper", "corner_pin_homography"]

_VERTEX = """#version 330
in vec2 in_pos;    // where the vertex lands in the output, 0..1, top left origin
in vec2 in_grid;   // the point of the corner-pinned picture it carries
out vec2 grid;
void main() {
    grid = in_grid;
    gl_Position = vec4(in_pos.x * 2.0 - 1.0, 1.0 - in_pos.y * 2.0, 0.0, 1.0);
}
"""

_FRAGMENT = """#version 330
in vec2 grid;
uniform sampler2D canvas;
uniform mat3 unpin;        // output point -> slice point (homogeneous), top left origin
uniform vec4 slice_rect;   // x, y, w, h of the slice in the canvas, top left origin
uniform vec4 blend_widths; // left, right, top, bottom
uniform float inverse_gamma;
out vec4 fragColor;

float ramp(float distance, float width) {
    return width > 0.0 ? pow(clamp(distance / width, 0.0, 1.0), inverse_gamma) : 1.0;
}

void main() {
    vec3 h = unpin * vec3(grid, 1.0);
    if (h.z <= 0.0) { fragColor = vec4(0.0, 0.0, 0.0, 1.0); return; }
    vec2 s = h.xy / h.z;
    if (any(lessThan(s, vec2(0.0))) || any(greaterThan(s, vec2(1.0)))) {
        fragColor = vec4(0.0, 0.0, 0.0, 1.0);
        return;
    }
    vec2 c = slice_rect.xy + s * slice_rect.zw;
    vec4 color = texture(canvas, vec2(c.x, 1.0 - c.y));
    float k = ramp(s.x, blend_widths.x) * ramp(1.0 - s.x, blend_widths.y)
            * ramp(s.y, blend_widths.z) * ramp(1.0 - s.y, blend_widths.w);
    fragColor = vec4(color.rgb * k, color.a);
}
"""


def corner_pin_homography(corners: Sequence[Sequence[float]]) -> np.ndarray:
    """The 3x3 matrix taking the unit square's corners (0,0), (1,0), (1,1), (0,1) to `corners`
    (homogeneous column vectors): the square-to-quad map of Heckbert's "Fundamentals of Texture
    Mapping" (1989), closed form."""
    (x0, y0), (x1, y1), (x2, y2), (x3, y3) = ((float(x), float(y)) for x, y in corners)
    sx, sy = x0 - x1 + x2 - x3, y0 - y1 + y2 - y3
    if abs(sx) < 1e-12 and abs(sy) < 1e-12:  # a parallelogram: affine
        a, b, c = x1 - x0, x3 - x0, x0
        d, e, f = y1 - y0, y3 - y0, y0
        g = h = 0.0
    else:
        dx1, dx2, dy1, dy2 = x1 - x2, x3 - x2, y1 - y2, y3 - y2
        det = dx1 * dy2 - dx2 * dy1
        g = (sx * dy2 - dx2 * sy) / det
        h = (dx1 * sy - sx * dy1) / det
        a, b, c = x1 - x0 + g * x1, x3 - x0 + h * x3, x0
        d, e, f = y1 - y0 + g * y1, y3 - y0 + h * y3, y0
    return np.array([[a, b, c], [d, e, f], [g, h, 1.0]])


def _grid_vertices(mesh: Mesh) -> np.ndarray:
    """Triangles of the mesh: (pos.x, pos.y, grid.x, grid.y) per vertex, two per cell."""
    identity = Mesh.identity(mesh.cols, mesh.rows).points
    rows = []
    for row in range(mesh.rows - 1):
        for col in range(mesh.cols - 1):
            a = row * mesh.cols + col
            b, c, d = a + 1, a + mesh.cols + 1, a + mesh.cols
            for index in (a, b, c, a, c, d):
                rows.append((*mesh.points[index], *identity[index]))
    return np.array(rows, dtype="f4")


class GLOutputMapper:
    """Renders outputs from a canvas texture on one GLService (see the module note)."""

    #: Vertex arrays kept for meshes (each output usually has one; edits make new ones).
    max_meshes = 32

    def __init__(self, gl: GLService) -> None:
        self.gl = gl
        with gl.current() as ctx:
            self._program = ctx.program(vertex_shader=_VERTEX, fragment_shader=_FRAGMENT)
        self._meshes: dict[Mesh, tuple[moderngl.Buffer, moderngl.VertexArray, int]] = {}

    def _vertex_array(self, mesh: Mesh) -> tuple[moderngl.VertexArray, int]:
        entry = self._meshes.pop(mesh, None)
        if entry is None:
            if len(self._meshes) >= self.max_meshes:
                oldest = next(iter(self._meshes))
                buffer, vao, _ = self._meshes.pop(oldest)
                vao.release()
                buffer.release()
            vertices = _grid_vertices(mesh)
            ctx = self.gl.ctx
            buffer = ctx.buffer(vertices.tobytes())
            vao = ctx.vertex_array(self._program, [(buffer, "2f 2f", "in_pos", "in_grid")])
            entry = (buffer, vao, len(vertices))
        self._meshes[mesh] = entry  # most recently used last
        return entry[1], entry[2]

    def _uniform(self, name: str) -> moderngl.Uniform:
        member = self._program[name]
        if not isinstance(member, moderngl.Uniform):  # every one is used: none is optimised away
            raise TypeError(f"the output program has no uniform {name!r}")
        return member

    def size_of(self, output: OutputMapping, canvas: TextureLike) -> tuple[int, int]:
        """The output's size in pixels: its own, or the canvas's."""
        if output.size is not None:
            return output.size
        texture = canvas.texture if isinstance(canvas, GLTarget) else canvas
        width, height = texture.size
        return (int(width), int(height))

    def render(self, output: OutputMapping, canvas: TextureLike, target: GLTarget) -> None:
        """Draw `output`'s picture of `canvas` into `target` (normally of `size_of(output)`)."""
        texture = canvas.texture if isinstance(canvas, GLTarget) else canvas
        if texture is target.texture:
            raise ValueError("an output cannot be drawn into the canvas it shows")
        pin = corner_pin_homography(output.corners)
        unpin = np.linalg.inv(pin)
        blend = output.blend
        with self.gl.current() as ctx:
            vao, count = self._vertex_array(output.mesh or Mesh.identity(2, 2))
            # GLSL matrices are column-major: the transpose's rows are the columns
            self._uniform("unpin").write(unpin.T.astype("f4").tobytes())
            self._uniform("slice_rect").value = tuple(float(v) for v in output.slice)
            self._uniform("blend_widths").value = (blend.left, blend.right, blend.top, blend.bottom)
            self._uniform("inverse_gamma").value = 1.0 / blend.gamma
            self._uniform("canvas").value = 0
            texture.use(0)
            target.framebuffer.use()
            ctx.viewport = (0, 0, *target.size)
            target.framebuffer.clear(0.0, 0.0, 0.0, 1.0)
            vao.render(moderngl.TRIANGLES, vertices=count)

    def picture(self, output: OutputMapping, canvas: TextureLike) -> GLTarget:
        """A pooled target holding `output`'s picture of `canvas`; give it back with
        `gl.release()`."""
        target = self.gl.acquire(self.size_of(output, canvas))
        try:
            self.render(output, canvas, target)
        except BaseException:
            self.gl.release(target)
            raise
        return target

    def close(self) -> None:
        """Free the program and the meshes' buffers (the service must still be open)."""
        if self.gl.closed:
            return
        with self.gl.current():
            for buffer, vao, _ in self._meshes.values():
                vao.release()
                buffer.release()
            self._meshes.clear()
            self._program.release()
