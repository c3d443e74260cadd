"""Presets: capture, jump, transitions stepped on the frame clock, morphs, colours in OKLab,
the `presets` file section, and recalls that rerun only the cones of changed inputs."""

from __future__ import annotations

import itertools

import pytest

from nodes import (
    Patch,
    PatchFileError,
    PatchValueError,
    PresetPlayer,
    capture,
    morph,
    oklab_to_srgb,
    patch_from_dict,
    patch_to_dict,
    preset_pins,
    srgb_to_oklab,
)


def two_presets() -> tuple[Patch, str, str]:
    """A slider x and a toggle; preset A has x=0 and the toggle off, B x=10 and the toggle on."""
    patch = Patch()
    x = patch.add_node("input.float", {"value": 0.0, "max": 100.0})
    toggle = patch.add_node("input.toggle", {"value": False})
    patch.presets["A"] = capture(patch)
    patch.set_value(x, "value", 10.0)
    patch.set_value(toggle, "value", True)
    patch.presets["B"] = capture(patch)
    return patch, x, toggle


def frames(player: PresetPlayer, count: int, fps: float = 60.0, first: int = 0) -> None:
    for frame in range(first, first + count):
        player.step(frame / fps)


def test_capture_takes_every_editable_unlinked_value_of_the_patch_or_of_some_nodes() -> None:
    patch, x, toggle = two_presets()
    constant = patch.add_node("value.float", {"value": 3.0})  # no USER input: taken too
    patch.add_node("midi.cc", {"control": 7})  # its live pin its control moves, the rest listens
    mul = patch.add_node("math.mul", {"b": 4.0})
    patch.connect(constant, "out", mul, "a")  # a linked pin: its link sets it
    shader = patch.add_node("gpu.shader")  # code and file rebuild the node: not in presets
    picture = patch.add_node("gpu.solid", {"color": (1.0, 0.0, 0.0, 1.0)})
    patch.add_node("audio.input")  # its device: where it listens, not a show value
    assert capture(patch) == {
        (x, "value"): 10.0, (toggle, "value"): True, (constant, "value"): 3.0, (mul, "b"): 4.0,
        (shader, "resolution"): (0, 0), (shader, "color"): (1.0, 0.6, 0.2, 1.0),  # a uniform
        (picture, "color"): (1.0, 0.0, 0.0, 1.0), (picture, "resolution"): (0, 0),
    }  # fmt: skip
    assert preset_pins(patch, [mul, constant, "gone"]) == [(constant, "value"), (mul, "b")]
    assert capture(patch, [(x, "max")]) == {(x, "max"): 100.0}
    empty = Patch()
    empty.add_node("time.seconds")
    assert capture(empty) == {} and preset_pins(empty) == []


def test_jump_sets_every_pin_at_once() -> None:
    patch, x, toggle = two_presets()
    PresetPlayer(patch).jump("A")
    assert (patch.value(x, "value"), patch.value(toggle, "value")) == (0.0, False)


def test_linear_transition_is_halfway_at_frame_30_and_toggle_switches_at_the_end() -> None:
    patch, x, toggle = two_presets()
    player = PresetPlayer(patch)
    player.jump("A")
    player.transition("B", 1.0, "linear", switch="end")
    seen = {}
    for frame in range(61):
        player.step(frame / 60)
        seen[frame] = (patch.value(x, "value"), patch.value(toggle, "value"))
    assert seen[30][0] == pytest.approx(5.0)
    assert seen[60] == (10.0, True)
    assert [f for f in range(61) if seen[f][1]] == [60]
    assert not player.busy


@pytest.mark.parametrize(("switch", "frame"), [("start", 0), ("middle", 30), ("end", 60)])
def test_switch_points(switch: str, frame: int) -> None:
    patch, _, toggle = two_presets()
    player = PresetPlayer(patch)
    player.jump("A")
    player.transition("B", 1.0, switch=switch)  # type: ignore[arg-type]
    first_on = None
    for f in range(61):
        player.step(f / 60)
        if first_on is None and patch.value(toggle, "value"):
            first_on = f
    assert first_on == frame


def test_ease_in_out_is_symmetric_and_slow_at_the_ends() -> None:
    patch, x, _ = two_presets()
    player = PresetPlayer(patch)
    player.jump("A")
    player.transition("B", 1.0, "ease-in-out")
    values = []
    for f in range(61):
        player.step(f / 60)
        values.append(patch.value(x, "value"))
    assert values[30] == pytest.approx(5.0)
    assert values[6] < 1.0 - 1e-3  # linear would be 1.0
    assert values[6] == pytest.approx(10.0 - values[54])


def test_transition_starts_at_the_first_step() -> None:
    patch, x, _ = two_presets()
    player = PresetPlayer(patch)
    player.jump("A")
    player.transition("B", 2.0)
    frames(player, 31, first=600)  # starts at t=10 s, half a second in at frame 630
    assert patch.value(x, "value") == pytest.approx(2.5)


def test_morph_weights() -> None:
    patch, x, toggle = two_presets()
    morph(patch, {"A": 0.25, "B": 0.75})
    assert patch.value(x, "value") == pytest.approx(7.5)
    assert patch.value(toggle, "value") is True  # the heaviest preset's
    morph(patch, {"A": 3.0, "B": 1.0})  # weights are normalised
    assert patch.value(x, "value") == pytest.approx(2.5)
    assert patch.value(toggle, "value") is False


def test_three_way_morph_is_a_weighted_mean() -> None:
    patch, x, _ = two_presets()
    patch.presets["C"] = {(x, "value"): 40.0}
    morph(patch, {"A": 1.0, "B": 1.0, "C": 2.0})
    assert patch.value(x, "value") == pytest.approx((0 + 10 + 80) / 4)


