"""The Settings dialog (File > Settings…, or a click on a service in the status bar): the OSC input
port and host, the tempo (BPM, and whether the MIDI clock sets it) and MIDI feedback, each
applied live while the show plays.

The port, the tempo and MIDI feedback are patch settings (`osc_port`, `bpm`, `tempo_source`,
`midi_feedback`): a change is one `SettingsCommand` on the undo stack, saved with the file, and
reaches the engine as any settings edit does, where it restarts only the OSC service. The host is
the engine's own choice (as `--osc-host` is), never the file's: a patch from a stranger must not
make the machine listen beyond loopback. The dialog shows the services' statuses as they change,
so a port that is taken, then free, is seen here too.

The fields start from what runs: the port and host OSC uses (its status says where), which may
come from the command line rather than the file; undoing a change puts those back.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QUndoCommand
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.qt.panels.service_status import headline
from evaluators import ServiceStatus
from evaluators.services.osc import DEFAULT_HOST, DEFAULT_PORT
from nodes import DEFAULT_BPM, Patch
from nodes.tempo import MAX_BPM, MIN_BPM

TEMPO_SOURCES = (("internal", "Patch tempo (BPM above, tap)"), ("midi", "MIDI clock"))


@dataclass(frozen=True)
class SettingsChoice:
    """What the person changed: patch settings (new and previous values) and the OSC host
    (None: unchanged)."""

    settings: dict[str, Any]
    previous: dict[str, Any]
    osc_host: str | None


class SettingsCommand(QUndoCommand):
    """Change some patch settings as one undo step (undo puts `previous` back)."""

    def __init__(self, patch: Patch, settings: dict[str, Any], previous: dict[str, Any]) -> None:
        names = ", ".join(sorted(settings))
        super().__init__(f"Change settings ({names})")
        self._patch, self._new, self._old = patch, dict(settings), dict(previous)

    def redo(self) -> None:
        self._patch.update_settings(**self._new)

    def undo(self) -> None:
        self._patch.update_settings(**self._old)


def osc_address(status: ServiceStatus | None, settings: dict[str, Any]) -> tuple[str, int]:
    """(host, port) OSC input uses: where its status says, else the patch's port on loopback."""
    if status is not None and status.address:
        host, _, port = status.address.rpartition(":")
        if port.isdigit():
            return host, int(port)
    return DEFAULT_HOST, int(settings.get("osc_port", DEFAULT_PORT))


class QtSettingsDialog(QDialog):
    """The dialog; `applied` carries a SettingsChoice on Apply and OK (see the module note)."""

    applied = Signal(object)

    def __init__(
        self,
        settings: dict[str, Any],
        statuses: dict[str, ServiceStatus],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.osc_port = QSpinBox()
        self.osc_port.setRange(0, 65535)
        self.osc_port.setSpecialValueText("0 (off)")
        self.osc_port.setToolTip("UDP port OSC input listens on (0: no OSC input)")
        self.osc_host = QLineEdit()
        self.osc_host.setToolTip(
            "Address OSC input listens on: 127.0.0.1 is this machine only; 0.0.0.0 every "
            "network (anyone there can then play the patch's controls)"
        )
        self.osc_status = QLabel()
        self.bpm = QDoubleSpinBox()
        self.bpm.setRange(MIN_BPM, MAX_BPM)
        self.bpm.setDecimals(1)
        self.bpm.setSuffix(" BPM")
        self.tempo_source = QComboBox()
        for key, label in TEMPO_SOURCES:
            self.tempo_source.addItem(label, key)
        self.midi_feedback = QCheckBox("Send bound values back to controllers (motor faders, LEDs)")
        self.midi_status = QLabel()
        self.problem = QLabel()
        self.problem.setStyleSheet("color: #f85149;")
        self.problem.hide()
        for line in (self.osc_status, self.midi_status, self.problem):
            line.setWordWrap(True)

        osc = QGroupBox("OSC input")
        form = QFormLayout(osc)
        form.addRow("Port", self.osc_port)
        form.addRow("Host", self.osc_host)
        form.addRow(self.osc_status)
        tempo = QGroupBox("Tempo")
        form = QFormLayout(tempo)
        form.addRow("Tempo", self.bpm)
        form.addRow("Follow", self.tempo_source)
        midi = QGroupBox("MIDI")
        form = QFormLayout(midi)
        form.addRow(self.midi_feedback)
        form.addRow(self.midi_status)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok
            | QDialogButtonBox.StandardButton.Apply
            | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.apply_button = buttons.button(QDialogButtonBox.StandardButton.Apply)
        self.apply_button.clicked.connect(self.apply)
        self.ok_button = buttons.button(QDialogButtonBox.StandardButton.Ok)
        layout = QVBoxLayout(self)
        for widget in (osc, tempo, midi, self.problem, buttons):
            layout.addWidget(widget)

        host, port = osc_address(statuses.get("osc"), settings)
        self._shown: dict[str, Any] = {
            "osc_port": port,
            "bpm": float(settings.get("bpm", DEFAULT_BPM)),
            "tempo_source": "midi" if settings.get("tempo_source") == "midi" else "internal",
            "midi_feedback": settings.get("midi_feedback") is True,
        }
        self._host = host
        self.osc_port.setValue(port)
        self.osc_host.setText(host)
        self.bpm.setValue(self._shown["bpm"])
        self.tempo_source.setCurrentIndex(self.tempo_source.findData(self._shown["tempo_source"]))
        self.midi_feedback.setChecked(self._shown["midi_feedback"])
        for name in ("osc", "midi"):
            self.show_status(name, statuses.get(name))

    def show_status(self, name: str, status: ServiceStatus | None) -> None:
        """Show a service's status under its fields (None: not opened by this patch yet)."""
        label = {"osc": self.osc_status, "midi": self.midi_status}.get(name)
        if label is None:
            return
        if status is None:
            label.setText("Not in use: opens when the patch needs it (a node, a binding, learn).")
            return
        advice = f" — {status.advice}" if status.state == "off" and status.advice else ""
        color = {"on": "#3fb950", "off": "#f85149"}.get(status.state, "#9e9e9e")
        label.setStyleSheet(f"color: {color};")
        label.setText(headline(name, status) + advice)

    def choice(self) -> SettingsChoice | None:
        """What changed against what the dialog showed; None (and why, in the dialog) when a
        field is not valid."""
        host = self.osc_host.text().strip()
        try:
            host = str(ipaddress.ip_address(host))
        except ValueError:
            self.problem.setText(f"Host {host!r} is not an IP address (e.g. 127.0.0.1, 0.0.0.0)")
            self.problem.show()
            return None
        self.problem.hide()
        wanted = {
            "osc_port": self.osc_port.value(),
            "bpm": round(self.bpm.value(), 1),
            "tempo_source": self.tempo_source.currentData(),
            "midi_feedback": self.midi_feedback.isChecked(),
        }
        changed = {key: value for key, value in wanted.items() if value != self._shown[key]}
        previous = {key: self._shown[key] for key in changed}
        return SettingsChoice(changed, previous, host if host != self._host else None)

    def apply(self) -> bool:
        """Hand the changes over (`applied`); what is shown becomes the new starting point."""
        choice = self.choice()
        if choice is None:
            return False
        if choice.settings or choice.osc_host is not None:
            self._shown.update(choice.settings)
            self._host = choice.osc_host or self._host
            self.applied.emit(choice)
        return True

    def accept(self) -> None:
        if self.apply():
            super().accept()
