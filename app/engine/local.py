"""An engine in the editor's own process: the engine process's messages, without the socket.

`LocalEngineLink` hosts an `Engine` (app.engine.engine) beside the editor and answers the editor as
`EngineClient` (app.engine.client) does, so an editor drives it exactly as it drives the engine
process: `send()` puts a message in the engine's inbox, `poll()` hands back what the engine
posted since (learned controls, live values, service statuses, errors...), `evaluator` is a
`RemoteEvaluator` that takes the engine's reports and pictures, and `hello` is the engine's
hello. Each message goes through the channel's JSON encoding on its way (blobs stay bytes), so
the engine sees what a remote editor would send, and the document and the engine's copy never
share an object.

Nothing runs by itself: whoever holds the link calls `step()` (the editor window each turn of its
loop; a test, frame by frame), which applies what was sent and builds what a structural edit
needs (`Engine.between_frames`, as app.qt.engine_host's host does when messages arrive), then runs
one frame (`Engine.step`). `step(report=True)` makes that frame report even if one went out less
than 1/REPORT_HZ s ago, so a test that steps sees each frame's results without waiting.

Assumes one thread: the editor's sends, steps and polls. Downsides: frames run in the editor's
thread, so a slow node holds the editor up and nothing watches for a hung one (`patchbay edit`
runs the engine process; this is for tests, benches and tools); the output window opens only
where the host sets `engine.on_output_request`, as app.qt.engine_host does (app.qt.output_host's
`local_engine_with_output` hosts one, presented by `after_step`, closed by `before_close`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from app.engine.client import RemoteEvaluator
from app.engine.engine import Connected, EditorLink, Engine
from app.engine.protocol.messages import (
    PROTOCOL_VERSION,
    TO_EDITOR,
    EngineHello,
    Hello,
    LiveValues,
    Message,
    Report,
    decode,
    encode,
)
from nodes import Patch


def _carried(message: Message, registry: Mapping[str, type[Message]]) -> Message:
    """`message` as the other end of a channel receives it: encoded to JSON and decoded again
    (tuples become lists, and nothing is shared with the sender)."""
    return decode(json.loads(json.dumps(encode(message), separators=(",", ":"))), registry)


class _EditorEnd:
    """What the engine holds for its editor (the role of app.engine.engine's `EditorLink`): what it
    posts is kept for the editor's `poll()`, its reports go straight to the editor's view."""

    def __init__(self, evaluator: RemoteEvaluator) -> None:
        self.closed = False
        self.messages: list[tuple[Message, list[bytes]]] = []
        self._evaluator = evaluator

    def post(self, message: Message, blobs: list[bytes] | None = None) -> None:
        if not self.closed:
            self.messages.append((_carried(message, TO_EDITOR), list(blobs or [])))

    def post_report(self, message: Report, blobs: list[bytes]) -> None:
        if not self.closed:
            report = _carried(message, TO_EDITOR)
            assert isinstance(report, Report)
            self._evaluator.update(report, list(blobs))

    def post_live(self, message: LiveValues, blobs: list[bytes]) -> bool:
        self.post(message, blobs)
        return True  # delivered at once: nothing is ever in flight

    def close(self) -> None:
        self.closed = True


class LocalEngineLink:
    """An `Engine` in this process, driven through messages: see the module note. `gpu` is the
    engine's GL service (None: GPU nodes fail with "no GPU context"); with `owns_gpu` the link
    closes it with the engine. `options` are the engine's service options (`osc_port`...)."""

    def __init__(
        self,
        patch: Patch | None = None,
        *,
        gpu: Any = None,
        owns_gpu: bool = False,
        options: dict[str, Any] | None = None,
    ) -> None:
        self.engine = Engine(
            patch if patch is not None else Patch(),
            gpu=gpu,
            services=options,
            freeze_collector=False,  # the editor's process: its garbage must stay collectable
        )
        self.evaluator = RemoteEvaluator()
        self.restarts = 0  # never restarted: it lives and dies with its editor
        self.attached = False
        self._owns_gpu = owns_gpu
        self.after_step: Callable[[], None] | None = None  # after each step (the output window)
        self.before_close: Callable[[], None] | None = None  # before the engine closes
        self._end: _EditorEnd | None = _EditorEnd(self.evaluator)
        self.engine.inbox.put((self._end, Connected(), []))
        self.send(Hello(PROTOCOL_VERSION))
        self.engine.drain()
        hello = [m for m, _ in self._end.messages if isinstance(m, EngineHello)]
        self._end.messages = [m for m in self._end.messages if not isinstance(m[0], EngineHello)]
        self.hello: EngineHello = hello[0]

    @property
    def connected(self) -> bool:
        return self._end is not None

    def send(self, message: Message | Mapping[str, Any], blobs: list[bytes] | None = None) -> bool:
        """Put `message` in the engine's inbox, as the engine's reader thread does with what a
        remote editor sends (a patch checked and built on arrival; a JSON object that is no
        message of the protocol, as a channel may carry, is refused there); False once closed."""
        if self._end is None:
            return False
        frame = encode(message) if isinstance(message, Message) else dict(message)
        raw = json.loads(json.dumps(frame, separators=(",", ":")))
        received = EditorLink.received(raw, list(blobs or []))
        self.engine.inbox.put((self._end, received, list(blobs or [])))
        return True

    def step(self, *, report: bool = False) -> None:
        """Apply what was sent (building what a structural edit needs), then run one frame
        (unless paused) and report when due; `report`: report this frame in any case."""
        if self._end is None:
            return
        self.engine.between_frames()
        if report:
            self.engine.report_next_step()
        self.engine.step()
        if self.after_step is not None:
            self.after_step()

    def poll(self) -> list[tuple[Message, list[bytes]]]:
        """What the engine posted since the last call, reports aside (they are in `evaluator`)."""
        if self._end is None:
            return []
        messages, self._end.messages = self._end.messages, []
        return messages

    def close(self, *, stop_engine: bool = True, unless_showing: bool = False) -> None:
        """End the engine with its editor (an engine in the editor's process cannot outlive
        it, whatever `stop_engine` and `unless_showing` ask), and its GL service if it owns it."""
        end, self._end = self._end, None
        if end is None:
            return
        end.close()
        if self.before_close is not None:
            self.before_close()
        self.engine.close()
        if self._owns_gpu and self.engine.gpu is not None:
            self.engine.gpu.close()
