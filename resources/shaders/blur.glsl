#version 330
// One pass of a separable Gaussian blur. Run it twice for a 2D blur:
// once with direction (1, 0) and once with direction (0, 1).
// radius is in pixels (0 = copy); it is about three standard deviations.
in vec2 uv;
out vec4 fragColor;

uniform sampler2D src;
uniform vec2 direction;
uniform float radius;

const int TAPS = 8;  // taps on each side of the centre

void main() {
    if (radius <= 0.0) {
        fragColor = texture(src, uv);
        return;
    }
    vec2 texel = 1.0 / vec2(textureSize(src, 0));
    vec2 step_uv = direction * texel * (radius / float(TAPS));
    float sigma = float(TAPS) / 3.0;
    vec4 sum = texture(src, uv);
    float total = 1.0;
    for (int i = 1; i <= TAPS; i++) {
        float w = exp(-0.5 * float(i * i) / (sigma * sigma));
        sum += w * (texture(src, uv + step_uv * float(i)) + texture(src, uv - step_uv * float(i)));
        total += 2.0 * w;
    }
    fragColor = sum / total;
}
