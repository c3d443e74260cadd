"""Flat programs built from the previous one (evaluators/flat/incremental.py) against full builds:
over random patches and random edit sequences, the same nodes, order validity, classes, keys,
step lists (slots described by what they hold) and the same outputs every frame; and what an edit
keeps (steps, generated code)."""

from __future__ import annotations

import time
from operator import itemgetter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evaluators.flat.incremental as incremental_module
from app.bench.patches import hot_chain
from evaluators import DualEvaluator, LazyEvaluator
from evaluators.flat.incremental import EditJournal
from evaluators.flat.program import FlatEvaluator, FlatProgram
from nodes import EditOp, Link, Patch, PatchEvent
from tests.patch_strategies import random_edit, random_patch, same


def slot_names(program: FlatProgram) -> dict[int, tuple[Any, ...]]:
    """What every slot holds, in words that do not depend on slot numbers."""
    ids = program.ir.ids
    names: dict[int, tuple[Any, ...]] = {}
    for (i, pin), slot in program.value_slot.items():
        names[slot] = ("value", ids[i], pin)
    for (i, pin), slot in program.feedback_slot.items():
        names[slot] = ("feedback", ids[i], pin)
    for i, slots in program.node_slots.items():
        if i in program.aliases:
            continue
        for k, slot in enumerate(slots):
            names[slot] = ("out", ids[i], k)
    for slot in program.pull_slots:
        pull = program.slots[slot]
        assert pull.program is program
        names[slot] = ("pull", ids[pull.source], names[pull.slot])
    return names


def described(program: FlatProgram, steps: list[Any]) -> list[tuple[Any, ...]]:
    names = slot_names(program)
    everything = list(range(len(program.slots)))
    found = []
    for call, get, out in steps:
        function = getattr(call, "func", call)
        kind = repr(call) if isinstance(call, itemgetter) else getattr(function, "__qualname__", "")
        found.append((kind, tuple(names[s] for s in get(everything)), names[out]))
    return found


def shape(program: FlatProgram) -> dict[str, Any]:
    """Everything a program computes with, by node id."""
    ids = program.ir.ids
    return {
        "classes": {node_id: program.classes[i] for node_id, i in program.ir.index.items()},
        "keys": {node_id: program.keys[i] for node_id, i in program.ir.index.items()},
        "main": {ids[i] for i in program.main},
        "aliases": {ids[i] for i in program.aliases},
        "hot": described(program, program.hot_steps),
        "all": described(program, program.all_steps),
        "guarded": {ids[s]: [ids[i] for i in region] for s, region in program.guarded.items()},
        "feedback": [(ids[e[0]], ids[e[1]]) for e in program.feedback],
    }


def sinks(evaluator: Any, patch: Patch) -> dict[str, Any]:
    return {n.id: evaluator.output(n.id) for n in patch.nodes.values() if n.spec.sink}


def play(data: st.DataObject, subpatches: bool) -> None:
    patch = random_patch(data, subpatches)
    full = FlatEvaluator(patch, incremental=False)
    incremental = FlatEvaluator(patch)
    dual = DualEvaluator(patch, debounce=0.0, background=False)
    try:
        for frame in range(data.draw(st.integers(1, 12))):
            for evaluator in (full, incremental, dual):
                evaluator.run_frame(frame / 60.0, frame)
            assert full.program is not None and incremental.program is not None
            # The dual derives on the thread that edits, from the journal of the edits (it
            # starts lazy: no program before its first build).
            derived_programs = [incremental.program, dual.program]
            for derived in filter(None, derived_programs):
                assert derived.derive_error is None, derived.derive_error
                derived.validate()
                # Step lists follow the order, which may differ between two valid orders:
                # compare them as multisets, and the topological order is checked by validate().
                a, b = shape(full.program), shape(derived)
                for name in ("hot", "all"):
                    assert sorted(map(repr, a.pop(name))) == sorted(map(repr, b.pop(name)))
                a["guarded"] = {k: sorted(v) for k, v in a["guarded"].items()}
                b["guarded"] = {k: sorted(v) for k, v in b["guarded"].items()}
                assert a == b
            expected = sinks(full, patch)
            for evaluator in (incremental, dual):
                got = sinks(evaluator, patch)
                assert all(same(expected[k], got[k]) for k in expected), (expected, got)
            if data.draw(st.booleans()):
                random_edit(data, patch, subpatches)
    finally:
        for evaluator in (full, incremental, dual):
            evaluator.close()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_incremental_builds_equal_full_builds(data: st.DataObject) -> None:
    play(data, subpatches=False)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_incremental_builds_equal_full_builds_with_subpatches(data: st.DataObject) -> None:
    play(data, subpatches=True)


