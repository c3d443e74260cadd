#version 330
// Mirrors one half of the input onto the other. mode: 0 = the left half onto the right,
// 1 = the bottom half onto the top, 2 = both (the bottom-left quarter into all four).
in vec2 uv;
out vec4 fragColor;

uniform sampler2D src;
uniform int mode;

void main() {
    vec2 p = uv;
    if (mode == 0 || mode == 2) {
        p.x = p.x > 0.5 ? 1.0 - p.x : p.x;
    }
    if (mode == 1 || mode == 2) {
        p.y = p.y > 0.5 ? 1.0 - p.y : p.y;
    }
    fragColor = texture(src, p);
}
