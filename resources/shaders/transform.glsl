#version 330
// Moves, rotates and scales the input about the frame centre.
// translate is in uv units (1.0 = one frame width/height), rotate in radians (counter-clockwise),
// scale is a factor (1 = unchanged). Pixels that come from outside the input are transparent black.
// resolution is the target size in pixels (set automatically), used to rotate without skewing.
in vec2 uv;
out vec4 fragColor;

uniform sampler2D src;
uniform vec2 translate;
uniform float rotate;
uniform float scale;
uniform vec2 resolution;

void main() {
    float aspect = resolution.y > 0.0 ? resolution.x / resolution.y : 1.0;
    float s = abs(scale) > 1e-6 ? scale : 1e-6;
    // Inverse transform: output position -> input position.
    vec2 p = (uv - 0.5 - translate) * vec2(aspect, 1.0);
    float c = cos(-rotate);
    float sn = sin(-rotate);
    p = mat2(c, sn, -sn, c) * p / s;
    vec2 src_uv = p / vec2(aspect, 1.0) + 0.5;
    bool inside = all(greaterThanEqual(src_uv, vec2(0.0))) && all(lessThanEqual(src_uv, vec2(1.0)));
    fragColor = inside ? texture(src, src_uv) : vec4(0.0);
}
