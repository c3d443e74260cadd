"""The engine process's event loop applies editors' messages as they arrive, between frames: a
reader thread's message wakes the loop through a socket pair, with no frame run."""

from __future__ import annotations

import threading

from app.engine.engine import Engine
from app.qt.engine_host import QtEngineHost
from nodes import Patch
from tests.app.test_engine import EditorEnd, chain_patch


def test_a_message_wakes_the_loop_and_is_applied_without_a_frame(qapp, qtbot) -> None:
    engine = Engine(Patch())
    host = QtEngineHost(qapp, engine, 60.0)  # its frame timer is not started: no frame runs
    before = engine.patch
    try:
        sent = threading.Thread(target=EditorEnd, args=(engine, chain_patch()))
        sent.start()  # the editor's first messages, put in the inbox from another thread
        sent.join()
        qtbot.waitUntil(lambda: engine.patch is not before and "add" in engine.patch.nodes)
        assert engine.frame == 0
    finally:
        host.close_wake()
        engine.close()
