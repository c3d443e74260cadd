"""The editor session without Qt: document state and title, saving (errors in one line), recent
files, debounced autosave on a worker thread, one recovery file per editor with a lock, restoring
only the work of editors that are gone, clipboard fragments and the patch clock.

Nothing here imports PySide6; autosave timing runs on a hand-moved clock, and waits for the
worker are bounded by the futures themselves."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from app.session.session import MESSAGE_CHARS, EditorSession, PatchClock, one_line
from nodes import Patch, PatchFileError, UnsavableValueError, load_patch, patch_to_dict
from tests.app.editor_process import CRASH, KEEP_RUNNING, run_editor
from tests.waiting import TIMEOUT_S

ROOT = Path(__file__).resolve().parents[2]


class FakeClock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def small_patch() -> Patch:
    patch = Patch()
    patch.add_node("input.float", {"value": 0.5}, (0, 0), node_id="speed")
    patch.add_node("output.value", None, (300, 0), node_id="out")
    patch.connect("speed", "out", "out", "in")
    return patch


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


EMPTY = {"format": "patchbay", "version": 1, "nodes": [], "links": []}


@pytest.fixture
def session(tmp_path: Path, clock: FakeClock):
    made = EditorSession(tmp_path / "state", now=clock)
    made.set_document(small_patch(), None)
    yield made
    made.close()


def test_the_session_imports_and_works_without_qt(tmp_path: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["PySide6"] = None
        sys.modules["NodeGraphQt"] = None
        sys.modules["shiboken6"] = None
        from app.session.session import EditorSession
        from nodes import Patch
        session = EditorSession({str(tmp_path / "state")!r})
        session.patch.add_node("math.add")
        assert session.modified
        session.autosave().result(timeout=30)
        session.close()
        print("OK")
        """
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)  # fmt: skip
    assert result.returncode == 0 and result.stdout.strip() == "OK", result.stderr


def test_edits_make_the_document_modified_until_the_undo_stack_is_clean(session) -> None:
    assert not session.modified and session.title() == "untitled — patchbay"
    session.patch.set_value("speed", "value", 0.7)
    assert session.modified and session.title() == "untitled * — patchbay"
    session.set_clean(False)  # the undo stack follows
    session.set_clean(True)  # and is undone back to the saved state
    assert not session.modified


def test_save_sets_the_path_folder_and_clean_state(session, tmp_path: Path) -> None:
    session.patch.set_value("speed", "value", 0.7)
    target = tmp_path / "work" / "mine.patchbay"
    target.parent.mkdir()
    assert session.save(target) is None
    assert session.path == target and not session.modified
    assert session.patch.folder == target.absolute().parent
    assert session.title() == "mine.patchbay — patchbay"
    assert patch_to_dict(load_patch(target)) == patch_to_dict(session.patch)


def test_a_value_the_file_format_refuses_is_one_line_and_loses_nothing(session, tmp_path):
    """Refused when it is set (the document takes no value a file could not hold), in one line
    naming the pin: the document and the last good file stay as they were."""
    target = tmp_path / "kept.patchbay"
    assert session.save(target) is None
    before = target.read_bytes()
    with pytest.raises(UnsavableValueError) as refused:
        session.patch.add_node("value.array", {"value": np.array([1 + 2j, 3j])}, node_id="z")
    message = str(refused.value)
    assert "\n" not in message and len(message) <= 300
    assert message.startswith("z.value: arrays of complex128 cannot be saved")
    assert "z" not in session.patch.nodes and not session.modified
    assert session.save(target) is None
    assert target.read_bytes() == before


def test_a_folder_that_cannot_be_written_is_one_line(session, tmp_path: Path) -> None:
    blocked = tmp_path / "blocker"
    blocked.write_text("a file, not a folder")
    message = session.save(blocked / "x.patchbay")
    assert message is not None and "\n" not in message and "cannot save" in message


