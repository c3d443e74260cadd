"""Waiting in window tests and probes by deadline, never by counting event-loop turns.

A count of `processEvents()` calls says nothing about time: on a fast idle machine 4,000 calls pass
in 30 ms, fewer than two frames at 60 Hz. These helpers loop on `time.monotonic()` instead, sleeping
briefly between turns so the waiting process leaves the CPU to the ones it waits for. The limits
are generous (tens of seconds): only a real failure reaches them. `wait_for` raises a
TimeoutError naming what it waited for; `read_line` reads a child process's stdout with the same
kind of deadline, so that a child that hangs fails the test instead of stopping the run.
"""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from collections.abc import Callable
from typing import IO, Protocol

TIMEOUT_S = 30.0
"""How long a wait may take before the condition counts as never met."""

BUILD_TIMEOUT_S = 60.0
"""How long a dual evaluator's background build of a test patch may take to swap in
(`wait_for_flat`): its own default, 10 s, is for tools; a loaded machine can take longer."""


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


def wait_for(
    app: EventLoop, condition: Callable[[], object], what: str, timeout: float = TIMEOUT_S
) -> None:
    """Run the event loop until `condition()` is true; raise TimeoutError naming `what` if it is
    not within `timeout` seconds (for waits that later steps depend on)."""
    if not wait_until(app, condition, timeout):
        raise TimeoutError(f"waited {timeout:.0f} s for {what}")


def poll_until(
    condition: Callable[[], object], timeout: float = TIMEOUT_S, interval: float = 0.01
) -> bool:
    """Without an event loop: check `condition()` every `interval` seconds until it is true or
    `timeout` seconds have passed; return whether it came true."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return bool(condition())
        time.sleep(interval)
    return True


def _read_in_thread(read: Callable[[], str], timeout: float) -> str | None:
    """`read()` in a daemon thread; its result, or None if it did not return within `timeout`."""
    results: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: results.put(read()), daemon=True).start()
    try:
        return results.get(timeout=max(timeout, 0.0))
    except queue.Empty:
        return None


def read_line(
    process: subprocess.Popen[str], what: str = "a line", timeout: float = TIMEOUT_S
) -> str:
    """The next line `process` writes to its stdout (a text pipe), "" at its end. If none comes
    within `timeout` seconds the process is killed and TimeoutError names `what` and shows the
    end of its stderr (when that is a pipe; otherwise it went to the test's own stderr)."""
    stdout: IO[str] | None = process.stdout
    assert stdout is not None, "read_line needs stdout=subprocess.PIPE"
    line = _read_in_thread(stdout.readline, timeout)
    if line is not None:
        return line
    process.kill()
    process.wait()
    stderr = process.stderr
    errors = (_read_in_thread(stderr.read, 5.0) or "") if stderr is not None else ""
    raise TimeoutError(
        f"waited {timeout:.0f} s for {what} from process {process.pid} (now killed); "
        f"its stderr ends:\n{errors[-3000:]}"
    )


def run_for(app: EventLoop, seconds: float) -> None:
    """Run the event loop for `seconds` (for checks that something does *not* happen)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        app.processEvents()
        time.sleep(0.002)
