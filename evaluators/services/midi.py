"""The MIDI service: input ports found by name, their messages as control events, MIDI clock.

Ports: `want(pattern)` asks for every input port whose name contains `pattern` ("" = all). A
scanner thread lists the ports (through mido) and opens the ones some pattern wants; it lists
again at most every `SCAN_SECONDS`, so a controller plugged in later opens within a couple of
seconds, and a port that disappeared is closed (and reopened if it comes back). `want` only
records the pattern and wakes the scanner: the frame never waits for a device.
`inputs_matching(pattern)` is None until the scanner has looked for a new pattern, then the open
ports it matches.

Receiving: each port's callback runs on the port's own thread (python-rtmidi's) and calls
`receive(message, device)`, which only turns a mido message into a small tuple and enqueues it:
control changes and notes as `ControlEvent`s (`midi:cc:<channel>:<n>` value/127,
`midi:note:<channel>:<n>` velocity/127, note-off and note-on with velocity 0 give 0.0; channels
counted from 1; `device` is the port's name), clock ticks with the time they came (`clock()`), and
start / continue / stop. Everything else (sysex, pitch bend, ...) is ignored; something that is no
mido message is counted (`malformed`) and dropped; beyond `MAX_QUEUED` items waiting for a frame,
more are counted (`dropped`) and dropped, so a flood cannot grow memory. Nothing raises out of
`receive`.

The frame thread drains the queue in `begin_frame()`: `take_controls()` then returns the frame's
control events in arrival order and `take_transport()` the transport messages, until the next
frame. `tempo()` is the BPM of the MIDI clock (24 ticks a beat), from the ticks of about the last
beat; None once no tick came for `CLOCK_TIMEOUT_SECONDS`.

Feedback out (motor faders, LED rings): `send_control(device_pattern, channel, control, value)`
enqueues a control change for every output port whose name contains the pattern and returns at
once; the scanner thread lists the output ports (only once some feedback was asked for), opens the
matching ones and sends. No output port matching a pattern is one line, said once; at most
`MAX_QUEUED` changes wait to be sent, more are counted (`dropped`).

MIDI is an optional extra (`patchbay[midi]`: mido and python-rtmidi, which has no wheels for some
Pythons). Without it, and on Linux without an ALSA sequencer (`/dev/snd/seq`, e.g. in a container,
or without the right to open it), the service still exists: it says why in one line (on its log,
stderr by default, and in `errors`), once, and gives no events. Every other problem (ports that
cannot be listed, a port that cannot be opened) is one line too, said once. `status()` sums it up
for the window: off and why, the input ports open, or the newest problem.
"""

from __future__ import annotations

import os
import queue
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Protocol, TextIO

from evaluators.controls.events import ControlEvent, midi_cc_source, midi_note_source
from evaluators.services.registry import OFF, ON, WAITING, ServiceStatus
from nodes.errors import one_line

#: Items waiting for the next frame at most; more are dropped and counted (`dropped`).
MAX_QUEUED = 16384
#: The scanner lists the ports at most this often.
SCAN_SECONDS = 2.0
#: MIDI clock: ticks per beat, how many recent ticks the tempo is measured over (about one beat),
#: and how long without a tick until there is no tempo.
TICKS_PER_BEAT = 24
TEMPO_WINDOW_TICKS = TICKS_PER_BEAT + 1
CLOCK_TIMEOUT_SECONDS = 2.0

UNAVAILABLE = "MIDI unavailable: install patchbay[midi]"
NO_SEQUENCER = "MIDI unavailable: no ALSA sequencer (/dev/snd/seq is missing)"
NO_SEQUENCER_ACCESS = (
    "MIDI unavailable: no access to the ALSA sequencer /dev/snd/seq (join the audio group)"
)
ALSA_SEQUENCER = "/dev/snd/seq"

#: Problems kept in `errors` at most (each said once): a device cannot make the list grow forever.
MAX_ERRORS = 64
_TRANSPORT = frozenset({"start", "continue", "stop"})


class InputPort(Protocol):
    def close(self) -> None: ...


class OutputPort(Protocol):
    def send(self, message: Any) -> None: ...

    def close(self) -> None: ...


class MidiBackend(Protocol):
    """What the service needs of a MIDI library: list input ports, open one with a callback;
    list output ports and open one (for feedback only)."""

    def input_names(self) -> list[str]: ...

    def open_input(self, name: str, callback: Callable[[Any], None]) -> InputPort: ...

    def output_names(self) -> list[str]: ...

    def open_output(self, name: str) -> OutputPort: ...


