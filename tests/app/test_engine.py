"""The engine without its process: the message channel, applying edits to the engine's copy of a
patch, reports, resync, bypass, the frame log, and naming the node a thread is stuck in.

An editor is played by the test through a pipe: it sends what `QtEditorWindow` sends (the patch,
then each change event as it happens) and reads what the engine reports.
"""

from __future__ import annotations

import json
import pickle
import threading
import time
from multiprocessing import Pipe
from pathlib import Path

import numpy as np
import pytest

from app.bench.patches import hot_chain
from app.engine.engine import BESIDE_EDIT_OPS, Engine, FrameLog, load_playing, save_playing
from app.engine.protocol.channel import (
    Channel,
    EditBatch,
    ProtocolError,
    patch_from_message,
    patch_message,
)
from app.engine.protocol.messages import TO_EDITOR, TO_ENGINE, Report, decode, encode
from evaluators import DualEvaluator, FlatEvaluator, LazyEvaluator, node_running_in
from nodes import Patch
from tests.waiting import BUILD_TIMEOUT_S, TIMEOUT_S, poll_until


def chain_patch() -> Patch:
    patch = Patch()
    patch.add_node("time.frame", None, node_id="frame")
    patch.add_node("math.add", {"b": 10.0}, node_id="add")
    patch.add_node("output.value", None, node_id="out")
    patch.connect("frame", "out", "add", "a")
    patch.connect("add", "out", "out", "in")
    return patch


def as_report(raw: dict) -> Report:
    """A report as the editor's client reads it off the channel."""
    report = decode(raw, TO_EDITOR)
    assert isinstance(report, Report)
    return report


class EditorEnd:
    """The editor's side of a pipe to an Engine: sends the patch and its change events."""

    def __init__(self, engine: Engine, patch: Patch) -> None:
        editor_conn, engine_conn = Pipe()
        self.channel = Channel(editor_conn)
        self.engine = engine
        from app.engine.engine import Connected, EditorLink

        engine.inbox.put((EditorLink(Channel(engine_conn), engine.inbox), Connected(), []))
        self.patch = patch
        self.received: list[dict] = []
        self.channel.send(*patch_message(patch))
        self.edits = EditBatch(patch)
        patch.subscribe(self.edits.add)

    def send_edits(self) -> None:
        batch = self.edits.take()
        if batch is not None:
            self.channel.send(*batch)

    def read_until(self, kind: str, condition=lambda message: True) -> dict:
        self.send_edits()
        found: list[dict] = []

        def came() -> bool:
            self.engine.step()
            while self.channel.connection.poll():
                message, _ = self.channel.receive()
                self.received.append(message)
                if message["type"] == kind and condition(message):
                    found.append(message)
                    return True
            return False

        if not poll_until(came, TIMEOUT_S, interval=0.005):
            raise AssertionError(f"no {kind} message came")
        return found[0]


def test_a_patch_message_round_trips_with_large_arrays_as_blobs() -> None:
    patch = chain_patch()
    big = np.arange(100_000, dtype=np.float32)
    patch.add_node("value.array", {"value": big}, node_id="big")
    patch.add_node("value.array", {"value": np.array([1.5, 2.5])}, node_id="small")
    message, blobs = patch_message(patch)
    assert len(blobs) == 1 and len(blobs[0]) == big.nbytes  # raw bytes, not JSON numbers
    copy = patch_from_message(decode(json.loads(json.dumps(encode(message))), TO_ENGINE), blobs)
    assert copy.links == patch.links
    assert np.array_equal(copy.value("big", "value"), big)
    assert copy.value("big", "value").dtype == np.float32
    assert (copy.revision, copy.value_revision) == (patch.revision, patch.value_revision)


def test_the_channel_never_unpickles() -> None:
    left, right = Pipe()
    left.send_bytes(pickle.dumps({"type": "hello"}))
    with pytest.raises(ProtocolError, match="not JSON"):
        Channel(right).receive()
    left.send_bytes(b'["type", "hello"]')
    with pytest.raises(ProtocolError, match="JSON object"):
        Channel(right).receive()


