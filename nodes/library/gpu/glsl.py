"""GLSL text helpers that need no GL context: bundled shader texts and the uniforms a fragment
shader declares.

GPU node specs turn a shader's uniform declarations into input pins with this parser, so `nodes`
never imports moderngl; the uniform types it reports are those a pin type exposes (nodes.types).
Results are cached by source text (a running gpu.shader asks every frame).

It is a small tokenizer, not a GLSL parser: it understands plain declarations (`uniform vec4
color;`, `uniform float a, b;`, precision qualifiers, and a literal initializer such as `uniform
float scale = 8.0;` or `uniform vec2 c = vec2(0.5, 0.5);`) after stripping comments. Arrays,
structs, matrices and uniforms inside `#if` branches that are compiled out are not understood (the
latter are still reported).

Shader sources come from patch files, so every step is linear in the source's length: comments
are found with `str.find`, tokens with one regular expression whose alternatives are single
character classes (no nested or overlapping quantifiers), and literals are checked character by
character before `float()` reads them.
"""

from __future__ import annotations

import functools
import importlib.resources
import re
from typing import Any, NamedTuple

from nodes.types import pin_type_of_uniform

_PRECISIONS = frozenset({"lowp", "mediump", "highp"})
# Identifiers, numbers (with their suffixes, loosely), or any other single character.
_TOKEN_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9.][A-Za-z0-9_.]*|\S")
_NUMBER_CHARS = frozenset("0123456789.eE+-")
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


def _without_comments(source: str) -> str:
    """`source` with each comment replaced by a space; an unclosed `/*` runs to the end. Linear:
    each search starts where the last one ended, and a found opener is searched for again only
    once the scan has passed it."""
    parts = []
    position = 0
    line = source.find("//")
    block = source.find("/*")
    while line >= 0 or block >= 0:
        if block < 0 or 0 <= line < block:
            parts.append(source[position:line])
            end = source.find("\n", line)
        else:
            parts.append(source[position:block])
            end = source.find("*/", block + 2)
            end = end + 2 if end >= 0 else end
        position = len(source) if end < 0 else end
        if 0 <= line < position:
            line = source.find("//", position)
        if 0 <= block < position:
            block = source.find("/*", position)
    parts.append(source[position:])
    return " ".join(parts)


def _declaration(
    tokens: list[re.Match[str]], at: int, text: str, semicolons: list[int]
) -> tuple[str, list[str], str | None, int] | None:
    """The uniform declaration whose `uniform` token is `tokens[at]`: (type, names, initializer
    text or None, index of its `;`), or None when it is not a plain supported declaration.
    `semicolons[k]` is the index of the first `;` token at or after `k` (len(tokens) if none)."""
    count = len(tokens)
    k = at + 1
    if k < count and tokens[k].group() in _PRECISIONS:
        k += 1
    if k >= count or pin_type_of_uniform(tokens[k].group()) is None:
        return None
    glsl_type = tokens[k].group()
    names: list[str] = []
    k += 1
    while k < count:
        name = tokens[k].group()
        if not (name[0].isalpha() or name[0] == "_"):
            return None
        names.append(name)
        k += 1
        if k < count and tokens[k].group() == ",":
            k += 1
            continue
        break
    if k >= count:
        return None
    after = tokens[k].group()
    if after == ";":
        return glsl_type, names, None, k
    if after != "=":
        return None
    start = tokens[k].end()
    k = semicolons[k]
    if k >= count:
        return None
    return glsl_type, names, text[start : tokens[k].start()], k


@functools.lru_cache(maxsize=128)
def uniform_declarations(source: str) -> tuple[UniformDecl, ...]:
    """Every supported uniform declared in GLSL `source`, in source order, each name once."""
    text = _without_comments(source)
    tokens = list(_TOKEN_RE.finditer(text))
    semicolons = [len(tokens)] * (len(tokens) + 1)
    for k in range(len(tokens) - 1, -1, -1):
        semicolons[k] = k if tokens[k].group() == ";" else semicolons[k + 1]
    found: dict[str, UniformDecl] = {}
    k = 0
    while k < len(tokens):
        if tokens[k].group() != "uniform":
            k += 1
            continue
        declaration = _declaration(tokens, k, text, semicolons)
        if declaration is None:
            k += 1
            continue
        glsl_type, names, init, k = declaration
        default = _literal(glsl_type, init) if init is not None and len(names) == 1 else None
        for name in names:
            if name not in found:
                found[name] = UniformDecl(name, glsl_type, default)
    return tuple(found.values())


def parse_uniforms(source: str) -> list[tuple[str, str]]:
    """`(name, glsl_type)` for each supported uniform declared in GLSL `source`.

    Only declarations of the types a pin type exposes (nodes.types) are reported, in source order,
    each name once. Comments are ignored; arrays, structs and other types are skipped.
    """
    return [(decl.name, decl.type) for decl in uniform_declarations(source)]


def _number(text: str) -> float | None:
    """A GLSL number literal such as `1.5`, `-2`, `3e-2` or `0.5f`, or None."""
    text = text.strip().removesuffix("f").removesuffix("F")
    if not text or len(text) > 64 or not set(text) <= _NUMBER_CHARS:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def _literal(glsl_type: str, text: str) -> Any:
    """The value of an initializer such as `1.5`, `true` or `vec3(1.0, 0.5, 0.0)`, or None."""
    text = text.strip()
    if glsl_type == "bool":
        return {"true": True, "false": False}.get(text)
    dimension = _DIMENSIONS.get(glsl_type)
    if dimension is None:
        return None
    if dimension > 1:
        inner = text.removeprefix(glsl_type).lstrip()
        if inner == text or not (inner.startswith("(") and inner.endswith(")")):
            return None
        text = inner[1:-1]
    found = [_number(part) for part in text.split(",")]
    numbers = [number for number in found if number is not None]
    if len(numbers) != len(found):
        return None
    if glsl_type == "int":
        return int(numbers[0]) if len(numbers) == 1 and numbers[0].is_integer() else None
    if dimension == 1:
        return numbers[0] if len(numbers) == 1 else None
    if len(numbers) == 1:
        numbers = numbers * dimension  # vec3(0.5) fills every component
    return tuple(numbers) if len(numbers) == dimension else None
