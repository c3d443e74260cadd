"""Bindings in the editor: learn from the inspector's pin menu (the engine's `learned` answer is
played by a fake engine), binding to a typed OSC address, the Bindings panel's edits and undo,
targets that are gone, live pins, live values, and the question before a file's `osc.out` nodes
may send (both answers, and `--allow-send`).

The fake engine records what the window sends and hands it messages through `poll`, as the real
client does; the window's loop (its 60 fps timer) reads them."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtGui import QContextMenuEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QLabel,
    QLineEdit,
)

from app.engine.client import RemoteEvaluator
from app.engine.protocol.messages import (
    PROTOCOL_VERSION,
    TO_EDITOR,
    EngineHello,
    Message,
    MessageError,
    decode,
    encode,
)
from app.qt.dialogs.allow_send import QtAllowSendDialog, osc_send_targets
from app.qt.panels.bindings import (
    BIND_OSC_TEXT,
    CANCEL_LEARN_TEXT,
    CURVE,
    HIGH,
    LEARN_TEXT,
    LOW,
    SOURCE,
    TAKEOVER,
    TARGET,
    UNBIND_TEXT,
    default_range,
)
from app.qt.panels.inspector import QtInspector
from app.qt.window import QtEditorWindow
from nodes import LIBRARY, Patch, node, save_patch
from nodes.document.bindings import Binding
from tests.app.conftest import (
    ScriptedDialogs,
    make_editor,
    played,
    press,
    run_frames,
    show_patch,
    stop_loop,
)
from tests.app.test_qt_subpatch import node_center

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


class FakeEngine:
    """Stands in for `EngineClient`: records messages sent, delivers `incoming` on `poll`."""

    def __init__(self) -> None:
        self.hello = EngineHello(schema=PROTOCOL_VERSION, pid=0, rev=0, vrev=0, gl=False)
        self.evaluator = RemoteEvaluator()
        self.sent: list[dict[str, Any]] = []
        self.incoming: list[tuple[Message, list[bytes]]] = []

    def send(self, message: Message, blobs: list[bytes] | None = None) -> bool:
        self.sent.append(encode(message))  # as the channel carries it
        return True

    def poll(self) -> list[tuple[Message, list[bytes]]]:
        delivered, self.incoming = self.incoming, []
        return delivered

    def deliver(self, raw: dict[str, Any]) -> None:
        """Hand the editor a message as the client reads it off the channel (which skips what
        is no message of the protocol)."""
        with contextlib.suppress(MessageError):
            self.incoming.append((decode(raw, TO_EDITOR), []))

    def close(self, **_options: Any) -> None:
        pass

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.sent if m.get("type") == kind]

    def binding_ops(self) -> list[dict[str, Any]]:
        return [op for m in self.of_type("edits") for op in m["ops"] if op["op"] == "binding"]


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine()


@pytest.fixture
def remote(qtbot: Any, tmp_path: Path, dialogs: ScriptedDialogs, engine: FakeEngine) -> Iterator:
    """An editor window whose patch runs in the fake engine; its loop turns when the test turns
    it (`run_frames`: the window sends its edits, then handles what the fake delivers)."""
    window = make_editor(qtbot, tmp_path / "state", dialogs, engine)
    stop_loop(window)
    yield window
    dialogs.unsaved_answer = "discard"
    window.close()


def knobs_patch() -> Patch:
    patch = Patch()
    patch.add_node("input.float", {"value": 2.0, "min": 0.0, "max": 10.0}, (0, 0), node_id="knob")
    patch.add_node("math.add", {"a": 1.0, "b": 0.5}, (250, 0), node_id="add")
    patch.add_node("time.lfo", None, (0, 200), node_id="lfo")
    patch.add_node("input.toggle", None, (250, 200), node_id="switch")
    patch.connect("knob", "out", "add", "a")
    return patch


def inspect(window: QtEditorWindow, node_id: str) -> None:
    window.canvas.select([node_id])
    assert window.inspector.node_id == node_id


def right_click(widget: Any) -> None:
    """A context-menu event on `widget`, as a right-click there sends."""
    where = QPoint(4, 4)
    event = QContextMenuEvent(QContextMenuEvent.Reason.Mouse, where, widget.mapToGlobal(where))
    QApplication.sendEvent(widget, event)


def menu_action(window: QtEditorWindow, text: str) -> Any:
    menu = window.inspector.menu
    assert menu is not None and menu.isVisible()
    found = [action for action in menu.actions() if action.text() == text]
    assert found, f"no {text!r} in {[a.text() for a in menu.actions()]}"
    return found[0]


def choose(window: QtEditorWindow, widget: Any, text: str) -> None:
    """Right-click `widget` in the inspector and choose `text` in the pin menu."""
    right_click(widget)
    action = menu_action(window, text)
    window.inspector.menu.close()
    action.trigger()


def test_learn_from_the_inspector_binds_with_undo_and_redo(
    qtbot: Any, remote: QtEditorWindow, engine: FakeEngine
) -> None:
    show_patch(remote, knobs_patch())
    inspect(remote, "knob")
    label = remote.inspector.pin_label("value")
    choose(remote, label, LEARN_TEXT)
    assert engine.of_type("learn")[-1] == {"type": "learn", "node": "knob", "pin": "value"}
    assert remote.statusBar().currentMessage() == "Move a control to bind knob.value… (Esc cancels)"
    assert "background" in label.styleSheet() and "learning" in label.text()

    engine.deliver({"type": "learned", "node": "knob", "pin": "value",
                    "source": "midi:cc:1:7", "device": "nanoKONTROL2"})  # fmt: skip
    run_frames(remote)
    assert remote.patch.bindings
    # the slider's range (the node's min / max), and the device the control moved on
    expected = Binding(
        "midi:cc:1:7", "knob", "value", 0.0, 10.0, takeover="pickup", device="nanoKONTROL2"
    )
    assert remote.patch.bindings == {"binding1": expected}
    assert remote.statusBar().currentMessage() == "Bound knob.value to midi:cc:1:7 on nanoKONTROL2"
    assert "◉ midi:cc:1:7" in label.text() and "background" not in label.styleSheet()
    assert remote.live_control.learn.target is None
    assert remote.bindings_panel.ids == ["binding1"]
    run_frames(remote)  # the edit goes to the engine at the start of the next turn
    assert len(engine.binding_ops()) == 1
    assert engine.binding_ops()[0] == {"op": "binding", "id": "binding1",
                                       "binding": expected.to_dict()}  # fmt: skip

    remote.undo_stack.undo()
    assert remote.patch.bindings == {}
    assert "◉" not in label.text() and remote.bindings_panel.ids == []
    run_frames(remote)
    assert engine.binding_ops()[-1]["binding"] is None
    remote.undo_stack.redo()
    assert remote.patch.bindings == {"binding1": expected}
    assert "◉ midi:cc:1:7" in label.text() and remote.bindings_panel.ids == ["binding1"]
    choose(remote, label, UNBIND_TEXT)  # one step that undo takes back
    assert remote.patch.bindings == {}
    remote.undo_stack.undo()
    assert remote.patch.bindings == {"binding1": expected}


def test_learn_ranges_follow_the_pin_type_and_learn_can_be_cancelled(
    qtbot: Any, remote: QtEditorWindow, engine: FakeEngine
) -> None:
    show_patch(remote, knobs_patch())
    inspect(remote, "lfo")
    field = remote.inspector.pin_widget("shape")  # an int: a MIDI control's 0..127
    choose(remote, field.findChild(QLineEdit), LEARN_TEXT)  # the text inside the spin box
    engine.deliver({"type": "learned", "node": "lfo", "pin": "shape", "source": "midi:note:2:60"})
    run_frames(remote)
    assert remote.patch.bindings["binding1"] == Binding(
        "midi:note:2:60", "lfo", "shape", 0, 127, takeover="pickup"
    )

    # Esc cancels; an answer that comes after is ignored
    choose(remote, remote.inspector.pin_label("hz"), LEARN_TEXT)
    assert remote.live_control.learn.target == ("lfo", "hz")
    press(remote.inspector, Qt.Key.Key_Escape)
    assert remote.live_control.learn.target is None
    assert engine.of_type("learn")[-1] == {"type": "learn", "node": None}
    assert "background" not in remote.inspector.pin_label("hz").styleSheet()
    engine.deliver({"type": "learned", "node": "lfo", "pin": "hz", "source": "osc:/late"})
    run_frames(remote)  # taken and handled in the same turn
    assert not engine.incoming
    assert list(remote.patch.bindings) == ["binding1"]

    # a second learn of the pin cancels it
    choose(remote, remote.inspector.pin_label("hz"), LEARN_TEXT)
    choose(remote, remote.inspector.pin_label("hz"), CANCEL_LEARN_TEXT)
    assert remote.live_control.learn.target is None
    assert engine.of_type("learn")[-1] == {"type": "learn", "node": None}

    # a bool (toggle) gets 0..1, and deleting the node learn waits for cancels it
    inspect(remote, "switch")
    choose(remote, remote.inspector.pin_widget("value"), LEARN_TEXT)
    remote.edit_actions.delete_selection()
    assert remote.live_control.learn.target is None
    remote.undo_stack.undo()
    inspect(remote, "switch")
    choose(remote, remote.inspector.pin_widget("value"), LEARN_TEXT)
    engine.deliver({"type": "learned", "node": "switch", "pin": "value", "source": "osc:/go"})
    run_frames(remote)
    assert len(remote.patch.bindings) == 2
    assert remote.patch.bindings["binding2"] == Binding(
        "osc:/go", "switch", "value", 0.0, 1.0, takeover="pickup"
    )


@pytest.mark.parametrize(
    ("type_id", "values", "pin", "expected"),
    [
        ("math.mul", {"b": 3.0}, "b", (0.0, 6.0)),  # no range declared: the value in the middle
        ("math.mul", {"b": 0.5}, "b", (0.0, 1.0)),
        ("math.add", {"b": -3.0}, "b", (-7.0, 1.0)),
        ("input.float", {"value": 2.0, "min": 0.0, "max": 10.0}, "value", (0.0, 10.0)),
        ("input.float", {"value": 15.0, "min": 0.0, "max": 10.0}, "value", (0.0, 30.0)),
        ("time.beat", {"beats_per_bar": 4}, "beats_per_bar", (1.0, 64.0)),  # declared
        ("gpu.noise", {"scale": 8.0}, "scale", (0.0, 16.0)),  # declared minimum 0 only
        ("gpu.levels", {"gamma": 1.0}, "gamma", (0.01, 1.01)),
        ("time.lfo", {"shape": 200}, "shape", (0.0, 400.0)),  # an int past 0..127
    ],
)
def test_a_new_binding_range_holds_the_pin_value(
    type_id: str, values: dict, pin: str, expected: tuple[float, float]
) -> None:
    patch = Patch()
    node_id = patch.add_node(type_id, values)
    inst = patch.node(node_id)
    low, high = default_range(inst, inst.input(pin))
    assert (low, high) == pytest.approx(expected)
    assert low <= patch.value(node_id, pin) <= high


def test_bind_to_a_typed_osc_address_and_no_menu_for_linked_or_text_pins(
    remote: QtEditorWindow, dialogs: ScriptedDialogs
) -> None:
    show_patch(remote, knobs_patch())
    inspect(remote, "add")
    assert remote.inspector.pin_menu("a") is None  # linked: its link drives it
    dialogs.osc_address = "fader/3"
    choose(remote, remote.inspector.pin_label("b"), BIND_OSC_TEXT)
    assert remote.patch.bindings == {
        "binding1": Binding("osc:/fader/3", "add", "b", 0.0, 1.0, takeover="pickup")
    }
    dialogs.osc_address = "/no spaces allowed"
    choose(remote, remote.inspector.pin_label("b"), BIND_OSC_TEXT)
    assert len(remote.patch.bindings) == 1
    assert "binding source" in remote.statusBar().currentMessage()
    assert remote.undo_stack.count() == 1


def test_learn_is_on_with_the_in_process_engine(editor: QtEditorWindow) -> None:
    show_patch(editor, knobs_patch())
    inspect(editor, "add")
    menu = editor.inspector.pin_menu("b")
    assert menu is not None
    learn = next(a for a in menu.actions() if a.text() == LEARN_TEXT)
    assert learn.isEnabled()


def bound_patch() -> Patch:
    patch = knobs_patch()
    patch.set_binding("binding1", Binding("midi:cc:1:7", "knob", "value", 0.0, 10.0))
    patch.set_binding("binding2", Binding("osc:/fader/1", "add", "b", 0.0, 1.0))
    return patch


def test_the_panel_edits_bindings_one_undo_step_each(
    qtbot: Any, editor: QtEditorWindow, dialogs: ScriptedDialogs
) -> None:
    show_patch(editor, bound_patch())
    panel = editor.bindings_panel
    editor.docks["Bindings"].raise_()
    assert panel.ids == ["binding1", "binding2"]
    assert panel.table.item(0, SOURCE).text() == "midi:cc:1:7"
    assert panel.table.item(1, TARGET).text() == "add · math.add › b"
    bindings = editor.patch.bindings

    low: QDoubleSpinBox = panel.widget_at("binding1", LOW)
    assert (low.value(), panel.widget_at("binding1", HIGH).value()) == (0.0, 10.0)
    low.setValue(2.5)
    assert bindings["binding1"].low == 2.5 and editor.undo_stack.count() == 1
    curve: QComboBox = panel.widget_at("binding2", CURVE)
    curve.setCurrentText("exponential")
    takeover: QComboBox = panel.widget_at("binding2", TAKEOVER)
    takeover.setCurrentText("pickup")
    assert (bindings["binding2"].curve, bindings["binding2"].takeover) == ("exponential", "pickup")
    panel.table.item(1, SOURCE).setText("osc:/fader/2")
    assert bindings["binding2"].source == "osc:/fader/2"
    assert editor.undo_stack.count() == 4
    panel.table.item(1, SOURCE).setText("fader 2")  # names no control: refused, shown as it was
    assert bindings["binding2"].source == "osc:/fader/2"
    assert panel.table.item(1, SOURCE).text() == "osc:/fader/2"
    assert "binding source" in editor.statusBar().currentMessage()
    assert editor.undo_stack.count() == 4

    for _ in range(4):
        editor.undo_stack.undo()
    assert bindings == bound_patch().bindings
    assert low.value() == 0.0 and curve.currentText() == "linear"  # the same widgets, updated
    assert panel.table.item(1, SOURCE).text() == "osc:/fader/1"

    # Delete removes the selected rows, one step
    panel.table.selectRow(0)
    panel.table.setFocus()
    press(panel.table, Qt.Key.Key_Delete)
    assert list(editor.patch.bindings) == ["binding2"] and panel.ids == ["binding2"]
    assert len(editor.patch.nodes) == 4  # the key went to the table, not to the canvas
    panel.table.selectAll()
    panel.delete_button.click()
    assert editor.patch.bindings == {} and panel.empty_label.isVisibleTo(panel)
    editor.undo_stack.undo()
    editor.undo_stack.undo()
    assert editor.patch.bindings == bound_patch().bindings and panel.ids == ["binding1", "binding2"]


def test_a_binding_whose_node_is_gone_shows_missing_and_targets_select_nodes(
    qtbot: Any, editor: QtEditorWindow
) -> None:
    show_patch(editor, bound_patch())
    panel = editor.bindings_panel
    editor.canvas.select(["add"])
    editor.edit_actions.delete_selection()
    target = panel.table.item(1, TARGET)
    assert target.text() == "add.b (missing)" and target.font().italic()
    assert target.foreground().color().getRgb()[:3] == (130, 130, 130)
    assert "binding2" in editor.patch.bindings  # kept: undo brings the node back
    editor.undo_stack.undo()
    assert panel.table.item(1, TARGET).text() == "add · math.add › b"
    assert not panel.table.item(1, TARGET).font().italic()

    editor.canvas.select([])
    panel.table.cellDoubleClicked.emit(1, TARGET)
    assert editor.canvas.selected_ids() == ["add"]
    assert editor.inspector.node_id == "add"
    assert "◉ osc:/fader/1" in editor.inspector.pin_label("b").text()


def test_panel_and_learn_state_screenshot(
    qtbot: Any, remote: QtEditorWindow, engine: FakeEngine
) -> None:
    patch = bound_patch()
    patch.set_binding("binding3", Binding("midi:note:10:36", "gone", "value", 0, 1))
    patch.set_binding("binding4", Binding("osc:/scene", "@crossfader", "position"))
    show_patch(remote, patch)
    remote.docks["Bindings"].raise_()
    table = remote.bindings_panel.table
    qtbot.waitUntil(table.isVisible)
    remote.resizeDocks([remote.docks["Bindings"]], [260], Qt.Orientation.Vertical)
    qtbot.waitUntil(lambda: table.height() > 150)
    inspect(remote, "add")
    label = remote.inspector.pin_label("b")
    choose(remote, label, LEARN_TEXT)
    # shown and laid out (Qt does both later, in the event loop): the grab shows the row
    qtbot.waitUntil(lambda: label.isVisible() and label.width() >= label.sizeHint().width())
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    picture = remote.grab()
    assert picture.save(str(ARTIFACTS / "bindings_panel.png"))
    assert remote.bindings_panel.table.item(2, TARGET).text() == "gone.value (missing)"
    assert remote.bindings_panel.table.item(3, TARGET).text() == "crossfader"


# ------------------------------------------------------------------ live pins and live values
@pytest.fixture
def live_node() -> Iterator[str]:
    @node("test.live_meter", hints={"level": "live"})
    def live_meter(level: float = 0.0, gain: float = 1.0) -> float:
        return level * gain

    yield "test.live_meter"
    del LIBRARY["test.live_meter"]


def test_live_pins_are_read_only(qtbot: Any, live_node: str) -> None:
    patch = Patch()
    patch.add_node(live_node, None, node_id="meter")
    inspector = QtInspector()
    qtbot.addWidget(inspector)
    inspector.set_node(patch, "meter")
    field = inspector.pin_widget("level")
    assert isinstance(field, QLabel) and field.text() == "0.0"
    assert isinstance(inspector.pin_widget("gain"), QDoubleSpinBox)
    assert inspector.pin_menu("level") is None  # the runtime drives it: no binding
    assert inspector.pin_menu("gain") is not None
    patch.set_value("meter", "level", 0.25, live=True)
    inspector.refresh_values()
    assert field.text() == "0.25"


def test_live_values_from_the_engine_go_into_the_document(
    qtbot: Any, remote: QtEditorWindow, engine: FakeEngine
) -> None:
    patch = knobs_patch()
    show_patch(remote, patch)
    inspect(remote, "knob")
    revision = patch.value_revision
    engine.deliver({"type": "live_values", "values": [["knob", "value", 7.5],
                    ["knob", "nope", 1.0], ["ghost", "value", 1.0], ["add", "b", "text"],
                    "garbage"]})  # fmt: skip
    run_frames(remote)
    assert patch.value("knob", "value") == 7.5
    assert remote.inspector.pin_widget("value").number.value() == 7.5  # the inspector follows
    assert patch.value("add", "b") == 0.5
    assert patch.value_revision == revision and remote.undo_stack.count() == 0
    engine.deliver({"type": "live_values", "values": "garbage"})
    run_frames(remote)
    assert not engine.incoming
    remote.send_edits()
    assert not any(op["op"] == "set_value" for m in engine.of_type("edits") for op in m["ops"])


# ------------------------------------------------------------------ allow-send
def osc_patch_file(tmp_path: Path) -> Path:
    patch = Patch()
    patch.add_node("time.frame", None, node_id="frame")
    patch.add_node("osc.out", {"host": "10.0.0.7", "port": 7000, "address": "/x"}, node_id="send")
    patch.connect("frame", "out", "send", "in")
    path = tmp_path / "sends.patchbay"
    save_patch(patch, path)
    return path


def test_the_allow_send_dialog_answers(qtbot: Any) -> None:
    for button, expected in (("allow_button", QDialog.DialogCode.Accepted),
                             ("later_button", QDialog.DialogCode.Rejected)):  # fmt: skip
        dialog = QtAllowSendDialog("sends.patchbay", ["10.0.0.7:7000 /x", "127.0.0.1:9001 /y"])
        qtbot.addWidget(dialog)
        assert [dialog.targets.item(i).text() for i in range(2)] == [
            "10.0.0.7:7000 /x",
            "127.0.0.1:9001 /y",
        ]
        QTimer.singleShot(0, getattr(dialog, button).click)
        assert dialog.exec() == expected


def test_a_file_with_osc_out_sends_only_once_allowed(
    tmp_path: Path, remote: QtEditorWindow, engine: FakeEngine, dialogs: ScriptedDialogs
) -> None:
    path = osc_patch_file(tmp_path)
    dialogs.allow_send = False
    assert remote.file_actions.open_path(path)
    assert dialogs.asked_allow_send == [["10.0.0.7:7000 /x"]]
    kinds = [m["type"] for m in engine.sent]
    patch_at = len(kinds) - 1 - kinds[::-1].index("patch")
    assert engine.sent[patch_at - 1] == {"type": "allow_send", "allow": False}  # before it plays
    assert (
        engine.of_type("allow_send")[-1]["allow"] is False and not remote.live_control.send_allowed
    )

    dialogs.allow_send = True
    remote.live_control.offer_allow_send()  # View > Allow OSC Sending…
    assert engine.of_type("allow_send")[-1] == {"type": "allow_send", "allow": True}
    remote.send_patch()  # a restarted engine hears it again, before the patch
    kinds = [m["type"] for m in engine.sent]
    assert kinds[-5:-3] == ["allow_send", "patch"] and engine.sent[-5]["allow"] is True

    assert remote.file_actions.open_path(path, ask=False)
    assert len(dialogs.asked_allow_send) == 3 and remote.live_control.send_allowed

    remote.file_actions.new_patch()  # made here: sends without asking
    assert remote.live_control.send_allowed and engine.of_type("allow_send")[-1]["allow"] is True
    remote.live_control.always_allow_send = True  # patchbay edit --allow-send
    dialogs.allow_send = False
    assert remote.file_actions.open_path(path, ask=False)
    assert len(dialogs.asked_allow_send) == 3 and remote.live_control.send_allowed


def test_allow_send_reaches_the_in_process_engine(
    tmp_path: Path, editor: QtEditorWindow, dialogs: ScriptedDialogs
) -> None:
    options = editor.engine.engine.ctx.services.options
    path = osc_patch_file(tmp_path)
    assert editor.file_actions.new_patch()
    run_frames(editor)
    assert options.get("allow_send") is True  # a new patch, made here
    assert editor.file_actions.open_path(path)
    run_frames(editor)
    assert options["allow_send"] is False
    assert osc_send_targets(editor.patch) == ["10.0.0.7:7000 /x"]
    dialogs.allow_send = True
    editor.live_control.offer_allow_send()
    run_frames(editor)
    assert options["allow_send"] is True


def test_edit_passes_allow_send_to_the_editor(monkeypatch: Any) -> None:
    import app.qt.launch
    from app.cli.main import main

    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(app.qt.launch, "run_editor", lambda *a, **k: calls.append(k) or 0)
    assert main(["edit", "show.patchbay", "--allow-send"]) == 0
    assert main(["edit", "show.patchbay"]) == 0
    assert calls[0]["allow_send"] and "--allow-send" in calls[0]["engine_args"]
    assert not calls[1]["allow_send"]


def test_closing_the_window_stops_learn_and_its_escape_key(
    qtbot: Any, remote: QtEditorWindow, engine: FakeEngine, dialogs: ScriptedDialogs
) -> None:
    show_patch(remote, knobs_patch())
    inspect(remote, "add")
    choose(remote, remote.inspector.pin_label("b"), LEARN_TEXT)
    dialogs.unsaved_answer = "discard"
    remote.close()
    assert remote.live_control.learn.target is None
    assert engine.of_type("learn")[-1] == {"type": "learn", "node": None}
    other = QLineEdit()
    qtbot.addWidget(other)
    sent = len(engine.sent)
    press(other, Qt.Key.Key_Escape)  # no longer taken by the closed window's learn
    assert len(engine.sent) == sent


def test_a_bound_mark_shows_sources_as_text(qtbot: Any) -> None:
    patch = knobs_patch()
    patch.set_binding("binding1", Binding("osc:/<b>loud</b>", "add", "b"))
    inspector = QtInspector()
    qtbot.addWidget(inspector)
    inspector.set_node(patch, "add")
    assert "◉ osc:/&lt;b&gt;loud&lt;/b&gt;" in inspector.pin_label("b").text()


@pytest.fixture
def fake_osc(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The OSC (and MIDI) services of the in-process engine: what the test sends is the next
    frame's control events. Ask for it before `editor`, so the engine never opens real ones."""
    from evaluators.services.registry import FACTORIES
    from tests.evaluators.test_controls import FakeService

    osc, midi = FakeService(), FakeService()
    monkeypatch.setitem(FACTORIES, "osc", lambda ctx: osc)
    monkeypatch.setitem(FACTORIES, "midi", lambda ctx: midi)
    return osc