class MidoBackend:
    """Ports through mido (with its default backend, python-rtmidi)."""

    def __init__(self, mido: Any) -> None:
        self._mido = mido

    def input_names(self) -> list[str]:
        return [str(name) for name in self._mido.get_input_names()]

    def open_input(self, name: str, callback: Callable[[Any], None]) -> InputPort:
        port: InputPort = self._mido.open_input(name, callback=callback)
        return port

    def output_names(self) -> list[str]:
        return [str(name) for name in self._mido.get_output_names()]

    def open_output(self, name: str) -> OutputPort:
        port: OutputPort = self._mido.open_output(name)
        return port


def default_backend() -> tuple[MidiBackend | None, str | None]:
    """mido's backend, or None and the one line saying why MIDI is off here."""
    try:
        import mido
        import rtmidi  # noqa: F401 - mido's default backend; only checked here
    except ImportError:
        return None, UNAVAILABLE
    if sys.platform.startswith("linux"):
        # rtmidi would fail too, after ALSA printed its own errors on stderr.
        if not os.path.exists(ALSA_SEQUENCER):
            return None, NO_SEQUENCER
        if not os.access(ALSA_SEQUENCER, os.R_OK | os.W_OK):
            return None, NO_SEQUENCER_ACCESS
    return MidoBackend(mido), None


