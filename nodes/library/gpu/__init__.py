"""GPU node types: shader sources, effects, instancing, and their GLSL."""