def test_recent_files_newest_first_without_repeats(session, tmp_path: Path) -> None:
    for name in ("a", "b", "a"):
        session.remember_recent(tmp_path / f"{name}.patchbay")
    assert session.recent_files() == [
        str((tmp_path / "a.patchbay").resolve()),
        str((tmp_path / "b.patchbay").resolve()),
    ]


def test_autosave_waits_for_a_quiet_moment(session, clock: FakeClock) -> None:
    session.patch.set_value("speed", "value", 0.6)
    clock.t += session.autosave_delay_s / 2
    session.patch.set_value("speed", "value", 0.7)
    clock.t += session.autosave_delay_s / 2
    assert session.poll() == [] and not session.recovery_file.exists()  # edited since
    clock.t += session.autosave_delay_s / 2
    assert session.poll() == []
    assert session.wait_for_autosave(TIMEOUT_S) == []
    assert load_patch(session.recovery_file).value("speed", "value") == 0.7
    clock.t += 60
    stamp = session.recovery_file.stat().st_mtime_ns
    session.poll()  # nothing new: nothing written
    session.wait_for_autosave(TIMEOUT_S)
    assert session.recovery_file.stat().st_mtime_ns == stamp


def test_edits_that_keep_coming_are_autosaved_at_the_limit(session, clock: FakeClock) -> None:
    step = session.autosave_delay_s / 3
    value = 0.0
    while not session.recovery_file.exists():
        value += 0.01
        session.patch.set_value("speed", "value", value)
        clock.t += step
        session.poll()
        session.wait_for_autosave(TIMEOUT_S)
        assert clock.t < 1000.0 + session.autosave_limit_s + step, "never autosaved"
    assert load_patch(session.recovery_file).value("speed", "value") == pytest.approx(value)


def test_autosave_writes_a_copy_while_editing_goes_on(session) -> None:
    big = np.arange(2_000_000, dtype=np.float64)
    session.patch.add_node("value.array", {"value": big}, node_id="big")
    session.autosave()
    session.patch.remove_node("big")  # while the worker writes
    assert session.wait_for_autosave(TIMEOUT_S) == []
    assert np.array_equal(load_patch(session.recovery_file).value("big", "value"), big)


def test_autosave_failures_are_one_line_and_retried_later(session, clock: FakeClock) -> None:
    session.recovery_file.mkdir(parents=True)  # in the way: the recovery cannot be written
    session.patch.set_value("speed", "value", 0.3)
    clock.t += session.autosave_delay_s
    session.poll()
    messages = session.wait_for_autosave(TIMEOUT_S)
    assert len(messages) == 1 and messages[0].startswith("Autosave failed:")
    assert "\n" not in messages[0]
    session.recovery_file.rmdir()
    session.patch.set_value("speed", "value", 0.4)
    clock.t += session.autosave_delay_s
    session.poll()
    assert session.wait_for_autosave(TIMEOUT_S) == []
    assert load_patch(session.recovery_file).value("speed", "value") == 0.4


def test_saving_or_undoing_to_clean_removes_the_recovery(session, tmp_path: Path) -> None:
    session.patch.set_value("speed", "value", 0.9)
    session.autosave()
    session.wait_for_autosave(TIMEOUT_S)
    assert session.recovery_file.exists()
    session.set_clean(False)
    session.set_clean(True)
    assert not session.recovery_file.exists()
    session.patch.set_value("speed", "value", 0.8)
    session.autosave()
    session.wait_for_autosave(TIMEOUT_S)
    assert session.save(tmp_path / "saved.patchbay") is None
    assert not session.recovery_file.exists()


def test_two_editors_keep_separate_recoveries_and_a_clean_close_removes_its_own(tmp_path):
    state = tmp_path / "state"
    first, second = EditorSession(state), EditorSession(state)
    for session, value in ((first, 0.1), (second, 0.2)):
        session.set_document(small_patch(), None)
        session.patch.set_value("speed", "value", value)
        session.autosave()
        session.wait_for_autosave(TIMEOUT_S)
    assert first.recovery_file != second.recovery_file
    assert first.orphaned_recoveries() == [] and second.orphaned_recoveries() == []  # running
    first.close()
    assert not first.recovery_file.exists()
    assert load_patch(second.recovery_file).value("speed", "value") == 0.2
    second.close()


