"""The OSC service: a UDP server thread that receives OSC messages, and a sender.

Receiving: the server thread reads datagrams from a UDP socket, parses them with python-osc and only
enqueues: `(address, value)` per message (value: the first argument when it is a number or a bool,
else None), or `MALFORMED` for a datagram that is no OSC packet. It touches nothing else. The frame
thread drains the queue in `begin_frame()`, at the start of a frame, into the frame's list of
control events (`take_controls()`, evaluators.controls.events), in arrival order. What the events
do (coalescing values, queueing triggers, bindings, learn) is the controls runtime's work
(evaluators.controls.runtime).

- malformed datagrams are counted (`malformed`) and dropped; messages to addresses nobody listens
  to (`listen`) are counted (`ignored`) and dropped, unless the service listens to every address
  (`listen_any`, while a control is learned); beyond `MAX_QUEUED` messages waiting for a frame,
  more are counted (`dropped`) and dropped, so a flood cannot grow memory.

We parse with `OscPacket` and not python-osc's `Dispatcher`, which passes over malformed packets
without counting them and sleeps on a bundle timed in the future (a stranger's packet could hold the
thread); bundle times are ignored here: a message applies on the frame after it arrives. python-osc
also reads some broken packets (it pads a truncated float with zeros, and logs and skips an unknown
type tag), so `well_formed` checks the framing first: sizes in multiples of 4, bundle elements that
fit, addresses and type tags that end, type tags python-osc knows with all their arguments there.

The server binds `127.0.0.1` unless the process was told another host (`--osc-host`), on the port of
the process's `osc_port` option (`--osc-port`), else the patch's `settings.osc_port`, else
`DEFAULT_PORT`; port 0 turns input off. A port that cannot be bound is one line on stderr and the
patch plays without OSC input; `status()` says the same (and what to do) for the window. The port
is read when the service is made (the first frame of a patch with OSC nodes or bindings, or a
learn), and bound when the first `listen()` or `listen_any()` comes (a patch that only sends
listens nowhere). Another port or host takes a new service (`Services.restart`).

Sending: `send(host, port, address, value)` from the frame thread, on one UDP socket. Nothing is
sent unless the process allows it (`allow_send`, `--allow-send`): a patch from a file is a
stranger's, and must not make the machine send packets to hosts it names. Hosts are IP addresses
(or `localhost`): a name lookup could block the frame.
"""

from __future__ import annotations

import contextlib
import ipaddress
import queue
import socket
import sys
import threading
from typing import Any, TextIO

from pythonosc.osc_message_builder import OscMessageBuilder
from pythonosc.osc_packet import OscPacket

from evaluators.controls.events import ControlEvent, osc_source
from evaluators.services.registry import OFF, ON, WAITING, ServiceStatus

DEFAULT_PORT = 9000
DEFAULT_HOST = "127.0.0.1"
MAX_DATAGRAM = 65536
#: Messages waiting for the next frame at most: a flood beyond it is dropped and counted
#: (`dropped`), so memory stays bounded whatever arrives between two frames.
MAX_QUEUED = 65536
_POLL_SECONDS = 0.1  # how often the server thread looks whether it must stop

MALFORMED = object()
_FIXED_SIZES = {
    "i": 4,
    "f": 4,
    "r": 4,
    "m": 4,
    "h": 8,
    "d": 8,
    "t": 8,
    "T": 0,
    "F": 0,
    "N": 0,
    "[": 0,
    "]": 0,
}
_BUNDLE = b"#bundle\x00"


