"""The engine: the running copy of a patch, its frame clock, and the link to an editor.

`Engine` is the part of the engine process that knows nothing of Qt: it owns a Patch (its own
copy), the DualEvaluator and its ExecutionContext, and runs one frame per `step()`. The process
around it (`app.qt.engine_host`) owns the GL service, the output window and the timer that calls
`step()`; tests drive an Engine directly. A load (a new engine, or `replace_patch`) builds the flat
program before the first frame (`DualEvaluator.build_now`): there is no edit to show at once, and
the first frame computes every node either way. In the engine process (`load_beside`) a patch the
editor sends while one plays is built on a thread of its own, and the one playing plays on until
it is ready: a file opened during a show holds no frame for its build. A big edit batch (a paste
of many nodes, `BESIDE_EDIT_OPS`) is applied the same way, to a copy of the patch playing.

An editor talks to the engine through `EngineServer` (a local socket, see
app.engine.protocol.channel): reader threads only put messages in the engine's inbox, and `step()`
drains the inbox at the start of a frame, so an edit lands between two frames and the frame loop
never waits for an editor. A host with an event loop (app.qt.engine_host) also calls
`between_frames()` as messages arrive: the edit is applied at once, and the program a small
structural edit needs is rebuilt then (`DualEvaluator.prepare`), in the time between two frames, so
the next frame only runs it. The engine answers with reports at most `REPORT_HZ` times a second,
handed to a sender thread that keeps only the newest unsent report: a slow or stuck editor can never
hold a frame back.

Live controls (evaluators.controls.runtime): `step()` applies them before each frame, and while
paused too, as edits are applied. The values they set are live edits of the engine's patch; the
latest per pin goes to the editor in a `live_values` message with the next report (one in flight at
a time: what comes meanwhile is merged into the next), so its inspector follows and its file saves
them. A `learn` message arms learn; the control caught goes back in a `learned` message.

Nothing that changes what a show does is silent: with the reports (so at most `REPORT_HZ` times a
second) the engine posts a `service` message when a service's status changes (evaluators:
`ServiceStatus`: OSC listening, or off because its port is taken, and what to do), a
`node_failed` message for the first failure of each node (at most `FAILURES_PER_REPORT` a
report), and `learn_unreachable` as soon as an armed learn has no source that can reach it. An
editor that connects gets the current ones again. Settings edits apply live: a new
`settings.osc_port` (or a `services` message with another `osc_host`) restarts the OSC service
alone, between two frames; the port a person sets in the window wins over `--osc-port` from then
on.

Reports carry the statuses of the level the editor's canvas shows (`level` message: the path of
the instance it is inside, `blob1/inner2`, or "" for the document's own nodes), round robin.

Layout: the editor's moves and backdrops reach the engine as edits like any other, and its copy
keeps them (they touch no evaluator: nothing is rebuilt), so the patch an attaching editor gets
(`get_patch`), and the one kept for a restart, hold exactly what the last editor showed, even
one that was killed.

Revisions: after applying an edit the engine compares its patch's counters with those the editor
sent; when they disagree it asks for the whole patch (`resync`) and ignores edits until it comes.
A new patch keeps the ExecutionContext, so what is playing (LFO phases, feedback) goes on.

Transport and presets: patch time is an `app.engine.transport` clock (rate, pause, steps both ways,
a fixed step per frame for renders). The engine's `PresetDeck` (nodes) recalls, morphs and
crossfades presets as live values; it is stepped right before each frame runs, and a control
bound to a preset or the crossfader calls its `recall` / `set_crossfade`.

Garbage collection: a full collection of the engine's heap (the libraries it imported and the
patch) takes tens of milliseconds, which is frames. So the engine freezes what the collector
tracks (`gc.freeze`) when a patch is loaded, and again once it runs as a flat program: later
collections look only at what came after, and take about a millisecond. (Without the first
freeze, the full collections that a build's allocations trigger took seconds in all on a loaded
2-core machine at 10,000 nodes, stalling the lazy frames meanwhile.) Objects stay freed by
reference counting as usual; only reference cycles among frozen objects would outlive their use,
and the evaluators break theirs when released. An engine that shares its process with others
(an editor's, a test's: `freeze_collector=False`) leaves the collector alone: frozen cycles there
would never be collected.

What plays survives the engine: when its editor leaves (closed in perform mode, or killed) the
engine writes what it plays, the file name it came from and where its output window is to
`playing_file` (`save_playing`, on a worker thread), and an engine its supervisor restarts with
`--resume` starts from there (`load_playing`), so a show whose editor is gone survives a crash
of its engine too. A normal quit removes the file.

The watchdog is a thread that notices a frame running longer than `watchdog_s`: it names the node
the frame thread is inside (`evaluators.node_running_in`), writes it to `hang_file` and ends the
process with EXIT_HUNG, so the supervisor restarts the engine with that node bypassed. It also
touches a heartbeat file while the frame loop turns: a process stuck where this thread cannot see
or cannot run (native code holding the interpreter, a stuck drain or paint) stops beating, and
the supervisor outside (`app.engine.client`) kills and restarts it. While a frame has run for
longer than one of its ticks, it keeps the node the frame is inside in `running_file`, removed
when the frame ends: an engine the kernel kills for want of memory (SIGKILL) cannot say what it
was doing, and the supervisor bypasses that node after two such deaths in a row. Short frames
write nothing.

Node packs: `watch_packs()` follows the user's nodes folder; a pack file changed is imported on
the watcher's thread and only staged there, and `step()` swaps it into the library at the start
of a frame and gives the patch's instances the new specs (`nodes.sync_instances`: one structural
`pins` event each, so the evaluator rebuilds), so no frame ever runs beside a half-made swap. The
editor does the same on its own copy; when their revisions then disagree, the usual resync
follows.

Pictures for the editor (the textures its panels and canvas show, nothing else) are made at most
`PICTURES_HZ` times a second, with a report, and one whose pixels the editor already has is not
sent again (`SentPictures`), so a still patch costs no pictures at all. They are made in isolated
steps (app.engine.reports.refresh): a picture that fails never stops
the frame, the report or the other pictures, and is written to stderr once per distinct failure.
A node output whose picture failed (a texture the GPU released) is not pictured again until the
node's output is another texture or the node is edited.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import ipaddress
import json
import math
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Iterable
from multiprocessing.connection import Listener
from pathlib import Path
from typing import Any, TextIO

from app.engine.options.exit_codes import EXIT_HUNG
from app.engine.protocol.channel import (
    Channel,
    ProtocolError,
    apply_deck_message,
    apply_edits,
    encode_value,
    patch_from_message,
    patch_message,
    report_value,
)
from app.engine.protocol.messages import (
    PROTOCOL_VERSION,
    TO_ENGINE,
    AllowSend,
    Crossfade,
    DocumentPath,
    Edits,
    EngineHello,
    Error,
    FixedStep,
    GetPatch,
    Hello,
    Images,
    Learn,
    Learned,
    LearnUnreachable,
    Level,
    LiveValues,
    Message,
    MessageError,
    Morph,
    NodeFailed,
    Nudge,
    Output,
    PatchDocument,
    Pause,
    PresetRecall,
    ProfileReply,
    ProfileRequest,
    Quit,
    Rate,
    Report,
    ResetTime,
    ResyncBeats,
    ResyncNeeded,
    Retry,
    ServiceChanged,
    Services,
    Step,
    Watch,
    decode,
    encode,
)
from app.engine.reports.profile_costs import ProfileAnswers, checked_request
from app.engine.reports.refresh import FailedPictures, RefreshSteps, SentPictures
from app.engine.transport import TransportClock, checked_step
from evaluators import (
    Controls,
    DualEvaluator,
    ExecutionContext,
    ExpandedPatch,
    ServiceStatus,
    node_running_in,
)
from evaluators.dual import BuildResult
from nodes import (
    BeatClock,
    EditOp,
    PackWatcher,
    Patch,
    PatchError,
    PatchEvent,
    PresetDeck,
    apply_staged,
    is_picture,
    library_revision,
    nudge_beats,
    resync_beats,
    sync_instances,
    user_nodes_folder,
)
from nodes.errors import one_line

REPORT_HZ = 30.0
BEATS_PER_BAR = 4  # the transport's bars (a `time.beat` node counts its own)
REPORT_NODES = 128
"""Nodes whose class, status and error one report carries (round robin, watched nodes always):
a report costs the frame thread about a millisecond however big the patch."""
REPORT_VALUES_CAP = 16
"""Nodes whose values a report carries besides the watched ones (`watch` message, `report`):
each costs converting its outputs in every report, about 30 a second."""
PICTURES_HZ = 10.0
"""Turns a second at most that picture textures for the editor (previews and thumbnails): each
picture costs a GPU downscale, a readback that waits for the frame's GPU work, and its pixels on
the channel, and an editor's panel needs no more to follow a show."""
THUMBNAILS_PER_FRAME = 2
THUMBNAIL_ROUND_S = 0.25
THUMBNAIL_SIZE = (96, 54)
PREVIEW_SIZE = (320, 180)
WATCHDOG_S = 2.0
FAILURES_PER_REPORT = 16
"""`node_failed` messages posted with one report at most: a patch whose every node fails at once
tells the editor over a few reports, not in one burst."""
BESIDE_EDIT_OPS = 256
"""An edit batch of this many ops or more (a paste of many nodes) is applied beside what plays, in
the engine process (`Engine.load_beside`): applying 2,000 ops and building for them took most of a
second between two frames on a 2-core machine."""
_NEEDS_THE_NEW_PATCH = frozenset(
    {Edits, GetPatch, Learn, ProfileRequest, Retry, PresetRecall, Morph, Crossfade, Nudge,
     ResyncBeats}
)  # fmt: skip
"""Messages that act on the patch the editor sent last: a patch still being built beside the
playing one (`Engine.replace_patch`) plays before they are handled."""
FRAME_LOG_ENV = "PATCHBAY_FRAME_LOG"
FRAME_LOG_FLUSH_S = 0.5


