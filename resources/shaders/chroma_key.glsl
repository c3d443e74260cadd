#version 330
// Chroma key: pixels whose RGB lies within `tolerance` (Euclidean distance) of the key colour
// become transparent; `softness` fades alpha back in over the next `softness` of distance.
// Colours are kept (straight alpha): alpha = src.a * smoothstep(tolerance, tolerance + softness, d).
in vec2 uv;
out vec4 fragColor;

uniform sampler2D src;
uniform vec4 key;
uniform float tolerance;
uniform float softness;

void main() {
    vec4 c = texture(src, uv);
    float d = distance(c.rgb, key.rgb);
    float keep = softness > 0.0
        ? smoothstep(tolerance, tolerance + softness, d)
        : step(tolerance, d);
    fragColor = vec4(c.rgb, c.a * keep);
}
