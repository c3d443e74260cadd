"""The .patchbay file format: round trips, stable bytes, atomic saves and validated loads."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import nodes.fileformat.format as fileformat
from app.cli.main import main as cli_main
from nodes import Patch, PatchFileError, PatchValueError, load_patch, save_patch
from nodes.limits import DEFAULT_LIMITS, active_limits, set_active_limits

ROOT = Path(__file__).resolve().parents[2]


def sample_patch() -> Patch:
    patch = Patch()
    speed = patch.add_node("input.float", {"value": 0.25, "min": -1.0, "max": 2.0}, pos=(1, 2))
    lfo = patch.add_node("time.lfo", {"hz": 0.5, "shape": 2}, pos=(100.5, -3.25))
    add = patch.add_node("math.add")
    arr = patch.add_node("value.array", {"value": np.array([1.5, -2.0, 3.25])})
    ints = patch.add_node("value.array", {"value": np.arange(6, dtype=np.int32).reshape(2, 3)})
    toggle = patch.add_node("input.toggle", {"value": True})
    fail = patch.add_node("debug.fail", {"message": "ünïcode ok"})
    delay = patch.add_node("util.frame_delay", {"init": 1.0})
    switch = patch.add_node("logic.switch", {"index": 1.0})
    sink = patch.add_node("output.value")
    patch.connect(speed, "out", lfo, "hz")
    patch.connect(lfo, "out", add, "a")
    patch.connect(arr, "out", add, "b")
    patch.connect(add, "out", switch, "in0")
    patch.connect(toggle, "out", switch, "index")
    patch.connect(switch, "out", delay, "in")
    patch.connect(delay, "out", sink, "in")
    patch.connect(ints, "out", fail, "x")
    patch.update_settings(resolution=[320, 200], fps=30)
    return patch


def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and np.array_equal(a, b)
        )
    return type(a) is type(b) and a == b


def assert_same_patch(a: Patch, b: Patch) -> None:
    assert list(a.nodes) == list(b.nodes)
    for node_id, node in a.nodes.items():
        other = b.nodes[node_id]
        assert node.type_id == other.type_id
        assert node.pos == other.pos
        assert set(node.values) == set(other.values)
        for pin, value in node.values.items():
            assert same_value(value, other.values[pin]), (node_id, pin, value, other.values[pin])
    assert a.links == b.links
    assert a.settings == b.settings
    assert a.meta == b.meta


# ----------------------------------------------------------------------------- round trips


def test_round_trip(tmp_path: Path) -> None:
    patch = sample_patch()
    path = tmp_path / "a.patchbay"
    save_patch(patch, path)
    loaded = load_patch(path)
    assert_same_patch(patch, loaded)
    assert loaded.revision == 0 and loaded.value_revision == 0
    # a loaded patch is a normal patch: new ids do not collide
    assert loaded.add_node("math.add") not in patch.nodes


def test_file_is_sorted_json_with_format_tag(tmp_path: Path) -> None:
    path = tmp_path / "a.patchbay"
    save_patch(sample_patch(), path)
    text = path.read_text(encoding="utf-8")
    document = json.loads(text)
    assert document["format"] == "patchbay"
    assert document["version"] == 1
    assert text == json.dumps(document, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert [n["id"] for n in document["nodes"]] == list(sample_patch().nodes)


def test_resave_is_byte_identical(tmp_path: Path) -> None:
    first, second = tmp_path / "a.patchbay", tmp_path / "b.patchbay"
    save_patch(sample_patch(), first)
    save_patch(load_patch(first), second)
    assert first.read_bytes() == second.read_bytes()
    save_patch(load_patch(second), first)
    assert first.read_bytes() == second.read_bytes()


def definitions_patch() -> Patch:
    """Two definitions, one nested in the other (made first), a large array inside a body,
    instances with their own values and links, and a renamed port."""
    patch = Patch()
    patch.add_definition("outer", Patch())
    inner = Patch()
    x = inner.add_node("subpatch.inlet", {"name": "x", "default": 0.5}, pos=(-200, 0))
    table = inner.add_node("value.array", {"value": np.linspace(0.0, 1.0, 10_000)})
    mul = inner.add_node("math.mul", {"b": 2.0}, pos=(10.25, 3))
    y = inner.add_node("subpatch.outlet", {"name": "y"}, pos=(200, 0))
    inner.connect(x, "out", mul, "a")
    inner.connect(mul, "out", y, "in")
    inner.connect(table, "out", inner.add_node("output.value"), "in")
    patch.add_definition("inner", inner)
    outer = patch.definition("outer")
    held = outer.add_node("subpatch", {"definition": "inner", "x": 3.0})
    out = outer.add_node("subpatch.outlet", {"name": "result"})
    outer.connect(held, "y", out, "in")
    first = patch.add_node("subpatch", {"definition": "inner", "x": 7.0}, pos=(5, 5))
    second = patch.add_node("subpatch", {"definition": "outer"})
    sink = patch.add_node("output.value")
    patch.connect(first, "y", sink, "in")
    inner.set_value(y, "name", "scaled")  # renamed after the links were made
    assert patch.link_into(sink, "in") is not None and second
    return patch


def test_definitions_round_trip_byte_identically(tmp_path: Path) -> None:
    patch = definitions_patch()
    path = tmp_path / "defs.patchbay"
    sidecar = save_patch(patch, path)
    assert sidecar is not None  # the body's large array
    first = path.read_bytes()
    document = json.loads(first)
    assert document["version"] == 2 and list(document["definitions"]) == ["inner", "outer"]
    loaded = load_patch(path)
    assert list(loaded.definitions) == ["inner", "outer"]  # keys are sorted in the file
    for name, body in patch.definitions.items():
        assert_same_patch(body, loaded.definition(name))
    assert_same_patch(patch, loaded)
    assert loaded.revision == 0 and loaded.value_revision == 0
    assert [pin.name for pin in loaded.node("subpatch1").spec.outputs] == ["scaled"]
    save_patch(loaded, path)
    assert path.read_bytes() == first
    save_patch(load_patch(path), path)
    assert path.read_bytes() == first


def test_a_patch_without_definitions_is_still_version_1(tmp_path: Path) -> None:
    patch = definitions_patch()
    path = tmp_path / "plain.patchbay"
    for node_id in list(patch.nodes):
        patch.remove_node(node_id)
    for name in ("outer", "inner"):
        patch.remove_definition(name)
    patch.add_node("math.add")
    save_patch(patch, path)
    document = json.loads(path.read_text(encoding="utf-8"))
    assert document["version"] == 1 and "definitions" not in document


def test_version_1_files_still_load(tmp_path: Path) -> None:
    path = tmp_path / "old.patchbay"
    path.write_text(json.dumps(good_document()), encoding="utf-8")
    patch = load_patch(path)
    assert list(patch.nodes) == ["v1", "add1", "out1"] and not patch.definitions
    save_patch(patch, path)
    assert json.loads(path.read_text(encoding="utf-8"))["version"] == 1


def test_round_trip_of_every_plain_value_kind(tmp_path: Path) -> None:
    patch = Patch()
    node = patch.add_node("math.clamp", {"x": -0.0, "low": 1e-300, "high": 1.7976931348623157e308})
    empty = patch.add_node("value.array", {"value": np.zeros(0)})
    scalar = patch.add_node("value.array", {"value": np.array(2.5)})
    flags = patch.add_node("value.array", {"value": np.array([True, False])})
    f32 = patch.add_node("value.array", {"value": np.array([0.1, 1 / 3], dtype=np.float32)})
    anything = patch.add_node("value.any", {"value": {"nested": [1, "two", None]}})
    path = tmp_path / "values.patchbay"
    save_patch(patch, path)
    loaded = load_patch(path)
    assert_same_patch(patch, loaded)
    for node_id in (node, empty, scalar, flags, f32, anything):
        assert node_id in loaded.nodes


def test_large_array_goes_to_a_sidecar_and_back(tmp_path: Path) -> None:
    patch = Patch()
    big = np.linspace(0.0, 1.0, 20_000).reshape(100, 200)
    small = np.array([1.0, 2.0])
    node = patch.add_node("value.array", {"value": big})
    other = patch.add_node("value.array", {"value": small})
    path = tmp_path / "big.patchbay"
    sidecar = save_patch(patch, path)
    assert sidecar is not None and sidecar.exists()
    assert sidecar.parent == tmp_path and sidecar.name.startswith("big.patchbay.")
    text = path.read_text()
    assert len(text) < 10_000  # the data is not in the JSON
    document = json.loads(text)
    values = {n["id"]: n["values"]["value"] for n in document["nodes"]}
    assert values[node]["$array"]["npz"] == sidecar.name
    assert "data" in values[other]["$array"]
    loaded = load_patch(path)
    assert_same_patch(patch, loaded)
    with np.load(sidecar, allow_pickle=False) as archive:
        assert archive.files == [f"{node}.value"]
    # dropping the large array drops the sidecar
    patch.set_value(node, "value", small)
    assert save_patch(patch, path) is None
    assert not sidecar.exists()
    assert_same_patch(patch, load_patch(path))


def test_new_arrays_never_replace_the_sidecar_of_the_old_file(tmp_path: Path, monkeypatch) -> None:
    """Saving new large arrays over a file with large arrays, failing before the new file is in
    place, leaves the old file with its own arrays; a successful save removes the old sidecar."""
    path = tmp_path / "big.patchbay"
    patch = Patch()
    node = patch.add_node("value.array", {"value": np.zeros(50_000)})
    old_sidecar = save_patch(patch, path)
    patch.set_value(node, "value", np.ones(50_000))
    real_replace = os.replace

    def fail_on_the_patch_file(src: str, dst: str) -> None:
        if Path(dst) == path:
            raise OSError("disk full")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", fail_on_the_patch_file)
    with pytest.raises(OSError, match="disk full"):
        save_patch(patch, path)
    monkeypatch.setattr(os, "replace", real_replace)
    np.testing.assert_array_equal(load_patch(path).nodes[node].values["value"], np.zeros(50_000))

    new_sidecar = save_patch(patch, path)
    assert new_sidecar != old_sidecar and old_sidecar is not None and not old_sidecar.exists()
    np.testing.assert_array_equal(load_patch(path).nodes[node].values["value"], np.ones(50_000))


def test_a_missing_sidecar_is_a_file_error(tmp_path: Path) -> None:
    patch = Patch()
    patch.add_node("value.array", {"value": np.zeros(50_000)})
    path = tmp_path / "big.patchbay"
    sidecar = save_patch(patch, path)
    assert sidecar is not None
    sidecar.unlink()
    with pytest.raises(PatchFileError, match=r"big\.patchbay: nodes\[0\]\.values: .*sidecar"):
        load_patch(path)


# ----------------------------------------------------------------------------- atomic saves


def failing(name: str):
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise OSError(f"{name} failed on purpose")

    return fail


@pytest.mark.parametrize("where", ["replace", "fsync", "dumps"])
def test_failed_save_leaves_the_old_file_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    path = tmp_path / "a.patchbay"
    old = sample_patch()
    save_patch(old, path)
    before = path.read_bytes()
    new = sample_patch()
    new.add_node("math.sin")
    target = {"replace": (os, "replace"), "fsync": (os, "fsync"), "dumps": (json, "dumps")}
    monkeypatch.setattr(*target[where], failing(where))
    with pytest.raises(OSError, match=where):
        save_patch(new, path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert_same_patch(old, load_patch(path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.patchbay"]  # no temporary left


def test_failed_write_in_the_middle_leaves_the_old_file_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "a.patchbay"
    save_patch(sample_patch(), path)
    before = path.read_bytes()
    real_write = fileformat._atomic_write

    def half_write(target: Path, write: Any, mode: int | None) -> None:
        def broken(handle: Any) -> None:
            handle.write(b'{"format": "patch')
            raise OSError("disk full")

        real_write(target, broken, mode)

    monkeypatch.setattr(fileformat, "_atomic_write", half_write)
    with pytest.raises(OSError, match="disk full"):
        save_patch(Patch(), path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    load_patch(path)


def test_failed_save_keeps_the_old_sidecar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The old file had a large array; the new one has none. A failure writing the JSON must not
    have removed the sidecar the old file still needs."""
    path = tmp_path / "big.patchbay"
    old = Patch()
    old.add_node("value.array", {"value": np.arange(20_000, dtype=np.float64)})
    save_patch(old, path)
    new = Patch()
    new.add_node("value.float")
    monkeypatch.setattr(os, "replace", failing("replace"))
    with pytest.raises(OSError):
        save_patch(new, path)
    monkeypatch.undo()
    assert_same_patch(old, load_patch(path))


