#version 330
// Crops the input to the rectangle low..high (0..1, origin bottom-left) stretched over the frame.
in vec2 uv;
out vec4 fragColor;

uniform sampler2D src;
uniform vec2 low;
uniform vec2 high;

void main() {
    fragColor = texture(src, mix(low, high, uv));
}
