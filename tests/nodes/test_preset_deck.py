"""Presets as edits (`Patch.set_preset` and its event) and the preset deck a playing engine
steps: live writes, transitions starting on the next beat or bar, morphs and the crossfader."""

from __future__ import annotations

import pytest

from nodes import Patch, PatchError, PatchValueError, PresetDeck, Recall, capture
from tests.nodes.test_presets import two_presets


def test_set_preset_is_a_value_edit_with_an_event() -> None:
    patch = Patch()
    x = patch.add_node("input.float", {"value": 1.0, "max": 100.0})
    events = []
    patch.subscribe(events.append)
    revision = patch.value_revision
    patch.set_preset("calm", {(x, "value"): 3})
    assert patch.presets == {"calm": {(x, "value"): 3.0}}  # coerced as an edit would
    assert [(e.kind, e.op, e.value) for e in events] == [("value", "preset", "calm")]
    assert patch.value_revision == revision + 1
    patch.set_preset("calm", None)
    assert patch.presets == {}
    assert len(events) == 2
    patch.set_preset("calm", None)  # nothing to remove: no event
    assert len(events) == 2
    patch.set_preset("ghost", {("gone", "value"): 5})  # an undo may bring its node back
    assert patch.presets["ghost"] == {("gone", "value"): 5}
    with pytest.raises(PatchValueError, match="preset name"):
        patch.set_preset("  ", {})
    with pytest.raises(PatchValueError, match="value"):
        patch.set_preset("bad", {(x, "value"): "loud"})
    assert "bad" not in patch.presets


def test_deck_writes_live_values() -> None:
    patch, x, _ = two_presets()
    events = []
    patch.subscribe(events.append)
    revision = patch.value_revision
    deck = PresetDeck(patch)
    deck.recall("A")
    assert patch.value(x, "value") == 0.0
    assert events and all(e.live for e in events)
    assert patch.value_revision == revision  # live values are no document edits


def test_the_issue_numbers_through_the_deck() -> None:
    patch, x, toggle = two_presets()
    deck = PresetDeck(patch)
    deck.recall("A")
    deck.request("B", Recall("transition", 1.0, "linear", "end"))
    seen = {}
    for frame in range(61):
        deck.step(frame / 60, 120.0)
        seen[frame] = (patch.value(x, "value"), patch.value(toggle, "value"))
    assert seen[30][0] == pytest.approx(5.0)
    assert [f for f in range(61) if seen[f][1]] == [60]
    deck.morph({"A": 0.25, "B": 0.75})
    assert patch.value(x, "value") == pytest.approx(7.5)


@pytest.mark.parametrize(
    ("start", "asked_at", "starts_at"),
    [
        ("beat", 40, 60),  # mid-beat at 120 BPM, 60 fps: a beat is 30 frames
        ("beat", 60, 60),  # asked on a beat: it starts on it
        ("bar", 40, 120),  # a bar is 4 beats: 120 frames
        ("now", 40, 40),
    ],
)
def test_a_transition_asked_mid_beat_starts_on_the_next_beats_frame(
    start: str, asked_at: int, starts_at: int
) -> None:
    patch, x, _ = two_presets()
    deck = PresetDeck(patch)
    deck.recall("A")
    frame = 0
    for frame in range(asked_at):
        deck.step(frame / 60, 120.0)
    deck.request("B", Recall("transition", 0.5, start=start))
    values = {}
    for frame in range(asked_at, starts_at + 31):
        deck.step(frame / 60, 120.0)
        values[frame] = patch.value(x, "value")
    assert all(values[f] == 0.0 for f in range(asked_at, starts_at + 1))
    assert values[starts_at + 1] == pytest.approx(10.0 / 30)  # one frame into half a second
    assert values[starts_at + 15] == pytest.approx(5.0)
    assert values[starts_at + 30] == 10.0


def test_a_jump_on_the_beat_waits_for_it_at_the_patch_tempo() -> None:
    patch, x, _ = two_presets()
    deck = PresetDeck(patch)
    deck.step(0.1, 90.0)  # 90 BPM: beats every 2/3 s
    deck.request("A", Recall("jump", start="beat"))
    assert deck.waiting
    deck.step(0.6, 90.0)
    assert patch.value(x, "value") == 10.0
    deck.step(2 / 3, 90.0)
    assert patch.value(x, "value") == 0.0 and not deck.waiting


def test_crossfader_blends_the_pair_and_falls_back_to_the_first_two_presets() -> None:
    patch, x, toggle = two_presets()
    deck = PresetDeck(patch)
    deck.set_crossfade(0.25)  # no pair chosen: A and B, the first two
    assert patch.value(x, "value") == pytest.approx(2.5)
    assert patch.value(toggle, "value") is False
    patch.presets["C"] = {(x, "value"): 50.0}
    deck.crossfade("C", "B", 0.5)
    assert patch.value(x, "value") == pytest.approx(30.0)
    deck.set_crossfade(2.0)  # clamped
    assert patch.value(x, "value") == pytest.approx(10.0)
    with pytest.raises(PatchValueError, match="no preset 'D'"):
        deck.crossfade("D", "B", 0.5)
    with pytest.raises(PatchValueError, match="weight"):
        deck.set_crossfade(float("nan"))


def test_one_preset_and_no_pair_leaves_the_crossfader_without_effect() -> None:
    patch = Patch()
    x = patch.add_node("input.float", {"value": 4.0})
    patch.presets["only"] = {(x, "value"): 1.0}
    PresetDeck(patch).set_crossfade(1.0)
    assert patch.value(x, "value") == 4.0


def test_bad_requests_name_the_problem_and_a_failing_transition_ends() -> None:
    patch, x, _ = two_presets()
    deck = PresetDeck(patch)
    with pytest.raises(PatchValueError, match="start 'soon'"):
        Recall("transition", start="soon")
    with pytest.raises(PatchValueError, match="seconds"):
        Recall("transition", seconds=-1.0)
    with pytest.raises(PatchValueError, match="mode"):
        Recall("fade")  # type: ignore[arg-type]
    with pytest.raises(PatchValueError, match="no preset 'Z'"):
        deck.recall("Z")
    deck.request("B", Recall("transition", 1.0))
    deck.step(0.0, 120.0)
    patch.remove_node(x)  # the preset's node is gone mid-transition
    with pytest.raises(PatchError):
        deck.step(0.5, 120.0)
    assert not deck.player.busy
    deck.step(0.6, 120.0)  # ended: nothing more to raise


def test_captured_presets_survive_attach_to_a_new_patch() -> None:
    patch, x, _ = two_presets()
    deck = PresetDeck(patch)
    deck.request("A", Recall("transition", 1.0, start="bar"))
    other = patch.copy()
    deck.attach(other)
    assert not deck.waiting and deck.patch is other
    other.presets["C"] = capture(other)
    deck.recall("A")
    assert other.value(x, "value") == 0.0
