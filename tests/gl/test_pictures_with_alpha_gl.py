"""Pictures of textures with alpha in the real window, with a GL engine in the editor's process:
`text.render` (yellow text on transparent black) shows as yellow letters over a checkerboard in
its canvas thumbnail and in the Preview panel, not as a solid yellow box."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, QPointF, Qt
from PySide6.QtGui import QImage
from PySide6.QtTest import QTest

from app.engine.local import LocalEngineLink
from app.qt.support.pictures import CHECKER_DARK, CHECKER_LIGHT
from evaluators.services.gl import GLService
from nodes import Patch
from tests.app.conftest import ScriptedDialogs, make_editor, run_frames, show_patch

SHOTS = Path(__file__).resolve().parents[1] / "artifacts"  # screenshots to look at
YELLOW = (1.0, 0.85, 0.1, 1.0)


@pytest.fixture
def gl_editor(qtbot: Any, tmp_path: Path, gl: GLService) -> Iterator[Any]:
    dialogs = ScriptedDialogs()
    window = make_editor(qtbot, tmp_path / "state", dialogs, engine=LocalEngineLink(gpu=gl))
    yield window
    dialogs.unsaved_answer = "discard"
    window.close()


def colours(image: QImage) -> list[tuple[int, int, int]]:
    return [
        (c.red(), c.green(), c.blue())
        for y in range(image.height())
        for x in range(image.width())
        for c in (image.pixelColor(x, y),)
    ]


def is_checker(rgb: tuple[int, int, int]) -> bool:
    return rgb in {CHECKER_DARK.getRgb()[:3], CHECKER_LIGHT.getRgb()[:3]}


def is_yellow(rgb: tuple[int, int, int]) -> bool:
    return rgb[0] > 200 and rgb[1] > 170 and rgb[2] < 90


def assert_letters_over_checkerboard(image: QImage) -> None:
    seen = colours(image)
    checker = sum(map(is_checker, seen))
    yellow = sum(map(is_yellow, seen))
    assert checker > len(seen) // 2, "transparent parts show the checkerboard"
    assert 0 < yellow < len(seen) // 3, "the letters show in their colour, not a solid box"


def test_text_on_transparent_shows_over_a_checkerboard(gl_editor: Any, qtbot: Any) -> None:
    editor = gl_editor
    patch = Patch()
    values = {"text": "HI", "size": 60.0, "color": YELLOW, "resolution": (192, 108)}
    patch.add_node("text.render", values, (0, 0), node_id="title")
    show_patch(editor, patch)
    item = editor.canvas.view_node("title").view
    at = editor.canvas.viewer().mapFromScene(item.mapToScene(QPointF(20.0, 8.0)))
    viewport = editor.canvas.viewer().viewport()
    QTest.mouseClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, at)
    QCoreApplication.processEvents()
    assert editor.canvas.selected_ids() == ["title"]

    def pictures_shown() -> bool:
        run_frames(editor)  # the text is drawn on a worker: a later frame shows it
        row = editor.preview.row_widget("out")
        thumbnail = editor.canvas.thumbnail_item("title")
        return bool(row is not None and not row.pixmap().isNull() and thumbnail is not None)

    qtbot.waitUntil(pictures_shown)
    assert_letters_over_checkerboard(editor.preview.row_widget("out").pixmap().toImage())
    assert_letters_over_checkerboard(editor.canvas.thumbnail_item("title").pixmap().toImage())
    SHOTS.mkdir(parents=True, exist_ok=True)
    editor.grab().save(str(SHOTS / "patching-alpha-previews.png"))
