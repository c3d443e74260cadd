"""The editor with files from strangers: a hostile file is reported in one line over the current
patch (no traceback), and a value that cannot be saved is refused without writing anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodes import Patch, UnsavableValueError
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
    assert not editor.file_actions.open_path(path)
    assert list(editor.patch.nodes) == before
    assert len(dialogs.errors) == 1
    message = dialogs.errors[0]
    assert "\n" not in message and "\x1b" not in message and len(message) <= 330
    assert case.says in message


def test_a_value_that_would_not_load_back_is_refused_at_the_edit(
    editor, dialogs, ui, tmp_path: Path
):
    """A value neither a file nor the channel to the engine could carry is refused when it is
    set, in one line naming the pin: the document, the engine and the file keep what they had."""
    target = tmp_path / "show.patchbay"
    patch = Patch()
    patch.add_node("value.any", {"value": 1.0}, node_id="v")
    editor.set_patch(patch, target)
    assert editor.file_actions.save()
    before = target.read_bytes()
    with pytest.raises(UnsavableValueError, match=r'^v\.value: a dict whose only key is "\$array"'):
        editor.patch.set_value("v", "value", {"$array": {"dtype": "float64", "data": [1.0]}})
    assert editor.patch.value("v", "value") == 1.0
    ui.run_frames(editor)
    assert editor.engine.engine.patch.value("v", "value") == 1.0
    assert editor.file_actions.save() and not dialogs.errors
    assert target.read_bytes() == before
