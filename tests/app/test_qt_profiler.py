"""The editor's Profiler dock: the costliest nodes first (a node sleeping 20 ms a frame), sorting by
a column, cumulative time of a subpatch instance, "Why did this run?" for the selected node,
double-click to select on the canvas, and the heat tint on and off; with the editor's own
evaluator and with an engine (an in-process Engine answering the editor's `profile` messages).
The last test writes tests/artifacts/profiler.png."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from app.engine.client import RemoteEvaluator
from app.engine.engine import Engine
from app.engine.protocol.messages import (
    PROTOCOL_VERSION,
    TO_ENGINE,
    EngineHello,
    Error,
    Message,
    ProfileRequest,
    Report,
    decode,
    encode,
)
from app.engine.reports.profile_costs import PROFILE_BUSY_SHARE, ProfileAnswers, profile_reply
from app.qt.canvas.canvas import CLASS_COLORS
from app.qt.panels.profiler import (
    CUMULATIVE_MS,
    GPU_MS,
    GPU_NOT_AVAILABLE,
    NODE,
    REASON,
    RUNS,
    SELF_MS,
    heat_color,
    rows_of,
)
from app.qt.window import DECORATE_EVERY, QtEditorWindow
from evaluators import DualEvaluator, ExecutionContext, NodeClass
from nodes import Patch, patch_from_dict, patch_to_dict
from tests.app.conftest import ScriptedDialogs, run_frames, run_until, show_patch, stop_loop

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
SLEEP_S = 0.02


def busy_patch() -> Patch:
    """t -> slow (sleeps 20 ms a frame) -> m -> sink, a CONST k into m, and t -> amp1 (an
    instance of `amp`: y = x * 3) -> o1."""
    body = Patch()
    body.add_node("subpatch.inlet", {"name": "x"}, (0, 0), node_id="in1")
    body.add_node("math.mul", {"b": 3.0}, (250, 0), node_id="mul")
    body.add_node("subpatch.outlet", {"name": "y"}, (500, 0), node_id="out1")
    body.connect("in1", "out", "mul", "a")
    body.connect("mul", "out", "out1", "in")
    patch = Patch()
    patch.add_definition("amp", body)
    patch.add_node("time.seconds", None, (0, 0), node_id="t")
    patch.add_node("debug.sleep", {"seconds": SLEEP_S}, (250, 0), node_id="slow")
    patch.add_node("value.float", {"value": 3.0}, (250, 200), node_id="k")
    patch.add_node("math.add", None, (500, 0), node_id="m")
    patch.add_node("output.value", None, (750, 0), node_id="sink")
    patch.add_node("subpatch", {"definition": "amp"}, (250, 400), node_id="amp1")
    patch.add_node("output.value", None, (500, 400), node_id="o1")
    patch.connect("t", "out", "slow", "x")
    patch.connect("slow", "out", "m", "a")
    patch.connect("k", "out", "m", "b")
    patch.connect("m", "out", "sink", "in")
    patch.connect("t", "out", "amp1", "x")
    patch.connect("amp1", "y", "o1", "in")
    return patch


def test_profile_reply_ranks_nodes_and_sums_instances() -> None:
    evaluator = DualEvaluator(busy_patch(), ExecutionContext(None))
    for frame in range(8):
        evaluator.run_frame(frame / 60.0, frame)
    reply = profile_reply(evaluator, "m", 100)
    costs = {row[0]: row for row in reply["costs"]}
    assert reply["costs"][0][:2] == ["slow", 8]
    assert costs["slow"][2] >= SLEEP_S * 1000 * 0.9  # self ms per frame
    assert costs["slow"][4] == "non-deterministic"
    assert costs["k"][1] == 1 and costs["k"][4] == "cache hit"
    inside = sum(row[2] for path, row in costs.items() if path.startswith("amp1/"))
    assert inside > 0
    assert reply["instances"] == [["amp1", pytest.approx(inside + costs["amp1"][2], abs=1e-3)]]
    assert any(line.startswith("HOT because") for line in reply["explain"]["lines"])
    instance_lines = profile_reply(evaluator, "amp1", 100)["explain"]["lines"]
    assert instance_lines[0].startswith("subpatch instance: its nodes take")
    assert instance_lines[1].startswith("costliest inside: amp1/")
    assert profile_reply(evaluator, "ghost", 3)["explain"]["lines"] == [
        "ghost is not in the running patch"
    ]
    assert len(profile_reply(evaluator, None, 3)["costs"]) == 3
    assert "explain" not in profile_reply(evaluator, None, 3)


def test_gpu_column_of_a_reply() -> None:
    costs = [["blur", 10, 0.5, 0.5, "HOT"], ["lfo", 10, 0.01, 0.01, "HOT"]]
    timed = rows_of({"costs": costs, "gpu_ms": {"blur": 4.25}, "gpu_status": ""}, str)
    assert [row.cell(GPU_MS) for row in timed] == ["4.250", ""]  # lfo does not draw
    assert [row.sort_key(GPU_MS) for row in timed] == [4.25, -1.0]
    untimed = {"costs": costs, "gpu_ms": {}, "gpu_status": "no GL timer queries (OpenGL 3.2)"}
    assert [row.cell(GPU_MS) for row in rows_of(untimed, str)] == ["n/a", "n/a"]
    malformed = {"costs": costs, "gpu_ms": {"blur": "fast"}, "gpu_status": 3}
    assert [row.cell(GPU_MS) for row in rows_of(malformed, str)] == ["n/a", "n/a"]


def test_costs_are_worked_out_again_only_when_they_took_a_small_share_of_the_time() -> None:
    evaluator = DualEvaluator(busy_patch(), ExecutionContext(None))
    clock = iter(float(t) for t in range(100))  # each reading one second later
    answers = ProfileAnswers(clock=lambda: next(clock))
    evaluator.run_frame(0.0, 0)
    first = answers.reply(evaluator, "m", 10)  # took "1 s": kept for 1 / PROFILE_BUSY_SHARE s
    for frame in range(1, 4):
        evaluator.run_frame(frame / 60.0, frame)
    second = answers.reply(evaluator, "k", 10)
    assert second["costs"] == first["costs"] and second["frames"] == 1
    assert second["explain"]["node"] == "k" and second["explain"]["lines"][0].startswith("CONST")
    assert answers.reply(evaluator, None, 5)["frames"] == 4  # another row count: anew
    other = DualEvaluator(busy_patch(), ExecutionContext(None))
    assert answers.reply(other, None, 5)["frames"] == 0  # another evaluator: anew
    other.run_frame(0.0, 0)  # its costs, worked out at "t" taking 1 s, are due at t + 20 s:
    for _ in range(round(1 / PROFILE_BUSY_SHARE) - 2):  # read at t + 2 ... t + 19
        assert answers.reply(other, None, 5)["frames"] == 0
    assert answers.reply(other, None, 5)["frames"] == 1  # due again


def profiled(editor: QtEditorWindow) -> None:
    """Ask for a `profile` reply now (as the panel's timer does, and a selection) and show it:
    the engine answers in the next turn of the window's loop."""
    editor.profiling.profiler_panel.refresh()
    run_frames(editor)


def open_profiler(editor: QtEditorWindow, qtbot: Any) -> Any:
    editor.resize(editor.width(), max(editor.height(), 900))  # room for the dock's 320 px
    editor.docks["Profiler"].raise_()
    editor.resizeDocks([editor.docks["Profiler"]], [320], Qt.Orientation.Vertical)
    panel = editor.profiling.profiler_panel
    # Laid out and painted, with rows to see (a table squeezed to its header shows none).
    qtbot.waitUntil(lambda: panel.shown and panel.table.viewport().height() > 100)
    run_frames(editor, 4)  # frames enough that what ran each frame and what ran once differ
    profiled(editor)
    assert panel.shown_paths()[:1] == ["slow"]
    return panel


def cells(panel: Any, column: int) -> list[Any]:
    proxy = panel.proxy
    return [proxy.index(r, column).data(Qt.ItemDataRole.UserRole) for r in range(proxy.rowCount())]


def test_the_profiler_dock_with_the_editors_own_evaluator(editor, qtbot):
    show_patch(editor, busy_patch())
    panel = open_profiler(editor, qtbot)
    table = panel.table
    assert cells(panel, SELF_MS) == sorted(cells(panel, SELF_MS), reverse=True)
    row = panel.shown_paths().index("slow")
    assert panel.proxy.index(row, 1).data() == "debug.sleep"
    assert panel.proxy.index(row, REASON).data() == "non-deterministic"
    # no GL context here: every GPU cell says n/a, the tooltip and the summary say why
    assert {panel.proxy.index(r, GPU_MS).data() for r in range(panel.proxy.rowCount())} == {
        GPU_NOT_AVAILABLE
    }
    tooltip = panel.proxy.index(row, GPU_MS).data(Qt.ItemDataRole.ToolTipRole)
    assert tooltip == "no GPU time: no GL context"
    assert panel.summary.text().endswith("; GPU n/a: no GL context")
    # the instance: its cumulative time is its nodes' self times
    assert "amp1" in panel.shown_paths()
    amp = panel.shown_paths().index("amp1")
    assert panel.proxy.index(amp, 1).data() == "subpatch amp"
    inside = sum(ms for path, ms in panel.self_ms.items() if path.startswith("amp1/"))
    # The instance's own node: no step at all in a flat program (a pass-through, sharing its
    # source's slot), which the engine runs from its first frame (it builds at load).
    own = panel.self_ms.get("amp1", 0.0)
    assert panel.cumulative_ms["amp1"] == pytest.approx(inside + own, abs=1e-3)
    assert panel.proxy.index(amp, CUMULATIVE_MS).data(Qt.ItemDataRole.UserRole) == pytest.approx(
        inside + own, abs=1e-3
    )
    # sorting by a column: names alphabetically, runs as numbers
    table.sortByColumn(NODE, Qt.SortOrder.AscendingOrder)
    assert panel.shown_paths() == sorted(panel.shown_paths(), key=str.lower)
    table.sortByColumn(RUNS, Qt.SortOrder.DescendingOrder)
    runs = cells(panel, RUNS)
    ran = [count for count in runs if count >= 0]  # the instance's own node runs no step
    assert runs == sorted(runs, reverse=True) and ran[-1] == 1
    assert panel.shown_paths()[len(ran) - 1] == "k"  # CONST: ran once
    table.sortByColumn(CUMULATIVE_MS, Qt.SortOrder.DescendingOrder)
    assert panel.shown_paths()[0] == "slow"
    # Why did this run? for the node selected on the canvas
    editor.canvas.select(["m"])
    profiled(editor)
    assert "HOT because" in panel.why.toPlainText()
    # the path from the cause, which does not name the node asked about as its own path
    assert "depends on debug.sleep, which runs every frame: slow -> this node" in (
        panel.why.toPlainText()
    )

    # a double-click on a row selects that node on the canvas
    def row_of_k_shown() -> bool:
        # Looked up anew each time: a reply that comes meanwhile fills the table again.
        k = panel.proxy.index(panel.shown_paths().index("k"), NODE)
        table.scrollTo(k)
        return table.viewport().rect().contains(table.visualRect(k).center())

    qtbot.waitUntil(row_of_k_shown)
    point = table.visualRect(panel.proxy.index(panel.shown_paths().index("k"), NODE)).center()
    # an item view takes a double-click on the row it was pressed on: press first
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=point)
    qtbot.mouseDClick(table.viewport(), Qt.MouseButton.LeftButton, pos=point)
    assert editor.canvas.selected_ids() == ["k"]
    profiled(editor)
    assert panel.why.toPlainText().startswith("CONST")
    why = panel.why.toPlainText().splitlines()
    assert why[1].endswith(": first run") and why[2].startswith("cached: inputs unchanged since")


