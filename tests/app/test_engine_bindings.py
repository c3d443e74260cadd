"""The engine's side of what the editor's bindings and allow-send dialog send: a binding edit
reaches the engine's copy of the patch without a resync, and `allow_send` lets a playing
`osc.out` send (and stops it again)."""

from __future__ import annotations

import socket

from app.engine.engine import Engine
from evaluators import NodeStatus
from nodes import Patch
from nodes.document.bindings import Binding
from tests.app.test_engine import EditorEnd, chain_patch
from tests.waiting import TIMEOUT_S, poll_until


def test_binding_edits_reach_the_engine_without_a_resync() -> None:
    patch = chain_patch()
    engine = Engine(Patch())
    editor = EditorEnd(engine, patch)
    binding = Binding("midi:cc:1:7", "add", "b", 2.0, 20.0, curve="exponential", device="nano")
    patch.set_binding("binding1", binding)
    editor.send_edits()
    assert poll_until(lambda: engine.step() or "binding1" in engine.patch.bindings, TIMEOUT_S)
    assert engine.patch.bindings == {"binding1": binding}
    patch.set_binding("binding1", None)
    editor.send_edits()
    assert poll_until(lambda: engine.step() or not engine.patch.bindings, TIMEOUT_S)
    engine.step()
    assert engine.patch.value_revision == patch.value_revision
    assert not any(m["type"] in ("resync", "error") for m in editor.received)
    engine.close()


def test_allow_send_lets_osc_out_send_and_stops_it_again() -> None:
    listener = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    listener.bind(("127.0.0.1", 0))
    listener.settimeout(0.05)
    port = listener.getsockname()[1]
    patch = Patch()
    patch.add_node("time.frame", None, node_id="frame")
    patch.add_node("osc.out", {"port": port, "address": "/frame"}, node_id="send")
    patch.connect("frame", "out", "send", "in")
    engine = Engine(Patch(), services={"osc_port": 0})
    editor = EditorEnd(engine, patch)

    def received() -> bool:
        try:
            return bool(listener.recv(1024))
        except TimeoutError:
            return False

    def failed() -> bool:
        engine.step()
        return "send" in engine.patch.nodes and engine.evaluator.status("send") == NodeStatus.FAILED

    assert poll_until(failed, TIMEOUT_S)
    assert "not allowed" in (engine.evaluator.error("send") or "")
    assert not received()
    editor.channel.send({"type": "allow_send", "allow": True})
    assert poll_until(lambda: engine.step() or received(), TIMEOUT_S)
    editor.channel.send({"type": "allow_send", "allow": False})
    assert poll_until(failed, TIMEOUT_S)
    engine.close()
    listener.close()
