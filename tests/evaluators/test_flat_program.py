"""A compiled program can check itself and draw itself (for debugging)."""

from __future__ import annotations

from importlib import resources

import pytest

from app.bench.patches import hot_chain
from evaluators import ExecutionContext, FlatProgram, PatchSnapshot
from nodes import load_patch


def compile_demo() -> FlatProgram:
    demo = resources.files("resources") / "examples" / "demo.patchbay"
    patch = load_patch(str(demo))
    return FlatProgram(PatchSnapshot.of(patch), ExecutionContext())


def test_a_compiled_program_is_valid() -> None:
    compile_demo().validate()
    FlatProgram(PatchSnapshot.of(hot_chain(200)), ExecutionContext()).validate()


def test_validate_finds_steps_out_of_order() -> None:
    program = FlatProgram(PatchSnapshot.of(hot_chain(20)), ExecutionContext())
    program.hot_steps.reverse()
    with pytest.raises(ValueError, match="before anything writes them"):
        program.validate()


def test_to_dot_shows_classes_and_idle_nodes() -> None:
    dot = compile_demo().to_dot()
    assert dot.startswith("digraph patch {") and dot.endswith("}")
    assert "fillcolor=orange" in dot  # HOT
    assert "fillcolor=lightblue" in dot  # CONST
    assert "color=grey" in dot  # nodes no sink needs (spare, unused_idea, ...)
