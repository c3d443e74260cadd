"""Control sources as plug-ins: OSC and MIDI are the two registered sources, the runtime holds no
node type id, and a new family of controls (here a game pad) works by registering its grammar,
its source and its service only: its bindings load, its service opens when the patch binds it,
its events drive bound pins and learn, and its feedback sees pins changed by other means."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import evaluators.controls.runtime as controls_module
from evaluators.controls.sources import (
    CONTROL_SOURCES,
    BindingsBySource,
    ControlFrame,
    ControlSource,
    InputNodes,
)
from evaluators.services.registry import FACTORIES
from nodes import Patch, PatchValueError
from nodes.document.bindings import SOURCE_GRAMMARS, Binding, checked_source
from tests.evaluators.test_controls import FakeService, Rig


def test_osc_and_midi_are_the_registered_sources_in_their_order() -> None:
    assert list(CONTROL_SOURCES)[:2] == ["osc", "midi"]
    assert {"osc", "midi"} <= set(FACTORIES) and {"osc", "midi"} <= set(SOURCE_GRAMMARS)


def test_the_runtime_knows_no_source_by_name() -> None:
    runtime = inspect.getsource(controls_module).split('"""', 2)[2]  # the code, not the note
    for name in ('"osc', '"midi', "osc.in", "midi.cc", "midi.note"):
        assert name not in runtime


class PadControls(ControlSource):
    """A game pad: `pad:axis:<n>` positions; it sends rumble back for pins changed otherwise."""

    name = "pad"

    def __init__(self, runtime: Any) -> None:
        super().__init__(runtime)
        self.bound = False
        self.rumbled: list[set[tuple[str, str]]] = []

    def plan(self, patch: Patch, bindings: BindingsBySource, inputs: InputNodes) -> bool:
        self.bound = any(source.startswith("pad:") for source in bindings)
        return self.bound

    def take(self, event: Any, frame: ControlFrame) -> None:
        frame.positions[(event.source, event.device)] = event.value

    def feedback_on(self) -> bool:
        return True

    def after_frame(self, service: Any, changed: set[tuple[str, str]]) -> None:
        if changed:
            self.rumbled.append(changed)


@pytest.fixture
def pad(monkeypatch: pytest.MonkeyPatch) -> FakeService:
    fake = FakeService()
    monkeypatch.setitem(SOURCE_GRAMMARS, "pad", (lambda s: s.startswith("pad:axis:"), "pad:axis:N"))
    monkeypatch.setitem(CONTROL_SOURCES, "pad", PadControls)
    monkeypatch.setitem(FACTORIES, "pad", lambda ctx: fake)
    for other in ("osc", "midi"):  # learning opens every source: no real port or device here
        monkeypatch.setitem(FACTORIES, other, lambda ctx: FakeService())
    return fake


def test_a_new_control_family_is_a_grammar_a_source_and_a_service(pad: FakeService) -> None:
    assert checked_source("pad:axis:2") == "pad:axis:2"
    with pytest.raises(PatchValueError, match="pad:axis:N"):
        checked_source("pad:button")
    patch = Patch()
    patch.add_node("input.float", {"value": 0.0, "min": 0.0, "max": 100.0}, node_id="k")
    patch.set_binding("b1", Binding("pad:axis:2", "k", "value", 0.0, 10.0))
    rig = Rig(patch)
    rig.frame()  # the binding opens the pad's service
    assert "pad" in rig.ctx.services
    pad.send("pad:axis:2", 0.5)
    rig.frame()
    assert rig.value("k") == 5.0
    source = rig.controls._sources["pad"]
    assert isinstance(source, PadControls) and source.bound
    patch.set_value("k", "value", 7.0)  # by other means than the pad: fed back
    rig.frame()
    assert source.rumbled == [{("k", "value")}]


def test_learn_listens_to_a_new_family_too(pad: FakeService) -> None:
    patch = Patch()
    patch.add_node("input.float", None, node_id="k")
    rig = Rig(patch)
    rig.controls.learn("k", "value")
    rig.frame()
    pad.send("pad:axis:0", 1.0, "pad 1")
    rig.frame()
    assert rig.controls.take_learned() == {
        "node": "k",
        "pin": "value",
        "source": "pad:axis:0",
        "device": "pad 1",
    }
