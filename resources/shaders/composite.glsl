#version 330
// Composites `layer` over `base`, with a blend mode on the colours and the layer's alpha times
// `opacity` as its coverage:
//   base' = base * (1 - base_fade)        (fades what was there, for feedback trails)
//   s = layer.a * opacity
//   rgb = mix(base'.rgb, B(base'.rgb, layer.rgb), s),  alpha = s + base'.a * (1 - s)
// B by mode: 0 normal (layer), 1 add (min(b + l, 1)), 2 multiply, 3 screen (b + l - b * l),
// 4 overlay, 5 difference (|b - l|), 6 subtract (max(b - l, 0)), 7 lighten (max), 8 darken (min),
// 9 hard light (overlay with base and layer swapped). A missing input reads as transparent black.
in vec2 uv;
out vec4 fragColor;

uniform sampler2D base;
uniform sampler2D layer;
uniform int mode;
uniform float opacity;
uniform float base_fade;

vec3 overlay(vec3 b, vec3 l) {
    return mix(2.0 * b * l, 1.0 - 2.0 * (1.0 - b) * (1.0 - l), step(0.5, b));
}

vec3 blended(vec3 b, vec3 l) {
    if (mode == 1) return min(b + l, 1.0);
    if (mode == 2) return b * l;
    if (mode == 3) return b + l - b * l;
    if (mode == 4) return overlay(b, l);
    if (mode == 5) return abs(b - l);
    if (mode == 6) return max(b - l, 0.0);
    if (mode == 7) return max(b, l);
    if (mode == 8) return min(b, l);
    if (mode == 9) return overlay(l, b);
    return l;
}

void main() {
    vec4 b = texture(base, uv) * (1.0 - clamp(base_fade, 0.0, 1.0));
    vec4 l = texture(layer, uv);
    float s = clamp(l.a * opacity, 0.0, 1.0);
    vec3 rgb = mix(b.rgb, blended(b.rgb, l.rgb), s);
    fragColor = clamp(vec4(rgb, s + b.a * (1.0 - s)), 0.0, 1.0);
}
