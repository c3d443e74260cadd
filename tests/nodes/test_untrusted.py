"""Untrusted files: confinement of file names, regular files only, resource limits, one-line errors.

The same cases run end to end through `patchbay check` / `run` in tests/app/test_hostile_files.py;
these are the in-process checks of each rule.
"""

from __future__ import annotations

import io
import json
import os
import tracemalloc
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from evaluators import FlatEvaluator, LazyEvaluator
from nodes import Patch, PatchError, PatchFileError, PatchValueError, load_patch, save_patch
from nodes import paths as _paths
from nodes.errors import MESSAGE_CHARS, one_line, shown
from nodes.fileformat.format import _check_sizes, patch_from_dict
from nodes.library.gpu.glsl import uniform_declarations
from nodes.library.gpu.sources import shader_text
from nodes.limits import DEFAULT_LIMITS, Limits, active_limits, set_active_limits
from nodes.paths import TRUSTED_DIRS_VARIABLE, PathRefusedError, read_patch_file, resolve_patch_path


@pytest.fixture(autouse=True)
def default_limits(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.delenv(TRUSTED_DIRS_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    before = active_limits()
    set_active_limits(DEFAULT_LIMITS)
    yield
    set_active_limits(before)


def write_patch(folder: Path, nodes: list, links: list | None = None, **extra) -> Path:
    path = folder / "p.patchbay"
    document = {"format": "patchbay", "version": 1, "nodes": nodes, "links": links or []}
    path.write_text(json.dumps({**document, **extra}))
    return path


# ----------------------------------------------------------------------------- messages


def test_one_line_escapes_control_characters_and_shortens() -> None:
    text = one_line("id \x1b[31mred\nnext\u202eline" + "x" * 10_000)
    assert "\x1b" not in text and "\n" not in text and "\u202e" not in text
    assert text.startswith("id \\x1b[31mred\\x0anext\\u202eline")
    assert len(text) <= MESSAGE_CHARS


def test_shown_never_repr_s_a_whole_huge_value() -> None:
    assert len(shown("a" * 50_000_000)) <= 60
    assert len(shown([["b" * 1000] * 1000] * 1000)) <= 60
    assert shown(10**5000) == "<int>"  # too long for repr at all


def test_patch_errors_are_always_one_safe_line() -> None:
    error = PatchError("node '\x1b[2J' " + "y" * 5000)
    assert "\x1b" not in str(error) and len(str(error)) <= MESSAGE_CHARS


# ----------------------------------------------------------------------------- paths


@pytest.mark.parametrize(
    "name, reason",
    [
        ("/etc/passwd", "absolute"),
        ("../outside.glsl", "outside"),
        ("sub/../../outside.glsl", "outside"),
        ("~/.bashrc", "`~`"),
        ("~nosuchuser/x.glsl", "`~`"),
        ("/dev/zero", "absolute"),
        ("a\0b", "not a file name"),
    ],
)
def test_names_leading_out_of_the_folder_are_refused(
    tmp_path: Path, name: str, reason: str
) -> None:
    with pytest.raises(PathRefusedError, match=reason):
        resolve_patch_path(tmp_path, name, "shader")


def test_names_inside_the_folder_resolve(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    assert (
        resolve_patch_path(tmp_path, "sub/x.glsl", "shader") == (tmp_path / "sub/x.glsl").resolve()
    )
    assert (
        resolve_patch_path(tmp_path, "sub/../y.glsl", "shader") == (tmp_path / "y.glsl").resolve()
    )


def test_symlinks_pointing_out_are_refused_and_inside_are_fine(tmp_path: Path) -> None:
    folder = tmp_path / "patch"
    folder.mkdir()
    (tmp_path / "secret.glsl").write_text("secret")
    (folder / "own.glsl").write_text("own")
    (folder / "out.glsl").symlink_to(tmp_path / "secret.glsl")
    (folder / "in.glsl").symlink_to(folder / "own.glsl")
    (folder / "zero.glsl").symlink_to("/dev/zero")
    for name in ("out.glsl", "zero.glsl"):
        with pytest.raises(PathRefusedError, match="outside"):
            resolve_patch_path(folder, name, "shader")
    assert read_patch_file(resolve_patch_path(folder, "in.glsl", "shader"), "shader") == b"own"


def test_trusted_folders_come_from_the_environment_and_the_settings_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, library, other = tmp_path / "patch", tmp_path / "library", tmp_path / "other"
    for made in (folder, library, other):
        made.mkdir()
    with pytest.raises(PathRefusedError):
        resolve_patch_path(folder, "../library/x.glsl", "shader")
    monkeypatch.setenv(TRUSTED_DIRS_VARIABLE, str(library))
    assert resolve_patch_path(folder, "../library/x.glsl", "shader") == library / "x.glsl"
    with pytest.raises(PathRefusedError):
        resolve_patch_path(folder, "../other/x.glsl", "shader")
    settings = tmp_path / "config" / "patchbay" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"trusted_dirs": [str(other)]}))
    assert resolve_patch_path(folder, "../other/x.glsl", "shader") == other / "x.glsl"