def _described(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


class MidiService:
    """MIDI input for one running patch: see the module note."""

    def __init__(
        self,
        backend: MidiBackend | None = None,
        unavailable: str | None = None,
        *,
        log: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        scan_seconds: float = SCAN_SECONDS,
    ) -> None:
        """`backend` None: mido's (see `default_backend`); `unavailable`: why there is no backend
        (with `backend` None and `unavailable` given, MIDI is off for that reason)."""
        if backend is None and unavailable is None:
            backend, unavailable = default_backend()
        self._backend = backend
        self._log = log if log is not None else sys.stderr
        self._clock = clock
        self._scan_seconds = scan_seconds
        self.errors: list[str] = []
        self.dropped = 0  # items beyond MAX_QUEUED waiting for a frame
        self.malformed = 0  # things received that were no MIDI message
        self._count_lock = threading.Lock()  # several ports' threads count
        self._inbox: queue.Queue[Any] = queue.Queue(MAX_QUEUED)
        self._controls: list[ControlEvent] = []
        self._transport: list[str] = []
        self._ticks: deque[float] = deque(maxlen=TEMPO_WINDOW_TICKS)
        # Shared with the scanner thread: sets replaced whole, never changed in place.
        self._wanted: frozenset[str] = frozenset()
        self._looked_for: frozenset[str] = frozenset()
        self._listed: tuple[str, ...] = ()
        self._open_names: tuple[str, ...] = ()
        self._ports: dict[str, InputPort] = {}  # the scanner thread's
        self._wanted_outputs: frozenset[str] = frozenset()
        self._outbox: queue.Queue[tuple[str, int, int, int]] = queue.Queue(MAX_QUEUED)
        self._outputs_listed: tuple[str, ...] = ()
        self._outputs: dict[str, OutputPort] = {}  # the scanner thread's
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if unavailable is not None:
            self._report(unavailable)

    @classmethod
    def for_context(cls, ctx: Any) -> MidiService:
        """The service for an execution context (nothing in its options or settings yet)."""
        return cls()

    def _report(self, line: str) -> None:
        """A problem, said once: kept in `errors` and written to the log (port names come from
        devices: escaped, kept short)."""
        line = one_line(line)
        if line in self.errors or len(self.errors) >= MAX_ERRORS:
            return
        self.errors.append(line)
        print(f"patchbay: {line}", file=self._log, flush=True)

    def status(self) -> ServiceStatus:
        """Off (no MIDI here, and why), waiting for its first scan, or the ports open (with the
        newest problem, if any)."""
        if self._backend is None:
            reason = self.errors[0] if self.errors else UNAVAILABLE
            return ServiceStatus(OFF, reason, _advice(reason))
        if self._thread is None or not self._wanted <= self._looked_for:
            return ServiceStatus(WAITING, "looking for input ports")
        names = self._open_names
        problem = f"; {self.errors[-1]}" if self.errors else ""
        if not names:
            return ServiceStatus(
                OFF,
                f"no input port found{problem}",
                "connect a MIDI controller (it opens when plugged in)",
            )
        plural = "s" if len(names) > 1 else ""
        return ServiceStatus(ON, f"{len(names)} input{plural} open ({', '.join(names)}){problem}")

    # ------------------------------------------------------------------ ports
    # The frame thread asks (`want`, `inputs_matching`, `ports`); the scanner thread opens.
    def want(self, device_pattern: str) -> None:
        """Open every input port whose name contains `device_pattern` ("" = every port), now and
        when one appears later. Returns at once: the scanner thread opens them."""
        if self._backend is None or self._stop.is_set() or device_pattern in self._wanted:
            return
        self._wanted = self._wanted | {device_pattern}
        self._start_scanner()

    def _start_scanner(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._scan, name="patchbay-midi", daemon=True)
            self._thread.start()
        self._wake.set()

    def send_control(self, device_pattern: str, channel: int, control: int, value: int) -> None:
        """Send a control change (`channel` 1-16, `control` and `value` 0-127) to every output
        port whose name contains `device_pattern` ("" = every port). Returns at once: the
        scanner thread opens the ports and sends."""
        if self._backend is None or self._stop.is_set():
            return
        if device_pattern not in self._wanted_outputs:
            self._wanted_outputs = self._wanted_outputs | {device_pattern}
        try:
            self._outbox.put_nowait((device_pattern, channel, control, value))
        except queue.Full:
            with self._count_lock:
                self.dropped += 1
            return
        self._start_scanner()

    def inputs_matching(self, device_pattern: str) -> list[str] | None:
        """The open ports `device_pattern` matches; None while the scanner has not looked for it
        yet (never None when MIDI is unavailable: then no port matches)."""
        if self._backend is not None and device_pattern not in self._looked_for:
            return None
        return [name for name in self._open_names if device_pattern in name]

    def ports(self) -> list[str]:
        """The input ports there were at the last scan."""
        return list(self._listed)

    def _scan(self) -> None:
        """The scanner thread: list the ports now and then, open the wanted ones, close the gone."""
        backend = self._backend
        assert backend is not None
        listed_at: float | None = None
        outputs_listed = False  # since the last listing of the inputs
        while not self._stop.is_set():
            self._wake.clear()  # before reading what is wanted: a later `want` wakes us again
            wanted = self._wanted
            now = time.monotonic()
            outputs_wanted = self._wanted_outputs
            if listed_at is None or now - listed_at >= self._scan_seconds:
                listed_at = now
                try:
                    self._listed = tuple(backend.input_names())
                except Exception as error:  # rtmidi raises SystemError and others
                    self._report(f"MIDI ports cannot be listed: {_described(error)}")
                    self._listed = ()
                outputs_listed = False
            if outputs_wanted and not outputs_listed:
                outputs_listed = True
                try:
                    self._outputs_listed = tuple(backend.output_names())
                except Exception as error:
                    self._report(f"MIDI output ports cannot be listed: {_described(error)}")
                    self._outputs_listed = ()
            self._update_ports(backend, wanted)
            self._looked_for = wanted
            if outputs_wanted:
                self._update_outputs(backend, outputs_wanted)
                self._send_waiting()
            self._wake.wait(max(0.0, listed_at + self._scan_seconds - time.monotonic()))
        self._close_ports()

    def _update_ports(self, backend: MidiBackend, wanted: frozenset[str]) -> None:
        for name in [name for name in self._ports if name not in self._listed]:
            self._close_port(name)
        for name in self._listed:
            if name in self._ports or not any(pattern in name for pattern in wanted):
                continue
            try:
                self._ports[name] = backend.open_input(name, self._callback_for(name))
            except Exception as error:
                self._report(f"MIDI input {name!r} cannot be opened: {_described(error)}")
        self._open_names = tuple(self._ports)

    def _update_outputs(self, backend: MidiBackend, wanted: frozenset[str]) -> None:
        for name in [name for name in self._outputs if name not in self._outputs_listed]:
            self._close_output(name)
        for name in self._outputs_listed:
            if name in self._outputs or not any(pattern in name for pattern in wanted):
                continue
            try:
                self._outputs[name] = backend.open_output(name)
            except Exception as error:
                self._report(f"MIDI output {name!r} cannot be opened: {_described(error)}")

    def _send_waiting(self) -> None:
        """Send the control changes waiting (the scanner thread)."""
        import mido  # there is a backend: mido is there

        for _ in range(self._outbox.qsize()):
            pattern, channel, control, value = self._outbox.get_nowait()
            ports = [(name, port) for name, port in self._outputs.items() if pattern in name]
            if not ports:
                outputs = ", ".join(self._outputs_listed) or "none"
                self._report(
                    f"MIDI feedback: no output port matching {pattern!r} (outputs: {outputs})"
                )
                continue
            message = mido.Message(
                "control_change", channel=channel - 1, control=control, value=value
            )
            for name, port in ports:
                try:
                    port.send(message)
                except Exception as error:
                    self._report(f"MIDI output {name!r} cannot send: {_described(error)}")

    def _close_output(self, name: str) -> None:
        port = self._outputs.pop(name)
        try:
            port.close()
        except Exception as error:
            self._report(f"MIDI output {name!r} did not close cleanly: {_described(error)}")

    def _callback_for(self, device: str) -> Callable[[Any], None]:
        def callback(message: Any) -> None:
            self.receive(message, device)

        return callback

    def _close_port(self, name: str) -> None:
        port = self._ports.pop(name)
        try:
            port.close()
        except Exception as error:
            self._report(f"MIDI input {name!r} did not close cleanly: {_described(error)}")

    def _close_ports(self) -> None:
        for name in list(self._ports):
            self._close_port(name)
        for name in list(self._outputs):
            self._close_output(name)
        self._open_names = ()

    # ------------------------------------------------------------------ receiving (port threads)
    def receive(self, message: Any, device: str) -> None:
        """One message from port `device` (a mido Message): enqueue what it means, nothing else."""
        try:
            item = self._item_for(message, device)
        except Exception:  # no mido message: missing or broken fields
            with self._count_lock:
                self.malformed += 1
            return
        if item is None:
            return
        try:
            self._inbox.put_nowait(item)
        except queue.Full:
            with self._count_lock:
                self.dropped += 1

    def _item_for(self, message: Any, device: str) -> Any:
        kind = message.type
        if kind == "control_change":
            source = midi_cc_source(_channel(message.channel), _seven_bit(message.control))
            return ControlEvent(source, _seven_bit(message.value) / 127.0, device)
        if kind == "note_on" or kind == "note_off":
            source = midi_note_source(_channel(message.channel), _seven_bit(message.note))
            velocity = _seven_bit(message.velocity) / 127.0 if kind == "note_on" else 0.0
            return ControlEvent(source, velocity, device)
        if kind == "clock":
            return self._clock()  # a tick: when it came
        if kind in _TRANSPORT:
            return kind
        return None

    # ------------------------------------------------------------------ the frame thread
    def begin_frame(self) -> None:
        """Drain what arrived since the last frame (what arrives meanwhile waits for the next)."""
        inbox = self._inbox
        controls: list[ControlEvent] = []
        transport: list[str] = []
        for _ in range(inbox.qsize()):
            item = inbox.get_nowait()
            if isinstance(item, ControlEvent):
                controls.append(item)
            elif isinstance(item, str):
                transport.append(item)
            else:
                self._tick(item)
        self._controls, self._transport = controls, transport

    def _tick(self, at: float) -> None:
        ticks = self._ticks
        if ticks and at - ticks[-1] > CLOCK_TIMEOUT_SECONDS:
            ticks.clear()  # the clock stopped and started again: measure afresh
        ticks.append(at)

    def take_controls(self) -> list[ControlEvent]:
        """This frame's control events, in arrival order."""
        return self._controls

    def take_transport(self) -> list[str]:
        """This frame's transport messages: "start", "continue", "stop"."""
        return self._transport

    def tempo(self) -> float | None:
        """The MIDI clock's tempo in BPM, over about the last beat of ticks; None when no tick
        came in the last `CLOCK_TIMEOUT_SECONDS` (or only one)."""
        ticks = self._ticks
        if len(ticks) < 2 or self._clock() - ticks[-1] > CLOCK_TIMEOUT_SECONDS:
            return None
        span = ticks[-1] - ticks[0]
        if span <= 0.0:
            return None
        return 60.0 * (len(ticks) - 1) / (TICKS_PER_BEAT * span)

    def close(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        else:
            self._close_ports()


def _advice(reason: str) -> str:
    """What a person can do about MIDI being unavailable for `reason`."""
    if reason == UNAVAILABLE:
        return "install patchbay[midi] (mido and python-rtmidi)"
    if reason == NO_SEQUENCER_ACCESS:
        return "add your user to the audio group, then log in again"
    if reason == NO_SEQUENCER:
        return "load the ALSA sequencer (modprobe snd-seq) or run where MIDI devices are"
    return "check the MIDI device and its driver"


def _seven_bit(value: Any) -> int:
    if type(value) is not int or not 0 <= value <= 127:
        raise ValueError(f"MIDI data byte {value!r} is not within 0..127")
    return value


def _channel(value: Any) -> int:
    """A message's channel (0..15, as mido has it) counted from 1."""
    if type(value) is not int or not 0 <= value <= 15:
        raise ValueError(f"MIDI channel {value!r} is not within 0..15")
    return value + 1
