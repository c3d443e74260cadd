"""The `outputs` setting (nodes/document/outputs.py): round trip through files, kept by freeze,
checked as untrusted input with one line naming the place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.cli.main import main
from nodes import (
    Patch,
    PatchFileError,
    PatchValueError,
    load_patch,
    patch_from_dict,
    patch_to_dict,
    save_patch,
)
from nodes.document.outputs import (
    MAX_OUTPUTS,
    OUTPUT_KINDS,
    Blend,
    Mesh,
    outputs_from,
    register_output_kind,
)
from nodes.limits import Limits, active_limits, set_active_limits

OUTPUTS = [
    {"name": "left", "screen": 1, "size": [1920, 1080], "slice": [0, 0, 0.55, 1],
     "corners": [[0.02, 0.0], [1.0, 0.05], [0.97, 1.0], [0.0, 0.96]],
     "blend": {"right": 0.18, "gamma": 2.4}},
    {"name": "right", "slice": [0.45, 0, 0.55, 1], "blend": {"left": 0.18},
     "mesh": {"cols": 2, "rows": 3, "points": [[0, 0], [1, 0], [0.1, 0.5], [0.9, 0.5], [0, 1],
                                                [1, 1]]}},
]  # fmt: skip


def patch_with_outputs() -> Patch:
    patch = Patch()
    patch.add_node("input.float", node_id="x")
    patch.update_settings(outputs=OUTPUTS)
    return patch


def document(**settings: Any) -> dict[str, Any]:
    return {"format": "patchbay", "version": 1, "nodes": [], "links": [], "settings": settings}


def test_outputs_round_trip_through_the_file(tmp_path: Path) -> None:
    patch = patch_with_outputs()
    written = patch_to_dict(patch)["settings"]["outputs"]
    assert written[0] == {
        "name": "left", "kind": "window", "screen": 1, "size": [1920, 1080],
        "slice": [0.0, 0.0, 0.55, 1.0],
        "corners": [[0.02, 0.0], [1.0, 0.05], [0.97, 1.0], [0.0, 0.96]], "mesh": None,
        "blend": {"left": 0.0, "right": 0.18, "top": 0.0, "bottom": 0.0, "gamma": 2.4},
    }  # fmt: skip
    assert written[1]["size"] is None and written[1]["screen"] is None  # the canvas's size
    path = tmp_path / "show.patchbay"
    save_patch(patch, path)
    loaded = load_patch(path)
    assert loaded.settings["outputs"] == written
    assert patch_to_dict(loaded) == patch_to_dict(patch)
    outputs = outputs_from(loaded.settings)
    assert [o.name for o in outputs] == ["left", "right"]
    assert outputs[0].blend == Blend(right=0.18, gamma=2.4)
    assert outputs[1].mesh == Mesh(2, 3, ((0, 0), (1, 0), (0.1, 0.5), (0.9, 0.5), (0, 1), (1, 1)))
    assert loaded.copy().settings["outputs"] == written


def test_no_outputs_means_the_whole_canvas_as_before() -> None:
    patch = Patch()
    assert "outputs" not in patch_to_dict(patch)["settings"]
    assert outputs_from(patch.settings) == ()
    assert outputs_from(patch_from_dict(document(outputs=None)).settings) == ()


def test_freeze_keeps_the_outputs(tmp_path: Path) -> None:
    source = tmp_path / "show.patchbay"
    patch = Patch()
    patch.add_node("gpu.output", node_id="out")
    patch.update_settings(outputs=OUTPUTS)
    save_patch(patch, source)
    frozen = tmp_path / "frozen.patchbay"
    assert main(["freeze", str(source), "-o", str(frozen)]) == 0
    assert load_patch(frozen).settings["outputs"] == patch.settings["outputs"]


def test_an_edit_of_the_outputs_is_checked_first() -> None:
    patch = patch_with_outputs()
    before = patch.settings["outputs"]
    with pytest.raises(PatchValueError, match=r"^outputs\[0\]\.slice\[2\]: "):
        patch.update_settings(outputs=[{"name": "a", "slice": [0, 0, 2, 1]}])
    assert patch.settings["outputs"] == before
    patch.update_settings(outputs=None)
    assert outputs_from(patch.settings) == ()


def mesh(cols: int, rows: int, count: int | None = None) -> dict[str, Any]:
    return {"cols": cols, "rows": rows, "points": [[0.5, 0.5]] * (cols * rows if count is None
                                                                   else count)}  # fmt: skip


BAD = [
    ({"outputs": {"name": "a"}}, "settings.outputs", "is not of type"),
    ({"outputs": [{"name": "a"}] * (MAX_OUTPUTS + 1)}, "settings.outputs", "at most 16"),
    ({"outputs": [{}]}, r"settings.outputs\[0\]", "needs a name"),
    ({"outputs": [{"name": "../up"}]}, r"settings.outputs\[0\].name", "is not a name"),
    ({"outputs": [{"name": "NUL"}]}, r"settings.outputs\[0\].name", "is not a name"),
    ({"outputs": [{"name": "a"}, {"name": "A"}]}, r"settings.outputs\[1\].name", "used twice"),
    ({"outputs": [{"name": "a", "colour": 1}]}, r"settings.outputs\[0\]", "unknown key 'colour'"),
    ({"outputs": [{"name": "a", "kind": "ndi"}]}, r"settings.outputs\[0\].kind",
     "not an output kind"),
    ({"outputs": [{"name": "a", "screen": -1}]}, r"settings.outputs\[0\].screen", "0..63"),
    ({"outputs": [{"name": "a", "size": [640]}]}, r"settings.outputs\[0\].size",
     r"expected \[width, height\]"),
    ({"outputs": [{"name": "a", "size": [640, 0]}]}, r"settings.outputs\[0\].size\[1\]",
     "whole number"),
    ({"outputs": [{"name": "a", "size": [640.5, 360]}]}, r"settings.outputs\[0\].size\[0\]",
     "whole number"),
    ({"outputs": [{"name": "a", "size": [100000, 360]}]}, r"settings.outputs\[0\].size\[0\]",
     "above the limit texture_side"),
    ({"outputs": [{"name": "a", "slice": [0, 0, 1]}]}, r"settings.outputs\[0\].slice", "expected"),
    ({"outputs": [{"name": "a", "slice": [0.5, 0, 0.6, 1]}]}, r"settings.outputs\[0\].slice",
     "within the canvas"),
    ({"outputs": [{"name": "a", "slice": [0, 0, 0, 1]}]}, r"settings.outputs\[0\].slice",
     "a width and a height"),
    ({"outputs": [{"name": "a", "slice": [0, -0.1, 1, 1]}]}, r"settings.outputs\[0\].slice\[1\]",
     "not from 0 to 1"),
    ({"outputs": [{"name": "a", "corners": [[0, 0], [1, 0], [1, 1]]}]},
     r"settings.outputs\[0\].corners", "expected 4 corners"),
    ({"outputs": [{"name": "a", "corners": [[0, 0], [1, 0], [1, 1], [0, 1, 2]]}]},
     r"settings.outputs\[0\].corners\[3\]", r"expected \[x, y\]"),
    ({"outputs": [{"name": "a", "corners": [[0, 0], [1, 0], [1, 1], [0, 9]]}]},
     r"settings.outputs\[0\].corners\[3\]\[1\]", "not from -1 to 2"),
    ({"outputs": [{"name": "a", "corners": [[0, 0], [1, 1], [1, 0], [0, 1]]}]},
     r"settings.outputs\[0\].corners", "convex"),
    ({"outputs": [{"name": "a", "corners": [[0, 0], [0.5, 0], [1, 0], [0, 1]]}]},
     r"settings.outputs\[0\].corners", "convex"),
    ({"outputs": [{"name": "a", "mesh": mesh(1, 3)}]}, r"settings.outputs\[0\].mesh.cols", "2..64"),
    ({"outputs": [{"name": "a", "mesh": mesh(2, 65)}]}, r"settings.outputs\[0\].mesh.rows",
     "2..64"),
    ({"outputs": [{"name": "a", "mesh": mesh(3, 3, 8)}]}, r"settings.outputs\[0\].mesh.points",
     "9 points"),
    ({"outputs": [{"name": "a", "mesh": {**mesh(2, 2), "smooth": True}}]},
     r"settings.outputs\[0\].mesh", "unknown key 'smooth'"),
    ({"outputs": [{"name": "a", "mesh": {"cols": 2, "rows": 2,
                                         "points": [[0, 0], [1, 0], [0, 1], [1, "x"]]}}]},
     r"settings.outputs\[0\].mesh.points\[3\]\[1\]", "expected a number"),
    ({"outputs": [{"name": "a", "blend": {"left": 1.5}}]}, r"settings.outputs\[0\].blend.left",
     "not from 0 to 1"),
    ({"outputs": [{"name": "a", "blend": {"left": 0.6, "right": 0.6}}]},
     r"settings.outputs\[0\].blend", "more than the slice"),
    ({"outputs": [{"name": "a", "blend": {"gamma": 0}}]}, r"settings.outputs\[0\].blend.gamma",
     "not from 0.1 to 10"),
    ({"outputs": [{"name": "a", "blend": {"feather": 0.1}}]}, r"settings.outputs\[0\].blend",
     "unknown key 'feather'"),
    ({"outputs": [{"name": "a", "blend": {"left": True}}]}, r"settings.outputs\[0\].blend.left",
     "expected a number"),
]  # fmt: skip


@pytest.mark.parametrize(("settings", "place", "reason"), BAD)
def test_bad_outputs_are_one_line_naming_the_place(
    settings: dict[str, Any], place: str, reason: str
) -> None:
    with pytest.raises(PatchFileError) as caught:
        patch_from_dict(document(**settings), source="show.patchbay")
    message = str(caught.value)
    assert "\n" not in message and len(message) < 300
    assert message.startswith(f"show.patchbay: {place.replace(chr(92), '')}: "), message
    assert __import__("re").search(reason, message), message


def test_a_file_with_bad_outputs_is_refused_and_check_says_so(tmp_path: Path, capsys) -> None:
    path = tmp_path / "bad.patchbay"
    path.write_text(json.dumps(document(outputs=[{"name": "a", "size": [640, -1]}])))
    with pytest.raises(PatchFileError, match=r"settings\.outputs\[0\]\.size\[1\]"):
        load_patch(path)
    assert main(["check", str(path)]) == 2
    assert "settings.outputs[0].size[1]" in capsys.readouterr().err


def test_sizes_follow_the_limits_in_force(tmp_path: Path) -> None:
    patch = Patch()
    patch.update_settings(outputs=[{"name": "big", "size": [4096, 2048]}])
    previous = active_limits()
    set_active_limits(Limits(texture_side=2048))
    try:
        with pytest.raises(PatchValueError, match=r"outputs\[0\]\.size\[0\].*texture_side"):
            save_patch(patch, tmp_path / "big.patchbay")  # a file saved always loads
        assert not (tmp_path / "big.patchbay").exists()
    finally:
        set_active_limits(previous)


def test_a_huge_points_list_is_refused_by_its_length_first() -> None:
    with pytest.raises(PatchFileError, match=r"mesh.points: expected cols x rows = 4 points"):
        patch_from_dict(document(outputs=[{"name": "a", "mesh": mesh(2, 2, 200_000)}]))


def test_an_output_kind_registers_its_own_keys() -> None:
    assert set(OUTPUT_KINDS) == {"window"}
    register_output_kind("test-kind", ["stream_name"])
    try:
        patch = Patch()
        patch.update_settings(outputs=[{"name": "a", "kind": "test-kind", "stream_name": "x"}])
        assert patch.settings["outputs"][0]["stream_name"] == "x"
        with pytest.raises(PatchValueError, match="unknown key 'stream_name'"):
            patch.update_settings(outputs=[{"name": "a", "stream_name": "x"}])
        with pytest.raises(ValueError, match="twice"):
            register_output_kind("test-kind")
    finally:
        del OUTPUT_KINDS["test-kind"]


def test_an_outputs_edit_and_a_whole_patch_reach_an_engines_copy() -> None:
    from app.engine.protocol.channel import _apply_op, event_op, patch_from_message, patch_message

    editor = Patch()
    engine = editor.copy()
    ops: list[Any] = []
    blobs: list[bytes] = []
    editor.subscribe(lambda event: ops.append(event_op(editor, event, blobs)))
    editor.update_settings(outputs=OUTPUTS)
    for op in json.loads(json.dumps(ops)):  # as the channel carries them
        _apply_op(engine, op, blobs)
    assert engine.settings["outputs"] == editor.settings["outputs"]
    message, blobs = patch_message(editor)
    assert patch_from_message(message, blobs).settings["outputs"] == editor.settings["outputs"]


def test_the_pixels_of_all_outputs_together_are_held() -> None:
    four_k = {"size": [3840, 2160]}
    Patch().update_settings(outputs=[{"name": f"p{n}", **four_k} for n in range(16)])
    huge = [{"name": f"p{n}", "size": [8192, 8192]} for n in range(3)]
    with pytest.raises(PatchFileError, match=r"settings\.outputs\[2\]\.size: \d+ pixels in all"):
        patch_from_dict(document(outputs=huge))