def test_trusted_folders_are_read_again_only_when_they_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, library, other = tmp_path / "patch", tmp_path / "library", tmp_path / "other"
    for made in (folder, library, other):
        made.mkdir()
    settings = tmp_path / "config" / "patchbay" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"trusted_dirs": [str(library)]}))
    reads = []
    read = _paths._read_trusted_folders
    monkeypatch.setattr(_paths, "_read_trusted_folders", lambda *a: reads.append(a) or read(*a))
    for _ in range(50):  # a shader from the library, resolved every frame
        resolve_patch_path(folder, "../library/x.glsl", "shader")
    assert len(reads) == 1
    settings.write_text(json.dumps({"trusted_dirs": [str(other), str(library)]}))
    assert resolve_patch_path(folder, "../other/x.glsl", "shader") == other / "x.glsl"
    monkeypatch.setenv(TRUSTED_DIRS_VARIABLE, str(tmp_path))
    assert resolve_patch_path(folder, "../x.glsl", "shader") == tmp_path / "x.glsl"
    assert len(reads) == 3


def test_builtin_resources_are_allowed(tmp_path: Path) -> None:
    assert "uniform" in shader_text("", "noise", tmp_path)


def test_only_regular_files_are_opened(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.glsl")
    (tmp_path / "folder.glsl").mkdir()
    for name in ("fifo.glsl", "folder.glsl"):
        with pytest.raises(PathRefusedError, match="not a regular file"):
            shader_text("", name, tmp_path)


def test_files_above_their_size_limit_are_refused(tmp_path: Path) -> None:
    (tmp_path / "big.glsl").write_bytes(b" " * 2048)
    set_active_limits(DEFAULT_LIMITS.replaced(shader_file_bytes=1024))
    with pytest.raises(PathRefusedError, match="shader_file_bytes = 1024"):
        shader_text("", "big.glsl", tmp_path)


def test_a_refused_shader_file_still_loads_with_its_values_and_fails_the_node(
    tmp_path: Path,
) -> None:
    nodes = [
        {"id": "f", "type": "value.float", "values": {"value": 2.0}},
        {"id": "s", "type": "gpu.shader", "values": {"source": "", "file": "/etc/passwd",
                                                      "gain": 0.5}},
        {"id": "o", "type": "gpu.output"},
    ]  # fmt: skip
    links = [{"from": ["f", "out"], "to": ["s", "gain"]}, {"from": ["s", "out"], "to": ["o", "in"]}]
    patch = load_patch(write_patch(tmp_path, nodes, links))
    assert patch.value("s", "gain") == 0.5 and patch.link_into("s", "gain") is not None
    evaluator = LazyEvaluator(patch)
    evaluator.run_frame(0.0, 0)
    assert evaluator.status("s") == "failed"


def test_a_file_value_that_cannot_be_used_is_refused_before_anything_changes() -> None:
    patch = Patch()
    shader = patch.add_node("gpu.shader", {"source": "", "file": "noise"})
    events = []
    patch.subscribe(events.append)
    pins, values, stamp = (
        patch.node(shader).inputs,
        patch.node(shader).values,
        patch.node(shader).stamp,
    )
    for name in ("~typo/x.glsl", "/etc/passwd", "../x.glsl"):
        with pytest.raises(PatchValueError):
            patch.set_value(shader, "file", name)
    instance = patch.node(shader)
    assert (instance.inputs, instance.values, instance.stamp, events) == (pins, values, stamp, [])
    patch.set_value(shader, "file", "missing.glsl")  # applied: the node fails when it runs
    assert patch.value(shader, "file") == "missing.glsl"


# ----------------------------------------------------------------------------- GLSL


@pytest.mark.parametrize(
    "source",
    [
        "uniform float a =" + " " * 200_000,
        "uniform float a = vec3(" * 20_000,
        "/*" * 100_000,
        "uniform float a, " * 50_000,
        "uniform float a = " + "1" * 200_000 + "x;",
    ],
)
def test_hostile_shader_sources_parse(source: str) -> None:
    """These took minutes with the old regular expressions; the corpus runs them under a time
    limit, here only the results are checked."""
    declarations = uniform_declarations(source)
    assert all(decl.default is None for decl in declarations)


def test_uniform_declarations_still_understood() -> None:
    source = (
        "// uniform float hidden;\n/* uniform float x; */ uniform highp float a, b;\n"
        "uniform vec4 c = vec4(1.0, 0.5, 0.25, 1.0); uniform float s = 8.0f; uniform int n = 3;"
        "uniform vec3 v = vec3(0.5); uniform float arr[3]; uniform bool t = true;"
    )
    found = {decl.name: (decl.type, decl.default) for decl in uniform_declarations(source)}
    assert found == {
        "a": ("float", None),
        "b": ("float", None),
        "c": ("vec4", (1.0, 0.5, 0.25, 1.0)),
        "s": ("float", 8.0),
        "n": ("int", 3),
        "v": ("vec3", (0.5, 0.5, 0.5)),
        "t": ("bool", True),
    }


# ----------------------------------------------------------------------------- file limits


def _array_node(spec: object) -> dict:
    return {"id": "a", "type": "value.array", "values": {"value": {"$array": spec}}}


@pytest.mark.parametrize(
    "spec, expected",
    [
        (["dtype", "float64"], "must be an object"),
        ({"npz": ["x.npz"], "key": {"k": 1}}, "npz and key must be text"),
        ({"dtype": "float64", "shape": {"a": 1}, "data": []}, "bad array shape"),
        ({"dtype": "float64", "shape": [2**40], "data": []}, "array_elements"),
        ({"dtype": "(1000000000,)f8", "shape": [1], "data": [1]}, "not supported"),
        ({"dtype": "<U5", "shape": [1], "data": ["a"]}, "not supported"),
        ({"dtype": "float64", "shape": [3], "data": [1, 2]}, "bad \\$array"),
    ],
)
def test_bad_inline_arrays_are_one_line_file_errors(tmp_path: Path, spec, expected) -> None:
    with pytest.raises(PatchFileError, match=expected):
        load_patch(write_patch(tmp_path, [_array_node(spec)]))


def test_integers_beyond_the_digit_limit_are_file_errors(tmp_path: Path) -> None:
    path = tmp_path / "p.patchbay"
    node = '{"id": "r", "type": "array.range", "values": {"count": ' + "9" * 5000 + "}}"
    path.write_text('{"format": "patchbay", "version": 1, "links": [], "nodes": [' + node + "]}")
    with pytest.raises(PatchFileError, match="int_digits") as caught:
        load_patch(path)
    assert len(str(caught.value)) <= MESSAGE_CHARS


def test_counts_and_strings_beyond_the_limits_name_the_limit(tmp_path: Path) -> None:
    nodes = [{"id": f"n{k}", "type": "value.float"} for k in range(20)]
    set_active_limits(DEFAULT_LIMITS.replaced(nodes=10, string_chars=100))
    with pytest.raises(PatchFileError, match="limit nodes = 10"):
        load_patch(write_patch(tmp_path, nodes))
    long_text = [{"id": "t", "type": "debug.fail", "values": {"message": "m" * 1000}}]
    with pytest.raises(PatchFileError, match="string_chars") as caught:
        load_patch(write_patch(tmp_path, long_text))
    assert len(str(caught.value)) <= MESSAGE_CHARS


def test_resolution_beyond_the_texture_limit_is_a_file_error(tmp_path: Path) -> None:
    path = write_patch(tmp_path, [], settings={"resolution": [16384, 16384]})
    with pytest.raises(PatchFileError, match="texture_side"):
        load_patch(path)


def _deep_and_wide(depth: int, width: int, key_chars: int, bottom: object = 0) -> object:
    value: object = [0] * width + [bottom]
    for level in range(depth):
        value = {f"{level:03d}" + "k" * key_chars: value}
    return value


def test_a_deep_and_wide_value_is_checked_in_memory_of_its_depth_not_its_size(
    tmp_path: Path,
) -> None:
    value = _deep_and_wide(200, 5000, 40)
    path = write_patch(tmp_path, [{"id": "v", "type": "value.any", "values": {"value": value}}])
    assert load_patch(path).value("v", "value") == value
    text = path.read_text()

    def refuse(place: str, message: str) -> ValueError:
        return ValueError(f"{place}: {message}")

    tracemalloc.start()
    try:
        document = json.loads(text)
        parsed = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        _check_sizes(document, DEFAULT_LIMITS, refuse)
        checked = tracemalloc.get_traced_memory()[1] - parsed
    finally:
        tracemalloc.stop()
    # The walk keeps the path to the current value, never a text per value: a place named per
    # element would take depth x key length x width (here ~45 MB, against 0.1 MB parsed).
    # tracemalloc also counts what other threads of the process allocate meanwhile, so the bound
    # leaves room for that (still a hundred times below the failure it guards against).
    assert checked < 2 * parsed + 256 * 1024


def test_a_value_deep_inside_is_named_by_its_place_when_it_is_beyond_a_limit(
    tmp_path: Path,
) -> None:
    set_active_limits(DEFAULT_LIMITS.replaced(string_chars=1000))
    value = _deep_and_wide(200, 5000, 3, bottom="x" * 2000)
    path = write_patch(tmp_path, [{"id": "v", "type": "value.any", "values": {"value": value}}])
    with pytest.raises(PatchFileError, match=r"text of 2000 characters: .*string_chars = 1000"
                       ) as caught:  # fmt: skip
        load_patch(path)
    message = str(caught.value)
    assert "nodes[0].values.value.'199kkk'" in message and "'000kkk'[5000]: text" in message
    assert len(message) <= MESSAGE_CHARS
    with pytest.raises(PatchFileError, match=r"nodes\[0\]\.values\.value\[2\]: an integer of 101"):
        patch_from_dict({"format": "patchbay", "version": 1, "links": [], "nodes": [
            {"id": "v", "type": "value.any", "values": {"value": [0, 1, 10**100]}}]})  # fmt: skip


def test_the_patch_file_itself_must_be_a_regular_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo.patchbay")
    with pytest.raises(PatchFileError, match="not a regular file"):
        load_patch(tmp_path / "fifo.patchbay")


def test_links_in_any_order_load_and_cycles_are_still_found(tmp_path: Path) -> None:
    count = 300
    nodes = [{"id": f"n{k}", "type": "math.add"} for k in range(count)]
    links = [{"from": [f"n{k}", "out"], "to": [f"n{k + 1}", "a"]} for k in range(count - 1)]
    patch = load_patch(write_patch(tmp_path, nodes, links[::-1]))
    assert len(patch.links) == count - 1
    closing = {"from": [f"n{count - 1}", "out"], "to": ["n0", "a"]}
    # Named as loading link by link would: the link that came last in the file closes it.
    expected = rf"links\[{count - 1}\]: the links close the cycle n1 -> n2 -> "
    with pytest.raises(PatchFileError, match=expected):
        load_patch(write_patch(tmp_path, nodes, [closing, *links[::-1]]))


# ----------------------------------------------------------------------------- sidecars


def _sidecar_patch(folder: Path, name: str = "p.patchbay.0123456789ab.npz", key: str = "a.value"):
    value = {"$array": {"npz": name, "key": key}}
    return write_patch(folder, [{"id": "a", "type": "value.array", "values": {"value": value}}])


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def test_only_the_members_a_value_refers_to_are_read(tmp_path: Path) -> None:
    sidecar = tmp_path / "p.patchbay.0123456789ab.npz"
    with zipfile.ZipFile(sidecar, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("a.value.npy", _npy(np.arange(5.0)))
        header = _npy(np.zeros(0))[: -0 or None]
        # A member whose data is corrupt: loading must not touch it.
        archive.writestr("unused.npy", header + b"garbage")
    patch = load_patch(_sidecar_patch(tmp_path))
    assert np.array_equal(patch.value("a", "value"), np.arange(5.0))


def _header_declaring(shape: tuple[int, ...]) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        buffer, {"descr": "<f8", "fortran_order": False, "shape": shape}
    )
    return buffer.getvalue()


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda path: path.write_bytes(b""), "not an array file"),
        (lambda path: path.write_bytes(_npy(np.arange(3.0))), "not an array file"),
        (lambda path: _zip_with(path, _header_declaring((2**40,))), "array_elements"),
        (lambda path: _zip_with(path, _header_declaring((4,)) + b"\0" * 8), "does not match"),
        (lambda path: _zip_with(path, _npy(np.array(["x"]))), "not supported"),
        (lambda path: _corrupt_crc(path), "CRC"),
        (lambda path: _truncate(path), "not an array file|cannot be read"),
        (lambda path: os.mkfifo(path), "not a regular file"),
    ],
)
def test_bad_sidecars_are_one_line_file_errors(tmp_path: Path, make, expected) -> None:
    make(tmp_path / "p.patchbay.0123456789ab.npz")
    with pytest.raises(PatchFileError, match=expected) as caught:
        load_patch(_sidecar_patch(tmp_path))
    assert "\n" not in str(caught.value) and len(str(caught.value)) <= MESSAGE_CHARS


