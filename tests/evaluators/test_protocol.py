"""Every evaluator kind satisfies the `Evaluator` protocol: checked at runtime and by using every
member the way a client (the editor's status bar, canvas and inspector) does; the factory."""

from __future__ import annotations

import pytest

from evaluators import (
    EVALUATOR_KINDS,
    Evaluator,
    EvaluatorMode,
    FlatEvaluator,
    NodeClass,
    NodeStatus,
    make_evaluator,
)
from nodes import Patch


def small_patch() -> tuple[Patch, dict[str, str]]:
    """A HOT branch, a USER node, a CONST node that fails, and a node nobody needs."""
    patch = Patch()
    ids = {
        "time": patch.add_node("time.seconds"),
        "user": patch.add_node("input.float", {"value": 2.0, "max": 4.0}),
        "add": patch.add_node("math.add"),
        "sink": patch.add_node("output.value"),
        "fail": patch.add_node("debug.fail"),
        "fail_sink": patch.add_node("output.value"),
        "unused": patch.add_node("value.float"),
    }
    patch.connect(ids["time"], "out", ids["add"], "a")
    patch.connect(ids["user"], "out", ids["add"], "b")
    patch.connect(ids["add"], "out", ids["sink"], "in")
    patch.connect(ids["fail"], "out", ids["fail_sink"], "in")
    return patch, ids


def test_kinds_are_lazy_flat_dual() -> None:
    assert EVALUATOR_KINDS == ("lazy", "flat", "dual")


def test_every_kind_satisfies_the_protocol(make_evaluator) -> None:
    patch, ids = small_patch()
    evaluator = make_evaluator(patch)
    assert isinstance(evaluator, Evaluator)
    assert evaluator.last_build_seconds >= 0.0
    evaluator.run_frame(0.5, 0)
    evaluator.run_frame(1.0, 1)

    assert isinstance(evaluator.mode, EvaluatorMode)
    assert evaluator.last_frame_seconds > 0.0  # updated by every kind
    assert evaluator.output(ids["sink"]) == 3.0
    assert evaluator.output(ids["add"], pin="out") == 3.0

    statuses = {name: evaluator.status(node_id) for name, node_id in ids.items()}
    assert all(isinstance(status, NodeStatus) for status in statuses.values())
    assert statuses["time"] == NodeStatus.OK == "ok"  # members are their strings
    assert statuses["fail"] == NodeStatus.FAILED
    assert statuses["unused"] == NodeStatus.IDLE

    classes = {name: evaluator.node_class(node_id) for name, node_id in ids.items()}
    assert all(isinstance(cls, NodeClass) for cls in classes.values())
    assert (classes["time"], classes["user"], classes["add"]) == ("HOT", "USER", "HOT")
    assert classes["unused"] == NodeClass.CONST

    assert evaluator.error(ids["sink"]) is None
    assert evaluator.error(ids["fail"]) == "RuntimeError: this node fails on purpose"

    evaluator.watch([ids["unused"]])
    evaluator.run_frame(1.5, 2)
    assert evaluator.status(ids["unused"]) in (NodeStatus.OK, NodeStatus.CACHED)
    evaluator.close()


def test_modes_of_the_single_strategies() -> None:
    patch, _ = small_patch()
    lazy, flat = make_evaluator("lazy", patch), make_evaluator("flat", patch)
    try:
        assert lazy.mode == EvaluatorMode.LAZY and lazy.last_build_seconds == 0.0
        flat.run_frame(0.0, 0)
        assert flat.mode == "flat" and flat.last_build_seconds > 0.0
    finally:
        lazy.close()
        flat.close()


def test_factory_passes_options_and_refuses_unknown_kinds() -> None:
    patch, _ = small_patch()
    flat = make_evaluator("flat", patch, caching=False)
    assert isinstance(flat, FlatEvaluator) and flat.caching is False
    flat.close()
    with pytest.raises(ValueError, match="unknown evaluator kind 'eager'"):
        make_evaluator("eager", patch)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        make_evaluator("lazy", patch, debounce=0.1)


def test_text_from_outside_becomes_members() -> None:
    assert NodeStatus("deferred") is NodeStatus.DEFERRED
    assert NodeClass("HOT") is NodeClass.HOT
    with pytest.raises(ValueError):
        NodeStatus("exploded")
