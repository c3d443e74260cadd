#version 330
// Sobel edge detection on luminance (Rec. 709 weights): out = grey magnitude * strength, opaque.
// Neighbours are one input texel apart, clamped at the borders.
in vec2 uv;
out vec4 fragColor;

uniform sampler2D src;
uniform float strength;

float luma(vec2 offset) {
    vec2 texel = 1.0 / vec2(textureSize(src, 0));
    return dot(texture(src, uv + offset * texel).rgb, vec3(0.2126, 0.7152, 0.0722));
}

void main() {
    float tl = luma(vec2(-1.0, 1.0));
    float t = luma(vec2(0.0, 1.0));
    float tr = luma(vec2(1.0, 1.0));
    float l = luma(vec2(-1.0, 0.0));
    float r = luma(vec2(1.0, 0.0));
    float bl = luma(vec2(-1.0, -1.0));
    float b = luma(vec2(0.0, -1.0));
    float br = luma(vec2(1.0, -1.0));
    float gx = (tr + 2.0 * r + br) - (tl + 2.0 * l + bl);
    float gy = (tl + 2.0 * t + tr) - (bl + 2.0 * b + br);
    float m = clamp(length(vec2(gx, gy)) * strength, 0.0, 1.0);
    fragColor = vec4(vec3(m), 1.0);
}
