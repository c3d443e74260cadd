#version 330
// Repeats the input `repeat` times across and up the frame, shifted by `offset` (in tiles).
in vec2 uv;
out vec4 fragColor;

uniform sampler2D src;
uniform vec2 repeat;
uniform vec2 offset;

void main() {
    fragColor = texture(src, fract(uv * repeat - offset));
}
