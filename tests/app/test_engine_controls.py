"""Live controls in the engine: bindings played over loopback OSC (a python-osc client in the test
sends to the engine's port), live values reaching an editor link, learn, the `binding` edit op,
and controls applied while paused. The editor is played by the test through a pipe
(tests/app/test_engine.py `EditorEnd`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pythonosc.udp_client import SimpleUDPClient

from app.engine.engine import Engine
from app.engine.protocol.channel import EditBatch, ProtocolError, apply_edits, decode_value
from app.engine.protocol.messages import Edits
from nodes import Patch, PatchError
from nodes.document.bindings import Binding
from tests.app.test_engine import EditorEnd
from tests.evaluators.test_osc import free_udp_port
from tests.waiting import poll_until


def bound_patch() -> Patch:
    """A slider bound to OSC /knob (0..10) feeding a sink, and an `osc.in` on /go."""
    patch = Patch()
    patch.add_node("input.float", {"value": 1.0, "max": 10.0}, node_id="knob")
    patch.add_node("output.value", node_id="out")
    patch.connect("knob", "out", "out", "in")
    patch.add_node("osc.in", {"address": "/go"}, node_id="go")
    patch.set_binding("binding1", Binding("osc:/knob", "knob", "value", 0.0, 10.0))
    return patch


@pytest.fixture
def port() -> int:
    return free_udp_port()


@pytest.fixture
def engine(port: int) -> Iterator[Engine]:
    made = Engine(bound_patch(), services={"osc_port": port})
    yield made
    made.close()


def connect(engine: Engine, document: Patch) -> EditorEnd:
    """An editor whose patch the engine plays. The engine's first report may come before the
    editor's patch arrives, and that replaces the engine's patch (dropping live values made on
    it): so wait for the replacement, not for a report."""
    before = engine.patch
    editor = EditorEnd(engine, document)
    assert poll_until(lambda: (engine.step(), engine.patch is not before)[1])
    return editor


def apply_live_values(patch: Patch, message: dict) -> None:
    """What the editor does with a `live_values` message."""
    for node_id, pin, value in message["values"]:
        patch.set_value(node_id, pin, decode_value(value, []), live=True)


def test_a_binding_drives_a_pin_and_live_values_reach_the_editor(engine: Engine, port: int) -> None:
    document = bound_patch()
    editor = connect(engine, document)
    editor.read_until("report")
    client = SimpleUDPClient("127.0.0.1", port)
    client.send_message("/knob", 0.75)
    client.send_message("/go", 0.5)
    message = editor.read_until("live_values", lambda m: ["knob", "value", 7.5] in m["values"])
    assert engine.patch.value("knob", "value") == 7.5
    assert poll_until(lambda: (engine.step(), engine.evaluator.output("out"))[1] == 7.5)
    apply_live_values(document, message)
    assert document.value("knob", "value") == 7.5
    # the editor's live edits are neither counted nor sent: later edits stay in step
    document.set_value("knob", "max", 20.0)
    editor.read_until("report", lambda m: m["applied"][0] == editor.edits.sent)
    assert not [m for m in editor.received if m["type"] in ("resync", "error")]
    assert engine.patch.value("knob", "max") == 20.0


def test_osc_in_nodes_follow_their_address(engine: Engine, port: int) -> None:
    editor = connect(engine, bound_patch())
    editor.read_until("report")
    SimpleUDPClient("127.0.0.1", port).send_message("/go", 0.25)
    editor.read_until("live_values", lambda m: ["go", "value", 0.25] in m["values"])
    assert engine.patch.value("go", "value") == 0.25


def test_learn_catches_any_address_once(engine: Engine, port: int) -> None:
    editor = connect(engine, bound_patch())
    editor.read_until("report")
    editor.channel.send({"type": "learn", "node": "knob", "pin": "max"})
    assert poll_until(lambda: (engine.step(), engine.controls.learning)[1])
    client = SimpleUDPClient("127.0.0.1", port)
    client.send_message("/surface/fader/3", 0.5)  # an address nothing listens to
    learned = editor.read_until("learned")
    assert learned == {"type": "learned", "node": "knob", "pin": "max",
                       "source": "osc:/surface/fader/3", "device": ""}  # fmt: skip
    client.send_message("/surface/fader/4", 0.5)
    client.send_message("/knob", 0.5)
    editor.read_until("live_values", lambda m: ["knob", "value", 5.0] in m["values"])
    assert [m for m in editor.received if m["type"] == "learned"] == [learned]  # once
    assert list(engine.patch.bindings) == ["binding1"]  # the editor adds the binding
    editor.channel.send({"type": "learn", "node": "knob", "pin": "max"})
    assert poll_until(lambda: (engine.step(), engine.controls.learning)[1])
    editor.channel.send({"type": "learn", "node": None})
    assert poll_until(lambda: (engine.step(), not engine.controls.learning)[1])


def test_the_binding_op_adds_and_removes_bindings_in_step() -> None:
    editor_patch = bound_patch()
    engine_patch = editor_patch.copy()
    batch = EditBatch(editor_patch)
    editor_patch.subscribe(batch.add)
    editor_patch.set_binding(
        "binding2", Binding("midi:cc:1:7", "knob", "max", 1, 100, "exponential", "scale", "nano")
    )
    editor_patch.set_binding("binding1", None)
    message, blobs = batch.take() or (Edits(0, 0, 0, []), [])
    assert [op["op"] for op in message.ops] == ["binding", "binding"]
    assert message.ops[1] == {"op": "binding", "id": "binding1", "binding": None}
    assert apply_edits(engine_patch, message, blobs)
    assert engine_patch.bindings == editor_patch.bindings


def test_controls_apply_while_paused(engine: Engine, port: int) -> None:
    editor = connect(engine, bound_patch())
    editor.read_until("report")
    engine.set_paused(True)
    frame = engine.frame
    SimpleUDPClient("127.0.0.1", port).send_message("/knob", 0.25)
    editor.read_until("live_values", lambda m: ["knob", "value", 2.5] in m["values"])
    assert engine.patch.value("knob", "value") == 2.5
    assert engine.frame == frame  # no frame ran, as with an inspector edit while paused


def test_a_control_bound_to_a_preset_recalls_it(port: int) -> None:
    patch = bound_patch()
    patch.presets["loud"] = {("knob", "value"): 9.0, ("ghost", "value"): 1.0}
    patch.set_binding("binding2", Binding("osc:/scene/loud", "@preset", "loud"))
    engine = Engine(patch, services={"osc_port": port})
    try:
        editor = connect(engine, patch.copy())
        editor.read_until("report")
        SimpleUDPClient("127.0.0.1", port).send_message("/scene/loud", 1.0)
        editor.read_until("live_values", lambda m: ["knob", "value", 9.0] in m["values"])
        assert engine.patch.value("knob", "value") == 9.0
        assert not [m for m in editor.received if m["type"] in ("resync", "error")]
    finally:
        engine.close()


def test_a_malformed_binding_op_is_refused_with_a_reason() -> None:
    patch = bound_patch()
    rev, vrev = patch.revision, patch.value_revision + 1
    with pytest.raises(PatchError, match="binding source 'nope'"):
        apply_edits(patch, Edits(1, rev, vrev, [{"op": "binding", "id": "b", "binding": {
            "source": "nope", "node": "knob", "pin": "value"}}]), [])  # fmt: skip
    with pytest.raises(ProtocolError, match="edits binding: malformed"):
        apply_edits(patch, Edits(1, rev, vrev, [{"op": "binding", "binding": None}]), [])
    assert list(patch.bindings) == ["binding1"]


def test_an_editors_edit_wins_over_live_values_it_had_not_heard_of(
    engine: Engine, port: int
) -> None:
    """A fader moves while the person types a value: a `live_values` message on its way carries
    the last edits the engine had applied, so the editor keeps the value it typed after them, and
    the engine drops a pending live value of the pin when the typed edit arrives."""
    document = bound_patch()
    editor = connect(engine, document)
    editor.read_until("report")
    client = SimpleUDPClient("127.0.0.1", port)
    client.send_message("/knob", 0.5)
    in_flight = editor.read_until("live_values", lambda m: ["knob", "value", 5.0] in m["values"])
    document.set_value("knob", "value", 2.0)  # typed before that message reached the editor
    assert editor.edits.edited_after("knob", "value", in_flight["seq"])  # so the editor skips it
    assert not editor.edits.edited_after("out", "in", in_flight["seq"])
    client.send_message("/knob", 0.75)  # live again in the engine before the edit arrives
    assert poll_until(lambda: (engine.step(), engine.patch.value("knob", "value"))[1] == 7.5)
    editor.send_edits()
    assert poll_until(lambda: (engine.step(), engine.patch.value("knob", "value"))[1] == 2.0)
    assert ("knob", "value") not in engine._live_values  # the typed value is the newer one
    latest = editor.read_until("report", lambda m: m["applied"][0] == editor.edits.sent)
    assert latest["applied"][0] == editor.edits.sent


def test_learn_for_a_preset_or_the_crossfader_answers_with_that_target(
    engine: Engine, port: int
) -> None:
    editor = connect(engine, bound_patch())
    editor.read_until("report")
    client = SimpleUDPClient("127.0.0.1", port)
    for node, pin, address in (("@preset", "loud", "/scene/1"), ("@crossfader", "position", "/x")):
        editor.channel.send({"type": "learn", "node": node, "pin": pin})
        assert poll_until(lambda: (engine.step(), engine.controls.learning)[1])
        client.send_message(address, 1.0)
        learned = editor.read_until("learned", lambda m, node=node: m["node"] == node)
        assert learned == {"type": "learned", "node": node, "pin": pin, "source": f"osc:{address}",
                           "device": ""}  # fmt: skip