def test_an_edit_keeps_the_steps_of_untouched_nodes() -> None:
    patch = hot_chain(300)
    evaluator = FlatEvaluator(patch)
    evaluator.run_frame(0.0, 0)
    before = evaluator.program
    assert before is not None
    kept = {before.ir.ids[i]: steps for i, steps in before.node_steps.items()}
    last = next(link for link in patch.links if link.dst == "sink")
    patch.disconnect(*last)
    patch.add_node("math.add", {"b": 1.0}, node_id="edit")
    patch.connect(last.src, "out", "edit", "a")
    patch.connect("edit", "out", "sink", "in")
    evaluator.run_frame(1 / 60, 1)
    after = evaluator.program
    assert after is not None and after is not before and after.derived
    same_steps = [
        node_id
        for i, steps in after.node_steps.items()
        if (node_id := after.ir.ids[i]) in kept and steps is kept[node_id]
    ]
    # Everything but the sink (its input link changed) and the new node keeps its steps.
    assert len(same_steps) == len(after.node_steps) - 2
    assert "sink" not in same_steps and "edit" not in same_steps
    code = after.hot_code
    assert code is not None and code.ready and 0 < code.reused < len(code.chunks)
    evaluator.close()


def chain_edits(patch: Patch) -> list[Any]:
    """Edits a person makes on a chain: each a function of the patch, run in turn."""

    def insert() -> None:
        link = next(link for link in patch.links if link.dst == "c40")
        patch.disconnect(*link)
        patch.add_node("math.mul", {"b": 2.0}, node_id="inserted")
        patch.connect(link.src, link.src_pin, "inserted", "a")
        patch.connect("inserted", "out", "c40", link.dst_pin)

    def lonely() -> None:
        patch.add_node("math.add", {"b": 1.0}, node_id="early")  # no inputs: ordered first
        patch.add_node("output.value", node_id="early sink")
        patch.connect("early", "out", "early sink", "in")

    def back_link() -> None:
        patch.connect("c280", "out", "early", "a")  # against the order: mended, not re-sorted

    def branch() -> None:
        patch.add_node("math.sin", node_id="side")
        patch.add_node("output.value", node_id="side sink")
        patch.connect("c120", "out", "side", "x")
        patch.connect("side", "out", "side sink", "in")

    def remove() -> None:
        patch.remove_node("c200")  # the chain breaks: what fed only it leaves the program

    def reconnect() -> None:
        patch.connect("c199", "out", "c201", "a")

    def value() -> None:
        patch.set_value("c4", "b", 3.0)

    def retype_time() -> None:
        patch.add_node("input.float", {"value": 0.25}, node_id="knob")
        patch.disconnect(*next(link for link in patch.links if link.dst == "c0"))
        patch.connect("knob", "out", "c0", "a")  # the whole chain becomes USER, then cached

    return [insert, lonely, back_link, branch, remove, reconnect, value, retype_time]


def test_typical_edits_are_built_from_the_previous_program_and_equal_full_builds() -> None:
    """Each edit gives a derived program (not a full build) that validates, has the shape of a
    full build of the same patch, and computes the same sinks, frame after frame."""
    patch = hot_chain(300)
    incremental = FlatEvaluator(patch)
    full = FlatEvaluator(patch, incremental=False)
    try:
        frame = 0
        for edit in [lambda: None, *chain_edits(patch)]:
            edit()
            for _ in range(2):
                incremental.run_frame(frame / 60.0, frame)
                full.run_frame(frame / 60.0, frame)
                frame += 1
            program, reference = incremental.program, full.program
            assert program is not None and reference is not None
            assert program.derived or frame == 2
            program.validate()
            a, b = shape(reference), shape(program)
            for name in ("hot", "all"):
                assert sorted(map(repr, a.pop(name))) == sorted(map(repr, b.pop(name)))
            assert a == b
            assert sinks(incremental, patch) == sinks(full, patch)
        assert program.holes > 0  # slots of the removed and recompiled nodes
    finally:
        incremental.close()
        full.close()


