#version 330
// Linear gradient from color_a to color_b.
// angle is in radians: 0 runs left -> right, pi/2 runs bottom -> top.
// The gradient spans the whole frame: the two extreme corners get exactly color_a and color_b.
in vec2 uv;
out vec4 fragColor;

uniform vec4 color_a;
uniform vec4 color_b;
uniform float angle;

void main() {
    vec2 dir = vec2(cos(angle), sin(angle));
    float extent = 0.5 * (abs(dir.x) + abs(dir.y));
    float t = clamp(dot(uv - 0.5, dir) / extent * 0.5 + 0.5, 0.0, 1.0);
    fragColor = mix(color_a, color_b, t);
}