class FrameLog:
    """`PATCHBAY_FRAME_LOG=PATH`: one line `<time.monotonic() seconds> <frame index>` appended per
    presented frame, flushed at least every 0.5 s: by the next frame, or during a stall by
    `flush_if_due()` from another thread (the engine's watchdog), so the lines before a stall are
    on disk even if the process is then killed."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self._file: TextIO = open(path, "a", encoding="ascii", buffering=1 << 16)  # noqa: SIM115
        self._flushed = time.monotonic()
        self._lock = threading.Lock()

    @classmethod
    def from_environment(cls) -> FrameLog | None:
        path = os.environ.get(FRAME_LOG_ENV)
        return cls(path) if path else None

    def presented(self, frame: int) -> None:
        now = time.monotonic()
        with self._lock:
            self._file.write(f"{now:.6f} {frame}\n")
            if now - self._flushed >= FRAME_LOG_FLUSH_S:
                self._flush(now)

    def flush_if_due(self) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._flushed >= FRAME_LOG_FLUSH_S and not self._file.closed:
                self._flush(now)

    def _flush(self, now: float) -> None:
        self._file.flush()
        self._flushed = now

    def close(self) -> None:
        with self._lock:
            self._file.close()


PLAYING_FILE = "playing.show"
PLAYING_MAGIC = b"PBPLAY01"


def save_playing(path: Path, patch: Patch, state: dict[str, Any]) -> None:
    """Write `patch` (with its large arrays) and `state` (JSON) to `path`, atomically: magic,
    header length, header JSON, then the arrays' bytes."""
    message, blobs = patch_message(patch)
    header = json.dumps(
        {"message": encode(message), "state": state, "blobs": [len(blob) for blob in blobs]}
    ).encode("utf-8")
    partial = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(partial, "wb") as file:
        file.write(PLAYING_MAGIC + len(header).to_bytes(8, "little") + header)
        for blob in blobs:
            file.write(blob)
    os.replace(partial, path)


def load_playing(path: Path) -> tuple[Patch, dict[str, Any]]:
    """What `save_playing` wrote: the patch (checked like any patch) and the state. PatchError or
    ProtocolError when the file is not one, or is torn."""
    with open(path, "rb") as file:
        if file.read(len(PLAYING_MAGIC)) != PLAYING_MAGIC:
            raise ProtocolError(f"{path.name}: not a saved show")
        header = json.loads(file.read(int.from_bytes(file.read(8), "little")))
        sizes = header.get("blobs") if isinstance(header, dict) else None
        if not isinstance(sizes, list) or not all(isinstance(n, int) and n >= 0 for n in sizes):
            raise ProtocolError(f"{path.name}: bad header")
        blobs = [file.read(size) for size in sizes]
    if any(len(blob) != size for blob, size in zip(blobs, sizes, strict=True)):
        raise ProtocolError(f"{path.name}: torn")
    state = header.get("state")
    try:
        message = decode(header.get("message") or {}, TO_ENGINE)
    except MessageError as error:
        raise ProtocolError(f"{path.name}: {error}") from None
    if not isinstance(message, PatchDocument):
        raise ProtocolError(f"{path.name}: bad header")
    return patch_from_message(message, blobs), (state if isinstance(state, dict) else {})


@dataclasses.dataclass(frozen=True)
class Connected:
    """In the inbox: an editor connected (its link replaces the engine's editor)."""


