#version 330
// Blends layer b onto a.
// mode: 0 = mix, 1 = add, 2 = multiply, 3 = screen. opacity (0..1) fades the blended
// result in over a: out = clamp(mix(a, blend(a, b), opacity), 0, 1), on all four channels.
in vec2 uv;
out vec4 fragColor;

uniform sampler2D a;
uniform sampler2D b;
uniform int mode;
uniform float opacity;

void main() {
    vec4 ca = texture(a, uv);
    vec4 cb = texture(b, uv);
    vec4 blended;
    if (mode == 1) {
        blended = ca + cb;
    } else if (mode == 2) {
        blended = ca * cb;
    } else if (mode == 3) {
        blended = 1.0 - (1.0 - ca) * (1.0 - cb);
    } else {
        blended = cb;
    }
    fragColor = clamp(mix(ca, blended, opacity), 0.0, 1.0);
}