def click_menu_item(menu: Any, text: str) -> None:
    """Click the item `text` of an open menu, as the pointer does."""
    action = next(a for a in menu.actions() if a.text() == text)
    point = menu.actionGeometry(action).center()
    QTest.mouseClick(menu, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, point)


def test_learn_keeps_the_value_it_binds_and_picks_it_up(
    fake_osc: Any, editor: QtEditorWindow, qtbot: Any
) -> None:
    """A gain at 3.0 (no declared range) learned from a fader resting at 0.2: neither the
    learning message nor the fader's next ones move it; it follows once the fader reaches it."""
    patch = Patch()
    patch.add_node("value.float", {"value": 1.0}, (0, 0), node_id="level")
    patch.add_node("math.mul", {"b": 3.0}, (300, 0), node_id="gain")
    patch.add_node("output.value", None, (600, 0), node_id="out")
    patch.connect("level", "out", "gain", "a")
    patch.connect("gain", "out", "out", "in")
    show_patch(editor, patch)
    viewport = editor.canvas.viewer().viewport()
    QTest.mouseClick(viewport, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier,
                     node_center(editor, "gain"))  # fmt: skip
    assert editor.inspector.node_id == "gain"
    right_click(editor.inspector.pin_label("b"))
    click_menu_item(editor.inspector.menu, LEARN_TEXT)
    assert editor.live_control.learn.target == ("gain", "b")

    def fader(x: float, frames: int = 1) -> float:
        for _ in range(frames):
            fake_osc.send("osc:/fader/1", x)
            run_frames(editor)
        return editor.patch.value("gain", "b")

    qtbot.waitUntil(lambda: fader(0.2) is not None and bool(editor.patch.bindings))
    assert editor.patch.bindings == {
        "binding1": Binding("osc:/fader/1", "gain", "b", 0.0, 6.0, takeover="pickup")
    }  # the value in the middle of the range; pick-up
    assert editor.undo_stack.undoText() == "bind gain.b to osc:/fader/1"
    assert fader(0.2, frames=5) == 3.0  # the fader rests where it was learned: nothing moves
    assert played(editor).output("out") == 3.0
    assert fader(0.4) == 3.0  # on its way up, not there yet
    assert fader(0.6) == pytest.approx(3.6)  # crossed the value: picked up
    assert fader(0.7) == pytest.approx(4.2)  # and followed
    assert played(editor).output("out") == pytest.approx(4.2)
    assert fader(0.7, frames=20) == pytest.approx(4.2)  # resting: the panels catch up
    editor.docks["Bindings"].raise_()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    QApplication.processEvents()  # the window's loop: widgets added since are shown
    editor.grab().save(str(ARTIFACTS / "showfix-learn.png"))