def test_failed_sidecar_save_leaves_the_old_file_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.patchbay"
    old = Patch()
    old.add_node("value.array", {"value": np.arange(20_000, dtype=np.float64)}, node_id="arr")
    save_patch(old, path)
    new = Patch()
    new.add_node("value.array", {"value": np.ones(20_000)}, node_id="arr")
    monkeypatch.setattr(np, "savez", failing("savez"))
    with pytest.raises(OSError):
        save_patch(new, path)
    monkeypatch.undo()
    assert_same_patch(old, load_patch(path))


# ----------------------------------------------------------------------------- bad files


def good_document() -> dict[str, Any]:
    return {
        "format": "patchbay",
        "version": 1,
        "settings": {},
        "meta": {},
        "nodes": [
            {"id": "v1", "type": "value.float", "values": {"value": 1.0}, "pos": [0, 0]},
            {"id": "add1", "type": "math.add", "values": {}, "pos": [0, 0]},
            {"id": "out1", "type": "output.value", "values": {}, "pos": [0, 0]},
        ],
        "links": [
            {"from": ["v1", "out"], "to": ["add1", "a"]},
            {"from": ["add1", "out"], "to": ["out1", "in"]},
        ],
    }


def with_changes(change) -> str:
    document = good_document()
    change(document)
    return json.dumps(document)


