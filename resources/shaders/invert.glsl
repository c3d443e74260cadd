#version 330
// Inverts red, green and blue (alpha unchanged): out = mix(c, 1 - c, amount).
in vec2 uv;
out vec4 fragColor;

uniform sampler2D src;
uniform float amount;

void main() {
    vec4 c = texture(src, uv);
    fragColor = vec4(mix(c.rgb, 1.0 - c.rgb, clamp(amount, 0.0, 1.0)), c.a);
}
