"""The editor window's live control: learning and binding controls, live values, OSC sending.

`LiveControl` is a controller the editor window (app.qt.window) owns as `live_control`. Learn
(app.qt.panels.bindings' `QtLearn`) arms the engine's learn; its `learned` answer binds the pin, a
preset or the crossfader to the control that moved, as one undo step, and `learn_unreachable` says
why nothing can reach it. "Bind to OSC address…" binds to an address typed. `live_values` from the
engine go into the document as live edits (not sent back, not undone), except pins edited since. A
patch from a file with `osc.out` nodes sends nothing until the person allows it
(app.qt.dialogs.allow_send).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QDialog, QInputDialog

from app.engine.protocol.channel import ProtocolError, decode_value
from app.engine.protocol.messages import AllowSend, Learn, Learned, LearnUnreachable
from app.qt.commands import SetBindingCommand, same_value
from app.qt.dialogs.allow_send import QtAllowSendDialog, osc_send_targets
from app.qt.panels.bindings import (
    LEARN_TAKEOVER,
    QtLearn,
    bindings_of,
    default_range,
    is_special_target,
    special_target_exists,
    target_label,
)
from nodes import EditOp, Patch, PatchError, PatchEvent
from nodes.document.bindings import PRESET_TARGET, Binding

if TYPE_CHECKING:
    from app.qt.window import QtEditorWindow


class LiveControl:
    """The window's live control (see the module note); owned by the window."""

    def __init__(self, window: QtEditorWindow) -> None:
        self.window = window
        self.learn = QtLearn(self._send_learn, window.statusBar().showMessage, window)
        self.always_allow_send = False  # `patchbay edit --allow-send`: every patch may send
        self.send_allowed = True  # whether the document's osc.out nodes may send
        for panel in (window.inspector, window.presets_panel):
            panel.learn_requested.connect(self.learn.toggle)
            panel.bind_osc_requested.connect(self.bind_to_osc_address)
            panel.unbind_requested.connect(self.unbind_pin)
            self.learn.changed.connect(panel.set_learning)

    def set_patch(self, patch: Patch, *, from_file: bool) -> None:
        """A new document: learn stops; a patch `from_file` with `osc.out` nodes may not send
        until the person allows it (unless every patch may)."""
        self.learn.cancel(quiet=True)
        self.send_allowed = self.always_allow_send or not from_file or not osc_send_targets(patch)

    def on_patch_event(self, event: PatchEvent) -> None:
        """A change of the document: learn stops waiting for a node removed, or a preset."""
        learning = self.learn.target
        removed = (
            event.node_id if event.op == EditOp.REMOVE_NODE and event.definition is None else None
        )
        if learning is not None and learning[0] == removed:
            self.learn.cancel()
        elif (
            learning is not None
            and learning[0] == PRESET_TARGET
            and event.op == EditOp.PRESET
            and learning[1] not in self.window.patch.presets
        ):
            self.learn.cancel()  # the preset learn waits for was removed

    def _send_learn(self, message: Learn) -> None:
        self.window.send_edits()  # the pin's node may be new
        self.window.engine.send(message)

    def on_learn_unreachable(self, message: LearnUnreachable) -> None:
        """No source can reach the armed learn: say so now (learn stays armed; Esc cancels)."""
        if self.learn.target != (message.node, message.pin):
            return  # cancelled meanwhile
        label = target_label(*self.learn.target)
        advice = f" ({message.advice})" if message.advice else ""
        line = f"nothing can reach {label}: {message.reason}{advice}"
        self.window.messages.add("learn", line)
        self.window.statusBar().showMessage(f"Learn: {line}", 15000)

    def on_learned(self, message: Learned) -> None:
        """The engine's answer to learn: bind the pin to the control that moved."""
        taken = self.learn.take(message)
        if taken is None:
            return  # cancelled meanwhile
        node_id, pin, source, device = taken
        if self.bind_pin(node_id, pin, source, device):
            self.window.docks["Bindings"].raise_()
            on = f" on {device}" if device else ""
            label = target_label(node_id, pin)
            self.window.statusBar().showMessage(f"Bound {label} to {source}{on}", 8000)

    def bind_pin(self, node_id: str, pin: str, source: str, device: str = "") -> bool:
        """Bind a target to a control as one undo step: a pin of the document over the pin's
        range (app.qt.panels.bindings.default_range, holding its value) taking over by pick-up
        (`LEARN_TAKEOVER`: the control moves nothing until it reaches the value), a preset
        (`@preset`, its name) or the crossfader (`@crossfader`, `position`) over 0..1, at once;
        False (and why) if it cannot be or already is."""
        patch = self.window.patch
        label = target_label(node_id, pin)
        if is_special_target(node_id):
            if not special_target_exists(patch, node_id, pin):
                what = "preset" if node_id == PRESET_TARGET else "target"
                self.window.edit_actions.on_refused(
                    f"cannot bind {label}: the document has no such {what}"
                )
                return False
            low, high, takeover = 0.0, 1.0, "jump"  # a recall or a fader position: at once
        else:
            inst = patch.nodes.get(node_id)
            spec = inst.input(pin) if inst is not None else None
            if inst is None or spec is None:
                self.window.edit_actions.on_refused(
                    f"cannot bind {label}: the document has no such input"
                )
                return False
            low, high = default_range(inst, spec)
            takeover = LEARN_TAKEOVER
        for key in bindings_of(patch, node_id, pin):
            if (patch.bindings[key].source, patch.bindings[key].device) == (source, device):
                self.window.statusBar().showMessage(f"{label} is bound to {source} already", 6000)
                return False
        try:
            binding = Binding(source, node_id, pin, low, high, takeover=takeover, device=device)
        except PatchError as error:
            self.window.edit_actions.on_refused(str(error))
            return False
        text = f"bind {label} to {source}"
        self.window.undo_stack.push(SetBindingCommand(patch, patch.new_binding_id(), binding, text))
        return True

    def bind_to_osc_address(self, node_id: str, pin: str) -> None:
        """ "Bind to OSC address…" (the inspector's pin menu, the presets panel): bind the
        target to an address typed."""
        label = target_label(node_id, pin)
        if node_id == PRESET_TARGET:
            suggested = "/preset/" + "_".join(pin.split())
        elif is_special_target(node_id):
            suggested = "/crossfader"
        else:
            suggested = f"/{node_id}/{pin}"
        address = self.ask_osc_address(label, suggested)
        if not address:
            return
        source = "osc:" + (address if address.startswith("/") else "/" + address)
        if self.bind_pin(node_id, pin, source):
            self.window.statusBar().showMessage(f"Bound {label} to {source}", 8000)

    def unbind_pin(self, node_id: str, pin: str) -> None:
        """Remove the bindings of a target, as one undo step."""
        doomed = bindings_of(self.window.patch, node_id, pin)
        if not doomed:
            return
        label = target_label(node_id, pin)
        self.window.undo_stack.beginMacro(f"remove the binding of {label}")
        for key in doomed:
            self.window.undo_stack.push(
                SetBindingCommand(self.window.patch, key, None, "remove binding")
            )
        self.window.undo_stack.endMacro()
        self.window.statusBar().showMessage(f"{label} is no longer bound", 6000)

    def ask_osc_address(self, target: str, suggested: str) -> str | None:
        """An OSC address to bind `target` (node.pin) to (None: cancelled)."""
        address, accepted = QInputDialog.getText(
            self.window, "Bind to OSC address", f"OSC address driving {target}:", text=suggested
        )
        return address.strip() if accepted else None

    def ask_allow_send(self, targets: list[str]) -> bool:
        """Whether the document's osc.out nodes may send to `targets`."""
        name = self.window.path.name if self.window.path is not None else "This patch"
        return QtAllowSendDialog(name, targets, self.window).exec() == QDialog.DialogCode.Accepted

    def tell_send_allowed(self) -> None:
        """Tell the engine whether the document's osc.out nodes may send."""
        self.window.engine.send(AllowSend(self.send_allowed))

    def offer_allow_send(self) -> None:
        """Ask whether the document's osc.out nodes may send (View > Allow OSC Sending…, and
        on opening a file that has some)."""
        targets = osc_send_targets(self.window.patch)
        if not targets:
            self.window.statusBar().showMessage(
                "This patch has no osc.out node: it sends nothing", 6000
            )
            return
        self.send_allowed = self.ask_allow_send(targets)
        self.tell_send_allowed()
        if not self.send_allowed:
            self.window.messages.add(
                "send",
                f"osc.out nodes send nothing to {', '.join(targets)} "
                "(View > Allow OSC Sending… lets them)",
            )
        count = len(targets)
        state = "may send" if self.send_allowed else "stays off"
        plural = "s" if count != 1 else ""
        self.window.statusBar().showMessage(f"OSC sending to {count} target{plural} {state}", 6000)

    def apply_live_values(self, values: Any, blobs: list[bytes], seq: int = 0) -> None:
        """What the engine's live controls set, as live edits of the document (not sent back,
        not undone); the inspector follows through the patch's events. A pin the document set
        in edits after `seq` (the last the engine had applied) keeps the document's value."""
        for entry in values if isinstance(values, list) else ():
            if not (isinstance(entry, list) and len(entry) == 3):
                continue
            node_id, pin, value = (str(entry[0]), str(entry[1]), entry[2])
            instance = self.window.patch.nodes.get(node_id)
            if instance is None or instance.input(pin) is None:
                continue
            if self.window.edits.edited_after(node_id, pin, seq):
                continue
            with contextlib.suppress(PatchError, ProtocolError, ValueError, TypeError):
                value = decode_value(value, blobs)
                if not same_value(instance.values.get(pin), value):
                    self.window.patch.set_value(node_id, pin, value, live=True)