def set_in(document: dict[str, Any], path: list[Any], value: Any) -> None:
    for part in path[:-1]:
        document = document[part]
    document[path[-1]] = value


def instance_of(definition: str, node_id: str = "inst") -> dict[str, Any]:
    return {"id": node_id, "type": "subpatch", "values": {"definition": definition}}


def body_of(*nodes: dict[str, Any], links: list[Any] | None = None) -> dict[str, Any]:
    return {"nodes": list(nodes), "links": links or []}


def with_definitions(
    definitions: Any, nodes: list[Any] | None = None, links: list[Any] | None = None
) -> str:
    document = good_document()
    document["version"] = 2
    document["definitions"] = definitions
    document["nodes"] += nodes or []
    document["links"] += links or []
    return json.dumps(document)


BAD_FILES: dict[str, tuple[str, str]] = {
    "truncated": (json.dumps(good_document())[:57], r"line 1 column \d+: invalid JSON"),
    "empty": ("", "invalid JSON"),
    "not json": ("format = patchbay", "invalid JSON"),
    "deeply nested": ("[" * 100_000 + "]" * 100_000, "JSON"),
    "a list": ("[]", "document"),
    "wrong format tag": (
        with_changes(lambda d: set_in(d, ["format"], "patchbox")),
        r"format: not a patchbay file \(format is 'patchbox'\)",
    ),
    "no format tag": (with_changes(lambda d: d.pop("format")), "format: not a patchbay file"),
    "future version": (
        with_changes(lambda d: set_in(d, ["version"], 3)),
        r"version: written by a newer patchbay \(file version 3",
    ),
    "version not a number": (with_changes(lambda d: set_in(d, ["version"], "1")), "version"),
    "node without type": (
        with_changes(lambda d: d["nodes"][2].pop("type")),
        r"nodes\[2\]: 'type' is a required property",
    ),
    "node id with a slash": (
        with_changes(lambda d: set_in(d, ["nodes", 0, "id"], "a/b")),
        r"nodes\[0\]\.id",
    ),
    "link to a missing pin": (
        with_changes(lambda d: set_in(d, ["links", 1, "to"], ["out1", "input"])),
        r"links\[1\]: .*'out1'.*no input 'input'",
    ),
    "link from a missing output": (
        with_changes(lambda d: set_in(d, ["links", 0, "from"], ["v1", "value"])),
        r"links\[0\]: .*'v1'.*no output 'value'",
    ),
    "link to a missing node": (
        with_changes(lambda d: set_in(d, ["links", 0, "from"], ["v9", "out"])),
        r"links\[0\]: no node 'v9'",
    ),
    "bad link shape": (
        with_changes(lambda d: set_in(d, ["links", 0, "from"], ["v1"])),
        r"links\[0\]\.from",
    ),
    "a cycle": (
        with_changes(lambda d: d["links"].append({"from": ["add1", "out"], "to": ["add1", "b"]})),
        r"links\[2\]: .*cycle add1 -> add1",
    ),
    "a longer cycle": (
        with_changes(
            lambda d: (
                d["nodes"].append({"id": "mul1", "type": "math.mul"}),
                d["links"].append({"from": ["add1", "out"], "to": ["mul1", "a"]}),
                d["links"].append({"from": ["mul1", "out"], "to": ["add1", "b"]}),
            )
        ),
        r"links\[3\]: .*cycle add1 -> mul1 -> add1",
    ),
    "second link into an input": (
        with_changes(lambda d: d["links"].append({"from": ["v1", "out"], "to": ["out1", "in"]})),
        r"links\[2\]: out1\.in already has a link",
    ),
    "wrong value type": (
        with_changes(lambda d: set_in(d, ["nodes", 0, "values", "value"], "one")),
        r"nodes\[0\]\.values: v1\.value: expected a number, got str",
    ),
    "infinite integer": (
        '{"format": "patchbay", "version": 1, "links": [],'
        ' "nodes": [{"id": "l", "type": "array.linspace", "values": {"count": Infinity}}]}',
        r"nodes\[0\]\.values: l\.count: ",
    ),
    "values not an object": (
        with_changes(lambda d: set_in(d, ["nodes", 0, "values"], [1.0])),
        r"nodes\[0\]\.values",
    ),
    "unknown value pin": (
        with_changes(lambda d: set_in(d, ["nodes", 0, "values", "speed"], 1.0)),
        r"nodes\[0\]\.values: .*no input 'speed'",
    ),
    "bad inline array": (
        with_changes(lambda d: set_in(d, ["nodes", 0, "values", "value"], {"$array": 3})),
        r"nodes\[0\]\.values: \$array must be an object",
    ),
    "object array": (
        with_changes(
            lambda d: set_in(
                d,
                ["nodes", 0],
                {
                    "id": "v1",
                    "type": "value.array",
                    "values": {"value": {"$array": {"dtype": "O", "shape": [1], "data": [1]}}},
                },
            )
        ),
        r"nodes\[0\]\.values: arrays of object are not supported",
    ),
    "duplicate ids": (
        with_changes(lambda d: set_in(d, ["nodes", 1, "id"], "v1")),
        r"nodes\[1\]\.id: node id 'v1' is already used",
    ),
    "definitions holding each other": (
        with_definitions(
            {
                "a": body_of(instance_of("b")),
                "b": body_of(instance_of("c")),
                "c": body_of(instance_of("a")),
            }
        ),
        r"definitions\.a: a definition cannot contain itself: a -> b -> c -> a",
    ),
    "definition holding itself": (
        with_definitions({"a": body_of(), "b": body_of(instance_of("b"))}),
        r"definitions\.b: a definition cannot contain itself: b -> b",
    ),
    "definition name with a slash": (
        with_definitions({"a/b": body_of()}),
        r"definitions: 'a/b' does not match",
    ),
    "empty definition name": (with_definitions({"": body_of()}), r"definitions: '' should be"),
    "blank definition name": (
        with_definitions({"  ": body_of()}),
        r"definitions\.  : bad definition name '  '",
    ),
    "definitions not an object": (with_definitions([]), r"definitions: \[\] is not of type"),
    "definition without links": (
        with_definitions({"a": {"nodes": []}}),
        r"definitions\.a: 'links' is a required property",
    ),
    "definition holding a missing definition": (
        with_definitions({"a": body_of(instance_of("ghost"))}),
        r"definitions\.a\.nodes\[0\]\.values: no definition 'ghost' in the document",
    ),
    "instance of a missing definition": (
        with_changes(lambda d: d["nodes"].append(instance_of("ghost"))),
        r"nodes\[3\]\.values: no definition 'ghost' in the document",
    ),
    "bad node in a definition": (
        with_definitions({"a": body_of({"id": "n/m", "type": "math.add"})}),
        r"definitions\.a\.nodes\[0\]\.id: bad node id 'n/m'",
    ),
    "cycle in a definition": (
        with_definitions(
            {
                "a": body_of(
                    {"id": "n", "type": "math.add"},
                    links=[{"from": ["n", "out"], "to": ["n", "a"]}],
                )
            }
        ),
        r"definitions\.a\.links\[0\]: .*cycle n -> n",
    ),
    "link to a pin the definition does not have": (
        with_definitions(
            {"a": body_of()},
            nodes=[instance_of("a", "t")],
            links=[{"from": ["t", "y"], "to": ["out1", "in"]}],
        ),
        r"links\[2\]: node 't' \(subpatch\) has no output 'y'",
    ),
    "bad position": (
        with_changes(lambda d: set_in(d, ["nodes", 0, "pos"], ["x", 0])),
        r"nodes\[0\]\.pos\[0\]",
    ),
}