def test_heat_tint_colours_nodes_by_cost_and_off_restores_them(editor, qtbot):
    show_patch(editor, busy_patch())
    canvas = editor.canvas
    hot_class = CLASS_COLORS[NodeClass.HOT]  # node colours follow the reports every few turns
    run_until(editor, lambda: canvas.body_color("slow") == hot_class, "slow HOT", DECORATE_EVERY)
    normal = {node_id: canvas.body_color(node_id) for node_id in ("slow", "k", "m")}
    editor.docks["Messages"].raise_()  # the tint refreshes with the panel hidden too
    editor.profiling.show_heat_tint(True)  # asks for a reply
    panel = editor.profiling.profiler_panel
    run_frames(editor)
    assert panel.cost_of("slow") > 1.0
    assert canvas.body_color("slow") == heat_color(panel.cost_of("slow"))
    hot, cold = canvas.body_color("slow"), canvas.body_color("k")
    assert hot != normal["slow"] and cold != normal["k"]
    assert hot[0] > 180 and hot[0] > hot[2]  # red
    assert cold[2] > cold[0]  # blue-grey
    editor.profiling.show_heat_tint(False)
    assert {node_id: canvas.body_color(node_id) for node_id in normal} == normal
    assert not editor.profiling.heat_action.isChecked()


