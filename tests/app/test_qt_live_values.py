"""The editor and live controls: `live_values` from an engine become live edits of the document
(inspector follows, no undo step, not counted, not sent back); without an engine the editor's own
controls runtime plays bindings over loopback OSC."""

from __future__ import annotations

from pythonosc.udp_client import SimpleUDPClient

from nodes.document.bindings import Binding
from tests.app.conftest import played
from tests.app.test_qt_editor import slider_patch
from tests.evaluators.test_osc import free_udp_port


def test_live_values_are_live_edits_the_inspector_shows(editor, ui):
    ui.show_patch(editor, slider_patch())
    editor.canvas.select(["speed"])
    field = editor.inspector.pin_widget("value")
    revisions = (editor.patch.revision, editor.patch.value_revision)
    editor.live_control.apply_live_values(
        [["speed", "value", 3.5], ["ghost", "value", 1.0], "junk"], []
    )
    assert editor.patch.value("speed", "value") == 3.5
    assert field.number.value() == 3.5  # the inspector follows
    assert (editor.patch.revision, editor.patch.value_revision) == revisions
    assert editor.undo_stack.count() == 0  # not an edit of the person's to undo


def test_without_an_engine_the_editor_plays_bindings(editor, ui, qtbot):
    port = free_udp_port()
    patch = slider_patch()
    patch.update_settings(osc_port=port)
    patch.set_binding("binding1", Binding("osc:/speed", "speed", "value", 0.0, 4.0))
    ui.show_patch(editor, patch)
    editor.canvas.select(["speed"])
    assert "osc" in editor.engine.engine.ctx.services  # made by the first frame
    osc = editor.engine.engine.ctx.service("osc")
    SimpleUDPClient("127.0.0.1", port).send_message("/speed", 0.75)
    qtbot.waitUntil(lambda: osc.pending() > 0)  # received on the service's thread
    ui.run_frames(editor)  # drained at the start of the frame, played in it
    assert played(editor).output("out") == 30.0
    assert editor.inspector.pin_widget("value").number.value() == 3.0