def test_a_blob_that_does_not_match_its_description_is_refused() -> None:
    patch = Patch()
    patch.add_node("value.array", {"value": np.zeros(20_000)}, node_id="big")
    message, blobs = patch_message(patch)
    with pytest.raises(ProtocolError, match="does not match"):
        patch_from_message(message, [blobs[0][:-8]])
    message.document["nodes"][0]["type"] = "no.such"  # not installed: a placeholder
    placeholder = patch_from_message(message, blobs).nodes["big"]
    assert placeholder.spec.missing and placeholder.type_id == "no.such"
    assert np.array_equal(placeholder.values["value"], np.zeros(20_000))


def test_edits_reach_the_engine_and_reports_carry_values_and_statuses() -> None:
    patch = chain_patch()
    engine = Engine(Patch())
    editor = EditorEnd(engine, patch)
    editor.channel.send({"type": "watch", "nodes": ["out"]})
    report = editor.read_until("report", lambda m: "out" in m["values"])
    assert report["nodes"]["add"][0] == "HOT"
    # structural and value edits as the editor makes them
    patch.add_node("value.float", {"value": 5.0}, node_id="five")
    patch.disconnect("add", "out", "out", "in")
    patch.connect("five", "out", "out", "in")
    report = editor.read_until("report", lambda m: m["values"].get("out", {}).get("out") == 5.0)
    assert report["nodes"]["out"][0] == "CONST"
    patch.set_value("five", "value", 7.0)
    editor.read_until("report", lambda m: m["values"]["out"]["out"] == 7.0)
    patch.remove_node("add")
    editor.read_until("report", lambda m: "add" not in m["nodes"])
    assert sorted(engine.patch.nodes) == sorted(patch.nodes)
    assert engine.patch.links == patch.links
    assert not any(m["type"] == "resync" for m in editor.received)
    engine.close()


def test_an_edit_is_rebuilt_between_frames_as_it_arrives() -> None:
    """Messages wake the host as they arrive (`Inbox.on_put`), and `between_frames()` applies a
    structural edit and builds its program from the running one: the next frame only runs it."""
    patch = chain_patch()
    engine = Engine(Patch())
    wakes: list[int] = []
    engine.inbox.on_put = lambda: wakes.append(1)
    editor = EditorEnd(engine, patch)
    editor.read_until("report", lambda m: "out" in m["nodes"])
    assert poll_until(lambda: engine.step() or engine.evaluator.mode == "flat", TIMEOUT_S)
    running = engine.evaluator.program
    woken = len(wakes)
    patch.add_node("math.mul", {"b": 3.0}, node_id="triple")
    patch.disconnect("add", "out", "out", "in")
    patch.connect("add", "out", "triple", "a")
    patch.connect("triple", "out", "out", "in")
    editor.send_edits()
    assert poll_until(lambda: len(wakes) > woken, TIMEOUT_S, interval=0.002)
    engine.between_frames()
    program = engine.evaluator.program
    assert engine.evaluator.mode == "flat" and program is not running and program.derived
    assert "triple" in engine.patch.nodes
    engine.step()
    assert engine.evaluator.program is program  # the frame ran it, nothing was rebuilt
    assert engine.evaluator.output("out") == 3.0 * engine.evaluator.output("add")
    engine.close()


def test_a_load_runs_flat_from_the_first_frame() -> None:
    """A new engine, and one given a whole patch (`replace_patch`), build the flat program before
    the first frame: no lazy frames after a load."""
    engine = Engine(chain_patch())
    assert engine.evaluator.mode == "flat"
    engine.step()
    assert engine.evaluator.mode == "flat" and engine.evaluator.swaps == 1
    assert engine.evaluator.output("out") == engine.evaluator.output("add") >= 10.0
    replaced = chain_patch()
    replaced.add_node("math.mul", {"b": 3.0}, node_id="triple")
    replaced.disconnect("add", "out", "out", "in")
    replaced.connect("add", "out", "triple", "a")
    replaced.connect("triple", "out", "out", "in")
    engine.replace_patch(replaced)
    assert engine.evaluator.mode == "flat"
    engine.step()
    assert engine.evaluator.output("out") == 3.0 * engine.evaluator.output("add") >= 30.0
    engine.close()


