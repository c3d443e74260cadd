#version 330
// A kaleidoscope: the wedge of the input between angles `rotate` and `rotate` + pi / segments
// around `center` (0..1) is reflected into 2 * segments wedges around the centre of the frame.
// Distances are in frame heights (no skew); the result is sampled at center + the folded offset.
in vec2 uv;
out vec4 fragColor;

uniform sampler2D src;
uniform float segments;
uniform float rotate;
uniform vec2 center;
uniform vec2 resolution;

const float PI = 3.14159265358979;

void main() {
    float aspect = resolution.y > 0.0 ? resolution.x / resolution.y : 1.0;
    vec2 p = (uv - 0.5) * vec2(aspect, 1.0);
    float r = length(p);
    float wedge = PI / max(segments, 1.0);
    float a = atan(p.y, p.x);
    a = mod(a, 2.0 * wedge);
    a = a > wedge ? 2.0 * wedge - a : a;
    a += rotate;
    vec2 q = vec2(cos(a), sin(a)) * r / vec2(aspect, 1.0);
    fragColor = texture(src, center + q);
}
