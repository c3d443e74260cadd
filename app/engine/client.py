"""Starting, finding, supervising and talking to the engine process; the editor's view of it.

- `EngineProcess` starts `python -m app.qt.engine_host` for a run folder (`state_dir/engine`) and
  finds an engine already running there: the engine writes `engine.json` (pid, socket address, its
  supervisor's pid) once it listens, and the socket is authenticated with `engine.key` (random,
  readable by the user only). The engine runs in its own session, so killing the editor leaves
  it playing.
- `supervise` restarts an engine that dies, hangs or stops beating, with what it played and the
  hung node bypassed. `patchbay run` runs it in its own process; an editor starts it as a process
  of its own (`python -m app.engine.client`), so a show whose editor is closed or killed still
  survives a crash of its engine.
- `EngineClient` is the editor's end: it attaches to a running engine or starts one (through a
  supervisor), sends messages, and hands what comes back to the GUI thread through `poll()`. A
  reader thread receives; when the engine dies, or sends no report and beats no heartbeat for
  `watchdog_s` + a grace period, it waits for the supervisor to restart it (or, when the
  supervisor is gone too, starts both anew), and `poll()` then says `restarted`, with the node
  the watchdog bypassed, so the editor resends the patch.
- `RemoteEvaluator` answers the editor's evaluator questions (statuses, classes, errors, watched
  values, mode, timings) from the newest report, so the editor's views need not know that the
  patch runs elsewhere.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from multiprocessing.connection import Client
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from app.engine.engine import WATCHDOG_S
from app.engine.options.exit_codes import EXIT_BAD_INPUT, EXIT_HUNG, EXIT_INTERRUPTED
from app.engine.protocol.channel import Channel, ProtocolError
from app.engine.protocol.messages import (
    PROTOCOL_VERSION,
    TO_EDITOR,
    EngineHello,
    Hello,
    Message,
    MessageError,
    Quit,
    Report,
    decode,
)
from evaluators import EvaluatorMode, NodeClass, NodeStatus

START_TIMEOUT_S = 30.0
LOG_KEEP_BYTES = 1 << 20
HANG_GRACE_S = 3.0
STOP_TIMEOUT_S = 10.0


def default_state_dir() -> Path:
    """Where the editor keeps recent files and recovery, and the engine its run folder
    (`engine/`): `PATCHBAY_STATE_DIR`, else the user's data folder."""
    override = os.environ.get("PATCHBAY_STATE_DIR")
    if override:
        return Path(override)
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "patchbay" / "patchbay"


def engine_address(run_dir: Path) -> str:
    """The engine's socket for `run_dir`: short (AF_UNIX paths are limited to ~100 bytes), in a
    folder only this user can enter."""
    folder = Path(tempfile.gettempdir()) / f"patchbay-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.stat().st_uid != os.getuid():  # made by someone else to catch our socket
        raise RuntimeError(f"{folder} belongs to another user; remove it")
    folder.chmod(0o700)
    digest = hashlib.sha1(str(run_dir.resolve()).encode()).hexdigest()[:16]
    return str(folder / f"{digest}.sock")