def test_a_patch_sent_during_a_show_is_built_beside_it_and_plays_flat_when_ready() -> None:
    """With `load_beside` (the engine process) the patch playing plays on while the new one is
    built on a thread; the first frame after the build plays the new one, flat; an edit that
    comes meanwhile waits for it, then applies to the new patch."""
    engine = Engine(chain_patch(), load_beside=True)
    engine.step()
    playing = engine.patch
    big = hot_chain(3000)
    engine.replace_patch(big)
    assert engine.patch is playing  # plays on meanwhile
    switched = []

    def new_patch_plays() -> bool:
        engine.step()
        if engine.patch is big:
            switched.append(engine.evaluator.mode)
        return bool(switched)

    assert poll_until(new_patch_plays, BUILD_TIMEOUT_S, interval=0.0)
    assert switched == ["flat"]
    assert engine.evaluator.output("sink") is not None
    # An editor's patch and an edit right after it, in one drain: the edit waits for that
    # patch's build, then applies to it (no resync: the revisions agree).
    arrived = []
    counting = engine.inbox.put
    engine.inbox.put = lambda item: arrived.append(item) or counting(item)  # type: ignore[method-assign]
    editor = EditorEnd(engine, chain_patch())
    editor.patch.add_node("math.mul", {"b": 3.0}, node_id="triple")
    editor.send_edits()
    assert poll_until(lambda: len(arrived) == 3, TIMEOUT_S)  # connected, patch, edits
    engine.drain()
    assert engine._incoming is None and "triple" in engine.patch.nodes
    editor.read_until("report", lambda m: "triple" in m["nodes"])
    assert not any(m["type"] == "resync" for m in editor.received)
    engine.close()


def test_a_big_edit_batch_is_applied_beside_the_show_and_a_bad_one_asks_for_the_patch() -> None:
    """In the engine process a paste of many nodes is applied to a copy of the patch playing
    and built beside it; the copy plays once built, with the editor's revisions (no resync). A
    big batch whose revisions disagree asks for the whole patch, and what plays plays on."""
    engine = Engine(Patch(), load_beside=True)
    editor = EditorEnd(engine, chain_patch())
    editor.read_until("report", lambda m: "add" in m["nodes"])  # the editor's patch plays
    before = engine.patch
    for k in range(BESIDE_EDIT_OPS):
        editor.patch.add_node("math.add", {"b": float(k)}, node_id=f"pasted{k}")
    editor.send_edits()
    assert poll_until(lambda: engine.step() or engine.patch is not before, BUILD_TIMEOUT_S, 0.0)
    assert f"pasted{BESIDE_EDIT_OPS - 1}" in engine.patch.nodes
    assert engine.patch.revision == editor.patch.revision
    assert engine.evaluator.mode == "flat"
    editor.read_until("report", lambda m: m["rev"] == editor.patch.revision)
    assert not any(m["type"] == "resync" for m in editor.received)
    playing = engine.patch
    engine.patch.add_node("math.add", node_id="only here")  # the two now disagree
    for k in range(BESIDE_EDIT_OPS):
        editor.patch.set_value(f"pasted{k}", "a", 1.0)
    editor.read_until("resync")
    assert engine.patch is playing and engine.patch.value("pasted0", "a") != 1.0
    engine.close()


def test_edits_inside_a_definition_reach_every_instance_the_engine_plays() -> None:
    patch = chain_patch()
    body = Patch()
    body.add_node("subpatch.inlet", {"name": "x"}, node_id="inx")
    body.add_node("math.mul", {"b": 2.0}, node_id="gain")
    body.add_node("subpatch.outlet", {"name": "y"}, node_id="outy")
    body.connect("inx", "out", "gain", "a")
    body.connect("gain", "out", "outy", "in")
    patch.add_definition("double", body)
    engine = Engine(Patch())
    editor = EditorEnd(engine, patch)
    patch.add_node("subpatch", {"definition": "double", "x": 3.0}, node_id="d1")
    patch.add_node("subpatch", {"definition": "double", "x": 4.0}, node_id="d2")
    editor.channel.send({"type": "watch", "nodes": ["d1", "d2/gain"]})
    report = editor.read_until("report", lambda m: m["values"].get("d1", {}).get("y") == 6.0)
    patch.definition("double").set_value("gain", "b", 10.0)
    report = editor.read_until("report", lambda m: m["values"]["d1"]["y"] == 30.0)
    assert report["values"]["d2/gain"]["out"] == 40.0
    assert report["nodes"]["d2/gain"][0] == "CONST"
    # A structural edit inside, renaming a port on the way: the instances follow.
    patch.definition("double").set_value("outy", "name", "twice")
    patch.definition("double").add_node("math.add", {"b": 1.0}, node_id="plus")
    patch.definition("double").disconnect("gain", "out", "outy", "in")
    patch.definition("double").connect("gain", "out", "plus", "a")
    patch.definition("double").connect("plus", "out", "outy", "in")
    editor.read_until("report", lambda m: m["values"].get("d1", {}).get("twice") == 31.0)
    assert patch_message(engine.patch)[0].document == patch_message(patch)[0].document
    assert not any(m["type"] == "resync" for m in editor.received)
    engine.close()


