"""The editor window's live control: learning and binding controls, live values, OSC sending.

`LiveControl` is a part of `QtEditorWindow` (app.qt.window). Learn (app.qt.panels.bindings'
`QtLearn`) arms the engine's learn; its `learned` answer binds the pin, a preset or the crossfader
to the control that moved, as one undo step, and `learn_unreachable` says why nothing can reach it.
"Bind to OSC address…" binds to an address typed. `live_values` from the engine go into the
document as live edits (not sent back, not undone), except pins edited since. A patch from a
file with `osc.out` nodes sends nothing until the person allows it (app.qt.dialogs.allow_send).
"""

from __future__ import annotations

import contextlib
from typing import Any

from PySide6.QtWidgets import QDialog, QInputDialog

from app.engine.protocol.channel import ProtocolError, decode_value
from app.engine.protocol.messages import AllowSend, Learn, Learned, LearnUnreachable
from app.qt.commands import SetBindingCommand, same_value
from app.qt.dialogs.allow_send import QtAllowSendDialog, osc_send_targets
from app.qt.panels.bindings import (
    bindings_of,
    default_range,
    is_special_target,
    special_target_exists,
    target_label,
)
from nodes import PatchError
from nodes.document.bindings import PRESET_TARGET, Binding


class LiveControl:
    """The window's live control (see the module note); mixed into `QtEditorWindow`."""

    def _send_learn(self, message: Learn) -> None:
        self.send_edits()  # the pin's node may be new
        self.engine.send(message)

    def _on_learn_unreachable(self, message: LearnUnreachable) -> None:
        """No source can reach the armed learn: say so now (learn stays armed; Esc cancels)."""
        if self.learn.target != (message.node, message.pin):
            return  # cancelled meanwhile
        label = target_label(*self.learn.target)
        advice = f" ({message.advice})" if message.advice else ""
        line = f"nothing can reach {label}: {message.reason}{advice}"
        self.messages.add("learn", line)
        self.statusBar().showMessage(f"Learn: {line}", 15000)

    def _on_learned(self, message: Learned) -> None:
        """The engine's answer to learn: bind the pin to the control that moved."""
        taken = self.learn.take(message)
        if taken is None:
            return  # cancelled meanwhile
        node_id, pin, source, device = taken
        if self.bind_pin(node_id, pin, source, device):
            self.docks["Bindings"].raise_()
            on = f" on {device}" if device else ""
            label = target_label(node_id, pin)
            self.statusBar().showMessage(f"Bound {label} to {source}{on}", 8000)

    def bind_pin(self, node_id: str, pin: str, source: str, device: str = "") -> bool:
        """Bind a target to a control as one undo step: a pin of the document over the pin's
        range (app.qt.panels.bindings.default_range), a preset (`@preset`, its name) or the
        crossfader (`@crossfader`, `position`) over 0..1; False (and why) if it cannot be or
        already is."""
        patch = self.patch
        label = target_label(node_id, pin)
        if is_special_target(node_id):
            if not special_target_exists(patch, node_id, pin):
                what = "preset" if node_id == PRESET_TARGET else "target"
                self._on_refused(f"cannot bind {label}: the document has no such {what}")
                return False
            low, high = 0.0, 1.0
        else:
            inst = patch.nodes.get(node_id)
            spec = inst.input(pin) if inst is not None else None
            if inst is None or spec is None:
                self._on_refused(f"cannot bind {label}: the document has no such input")
                return False
            low, high = default_range(inst, spec)
        for key in bindings_of(patch, node_id, pin):
            if (patch.bindings[key].source, patch.bindings[key].device) == (source, device):
                self.statusBar().showMessage(f"{label} is bound to {source} already", 6000)
                return False
        try:
            binding = Binding(source, node_id, pin, low, high, device=device)
        except PatchError as error:
            self._on_refused(str(error))
            return False
        text = f"bind {label} to {source}"
        self.undo_stack.push(SetBindingCommand(patch, patch.new_binding_id(), binding, text))
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
            self.statusBar().showMessage(f"Bound {label} to {source}", 8000)

    def unbind_pin(self, node_id: str, pin: str) -> None:
        """Remove the bindings of a target, as one undo step."""
        doomed = bindings_of(self.patch, node_id, pin)
        if not doomed:
            return
        label = target_label(node_id, pin)
        self.undo_stack.beginMacro(f"remove the binding of {label}")
        for key in doomed:
            self.undo_stack.push(SetBindingCommand(self.patch, key, None, "remove binding"))
        self.undo_stack.endMacro()
        self.statusBar().showMessage(f"{label} is no longer bound", 6000)

    def ask_osc_address(self, target: str, suggested: str) -> str | None:
        """An OSC address to bind `target` (node.pin) to (None: cancelled)."""
        address, accepted = QInputDialog.getText(
            self, "Bind to OSC address", f"OSC address driving {target}:", text=suggested
        )
        return address.strip() if accepted else None

    def ask_allow_send(self, targets: list[str]) -> bool:
        """Whether the document's osc.out nodes may send to `targets`."""
        name = self.path.name if self.path is not None else "This patch"
        return QtAllowSendDialog(name, targets, self).exec() == QDialog.DialogCode.Accepted

    def _tell_send_allowed(self) -> None:
        """Tell the engine whether the document's osc.out nodes may send."""
        self.engine.send(AllowSend(self.send_allowed))

    def offer_allow_send(self) -> None:
        """Ask whether the document's osc.out nodes may send (View > Allow OSC Sending…, and
        on opening a file that has some)."""
        targets = osc_send_targets(self.patch)
        if not targets:
            self.statusBar().showMessage("This patch has no osc.out node: it sends nothing", 6000)
            return
        self.send_allowed = self.ask_allow_send(targets)
        self._tell_send_allowed()
        if not self.send_allowed:
            self.messages.add(
                "send",
                f"osc.out nodes send nothing to {', '.join(targets)} "
                "(View > Allow OSC Sending… lets them)",
            )
        count = len(targets)
        state = "may send" if self.send_allowed else "stays off"
        plural = "s" if count != 1 else ""
        self.statusBar().showMessage(f"OSC sending to {count} target{plural} {state}", 6000)

    def _apply_live_values(self, values: Any, blobs: list[bytes], seq: int = 0) -> None:
        """What the engine's live controls set, as live edits of the document (not sent back,
        not undone); the inspector follows through the patch's events. A pin the document set
        in edits after `seq` (the last the engine had applied) keeps the document's value."""
        for entry in values if isinstance(values, list) else ():
            if not (isinstance(entry, list) and len(entry) == 3):
                continue
            node_id, pin, value = (str(entry[0]), str(entry[1]), entry[2])
            instance = self.patch.nodes.get(node_id)
            if instance is None or instance.input(pin) is None:
                continue
            if self._edits.edited_after(node_id, pin, seq):
                continue
            with contextlib.suppress(PatchError, ProtocolError, ValueError, TypeError):
                value = decode_value(value, blobs)
                if not same_value(instance.values.get(pin), value):
                    self.patch.set_value(node_id, pin, value, live=True)
