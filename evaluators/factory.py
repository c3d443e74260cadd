"""`make_evaluator(kind, patch, **options)`: one place that turns a strategy name into an evaluator.

Kinds: "lazy" (recursion from the sinks, no build), "flat" (a compiled program, rebuilt on the
frame after a structural edit), "dual" (lazy right after a structural edit, flat once a background
build lands; what the editor runs). Options are passed to the evaluator's constructor: `context`
and `gpu` for all three, `caching` for flat, `debounce` and `background` for dual. A new strategy
is added here and nowhere outside `evaluators/`.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from evaluators.dual import DualEvaluator
from evaluators.flat.program import FlatEvaluator
from evaluators.lazy import LazyEvaluator
from evaluators.protocol import Evaluator
from nodes import Patch

EvaluatorKind = Literal["lazy", "flat", "dual"]
EVALUATOR_KINDS: tuple[EvaluatorKind, ...] = get_args(EvaluatorKind)

_CLASSES: dict[str, type[LazyEvaluator | FlatEvaluator | DualEvaluator]] = {
    "lazy": LazyEvaluator,
    "flat": FlatEvaluator,
    "dual": DualEvaluator,
}


def make_evaluator(kind: EvaluatorKind, patch: Patch, **options: Any) -> Evaluator:
    """A new evaluator of `kind` running `patch`; ValueError for an unknown kind, TypeError for an
    option that kind does not take."""
    try:
        cls = _CLASSES[kind]
    except KeyError:
        known = ", ".join(EVALUATOR_KINDS)
        raise ValueError(f"unknown evaluator kind {kind!r} (known: {known})") from None
    return cls(patch, **options)