def test_derived_pins_are_made_by_the_engine_and_their_echoes_are_harmless(tmp_path: Path) -> None:
    (tmp_path / "a.glsl").write_text("uniform float gain;\nuniform float bias;\nvoid main() {}\n")
    (tmp_path / "b.glsl").write_text("uniform float bias;\nvoid main() {}\n")
    patch = Patch()
    patch.folder = tmp_path
    patch.add_node("value.float", {"value": 1.0}, node_id="one")
    patch.add_node("gpu.shader", {"source": ""}, node_id="shader")
    engine = Engine(Patch())
    editor = EditorEnd(engine, patch)
    patch.set_value("shader", "file", "a.glsl")  # derives pins gain and bias
    patch.connect("one", "out", "shader", "gain")
    patch.set_value("shader", "file", "b.glsl")  # re-derived: gain and its link go
    assert patch.links == []
    editor.read_until("report", lambda m: m["rev"] == patch.revision)
    assert [pin.name for pin in engine.patch.node("shader").inputs] == [
        pin.name for pin in patch.node("shader").inputs
    ]
    assert engine.patch.links == patch.links
    assert not any(m["type"] == "resync" for m in editor.received)
    engine.close()


def test_revisions_that_disagree_ask_for_the_whole_patch_and_state_goes_on() -> None:
    patch = chain_patch()
    engine = Engine(Patch())
    editor = EditorEnd(engine, patch)
    editor.channel.send({"type": "watch", "nodes": ["frame"]})
    editor.read_until("report", lambda m: (m["values"].get("frame", {}).get("out") or 0) > 3)
    add = {"op": "add_node", "node": "x", "node_type": "math.add", "values": {}}
    editor.channel.send({"type": "edits", "seq": 1, "rev": 999, "vrev": 0, "ops": [add]})
    editor.read_until("resync")
    patch.add_node("math.mul", None, node_id="ignored")  # ignored until the resync
    editor.read_until("report")
    assert "ignored" not in engine.patch.nodes
    frames_before = engine.ctx.frame
    editor.channel.send(*patch_message(patch))
    editor.read_until("report", lambda m: "ignored" in m["nodes"])
    assert "x" not in engine.patch.nodes
    assert engine.ctx.frame >= frames_before  # the same context: the clock went on
    engine.close()


def test_a_bypassed_node_fails_with_its_reason_until_it_is_edited() -> None:
    patch = chain_patch()
    engine = Engine(Patch(), bypass={"add": "stopped: took longer than 2 s"})
    editor = EditorEnd(engine, patch)
    report = editor.read_until("report", lambda m: m["nodes"].get("add", [0, 0])[1] == "failed")
    assert report["nodes"]["add"][2] == "stopped: took longer than 2 s"
    assert report["bypassed"] == {"add": "stopped: took longer than 2 s"}
    patch.set_value("add", "b", 1.0)
    report = editor.read_until("report", lambda m: m["nodes"]["add"][1] == "ok")
    assert report["bypassed"] == {}
    engine.close()


def test_reports_never_hold_a_frame_back_when_the_editor_reads_nothing() -> None:
    patch = Patch()
    for index in range(300):  # reports of a few dozen kB each, more than a pipe holds
        patch.add_node("debug.fail", {"message": "x" * 200}, node_id=f"n{index}")
    engine = Engine(Patch())
    editor = EditorEnd(engine, patch)
    editor.send_edits()
    arrived = poll_until(
        lambda: engine.step() or engine.patch.nodes.keys() == patch.nodes.keys(), interval=0.001
    )
    assert arrived, "the edits never reached the engine"
    frames = engine.frame
    for _ in range(100):  # nobody reads: the sender thread blocks, the frame loop does not
        engine.step()
        time.sleep(0.035)
    assert engine.frame == frames + 100
    editor.channel.close()
    engine.close()