class EngineBridge:
    """Stands in for `EngineClient`: `profile` messages go to an in-process Engine playing the
    same patch, whose answers come back through `poll` as the real client's do."""

    def __init__(self, patch: Patch) -> None:
        self.hello = EngineHello(schema=PROTOCOL_VERSION, pid=0, rev=0, vrev=0, gl=False)
        self.evaluator = RemoteEvaluator()
        self.engine = Engine(patch)
        for _ in range(6):
            self.engine.step()
        self.engine.editor = self  # type: ignore[assignment]  # its link: `post` below
        self.sent: list[dict[str, Any]] = []
        self.incoming: list[tuple[Message, list[bytes]]] = []

    def send(self, message: Message, blobs: list[bytes] | None = None) -> bool:
        self.sent.append(encode(message))  # as the channel carries it
        if isinstance(message, ProfileRequest):
            self.engine.step()
            self.engine._handle(self, message, [])  # type: ignore[arg-type]
        return True

    def post(self, message: Message, blobs: list[bytes] | None = None) -> None:
        self.incoming.append((message, blobs or []))

    def post_report(self, message: Report, blobs: list[bytes]) -> None:
        self.evaluator.update(message, blobs)

    def post_live(self, message: Message, blobs: list[bytes]) -> bool:
        self.post(message, blobs)
        return True

    def poll(self) -> list[tuple[Message, list[bytes]]]:
        delivered, self.incoming = self.incoming, []
        return delivered

    def close(self, **_options: Any) -> None:
        self.engine.evaluator.close()


