"""The editor's view of an engine process satisfies the same Evaluator protocol as the local
evaluators: statuses, classes and modes come back as the protocol's enums, and text a newer or
broken engine sends never raises in the editor."""

from __future__ import annotations

from app.engine_client import RemoteEvaluator
from evaluators import Evaluator, EvaluatorMode, NodeClass, NodeStatus


def report(**fields: object) -> dict[str, object]:
    return {"mode": "flat", "frame_ms": 2.0, "build_ms": 30.0, "frame": 7, **fields}


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