def test_the_frame_log_has_one_line_per_frame_with_its_monotonic_time(tmp_path: Path) -> None:
    path = tmp_path / "frames.log"
    engine = Engine(chain_patch(), frame_log=FrameLog(path))
    for _ in range(5):
        engine.step()
    engine.close()
    lines = [line.split() for line in path.read_text().splitlines()]
    assert [int(frame) for _, frame in lines] == [0, 1, 2, 3, 4]
    times = [float(t) for t, _ in lines]
    assert times == sorted(times) and times[-1] <= time.monotonic()


def test_what_plays_is_kept_whole_or_not_at_all(tmp_path: Path) -> None:
    patch = chain_patch()
    patch.add_node("value.array", {"value": np.arange(300_000.0)}, node_id="big")
    state = {"path": "/shows/x.patchbay", "output": True, "screen": 1, "fullscreen": True}
    save_playing(tmp_path / "playing.show", patch, state)
    kept, kept_state = load_playing(tmp_path / "playing.show")
    assert kept_state == state and sorted(kept.nodes) == sorted(patch.nodes)
    assert np.array_equal(kept.value("big", "value"), np.arange(300_000.0))
    data = (tmp_path / "playing.show").read_bytes()
    (tmp_path / "torn.show").write_bytes(data[: len(data) - 1000])
    with pytest.raises(ProtocolError, match="torn"):
        load_playing(tmp_path / "torn.show")
    (tmp_path / "other.show").write_bytes(b"{}")
    with pytest.raises(ProtocolError, match="not a saved show"):
        load_playing(tmp_path / "other.show")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left


def test_the_watchdog_flushes_the_frame_log_and_beats_while_frames_stall(tmp_path: Path) -> None:
    path, heartbeat = tmp_path / "frames.log", tmp_path / "heartbeat"
    engine = Engine(chain_patch(), frame_log=FrameLog(path))
    engine.start_watchdog(60.0, tmp_path / "hang.json", heartbeat)
    engine.step()
    engine.step()  # then the frame loop stalls: no frame flushes these lines
    poll_until(lambda: len(path.read_text().splitlines()) >= 2, interval=0.05)
    assert path.read_text().split()[1::2] == ["0", "1"]  # on disk, flushed by the watchdog
    beat = heartbeat.stat().st_mtime
    time.sleep(1.0)
    assert heartbeat.stat().st_mtime == beat  # no step: no beat
    engine.step()
    poll_until(lambda: heartbeat.stat().st_mtime != beat, interval=0.05)
    assert heartbeat.stat().st_mtime > beat  # a step: a beat
    engine.close()


@pytest.mark.parametrize("kind", [LazyEvaluator, FlatEvaluator, DualEvaluator])
def test_the_node_a_thread_is_stuck_in_is_named(kind) -> None:
    patch = chain_patch()
    patch.add_node("debug.sleep", {"seconds": 0.0}, node_id="slow")
    patch.disconnect("add", "out", "out", "in")
    patch.connect("add", "out", "slow", "x")
    patch.connect("slow", "out", "out", "in")
    evaluator = kind(patch)
    evaluator.run_frame(0.0, 0)
    if isinstance(evaluator, DualEvaluator):
        assert evaluator.wait_for_flat(BUILD_TIMEOUT_S), "the background build never swapped in"
    patch.set_value("slow", "seconds", 1.0)
    worker = threading.Thread(target=evaluator.run_frame, args=(1.0, 1))
    worker.start()
    names: list[str | None] = []
    poll_until(
        lambda: names.append(node_running_in(worker.ident or 0)) or names[-1], interval=0.005
    )
    named = names[-1]
    worker.join()
    evaluator.close()
    assert named == "slow"
    assert node_running_in(threading.get_ident()) is None


def test_the_node_a_replayed_lazy_frame_is_stuck_in_is_named() -> None:
    """A lazy evaluator replaying its last frame (no walk, no edit) hangs in a node that starts
    sleeping at t = 1 s: the watchdog's reading of the stack still names it."""
    patch = Patch()
    patch.add_node("time.seconds", node_id="t")
    patch.add_node("debug.sleep", node_id="slow")
    patch.add_node("output.value", node_id="out")
    patch.connect("t", "out", "slow", "seconds")
    patch.connect("t", "out", "slow", "x")
    patch.connect("slow", "out", "out", "in")
    evaluator = LazyEvaluator(patch)
    evaluator.run_frame(0.0, 0)
    evaluator.run_frame(0.0, 1)
    assert evaluator._schedule is not None  # the next frame replays
    worker = threading.Thread(target=evaluator.run_frame, args=(1.0, 2))
    worker.start()
    names: list[str | None] = []
    poll_until(
        lambda: names.append(node_running_in(worker.ident or 0)) or names[-1], interval=0.005
    )
    worker.join()
    evaluator.close()
    assert names[-1] == "slow"


