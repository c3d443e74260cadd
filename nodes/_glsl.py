"""GLSL text helpers that need no GL context: bundled shader texts and the uniforms a fragment
shader declares.

GPU node specs turn a shader's uniform declarations into input pins with this parser, so `nodes`
never imports moderngl. Results are cached by source text (a running gpu.shader asks every frame).

It is a regular-expression scan, not a GLSL parser: it understands plain declarations
(`uniform vec4 color;`, `uniform float a, b;`, precision qualifiers, and a literal initializer
such as `uniform float scale = 8.0;` or `uniform vec2 c = vec2(0.5, 0.5);`) after stripping
comments. Arrays, structs, matrices and uniforms inside `#if` branches that are compiled out are
not understood (the latter are still reported).
"""

from __future__ import annotations

import functools
import importlib.resources
import re
from typing import Any, NamedTuple

#: Uniform types that `parse_uniforms` reports (the ones a node can expose as input pins).
FRAGMENT_UNIFORM_TYPES = ("float", "vec2", "vec3", "vec4", "int", "bool", "sampler2D")

_COMMENTS_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_UNIFORM_RE = re.compile(
    r"\buniform\s+(?:(?:lowp|mediump|highp)\s+)?"
    r"(?P<type>float|vec2|vec3|vec4|int|bool|sampler2D)\s+"
    r"(?P<names>[A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*"
    r"(?:=\s*(?P<init>[^;]*?)\s*)?;"
)
_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_NUMBER_RE = re.compile(_NUMBER)
_DIMENSIONS = {"float": 1, "int": 1, "bool": 1, "vec2": 2, "vec3": 3, "vec4": 4}


@functools.cache
def builtin_shader(name: str) -> str:
    """Return the text of a bundled fragment shader, e.g. `builtin_shader("solid")`."""
    resource = importlib.resources.files("resources").joinpath("shaders", f"{name}.glsl")
    if not resource.is_file():
        raise KeyError(f"no built-in shader named {name!r}")
    return resource.read_text(encoding="utf-8")


def builtin_shader_names() -> list[str]:
    """Names of the bundled fragment shaders (file names without `.glsl`), sorted."""
    folder = importlib.resources.files("resources").joinpath("shaders")
    return sorted(
        entry.name[: -len(".glsl")] for entry in folder.iterdir() if entry.name.endswith(".glsl")
    )


class UniformDecl(NamedTuple):
    """One declared uniform: its name, GLSL type and initializer (None when there is none or it
    is not a plain literal)."""

    name: str
    type: str
    default: Any = None


@functools.lru_cache(maxsize=128)
def uniform_declarations(source: str) -> tuple[UniformDecl, ...]:
    """Every supported uniform declared in GLSL `source`, in source order, each name once."""
    text = _COMMENTS_RE.sub(" ", source)
    found: dict[str, UniformDecl] = {}
    for match in _UNIFORM_RE.finditer(text):
        glsl_type = match.group("type")
        names = [name.strip() for name in match.group("names").split(",")]
        init = match.group("init")
        default = _literal(glsl_type, init) if init is not None and len(names) == 1 else None
        for name in names:
            if name not in found:
                found[name] = UniformDecl(name, glsl_type, default)
    return tuple(found.values())


def parse_uniforms(source: str) -> list[tuple[str, str]]:
    """`(name, glsl_type)` for each supported uniform declared in GLSL `source`.

    Only declarations of the types in `FRAGMENT_UNIFORM_TYPES` are reported, in source order,
    each name once. Comments are ignored; arrays, structs and other types are skipped.
    """
    return [(decl.name, decl.type) for decl in uniform_declarations(source)]


def _literal(glsl_type: str, text: str) -> Any:
    """The value of an initializer such as `1.5`, `true` or `vec3(1.0, 0.5, 0.0)`, or None."""
    text = text.strip()
    if glsl_type == "bool":
        return {"true": True, "false": False}.get(text)
    dimension = _DIMENSIONS.get(glsl_type)
    if dimension is None:
        return None
    if dimension > 1:
        match = re.fullmatch(rf"{glsl_type}\s*\((.*)\)", text)
        if match is None:
            return None
        text = match.group(1)
    parts = [part.strip() for part in text.split(",")]
    if not all(_NUMBER_RE.fullmatch(part.rstrip("fF")) for part in parts):
        return None
    numbers = [float(part.rstrip("fF")) for part in parts]
    if glsl_type == "int":
        return int(numbers[0]) if len(numbers) == 1 and numbers[0].is_integer() else None
    if dimension == 1:
        return numbers[0] if len(numbers) == 1 else None
    if len(numbers) == 1:
        numbers = numbers * dimension  # vec3(0.5) fills every component
    return tuple(numbers) if len(numbers) == dimension else None
