"""The editor with files from strangers: a hostile file is reported in one line over the current
patch (no traceback), and a value that cannot be saved is refused without writing anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodes import Patch, save_patch
from tests.hostile_files import CASES

SLOW_TO_MAKE = ("zip_bomb_referenced", "over_file_limit")
OPENED_CASES = [
    case
    for case in CASES
    if case.exit_code == 2 and not case.extra and case.name not in SLOW_TO_MAKE
]


@pytest.mark.parametrize("case", OPENED_CASES, ids=lambda case: case.name)
def test_a_hostile_file_is_one_line_over_the_current_patch(editor, dialogs, tmp_path, case):
    folder = tmp_path / "patch"
    folder.mkdir()
    path = case.make(folder)
    before = list(editor.patch.nodes)
    assert not editor.open_path(path)
    assert list(editor.patch.nodes) == before
    assert len(dialogs.errors) == 1
    message = dialogs.errors[0]
    assert "\n" not in message and "\x1b" not in message and len(message) <= 330
    assert case.says in message


def test_saving_a_value_that_would_not_load_back_is_refused(editor, dialogs, tmp_path: Path):
    target = tmp_path / "show.patchbay"
    save_patch(Patch(), target)
    before = target.read_bytes()
    patch = Patch()
    patch.add_node("value.any", {"value": 1.0}, node_id="v")
    editor.set_patch(patch, target)
    # The engine can be told of it (an edit), but a file would read an array back.
    editor.patch.set_value("v", "value", {"$array": {"dtype": "float64", "data": [1.0]}})
    assert not editor.save()
    assert len(dialogs.errors) == 1 and "cannot be saved" in dialogs.errors[0]
    assert target.read_bytes() == before
