#version 330
// Copies the input texture unchanged.
in vec2 uv;
out vec4 fragColor;

uniform sampler2D src;

void main() {
    fragColor = texture(src, uv);
}