def _zip_with(path: Path, member: bytes) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("a.value.npy", member)


def _corrupt_crc(path: Path) -> None:
    _zip_with(path, _npy(np.arange(64.0)))
    data = bytearray(path.read_bytes())
    at = data.index(_npy(np.arange(64.0))[-16:])
    data[at] ^= 0xFF  # stored uncompressed: flip a data byte
    path.write_bytes(bytes(data))


def _truncate(path: Path) -> None:
    _zip_with(path, _npy(np.arange(64.0)))
    path.write_bytes(path.read_bytes()[:200])


def test_a_sidecar_name_leading_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(PatchFileError, match="bad sidecar file name"):
        load_patch(_sidecar_patch(tmp_path, name="../x.npz"))


def test_the_total_size_of_sidecar_arrays_is_limited(tmp_path: Path) -> None:
    patch = Patch()
    patch.add_node("value.array", {"value": np.arange(20_000.0)}, node_id="a")
    save_patch(patch, tmp_path / "p.patchbay")
    set_active_limits(DEFAULT_LIMITS.replaced(sidecar_bytes=100_000))
    with pytest.raises(PatchFileError, match="sidecar_bytes"):
        load_patch(tmp_path / "p.patchbay")


# ----------------------------------------------------------------------------- runtime limits


