"""The HOT / USER / CONST and cache-key rule, `node_info`, and its two users: the live analysis the
lazy walker reads and the snapshot analysis flat programs are compiled with, which must agree on
every node, edits included."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluators import CONST, HOT, USER, GraphIR, PatchSnapshot
from evaluators.graph.analysis import LiveAnalysis, analyze, node_info
from nodes import Determinism
from tests.patch_strategies import random_edit, random_patch

DET, USR, NONDET = Determinism.DETERMINISTIC, Determinism.USER_INPUT, Determinism.NONDETERMINISTIC


def test_a_node_is_its_own_class_at_least_and_takes_the_highest_of_its_sources() -> None:
    assert node_info("math.add", DET, 1, [None, None])[0] == CONST
    assert node_info("ui.slider", USR, 1, [])[0] == USER
    assert node_info("math.add", DET, 1, [(USER, 5, "out"), (CONST, 6, "out")])[0] == USER
    assert node_info("math.add", USR, 1, [(CONST, 6, "out")])[0] == USER
    assert node_info("math.add", DET, 1, [(HOT, 0, "out"), (USER, 5, "out")]) == (HOT, 0)
    assert node_info("time.seconds", NONDET, 1, []) == (HOT, 0)


def test_the_key_changes_with_type_stamp_source_key_and_source_pin() -> None:
    base = node_info("math.add", DET, 1, [(CONST, 7, "out"), None])[1]
    assert base == node_info("math.add", DET, 1, [(CONST, 7, "out"), None])[1]
    changed = [
        node_info("math.mul", DET, 1, [(CONST, 7, "out"), None]),
        node_info("math.add", DET, 2, [(CONST, 7, "out"), None]),
        node_info("math.add", DET, 1, [(CONST, 8, "out"), None]),
        node_info("math.add", DET, 1, [(CONST, 7, "other"), None]),
        node_info("math.add", DET, 1, [None, (CONST, 7, "out")]),
    ]
    assert all(key != base for _, key in changed)


def test_a_stateful_node_has_a_key_of_its_own_path() -> None:
    """Equal stamps and inputs (the same body node in two instances) give equal keys, unless the
    node keeps state: then its path is part of the key."""
    sources = [(CONST, 7, "out"), (CONST, 8, "out")]
    shared = node_info("logic.gate", DET, 1, sources)
    a = node_info("logic.gate", DET, 1, sources, "g1/gate")
    b = node_info("logic.gate", DET, 1, sources, "g2/gate")
    assert a == node_info("logic.gate", DET, 1, sources, "g1/gate")
    assert len({shared[1], a[1], b[1]}) == 3 and a[0] == b[0] == CONST


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_live_and_snapshot_analysis_agree_on_every_node_through_edits(
    data: st.DataObject,
) -> None:
    patch = random_patch(data)
    live = LiveAnalysis(patch)
    unsubscribe = patch.subscribe(live.on_event)
    try:
        for _ in range(data.draw(st.integers(1, 4))):
            ir = GraphIR(PatchSnapshot.of(patch))
            classes, keys = analyze(ir, ir.topological_order())
            for i, node_id in enumerate(ir.ids):
                assert live.info(node_id) == (classes[i], keys[i]), node_id
            for _ in range(data.draw(st.integers(1, 3))):
                random_edit(data, patch)
    finally:
        unsubscribe()
