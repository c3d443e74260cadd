"""Node packs: loaded from the user's nodes folder and from entry points, reloaded live while a
patch runs on every evaluator kind, placeholders for types that are not installed (kept, saved
back byte for byte, replaced when the pack arrives), and never loaded from a patch's own folder."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evaluators import DualEvaluator
from nodes import LIBRARY, Patch, load_patch, packs, save_patch
from nodes import spec as _spec
from tests.waiting import BUILD_TIMEOUT_S, TIMEOUT_S

PACK = '''
import threading

from nodes import node

LOADED_ON = threading.current_thread().name

@node("mypack.scale", docs={{"x": "The value.", "out": "The value scaled."}})
def scale(x: float = 1.0) -> float:
    """Scales a value by a constant."""
    return x * {factor}
'''


@pytest.fixture
def library() -> Iterator[None]:
    """The library, the packs and their modules as they were before the test."""
    before = dict(LIBRARY)
    legacy = dict(_spec._LEGACY)
    loaded, ever = dict(packs.PACKS), set(packs._PACK_TYPES)
    modules = set(sys.modules)
    yield
    LIBRARY.clear()
    LIBRARY.update(before)
    _spec._LEGACY.clear()
    _spec._LEGACY.update(legacy)
    packs.PACKS.clear()
    packs.PACKS.update(loaded)
    packs._PACK_TYPES.clear()
    packs._PACK_TYPES.update(ever)
    packs.apply_staged()  # nothing staged by a test may reach a later one
    LIBRARY.clear()
    LIBRARY.update(before)
    packs.PACKS.clear()
    packs.PACKS.update(loaded)
    for name in set(sys.modules) - modules:
        if name.startswith("patchbay_packs."):
            del sys.modules[name]


@pytest.fixture
def nodes_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, library: None) -> Path:
    folder = tmp_path / "user-nodes"
    folder.mkdir()
    monkeypatch.setenv(packs.NODES_DIR_ENV, str(folder))
    return folder


def write_pack(folder: Path, factor: float, name: str = "mypack") -> Path:
    path = folder / f"{name}.py"
    path.write_text(PACK.format(factor=factor))
    return path


def scale_patch() -> tuple[Patch, str]:
    patch = Patch()
    value = patch.add_node("value.float", {"value": 5.0}, node_id="v")
    patch.add_node("mypack.scale", node_id="scale")
    patch.add_node("output.value", node_id="out")
    patch.connect(value, "out", "scale", "x")
    patch.connect("scale", "out", "out", "in")
    return patch, "out"


class Running:
    """Runs frames of a patch as a host does: staged packs applied at each frame boundary."""

    def __init__(self, evaluator: Any, patch: Patch) -> None:
        self.evaluator, self.patch, self.frame = evaluator, patch, 0
        self.problems: list[str] = []

    def step(self) -> None:
        self.problems += packs.apply_staged()
        packs.sync_instances(self.patch)
        evaluator = self.evaluator
        if isinstance(evaluator, DualEvaluator) and evaluator.mode == "lazy":
            evaluator.wait_for_flat(BUILD_TIMEOUT_S)
        evaluator.run_frame(self.frame / 60, self.frame)
        self.frame += 1

    def until(self, condition: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:
            self.step()
            if condition():
                return True
            time.sleep(0.005)
        return False


def test_user_folder_is_where_the_env_var_says_and_packs_load_at_start(nodes_dir: Path) -> None:
    assert packs.user_nodes_folder() == nodes_dir
    write_pack(nodes_dir, 2.0)
    assert packs.load_packs() == []
    assert "mypack.scale" in LIBRARY
    assert packs.pack_of("mypack.scale") == "mypack"
    assert packs.pack_of("math.add") is None
    assert LIBRARY["mypack.scale"].summary == "Scales a value by a constant."


def test_without_the_env_var_the_folder_is_the_platform_user_data_folder(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import platformdirs

    monkeypatch.delenv(packs.NODES_DIR_ENV, raising=False)
    expected = platformdirs.user_data_path("patchbay") / "nodes"
    assert packs.user_nodes_folder() == expected


def test_a_pack_edited_while_a_patch_runs_reloads_on_every_evaluator_kind(
    nodes_dir: Path, make_evaluator
) -> None:
    path = write_pack(nodes_dir, 2.0)
    assert packs.load_packs() == []
    patch, out = scale_patch()
    running = Running(make_evaluator(patch), patch)
    watcher = packs.PackWatcher(nodes_dir)
    try:
        assert running.until(lambda: running.evaluator.output(out) == 10.0)
        before = running.frame
        write_pack(nodes_dir, 3.0)
        assert running.until(lambda: running.evaluator.output(out) == 15.0), (
            running.evaluator.error("scale"),
            running.problems,
        )
        assert running.frame > before
        # imported on the watcher's thread, swapped in on this one (the frame thread)
        assert LIBRARY["mypack.scale"].compute.__globals__["LOADED_ON"] == "pack-stager"
        assert patch.links == [("v", "out", "scale", "x"), ("scale", "out", "out", "in")]
        # removed: the instance becomes a placeholder, the patch keeps running, one line
        path.unlink()
        assert running.until(lambda: patch.nodes["scale"].spec.missing)
        assert "mypack.scale" not in LIBRARY
        running.until(lambda: running.evaluator.error("scale") is not None)
        error = running.evaluator.error("scale")
        assert error is not None and "\n" not in error
        assert "node type 'mypack.scale' is not installed (missing pack?)" in error
        assert len(patch.links) == 2
        frame = running.frame
        running.step()
        assert running.frame == frame + 1
        # back again: the placeholder becomes the real node
        write_pack(nodes_dir, 4.0)
        assert running.until(lambda: running.evaluator.output(out) == 20.0)
        assert not patch.nodes["scale"].spec.missing
    finally:
        watcher.close()
    assert running.problems == []


def test_a_pack_with_a_syntax_error_reports_one_line_and_keeps_the_old_nodes(
    nodes_dir: Path,
) -> None:
    path = write_pack(nodes_dir, 2.0)
    assert packs.load_packs() == []
    old = LIBRARY["mypack.scale"]
    path.write_text("from nodes import node\n\ndef broken(:\n")
    problem = packs.stage_file(path)
    assert problem is not None and "\n" not in problem
    assert problem.startswith("node pack 'mypack' not loaded: mypack.py:3: SyntaxError")
    assert packs.apply_staged() == []
    assert LIBRARY["mypack.scale"] is old
    path.write_text("raise RuntimeError('no GPU here')\n")
    problem = packs.stage_file(path)
    assert problem is not None and problem.endswith("RuntimeError: no GPU here")
    assert LIBRARY["mypack.scale"] is old


def test_a_pack_with_a_misnamed_pin_fact_reports_the_node_and_pin(nodes_dir: Path) -> None:
    misnamed = PACK.format(factor=2).replace('"x": "The', '"y": "The')
    (nodes_dir / "typo.py").write_text(misnamed.replace("mypack.scale", "typo.scale"))
    [problem] = packs.load_packs()
    assert problem == (
        f"node pack 'typo' ({nodes_dir / 'typo.py'}) not loaded: TypeError: typo.scale: docs= "
        "names pin 'y', which the node has not"
    )
    assert "typo.scale" not in LIBRARY


def test_a_pack_may_not_take_a_built_in_type(nodes_dir: Path) -> None:
    (nodes_dir / "thief.py").write_text(PACK.format(factor=2).replace("mypack.scale", "math.add"))
    builtin = LIBRARY["math.add"]
    [problem] = packs.load_packs()
    assert problem == (
        "node pack 'thief' not loaded: type 'math.add' is already declared by the built-in library"
    )
    assert LIBRARY["math.add"] is builtin
    assert "thief" not in packs.PACKS


def test_the_watcher_reports_a_broken_file_in_one_line(nodes_dir: Path) -> None:
    lines: list[str] = []
    watcher = packs.PackWatcher(nodes_dir, lines.append)
    try:
        (nodes_dir / "bad.py").write_text("def (\n")
        deadline = time.monotonic() + TIMEOUT_S
        while not lines and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        watcher.close()
    assert lines and all("\n" not in line for line in lines)
    assert lines[-1].startswith("node pack 'bad' not loaded: bad.py:1: SyntaxError")


def test_entry_point_packs_load_with_their_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nodes_dir: Path
) -> None:
    site = tmp_path / "site"
    (site / "fancy_nodes").mkdir(parents=True)
    (site / "fancy_nodes" / "__init__.py").write_text(
        PACK.format(factor=7).replace("mypack.scale", "fancy.scale")
    )
    info = site / "fancy_nodes-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fancy-nodes\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[patchbay.nodes]\nfancy = fancy_nodes\n")
    monkeypatch.syspath_prepend(str(site))
    try:
        assert packs.load_packs() == []
        assert packs.pack_of("fancy.scale") == "fancy"
        assert LIBRARY["fancy.scale"].compute(2.0) == 14.0
        assert packs.load_packs() == []  # once per process: nothing registered twice
    finally:
        sys.modules.pop("fancy_nodes", None)


def test_a_broken_entry_point_reports_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nodes_dir: Path
) -> None:
    site = tmp_path / "site"
    info = site / "gone-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gone\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[patchbay.nodes]\ngone = gone_nodes_module\n")
    monkeypatch.syspath_prepend(str(site))
    [problem] = packs.load_packs()
    assert problem.startswith("node pack 'gone' (entry point gone_nodes_module) not loaded:")
    assert "ModuleNotFoundError" in problem


PLACEHOLDER_FILE = """{
  "format": "patchbay",
  "links": [
    {"from": ["v", "out"], "to": ["ghost", "x"]},
    {"from": ["ghost", "out"], "to": ["out", "in"]}
  ],
  "meta": {},
  "nodes": [
    {"id": "v", "pos": [0.0, 0.0], "type": "value.float", "values": {"value": 5.0}},
    {"id": "ghost", "pos": [200.0, 10.5], "type": "mypack.scale",
     "values": {"x": 1.0, "mode": "soft", "table": [1, 2, 3], "extra": {"k": null}}},
    {"id": "out", "pos": [400.0, 0.0], "type": "output.value", "values": {"in": 0.0}}
  ],
  "settings": {"resolution": [640, 360]},
  "version": 1
}
"""


def test_placeholders_keep_values_and_links_and_save_back_unchanged(
    tmp_path: Path, nodes_dir: Path
) -> None:
    source = tmp_path / "patches" / "ghost.patchbay"
    source.parent.mkdir()
    source.write_text(PLACEHOLDER_FILE)
    patch = load_patch(source)
    ghost = patch.nodes["ghost"]
    assert ghost.spec.missing and ghost.type_id == "mypack.scale"
    assert ghost.values == {"x": 1.0, "mode": "soft", "table": [1, 2, 3], "extra": {"k": None}}
    assert len(patch.links) == 2
    first = tmp_path / "first.patchbay"
    save_patch(patch, first)
    again = tmp_path / "again.patchbay"
    save_patch(load_patch(first), again)
    assert again.read_bytes() == first.read_bytes()
    saved = load_patch(first)
    assert saved.nodes["ghost"].values == ghost.values
    assert saved.links == patch.links


def test_a_placeholder_fails_in_one_line_and_becomes_real_when_its_pack_arrives(
    tmp_path: Path, nodes_dir: Path, make_evaluator
) -> None:
    source = tmp_path / "ghost.patchbay"
    source.write_text(PLACEHOLDER_FILE)
    patch = load_patch(source)
    running = Running(make_evaluator(patch), patch)
    assert running.until(lambda: running.evaluator.error("ghost") is not None)
    assert running.evaluator.error("ghost") == (
        "MissingNodeTypeError: node type 'mypack.scale' is not installed (missing pack?)"
    )
    write_pack(nodes_dir, 3.0)
    assert packs.load_packs() == []
    assert running.until(lambda: running.evaluator.output("out") == 15.0)
    assert not patch.nodes["ghost"].spec.missing
    assert patch.links == [("v", "out", "ghost", "x"), ("ghost", "out", "out", "in")]


def test_a_pack_in_the_patchs_own_folder_is_never_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, library: None
) -> None:
    folder = tmp_path / "show"
    folder.mkdir()
    write_pack(folder, 9.0, name="sneaky")
    (folder / "show.patchbay").write_text(PLACEHOLDER_FILE)
    monkeypatch.chdir(folder)
    monkeypatch.setenv(packs.NODES_DIR_ENV, str(folder))
    [problem] = packs.load_packs(patch_folder=folder)
    assert problem == f"node packs in {folder} not loaded: it is the patch's own folder"
    patch = load_patch(folder / "show.patchbay")
    assert "mypack.scale" not in LIBRARY and "sneaky" not in packs.PACKS
    assert patch.nodes["ghost"].spec.missing


COUNTER = '''
from nodes import Determinism, node


class {name}:
    def __init__(self) -> None:
        self.{field} = 0.0


def fresh(path):
    return {name}()


@node(
    "mypack.count",
    determinism=Determinism.NONDETERMINISTIC,
    init_state=fresh,
    docs={{"step": "How much to add a frame.", "out": "The sum so far."}},
)
def count(state, step: float = 1.0) -> float:
    """Adds a step every frame."""
    state.{field} += step * {factor}
    return state.{field}
'''


def test_a_stateful_node_starts_over_with_a_state_of_the_new_code(
    nodes_dir: Path, make_evaluator
) -> None:
    path = nodes_dir / "mypack.py"
    path.write_text(COUNTER.format(name="Sum", field="total", factor=1.0))
    assert packs.load_packs() == []
    patch = Patch()
    patch.add_node("mypack.count", node_id="count")
    patch.add_node("output.value", node_id="out")
    patch.connect("count", "out", "out", "in")
    running = Running(make_evaluator(patch), patch)
    assert running.until(lambda: (running.evaluator.output("out") or 0.0) >= 3.0)
    # the new code keeps another kind of state: running it on the old one would fail
    path.write_text(COUNTER.format(name="Tally", field="sum", factor=1000.0))
    assert packs.stage_file(path) is None
    assert running.until(lambda: running.evaluator.output("out") == 3000.0)
    assert running.evaluator.error("count") is None


def test_the_readme_example_is_a_working_pack(nodes_dir: Path, make_evaluator) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    section = readme.split("## Writing a node pack", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    (nodes_dir / "mine.py").write_text(code)
    assert packs.load_packs() == []
    spec = LIBRARY["mine.wobble"]
    assert spec.summary == "A sine of patch time, scaled." and set(spec.pin_docs) == {
        "depth",
        "out",
    }
    patch = Patch()
    patch.add_node("mine.wobble", {"depth": 2.0}, node_id="wobble")
    patch.add_node("output.value", node_id="out")
    patch.connect("wobble", "out", "out", "in")
    evaluator = make_evaluator(patch)
    evaluator.run_frame(0.5, 0)
    assert evaluator.output("out") == pytest.approx(2.0 * math.sin(1.5))


def test_the_readme_pin_example_is_a_working_pack(nodes_dir: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    section = readme.split("## Writing a node pack", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n")[2].split("```", 1)[0]
    (nodes_dir / "mine.py").write_text(code)
    assert packs.load_packs() == []
    amount = LIBRARY["mine.gain"].input("amount")
    assert amount is not None and (amount.minimum, amount.maximum, amount.hint) == (0, 2, "slider")
    assert LIBRARY["mine.gain"].pin_docs["amount"] == "The factor."
    (nodes_dir / "mine.py").write_text(
        code.replace('docs={"out"', 'hints={"amout": "slider"}, docs={"out"')
    )
    problem = packs.stage_file(nodes_dir / "mine.py")
    assert problem is not None and problem.endswith(
        "TypeError: mine.gain: hints= names pin 'amout', which the node has not"
    )


def test_a_patch_saved_with_a_pack_saves_the_same_bytes_without_it(
    tmp_path: Path, nodes_dir: Path
) -> None:
    path = write_pack(nodes_dir, 2.0)
    assert packs.load_packs() == []
    patch, _ = scale_patch()
    patch.set_value("scale", "x", 1.5)
    patch.disconnect("v", "out", "scale", "x")
    with_pack = tmp_path / "with.patchbay"
    save_patch(patch, with_pack)
    path.unlink()
    assert packs.stage_file(path) is None and packs.apply_staged() == []
    opened = load_patch(with_pack)
    assert opened.nodes["scale"].spec.missing
    assert opened.nodes["scale"].values == {"x": 1.5}
    without = tmp_path / "without.patchbay"
    save_patch(opened, without)
    assert without.read_bytes() == with_pack.read_bytes()


def test_reloading_a_pack_many_times_keeps_one_module_of_it(nodes_dir: Path) -> None:
    path = write_pack(nodes_dir, 2.0)
    assert packs.load_packs() == []
    for factor in range(3, 13):
        write_pack(nodes_dir, float(factor))
        assert packs.stage_file(path) is None
        if factor % 2:  # staged twice before a swap, too
            assert packs.apply_staged() == []
    assert packs.apply_staged() == []
    assert LIBRARY["mypack.scale"].compute(1.0) == 12.0
    loaded = [name for name in sys.modules if name.startswith("patchbay_packs.mypack")]
    assert loaded == [LIBRARY["mypack.scale"].compute.__module__]