def test_only_recoveries_of_editors_that_are_gone_are_offered(tmp_path: Path, clock) -> None:
    state = tmp_path / "state"
    original = tmp_path / "show.patchbay"
    crashed = run_editor(state, 0.8, CRASH, str(original))
    assert crashed.wait(TIMEOUT_S) == 1
    running = run_editor(state, 0.6, KEEP_RUNNING)
    try:
        session = EditorSession(state, now=clock)
        offered = session.orphaned_recoveries()
        assert [recovery.original for recovery in offered] == [original]
        assert offered[0].describe().startswith("show.patchbay, autosaved ")
        patch = session.restore(offered[0])
        assert patch.value("speed", "value") == 0.4
        assert patch.folder == tmp_path  # relative files resolve next to the original
        session.set_document(patch, offered[0].original, unsaved=True)
        assert session.modified and session.title() == "show.patchbay * — patchbay"
        session.poll()  # restored work is autosaved at once, then the orphan goes
        session.wait_for_autosave(TIMEOUT_S)
        assert not offered[0].patch_file.exists()
        assert load_patch(session.recovery_file).value("speed", "value") == 0.4
        # A later editor is offered nothing: the running editor's work is not an orphan.
        later = EditorSession(state)
        assert later.orphaned_recoveries() == []
        later.close()
        session.close()
        assert len(list((state / "recovery").glob("*.patchbay"))) == 1  # the running one's
    finally:
        running.communicate("stop\n", timeout=TIMEOUT_S)


def test_declining_removes_only_the_orphans_offered(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert run_editor(state, 0.8, CRASH).wait(TIMEOUT_S) == 1
    running = run_editor(state, 0.6, KEEP_RUNNING)
    try:
        session = EditorSession(state)
        offered = session.orphaned_recoveries()
        assert len(offered) == 1
        session.discard(offered)
        assert not offered[0].patch_file.exists()
        files = list((state / "recovery").glob("*.patchbay"))
        assert len(files) == 1 and load_patch(files[0]).value("speed", "value") == 0.3
        session.close()
    finally:
        running.communicate("stop\n", timeout=TIMEOUT_S)


def test_an_orphan_offered_to_one_editor_is_not_offered_to_another(tmp_path: Path) -> None:
    state = tmp_path / "state"
    assert run_editor(state, 0.8, CRASH).wait(TIMEOUT_S) == 1
    first, second = EditorSession(state), EditorSession(state)
    offered = first.orphaned_recoveries()
    assert len(offered) == 1 and second.orphaned_recoveries() == []
    first.release(offered)  # not chosen now: left for a later start
    assert len(second.orphaned_recoveries()) == 1
    first.close()
    second.close()


def test_copy_and_paste_fragments(session) -> None:
    text = session.copy(["speed", "out"])
    assert '"format": "patchbay"' in text
    piece = session.to_paste(text)
    assert piece is not None and set(piece.nodes) == {"speed", "out"}
    nodes, links = session.placed_copy(piece)
    new_ids = {node[0] for node in nodes}
    assert not new_ids & set(session.patch.nodes)
    assert {node[3] for node in nodes} == {(40.0, 40.0), (340.0, 40.0)}
    assert [(link.src_pin, link.dst_pin) for link in links] == [("out", "in")]
    assert {link.src for link in links} | {link.dst for link in links} == new_ids


def test_a_copy_with_large_arrays_stays_in_the_session(session) -> None:
    session.patch.add_node("value.array", {"value": np.arange(20_000.0)}, node_id="big")
    assert session.copy(["big"]) == ""
    piece = session.to_paste("")  # the system clipboard holds nothing patchbay can read
    assert piece is not None and list(piece.nodes) == ["big"]
    assert session.to_paste(session.copy(["speed"])) is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[" * 100_000 + "]" * 100_000, None),  # not an object: not a patch
        ('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
        ("{" + '"a": {' * 100_000 + "}" * 100_001, "nested too deeply"),
        (json.dumps({**EMPTY, "nodes": [{"id": "r", "type": "array.range",
                                         "values": {"count": 10**150}}]}),
         r"clipboard: nodes\[0\]\.values\.count: an integer of 151 digits: .*int_digits"),
        ('{"format": "patchbay", "version": 1, "nodes": [], "links": [], "x": 1' + "0" * 5000
         + "}", "int_digits"),
        (json.dumps({**EMPTY, "nodes": [{"id": "a", "type": "value.any",
                                         "values": {"value": "x" * (2 * 1024 * 1024)}}]}),
         "string_chars"),
        (json.dumps({**EMPTY, "nodes": [{"id": "a", "type": "value.any",
                                         "values": {"value": [0] * (9 * 1024 * 1024)}}]}),
         "file_bytes"),
    ],
    ids=["deep_list", "deep_in_object", "deep_objects", "digits", "digits_5000", "string",
         "file_bytes"],
)  # fmt: skip
def test_clipboard_text_is_read_with_the_checks_of_a_file(
    session, text: str, expected: str | None
) -> None:
    session.copy(["speed"])  # a copy of the session's own, which a refused text must not paste
    if expected is None:
        assert list(session.to_paste(text).nodes) == ["speed"]
        return
    with pytest.raises(PatchFileError, match=expected) as caught:
        session.to_paste(text)
    assert "\n" not in str(caught.value) and len(str(caught.value)) <= MESSAGE_CHARS