def _padded_string_end(data: bytes, start: int) -> int:
    """Where the null-terminated, 4-byte padded string at `start` ends, or -1."""
    end = data.find(b"\x00", start)
    return -1 if end < 0 else (end // 4 + 1) * 4


def well_formed(data: bytes, depth: int = 0) -> bool:
    """Whether `data` is framed as an OSC packet: a message (address, type tags python-osc
    reads) or a bundle of such elements, nested at most 8 deep."""
    if len(data) % 4 or not data or depth > 8:
        return False
    if data.startswith(_BUNDLE):
        at = 16  # "#bundle", then the time tag
        while at < len(data):
            size = int.from_bytes(data[at : at + 4], "big")
            at += 4
            if (
                size == 0
                or at + size > len(data)
                or not well_formed(data[at : at + size], depth + 1)
            ):
                return False
            at += size
        return at == len(data) and len(data) >= 16
    if not data.startswith(b"/"):
        return False
    tags_at = _padded_string_end(data, 0)
    if tags_at < 0 or tags_at > len(data):
        return False
    if tags_at == len(data):
        return True  # no type tags: a message without arguments
    tags_end = _padded_string_end(data, tags_at)
    tags = data[tags_at : data.find(b"\x00", tags_at)]
    if not 0 < tags_end <= len(data) or not tags.startswith(b","):
        return False
    return _arguments_end(data, tags[1:].decode("ascii", "replace"), tags_end) == len(data)


def _arguments_end(data: bytes, tags: str, at: int) -> int:
    """Where the arguments of `tags` starting at `at` end, or -1 when they do not fit."""
    for tag in tags:
        if tag in _FIXED_SIZES:
            at += _FIXED_SIZES[tag]
        elif tag == "s":
            at = _padded_string_end(data, at)
        elif tag == "b":
            size = int.from_bytes(data[at : at + 4], "big")
            at += 4 + (size + 3) // 4 * 4
        else:
            return -1
        if at < 0 or at > len(data):
            return -1
    return at


def first_value(params: list[Any]) -> float | None:
    """The first argument of a message as a float, or None when it is not a number."""
    if params and isinstance(params[0], int | float | bool):
        return float(params[0])
    return None


class OscService:
    """OSC in and out for one running patch: see the module note."""

    def __init__(self, host: str, port: int, allow_send: bool, log: TextIO | None = None) -> None:
        self.allow_send = allow_send
        self.malformed = 0
        self.ignored = 0
        self.dropped = 0  # messages beyond MAX_QUEUED waiting for a frame
        self.listening: tuple[str, int] | None = None  # where the server listens, if it does
        self._log = log if log is not None else sys.stderr
        self._inbox: queue.Queue[Any] = queue.Queue(MAX_QUEUED)
        self._listened: set[str] = set()
        self._any = False  # keep messages to every address (learning a control)
        self._opened = False  # the server was started (or refused) by a first listen
        self.problem: str | None = None  # why the server could not listen, once refused
        self._controls: list[ControlEvent] = []  # drained for the current frame
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None
        self._sender: socket.socket | None = None
        self._address = (host, port)  # where to listen once a node listens

    @classmethod
    def for_context(cls, ctx: Any) -> OscService:
        """The service for an execution context: its options, then the patch's settings."""
        options = ctx.services.options
        port = options.get("osc_port")
        if port is None:
            port = ctx.settings.get("osc_port", DEFAULT_PORT)
        host = options.get("osc_host") or DEFAULT_HOST
        return cls(host, int(port), bool(options.get("allow_send", False)))

    def _start(self, host: str, port: int) -> None:
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_DGRAM)
        try:
            sock.bind((host, port))
        except OSError as error:
            sock.close()
            reason = error.strerror or str(error)
            self.problem = f"cannot listen on {host}:{port} ({reason})"
            print(
                f"patchbay: OSC input off: {self.problem}; the patch plays without it",
                file=self._log,
            )
            return
        sock.settimeout(_POLL_SECONDS)
        self._socket = sock
        self.listening = sock.getsockname()[:2]
        self._thread = threading.Thread(target=self._receive, name="patchbay-osc", daemon=True)
        self._thread.start()

    def _receive(self) -> None:
        """The server thread: parse datagrams and enqueue what they hold, nothing else."""
        sock = self._socket
        assert sock is not None
        while not self._stop.is_set():
            try:
                data = sock.recv(MAX_DATAGRAM)
            except TimeoutError:
                continue
            except OSError:  # closed (then `_stop` is set), or a passing error such as a reset
                self._stop.wait(_POLL_SECONDS)
                continue
            if not well_formed(data):
                self._enqueue(MALFORMED)
                continue
            try:
                messages = [
                    (timed.message.address, first_value(timed.message.params))
                    for timed in OscPacket(data).messages
                ]
            except Exception:  # python-osc raises ParseError, and others on some garbage
                self._enqueue(MALFORMED)
                continue
            for message in messages:
                self._enqueue(message)

    def _enqueue(self, item: Any) -> None:
        try:
            self._inbox.put_nowait(item)
        except queue.Full:
            self.dropped += 1  # only this thread writes it

    # ------------------------------------------------------------------ the frame thread
    def begin_frame(self) -> None:
        """Drain what arrived since the last frame (what arrives meanwhile waits for the next)."""
        inbox, listened, keep_any = self._inbox, self._listened, self._any
        controls: list[ControlEvent] = []
        for _ in range(inbox.qsize()):  # at most MAX_QUEUED
            item = inbox.get_nowait()
            if item is MALFORMED:
                self.malformed += 1
                continue
            address, value = item
            if not keep_any and address not in listened:
                self.ignored += 1
                continue
            controls.append(ControlEvent(osc_source(address), value))
        self._controls = controls

    def take_controls(self) -> list[ControlEvent]:
        """The messages drained for the current frame, in arrival order."""
        return self._controls

    def pending(self) -> int:
        """Messages and malformed datagrams received and not drained yet."""
        return self._inbox.qsize()

    def listen(self, address: str) -> None:
        """Keep the messages to `address` from now on."""
        if not address.startswith("/"):
            raise ValueError(f"OSC address {address!r} must start with '/'")
        self._open()
        self._listened.add(address)

    def listen_any(self, on: bool) -> None:
        """Keep the messages to every address (`on`) or only to those listened to."""
        if on:
            self._open()
        self._any = on

    def _open(self) -> None:
        """Bind the server on the first listen (once: a refused port is one line, not one per
        address)."""
        if not self._opened and self._address[1]:
            self._start(*self._address)
        self._opened = True

    def status(self) -> ServiceStatus:
        """Listening (where), off (why, and what to do), or not asked to listen yet."""
        host, port = self._address
        where = f"{host}:{port}"
        if self.listening is not None:
            return ServiceStatus(ON, f"listening on {where}", address=where)
        if self.problem is not None:
            advice = "another program may use the port: choose another OSC port in Settings"
            return ServiceStatus(OFF, self.problem, advice, where)
        if not port:
            return ServiceStatus(OFF, "input off (port 0)", "choose an OSC port in Settings", where)
        return ServiceStatus(WAITING, f"will listen on {where} once a node needs it", address=where)

    def send(self, host: str, port: int, address: str, value: Any) -> None:
        """Send one message; PermissionError unless sending is allowed."""
        if not self.allow_send:
            raise PermissionError(
                f"sending OSC to {host}:{port} is not allowed (start with --allow-send, or in "
                "the editor: View > Allow OSC Sending)"
            )
        target = _checked_target(host, port, address)
        builder = OscMessageBuilder(address)
        builder.add_arg(value)
        if self._sender is None:
            self._sender = socket.socket(target[2], socket.SOCK_DGRAM)
        elif self._sender.family != target[2]:
            self._sender.close()
            self._sender = socket.socket(target[2], socket.SOCK_DGRAM)
        self._sender.sendto(builder.build().dgram, target[:2])

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._wake_receiver()
            self._thread.join()
        for sock in (self._socket, self._sender):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.close()
        self._socket = self._sender = None
        self.listening = None

    def _wake_receiver(self) -> None:
        """An empty datagram to the server's own port, so its thread sees `_stop` now rather
        than after its poll interval (closing runs on the frame thread: a port changed live)."""
        if self.listening is None:
            return
        host, port = self.listening
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        if host in ("0.0.0.0", "::"):
            host = "::1" if family == socket.AF_INET6 else "127.0.0.1"
        with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_DGRAM) as waker:
            waker.sendto(b"", (host, port))


def _checked_target(host: str, port: int, address: str) -> tuple[str, int, socket.AddressFamily]:
    """(ip, port, family) of a send, or ValueError naming what is wrong."""
    if not address.startswith("/"):
        raise ValueError(f"OSC address {address!r} must start with '/'")
    if not 0 < port < 65536:
        raise ValueError(f"OSC port {port} is not between 1 and 65535")
    try:
        ip = ipaddress.ip_address("127.0.0.1" if host == "localhost" else host)
    except ValueError:
        raise ValueError(f"OSC host {host!r} is not an IP address (or localhost)") from None
    family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
    return str(ip), port, family
