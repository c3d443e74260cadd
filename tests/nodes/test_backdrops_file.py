"""Backdrops in files: layout only, written only when there are some, checked on load with the
place of a bad one named."""

from __future__ import annotations

import json

import pytest

from nodes import Backdrop, Patch, PatchFileError, patch_from_dict, patch_to_dict


def document_with(backdrops: list) -> dict:
    return {"format": "patchbay", "version": 1, "nodes": [], "links": [], "backdrops": backdrops}


def test_round_trip_and_absent_when_none():
    patch = Patch()
    assert "backdrops" not in patch_to_dict(patch)
    patch.set_backdrop("b1", Backdrop("b1", "Sources", (10, 20, 30), (1.0, 2.0, 300.0, 200.0)))
    document = json.loads(json.dumps(patch_to_dict(patch)))
    assert document["version"] == 1  # an optional section: no new version
    assert patch_from_dict(document).backdrops == patch.backdrops
    patch.set_backdrop("b1", None)
    assert "backdrops" not in patch_to_dict(patch)


@pytest.mark.parametrize(
    ("backdrops", "message"),
    [
        ([{"id": "b", "title": "t", "color": [1, 2, 300], "rect": [0, 0, 1, 1]}],
         "backdrops[0].color[2]: 300 is greater than the maximum of 255"),
        ([{"id": "b", "title": "t", "color": [1, 2, 3], "rect": [0, 0, -1, 1]}],
         "backdrops[0].rect: width and height must not be negative"),
        ([{"id": "b", "title": "t", "color": [1, 2, 3], "rect": [0, float("nan"), 1, 1]}],
         "backdrops[0].rect: must be finite numbers"),
        ([{"id": "b", "title": "t", "color": [1, 2, 3], "rect": [0, 0, 1, 1]}] * 2,
         "backdrops[1].id: backdrop id 'b' is used twice"),
    ],
)  # fmt: skip
def test_bad_backdrops_are_refused_with_their_place(backdrops, message):
    with pytest.raises(PatchFileError) as caught:
        patch_from_dict(document_with(backdrops))
    assert message in str(caught.value)
