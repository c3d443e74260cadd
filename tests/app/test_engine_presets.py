"""Presets in the engine: preset edits reach its copy as `preset` ops, and its deck recalls,
morphs and crossfades them as live values in the frame loop, a transition on the beat starting
on the next beat's frame."""

from __future__ import annotations

import pytest

from app.engine.engine import Engine
from app.engine.protocol.channel import EditBatch, ProtocolError, apply_edits
from app.engine.protocol.messages import Edits
from nodes import Patch, capture
from tests.app.test_engine import EditorEnd
from tests.waiting import TIMEOUT_S, poll_until


def preset_patch() -> tuple[Patch, str]:
    patch = Patch()
    patch.add_node("input.float", {"value": 0.0, "max": 100.0}, node_id="x")
    patch.add_node("input.toggle", {"value": False}, node_id="tint")
    patch.set_preset("A", capture(patch))
    patch.set_value("x", "value", 10.0)
    patch.set_value("tint", "value", True)
    patch.set_preset("B", capture(patch))
    return patch, "x"


def test_preset_edits_travel_as_ops_and_keep_the_revisions_equal() -> None:
    editor_patch, x = preset_patch()
    engine_patch = editor_patch.copy()
    batch = EditBatch(editor_patch)
    editor_patch.subscribe(batch.add)
    editor_patch.set_preset("C", {(x, "value"): 7.0, ("tint", "value"): True})
    editor_patch.set_preset("A", None)
    message, blobs = batch.take() or (Edits(0, 0, 0, []), [])
    assert [op["op"] for op in message.ops] == ["preset", "preset"]
    assert message.ops[0]["values"] == [[x, "value", 7.0], ["tint", "value", True]]
    assert message.ops[1] == {"op": "preset", "name": "A", "values": None}
    assert apply_edits(engine_patch, message, blobs)  # revisions agree
    assert engine_patch.presets == editor_patch.presets
    bad = Edits(1, 0, 0, [{"op": "preset", "name": "D", "values": [[x, "value"]]}])
    with pytest.raises(ProtocolError, match=r"\[node, pin, value\]"):
        apply_edits(engine_patch, bad, [])


def send(engine: Engine, editor: EditorEnd, message: dict) -> None:
    """Send `message` and wait until it is in the engine's inbox (the next step drains it)."""
    editor.channel.send(message)
    assert poll_until(lambda: not engine.inbox.empty(), TIMEOUT_S, interval=0.002)


def started_engine() -> tuple[Engine, EditorEnd, Patch]:
    patch, _ = preset_patch()
    patch.update_settings(bpm=120)
    engine = Engine(Patch())
    editor = EditorEnd(engine, patch)
    editor.read_until("report", lambda m: "x" in m.get("ids", []))
    return engine, editor, patch


def test_a_transition_on_the_beat_starts_on_the_next_beats_frame() -> None:
    engine, editor, _ = started_engine()
    x = lambda: engine.patch.value("x", "value")  # noqa: E731
    send(engine, editor, {"type": "preset", "name": "A"})  # a jump, now
    engine.step(0.0)
    assert x() == 0.0
    for frame in range(1, 40):
        engine.step(frame / 60)
    asked = {"type": "preset", "name": "B", "mode": "transition", "seconds": 1.0,
             "easing": "linear", "switch": "middle", "start": "beat"}  # fmt: skip
    send(engine, editor, asked)
    values = {}
    for frame in range(40, 121):  # asked at frame 40, mid-beat (a beat is 30 frames)
        engine.step(frame / 60)
        values[frame] = x()
    assert all(values[f] == 0.0 for f in range(40, 61))  # it starts at frame 60: still A
    assert values[61] == pytest.approx(10 / 60)
    assert values[90] == pytest.approx(5.0)  # the halfway point, from the beat
    assert values[120] == 10.0
    assert engine.patch.value_revision == editor.patch.value_revision  # live: not counted
    engine.close()


def test_morph_and_crossfade_messages_blend_presets_live() -> None:
    engine, editor, patch = started_engine()
    send(engine, editor, {"type": "morph", "weights": {"A": 0.25, "B": 0.75}})
    engine.step(1.0)
    assert engine.patch.value("x", "value") == pytest.approx(7.5)
    send(engine, editor, {"type": "crossfade", "a": "A", "b": "B", "position": 0.25})
    engine.step(1.1)
    assert engine.patch.value("x", "value") == pytest.approx(2.5)
    assert engine.presets.crossfade_pair == ("A", "B")
    engine.presets.set_crossfade(1.0)  # a control bound to @crossfader
    assert engine.patch.value("x", "value") == 10.0
    # An edit after live values: the revisions still agree, no resync is asked.
    patch.set_value("x", "value", 3.0)
    report = editor.read_until("report", lambda m: engine.patch.value("x", "value") == 3.0)
    assert not any(m["type"] == "resync" for m in editor.received)
    assert report["type"] == "report"
    engine.close()


@pytest.mark.parametrize(
    ("message", "problem"),
    [
        ({"type": "preset", "name": "nope"}, "no preset 'nope' (presets: A, B)"),
        ({"type": "preset", "name": "A", "start": "later"}, "start 'later'"),
        ({"type": "preset", "name": "A", "easing": ["x"]}, "preset:"),
        ({"type": "morph", "weights": [1, 2]}, "'weights' must be an object"),
        ({"type": "morph", "weights": {"A": -1}}, "must not be negative"),
        ({"type": "crossfade", "a": "A", "b": "B", "position": "half"}, "weight 'half'"),
    ],
)
def test_bad_preset_messages_get_one_error_line(message: dict, problem: str) -> None:
    engine, editor, _ = started_engine()
    editor.channel.send(message)
    error = editor.read_until("error")
    assert problem in error["message"]
    assert "\n" not in error["message"]
    engine.close()


def test_a_preset_whose_node_goes_mid_transition_ends_with_an_error_and_frames_go_on() -> None:
    engine, editor, patch = started_engine()
    send(engine, editor, {"type": "preset", "name": "A", "mode": "transition", "seconds": 5.0})
    engine.step(2.0)
    patch.remove_node("x")
    editor.read_until("error", lambda m: m["message"].startswith("preset: "))
    frame = engine.frame
    editor.read_until("report", lambda m: m["frame"] > frame)
    assert not engine.presets.player.busy
    engine.close()
