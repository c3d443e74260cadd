#version 330
// Levels on red, green and blue (alpha unchanged): x is mapped from in_low..in_high to 0..1
// (clamped), raised to 1 / gamma, then mapped to out_low..out_high.
in vec2 uv;
out vec4 fragColor;

uniform sampler2D src;
uniform float in_low;
uniform float in_high;
uniform float gamma;
uniform float out_low;
uniform float out_high;

void main() {
    vec4 c = texture(src, uv);
    float span = max(abs(in_high - in_low), 1e-6) * (in_high < in_low ? -1.0 : 1.0);
    vec3 x = clamp((c.rgb - in_low) / span, 0.0, 1.0);
    x = pow(x, vec3(1.0 / max(gamma, 1e-6)));
    fragColor = vec4(clamp(mix(vec3(out_low), vec3(out_high), x), 0.0, 1.0), c.a);
}
