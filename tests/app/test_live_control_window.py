"""Live control end to end: the editor window and its engine process, an OSC fader sent over
loopback by a python-osc client in the test.

Learn from the inspector's pin menu, move the fader: the engine learns its address, the window
adds the binding (one undo step, taking over by pick-up) and sends it back; once the fader has
crossed the pin's value, it drives the pin in the engine,
and the value comes back into the document as a live edit (no undo step, not sent back). Waits are
by deadline: packets are resent until the engine shows it has them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pythonosc.udp_client import SimpleUDPClient

from app.engine.client import EngineProcess
from app.qt.launch import launch_editor
from app.qt.panels.bindings import LEARN_TEXT
from nodes import Patch, save_patch
from nodes.document.bindings import Binding
from tests.app.test_qt_bindings import choose, inspect
from tests.evaluators.test_osc import free_udp_port


def knob_patch() -> Patch:
    patch = Patch()
    patch.add_node("input.float", {"value": 2.0, "min": 0.0, "max": 10.0}, (0, 0), node_id="knob")
    patch.add_node("math.mul", {"b": 2.0}, (250, 0), node_id="double")
    patch.add_node("output.value", None, (500, 0), node_id="out")
    patch.connect("knob", "out", "double", "a")
    patch.connect("double", "out", "out", "in")
    return patch


def test_learn_binds_an_osc_fader_that_then_plays_the_pin(qtbot: Any, tmp_path: Path) -> None:
    port = free_udp_port()
    save_patch(knob_patch(), tmp_path / "knob.patchbay")
    window = launch_editor(
        str(tmp_path / "knob.patchbay"), state_dir=tmp_path, engine_args=["--osc-port", str(port)]
    )
    qtbot.addWidget(window)
    window.file_actions.ask_unsaved = lambda: "discard"
    fader = SimpleUDPClient("127.0.0.1", port)
    try:
        remote = window.evaluator
        qtbot.waitUntil(lambda: remote.nodes() == {"knob", "double", "out"}, timeout=30_000)
        inspect(window, "knob")
        choose(window, window.inspector.pin_label("value"), LEARN_TEXT)

        def learned() -> bool:
            fader.send_message("/fader/9", 0.5)  # until the engine has armed learn and seen it
            return bool(window.patch.bindings)

        qtbot.waitUntil(learned, timeout=30_000)
        binding = Binding("osc:/fader/9", "knob", "value", 0.0, 10.0, takeover="pickup")
        assert window.patch.bindings == {"binding1": binding}
        steps = window.undo_stack.count()
        revision = window.patch.value_revision
        assert window.patch.value("knob", "value") == 2.0  # the fader at 0.5 moved nothing

        window.canvas.select(["double"])  # watched: its value comes back in reports

        sent = [0.3, 0.1]

        def picked_up() -> bool:  # the fader moves across the knob's 2.0 (0.2 of its travel)
            sent.reverse()
            fader.send_message("/fader/9", sent[0])
            value = window.patch.value("knob", "value")  # (OSC sends 32-bit floats)
            return value in (pytest.approx(1.0), pytest.approx(3.0))

        def played() -> bool:
            fader.send_message("/fader/9", 0.25)
            return window.patch.value("knob", "value") == 2.5

        qtbot.waitUntil(picked_up, timeout=30_000)

        qtbot.waitUntil(played, timeout=30_000)  # into the document, from the engine
        qtbot.waitUntil(lambda: remote.output("double") == 5.0, timeout=30_000)
        assert window.undo_stack.count() == steps  # live values are no undo steps
        assert window.patch.value_revision == revision  # nor edits the engine must hear of
        window.undo_stack.undo()  # the binding goes: the fader no longer plays the knob
        assert window.patch.bindings == {}
        fader.send_message("/fader/9", 1.0)
        window.patch.set_value("knob", "value", 1.0)  # an edit made after it, in the editor
        qtbot.waitUntil(lambda: remote.output("double") == 2.0, timeout=30_000)
        assert window.patch.value("knob", "value") == 1.0
    finally:
        window.close()
        EngineProcess(tmp_path / "engine").stop()
