#version 330
// Fills the frame with one colour (RGBA, 0..1).
in vec2 uv;
out vec4 fragColor;

uniform vec4 color;

void main() {
    fragColor = color;
}
