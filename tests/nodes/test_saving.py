"""Saving: temporary files, permissions, values that cannot round-trip, and saves killed midway."""

from __future__ import annotations

import datetime
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from nodes import Patch, PatchError, PatchValueError, load_patch, save_patch
from nodes.errors import MESSAGE_CHARS
from nodes.fileformat.format import remove_stale_temporary_files
from nodes.limits import DEFAULT_LIMITS, active_limits, set_active_limits
from tests.waiting import read_line

ROOT = Path(__file__).resolve().parents[2]


def patch_with(value: object) -> Patch:
    patch = Patch()
    patch.add_node("value.any", {"value": value}, node_id="v")
    return patch


def temporary_files(folder: Path) -> list[str]:
    return sorted(entry.name for entry in folder.iterdir() if ".tmp-" in entry.name)


@pytest.mark.parametrize(
    "value",
    [
        np.array(["text"]),
        np.array([1 + 2j]),
        np.array([datetime.datetime(2020, 1, 1)], dtype="datetime64[s]"),
        np.zeros(3, dtype=[("a", "f4"), ("b", "i2")]),
        np.array([object()], dtype=object),
        np.arange(3.0).astype(">f8"),
        {1, 2},
        "lone surrogate \ud800",
        {"$array": 5},
        {"$array": {"dtype": "float64", "shape": [1], "data": [1.0]}},
    ],
    ids=[
        "unicode",
        "complex",
        "datetime",
        "structured",
        "object",
        "big_endian",
        "set",
        "surrogate",
        "array_key_number",
        "array_key_spec",
    ],
)
def test_values_that_cannot_round_trip_are_refused_before_anything_is_written(
    tmp_path: Path, value: object
) -> None:
    path = tmp_path / "p.patchbay"
    save_patch(patch_with(1.0), path)
    before = sorted(tmp_path.iterdir()), path.read_bytes()
    with pytest.raises(PatchValueError, match=r"^v\.value: ") as caught:
        save_patch(patch_with(value), path)
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, ValueError)  # what the editor's Save and autosave catch
    assert (sorted(tmp_path.iterdir()), path.read_bytes()) == before


def test_a_dict_holding_the_array_key_among_others_round_trips(tmp_path: Path) -> None:
    value = {"$array": {"npz": "x.npz", "key": "k"}, "other": 1}
    save_patch(patch_with(value), tmp_path / "p.patchbay")
    assert load_patch(tmp_path / "p.patchbay").value("v", "value") == value
    assert value == {"$array": {"npz": "x.npz", "key": "k"}, "other": 1}  # not filled in


@pytest.fixture
def limits_back() -> Iterator[None]:
    before = active_limits()
    yield
    set_active_limits(before)


def _chain(count: int) -> Patch:
    patch = Patch()
    for k in range(count):
        patch.add_node("math.add", node_id=f"n{k}")
    for k in range(count - 1):
        patch.connect(f"n{k}", "out", f"n{k + 1}", "a")
    return patch


def _with_resolution(width: int) -> Patch:
    patch = patch_with(1.0)
    patch.settings["resolution"] = [width, 10]  # set directly, as older code might
    return patch


REFUSED_BY_LIMITS = {
    "int": ({"int_digits": 5}, lambda: patch_with(10**7), r"^v\.value: an integer of 8 digits"),
    "nested_int": ({"int_digits": 5}, lambda: patch_with({"a": [1, -(10**9)]}), r"^v\.value\.a\["),
    "string": ({"string_chars": 10}, lambda: patch_with("x" * 20), r"^v\.value: text of 20 "),
    "key": ({"string_chars": 10}, lambda: patch_with({"k" * 20: 1}), r"^v\.value: a key of 20 "),
    "nodes": ({"nodes": 2}, lambda: _chain(3), r"^nodes: 3 is above the limit nodes = 2"),
    "links": ({"links": 1}, lambda: _chain(3), r"^links: 2 is above the limit links = 1"),
    "file_bytes": ({"file_bytes": 2000}, lambda: patch_with("x" * 3000), r"^file: [0-9]+ bytes: "),
    "sidecar": ({"sidecar_bytes": 10**5}, lambda: patch_with(np.zeros(20_000)), r"^arrays: "),
    "resolution": ({"texture_side": 8192}, lambda: _with_resolution(9000), r"^settings\.resol"),
}  # fmt: skip


