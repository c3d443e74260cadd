"""The `bindings` section of patch files: round trip, only live targets written, one-line errors
naming the place."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodes import Patch, PatchFileError, load_patch, patch_from_dict, patch_to_dict, save_patch
from nodes.document.bindings import Binding


def bound_patch() -> tuple[Patch, str, str]:
    """A slider bound to an OSC fader, a toggle to a MIDI note, a preset and the crossfader."""
    patch = Patch()
    x = patch.add_node("input.float", {"value": 0.0, "max": 100.0}, node_id="x")
    toggle = patch.add_node("input.toggle", node_id="toggle")
    patch.set_binding("binding1", Binding("osc:/fader/1", x, "value", 20.0, 2000.0,
                                          "exponential", "pickup"))  # fmt: skip
    patch.set_binding("binding2", Binding("midi:note:10:36", toggle, "value", device="nano"))
    patch.set_binding("binding3", Binding("midi:cc:1:7", "@preset", "A"))
    patch.set_binding("binding4", Binding("midi:cc:1:8", "@crossfader", "position", 0, 1,
                                          takeover="scale"))  # fmt: skip
    return patch, x, toggle


def test_bindings_round_trip_through_the_file(tmp_path: Path) -> None:
    patch, x, _ = bound_patch()
    document = patch_to_dict(patch)
    assert document["bindings"][0] == {
        "id": "binding1", "source": "osc:/fader/1", "node": x, "pin": "value",
        "range": [20.0, 2000.0], "curve": "exponential", "takeover": "pickup", "device": "",
    }  # fmt: skip
    assert [b["id"] for b in document["bindings"]] == [f"binding{n}" for n in (1, 2, 3, 4)]
    loaded = patch_from_dict(document)
    assert loaded.bindings == patch.bindings
    assert patch_to_dict(loaded) == document
    assert document["version"] == 1  # a new section, no new version
    path = tmp_path / "bound.patchbay"
    save_patch(patch, path)
    assert load_patch(path).bindings == patch.bindings
    assert loaded.copy().bindings == patch.bindings


def test_no_bindings_no_section() -> None:
    patch = Patch()
    patch.add_node("input.float")
    assert "bindings" not in patch_to_dict(patch)


def test_bindings_of_removed_nodes_are_left_out_of_the_file() -> None:
    patch, _, toggle = bound_patch()
    patch.remove_node(toggle)
    document = patch_to_dict(patch)
    assert [b["id"] for b in document["bindings"]] == ["binding1", "binding3", "binding4"]
    assert "binding2" in patch.bindings  # kept in the patch, for an undo
    assert set(patch_from_dict(document).bindings) == {"binding1", "binding3", "binding4"}


@pytest.mark.parametrize(
    ("index", "change", "message"),
    [
        (0, {"node": "ghost"}, r"bindings\[0\]\.node: no node 'ghost' in the patch"),
        (0, {"pin": "nope"}, r"bindings\[0\]\.pin: node 'x' \(input\.float\) has no input 'nope'"),
        (1, {"source": "midi:cc:17:1"}, r"bindings\[1\]\.source: binding source 'midi:cc:17:1'"),
        (2, {"range": [0, "x"]}, r"bindings\[2\]\.range\[1\]: 'x' is not of type 'number'"),
        (2, {"range": [0]}, r"bindings\[2\]\.range: \[0\] is too short"),
        (3, {"curve": "cubic"}, r"bindings\[3\]\.curve: 'cubic' is not one of"),
        (3, {"takeover": "soon"}, r"bindings\[3\]\.takeover: 'soon' is not one of"),
        (3, {"pin": "width"}, r"bindings\[3\]\.pin: the crossfader's pin is position"),
        (1, {"id": "binding1"}, r"bindings\[1\]\.id: binding id 'binding1' is used twice"),
    ],
)
def test_bad_bindings_in_a_file_name_the_place(
    index: int, change: dict[str, object], message: str
) -> None:
    patch, _, _ = bound_patch()
    document = patch_to_dict(patch)
    document["bindings"][index].update(change)
    with pytest.raises(PatchFileError, match=message) as raised:
        patch_from_dict(document, "f.patchbay")
    assert "\n" not in str(raised.value)


def test_an_infinite_range_is_refused_with_its_place(tmp_path: Path) -> None:
    patch, _, _ = bound_patch()
    path = tmp_path / "bound.patchbay"
    save_patch(patch, path)
    path.write_text(path.read_text().replace("2000.0", "Infinity"))
    with pytest.raises(PatchFileError, match=r"bindings\[0\]\.range: must be finite numbers"):
        load_patch(path)


def test_a_pin_no_control_can_drive_is_refused() -> None:
    patch = Patch()
    patch.add_node("osc.out", node_id="send")
    document = patch_to_dict(patch)
    document["bindings"] = [{"id": "b", "source": "osc:/a", "node": "send", "pin": "address"}]
    with pytest.raises(PatchFileError, match=r"bindings\[0\]\.pin: send\.address is a str input"):
        patch_from_dict(document)
