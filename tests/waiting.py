"""Waiting in window tests and probes by deadline, never by counting event-loop turns.

A count of `processEvents()` calls says nothing about time: on a fast idle machine 4,000 calls pass
in 30 ms, fewer than two frames at 60 Hz. These helpers loop on `time.monotonic()` instead, sleeping
briefly between turns so the waiting process leaves the CPU to the ones it waits for. The limits
are generous (tens of seconds): only a real failure reaches them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

TIMEOUT_S = 30.0
"""How long a wait may take before the condition counts as never met."""


class EventLoop(Protocol):
    def processEvents(self) -> None: ...


def wait_until(app: EventLoop, condition: Callable[[], object], timeout: float = TIMEOUT_S) -> bool:
    """Run the event loop until `condition()` is true or `timeout` seconds have passed; return
    whether it came true."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return bool(condition())
        app.processEvents()
        time.sleep(0.002)
    return True


def run_for(app: EventLoop, seconds: float) -> None:
    """Run the event loop for `seconds` (for checks that something does *not* happen)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.002)
