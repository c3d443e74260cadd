"""The in-process engine link: an editor's messages reach an Engine without a socket, and its
hello, reports and other messages come back as from the engine process, frame by frame."""

from __future__ import annotations

import gc
import weakref

from app.engine.local import LocalEngineLink
from app.engine.protocol.channel import EditBatch, patch_message
from app.engine.protocol.messages import PROTOCOL_VERSION, Pause, Step, Watch
from nodes import Patch
from tests.app.test_engine import chain_patch


def linked(patch: Patch) -> tuple[LocalEngineLink, EditBatch]:
    """A link playing `patch`, as an editor starts it: the patch, then what it watches."""
    link = LocalEngineLink()
    edits = EditBatch(patch)
    patch.subscribe(edits.add)
    link.send(*patch_message(patch))
    link.send(Watch(["add"], []))
    return link, edits


def test_hello_says_what_the_engine_is() -> None:
    link = LocalEngineLink()
    assert link.hello.TYPE == "hello" and link.hello.schema == PROTOCOL_VERSION
    assert link.hello.gl is False  # no GL service given: GPU nodes fail
    assert link.connected and link.poll() == []  # the hello is not a message for the editor


def test_each_step_runs_one_frame_and_reports_it() -> None:
    link, _ = linked(chain_patch())
    link.step(report=True)
    assert link.evaluator.frame == 1 and link.evaluator.output("add") == 10.0  # frames run
    link.step(report=True)
    assert link.evaluator.frame == 2 and link.evaluator.output("add") == 11.0
    assert link.evaluator.status("out") == "ok"
    assert link.engine.frame == 2  # nothing ran between the steps


def test_edits_are_applied_to_the_engines_own_copy() -> None:
    patch = chain_patch()
    link, edits = linked(patch)
    link.step(report=True)
    patch.set_value("add", "b", 100.0)
    link.send(*edits.take())
    link.step(report=True)
    assert link.evaluator.output("add") == 101.0
    assert link.engine.patch is not patch  # its copy, built from the messages
    assert link.engine.patch.value("add", "b") == 100.0
    assert link.evaluator.applied[0] == edits.sent


def test_a_small_structural_edit_is_built_before_the_next_frame() -> None:
    patch = chain_patch()
    link, edits = linked(patch)
    while link.engine.evaluator.mode != "flat":
        link.step()
    patch.add_node("math.add", {"b": 1.0}, node_id="more")
    patch.connect("add", "out", "more", "a")
    link.send(*edits.take())
    link.step()  # the edit applied and its program derived between the frames, as the engine
    assert link.engine.evaluator.mode == "flat"  # host does when messages arrive


def test_other_messages_come_back_through_poll() -> None:
    link, _ = linked(chain_patch())
    link.send({"type": "retry", "node": 5})  # a frame that is no message: an error comes back
    link.send({"type": "no such message"})
    link.step()
    kinds = [message.TYPE for message, _ in link.poll()]
    assert "error" in kinds
    assert link.poll() == []  # each message once


def test_paused_the_engine_runs_a_frame_per_step_message_only() -> None:
    link, _ = linked(chain_patch())
    link.step(report=True)
    link.send(Pause(True))
    link.step(report=True)
    link.step(report=True)
    assert link.engine.frame == 1
    link.send(Step(1 / 60))
    link.step(report=True)
    assert link.engine.frame == 2 and link.evaluator.output("add") == 11.0


def test_closing_ends_the_engine() -> None:
    link, _ = linked(chain_patch())
    link.step()
    link.close()
    assert not link.connected
    assert link.send(Pause(True)) is False
    link.step()  # nothing runs any more
    assert link.engine.frame == 1


class _Cycle:
    """An object in a reference cycle with itself: only the collector frees it."""

    def __init__(self) -> None:
        self.itself = self


def test_an_engine_in_the_editors_process_leaves_its_garbage_collectable() -> None:
    """An engine process freezes the collector's objects at each load; one that shares its
    process (an editor's, a test's) must not, or the cycles made before are never collected."""
    collecting = gc.isenabled()
    gc.disable()  # nothing collects the cycle before the engine loads a patch
    try:
        garbage = weakref.ref(_Cycle())
        link, _ = linked(chain_patch())
        link.step(report=True)  # the patch replaced: where an engine process freezes again
        assert garbage() is not None
        gc.collect()
        assert garbage() is None
        link.close()
    finally:
        if collecting:
            gc.enable()
