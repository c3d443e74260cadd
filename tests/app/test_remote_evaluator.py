"""The editor's view of an engine process satisfies the same Evaluator protocol as the local
evaluators: statuses, classes and modes come back as the protocol's enums, and text a newer or
broken engine sends never raises in the editor."""

from __future__ import annotations

from typing import Any

from app.engine.client import RemoteEvaluator
from app.engine.protocol.messages import Report
from evaluators import Evaluator, EvaluatorMode, NodeClass, NodeStatus


def report(**fields: Any) -> Report:
    return Report(**{"mode": "flat", "frame_ms": 2.0, "build_ms": 30.0, "frame": 7, **fields})


def test_a_remote_evaluator_is_an_evaluator() -> None:
    remote = RemoteEvaluator()
    assert isinstance(remote, Evaluator)
    remote.update(report(nodes={"a": ["HOT", "ok", None], "b": ["CONST", "failed", "boom"]}), [])
    assert remote.mode is EvaluatorMode.FLAT
    assert remote.last_frame_seconds == 0.002 and remote.last_build_seconds == 0.03
    assert remote.status("a") is NodeStatus.OK and remote.node_class("a") is NodeClass.HOT
    assert remote.status("b") is NodeStatus.FAILED and remote.error("b") == "boom"
    assert remote.status("unreported") is NodeStatus.IDLE
    remote.disconnected("engine exited")
    assert remote.problem == "engine exited"


def test_unknown_text_from_the_engine_falls_back() -> None:
    remote = RemoteEvaluator()
    remote.update(report(mode="warp", nodes={"a": ["TEPID", "exploded", None]}), [])
    assert remote.mode is EvaluatorMode.LAZY
    assert remote.status("a") is NodeStatus.IDLE and remote.node_class("a") is NodeClass.CONST


def test_states_count_only_the_reports_that_change_a_node() -> None:
    """An idle show's reports repeat the same statuses: the editor redraws node colours only
    when `states` moves."""
    remote = RemoteEvaluator()
    remote.update(report(ids=["a", "b"], nodes={"a": ["HOT", "ok", None]}), [])
    first = remote.states
    assert first >= 1
    for _ in range(5):  # the same statuses again, and the same ids
        remote.update(report(ids=["a", "b"], nodes={"a": ["HOT", "ok", None]}), [])
        remote.update(report(nodes={"b": []}), [])
    assert remote.states == first and remote.reports == 11
    remote.update(report(nodes={"b": ["CONST", "failed", "boom"]}), [])
    assert remote.states == first + 1
    remote.update(report(ids=["a"]), [])  # b is gone
    assert remote.states == first + 2 and remote.nodes() == {"a"}