@dataclasses.dataclass(frozen=True)
class Gone:
    """In the inbox: the editor's connection ended."""


@dataclasses.dataclass(frozen=True)
class Unreadable:
    """In the inbox: a frame that is no message of the protocol (`kind` its type, `error` why in
    one line): the engine answers with the error, and a bad `edits` asks for a resync."""

    kind: str
    error: str


@dataclasses.dataclass(frozen=True)
class ArrivedPatch:
    """In the inbox: a `patch` message with its Patch, built and checked on the reader thread
    (a big patch takes a while), or the error that stopped it."""

    message: PatchDocument
    patch: Patch | None
    error: str | None = None


class Inbox:
    """The engine's queue of messages from editors. `on_put`, when set, is called from the
    putting thread after each message (a host wakes its event loop with it)."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.on_put: Callable[[], None] | None = None

    def put(self, item: Any) -> None:
        self._queue.put(item)
        hook = self.on_put
        if hook is not None:
            hook()

    def get_nowait(self) -> Any:
        return self._queue.get_nowait()

    def empty(self) -> bool:
        return self._queue.empty()


class EditorLink:
    """One connected editor. A reader thread puts its messages in the engine's inbox; a sender
    thread writes what the engine posts. `post_report` keeps only the newest unsent report."""

    def __init__(self, channel: Channel, inbox: Inbox) -> None:
        self.channel = channel
        self.closed = False
        self._inbox = inbox
        self._pending: list[tuple[Message, list[bytes]]] = []
        self._report: tuple[Report, list[bytes]] | None = None
        self._live: tuple[LiveValues, list[bytes]] | None = None
        self._wake = threading.Condition()
        threading.Thread(target=self._read, name="editor-reader", daemon=True).start()
        threading.Thread(target=self._write, name="editor-writer", daemon=True).start()

    def post(self, message: Message, blobs: list[bytes] | None = None) -> None:
        with self._wake:
            self._pending.append((message, blobs or []))
            self._wake.notify()

    def post_report(self, message: Report, blobs: list[bytes]) -> None:
        with self._wake:
            self._report = (message, blobs)
            self._wake.notify()

    def post_live(self, message: LiveValues, blobs: list[bytes]) -> bool:
        """Post a `live_values` message, unless the last one is not written yet (False: the
        caller keeps its values for later, so a slow editor costs no memory here)."""
        with self._wake:
            if self._live is not None:
                return False
            self._live = (message, blobs)
            self._wake.notify()
            return True

    def close(self) -> None:
        with self._wake:
            self.closed = True
            self._wake.notify()
        with contextlib.suppress(OSError):
            self.channel.close()

    def _read(self) -> None:
        try:
            while not self.closed:
                raw, blobs = self.channel.receive()
                self._inbox.put((self, self.received(raw, blobs), blobs))
        except (EOFError, OSError, TypeError, ProtocolError) as error:
            # (TypeError: the connection was closed under this thread)
            if isinstance(error, ProtocolError):
                self.post(Error(f"protocol: {error}"))
        self._inbox.put((self, Gone(), []))

    @staticmethod
    def received(raw: dict[str, Any], blobs: list[bytes]) -> Any:
        """What a frame puts in the inbox: its message, a patch built here (off the frame
        thread), or why it is no message (also what an in-process link puts there)."""
        try:
            message = decode(raw, TO_ENGINE)
        except MessageError as error:
            return Unreadable(str(raw.get("type")), str(error))
        if isinstance(message, PatchDocument):
            try:
                return ArrivedPatch(message, patch_from_message(message, blobs))
            except (PatchError, ProtocolError) as error:
                return ArrivedPatch(message, None, str(error))
        return message

    def _write(self) -> None:
        while True:
            with self._wake:
                while not (self.closed or self._pending or self._report or self._live):
                    self._wake.wait()
                if self.closed:
                    return
                batch, self._pending = self._pending, []
                report, self._report = self._report, None
                live = self._live
            if live is not None:
                batch.append(live)
            if report is not None:
                batch.append(report)
            try:
                for message, blobs in batch:
                    self.channel.send(message, blobs)
            except (OSError, ValueError, TypeError):  # TypeError: closed under this thread
                self.closed = True
                return
            if live is not None:
                with self._wake:
                    self._live = None  # written: the next one may come


class EngineServer:
    """Accepts editors on a local socket (authenticated with a key only the user can read);
    the newest editor replaces an older one."""

    def __init__(self, address: str, authkey: bytes, inbox: Inbox) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(address)
        self._listener = Listener(address, family="AF_UNIX", authkey=authkey)
        self._inbox = inbox
        self.address = address
        threading.Thread(target=self._accept, name="engine-listener", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection = self._listener.accept()
            except OSError:
                return  # closed
            except Exception:  # a client that failed authentication, or hung up
                continue
            link = EditorLink(Channel(connection), self._inbox)
            self._inbox.put((link, Connected(), []))

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.address)


class Engine:
    """The running patch: see the module note. `gpu` is a GLService or None; `bypass` maps node
    ids to the reason they must not run; `services` are the options of its services
    (evaluators.services.registry: `osc_port`, `osc_host`, `allow_send`)."""

    def __init__(
        self,
        patch: Patch,
        *,
        gpu: Any = None,
        bypass: dict[str, str] | None = None,
        frame_log: FrameLog | None = None,
        supervised: bool = False,
        playing_file: Path | None = None,
        services: dict[str, Any] | None = None,
        now: Callable[[], float] = time.perf_counter,
        build_first: bool = True,
        freeze_collector: bool = True,
        load_beside: bool = False,
    ) -> None:
        """`build_first`: build the flat program before the first frame (see the module note);
        a host that builds it itself, once it has set what the evaluator watches, says False.
        `freeze_collector`: `gc.freeze()` at loads (an engine process; not an engine in an
        editor's process, whose frozen garbage cycles would never be collected). `load_beside`:
        a patch the editor sends is built on a thread while the one playing plays on (see
        `replace_patch`; the engine process; tests step an engine that switches at once)."""
        self.gpu = gpu
        self.freeze_collector = freeze_collector  # gc.freeze() at loads (see the module note)
        self.load_beside = load_beside
        self._incoming: _IncomingPatch | None = None  # a patch being built beside the playing one
        self.supervised = supervised  # a supervisor process restarts it, not its editors
        self.playing_file = playing_file  # where what plays is kept when the editor leaves
        self.ctx = ExecutionContext(gpu)
        self.ctx.bypassed.update(bypass or {})
        self.ctx.services.options.update(services or {})  # --osc-port and the like
        self.patch = patch
        self.evaluator = DualEvaluator(patch, context=self.ctx)
        self.frame_log = frame_log
        self.document_path: str | None = None  # the editor's file name for the patch, if any
        self.inbox = Inbox()
        self.editor: EditorLink | None = None
        self.frame = 0
        self.steps = 0  # turns of the frame loop, paused or not (the watchdog's heartbeat)
        self.transport = TransportClock(now)  # patch time: rate, pause, steps, fixed step
        self.presets = PresetDeck(patch)  # recalls, transitions and morphs while playing
        # The transport's beat, as a `time.beat` node that runs every frame counts it (nudged and
        # resynced with them); reported for the editor's beat light and bar.beat counter.
        self.beat_clock = BeatClock()
        self.beat = 0.0
        self.in_sync = True
        self.frame_started: float | None = None  # monotonic time, while a frame runs
        self.output_open = False
        self.output_screen: str | None = None  # where the output window is (set by the host)
        self.output_fullscreen = False
        self.on_output_request: Callable[[Output], None] | None = None
        self.on_quit: Callable[[], None] | None = None
        self.presents_frames = False  # True while an output window logs presented frames
        self._frame_origin = 0  # `frame` when the clock was last reset: nodes count from there
        self._step_once = False  # run the next frame although paused (a step, a time reset)
        self._watched: list[str] = []
        self._reported: list[str] = []  # also in reports' values, without being watched
        self._level = ""  # the instance path the editor's canvas shows ("": the top level)
        self._thumbnail_nodes: list[str] = []
        self._thumbnail_queue: list[str] = []
        self._thumbnail_round_at = 0.0
        self._previews: list[tuple[str, str]] = []
        self._pictures_at = 0.0  # perf_counter() time of the last turn that pictured textures
        self._sent_pictures = SentPictures()
        self._report_at = 0.0
        self._applied: list[Any] = [None, None]  # [seq of the last edits, first frame showing it]
        self._reported_revision = -1  # of the last report that listed every node id
        self._report_cursor = 0  # where the next report's slice of nodes starts
        self._freeze_due = freeze_collector  # freeze the collector's objects once this runs flat
        if build_first:
            self._build_first()
        if freeze_collector:
            gc.freeze()  # and now: the build's collections need not look at the patch
        self._fps_frames = 0
        self._fps_since = time.perf_counter()
        self.fps = 0.0
        self.refresh_steps = RefreshSteps("patchbay engine")
        self.failed_pictures = FailedPictures()
        # live values set since the last `live_values` message went out: (node, pin) -> value
        self._live_values: dict[tuple[str, str], Any] = {}
        self._pack_revision = library_revision()
        self._pack_watcher: PackWatcher | None = None
        self._pack_problems: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._profile_answers = ProfileAnswers()  # `profile` requests
        self._service_said: dict[str, ServiceStatus] = {}  # told to the editor, by service
        self._failures_said: set[str] = set()  # nodes whose failure the editor was told of
        self._unsubscribe = patch.subscribe(self._on_patch_event)
        self.controls = Controls(
            patch, self.ctx, on_preset=self.presets.recall, on_crossfade=self.presets.set_crossfade
        )
        # what each message from the editor does (`_handle`): message class -> handler
        self._handlers: dict[type[Any], Callable[[Any, list[bytes]], None]] = {
            Hello: self._on_hello,
            ArrivedPatch: self._on_patch,
            Edits: self._on_edits,
            DocumentPath: self._on_path,
            GetPatch: self._on_get_patch,
            Watch: self._on_watch,
            Level: self._on_level,
            Images: self._on_images,
            Output: self._on_output,
            Learn: self._on_learn,
            ProfileRequest: self._on_profile,
            Retry: self._on_retry,
            Pause: lambda message, _: self.set_paused(message.paused),
            AllowSend: lambda message, _: self.allow_send(message.allow),
            Services: lambda message, _: self.set_osc_host(message.osc_host),
            Step: lambda message, _: self.step_paused(checked_step(message.seconds)),
            Rate: lambda message, _: self.transport.set_rate(message.rate),
            FixedStep: lambda message, _: self.transport.set_fixed_step(message.fps),
            PresetRecall: self._on_deck,
            Morph: self._on_deck,
            Crossfade: self._on_deck,
            ResetTime: lambda message, _: self.reset_clock(),
            Nudge: lambda message, _: nudge_beats(self._beat_clocks(), message.beats),
            ResyncBeats: lambda message, _: resync_beats(self._beat_clocks()),
            Quit: self._on_quit,
        }

    def _on_patch_event(self, event: PatchEvent) -> None:
        if event.kind == "ui":
            return  # layout (positions, backdrops): kept in the copy, nothing runs differently
        self.failed_pictures.on_patch_event(event)
        if event.op == EditOp.SETTINGS and event.definition is None:
            self.ctx.services.settings_changed(event.value)  # a new OSC port: OSC starts again
        if event.op != EditOp.SET_VALUE or event.definition is not None or not event.node_id:
            return
        if event.live:
            self._live_values[event.node_id, event.pin or ""] = event.value
        else:  # an editor's edit of the pin: newer than the live values it had not heard of
            self._live_values.pop((event.node_id, event.pin or ""), None)

    # ----------------------------------------------------------------- clock and frames
    def clock(self) -> float:
        """Seconds of patch time (app.engine.transport: rate, pauses, steps and the fixed step)."""
        return self.transport.seconds()

    @property
    def paused(self) -> bool:
        return self.transport.paused

    def set_paused(self, paused: bool) -> None:
        if paused != self.paused:
            self.transport.set_paused(paused)

    def step_paused(self, seconds: float) -> None:
        """While paused: move patch time by `seconds` and run one frame at the next `step()`.
        A negative step is a step back: the frame index the nodes see goes back one too."""
        if self.paused:
            self.transport.advance(seconds)
            # The frame index the nodes see moves one per step (the frame to run counts one).
            if seconds < 0:
                self._frame_origin += 1 if self._step_once else 2
            elif self._step_once:
                self._frame_origin -= 1
            self._step_once = True

    def reset_clock(self) -> None:
        """Patch time and the frame count the nodes see back to 0; paused, the frame at time 0
        runs at the next `step()`."""
        self.transport.reset()
        self._frame_origin = self.frame
        self._step_once = self.paused

    def step(self, t: float | None = None, then: Callable[[], None] | None = None) -> None:
        """Apply what editors sent, run one frame (at clock `t`, default the engine's clock)
        unless paused (or stepping), call `then()` while the frame's GL work is current (a
        headless player reads its output there), and report when one is due. Live controls apply
        before the frame, and while paused too (as edits do)."""
        self.drain()
        self._switch_patch(wait=False)
        self.refresh_steps.run("packs", self._apply_packs)
        self.refresh_steps.run("controls", self.controls.before_frame)
        learned = self.controls.take_learned()
        if learned is not None and self.editor is not None:
            self.editor.post(Learned(**learned))
        problem = self.controls.take_learn_problem()
        if problem is not None and self.editor is not None:
            self.editor.post(LearnUnreachable(**problem))
        images: list[tuple[dict[str, Any], bytes]] = []
        if not self.paused or self._step_once:
            self._step_once = False
            self.frame_started = time.monotonic()
            gpu_frame = self.gpu.frame() if self.gpu is not None else contextlib.nullcontext()
            with gpu_frame:
                t = self.transport.frame_time() if t is None else t
                self._step_presets(t)
                self.evaluator.run_frame(t, self.frame - self._frame_origin)
                self.beat, _pulse = self.beat_clock.advance(t, self.ctx.bpm, BEATS_PER_BAR)
                if then is not None:
                    then()
                if self.editor is not None and self.gpu is not None:
                    images = self.refresh_steps.run("pictures", self._images) or []
            self.frame_started = None
            if self._freeze_due and self.evaluator.mode == "flat":
                gc.freeze()
                self._freeze_due = False
            self.frame += 1
            self._fps_frames += 1
            if self.frame_log is not None and not self.presents_frames:
                self.frame_log.presented(self.frame - 1)
        elif self.editor is not None and self.gpu is not None and self._pictures_due():
            with self.gpu.frame():
                images = self.refresh_steps.run("pictures", self._images) or []
        self._maybe_report(images)
        self.steps += 1

    # ----------------------------------------------------------------- node packs
    def watch_packs(self, folder: Path | None = None) -> None:
        """Follow the user's nodes folder (or `folder`): a pack file changed is imported on the
        watcher's thread, and swapped in here between two frames (`_apply_packs`)."""
        if self._pack_watcher is None:
            self._pack_watcher = PackWatcher(folder or user_nodes_folder(), self._pack_problems.put)

    def _apply_packs(self) -> None:
        """Between frames: swap staged packs into the library and give the patch's instances
        the new specs (evaluators rebuild on the `pins` events); problems are one line each,
        on stderr and to the editor."""
        problems = apply_staged()
        while not self._pack_problems.empty():
            problems.append(self._pack_problems.get_nowait())
        if library_revision() != self._pack_revision:
            self._pack_revision = library_revision()
            sync_instances(self.patch)
        for problem in problems:
            print(f"patchbay engine: {problem}", file=sys.stderr)
            if self.editor is not None:
                self.editor.post(Error(problem[:300]))

    def _step_presets(self, t: float) -> None:
        """Step the preset deck before the frame runs; a recall that fails is ended, and the
        editor told (the frame goes on)."""
        try:
            self.presets.step(t, self.ctx.bpm)
        except PatchError as error:
            if self.editor is not None:
                self.editor.post(Error(f"preset: {error}"[:300]))

    # ----------------------------------------------------------------- messages
    def between_frames(self) -> None:
        """Apply what editors sent now, between two frames, and build what a structural edit
        needs (`DualEvaluator.prepare`), so the next frame only runs."""
        self.drain()
        self._switch_patch(wait=False)
        self.evaluator.prepare()

    def drain(self) -> None:
        """Handle every message that arrived since the last frame."""
        while True:
            try:
                link, message, blobs = self.inbox.get_nowait()
            except queue.Empty:
                return
            self._handle(link, message, blobs)

    def _handle(self, link: EditorLink, message: Any, blobs: list[bytes]) -> None:
        """One item of the inbox: a connection come or gone, or a message of the current
        editor, handed to its handler (`_handlers`); what cannot be applied is answered with
        one error line (and an `edits` message so refused asks for a resync)."""
        if isinstance(message, Connected):
            self._on_connected(link)
            return
        if link is not self.editor:
            return  # a replaced editor's last words
        if isinstance(message, Gone):
            self.editor = None
            self._switch_patch(wait=True)  # what it sent last is what plays on
            self._keep_playing()
            return
        if isinstance(message, Unreadable):
            link.post(Error(message.error[:300]))
            if message.kind == Edits.TYPE:
                self._ask_resync(message.error)
            return
        kind = message.message.TYPE if isinstance(message, ArrivedPatch) else message.TYPE
        if type(message) in _NEEDS_THE_NEW_PATCH:
            self._switch_patch(wait=True)  # a patch still being built beside the playing one
        try:
            self._handlers[type(message)](message, blobs)
        except (PatchError, ProtocolError, ValueError, TypeError) as error:
            link.post(Error(f"{kind}: {error}"[:300]))
            if isinstance(message, Edits):
                self._ask_resync(str(error))

    def _on_connected(self, link: EditorLink) -> None:
        if self.editor is not None:
            self.editor.close()
        self.editor = link
        self._reported_revision = -1  # its first report lists every node
        self._service_said.clear()  # it hears of every service and failure anew
        self._failures_said.clear()
        self._sent_pictures.clear()
        link.post(
            EngineHello(
                schema=PROTOCOL_VERSION,
                pid=os.getpid(),
                rev=self.patch.revision,
                vrev=self.patch.value_revision,
                gl=self.gpu is not None,
                gl_renderer=self.gpu.info.get("GL_RENDERER") if self.gpu else None,
                supervised=self.supervised,
                supervisor=os.getppid() if self.supervised else None,
                bypassed=dict(self.ctx.bypassed),
            )
        )

    def _on_hello(self, message: Hello, _blobs: list[bytes]) -> None:
        if message.schema != PROTOCOL_VERSION:
            raise ProtocolError(f"schema {message.schema!r}, expected {PROTOCOL_VERSION}")

    def _on_patch(self, arrived: ArrivedPatch, _blobs: list[bytes]) -> None:
        if arrived.patch is None:
            raise ProtocolError(str(arrived.error))
        self._failures_said.clear()  # another document (or the same again): its failures are news
        if arrived.message.seq is not None:  # the editor's edits it holds
            self._applied = [arrived.message.seq, self.frame]
        self.replace_patch(arrived.patch)
        self.document_path = arrived.message.path

    def _on_edits(self, message: Edits, blobs: list[bytes]) -> None:
        if self.in_sync and self.load_beside and len(message.ops) >= BESIDE_EDIT_OPS:
            # A big batch (a paste of many nodes): applied to a copy and built beside what plays.
            self._take_in(
                _IncomingPatch(self.patch.copy(), self.ctx, self._watched, message, blobs)
            )
            return
        if self.in_sync and not apply_edits(self.patch, message, blobs):
            self._ask_resync("revisions disagree")
        self._applied = [message.seq, self.frame]
        self._watch()  # watched nodes the edits made (the editor watches as it adds)

    def _on_path(self, message: DocumentPath, _blobs: list[bytes]) -> None:
        self.document_path = message.path

    def _on_get_patch(self, _message: GetPatch, _blobs: list[bytes]) -> None:
        if self.editor is not None:
            reply, reply_blobs = patch_message(self.patch)
            self.editor.post(dataclasses.replace(reply, path=self.document_path), reply_blobs)

    def _on_watch(self, message: Watch, _blobs: list[bytes]) -> None:
        self._watched = [str(n) for n in message.nodes]
        reported = [str(n) for n in message.report][:REPORT_VALUES_CAP]
        self._reported = [n for n in reported if n not in self._watched]
        self._watch()

    def _on_level(self, message: Level, _blobs: list[bytes]) -> None:
        self._level = message.path
        self._report_cursor = 0  # the next report starts the level's round (and its ids)

    def _on_images(self, message: Images, _blobs: list[bytes]) -> None:
        self._thumbnail_nodes = [str(n) for n in message.thumbnails]
        self._previews = [(str(node), str(pin)) for node, pin in message.previews]
        self._sent_pictures.clear()  # what the editor shows changed: each picture once more

    def _on_output(self, message: Output, _blobs: list[bytes]) -> None:
        self.output_open = message.open
        if self.on_output_request is not None:
            self.on_output_request(message)

    def _on_learn(self, message: Learn, _blobs: list[bytes]) -> None:
        if message.node is None:
            self.controls.cancel_learn()
        else:
            self.controls.learn(message.node, str(message.pin))

    def _on_profile(self, message: ProfileRequest, _blobs: list[bytes]) -> None:
        """Answer a `profile` request: the costliest nodes, why a node ran
        (app.engine.reports.profile_costs)."""
        if self.editor is not None:
            reply = self._profile_answers.reply(self.evaluator, *checked_request(message))
            self.editor.post(ProfileReply(**reply))

    def _on_retry(self, message: Retry, _blobs: list[bytes]) -> None:
        if message.node in self.graph.nodes:
            self.evaluator.retry(message.node)

    def _states(self) -> Iterable[Any]:
        return self.evaluator.ctx.states.values()

    def _beat_clocks(self) -> list[Any]:
        """The transport's beat clock and the nodes' states (nudges and resyncs find theirs)."""
        return [self.beat_clock, *self._states()]

    def _on_deck(self, message: PresetRecall | Morph | Crossfade, _blobs: list[bytes]) -> None:
        apply_deck_message(self.presets, message)

    def _on_quit(self, message: Quit, _blobs: list[bytes]) -> None:
        if message.unless_showing and self.output_open:
            return  # perform mode: the show goes on without its editor
        if self.playing_file is not None:
            self.playing_file.unlink(missing_ok=True)
            self.playing_file = None  # a show that ends is not resumed
        if self.on_quit is not None:
            self.on_quit()

    def allow_send(self, allow: bool) -> None:
        """Let `osc.out` nodes send from now on, or stop them (the editor asked the person)."""
        self.ctx.services.options["allow_send"] = allow
        if "osc" in self.ctx.services:
            self.ctx.service("osc").allow_send = allow

    def set_osc_host(self, host: Any) -> None:
        """Listen for OSC on `host` (an IP address) from now on: the OSC service alone starts
        again, between two frames."""
        if not isinstance(host, str):
            raise ProtocolError("services: 'osc_host' must be an IP address")
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            raise ProtocolError(f"services: {host[:60]!r} is not an IP address") from None
        self.ctx.services.set_option("osc_host", str(address))

    def _keep_playing(self) -> None:
        """The editor left: keep what plays for a restart (see the module note). Serialised and
        written on a worker thread; a patch changed meanwhile (a new editor) fails this one write
        quietly, and that editor's leaving writes again."""
        path = self.playing_file
        if path is None:
            return
        label = self.output_screen or ""
        state = {
            "path": self.document_path,
            "output": self.output_open,
            "screen": int(label.split(":")[0]) if label[:1].isdigit() else None,
            "fullscreen": self.output_fullscreen,
        }
        patch = self.patch

        def write() -> None:
            try:
                save_playing(path, patch, state)
            except Exception as error:  # the show plays on; the log says why
                print(f"patchbay engine: could not keep what plays: {error}", file=sys.stderr)

        threading.Thread(target=write, name="engine-keep-playing", daemon=True).start()

    def _ask_resync(self, reason: str) -> None:
        self.in_sync = False
        if self.editor is not None:
            self.editor.post(ResyncNeeded(reason))

    def _watch(self) -> None:
        if self._incoming is not None:
            return  # watched once it plays
        graph = self.graph
        graph.flush()  # edits inside definitions: their nodes exist from now on
        self.evaluator.watch(n for n in self._watched if n in graph.nodes)

    @property
    def graph(self) -> ExpandedPatch:
        """What the evaluator runs: the document with instances inlined, so nodes inside them
        are addressed by path (`blob1/lfo3`) in watch lists, reports and pictures."""
        return self.evaluator.patch

    def replace_patch(self, patch: Patch) -> None:
        """Play `patch` from the next frame on, keeping node states (same ids go on playing).

        With `load_beside` its flat program is compiled on a thread while the patch playing
        plays on, and it plays from the first frame after that (`_switch_patch`): opening a
        big file during a show holds no frame for its build. A message that needs the new patch
        (an edit, a recall, another patch) switches at once, waiting for the build."""
        self._switch_patch(wait=True)  # one that was still being built
        sync_instances(patch)  # built on a reader thread: a pack may have changed since
        self._take_in(_IncomingPatch(patch, self.ctx, self._watched))

    def _take_in(self, incoming: _IncomingPatch) -> None:
        self._incoming = incoming
        if self.load_beside:
            incoming.start()
        else:
            incoming.work()
            self._switch_patch(wait=True)

    def _switch_patch(self, wait: bool) -> None:
        """Play the incoming patch (`replace_patch`, `_on_edits`) once its program is compiled,
        or at once when `wait`; an edit batch that could not be applied to it is answered as
        `_on_edits` answers one, and what plays plays on."""
        incoming = self._incoming
        if incoming is None or not (wait or incoming.ready()):
            return
        built = incoming.result()
        self._incoming = None
        if incoming.problem is not None or incoming.evaluator is None or built is None:
            if incoming.evaluator is not None:
                incoming.evaluator.close()
            if self.editor is not None and incoming.problem is not None:
                self.editor.post(Error(f"edits: {incoming.problem}"[:300]))
            self._ask_resync(incoming.problem or "the edits could not be applied")
            return
        self.evaluator.close()
        self._unsubscribe()
        self.failed_pictures.clear()
        patch = incoming.patch
        self._unsubscribe = patch.subscribe(self._on_patch_event)
        self._live_values.clear()
        self.patch = patch
        self.presets.attach(patch)
        self.controls.patch = patch
        self.evaluator = incoming.evaluator
        self.ctx.keep_only(self.graph.nodes)  # inside instances too: paths that go on
        self.evaluator.adopt_build(built)
        self._watch()  # what the editor asked to watch meanwhile
        self.in_sync = True
        if incoming.seq is not None:
            self._applied = [incoming.seq, self.frame]
        self._freeze_due = self.freeze_collector
        if self.freeze_collector:
            gc.freeze()

    def _build_first(self) -> None:
        """A load has no edit to show at once, and its first frame computes every node either
        way: the flat program is built now, outside any frame (the watchdog counts frames), so
        frames run flat from the first one instead of lazily until a background build swaps in
        (slowest when frames run back to back). Its HOT code is generated on the builder thread
        while it runs its step loop."""
        self.evaluator.build_now(code_now=False)

    # ----------------------------------------------------------------- reports
    def report_next_step(self) -> None:
        """Report (and picture textures) at the next `step()` even if a report went out less
        than 1 / REPORT_HZ s ago: a host that steps frame by frame (app.engine.local, in tests)
        sees each frame's results."""
        self._report_at = self._pictures_at = -math.inf

    def _maybe_report(self, images: list[tuple[dict[str, Any], bytes]]) -> None:
        editor = self.editor
        now = time.perf_counter()
        if editor is None or (now - self._report_at < 1.0 / REPORT_HZ and not images):
            return
        if self._incoming is not None:
            return  # the editor's patch plays in a moment: reports of the one before would
            # carry its revisions
        if now - self._fps_since >= 0.5:
            self.fps = self._fps_frames / (now - self._fps_since)
            self._fps_frames, self._fps_since = 0, now
        self._report_at = now
        if self._live_values:
            self._post_live_values(editor)
        self._post_service_changes(editor)
        self._post_failures(editor)
        editor.post_report(self.report([meta for meta, _ in images]), [b for _, b in images])

    def _post_live_values(self, editor: EditorLink) -> None:
        """The latest live value of each pin since the last `live_values` message, unless that
        one is still on its way (then they wait, merged, for the next report)."""
        blobs: list[bytes] = []
        values = []
        for (node_id, pin), value in self._live_values.items():
            try:
                values.append([node_id, pin, encode_value(value, blobs)])
            except ValueError:  # a value no message can carry (the editor keeps its own)
                continue
        # `seq`: the last edits applied; the editor keeps its own value of a pin it edited later
        message = LiveValues(values, self._applied[0] or 0)
        if editor.post_live(message, blobs):
            self._live_values.clear()

    def _post_service_changes(self, editor: EditorLink) -> None:
        """A `service` message for each service whose status changed since the editor last
        heard (evaluators.ServiceStatus)."""
        for name, status in self.ctx.services.statuses().items():
            if self._service_said.get(name) != status:
                self._service_said[name] = status
                editor.post(ServiceChanged(name, **dataclasses.asdict(status)))

    def _post_failures(self, editor: EditorLink) -> None:
        """A `node_failed` message for each node failing for the first time (its error, or why
        it was bypassed), a few a report."""
        failed = {**self.evaluator.observer.errors, **self.ctx.bypassed}
        new = [node_id for node_id in failed if node_id not in self._failures_said]
        for node_id in new[:FAILURES_PER_REPORT]:
            self._failures_said.add(node_id)
            editor.post(NodeFailed(node_id, one_line(failed[node_id])[:300]))

    def report(self, images: Iterable[dict[str, Any]] = ()) -> Report:
        """The report message (without image blobs)."""
        ev, patch = self.evaluator, self.patch
        ids = self._level_ids()
        start = self._report_cursor if self._report_cursor < len(ids) else 0
        chosen = ids[start : start + REPORT_NODES]
        self._report_cursor = start + REPORT_NODES
        if len(chosen) < REPORT_NODES:  # the round ends: the next one starts from the first node
            chosen += ids[: min(start, REPORT_NODES - len(chosen))]
            self._report_cursor = len(ids)
        graph = self.graph
        chosen += [node_id for node_id in self._watched if node_id in graph.nodes]
        nodes = {
            node_id: [str(ev.node_class(node_id)), str(ev.status(node_id)), ev.error(node_id)]
            for node_id in chosen
        }
        listed: list[str] | None = None
        if patch.revision != self._reported_revision or start == 0:
            listed = ids  # the editor forgets nodes the engine no longer plays
            self._reported_revision = patch.revision
        values = {
            node_id: {
                out.name: report_value(ev.output(node_id, out.name))
                for out in graph.nodes[node_id].spec.outputs
            }
            for node_id in (*self._watched, *self._reported)
            if node_id in graph.nodes
        }
        return Report(
            frame=self.frame,
            rev=patch.revision,
            applied=self._applied,
            fps=round(self.fps, 2),
            frame_ms=round(ev.last_frame_seconds * 1000, 3),
            mode=str(ev.mode),
            build_ms=round(ev.last_build_seconds * 1000, 1),
            paused=self.paused,
            rate=self.transport.rate,
            fixed_fps=self.transport.fixed_fps,
            output_open=self.output_open,
            output_screen=self.output_screen,
            output_fullscreen=self.output_fullscreen,
            beat=round(self.beat, 4),
            bpm=round(self.ctx.bpm, 2),
            bypassed=dict(self.ctx.bypassed),
            nodes=nodes,
            values=values,
            images=list(images),
            ids=listed,
        )

    def _level_ids(self) -> list[str]:
        """The nodes of the level the editor's canvas shows (`level` message): the document's
        own, or the inner nodes of the instance at that path (`blob1/lfo3` for `blob1`)."""
        if not self._level:
            return list(self.patch.nodes)
        prefix = self._level + "/"
        return [n for n in self.graph.nodes
                if n.startswith(prefix) and "/" not in n[len(prefix):]]  # fmt: skip

    def _pictures_due(self) -> bool:
        """Pictures go with a report: one is due, and so is the next turn of pictures."""
        now = time.perf_counter()
        return (now - self._report_at >= 1.0 / REPORT_HZ
                and now - self._pictures_at >= 1.0 / PICTURES_HZ)  # fmt: skip

    def _images(self) -> list[tuple[dict[str, Any], bytes]]:
        """Small pictures of textures for the editor, at most `PICTURES_HZ` times a second: the
        previews and a few node thumbnails, each a GPU downscale and one small readback. A
        picture whose pixels are those the editor got last time is not sent again."""
        if not self._pictures_due():
            return []
        self._pictures_at = time.perf_counter()
        found: list[tuple[dict[str, Any], bytes]] = []
        picture = self.refresh_steps.run
        for node_id, pin in self._previews:
            found += picture("preview", self._picture, node_id, pin, PREVIEW_SIZE, "preview") or []
        now = time.perf_counter()
        if not self._thumbnail_queue and now >= self._thumbnail_round_at:
            self._thumbnail_round_at = now + THUMBNAIL_ROUND_S
            self._thumbnail_queue = list(self._thumbnail_nodes)
        for node_id in self._thumbnail_queue[:THUMBNAILS_PER_FRAME]:
            instance = self.graph.nodes.get(node_id)
            outputs = instance.spec.outputs if instance is not None else ()
            texture_pin = next((o.name for o in outputs if is_picture(o.type)), None)
            if texture_pin is not None:
                found += picture("thumbnail", self._picture, node_id, texture_pin,
                                 THUMBNAIL_SIZE, "thumbnail") or []  # fmt: skip
        del self._thumbnail_queue[:THUMBNAILS_PER_FRAME]
        changed = self._sent_pictures.changed
        return [(meta, pixels) for meta, pixels in found if changed(meta, pixels)]

    def _picture(
        self, node_id: str, pin: str, box: tuple[int, int], role: str
    ) -> list[tuple[dict[str, Any], bytes]]:
        if node_id not in self.graph.nodes:
            return []
        texture = self.evaluator.output(node_id, pin)
        size = getattr(texture, "size", None)
        if self.gpu is None or not (isinstance(size, tuple) and len(size) == 2):
            return []
        width, height = size
        scale = min(box[0] / width, box[1] / height)
        fitted = (max(1, round(width * scale)), max(1, round(height * scale)))
        gpu = self.gpu
        pixels = self.failed_pictures.picture(
            node_id, pin, texture, lambda: gpu.readback_scaled(texture, fitted)
        )
        if pixels is None:  # failed before, and the node has not changed since
            return []
        return [({"node": node_id, "pin": pin, "size": list(fitted), "role": role},
                 pixels.tobytes())]  # fmt: skip

    # ----------------------------------------------------------------- watchdog
    def start_watchdog(
        self,
        limit_s: float,
        hang_file: Path,
        heartbeat_file: Path,
        running_file: Path | None = None,
    ) -> None:
        """Stop the process (EXIT_HUNG) when a frame runs longer than `limit_s`, after writing
        the node it was inside to `hang_file`; touch `heartbeat_file` while steps go on; keep the
        node a long frame is inside in `running_file` (see the module note)."""
        frame_thread = threading.get_ident()
        heartbeat_file.touch()
        tick = min(0.1, limit_s / 4)

        def watch() -> None:
            steps = self.steps
            noted: tuple[float, str | None] | None = None  # (frame start, node) in running_file
            while True:
                time.sleep(tick)
                if self.steps != steps:
                    steps = self.steps
                    with contextlib.suppress(OSError):
                        os.utime(heartbeat_file)
                if self.frame_log is not None:
                    self.frame_log.flush_if_due()
                started = self.frame_started
                if running_file is not None:
                    long = started is not None and time.monotonic() - started >= tick
                    noted = _note_running(
                        running_file, noted, started if long else None, frame_thread
                    )
                if started is None or time.monotonic() - started < limit_s:
                    continue
                node_id = node_running_in(frame_thread)
                seconds = time.monotonic() - started
                hang_file.write_text(
                    json.dumps({"node": node_id, "seconds": seconds, "limit": limit_s}), "utf-8"
                )
                if self.frame_log is not None:
                    with contextlib.suppress(OSError, ValueError):
                        self.frame_log.close()
                os._exit(EXIT_HUNG)

        threading.Thread(target=watch, name="engine-watchdog", daemon=True).start()

    def close(self) -> None:
        if self._incoming is not None:
            self._incoming.result()  # its compile uses the context released below
            if self._incoming.evaluator is not None:
                self._incoming.evaluator.close()
            self._incoming = None
        if self._pack_watcher is not None:
            self._pack_watcher.close()
        if self.editor is not None:
            self.editor.close()
        self.evaluator.close()
        self.ctx.release_all()
        if self.frame_log is not None:
            self.frame_log.close()


class _IncomingPatch:
    """A patch the engine plays next (`Engine.replace_patch`), or a copy of the one playing with
    a big edit batch to apply (`Engine._on_edits`): `work` applies the batch, makes its evaluator
    and compiles its flat program, on a thread of its own (`start`) or the caller's. Nothing else
    touches the patch meanwhile; `problem` says why a batch could not be applied."""

    def __init__(
        self,
        patch: Patch,
        ctx: ExecutionContext,
        watched: Iterable[str],
        edits: Edits | None = None,
        blobs: list[bytes] | None = None,
    ) -> None:
        self.patch = patch
        self.ctx = ctx
        self.watched = list(watched)
        self.edits, self.blobs = edits, blobs or []
        self.seq = edits.seq if edits is not None else None
        self.evaluator: DualEvaluator | None = None
        self.problem: str | None = None
        self._built: BuildResult | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self.work, name="patchbay incoming", daemon=True)
        self._thread.start()

    def work(self) -> None:
        try:
            if self.edits is not None and not apply_edits(self.patch, self.edits, self.blobs):
                self.problem = "revisions disagree"
                return
        except (PatchError, ProtocolError, ValueError, TypeError) as error:
            self.problem = str(error)
            return
        evaluator = self.evaluator = DualEvaluator(self.patch, context=self.ctx)
        graph = evaluator.patch
        graph.flush()
        evaluator.watch(n for n in self.watched if n in graph.nodes)
        # HOT code follows on the evaluator's builder thread while the program runs.
        self._built = evaluator.compile_now(code_now=False)

    def ready(self) -> bool:
        return self._thread is None or not self._thread.is_alive()

    def result(self) -> BuildResult | None:
        if self._thread is not None:
            self._thread.join()
        return self._built


def _note_running(
    running_file: Path,
    noted: tuple[float, str | None] | None,
    started: float | None,
    frame_thread: int,
) -> tuple[float, str | None] | None:
    """Keep `running_file` naming the node a frame that has run for a watchdog tick is inside
    (`started`: that frame's start; None: no such frame), and remove it once that frame is
    over. `noted`: what the file says now (the frame's start, the node); returns what it says
    afterwards. A process killed from outside (the kernel's out-of-memory killer) cannot say
    what it was doing; this file says it for it. It may name a node of a long frame that ended
    less than a tick before the death: the supervisor needs two deaths with the same node."""
    if started is None or (noted is not None and noted[0] != started):
        if noted is not None:
            with contextlib.suppress(OSError):
                running_file.unlink()
        if started is None:
            return None
    node_id = node_running_in(frame_thread)
    if noted is not None and noted == (started, node_id):
        return noted
    with contextlib.suppress(OSError):
        running_file.write_text(json.dumps({"node": node_id}), "utf-8")
    return (started, node_id)