@pytest.fixture
def bridge() -> EngineBridge:
    return EngineBridge(patch_from_dict(patch_to_dict(busy_patch())))


@pytest.fixture
def remote(qtbot: Any, tmp_path: Path, dialogs: ScriptedDialogs, bridge: EngineBridge) -> Iterator:
    window = QtEditorWindow(tmp_path / "state", engine=bridge)  # type: ignore[arg-type]
    dialogs.install(window)
    qtbot.addWidget(window)
    window.resize(1400, 850)
    window.show()
    qtbot.waitExposed(window)
    stop_loop(window)  # the test turns it (`profiled`)
    yield window
    dialogs.unsaved_answer = "discard"
    window.close()


def test_the_profiler_dock_with_an_engine(remote, bridge, qtbot):
    show_patch(remote, busy_patch())
    assert not [m for m in bridge.sent if m["type"] == "profile"]  # only asked while shown
    panel = open_profiler(remote, qtbot)
    asked = [m for m in bridge.sent if m["type"] == "profile"]
    assert asked[-1] == {"type": "profile", "node": None, "top": 200}
    assert panel.self_ms["slow"] >= SLEEP_S * 1000 * 0.9
    remote.canvas.select(["m"])
    profiled(remote)
    assert "HOT because" in panel.why.toPlainText()
    assert {"type": "profile", "node": "m", "top": 200} in bridge.sent
    remote.profiling.show_heat_tint(True)  # asks for a reply
    run_frames(remote)
    assert remote.canvas.body_color("slow") == heat_color(panel.cost_of("slow"))
    # a request the engine cannot read is one error line, not an exception
    for raw in ({"type": "profile", "top": "all"}, {"type": "profile", "node": 3},
                {"type": "profile", "node": "x" * 5000}):  # fmt: skip
        bridge.engine._handle(bridge, decode(raw, TO_ENGINE), [])  # type: ignore[arg-type]
    errors = [m.message for m, _ in bridge.poll() if isinstance(m, Error)]
    assert errors == [
        "profile: top must be a whole number, not 'all'",
        "profile: node must be a node path or null, not int",
        "profile: node path longer than 1000 characters",
    ]


def test_screenshot_of_the_profiler_with_heat_tint(editor, qtbot):
    show_patch(editor, busy_patch())
    panel = open_profiler(editor, qtbot)
    editor.profiling.show_heat_tint(True)
    editor.view_actions.legend_action.trigger()  # the legend's class colours would cover the patch
    editor.canvas.select(["m"])
    profiled(editor)
    assert "HOT because" in panel.why.toPlainText()
    assert editor.canvas.body_color("slow") == heat_color(panel.cost_of("slow"))
    qtbot.waitUntil(lambda: panel.table.height() > 120)  # laid out
    ARTIFACTS.mkdir(exist_ok=True)
    assert editor.grab().save(str(ARTIFACTS / "profiler.png"))
