#version 330
// Animated fractal value noise, grey levels in 0..1, alpha 1.
// scale: number of noise cells across the frame (0 -> 8); time animates; seed varies the pattern.
in vec2 uv;
out vec4 fragColor;

uniform float time;
uniform float scale;
uniform float seed;

float hash(vec3 p) {
    p = fract(p * vec3(0.1031, 0.1030, 0.0973));
    p += dot(p, p.yxz + 33.33);
    return fract((p.x + p.y) * p.z);
}

// Trilinear value noise in (x, y, time).
float value_noise(vec3 p) {
    vec3 i = floor(p);
    vec3 f = fract(p);
    vec3 w = f * f * (3.0 - 2.0 * f);
    float n000 = hash(i + vec3(0.0, 0.0, 0.0));
    float n100 = hash(i + vec3(1.0, 0.0, 0.0));
    float n010 = hash(i + vec3(0.0, 1.0, 0.0));
    float n110 = hash(i + vec3(1.0, 1.0, 0.0));
    float n001 = hash(i + vec3(0.0, 0.0, 1.0));
    float n101 = hash(i + vec3(1.0, 0.0, 1.0));
    float n011 = hash(i + vec3(0.0, 1.0, 1.0));
    float n111 = hash(i + vec3(1.0, 1.0, 1.0));
    float a = mix(mix(n000, n100, w.x), mix(n010, n110, w.x), w.y);
    float b = mix(mix(n001, n101, w.x), mix(n011, n111, w.x), w.y);
    return mix(a, b, w.z);
}

void main() {
    float s = scale > 0.0 ? scale : 8.0;
    vec3 p = vec3(uv * s + seed * 17.0, time);
    float v = 0.0;
    float amp = 0.5;
    for (int octave = 0; octave < 4; octave++) {
        v += amp * value_noise(p);
        p = vec3(p.xy * 2.0, p.z * 1.5);
        amp *= 0.5;
    }
    v /= 0.9375;  // sum of the four amplitudes
    fragColor = vec4(vec3(v), 1.0);
}
