"""Services: the long-lived I/O of a running patch (OSC server, MIDI ports, audio input).

`Services` belongs to an ExecutionContext. A service is made by name (`get("osc")`) the first time a
node asks for it, by the factory in `FACTORIES`, and lives until `close()` (the context's
`release_all()`, when the process that runs frames discards the patch). Only the frame thread may
make one: the thread that called `frame_started()` last, which the context does at the start of
every frame. Background builds (the dual evaluator's) and worker threads get a RuntimeError, so no
evaluator built off the frame thread ever opens a socket or a device.

A service has `begin_frame()`, called at the start of every frame before any node runs (where it
drains what its I/O threads queued), and `close()`. `options` are the process's own settings for
services, from its command line (`osc_port`, `osc_host`, `allow_send`); they win over the patch's
settings, which a factory reads from the context (`ctx.settings`).

What a service is doing is one `ServiceStatus` (`status()`, read on the frame thread): on, off
with why and what to do, or waiting. `statuses()` gathers those of the services made so far, so
the process can tell its editor when one changes (a port taken is one line in the window, not
only in a log). `restart(name)` closes one service and forgets it; the next `get` makes it
afresh from the options and settings then in force, so a new port applies without stopping the
frame loop or the other services: `settings_changed` does that for the patch settings a service
reads (`osc_port`; the person's choice in the window then wins over the command line's), and
`set_option` for an option changed while the process runs (`osc_host`).

Factories import their module when first used, so a process that never plays an OSC node never
imports python-osc, nor mido one without MIDI nodes, nor sounddevice one without audio input.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

ON, OFF, WAITING = "on", "off", "waiting"


@dataclass(frozen=True)
class ServiceStatus:
    """What a service is doing, in words a person can act on: `state` is ON (working), OFF (it
    could not start, or was turned off) or WAITING (made, nothing opened yet); `text` is one line
    ("listening on 127.0.0.1:9000", "cannot listen on 127.0.0.1:9000 (Address already in use)");
    `advice` says what to do when it is off ("" when nothing is to be done); `address` is where
    a network service listens or would ("127.0.0.1:9000"), for a window to offer it to change."""

    state: str
    text: str
    advice: str = ""
    address: str = ""


class Service(Protocol):
    def begin_frame(self) -> None: ...

    def close(self) -> None: ...

    def status(self) -> ServiceStatus: ...


def _audio(ctx: Any) -> Service:
    from evaluators.services.audio import AudioService

    return AudioService.for_context(ctx)


#: Name -> factory taking the execution context. The control sources add theirs ("osc", "midi":
#: evaluators.controls.sources).
FACTORIES: dict[str, Callable[[Any], Service]] = {"audio": _audio}
#: Patch settings and options -> the service that reads them when it is made.
READ_BY = {"osc_port": "osc", "osc_host": "osc"}


class Services:
    """The services of one execution context: see the module note."""

    def __init__(self) -> None:
        self.options: dict[str, Any] = {}
        self._made: dict[str, Service] = {}
        self._frame_thread: int | None = None
        self._prepared = False

    def get(self, name: str, ctx: Any) -> Any:
        """The service `name`, made on first use (on the frame thread only)."""
        found = self._made.get(name)
        if found is not None:
            return found
        factory = FACTORIES.get(name)
        if factory is None:
            raise KeyError(f"no service named {name!r}")
        if threading.get_ident() != self._frame_thread:
            raise RuntimeError(f"the {name} service can only be opened on the frame thread")
        made = self._made[name] = factory(ctx)
        return made

    def __contains__(self, name: str) -> bool:
        return name in self._made

    def prepare_frame(self) -> None:
        """Drain the services' queues for the coming frame now, before the evaluator runs it (the
        frame loop does, to apply live controls to the patch first); that frame's
        `frame_started()` then drains nothing more. Frame thread only. Called again before that
        frame runs (a paused engine applies controls without running frames), it drains again."""
        self._frame_thread = threading.get_ident()
        for service in self._made.values():
            service.begin_frame()
        self._prepared = True

    def frame_started(self) -> None:
        """Called by the frame thread at the start of each frame: services drain their queues
        (unless `prepare_frame()` did for this frame)."""
        self._frame_thread = threading.get_ident()
        if self._prepared:
            self._prepared = False
            return
        for service in self._made.values():
            service.begin_frame()

    def statuses(self) -> dict[str, ServiceStatus]:
        """The status of every service made so far, by name (frame thread)."""
        return {name: service.status() for name, service in self._made.items()}

    def restart(self, name: str) -> None:
        """Close the service `name` if it was made; the next `get` makes it anew with the
        options and settings in force then (frame thread)."""
        service = self._made.pop(name, None)
        if service is not None:
            service.close()

    def settings_changed(self, keys: Iterable[str]) -> None:
        """The patch settings `keys` were edited (frame thread): the services that read them
        start again, and an option of the same name no longer overrides them."""
        for key in keys:
            name = READ_BY.get(key)
            if name is not None:
                self.options.pop(key, None)
                self.restart(name)

    def set_option(self, key: str, value: Any) -> None:
        """Change an option while the process runs (frame thread); the service that reads it
        starts again."""
        self.options[key] = value
        name = READ_BY.get(key)
        if name is not None:
            self.restart(name)

    def close(self) -> None:
        """Close every service made so far (a later `get` makes a new one)."""
        made, self._made = self._made, {}
        for service in made.values():
            service.close()
