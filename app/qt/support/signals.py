"""Ending a Qt program on SIGINT and SIGTERM (Ctrl+C in its terminal, `kill`) as its own Quit does.

Python runs a signal handler only between two bytecodes of the main thread, and Qt's event loop
waits in C++: a signal that arrives while the loop waits would be handled at the next Python slot,
whenever that comes. So `on_signals` points Python's wakeup fd (`signal.set_wakeup_fd`) at one end
of a socket pair whose other end a `QSocketNotifier` watches: the byte the C-level handler writes
wakes the loop, the notifier's slot runs Python, and Python runs the handler. The handler only
posts the callback to the event loop (`QTimer.singleShot(0, ...)`), so the program ends from the
loop, never from inside whatever code the signal interrupted. Main thread only, POSIX.
"""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QSocketNotifier, QTimer

ENDING_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def on_signals(
    callback: Callable[[int], None], numbers: Sequence[int] = ENDING_SIGNALS
) -> Callable[[], None]:
    """Call `callback(signal number)` from the Qt event loop (a QCoreApplication must exist)
    whenever one of `numbers` arrives. Returns the function that puts the previous handlers back;
    keep it as long as the handlers should work (it holds the notifier)."""
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    notifier = QSocketNotifier(reader.fileno(), QSocketNotifier.Type.Read)

    def drain() -> None:
        with contextlib.suppress(OSError):  # nothing left to read
            reader.recv(4096)

    notifier.activated.connect(drain)

    def handle(number: int, _frame: Any) -> None:
        QTimer.singleShot(0, lambda: callback(number))

    previous = {number: signal.signal(number, handle) for number in numbers}

    def restore() -> None:
        for number, handler in previous.items():
            signal.signal(number, handler)
        signal.set_wakeup_fd(previous_fd)
        notifier.setEnabled(False)
        reader.close()
        writer.close()

    return restore
