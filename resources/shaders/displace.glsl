#version 330
// Moves each pixel by the displacement map: the map's red and green (0.5 = no move) shift the
// sampling position by (value - 0.5) * 2 * amount, in frame widths and heights.
in vec2 uv;
out vec4 fragColor;

uniform sampler2D src;
uniform sampler2D map;
uniform float amount;
uniform bool has_map;

void main() {
    vec2 offset = has_map ? (texture(map, uv).rg - 0.5) * 2.0 * amount : vec2(0.0);
    fragColor = texture(src, uv + offset);
}
