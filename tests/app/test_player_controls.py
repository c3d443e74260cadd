"""`patchbay run --headless` plays bindings: the player steps the engine, whose controls apply
before every frame (a fake OSC service stands for the network here; the engine tests use real
loopback packets)."""

from __future__ import annotations

import io

import pytest

from app.engine.player import play_headless
from evaluators.services.registry import FACTORIES
from nodes import Patch
from nodes.document.bindings import Binding
from tests.evaluators.test_controls import FakeService


def test_a_headless_run_plays_bindings(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeService()
    monkeypatch.setitem(FACTORIES, "osc", lambda ctx: fake)
    patch = Patch()
    patch.add_node("input.float", {"value": 1.0, "max": 10.0}, node_id="knob")
    patch.set_binding("binding1", Binding("osc:/knob", "knob", "value", 0.0, 10.0))
    out = io.StringIO()

    def sleep(seconds: float) -> None:  # between frames: a message arrives
        fake.send("osc:/knob", 0.5)

    play_headless(patch, 3, 60.0, ["knob"], out=out, realtime=True,
                  clock=lambda: 0.0, sleep=sleep)  # fmt: skip
    assert out.getvalue().splitlines() == ["0 knob.out=1.0", "1 knob.out=5.0", "2 knob.out=5.0"]
    assert fake.listened == {"/knob"}
