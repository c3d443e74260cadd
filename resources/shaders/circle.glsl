#version 330
// A filled circle over a background colour.
// center is in uv units (0..1, origin bottom-left); radius is a fraction of the frame height,
// so the circle stays round at any aspect ratio. softness widens the edge inwards (0 = hard edge).
// resolution is the target size in pixels (set automatically by the GL service).
in vec2 uv;
out vec4 fragColor;

uniform vec2 center;
uniform float radius;
uniform float softness;
uniform vec4 color;
uniform vec4 background;
uniform vec2 resolution;

void main() {
    float aspect = resolution.y > 0.0 ? resolution.x / resolution.y : 1.0;
    vec2 d = (uv - center) * vec2(aspect, 1.0);
    float dist = length(d);
    float inside = softness > 0.0
        ? 1.0 - smoothstep(radius - softness, radius, dist)
        : step(dist, radius);
    fragColor = mix(background, color, inside);
}
