"""The evaluators that cross-strategy tests run: one list and one way to make them.

Every kind `evaluators.make_evaluator` knows is tested (a new strategy is picked up here without
editing any test), with options that suit tests: the dual evaluator starts its background build
on the frame after a structural edit instead of waiting for edits to settle. The root conftest
turns this into the `make_evaluator` fixture, parametrized over the kinds.
"""

from __future__ import annotations

from typing import Any

from evaluators import EVALUATOR_KINDS, Evaluator, EvaluatorKind, make_evaluator
from nodes import Patch

__all__ = ["EVALUATOR_KINDS", "evaluator_for_tests"]

TEST_OPTIONS: dict[str, dict[str, Any]] = {"dual": {"debounce": 0.0}}


def evaluator_for_tests(kind: EvaluatorKind, patch: Patch, **options: Any) -> Evaluator:
    """`make_evaluator(kind, patch, **options)` with the test defaults above (`options` win)."""
    return make_evaluator(kind, patch, **{**TEST_OPTIONS.get(kind, {}), **options})
