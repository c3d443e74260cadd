#version 330
// Two colours by luminance (Rec. 709 weights of the RGB values): `high` where it is at least
// `level`, `low` below; `softness` > 0 blends across level - softness/2 .. level + softness/2.
in vec2 uv;
out vec4 fragColor;

uniform sampler2D src;
uniform float level;
uniform float softness;
uniform vec4 low;
uniform vec4 high;

void main() {
    vec4 c = texture(src, uv);
    float y = dot(c.rgb, vec3(0.2126, 0.7152, 0.0722));
    float t = softness > 0.0
        ? smoothstep(level - softness * 0.5, level + softness * 0.5, y)
        : step(level, y);
    fragColor = mix(low, high, t);
}