@pytest.mark.parametrize("kind", [LazyEvaluator, FlatEvaluator])
def test_nodes_that_allocate_check_the_limits_when_they_run(kind) -> None:
    patch = Patch()
    huge = patch.add_node("array.range", {"count": 10**9})
    column = patch.add_node("value.array", {"value": np.zeros((30_000, 1))})
    row = patch.add_node("value.array", {"value": np.zeros((1, 30_000))})
    outer = patch.add_node("math.mul")
    patch.connect(column, "out", outer, "a")
    patch.connect(row, "out", outer, "b")
    for node_id in (huge, outer):
        patch.connect(node_id, "out", patch.add_node("output.value"), "in")
    evaluator = kind(patch)
    evaluator.run_frame(0.0, 0)
    for node_id in (huge, outer):
        assert evaluator.status(node_id) == "failed"
        assert "array_elements" in evaluator.error(node_id)


SHADER_MAIN = "in vec2 uv;\nout vec4 fragColor;\nvoid main() { fragColor = vec4(uv, 0.0, 1.0); }\n"


def test_a_shader_with_more_uniforms_than_the_pin_limit_fails_its_node_only(
    tmp_path: Path,
) -> None:
    uniforms = "".join(f"uniform float u{k};\n" for k in range(20))
    (tmp_path / "many.glsl").write_text(uniforms + SHADER_MAIN)
    nodes = [
        {"id": "s", "type": "gpu.shader", "values": {"source": "", "file": "many.glsl",
                                                      "u3": 0.5}},
        {"id": "o", "type": "gpu.output"},
    ]  # fmt: skip
    links = [{"from": ["s", "out"], "to": ["o", "in"]}]
    set_active_limits(DEFAULT_LIMITS.replaced(pins_per_node=8))
    patch = load_patch(write_patch(tmp_path, nodes, links))
    # The pins are not derived: the node keeps only the values it was given, and fails.
    assert set(patch.node("s").values) == {"source", "file", "resolution", "u3"}
    assert patch.value("s", "u3") == 0.5
    evaluator = LazyEvaluator(patch)
    evaluator.run_frame(0.0, 0)
    assert evaluator.status("s") == "failed"
    error = evaluator.error("s") or ""
    assert "20 uniforms" in error and "pins_per_node = 8" in error and "\n" not in error
    # The same for a source typed into the node: applied, and the node fails.
    patch.set_value("s", "source", uniforms + SHADER_MAIN)
    assert len(patch.node("s").inputs) < 20
    set_active_limits(DEFAULT_LIMITS)
    patch = load_patch(write_patch(tmp_path, nodes, links))
    assert {f"u{k}" for k in range(20)} <= set(patch.node("s").values)


def test_limits_name_unknown_limits() -> None:
    with pytest.raises(ValueError, match="unknown limit 'nodez'"):
        Limits().replaced(nodez=3)


def test_a_refused_file_name_the_node_was_loaded_with_can_come_back_by_undo(tmp_path: Path) -> None:
    nodes = [{"id": "s", "type": "gpu.shader", "values": {"source": "", "file": "/etc/passwd"}}]
    patch = load_patch(write_patch(tmp_path, nodes))
    patch.set_value("s", "file", "noise")
    patch.set_value("s", "file", "/etc/passwd")  # what an undo does: the node fails again
    assert patch.value("s", "file") == "/etc/passwd"
    with pytest.raises(PatchValueError):
        patch.set_value("s", "file", "/etc/shadow")