@pytest.mark.parametrize(("limit", "patch", "expected"), REFUSED_BY_LIMITS.values(),
                         ids=REFUSED_BY_LIMITS.keys())  # fmt: skip
def test_a_patch_the_limits_would_not_load_is_refused_before_anything_is_written(
    tmp_path: Path, limits_back: None, limit: dict, patch: Any, expected: str
) -> None:
    path = tmp_path / "p.patchbay"
    save_patch(patch_with(1.0), path)
    before = sorted(tmp_path.iterdir()), path.read_bytes()
    refused = patch()
    set_active_limits(DEFAULT_LIMITS.replaced(**limit))
    with pytest.raises(PatchError, match=expected) as caught:
        save_patch(refused, path)
    message = str(caught.value)
    assert "\n" not in message and len(message) <= MESSAGE_CHARS
    (name, value), *_ = limit.items()
    assert f"above the limit {name} = {value} (a file with it would not load)" in message
    assert isinstance(caught.value, ValueError)  # what the editor's Save and autosave catch
    assert (sorted(tmp_path.iterdir()), path.read_bytes()) == before
    # Under limits that allow it, the same patch saves and loads: the two agree.
    set_active_limits(DEFAULT_LIMITS.replaced(**{name: value * 100}))
    save_patch(refused, path)
    assert set(load_patch(path).nodes) == set(refused.nodes)


def test_saving_normalises_the_resolution_as_an_edit_would(tmp_path: Path) -> None:
    patch = patch_with(1.0)
    patch.settings["resolution"] = (320.0, 200)
    save_patch(patch, tmp_path / "p.patchbay")
    assert load_patch(tmp_path / "p.patchbay").settings["resolution"] == [320, 200]
    assert patch.settings["resolution"] == (320.0, 200)  # the patch itself is left alone


def test_saving_keeps_the_permissions_of_the_file_and_its_sidecar(tmp_path: Path) -> None:
    path = tmp_path / "p.patchbay"
    patch = patch_with(np.arange(100_000.0))
    sidecar = save_patch(patch, path)
    assert sidecar is not None
    os.chmod(path, 0o664)
    os.chmod(sidecar, 0o664)
    patch.set_value("v", "value", np.arange(100_001.0))  # a new sidecar
    new_sidecar = save_patch(patch, path)
    assert new_sidecar is not None and new_sidecar != sidecar
    assert stat.S_IMODE(path.stat().st_mode) == 0o664
    assert stat.S_IMODE(new_sidecar.stat().st_mode) == 0o664


def test_a_new_file_gets_the_umask_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        save_patch(patch_with(1.0), tmp_path / "p.patchbay")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "p.patchbay").stat().st_mode) == 0o644


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_temporary_files_of_killed_saves_are_removed(tmp_path: Path) -> None:
    dead = _dead_pid()
    stale = [
        tmp_path / f".p.patchbay.tmp-{dead}-0123456789abcdef",
        tmp_path / f".p.patchbay.0123456789ab.npz.tmp-{dead}-0123456789abcdef",
    ]
    other = tmp_path / f".q.patchbay.tmp-{dead}-0123456789abcdef"
    live = tmp_path / f".p.patchbay.tmp-{os.getppid()}-0123456789abcdef"  # a running process
    for made in (*stale, other, live):
        made.write_bytes(b"partial")
    save_patch(patch_with(1.0), tmp_path / "p.patchbay")
    assert temporary_files(tmp_path) == sorted([other.name, live.name])
    assert remove_stale_temporary_files(tmp_path) == 1  # the editor's clean-up on start
    assert temporary_files(tmp_path) == [live.name]


SAVER = """
import sys
import numpy as np
from nodes import Patch, save_patch

path = sys.argv[1]
patches = []
for size in (70_000, 90_000):
    patch = Patch()
    patch.add_node("value.array", {"value": np.full(size, float(size))}, node_id="v")
    patches.append(patch)
print("ready", flush=True)
turn = 0
while True:
    save_patch(patches[turn % 2], path)
    turn += 1
"""


