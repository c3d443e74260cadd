#version 330
// Hue, saturation and value adjustment (alpha unchanged): hue is shifted by `hue` turns
// (1.0 = all the way round), saturation and value are multiplied by their factors, clamped to 0..1.
in vec2 uv;
out vec4 fragColor;

uniform sampler2D src;
uniform float hue;
uniform float saturation;
uniform float value;

vec3 rgb_to_hsv(vec3 c) {
    float high = max(c.r, max(c.g, c.b));
    float low = min(c.r, min(c.g, c.b));
    float delta = high - low;
    float h = 0.0;
    if (delta > 1e-6) {
        if (high == c.r) {
            h = mod((c.g - c.b) / delta, 6.0);
        } else if (high == c.g) {
            h = (c.b - c.r) / delta + 2.0;
        } else {
            h = (c.r - c.g) / delta + 4.0;
        }
    }
    float s = high > 1e-6 ? delta / high : 0.0;
    return vec3(h / 6.0, s, high);
}

vec3 hsv_to_rgb(vec3 c) {
    vec3 k = mod(vec3(5.0, 3.0, 1.0) + c.x * 6.0, 6.0);
    return c.z - c.z * c.y * clamp(min(k, 4.0 - k), 0.0, 1.0);
}

void main() {
    vec4 c = texture(src, uv);
    vec3 h = rgb_to_hsv(c.rgb);
    h.x = fract(h.x + hue);
    h.y = clamp(h.y * saturation, 0.0, 1.0);
    h.z = clamp(h.z * value, 0.0, 1.0);
    fragColor = vec4(hsv_to_rgb(h), c.a);
}
