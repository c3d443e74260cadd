"""The editor window's transport: pause, steps, rate, fixed step, reset, tempo, taps and nudges.

`TransportActions` is a controller the editor window (app.qt.window) owns as `transport_actions`, in
the View menu and the Transport toolbar. The window keeps the patch clock of its session (what the
status bar shows, and what a resent patch restores) and sends each change to the engine, which runs
the frames: a step is one `FRAME_INTERVAL_MS` of patch time (or one fixed step), a nudge shifts
every `time.beat` by `NUDGE_BEATS`, a resync makes the next frame a downbeat. Tap tempo sets the
patch's `bpm` setting, which reaches the engine as any settings edit; so does a tempo typed in the
toolbar's BPM field, as one undo step (as in File > Settings).

The toolbar shows the tempo as it plays: the BPM field (the document's tempo, followed while the
field is not being edited), a beat light lit for the first `BEAT_LIGHT_BEATS` of each beat and the
transport's bar.beat (1.1 is the first beat of the first bar, 4 beats a bar), both from the
engine's reports (`show_beat`, each new report). The Pause button is checked and says "Paused"
while paused; "Reset Time" says what it resets.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QAbstractSpinBox, QDoubleSpinBox, QLabel, QMenu

from app.engine.protocol.messages import FixedStep, Nudge, Pause, Rate, ResetTime, ResyncBeats, Step
from app.qt.dialogs.settings import SettingsCommand
from nodes import DEFAULT_BPM, TapTempo
from nodes.tempo import MAX_BPM, MIN_BPM

if TYPE_CHECKING:
    from app.qt.window import QtEditorWindow

FRAME_INTERVAL_MS = 16  # the window's loop, and one step of patch time
NUDGE_BEATS = 0.05  # how far one nudge shifts the beat (25 ms at 120 BPM)
FIXED_STEP_FPS = 60.0  # the Fixed step toggle's frames per second of patch time
MIN_RATE, MAX_EDITOR_RATE = 0.1, 4.0  # the rate box's range (the engine takes up to 16)
BEATS_PER_BAR = 4  # the engine's transport counts bars of 4 beats
BEAT_LIGHT_BEATS = 0.25  # the beat light is lit for this much of each beat
LIGHT_STYLE = "border-radius: 7px; border: 1px solid #555; background: {};"
LIGHT_ON, LIGHT_OFF = "#ffb000", "#3a3a3a"


class TransportActions:
    """The window's transport (see the module note); owned by the window."""

    def __init__(self, window: QtEditorWindow) -> None:
        self.window = window
        self.taps = TapTempo()
        self.tap_clock = time.monotonic  # tests tap on a clock of their own

    def build_menu(self, view: QMenu) -> None:
        """The transport's actions in the View menu, and its toolbar."""
        self.pause_action = self.window.add_action(
            view, "&Pause / resume", self.toggle_pause, "Space"
        )
        self.step_action = self.window.add_action(view, "S&tep one frame", self.step_frame, ".")
        self.step_back_action = self.window.add_action(
            view, "Step &back one frame", self.step_back, ","
        )
        self.pause_action.setCheckable(True)  # checked while paused
        self.reset_time_action = self.window.add_action(
            view, "&Reset Time", self.reset_time, "Ctrl+Home"
        )
        transport = self.window.addToolBar("Transport")
        transport.setObjectName("Transport")
        view.addSeparator()
        self.tap_action = self.window.add_action(view, "Tap &tempo", self.tap_tempo)
        self.nudge_earlier_action = self.window.add_action(
            view, "Nudge beat &earlier", lambda: self.nudge_beat(NUDGE_BEATS)
        )
        self.nudge_later_action = self.window.add_action(
            view, "Nudge beat &later", lambda: self.nudge_beat(-NUDGE_BEATS)
        )
        self.resync_action = self.window.add_action(view, "Resync to &downbeat", self.resync_beat)
        self.fixed_step_action = self.window.add_action(
            view, "&Fixed step (render)", lambda: self.set_fixed_step(not self._fixed_step)
        )
        self.fixed_step_action.setCheckable(True)
        self.rate_box = QDoubleSpinBox()
        self.rate_box.setRange(MIN_RATE, MAX_EDITOR_RATE)
        self.rate_box.setSingleStep(0.1)
        self.rate_box.setDecimals(2)
        self.rate_box.setValue(1.0)
        self.rate_box.setSuffix("×")
        self.rate_box.setToolTip("Rate: patch time runs at this many times wall time")
        self.rate_box.valueChanged.connect(self.set_rate)
        # Short labels on the toolbar (the menu keeps the long ones, tooltips the keys).
        for action, label in (
            (self.pause_action, "Pause"),
            (self.step_back_action, "◀ Step"),
            (self.step_action, "Step ▶"),
            (self.reset_time_action, "Reset Time"),
            (self.fixed_step_action, "Fixed step"),
            (self.tap_action, "Tap"),
            (self.nudge_earlier_action, "Nudge −"),
            (self.nudge_later_action, "Nudge +"),
            (self.resync_action, "Resync"),
        ):
            action.setIconText(label)
            keys, text = action.shortcut().toString(), action.text().replace("&", "")
            action.setToolTip(f"{text} ({keys})" if keys else text)
        self.fixed_step_action.setToolTip(
            f"Fixed step: every frame advances 1/{FIXED_STEP_FPS:g} s of patch time (rendering)"
        )
        self.reset_time_action.setToolTip(
            "Reset Time: patch time, the frame count and the beat back to 0, so time nodes "
            "start over (Ctrl+Home)"
        )
        self._build_tempo_widgets()
        transport.addActions([self.pause_action, self.step_back_action, self.step_action,
                              self.reset_time_action])  # fmt: skip
        transport.addSeparator()
        transport.addWidget(QLabel(" Rate "))
        transport.addWidget(self.rate_box)
        transport.addAction(self.fixed_step_action)
        transport.addSeparator()
        transport.addWidget(self.bpm_box)
        transport.addWidget(self.beat_light)
        transport.addWidget(self.beat_label)
        transport.addActions([self.tap_action, self.nudge_earlier_action,
                              self.nudge_later_action, self.resync_action])  # fmt: skip
        self.show_paused()

    def _build_tempo_widgets(self) -> None:
        """The BPM field, the beat light and the bar.beat counter (see the module note)."""
        self.bpm_box = QDoubleSpinBox()
        self.bpm_box.setObjectName("bpm")
        self.bpm_box.setRange(MIN_BPM, MAX_BPM)
        self.bpm_box.setDecimals(1)
        self.bpm_box.setSuffix(" BPM")
        self.bpm_box.setKeyboardTracking(False)  # set on Enter or leaving the field, not per key
        self.bpm_box.setButtonSymbols(QAbstractSpinBox.ButtonSymbols.NoButtons)
        self.bpm_box.setToolTip("Tempo: type beats per minute and press Enter (or tap the tempo)")
        self.bpm_box.setValue(DEFAULT_BPM)
        self.bpm_box.valueChanged.connect(self.set_bpm)
        self.beat_light = QLabel()
        self.beat_light.setObjectName("beat light")
        self.beat_light.setFixedSize(14, 14)
        self.beat_light.setToolTip("Beat light: flashes on each beat of the transport")
        self.beat_lit = False
        self.beat_light.setStyleSheet(LIGHT_STYLE.format(LIGHT_OFF))
        self.beat_label = QLabel(" 1.1 ")
        self.beat_label.setObjectName("bar.beat")
        self.beat_label.setMinimumWidth(self.beat_label.fontMetrics().horizontalAdvance(" 888.8 "))
        self.beat_label.setToolTip(f"Bar.beat of the transport ({BEATS_PER_BAR} beats a bar)")
        self._shown_beat: float | None = None

    def set_bpm(self, bpm: float) -> None:
        """The BPM field: the patch tempo becomes `bpm`, as one undo step."""
        settings = self.window.patch.settings
        bpm = round(bpm, 1)
        if bpm == settings.get("bpm", DEFAULT_BPM):
            return
        previous = {"bpm": settings.get("bpm", DEFAULT_BPM)}
        self.window.undo_stack.push(SettingsCommand(self.window.patch, {"bpm": bpm}, previous))

    def show_tempo(self) -> None:
        """The BPM field shows the document's tempo (unless it is being typed in)."""
        bpm = float(self.window.patch.settings.get("bpm", DEFAULT_BPM))
        if self.bpm_box.value() != bpm and not self.bpm_box.hasFocus():
            self.bpm_box.blockSignals(True)
            self.bpm_box.setValue(bpm)
            self.bpm_box.blockSignals(False)

    def show_beat(self) -> None:
        """The engine's newest report on the toolbar: the beat light, bar.beat, the tempo
        field and the Pause button."""
        beat = max(0.0, float(self.window.engine.evaluator.beat))
        count = math.floor(beat + 1e-9)
        previous, self._shown_beat = self._shown_beat, beat
        # lit on the first part of each beat, and for one report at least when reports come
        # further apart than that part (a fast tempo)
        passed = previous is not None and count > math.floor(previous + 1e-9)
        lit = beat - count < BEAT_LIGHT_BEATS or passed
        if lit != self.beat_lit:
            self.beat_lit = lit
            self.beat_light.setStyleSheet(LIGHT_STYLE.format(LIGHT_ON if lit else LIGHT_OFF))
        self.beat_label.setText(f" {count // BEATS_PER_BAR + 1}.{count % BEATS_PER_BAR + 1} ")
        self.show_tempo()
        self.show_paused()

    def show_paused(self) -> None:
        """The Pause button says whether the transport is paused."""
        paused = self.paused
        self.pause_action.setChecked(paused)
        self.pause_action.setIconText("Paused" if paused else "Pause")
        self.pause_action.setToolTip(
            "Paused: press to resume (Space)" if paused else "Pause / resume (Space)"
        )

    def toggle_pause(self) -> None:
        self.window.send_to_engine(Pause(not self.paused))
        self.window.session.clock.toggle()
        self.window.fps_since = time.perf_counter()  # paused time is no frame
        self.window.update_status()
        self.show_paused()

    def step_frame(self) -> None:
        """Pause (when playing) and run one frame of patch time, FRAME_INTERVAL_MS on."""
        if not self.paused:
            self.toggle_pause()
        seconds = self._frame_seconds()
        self.window.session.clock.advance(seconds)
        self.window.send_to_engine(Step(seconds))

    def step_back(self) -> None:
        """Pause (when playing) and run the frame one frame of patch time back."""
        if not self.paused:
            self.toggle_pause()
        seconds = -self._frame_seconds()
        self.window.session.clock.advance(seconds)
        self.window.send_to_engine(Step(seconds))

    def _frame_seconds(self) -> float:
        fixed = self.window.session.clock.fixed_fps
        return 1.0 / fixed if fixed is not None else FRAME_INTERVAL_MS / 1000

    def set_rate(self, rate: float) -> None:
        """Patch time runs at `rate` times wall time (continuous: no jump)."""
        self.window.session.clock.set_rate(rate)
        self.window.send_to_engine(Rate(rate))

    @property
    def _fixed_step(self) -> bool:
        return self.window.session.clock.fixed_fps is not None

    def set_fixed_step(self, fixed: bool) -> None:
        """Every frame advances exactly 1 / FIXED_STEP_FPS of patch time (rendering), or real
        time again from the time reached."""
        fps = FIXED_STEP_FPS if fixed else None
        self.window.session.clock.set_fixed_step(fps)
        self.fixed_step_action.setChecked(fixed)
        self.window.send_to_engine(FixedStep(fps))

    def reset_time(self) -> None:
        """Patch time and the frame count back to 0, so time nodes start over; paused, the
        frame at time 0 shows."""
        self.window.session.clock.reset()
        self.window.send_to_engine(ResetTime())

    def tap_tempo(self) -> None:
        """One tap (on `tap_clock`): from the third tap on in a series, the patch tempo follows
        the taps (the `bpm` setting, which reaches the engine as any settings edit)."""
        bpm = self.taps.tap(self.tap_clock())
        if bpm is not None:
            self.window.patch.update_settings(bpm=round(bpm, 1))
            self.window.session.edited_outside_undo()  # no undo step: saved or asked about
            self.window.update_title()
        tempo = self.window.patch.settings.get("bpm", DEFAULT_BPM)
        self.tap_action.setToolTip(f"Tap tempo ({tempo:g} BPM)")
        self.show_tempo()

    def nudge_beat(self, beats: float) -> None:
        """Shift the beat of every `time.beat` by `beats` (positive: earlier) next frame."""
        self.window.engine.send(Nudge(beats))

    def resync_beat(self) -> None:
        """Make the next frame the downbeat (beat 0 of a bar) of every `time.beat`."""
        self.window.engine.send(ResyncBeats())

    @property
    def paused(self) -> bool:
        return self.window.session.clock.paused

    def clock(self) -> float:
        """Seconds of patch time: wall time since start, minus the time spent paused."""
        return self.window.session.clock.seconds()