def engine_key(run_dir: Path) -> bytes:
    """The run folder's authentication key, made on first use (mode 0600)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / "engine.key"
    with contextlib.suppress(FileExistsError):
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as file:
            file.write(secrets.token_bytes(32))
    return path.read_bytes()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class EngineProcess:
    """One engine process for a run folder: start it, find it, stop it."""

    def __init__(
        self,
        run_dir: Path,
        extra_args: Sequence[str] = (),
        env: Any = None,
        *,
        log_to_terminal: bool = False,
    ) -> None:
        self.run_dir = Path(run_dir)
        self.log_to_terminal = log_to_terminal
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.address = engine_address(self.run_dir)
        self.key = engine_key(self.run_dir)
        self.extra_args = list(extra_args)
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None
        self.bypass: dict[str, str] = {}
        self._started_at = time.time()
        self.stalled = 0.0  # seconds without a heartbeat when the supervisor killed it

    @property
    def hang_file(self) -> Path:
        return self.run_dir / "hang.json"

    @property
    def running_file(self) -> Path:
        return self.run_dir / "running.json"

    @property
    def heartbeat_file(self) -> Path:
        return self.run_dir / "heartbeat"

    def silent_for(self) -> float:
        """Seconds since the engine's frame loop last turned (its watchdog touches the heartbeat
        file), or since it was started when it has not beaten yet."""
        try:
            beat = self.heartbeat_file.stat().st_mtime
        except OSError:
            beat = self._started_at
        return max(0.0, time.time() - max(beat, self._started_at))

    def running_pid(self) -> int | None:
        """The pid of the engine serving this folder, if one is alive."""
        try:
            info = json.loads((self.run_dir / "engine.json").read_text("utf-8"))
            pid = int(info["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if self.process is not None and self.process.pid == pid:
            return pid if self.process.poll() is None else None
        return pid if pid_alive(pid) else None

    def start(self) -> None:
        """Start a new engine (bypassing the nodes in `bypass`) and wait until it listens."""
        self.heartbeat_file.unlink(missing_ok=True)
        self.running_file.unlink(missing_ok=True)
        self._started_at = time.time()
        process = self._spawn(
            [sys.executable, "-m", "app.qt.engine_host", "--run-dir", str(self.run_dir),
             "--bypass", json.dumps(self.bypass), *self.extra_args],
            to_log=not self.log_to_terminal,
        )  # fmt: skip
        self._await_listening(lambda: self.running_pid() == process.pid, self.kill)

    def start_supervised(self) -> None:
        """Start a supervisor process (`supervise` in its own process, see there) that starts
        the engine, and wait until the engine listens. `process` is then the supervisor."""
        self._spawn(
            [sys.executable, "-m", "app.engine.client", "--run-dir", str(self.run_dir),
             *self.extra_args],
            to_log=True,
        )  # fmt: skip
        self._await_listening(lambda: self.running_pid() is not None, self.stop)

    def _spawn(self, arguments: list[str], *, to_log: bool) -> subprocess.Popen[bytes]:
        """Start `arguments` in a session of its own (it outlives its editor), after removing
        the last engine's `engine.json`. With `to_log` it writes to engine.log in the folder
        instead of the caller's terminal or pipes (`patchbay run` keeps the terminal)."""
        (self.run_dir / "engine.json").unlink(missing_ok=True)
        output: Any = None
        if to_log:
            log = self.run_dir / "engine.log"
            with contextlib.suppress(OSError):
                if log.stat().st_size > LOG_KEEP_BYTES:
                    log.replace(log.with_suffix(".log.1"))  # one older log is kept
            output = open(log, "ab")  # noqa: SIM115
        try:
            self.process = subprocess.Popen(
                arguments, env=self.env, start_new_session=True,
                stdin=subprocess.DEVNULL, stdout=output, stderr=output,
            )  # fmt: skip
        finally:
            if output is not None:
                output.close()
        return self.process

    def _await_listening(self, listening: Callable[[], bool], give_up: Callable[[], None]) -> None:
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while not listening():
            if self.process.poll() is not None:
                raise RuntimeError(f"the engine exited at start ({self.process.returncode})")
            if time.monotonic() > deadline:
                give_up()
                raise RuntimeError("the engine did not start within 30 s")
            time.sleep(0.01)

    def supervisor_pid(self) -> int | None:
        """The pid of the process that restarts this folder's engine, if one is alive."""
        try:
            pid = json.loads((self.run_dir / "engine.json").read_text("utf-8"))["supervisor"]
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return pid if isinstance(pid, int) and pid_alive(pid) else None

    def stop(self) -> None:
        """Kill the engine and its supervisor (the supervisor first, or it restarts it)."""
        supervisor = self.supervisor_pid()
        if supervisor is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(supervisor, signal.SIGKILL)
        self.kill()

    def connect(self) -> Channel:
        return Channel(Client(self.address, family="AF_UNIX", authkey=self.key))

    def take_hang(self) -> str | None:
        """After the engine's watchdog stopped it: the node to bypass from now on (recorded in
        `bypass` with its reason), or None."""
        try:
            info = json.loads(self.hang_file.read_text("utf-8"))
            self.hang_file.unlink()
        except (OSError, ValueError):
            return None
        if not isinstance(info, dict) or not isinstance(info.get("node"), str):
            return None
        limit = info.get("limit")
        limit = limit if isinstance(limit, (int, float)) else WATCHDOG_S
        self.bypass[info["node"]] = f"stopped: took longer than {limit:g} s"
        return str(info["node"])

    def take_running(self) -> str | None:
        """After the engine died: the node its last long frame was inside when it died (its
        watchdog keeps it in `running_file` while such a frame runs), or None."""
        try:
            info = json.loads(self.running_file.read_text("utf-8"))
            self.running_file.unlink()
        except (OSError, ValueError):
            return None
        node = info.get("node") if isinstance(info, dict) else None
        return node if isinstance(node, str) else None

    def kill(self) -> None:
        pid = self.running_pid() or (self.process.pid if self.process is not None else None)
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self.process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=5)

    def exit_code(self) -> int | None:
        return self.process.poll() if self.process is not None else None


