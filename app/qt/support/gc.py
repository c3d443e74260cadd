"""Garbage collection on the GUI thread only.

Qt wrappers caught in reference cycles (closed windows, items of removed nodes) must be destroyed
on the thread that owns them. Python's automatic collector runs on whichever thread happens to
allocate past its threshold, which in a running patch is often the dual evaluator's background
builder: a collection there would destroy Qt objects off the GUI thread and crash the show.

`collect_on_gui_thread()` turns automatic collection off and collects from a Qt timer instead:
the young generations every second (cheap), everything now and then. Cycles are rare in the frame
loop itself (values are freed by reference counting), so memory stays flat.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

YOUNG_EVERY_MS = 1000
FULL_EVERY = 60  # young collections per full collection


class QtGuiThreadCollector(QObject):
    """Collects garbage from the GUI thread's event loop; see the module note."""

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self._ticks = 0
        self._timer = QTimer(self)
        self._timer.setInterval(YOUNG_EVERY_MS)
        self._timer.timeout.connect(self.collect)
        gc.disable()
        self._timer.start()

    def stop(self) -> None:
        """Hand collection back to Python."""
        self._timer.stop()
        gc.enable()

    def collect(self) -> None:
        self._ticks += 1
        gc.collect(2 if self._ticks % FULL_EVERY == 0 else 1)


def collect_on_gui_thread(app: QObject) -> QtGuiThreadCollector:
    """Take garbage collection over for the life of `app` (a QApplication)."""
    return QtGuiThreadCollector(app)