def test_reports_cover_a_big_patch_in_slices_and_forget_removed_nodes() -> None:
    from app.engine.client import RemoteEvaluator
    from app.engine.engine import REPORT_NODES

    patch = Patch()
    for index in range(3 * REPORT_NODES + 5):
        patch.add_node("output.value", {"in": float(index)}, node_id=f"n{index}")  # sinks: run
    engine = Engine(Patch())
    editor = EditorEnd(engine, patch)
    remote = RemoteEvaluator()

    def seen_all() -> bool:
        report = editor.read_until("report")
        assert len(report["nodes"]) <= REPORT_NODES  # a slice, however big the patch
        remote.update(as_report(report), [])
        return all(remote.status(node_id) in ("ok", "cached") for node_id in patch.nodes)

    assert poll_until(seen_all, TIMEOUT_S, interval=0), "the reports never covered every node"
    patch.remove_node("n7")
    report = editor.read_until("report", lambda m: "ids" in m and "n7" not in m["ids"])
    remote.update(as_report(report), [])
    assert remote.nodes() == set(patch.nodes)
    engine.close()


def test_the_remote_evaluator_is_an_evaluator_speaking_its_vocabulary() -> None:
    from app.engine.client import RemoteEvaluator
    from evaluators import Evaluator, EvaluatorMode, NodeClass, NodeStatus

    patch = chain_patch()
    engine = Engine(Patch())
    editor = EditorEnd(engine, patch)
    editor.channel.send({"type": "watch", "nodes": ["out"]})
    remote = RemoteEvaluator()
    assert isinstance(remote, Evaluator)
    remote.update(as_report(editor.read_until("report", lambda m: "out" in m["values"])), [])
    assert remote.node_class("add") is NodeClass.HOT
    assert remote.status("out") in (NodeStatus.OK, NodeStatus.CACHED)
    assert isinstance(remote.mode, EvaluatorMode) and remote.output("out") >= 10.0
    assert remote.status("nosuch") is NodeStatus.IDLE
    engine.close()


def test_retry_runs_a_bypassed_node_again() -> None:
    patch = chain_patch()
    engine = Engine(Patch(), bypass={"add": "stopped: took longer than 2 s"})
    editor = EditorEnd(engine, patch)
    editor.read_until("report", lambda m: m["nodes"].get("add", [0, 0])[1] == "failed")
    editor.channel.send({"type": "retry", "node": "add"})
    report = editor.read_until("report", lambda m: m["nodes"]["add"][1] == "ok")
    assert report["bypassed"] == {}
    engine.close()


def test_an_editor_closing_stops_the_engine_unless_its_output_is_showing() -> None:
    engine = Engine(Patch())
    editor = EditorEnd(engine, Patch())
    quits: list[bool] = []
    engine.on_quit = lambda: quits.append(True)
    engine.output_open = True  # the host opened the output window: perform mode
    editor.channel.send({"type": "quit", "unless_showing": True})
    # Messages are handled in order: once the pause shows in a report, the quit was handled.
    editor.channel.send({"type": "pause", "paused": True})
    editor.read_until("report", lambda m: m["paused"])
    assert quits == []
    engine.output_open = False
    editor.channel.send({"type": "quit", "unless_showing": True})

    def stepped_to_quit() -> bool:
        engine.step()
        return bool(quits)

    poll_until(stepped_to_quit, TIMEOUT_S, interval=0.005)
    assert quits == [True]
    engine.close()