MAX_RESTARTS = 5
RESTART_WINDOW_S = 10.0
#: Out-of-memory deaths in a row while the same node ran after which that node is bypassed.
MEMORY_DEATHS = 2


def supervise(
    engine: EngineProcess, watchdog_s: float = WATCHDOG_S, name: str = "patchbay run"
) -> int:
    """Start the engine and restart it whenever it dies, its watchdog stops it (with the hung
    node bypassed) or its heartbeat stops for `watchdog_s` + a grace period (stuck where its own
    watchdog cannot act: it is killed), until it quits by itself; a restarted engine resumes what
    the one before played (`--resume`). Returns its exit code; a bad start (exit 2: bad input) is
    not retried, nor an engine that stops `MAX_RESTARTS` times within `RESTART_WINDOW_S`. An
    engine killed from outside (SIGKILL, not by this loop: the kernel's out-of-memory killer)
    `MEMORY_DEATHS` times in a row while the same node ran is restarted with that node bypassed
    (`OutOfMemoryDeaths`), and says so. Editors
    attached to it leave restarts to this loop (the engine says `supervised` in its hello).
    `patchbay run FILE` runs this loop itself; an editor starts it in a process of its own
    (`python -m app.engine.client`), so that a show survives its engine even with no editor.
    SIGINT or SIGTERM to this process end the show: the engine gets SIGTERM and quits cleanly,
    and this returns 0 (killed if it has not quit after `STOP_TIMEOUT_S`: EXIT_INTERRUPTED)."""
    if engine.running_pid() is not None:
        print(
            f"{name}: an engine is already playing (pid {engine.running_pid()}); "
            "attach an editor with: patchbay edit --attach",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return _supervise(engine, watchdog_s, name)
    except KeyboardInterrupt:  # SIGINT or SIGTERM: the engine ends the show cleanly
        return _stop_engine(engine)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _interrupt(number: int, _frame: Any) -> None:
    raise KeyboardInterrupt(signal.Signals(number).name)


def _stop_engine(engine: EngineProcess) -> int:
    """SIGTERM to a running engine, which quits cleanly (0); killed after `STOP_TIMEOUT_S`."""
    process = engine.process
    if process is None or process.poll() is not None:
        return 0
    process.terminate()
    try:
        code = process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        engine.kill()
        return EXIT_INTERRUPTED
    return 0 if code in (0, -signal.SIGTERM) else code


class OutOfMemoryDeaths:
    """The engine's deaths by SIGKILL from outside, in a row, and the node each time: the kernel
    kills a process that takes the machine's memory with SIGKILL, so the process cannot say why;
    its watchdog named the node it was inside (`EngineProcess.take_running`). Restarting into
    the same death again and again is a restart loop, so after `MEMORY_DEATHS` in a row with the
    same node, that node is bypassed."""

    def __init__(self) -> None:
        self.node: str | None = None
        self.count = 0

    def died(self, code: int, engine: EngineProcess) -> str | None:
        """Record how the engine ended; after such a death, why (one line), else None. Bypasses
        the node (in `engine.bypass`) on the death that makes `MEMORY_DEATHS` in a row."""
        if code != -signal.SIGKILL or engine.stalled:  # not killed, or killed by its supervisor
            self.node, self.count = None, 0
            return None
        node = engine.take_running()
        self.count = self.count + 1 if node is not None and node == self.node else 1
        self.node = node
        if node is None:
            return "killed (SIGKILL: out of memory?)"
        if self.count < MEMORY_DEATHS:
            return f"killed (SIGKILL: out of memory?) while {node} ran"
        self.node, self.count = None, 0
        engine.bypass[node] = (
            f"bypassed: the engine was killed {MEMORY_DEATHS} times in a row while it ran "
            "(out of memory?); edit or retry it to run it again"
        )
        return (
            f"killed {MEMORY_DEATHS} times in a row while {node} ran (out of memory?); "
            f"{node} bypassed"
        )


def _supervise(engine: EngineProcess, watchdog_s: float, name: str) -> int:
    restarts: list[float] = []
    memory_deaths = OutOfMemoryDeaths()
    arguments = [*engine.extra_args, "--supervised"]
    engine.extra_args = arguments
    while True:
        try:
            engine.start()
        except RuntimeError as error:
            code = engine.exit_code()
            if code is not None and code != EXIT_HUNG:
                return code  # it explained itself on stderr
            print(f"{name}: {error}", file=sys.stderr)
            return 1
        engine.extra_args = [*arguments, "--resume"]  # from now on: restarts
        assert engine.process is not None
        code = _wait_while_beating(engine, watchdog_s + HANG_GRACE_S)
        if code in (0, EXIT_BAD_INPUT, -signal.SIGTERM, -signal.SIGINT):
            return code if code >= 0 else 128 - code
        node = engine.take_hang()
        killed = memory_deaths.died(code, engine)
        now = time.monotonic()
        restarts = [t for t in restarts if now - t < RESTART_WINDOW_S] + [now]
        if len(restarts) > MAX_RESTARTS:
            print(f"{name}: the engine keeps stopping (exit {code})", file=sys.stderr)
            return 1
        why = f"{node} hung, bypassed" if node else f"exit {code}"
        if code == -signal.SIGKILL and engine.stalled:
            why = f"no frame for {engine.stalled:.1f} s, killed"
        elif killed is not None:
            why = killed
        print(f"{name}: restarting the engine ({why})", file=sys.stderr, flush=True)


def _wait_while_beating(engine: EngineProcess, limit_s: float) -> int:
    """Wait for the engine process to end; kill it when its heartbeat stops for `limit_s`
    (recorded in `engine.stalled`). Returns its exit code."""
    assert engine.process is not None
    engine.stalled = 0.0
    while True:
        try:
            return engine.process.wait(timeout=0.25)
        except subprocess.TimeoutExpired:
            silent = engine.silent_for()
            if silent > limit_s:
                engine.stalled = silent
                engine.process.kill()


@dataclass(frozen=True)
class Restarted:
    """From `poll()`: the engine was restarted (`why`; `bypassed` the node its watchdog
    stopped, if any); the editor sends it the patch again."""

    why: str
    bypassed: str | None = None


@dataclass(frozen=True)
class EngineFailed:
    """From `poll()`: no engine could be started again (`message` says why, in one line)."""

    message: str


class EngineClient:
    """The editor's connection to its engine: see the module note."""

    def __init__(self, engine: EngineProcess, *, watchdog_s: float = WATCHDOG_S) -> None:
        self.engine = engine
        self.watchdog_s = watchdog_s
        self.evaluator = RemoteEvaluator()
        self.hello = EngineHello(schema=PROTOCOL_VERSION, pid=0, rev=0, vrev=0, gl=False)
        self.restarts = 0
        self.attached = False
        self._channel: Channel | None = None
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()
        self._messages: list[tuple[Message | Restarted | EngineFailed, list[bytes]]] = []
        self._last_report = time.monotonic()
        self._closing = False
        self._restarting = False

    # ----------------------------------------------------------------- connecting
    def start(self) -> bool:
        """Connect to the engine running for this folder (True: attached to a running one), or
        start one. There is never a second engine beside a running one: one that does not
        answer is stopped first."""
        running = self.engine.running_pid()
        if running is not None:
            with contextlib.suppress(OSError, EOFError, ProtocolError):
                self._open(self.engine.connect())
                self.attached = True
                return True
            self.engine.stop()
        self.engine.start_supervised()
        self._open(self.engine.connect())
        return False

    def _open(self, channel: Channel) -> None:
        channel.send(Hello(PROTOCOL_VERSION))
        raw, _ = channel.receive()
        try:
            message = decode(raw, TO_EDITOR)
        except MessageError as error:
            channel.close()
            raise ProtocolError(f"unexpected answer: {error}") from None
        if not isinstance(message, EngineHello) or message.schema != PROTOCOL_VERSION:
            channel.close()
            raise ProtocolError(f"unexpected answer {raw.get('type')!r}")
        self.hello = message
        self._channel = channel
        self._last_report = time.monotonic()
        threading.Thread(target=self._read, args=(channel,), daemon=True).start()

    def _read(self, channel: Channel) -> None:
        try:
            while True:
                raw, blobs = channel.receive()
                try:
                    message = decode(raw, TO_EDITOR)
                except MessageError:
                    continue  # a message this editor does not know (a newer engine's)
                if isinstance(message, Report):
                    self._last_report = time.monotonic()
                    self.evaluator.update(message, blobs)
                    continue
                with self._lock:
                    self._messages.append((message, blobs))
        except (EOFError, OSError, TypeError, ProtocolError):
            pass  # (TypeError: the connection was closed under this thread)
        if channel is self._channel and not self._closing:
            self._restart("the engine stopped")

    def _restart(self, why: str) -> None:
        with self._lock:
            if self._restarting or self._closing:
                return
            self._restarting = True
        self._channel = None
        self.evaluator.disconnected(why)
        threading.Thread(target=self._restart_engine, args=(why,), daemon=True).start()

    def _restart_engine(self, why: str) -> None:
        try:
            bypassed_before = dict(self.hello.bypassed)
            if not self._await_supervisor_restart():
                # nobody else restarts it: a new engine with a supervisor of its own
                self.engine.stop()
                if self._closing:
                    return
                self.engine.start_supervised()
            self._open(self.engine.connect())
            node = next((n for n in self.hello.bypassed if n not in bypassed_before), None)
            self.restarts += 1
            with self._lock:
                self._messages.append((Restarted(why, node), []))
        except (RuntimeError, OSError, EOFError, ProtocolError) as error:
            with self._lock:
                self._messages.append((EngineFailed(str(error)), []))
        finally:
            self._restarting = False

    def _await_supervisor_restart(self) -> bool:
        """When the engine has a supervisor (named in its hello), wait for the engine it starts
        next (two restarters would kill each other's engines); False when it has none or the
        supervisor is gone too."""
        supervisor = self.hello.supervisor
        if supervisor is None:
            return False
        gone = self.hello.pid
        deadline = time.monotonic() + START_TIMEOUT_S + self.watchdog_s + HANG_GRACE_S
        own = self.engine.process  # a supervisor this editor started (reaped here, not by init)
        while self.engine.running_pid() in (None, gone):
            alive = own.poll() is None if own and own.pid == supervisor else pid_alive(supervisor)
            if not alive or self._closing:
                return False
            if time.monotonic() > deadline:
                raise RuntimeError("the engine's supervisor did not bring it back")
            time.sleep(0.05)
        return True

    # ----------------------------------------------------------------- talking
    @property
    def connected(self) -> bool:
        return self._channel is not None

    def send(self, message: Message, blobs: list[bytes] | None = None) -> bool:
        """Send now; False when there is no engine (a restart resends the whole patch)."""
        channel = self._channel
        if channel is None:
            return False
        try:
            with self._send_lock:
                channel.send(message, blobs)
        except (OSError, ValueError):
            return False
        return True

    def poll(self) -> list[tuple[Message | Restarted | EngineFailed, list[bytes]]]:
        """Messages other than reports that arrived since the last call (GUI thread), after
        checking that the engine still answers."""
        silent = time.monotonic() - self._last_report
        limit = self.watchdog_s + HANG_GRACE_S
        # Reports can lag behind a busy editor; only an engine whose frame loop stopped too
        # (no heartbeat) is hung.
        if self.connected and silent > limit and self.engine.silent_for() > limit:
            self._restart(f"the engine sent nothing for {silent:.1f} s")
        with self._lock:
            messages, self._messages = self._messages, []
        return messages

    def close(self, *, stop_engine: bool = True, unless_showing: bool = False) -> None:
        """Disconnect; with `stop_engine`, ask the engine to quit (the editor closed normally),
        and wait for it. With `unless_showing` the engine decides: it plays on while its output
        window is open (perform mode), which only it knows for sure at that moment."""
        self._closing = True
        channel, self._channel = self._channel, None
        if channel is None:
            return
        if stop_engine:
            with contextlib.suppress(OSError, ValueError), self._send_lock:
                channel.send(Quit(unless_showing))
        channel.close()
        if stop_engine and not unless_showing and self.engine.process is not None:
            try:
                self.engine.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.engine.stop()


@dataclass(frozen=True)
class RemoteTexture:
    """A texture output of a node running in the engine: its size (pixels come as pictures)."""

    size: tuple[int, ...]

    def __repr__(self) -> str:
        return "texture " + "x".join(str(v) for v in self.size)


Member = TypeVar("Member", bound=StrEnum)


def _member(kind: type[Member], text: Any, default: Member) -> Member:
    """`kind(text)`, or `default` for text a newer or broken engine sent."""
    try:
        return kind(text)
    except ValueError:
        return default


class RemoteEvaluator:
    """The newest report of the engine, read like an evaluator (see the module note): it
    satisfies `evaluators.Evaluator`."""

    def __init__(self) -> None:
        self.mode = EvaluatorMode.LAZY
        self.last_frame_seconds = 0.0
        self.last_build_seconds = 0.0
        self.fps = 0.0
        self.frame = 0
        self.reports = 0
        self.states = 0  # counts the reports that changed a node's class, status or error
        self.paused = False
        self.output_open = False
        self.output_screen: str | None = None
        self.output_fullscreen = False
        self.output_before: tuple[bool, str | None, bool] = (False, None, False)
        self.beat = 0.0  # the transport's beat count (4 beats a bar) and tempo
        self.bpm = 120.0
        self.problem: str | None = None
        self.images: dict[tuple[str, str, str], tuple[tuple[int, int], bytes]] = {}
        self.bypassed: dict[str, str] = {}
        self.applied: list[Any] = [None, None]  # [seq of the last edits, first frame showing it]
        self._nodes: dict[str, list[Any]] = {}
        self._values: dict[str, dict[str, Any]] = {}
        self._good: set[str] = set()  # nodes reported ok or cached since they were first played
        self._lock = threading.Lock()

    def update(self, report: Report, blobs: list[bytes]) -> None:
        """Take a report (reader thread)."""
        with self._lock:
            self.mode = _member(EvaluatorMode, report.mode, EvaluatorMode.LAZY)
            self.last_frame_seconds = report.frame_ms / 1000
            self.last_build_seconds = report.build_ms / 1000
            self.fps = float(report.fps)
            self.frame = report.frame
            self.paused = report.paused
            self.output_open = report.output_open
            self.output_screen = report.output_screen
            self.output_fullscreen = report.output_fullscreen
            self.beat, self.bpm = float(report.beat), float(report.bpm)
            known = self._nodes
            if report.ids is not None:  # what the engine plays now: forget the others
                self._nodes = {str(n): known.get(str(n), []) for n in report.ids}
                self._good &= self._nodes.keys()
            changed = self._nodes.keys() != known.keys()
            for node_id, entry in report.nodes.items():
                if self._nodes.get(node_id) != entry:
                    self._nodes[node_id] = entry
                    changed = True
                if len(entry) > 1 and entry[1] in (NodeStatus.OK, NodeStatus.CACHED):
                    self._good.add(node_id)
            if changed:
                self.states += 1
            self._values = report.values
            self.bypassed = dict(report.bypassed)
            self.applied = report.applied
            for meta, blob in zip(report.images, blobs, strict=False):
                size = (int(meta["size"][0]), int(meta["size"][1]))
                key = (str(meta["node"]), str(meta["pin"]), str(meta.get("role", "thumbnail")))
                self.images[key] = (size, blob)
            self.problem = None
            self.reports += 1

    def disconnected(self, why: str) -> None:
        """The engine is gone (being restarted): `problem` says why until its next report."""
        with self._lock:
            self.problem = why
            # what the output window was, for the editor to ask the next engine for the same
            self.output_before = (self.output_open, self.output_screen, self.output_fullscreen)

    def forget_images(self) -> None:
        """Drop the pictures not taken yet (they show a document the editor no longer shows)."""
        with self._lock:
            self.images.clear()

    def take_image(self, node_id: str, pin: str, role: str) -> tuple[tuple[int, int], bytes] | None:
        """The newest picture of a node's texture output (`thumbnail` or `preview`), once."""
        with self._lock:
            return self.images.pop((node_id, pin, role), None)

    def nodes(self) -> set[str]:
        """The ids of the nodes the engine is playing (as of the newest report)."""
        return set(self._nodes)

    def status(self, node_id: str) -> NodeStatus:
        entry = self._nodes.get(node_id)
        return _member(NodeStatus, entry[1] if entry else None, NodeStatus.IDLE)  # or unreported

    def node_class(self, node_id: str) -> NodeClass:
        entry = self._nodes.get(node_id)
        return _member(NodeClass, entry[0] if entry else None, NodeClass.CONST)

    def ever_good(self, node_id: str) -> bool:
        """Whether a report has said the node ran or was served from its cache since it was
        first played: False means a failed node's outputs hold only their defaults ("no good
        value yet"). Known downside: reports are a few a frame at most, so a node that succeeded
        on one frame between two reports, or before this editor attached, is not seen."""
        return node_id in self._good

    def error(self, node_id: str) -> str | None:
        entry = self._nodes.get(node_id)
        return entry[2] if entry and entry[2] else None

    def output(self, node_id: str, pin: str = "out") -> Any:
        """The watched value (see `report_value`): arrays come back as their first elements."""
        value = self._values.get(node_id, {}).get(pin)
        if isinstance(value, dict) and "$array" in value:
            spec = value["$array"]
            return np.asarray(spec["head"], dtype=np.dtype(spec["dtype"]))
        if isinstance(value, dict) and "$texture" in value:
            return RemoteTexture(tuple(value["$texture"]["size"]))
        return value

    def output_shape(self, node_id: str, pin: str = "out") -> tuple[int, ...] | None:
        """The whole shape of a watched array output (`output` gives its first elements)."""
        value = self._values.get(node_id, {}).get(pin)
        if isinstance(value, dict) and "$array" in value:
            return tuple(int(n) for n in value["$array"]["shape"])
        return None

    def watch(self, node_ids: Iterable[str]) -> None:
        """Watching is the editor's message to the engine; nothing to do here."""

    def run_frame(self, t: float, frame: int) -> None:
        """Frames run in the engine."""

    def close(self) -> None:
        """Nothing is held here."""

    def __repr__(self) -> str:
        return f"RemoteEvaluator(mode={self.mode}, frame={self.frame})"


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m app.engine.client --run-dir DIR [ENGINE OPTIONS]`: the supervisor process an
    editor starts (see `supervise`); the options go to the engine."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] != ["--run-dir"] or len(arguments) < 2:
        print("usage: python -m app.engine.client --run-dir DIR [ENGINE OPTIONS]", file=sys.stderr)
        return EXIT_BAD_INPUT
    engine = EngineProcess(Path(arguments[1]), arguments[2:], log_to_terminal=True)
    return supervise(engine, name="patchbay engine supervisor")


if __name__ == "__main__":
    sys.exit(main())