@pytest.fixture(params=sorted(BAD_FILES), ids=sorted(BAD_FILES))
def bad_file(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, str]:
    text, expected = BAD_FILES[request.param]
    path = tmp_path / "bad.patchbay"
    path.write_text(text, encoding="utf-8")
    return path, expected


def test_bad_file_gives_patch_file_error_naming_file_and_place(bad_file) -> None:
    path, expected = bad_file
    with pytest.raises(PatchFileError) as caught:
        load_patch(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert "\n" not in message
    assert re.search(expected, message), message


def test_check_exits_2_with_one_line_for_a_bad_file(bad_file, capsys) -> None:
    path, _ = bad_file
    assert cli_main(["check", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(str(path))
    assert "Traceback" not in captured.err


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(PatchFileError, match="cannot read"):
        load_patch(tmp_path / "missing.patchbay")
    binary = tmp_path / "binary.patchbay"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(PatchFileError, match=r"binary\.patchbay: cannot read"):
        load_patch(binary)
    with pytest.raises(PatchFileError, match="cannot read"):
        load_patch(tmp_path)


def test_loading_never_executes_code(tmp_path: Path) -> None:
    # pickled object arrays are refused by the sidecar loader (allow_pickle=False)
    path = tmp_path / "p.patchbay"
    document = good_document()
    document["nodes"][0] = {
        "id": "v1",
        "type": "value.array",
        "values": {"value": {"$array": {"npz": "p.patchbay.npz", "key": "v1.value"}}},
    }
    document["links"] = []
    path.write_text(json.dumps(document))
    with open(tmp_path / "p.patchbay.npz", "wb") as handle:
        np.savez(handle, **{"v1.value": np.array([print], dtype=object)})
    with pytest.raises(PatchFileError):
        load_patch(path)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_check_in_a_subprocess_has_no_traceback(tmp_path: Path) -> None:
    good = tmp_path / "good.patchbay"
    save_patch(sample_patch(), good)
    result = run_cli("check", str(good))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{good}: ok: patch, 10 nodes, 8 links, 1 sinks"
    for name in ("truncated", "node without type", "a cycle", "deeply nested"):
        bad = tmp_path / "bad.patchbay"
        bad.write_text(BAD_FILES[name][0])
        result = run_cli("check", str(bad))
        assert result.returncode == 2, (name, result.stderr)
        assert len(result.stderr.splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr
        assert result.stdout == ""


def test_check_good_file_summary(tmp_path: Path, capsys) -> None:
    path = tmp_path / "good.patchbay"
    path.write_text(json.dumps(good_document()))
    assert cli_main(["check", str(path)]) == 0
    captured = capsys.readouterr()
    assert captured.out == f"{path}: ok: patch, 3 nodes, 2 links, 1 sinks\n"
    assert captured.err == ""


@pytest.mark.parametrize(
    ("settings", "place"),
    [({"resolution": "abc"}, "settings.resolution"), ({"resolution": [0, 10]}, "settings")],
)
def test_bad_settings_are_file_errors(tmp_path: Path, settings: dict, place: str) -> None:
    path = tmp_path / "bad.patchbay"
    document = {"format": "patchbay", "version": 1, "settings": settings, "nodes": [], "links": []}
    path.write_text(json.dumps(document))
    with pytest.raises(PatchFileError, match=rf"bad\.patchbay: {place}"):
        load_patch(path)


def test_an_array_value_out_of_its_dtype_range_is_a_file_error(tmp_path: Path) -> None:
    value = {"$array": {"dtype": "uint8", "shape": [1], "data": [300]}}
    document = {
        "format": "patchbay",
        "version": 1,
        "nodes": [{"id": "a", "type": "value.array", "values": {"value": value}}],
        "links": [],
    }
    path = tmp_path / "overflow.patchbay"
    path.write_text(json.dumps(document))
    with pytest.raises(PatchFileError, match=r"nodes\[0\]\.values: bad \$array"):
        load_patch(path)


def test_update_settings_checks_the_resolution() -> None:
    patch = Patch()
    with pytest.raises(PatchValueError, match="resolution"):
        patch.update_settings(resolution=[0, 5])
    patch.update_settings(resolution=(320.0, 200))
    assert patch.settings["resolution"] == [320, 200]


def test_update_settings_holds_the_resolution_to_the_texture_limit_files_are_held_to(
    tmp_path: Path,
) -> None:
    """One rule for edits and files: a resolution an edit takes is one a file may have."""
    before = active_limits()
    patch = Patch()
    try:
        with pytest.raises(PatchValueError, match="9000 is above the limit texture_side = 8192"):
            patch.update_settings(resolution=[9000, 100])
        assert patch.settings["resolution"] == [640, 360]
        patch.update_settings(resolution=[8192, 100])
        save_patch(patch, tmp_path / "p.patchbay")
        assert load_patch(tmp_path / "p.patchbay").settings["resolution"] == [8192, 100]
        set_active_limits(DEFAULT_LIMITS.replaced(texture_side=16384))  # --limit texture_side=
        patch.update_settings(resolution=[16000, 100])
        save_patch(patch, tmp_path / "p.patchbay")
        assert load_patch(tmp_path / "p.patchbay").settings["resolution"] == [16000, 100]
    finally:
        set_active_limits(before)


def test_a_value_for_a_uniform_gone_from_its_shader_file_still_loads(tmp_path: Path) -> None:
    """The shader file changed after the patch was saved: the patch loads, the stale value and its
    link stay on a placeholder pin, and deriving the pins again (an edit) drops them."""
    shader = tmp_path / "look.glsl"
    header = "#version 330\nin vec2 uv;\nout vec4 fragColor;\n"
    shader.write_text(header + "uniform float speed;\nvoid main() { fragColor = vec4(speed); }\n")
    path = tmp_path / "look.patchbay"
    patch = Patch()
    patch.folder = tmp_path
    look = patch.add_node("gpu.shader", {"source": "", "file": "look.glsl"}, node_id="look")
    patch.set_value(look, "speed", 2.0)
    patch.add_node("value.float", {"value": 3.0}, node_id="knob")
    patch.connect("knob", "out", look, "speed")
    save_patch(patch, path)

    shader.write_text(header + "uniform float gain;\nvoid main() { fragColor = vec4(gain); }\n")
    loaded = load_patch(path)
    pins = {pin.name: pin.type for pin in loaded.nodes["look"].inputs}
    assert pins["gain"] == "float" and pins["speed"] == "any"
    assert loaded.nodes["look"].values["speed"] == 2.0
    assert loaded.link_into("look", "speed") is not None

    loaded.set_value("look", "file", "look.glsl")  # derive the pins again
    assert "speed" not in {pin.name for pin in loaded.nodes["look"].inputs}
    assert loaded.link_into("look", "speed") is None
