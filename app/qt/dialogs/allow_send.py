"""Asking before a patch from a file may send OSC: the targets of its `osc.out` nodes, and a dialog.

A patch file is a stranger's: its `osc.out` nodes could make this machine send packets to any host
they name. So a patch opened from a file sends nothing until the person has seen where it would
send and allowed it (`QtAllowSendDialog`: Allow / Not now). A patch made in the editor sends
without asking, as does any patch with `patchbay edit --allow-send`. The editor keeps the answer
per document and tells whoever runs the patch (the engine's `allow_send` message).
"""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QListWidget, QVBoxLayout, QWidget

from nodes import Patch

OSC_OUT = "osc.out"


def osc_send_targets(patch: Patch) -> list[str]:
    """Where the patch's `osc.out` nodes send (`host:port /address` each, definitions' bodies
    included), in patch order; a target a link sets reads "(from a link)"."""
    found: list[str] = []
    for body in (patch, *patch.definitions.values()):
        for inst in body.nodes.values():
            if inst.type_id != OSC_OUT:
                continue
            parts = {
                pin: "(from a link)" if body.link_into(inst.id, pin) else str(inst.values.get(pin))
                for pin in ("host", "port", "address")
            }
            found.append(f"{parts['host']}:{parts['port']} {parts['address']}")
    return found


class QtAllowSendDialog(QDialog):
    """Lists a patch's OSC targets and asks whether it may send to them."""

    def __init__(self, file_name: str, targets: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Allow OSC sending?")
        text = QLabel(
            f"{file_name} sends OSC messages to these targets. It is a file from elsewhere: it "
            "sends nothing until you allow it."
        )
        text.setWordWrap(True)
        self.targets = QListWidget()
        self.targets.addItems(sorted(set(targets)))
        self.buttons = QDialogButtonBox()
        self.allow_button = self.buttons.addButton("Allow", QDialogButtonBox.ButtonRole.AcceptRole)
        self.later_button = self.buttons.addButton(
            "Not now", QDialogButtonBox.ButtonRole.RejectRole
        )
        self.later_button.setDefault(True)  # Return does not allow by accident
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(self.targets)
        layout.addWidget(self.buttons)