def test_bad_recalls_name_the_problem() -> None:
    patch, _, _ = two_presets()
    player = PresetPlayer(patch)
    with pytest.raises(PatchValueError, match=r"no preset 'C' \(presets: A, B\)"):
        player.jump("C")
    with pytest.raises(PatchValueError, match="easing 'bouncy'"):
        player.transition("A", 1.0, "bouncy")
    with pytest.raises(PatchValueError, match="weights"):
        morph(patch, {"A": 0.0})


def test_ints_round_and_vec2_interpolates() -> None:
    patch = Patch()
    count = patch.add_node("array.range", {"count": 0})
    solid = patch.add_node("gpu.solid", {"resolution": (0, 0)})
    refs = [(count, "count"), (solid, "resolution")]
    patch.presets["A"] = capture(patch, refs)
    patch.set_value(count, "count", 3)
    patch.set_value(solid, "resolution", (100, 50))
    patch.presets["B"] = capture(patch, refs)
    morph(patch, {"A": 0.6, "B": 0.4})
    assert patch.value(count, "count") == 1  # 1.2 rounds to 1
    assert isinstance(patch.value(count, "count"), int)
    assert patch.value(solid, "resolution") == pytest.approx((40.0, 20.0))
    morph(patch, {"A": 0.4, "B": 0.6})
    assert patch.value(count, "count") == 2  # 1.8 rounds to 2


def test_oklab_round_trip() -> None:
    levels = (0.0, 0.02, 0.25, 0.5, 0.75, 1.0)
    for rgb in itertools.product(levels, repeat=3):
        assert oklab_to_srgb(srgb_to_oklab(rgb)) == pytest.approx(rgb, abs=1e-6)
    assert srgb_to_oklab((1.0, 1.0, 1.0)) == pytest.approx((1.0, 0.0, 0.0), abs=1e-4)
    assert srgb_to_oklab((0.0, 0.0, 0.0)) == pytest.approx((0.0, 0.0, 0.0), abs=1e-9)


def test_colours_blend_in_oklab() -> None:
    patch = Patch()
    solid = patch.add_node("gpu.solid", {"color": (0.0, 0.0, 0.0, 1.0)})
    patch.presets["black"] = capture(patch, [(solid, "color")])
    patch.set_value(solid, "color", (1.0, 1.0, 1.0, 0.0))
    patch.presets["white"] = capture(patch, [(solid, "color")])
    morph(patch, {"black": 0.5, "white": 0.5})
    r, g, b, a = patch.value(solid, "color")
    assert r == pytest.approx(g) and g == pytest.approx(b)
    assert abs(r - 0.5) > 0.02  # not the sRGB midpoint
    assert srgb_to_oklab((r, g, b))[0] == pytest.approx(0.5, abs=1e-6)  # OKLab L midway
    assert a == pytest.approx(0.5)


# ----------------------------------------------------------------------------- file


def test_presets_round_trip_through_the_file() -> None:
    patch, x, toggle = two_presets()
    solid = patch.add_node("gpu.solid", {"color": (0.1, 0.2, 0.3, 1.0)})
    patch.presets["A"][(solid, "color")] = (0.1, 0.2, 0.3, 1.0)
    document = patch_to_dict(patch)
    assert document["presets"]["B"] == {
        "values": [{"node": x, "pin": "value", "value": 10.0},
                   {"node": toggle, "pin": "value", "value": True}]
    }  # fmt: skip
    loaded = patch_from_dict(document)
    assert loaded.presets == patch.presets
    assert patch_to_dict(loaded) == document
    twin = loaded.copy()
    assert twin.presets == patch.presets
    twin.presets["A"][(x, "value")] = 99.0
    assert loaded.presets["A"][(x, "value")] == 0.0


def test_pins_of_removed_nodes_are_left_out_of_the_file() -> None:
    patch, x, toggle = two_presets()
    patch.remove_node(toggle)
    document = patch_to_dict(patch)
    assert document["presets"]["B"] == {"values": [{"node": x, "pin": "value", "value": 10.0}]}
    assert patch_from_dict(document).presets["B"] == {(x, "value"): 10.0}
    assert (toggle, "value") in patch.presets["B"]  # kept in the patch, for an undo


def test_no_presets_no_section() -> None:
    patch = Patch()
    patch.add_node("input.float")
    assert "presets" not in patch_to_dict(patch)


def test_bad_presets_in_a_file_name_the_place() -> None:
    patch, x, _ = two_presets()
    document = patch_to_dict(patch)
    document["presets"]["A"]["values"][0]["node"] = "ghost"
    with pytest.raises(PatchFileError, match=r"presets\.A\.values\[0\]\.node: no node 'ghost'"):
        patch_from_dict(document, "f.patchbay")
    document = patch_to_dict(patch)
    document["presets"]["B"]["values"][0]["pin"] = "nope"
    with pytest.raises(PatchFileError, match=r"presets\.B\.values\[0\]\.pin: .*no input 'nope'"):
        patch_from_dict(document, "f.patchbay")
    document = patch_to_dict(patch)
    document["presets"]["B"]["values"][0]["value"] = "loud"
    with pytest.raises(PatchFileError, match=r"presets\.B\.values\[0\]\.value: expected a number"):
        patch_from_dict(document, "f.patchbay")
    document = patch_to_dict(patch)
    document["presets"]["B"]["values"][1]["node"] = x  # x.value twice
    with pytest.raises(PatchFileError, match=r"presets\.B\.values\[1\]: .*twice"):
        patch_from_dict(document, "f.patchbay")
