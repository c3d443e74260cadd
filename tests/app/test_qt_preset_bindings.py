"""Presets and the crossfader bound to controls from the Presets panel: right-click a preset (or
the crossfader) and learn (the engine's `learned` answer is played by the fake engine of
tests/app/test_qt_bindings.py), bind to a typed OSC address, undo; renaming a preset moves its
bindings in the same undo step; the Bindings panel names these targets. Without an engine, the
window's own controls recall a bound preset and move the crossfader from MIDI messages given to
the real MIDI service (on a fake backend, as tests/evaluators/test_midi.py does). A screenshot of
the panel with a bound preset and learn waiting is kept as tests/artifacts/presets_bindings.png."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mido
import pytest
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QContextMenuEvent
from PySide6.QtWidgets import QApplication, QWidget

from app.qt.panels.bindings import BIND_OSC_TEXT, CANCEL_LEARN_TEXT, LEARN_TEXT, TARGET, UNBIND_TEXT
from app.qt.panels.presets import QtPresetsPanel
from app.qt.window import QtEditorWindow
from evaluators.services.midi import MidiService
from evaluators.services.registry import FACTORIES
from nodes import Patch
from nodes.document.bindings import Binding
from tests.app.conftest import ScriptedDialogs, played, press, run_frames, show_patch, stop_loop
from tests.app.test_qt_bindings import FakeEngine
from tests.evaluators.test_midi import KEYS, FakeBackend

ARTIFACT = Path(__file__).resolve().parents[1] / "artifacts" / "presets_bindings.png"


def presets_patch() -> Patch:
    """A slider x (0..10) with presets A (x=0) and B (x=10)."""
    patch = Patch()
    patch.add_node("input.float", {"value": 0.0, "max": 10.0}, (0, 0), node_id="x")
    patch.add_node("output.value", None, (300, 0), node_id="out")
    patch.connect("x", "out", "out", "in")
    patch.set_preset("A", {("x", "value"): 0.0})
    patch.set_preset("B", {("x", "value"): 10.0})
    return patch


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine()


@pytest.fixture
def remote(
    qtbot: Any, tmp_path: Path, dialogs: ScriptedDialogs, engine: FakeEngine
) -> Iterator[QtEditorWindow]:
    """An editor window whose patch runs in the fake engine, showing the presets patch; its
    loop turns when the test turns it (`run_frames`)."""
    window = QtEditorWindow(tmp_path / "state", engine=engine)  # type: ignore[arg-type]
    dialogs.install(window)
    qtbot.addWidget(window)
    window.resize(1400, 850)
    window.show()
    qtbot.waitExposed(window)
    stop_loop(window)
    show_patch(window, presets_patch())
    window.docks["Presets"].raise_()
    qtbot.waitUntil(window.presets_panel.isVisible)
    yield window
    dialogs.unsaved_answer = "discard"
    window.close()


def right_click(widget: QWidget, where: QPoint) -> None:
    """A context-menu event at `where` on `widget`, as a right-click there sends."""
    event = QContextMenuEvent(QContextMenuEvent.Reason.Mouse, where, widget.mapToGlobal(where))
    QApplication.sendEvent(widget, event)


def preset_menu(panel: QtPresetsPanel, name: str) -> list[Any]:
    """Right-click preset `name` in the list: the actions of the menu that opens."""
    item = panel.list.item(panel.names().index(name))
    right_click(panel.list.viewport(), panel.list.visualItemRect(item).center())
    assert panel.menu is not None and panel.menu.isVisible()
    return list(panel.menu.actions())


def choose(panel: QtPresetsPanel, actions: list[Any], text: str) -> None:
    found = [action for action in actions if action.text() == text]
    assert found, f"no {text!r} in {[a.text() for a in actions]}"
    assert panel.menu is not None
    panel.menu.close()
    found[0].trigger()


def item_text(panel: QtPresetsPanel, name: str) -> str:
    return panel.list.item(panel.names().index(name)).text()


def test_learn_a_preset_from_its_menu_binds_it_with_undo(
    qtbot: Any, remote: QtEditorWindow, engine: FakeEngine
) -> None:
    panel = remote.presets_panel
    choose(panel, preset_menu(panel, "A"), LEARN_TEXT)
    assert panel.selected() == "A"  # the right-clicked preset
    assert engine.of_type("learn")[-1] == {"type": "learn", "node": "@preset", "pin": "A"}
    assert remote.statusBar().currentMessage() == "Move a control to bind preset A… (Esc cancels)"
    assert item_text(panel, "A") == "A  ⟳ learning…"
    assert preset_menu(panel, "A")[0].text() == CANCEL_LEARN_TEXT
    panel.menu.close()

    engine.deliver({"type": "learned", "node": "@preset", "pin": "A",
                    "source": "midi:note:1:36", "device": KEYS})  # fmt: skip
    run_frames(remote)
    expected = Binding("midi:note:1:36", "@preset", "A", 0.0, 1.0, device=KEYS)
    assert remote.patch.bindings == {"binding1": expected}
    assert remote.statusBar().currentMessage() == f"Bound preset A to midi:note:1:36 on {KEYS}"
    assert remote.live_control.learn.target is None
    assert item_text(panel, "A") == "A  ◉ midi:note:1:36" and item_text(panel, "B") == "B"
    table = remote.bindings_panel.table
    assert table.item(0, TARGET).text() == "preset A" and not table.item(0, TARGET).font().italic()
    run_frames(remote)  # the edit goes to the engine at the start of the next turn
    assert len(engine.binding_ops()) == 1
    assert engine.binding_ops()[0] == {"op": "binding", "id": "binding1",
                                       "binding": expected.to_dict()}  # fmt: skip

    remote.undo_stack.undo()
    assert remote.patch.bindings == {} and item_text(panel, "A") == "A"
    run_frames(remote)
    assert engine.binding_ops()[-1]["binding"] is None
    remote.undo_stack.redo()
    assert remote.patch.bindings == {"binding1": expected}
    choose(panel, preset_menu(panel, "A"), UNBIND_TEXT)
    assert remote.patch.bindings == {}
    assert remote.statusBar().currentMessage() == "preset A is no longer bound"
    remote.undo_stack.undo()
    assert remote.patch.bindings == {"binding1": expected}


def test_learn_of_a_preset_stops_on_escape_and_when_the_preset_is_deleted(
    qtbot: Any, remote: QtEditorWindow, engine: FakeEngine
) -> None:
    panel = remote.presets_panel
    choose(panel, preset_menu(panel, "B"), LEARN_TEXT)
    press(panel.list, Qt.Key.Key_Escape)
    assert remote.live_control.learn.target is None and item_text(panel, "B") == "B"
    assert engine.of_type("learn")[-1] == {"type": "learn", "node": None}
    assert remote.statusBar().currentMessage() == "Learn cancelled: preset B not bound"
    choose(panel, preset_menu(panel, "B"), LEARN_TEXT)
    assert remote.live_control.learn.target == ("@preset", "B")
    panel.buttons["Delete"].click()
    assert remote.live_control.learn.target is None
    engine.deliver({"type": "learned", "node": "@preset", "pin": "B", "source": "osc:/late"})
    run_frames(remote)  # taken and handled in the same turn
    assert not engine.incoming
    assert remote.patch.bindings == {}


def test_renaming_a_preset_moves_its_bindings_in_the_same_undo_step(
    remote: QtEditorWindow, dialogs: ScriptedDialogs
) -> None:
    panel = remote.presets_panel
    dialogs.osc_address = "/scene/a"
    choose(panel, preset_menu(panel, "A"), BIND_OSC_TEXT)
    remote.patch.set_binding("binding2", Binding("midi:note:1:40", "@preset", "A"))
    remote.patch.set_binding("binding3", Binding("midi:note:1:41", "@preset", "B"))
    assert remote.patch.bindings["binding1"] == Binding("osc:/scene/a", "@preset", "A")
    steps = remote.undo_stack.count()
    panel.select("A")
    panel.ask_name = lambda title, current: "calm"
    panel.buttons["Rename"].click()
    assert remote.undo_stack.count() == steps + 1
    assert [(b.pin, b.source) for b in remote.patch.bindings.values()] == [
        ("calm", "osc:/scene/a"), ("calm", "midi:note:1:40"), ("B", "midi:note:1:41")
    ]  # fmt: skip
    assert item_text(panel, "calm") == "calm  ◉ osc:/scene/a, midi:note:1:40"
    table = remote.bindings_panel.table
    assert [table.item(row, TARGET).text() for row in range(3)] == [
        "preset calm", "preset calm", "preset B"
    ]  # fmt: skip

    # a deleted preset's bindings stay, shown missing, until an undo brings it back
    panel.select("calm")
    panel.buttons["Delete"].click()
    assert table.item(0, TARGET).text() == "preset calm (missing)"
    assert table.item(0, TARGET).font().italic()
    remote.undo_stack.undo()
    assert table.item(0, TARGET).text() == "preset calm"
    remote.undo_stack.undo()  # the rename: names and bindings back
    assert panel.names() == ["B", "A"]  # a renamed preset goes last
    assert [b.pin for b in remote.patch.bindings.values()] == ["A", "A", "B"]
    assert item_text(panel, "A") == "A  ◉ osc:/scene/a, midi:note:1:40"


def test_the_crossfader_learns_from_its_button_and_its_menu(
    qtbot: Any, remote: QtEditorWindow, engine: FakeEngine, dialogs: ScriptedDialogs
) -> None:
    panel = remote.presets_panel
    assert panel.crossfader_learn.isEnabled()
    panel.crossfader_learn.click()
    assert engine.of_type("learn")[-1] == {"type": "learn", "node": "@crossfader",
                                           "pin": "position"}  # fmt: skip
    assert remote.statusBar().currentMessage() == "Move a control to bind crossfader… (Esc cancels)"
    assert panel.crossfader_learn.text() == CANCEL_LEARN_TEXT
    engine.deliver({"type": "learned", "node": "@crossfader", "pin": "position",
                    "source": "midi:cc:1:1", "device": ""})  # fmt: skip
    run_frames(remote)
    assert remote.patch.bindings == {
        "binding1": Binding("midi:cc:1:1", "@crossfader", "position", 0.0, 1.0)
    }
    assert panel.crossfader_learn.text() == LEARN_TEXT
    assert "midi:cc:1:1" in panel.crossfader_learn.toolTip()
    assert remote.bindings_panel.table.item(0, TARGET).text() == "crossfader"

    right_click(panel.crossfader, QPoint(4, 4))
    assert panel.menu is not None
    actions = list(panel.menu.actions())
    assert [a.text() for a in actions] == [LEARN_TEXT, BIND_OSC_TEXT, UNBIND_TEXT]
    dialogs.osc_address = "xfade"
    choose(panel, actions, BIND_OSC_TEXT)
    assert remote.patch.bindings["binding2"] == Binding("osc:/xfade", "@crossfader", "position")
    assert remote.statusBar().currentMessage() == "Bound crossfader to osc:/xfade"
    right_click(panel.crossfader, QPoint(4, 4))
    choose(panel, list(panel.menu.actions()), UNBIND_TEXT)  # both, one undo step
    assert remote.patch.bindings == {}
    remote.undo_stack.undo()
    assert len(remote.patch.bindings) == 2


def test_in_process_learn_is_on_and_bound_controls_play_the_engines_deck(
    qtbot: Any, editor: QtEditorWindow, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = FakeBackend([KEYS])
    monkeypatch.setitem(
        FACTORIES, "midi", lambda ctx: MidiService(backend, log=io.StringIO(), scan_seconds=60)
    )
    patch = presets_patch()
    patch.set_binding("binding1", Binding("midi:note:1:36", "@preset", "B"))
    patch.set_binding("binding2", Binding("midi:cc:1:1", "@crossfader", "position"))
    patch.set_binding("binding3", Binding("midi:note:1:37", "@preset", "gone"))
    show_patch(editor, patch)
    panel = editor.presets_panel
    learn = next(a for a in preset_menu(panel, "A") if a.text() == LEARN_TEXT)
    assert learn.isEnabled() and panel.crossfader_learn.isEnabled()
    panel.menu.close()

    assert "midi" in editor.engine.engine.ctx.services  # made by its first frame
    midi: MidiService = editor.engine.engine.ctx.service("midi")
    # a note bound to a preset that is gone is skipped, the others still play
    midi.receive(mido.Message("note_on", channel=0, note=37, velocity=100), KEYS)
    midi.receive(mido.Message("note_on", channel=0, note=36, velocity=100), KEYS)
    run_frames(editor)
    assert editor.patch.value("x", "value") == 10.0
    assert played(editor).output("out") == 10.0
    midi.receive(mido.Message("control_change", channel=0, control=1, value=0), KEYS)
    run_frames(editor)
    assert editor.patch.value("x", "value") == 0.0  # all A
    midi.receive(mido.Message("control_change", channel=0, control=1, value=64), KEYS)
    run_frames(editor)
    assert editor.patch.value("x", "value") == pytest.approx(64 / 127 * 10)
    assert editor.undo_stack.count() == 0  # live values: no undo steps


def test_presets_bindings_screenshot(
    qtbot: Any, remote: QtEditorWindow, engine: FakeEngine
) -> None:
    remote.patch.set_binding("binding1", Binding("midi:note:1:36", "@preset", "A"))
    remote.patch.set_binding("binding2", Binding("midi:cc:1:1", "@crossfader", "position"))
    panel = remote.presets_panel
    choose(panel, preset_menu(panel, "B"), LEARN_TEXT)
    panel.select("A")  # the highlight of the preset learn waits for shows unselected
    dock = remote.docks["Presets"]
    qtbot.waitUntil(lambda: panel.list.isVisible() and panel.crossfader_learn.isVisible())
    image = dock.grab().toImage()
    ARTIFACT.parent.mkdir(parents=True, exist_ok=True)
    assert image.save(str(ARTIFACT))
    assert item_text(panel, "A") == "A  ◉ midi:note:1:36"
    assert item_text(panel, "B") == "B  ⟳ learning…"
    assert panel.crossfader_label.text() == "Crossfade A ↔ B  ◉ midi:cc:1:1"