def test_the_dual_finds_what_an_edit_changed_from_its_journal_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Deriving on the thread that edits compares only the nodes and links the edits named (a
    value edit made just before the structural one is taken in as any value edit), never the
    whole patch; each
    program has the shape of a full build. An edit the journal cannot place (a definition's, on a
    plain patch) makes it give up, and every node is compared again."""
    patch = hot_chain(300)
    dual = DualEvaluator(patch, debounce=0.0, background=False)
    full = FlatEvaluator(patch, incremental=False)
    scans: list[int] = []
    scanned_change = incremental_module._scanned_change
    monkeypatch.setattr(
        incremental_module,
        "_scanned_change",
        lambda *args: scans.append(1) or scanned_change(*args),
    )
    try:
        dual.run_frame(0.0, 0)
        dual.build_now()
        assert dual.mode == "flat"
        frame = 1
        for edit in chain_edits(patch):
            patch.set_value("c10", "b", float(frame))  # before the structural edit, not run yet
            edit()
            swaps = dual.derived_swaps
            for _ in range(2):
                dual.run_frame(frame / 60.0, frame)
                full.run_frame(frame / 60.0, frame)
                frame += 1
            program, reference = dual.program, full.program
            assert program is not None and reference is not None
            assert dual.derived_swaps == swaps + (edit.__name__ != "value")
            program.validate()
            a, b = shape(reference), shape(program)
            for name in ("hot", "all"):
                assert sorted(map(repr, a.pop(name))) == sorted(map(repr, b.pop(name)))
            assert a == b
            assert sinks(dual, patch) == sinks(full, patch)
        assert scans == []
    finally:
        dual.close()
        full.close()
    journal = EditJournal()
    journal.note(
        PatchEvent("structural", EditOp.CONNECT, "b", "a", link=Link("a", "out", "b", "a"))
    )
    journal.note(
        PatchEvent("structural", EditOp.DISCONNECT, "b", "a", link=Link("a", "out", "b", "a"))
    )
    assert journal.complete and journal.links_made == journal.links_gone == set()
    journal.note(PatchEvent("value", EditOp.BINDING, value="binding1"))  # names no node
    assert journal.complete
    journal.note(PatchEvent("structural", EditOp.ADD_DEFINITION, value="blob"))
    assert not journal.complete


def test_holes_past_the_live_slots_make_a_full_build() -> None:
    """Slots left by dropped and recompiled nodes are counted; once they outweigh the live ones,
    the next build starts from scratch, and holes are back to none."""
    patch = hot_chain(40)
    evaluator = FlatEvaluator(patch)
    try:
        fulls = 0
        for k in range(200):
            patch.set_value("gain", "value", float(k))
            patch.add_node("value.float", node_id=f"v{k}")  # a structural edit each time
            evaluator.run_frame(k / 60.0, k)
            program = evaluator.program
            assert program is not None
            program.validate()
            assert program.holes * 2 <= len(program.slots) + 8
            fulls += not program.derived
        assert fulls >= 2  # the first build, and at least one forced by holes
    finally:
        evaluator.close()


def test_a_dual_edit_frame_runs_flat_and_the_changed_code_follows() -> None:
    """On the dual evaluator, the frame after the edit runs the derived program; the chunks of
    HOT code the edit changed are generated on the builder thread while frames run (the rest
    came from the previous program), and the outputs are the lazy evaluator's throughout."""
    patch = hot_chain(600)
    dual = DualEvaluator(patch, debounce=0.0)
    lazy = LazyEvaluator(patch)
    try:
        frame = 0
        dual.run_frame(0.0, 0)
        assert dual.wait_for_flat(30)
        deadline = time.monotonic() + 30
        while not (dual.program.hot_code and dual.program.hot_code.ready):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        chain_edits(patch)[0]()
        while True:
            frame += 1
            dual.run_frame(frame / 60.0, frame)
            lazy.run_frame(frame / 60.0, frame)
            assert dual.mode == "flat" and dual.derived_swaps == 1
            assert same(dual.output("sink"), lazy.output("sink"))
            code = dual.program.hot_code
            assert code is not None and code.reused > 0
            if code.ready:
                break
            assert time.monotonic() < deadline, "the changed chunks were never generated"
            time.sleep(0.005)
    finally:
        dual.close()
        lazy.close()


def test_a_new_node_that_feeds_itself_back_is_derived() -> None:
    """A frame delay added with its output fed back into its own input: its output slot is
    made once, and the second visit (as its own feedback consumer) only compiles it again."""
    patch = hot_chain(60)
    incremental = FlatEvaluator(patch)
    full = FlatEvaluator(patch, incremental=False)
    try:
        for frame in range(6):
            if frame == 2:
                patch.add_node("util.frame_delay", {"init": 1.0}, node_id="loop")
                patch.connect("loop", "out", "loop", "in")
                patch.add_node("output.value", node_id="loop sink")
                patch.connect("loop", "out", "loop sink", "in")
            incremental.run_frame(frame / 60.0, frame)
            full.run_frame(frame / 60.0, frame)
            program = incremental.program
            assert program is not None and program.derive_error is None
            assert program.derived == (frame >= 2) or frame == 0
            program.validate()
            assert sinks(incremental, patch) == sinks(full, patch)
    finally:
        incremental.close()
        full.close()
