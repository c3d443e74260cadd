"""The editor window's transport: pause, steps, rate, fixed step, reset, tap tempo and nudges.

`TransportActions` is a controller the editor window (app.qt.window) owns as `transport_actions`, in
the View menu and the Transport toolbar. The window keeps the patch clock of its session (what the
status bar shows, and what a resent patch restores) and sends each change to the engine, which runs
the frames: a step is one `FRAME_INTERVAL_MS` of patch time (or one fixed step), a nudge shifts
every `time.beat` by `NUDGE_BEATS`, a resync makes the next frame a downbeat. Tap tempo sets the
patch's `bpm` setting, which reaches the engine as any settings edit.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QDoubleSpinBox, QLabel, QMenu

from app.engine.protocol.messages import FixedStep, Nudge, Pause, Rate, ResetTime, ResyncBeats, Step
from nodes import DEFAULT_BPM, TapTempo

if TYPE_CHECKING:
    from app.qt.window import QtEditorWindow

FRAME_INTERVAL_MS = 16  # the window's loop, and one step of patch time
NUDGE_BEATS = 0.05  # how far one nudge shifts the beat (25 ms at 120 BPM)
FIXED_STEP_FPS = 60.0  # the Fixed step toggle's frames per second of patch time
MIN_RATE, MAX_EDITOR_RATE = 0.1, 4.0  # the rate box's range (the engine takes up to 16)


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
        self.reset_time_action = self.window.add_action(
            view, "&Reset time", self.reset_time, "Ctrl+Home"
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
            (self.reset_time_action, "Reset"),
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
        transport.addActions([self.pause_action, self.step_back_action, self.step_action,
                              self.reset_time_action])  # fmt: skip
        transport.addSeparator()
        transport.addWidget(QLabel(" Rate "))
        transport.addWidget(self.rate_box)
        transport.addAction(self.fixed_step_action)
        transport.addSeparator()
        transport.addActions([self.tap_action, self.nudge_earlier_action,
                              self.nudge_later_action, self.resync_action])  # fmt: skip

    def toggle_pause(self) -> None:
        self.window.send_to_engine(Pause(not self.paused))
        self.window.session.clock.toggle()
        self.window.fps_since = time.perf_counter()  # paused time is no frame
        self.window.update_status()

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