def test_plain_text_on_the_clipboard_pastes_the_session_copy(session) -> None:
    session.copy(["speed"])
    assert list(session.to_paste("some words").nodes) == ["speed"]


def test_patch_clock_stops_while_paused() -> None:
    now = FakeClock()
    clock = PatchClock(now)
    now.t += 2.0
    assert clock.seconds() == 2.0
    assert clock.toggle() and clock.paused
    now.t += 5.0
    assert clock.seconds() == 2.0
    assert not clock.toggle()
    now.t += 1.0
    assert clock.seconds() == 3.0


def test_one_line_escapes_and_shortens() -> None:
    assert one_line("a\nb\x1b[31m") == "a\\nb\\x1b[31m"
    assert len(one_line("x" * 10_000)) == 300


def test_the_autosave_benchmark_runs_both_ways() -> None:
    from app.bench.autosave import autosave_bench

    report = autosave_bench(repeats=1, megabytes=1)
    assert report["array_mb"] == 1 and report["repeats"] == 1
    assert report["gui_thread_save_gap_ms"] > 0 and report["worker_autosave_written_ms"] > 0
    assert isinstance(report["under_one_frame"], bool)


def test_a_write_begun_before_a_restore_does_not_remove_the_restored_work(
    tmp_path: Path, clock
) -> None:
    """An editor that attached to an engine autosaves what plays at once; the person then
    restores a killed editor's work: that first write, collected later, holds the document the
    restore replaced, so the killed editor's file stays until a write of the restored work."""
    state = tmp_path / "state"
    assert run_editor(state, 0.8, CRASH).wait(TIMEOUT_S) == 1
    session = EditorSession(state, now=clock)
    session.set_document(small_patch(), None, unsaved=True)  # what the engine plays
    assert session.autosave() is not None
    [offered] = session.orphaned_recoveries()
    session.set_document(session.restore(offered), None, unsaved=True)
    assert session.wait_for_autosave(TIMEOUT_S) == []  # the write of what played
    assert offered.patch_file.exists()
    session.poll()
    assert session.wait_for_autosave(TIMEOUT_S) == []  # the write of the restored work
    assert not offered.patch_file.exists()
    assert load_patch(session.recovery_file).value("speed", "value") == 0.4
    session.close()