def test_a_save_killed_at_any_moment_leaves_a_whole_file(tmp_path: Path) -> None:
    path = tmp_path / "p.patchbay"
    save_patch(patch_with(0.0), path)
    for delay in (0.0, 0.003, 0.007, 0.011, 0.017, 0.023, 0.031, 0.043, 0.059, 0.071):
        saver = subprocess.Popen(
            [sys.executable, "-c", SAVER, str(path)], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        line = read_line(saver, "the saver process to start")
        assert line == "ready\n", f"the saver process did not start ({line!r})"
        time.sleep(delay)  # somewhere in the middle of some save
        saver.send_signal(signal.SIGKILL)
        saver.wait()
        loaded = load_patch(path)  # the old or the new file, whole
        value = loaded.value("v", "value")
        if isinstance(value, np.ndarray):
            assert value.size in (70_000, 90_000) and np.all(value == value.size)
    save_patch(load_patch(path), path)
    assert temporary_files(tmp_path) == []
    sidecars = [entry for entry in tmp_path.iterdir() if entry.suffix == ".npz"]
    assert len(sidecars) <= 1


NUMBER_DTYPES = st.sampled_from(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float16", "float32", "float64"]
)  # fmt: skip
ANY_DTYPES = st.one_of(
    NUMBER_DTYPES.map(np.dtype),
    hnp.byte_string_dtypes(),
    hnp.unicode_string_dtypes(),
    hnp.complex_number_dtypes(),
    hnp.datetime64_dtypes(),
    hnp.timedelta64_dtypes(),
    hnp.floating_dtypes(endianness=">"),
    hnp.array_dtypes(allow_subarrays=True),
)
ARRAYS = ANY_DTYPES.flatmap(
    lambda dtype: hnp.arrays(
        dtype, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6)
    )
) | NUMBER_DTYPES.flatmap(lambda dtype: hnp.arrays(dtype, st.integers(9000, 9100)))  # sidecars


@settings(max_examples=150, deadline=None)
@given(array=ARRAYS)
def test_any_array_that_saves_loads_back_equal(array: np.ndarray) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.patchbay"
        try:
            save_patch(patch_with(array), path)
        except PatchValueError:
            assert not path.exists()
            return
        loaded = load_patch(path).value("v", "value")
    assert isinstance(loaded, np.ndarray)
    assert loaded.dtype == array.dtype and loaded.shape == array.shape
    assert np.array_equal(loaded, array, equal_nan=array.dtype.kind == "f")


@pytest.mark.parametrize("far", [2e6, float("nan"), float("inf")])
def test_a_node_placed_where_no_canvas_can_show_it_is_refused_at_save(
    tmp_path: Path, far: float
) -> None:
    patch = Patch()
    patch.add_node("math.add", node_id="lost")
    patch.set_position("lost", (0.0, far))
    with pytest.raises(PatchError, match=r"^lost\.pos: position y = .* \(a file with it would not"):
        save_patch(patch, tmp_path / "p.patchbay")
    assert list(tmp_path.iterdir()) == []
    patch.set_position("lost", (-1e6, 1e6))  # the edge of the range saves and loads
    save_patch(patch, tmp_path / "p.patchbay")
    assert load_patch(tmp_path / "p.patchbay").nodes["lost"].pos == (-1e6, 1e6)


def test_a_definition_node_placed_where_no_canvas_can_show_it_is_refused_at_save(
    tmp_path: Path,
) -> None:
    from nodes import patch_from_dict

    body = {"nodes": [{"id": "a", "type": "math.add"}], "links": []}
    document = {"format": "patchbay", "version": 2, "nodes": [], "links": [],
                "definitions": {"blob": body}}  # fmt: skip
    patch = patch_from_dict(document)
    patch.definition("blob").set_position("a", (3e6, 0.0))
    with pytest.raises(PatchError, match=r"^definitions\.blob\.nodes\[0\]\.pos: position x"):
        save_patch(patch, tmp_path / "p.patchbay")