def test_values_asked_for_in_reports_come_back_without_watching_and_capped() -> None:
    from app.engine.client import RemoteEvaluator
    from app.engine.engine import REPORT_VALUES_CAP

    patch = chain_patch()
    patch.add_node("array.range", {"count": 1000}, node_id="ramp")
    patch.add_node("output.value", None, node_id="ramp_out")
    patch.connect("ramp", "out", "ramp_out", "in")
    for n in range(REPORT_VALUES_CAP + 4):
        patch.add_node("value.float", {"value": float(n)}, node_id=f"v{n}")
    engine = Engine(Patch())
    editor = EditorEnd(engine, patch)
    asked = ["add", "ramp"] + [f"v{n}" for n in range(REPORT_VALUES_CAP + 4)]
    editor.channel.send({"type": "watch", "nodes": [], "report": asked})
    report = editor.read_until("report", lambda m: "ramp" in m["values"])
    assert set(report["values"]) == set(asked[:REPORT_VALUES_CAP])
    remote = RemoteEvaluator()
    remote.update(as_report(report), [])
    assert remote.output_shape("ramp") == (1000,)  # its values come shortened, its shape whole
    assert remote.output("add") >= 10.0
    # Reported, not watched: a value node nothing needs does not run.
    assert report["nodes"]["v0"][1] == "idle"
    engine.close()


def test_paused_the_engine_steps_one_frame_at_a_time_and_resets_its_time() -> None:
    patch = Patch()
    patch.add_node("time.frame", None, node_id="frame")
    patch.add_node("time.seconds", None, node_id="t")
    engine = Engine(Patch())
    editor = EditorEnd(engine, patch)
    editor.channel.send({"type": "watch", "nodes": ["frame", "t"]})

    def value(report: dict, node_id: str) -> float:
        return (report["values"].get(node_id) or {}).get("out", -1.0)

    editor.read_until("report", lambda m: value(m, "frame") >= 3)
    editor.channel.send({"type": "pause", "paused": True})
    editor.read_until("report", lambda m: m["paused"])
    frame, clock = engine.frame, engine.clock()
    for _ in range(5):
        engine.step()  # paused: no frame
    assert engine.frame == frame
    editor.channel.send({"type": "step", "seconds": 0.5})
    stepped = editor.read_until("report", lambda m: m["frame"] == frame + 1)
    assert value(stepped, "frame") == frame  # the frame index nodes see counts from 0
    assert value(stepped, "t") == pytest.approx(clock + 0.5)
    assert engine.paused and engine.clock() == pytest.approx(clock + 0.5)
    editor.channel.send({"type": "reset_time"})
    reset = editor.read_until("report", lambda m: m["frame"] == frame + 2)
    assert value(reset, "frame") == 0.0 and value(reset, "t") == 0.0  # time 0 shows, paused
    editor.channel.send({"type": "step", "seconds": float("nan")})
    error = editor.read_until("error")
    assert "seconds must be within -1 and 1" in error["message"]
    editor.channel.send({"type": "pause", "paused": False})
    playing = editor.read_until("report", lambda m: value(m, "frame") >= 2)
    assert value(playing, "frame") == playing["frame"] - frame - 2  # counting from the reset
    engine.close()


def test_nudge_and_resync_reach_every_beat_the_engine_plays() -> None:
    patch = Patch()
    patch.add_node("time.beat", None, node_id="beat")
    engine = Engine(Patch())
    editor = EditorEnd(engine, patch)
    editor.channel.send({"type": "watch", "nodes": ["beat"]})
    editor.channel.send({"type": "pause", "paused": True})
    editor.read_until("report", lambda m: m["paused"])

    def beats(report: dict) -> float:
        outputs = report["values"]["beat"]
        return outputs["beat"] + outputs["phase"]

    editor.channel.send({"type": "step", "seconds": 0.1})
    before = editor.read_until("report", lambda m: "beat" in m["values"])
    frame = before["frame"]
    editor.channel.send({"type": "nudge", "beats": 0.25})
    editor.channel.send({"type": "step", "seconds": 0.1})
    nudged = editor.read_until("report", lambda m: m["frame"] == frame + 1)
    assert beats(nudged) == pytest.approx(beats(before) + 0.2 + 0.25)  # 0.1 s at 120 BPM
    editor.channel.send({"type": "resync"})
    editor.channel.send({"type": "step", "seconds": 0.1})
    resynced = editor.read_until("report", lambda m: m["frame"] == frame + 2)
    assert resynced["values"]["beat"] == {"phase": 0.0, "beat": 4, "bar": 1, "pulse": True}
    editor.channel.send({"type": "nudge", "beats": 2.0})
    error = editor.read_until("error")
    assert "a nudge must be within -0.5 and 0.5 beats" in error["message"]
    engine.close()
