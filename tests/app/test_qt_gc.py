"""Garbage is collected on the GUI thread, never on a worker thread that happens to allocate."""

from __future__ import annotations

import gc
import threading
from typing import Any

from PySide6.QtCore import QObject

from app.qt.support.gc import QtGuiThreadCollector


class Cycle:
    """Garbage only the cycle collector can free; records the thread that freed it."""

    freed_on: list[int] = []  # noqa: RUF012 - shared record, reset by the test

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        Cycle.freed_on.append(threading.get_ident())


def test_cycles_are_freed_by_the_collector_not_by_a_busy_worker(qtbot: Any) -> None:
    owner = QObject()
    collector = QtGuiThreadCollector(owner)
    Cycle.freed_on = []
    try:
        assert not gc.isenabled()
        Cycle()

        def churn() -> None:  # far more allocations than the collector's thresholds
            for _ in range(50_000):
                [[] for _ in range(4)]

        worker = threading.Thread(target=churn)
        worker.start()
        worker.join()
        assert Cycle.freed_on == []
        qtbot.waitUntil(lambda: Cycle.freed_on != [])
        assert Cycle.freed_on == [threading.get_ident()]
    finally:
        collector.stop()
    assert gc.isenabled()
