"""A corpus of hostile and corrupt patch files, made on demand in a folder (never stored in git).

Each case is a `HostileCase`: a name, a function that writes the patch (and whatever it refers to)
into an empty folder and returns the patch's path, the command it is run with (`check`, or `run`
headless for two frames) and the exit status expected: 2 (bad input, one line) or 0 (the file
loads; a node that may not do what the file asks fails on its own). The cases are the ones seen
in the wild (issue 9): hangs (super-linear parsing, FIFOs), memory bombs (huge arrays, textures, zip
bombs, headers declaring terabytes), tracebacks (odd JSON) and reads outside the patch's folder.

`python -m tests.hostile_files FOLDER` writes the whole corpus, one subfolder per case, for trying
the cases by hand.
"""

from __future__ import annotations

import io
import json
import os
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

NPZ = "p.patchbay.0123456789ab.npz"


@dataclass(frozen=True)
class HostileCase:
    name: str
    make: Callable[[Path], Path]
    command: str = "check"  # or "run": `patchbay run --headless --frames 2`
    exit_code: int = 2
    says: str = ""  # a fragment the one-line message must contain (exit code 2 only)
    extra: tuple[str, ...] = ()  # more command-line arguments


def document(nodes: list[Any], links: list[Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"format": "patchbay", "version": 1, "nodes": nodes, "links": links or [], **extra}


def write(folder: Path, content: dict[str, Any] | str | bytes) -> Path:
    path = folder / "p.patchbay"
    if isinstance(content, dict):
        content = json.dumps(content)
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def shader_file(name: str) -> dict[str, Any]:
    return {"id": "s", "type": "gpu.shader", "values": {"source": "", "file": name}}


def with_output(node: dict[str, Any]) -> dict[str, Any]:
    return document(
        [node, {"id": "o", "type": "gpu.output"}],
        [{"from": [node["id"], "out"], "to": ["o", "in"]}],
    )


def shader_source(source: str) -> Callable[[Path], Path]:
    node = {"id": "s", "type": "gpu.shader", "values": {"source": source}}
    return lambda folder: write(folder, with_output(node))


def shader_named(name: str, prepare: Callable[[Path], None] | None = None):
    def make(folder: Path) -> Path:
        if prepare is not None:
            prepare(folder)
        return write(folder, with_output(shader_file(name)))

    return make


def image_named(name: str, prepare: Callable[[Path], None] | None = None):
    def make(folder: Path) -> Path:
        if prepare is not None:
            prepare(folder)
        return write(
            folder, with_output({"id": "i", "type": "gpu.image", "values": {"path": name}})
        )

    return make


def fifo(name: str) -> Callable[[Path], None]:
    return lambda folder: os.mkfifo(folder / name)


def symlink(name: str, target: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).symlink_to(target)


def secret_outside(folder: Path) -> None:
    (folder.parent / "secret.glsl").write_text("uniform float leaked;")
    (folder / "link.glsl").symlink_to(folder.parent / "secret.glsl")


def array_value(spec: Any) -> Callable[[Path], Path]:
    node = {"id": "a", "type": "value.array", "values": {"value": {"$array": spec}}}
    return lambda folder: write(folder, document([node]))


def sidecar_patch(folder: Path, key: str = "a.value") -> Path:
    node = {
        "id": "a",
        "type": "value.array",
        "values": {"value": {"$array": {"npz": NPZ, "key": key}}},
    }
    return write(
        folder,
        document(
            [node, {"id": "o", "type": "output.value"}], [{"from": ["a", "out"], "to": ["o", "in"]}]
        ),
    )


def npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def npy_header(shape: tuple[int, ...], descr: str = "<f8") -> bytes:
    buffer = io.BytesIO()
    header = {"descr": descr, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(buffer, header)
    return buffer.getvalue()


def sidecar(write_sidecar: Callable[[Path], None], key: str = "a.value"):
    def make(folder: Path) -> Path:
        write_sidecar(folder / NPZ)
        return sidecar_patch(folder, key)

    return make


def zip_members(members: dict[str, bytes], method: int = zipfile.ZIP_STORED):
    def write_zip(path: Path) -> None:
        with zipfile.ZipFile(path, "w", method) as archive:
            for name, data in members.items():
                archive.writestr(name, data)

    return write_zip


def zip_bomb(referenced: bool) -> Callable[[Path], None]:
    """A sidecar of a few MB holding an array member of 1 GiB of zeros (deflated ~1000:1), plus
    a small one; the patch refers to the bomb or only to the small one."""

    def write_zip(path: Path) -> None:
        size = 1024**3
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
            archive.writestr("a.value.npy", npy_bytes(np.arange(4.0)))
            header = npy_header(((size - 128) // 8,))
            with archive.open("bomb.npy", "w", force_zip64=True) as member:
                member.write(header)
                chunk = bytes(16 * 1024 * 1024)
                left = (size - 128) // 8 * 8
                while left:
                    member.write(chunk[: min(left, len(chunk))])
                    left -= min(left, len(chunk))

    def make(folder: Path) -> Path:
        write_zip(folder / NPZ)
        return sidecar_patch(folder, "bomb" if referenced else "a.value")

    return make


def bad_crc(path: Path) -> None:
    data = npy_bytes(np.arange(64.0))
    zip_members({"a.value.npy": data})(path)
    raw = bytearray(path.read_bytes())
    raw[raw.index(data[-16:])] ^= 0xFF
    path.write_bytes(bytes(raw))


def truncated(path: Path) -> None:
    zip_members({"a.value.npy": npy_bytes(np.arange(64.0))})(path)
    path.write_bytes(path.read_bytes()[:300])


def chain(count: int, reverse: bool) -> Callable[[Path], Path]:
    nodes = [{"id": f"n{k}", "type": "math.add"} for k in range(count)]
    links = [{"from": [f"n{k}", "out"], "to": [f"n{k + 1}", "a"]} for k in range(count - 1)]
    return lambda folder: write(folder, document(nodes, links[::-1] if reverse else links))


def nodes_of(*entries: dict[str, Any], links: list[Any] | None = None):
    return lambda folder: write(folder, document(list(entries), links))


def _placed(pos: list[float], node_id: str = "a") -> dict[str, Any]:
    return {"id": node_id, "type": "math.add", "pos": pos}


def overflowing_position(folder: Path) -> Path:
    """A position written as 1e400, which JSON reads as infinity."""
    text = json.dumps(document([_placed([0, 0]), _placed([0, 0], "b")]))
    return write(folder, text.replace('"pos": [0, 0]}]', '"pos": [1e400, 0]}]'))


def big_int_text(folder: Path) -> Path:
    node = '{"id": "r", "type": "array.range", "values": {"count": ' + "7" * 5000 + "}}"
    return write(
        folder, '{"format": "patchbay", "version": 1, "links": [], "nodes": [' + node + "]}"
    )


def outer_product(folder: Path) -> Path:
    column = {"$array": {"dtype": "float64", "shape": [30000, 1], "data": [[0.5]] * 30000}}
    row = {"$array": {"dtype": "float64", "shape": [1, 30000], "data": [[0.5] * 30000]}}
    nodes = [
        {"id": "c", "type": "value.array", "values": {"value": column}},
        {"id": "r", "type": "value.array", "values": {"value": row}},
        {"id": "m", "type": "math.mul"},
        {"id": "o", "type": "output.value"},
    ]
    links = [
        {"from": ["c", "out"], "to": ["m", "a"]},
        {"from": ["r", "out"], "to": ["m", "b"]},
        {"from": ["m", "out"], "to": ["o", "in"]},
    ]
    return write(folder, document(nodes, links))


def huge_solids(folder: Path) -> Path:
    nodes: list[Any] = [{"id": "o", "type": "gpu.output"}]
    links = []
    for k in range(8):
        nodes.append({"id": f"s{k}", "type": "gpu.solid", "values": {"resolution": [16384, 16384]}})
        nodes.append({"id": f"p{k}", "type": "gpu.preview"})
        links.append({"from": [f"s{k}", "out"], "to": [f"p{k}", "in"]})
    return write(folder, document(nodes, links))


def escape_ids(folder: Path) -> Path:
    nasty = "\x1b[2J\x1b[31mevil\nnext"
    return write(
        folder,
        document([{"id": nasty, "type": "value.float"}, {"id": nasty, "type": "value.float"}]),
    )


def huge_string(folder: Path) -> Path:
    return write(
        folder,
        document([{"id": "f", "type": "debug.fail", "values": {"message": "\x1b" * 2_000_000}}]),
    )


def over_file_limit(folder: Path) -> Path:
    filler = {"id": "f", "type": "value.any", "values": {"value": ["x" * 1000] * 17_000}}
    return write(folder, document([filler]))


def many_nodes(folder: Path) -> Path:
    return write(folder, document([{"id": f"n{k}", "type": "value.float"} for k in range(200)]))


def deep_json(folder: Path) -> Path:
    depth = 100_000
    value = "[" * depth + "]" * depth
    text = '{"format": "patchbay", "version": 1, "links": [], "meta": ' + value + ', "nodes": []}'
    return write(folder, text)


def texture_from_huge_array(folder: Path) -> Path:
    spec = {"dtype": "uint8", "shape": [1, 70000], "data": [[0] * 70000]}
    node = {"id": "g", "type": "gpu.from_array", "values": {}}
    source = {"id": "a", "type": "value.array", "values": {"value": {"$array": spec}}}
    return write(
        folder,
        document(
            [source, node, {"id": "o", "type": "gpu.output"}],
            [
                {"from": ["a", "out"], "to": ["g", "array"]},
                {"from": ["g", "out"], "to": ["o", "in"]},
            ],
        ),
    )


def nested_definitions(levels: int, width: int, count: int = 1) -> Callable[[Path], Path]:
    """Definitions d0..d{levels}, each holding `width` instances of the one before (a few
    kilobytes that expand to width**levels nodes), in `count` separate chains."""

    def make(folder: Path) -> Path:
        definitions: dict[str, Any] = {}
        for chain in range(count):
            definitions[f"c{chain}d0"] = {"nodes": [{"id": "n", "type": "math.add"}], "links": []}
            for level in range(1, levels + 1):
                inner = {"definition": f"c{chain}d{level - 1}"}
                nodes = [{"id": f"i{k}", "type": "subpatch", "values": inner} for k in range(width)]
                definitions[f"c{chain}d{level}"] = {"nodes": nodes, "links": []}
        top = [
            {
                "id": f"top{chain}",
                "type": "subpatch",
                "values": {"definition": f"c{chain}d{levels}"},
            }
            for chain in range(count)
        ]
        return write(folder, document(top, version=2, definitions=definitions))

    return make


def definitions_in_a_cycle(folder: Path) -> Path:
    definitions = {
        name: {
            "nodes": [{"id": "s", "type": "subpatch", "values": {"definition": inner}}],
            "links": [],
        }
        for name, inner in (("a", "b"), ("b", "c"), ("c", "a"))
    }
    return write(folder, document([], version=2, definitions=definitions))


def good_patch(folder: Path) -> Path:
    (folder / "shaders").mkdir()
    (folder / "shaders" / "tint.glsl").write_text(
        "#version 330\nin vec2 uv;\nout vec4 fragColor;\nuniform vec4 tint;\n"
        "void main() { fragColor = tint; }\n"
    )
    nodes = [
        {"id": "s", "type": "gpu.shader", "values": {"source": "", "file": "shaders/tint.glsl"}},
        {"id": "o", "type": "gpu.output"},
        {"id": "r", "type": "array.range", "values": {"count": 1000}},
        {"id": "v", "type": "output.value"},
    ]
    links = [{"from": ["s", "out"], "to": ["o", "in"]}, {"from": ["r", "out"], "to": ["v", "in"]}]
    return write(folder, document(nodes, links))


RUN = "run"

CASES: tuple[HostileCase, ...] = (
    # Hangs
    HostileCase(
        "shader_source_spaces", shader_source("uniform float a =" + " " * 200_000), exit_code=0
    ),
    HostileCase(
        "shader_source_spaces_run", shader_source("uniform float a =" + " " * 200_000), RUN, 0
    ),
    HostileCase(
        "shader_source_nested", shader_source("uniform float a = vec3(" * 20_000), exit_code=0
    ),
    HostileCase("shader_source_comments", shader_source("/*" * 200_000), exit_code=0),
    HostileCase("shader_file_fifo", shader_named("x.glsl", fifo("x.glsl")), exit_code=0),
    HostileCase("shader_file_fifo_run", shader_named("x.glsl", fifo("x.glsl")), RUN, 0),
    HostileCase("sidecar_fifo", sidecar(lambda path: os.mkfifo(path)), says="not a regular file"),
    HostileCase("image_fifo_run", image_named("x.png", fifo("x.png")), RUN, 0),
    HostileCase("links_reversed_8000", chain(8000, reverse=True), exit_code=0),
    HostileCase("links_forward_8000", chain(8000, reverse=False), exit_code=0),
    HostileCase("patch_file_fifo", lambda folder: _fifo_patch(folder), says="not a regular file"),
    HostileCase("deep_json", deep_json, says="nested too deeply"),
    # Memory
    HostileCase(
        "array_range_1e9_run",
        nodes_of(
            {"id": "r", "type": "array.range", "values": {"count": 10**9}},
            {"id": "o", "type": "output.value"},
            links=[{"from": ["r", "out"], "to": ["o", "in"]}],
        ),
        RUN,
        0,
    ),
    HostileCase("outer_product_run", outer_product, RUN, 0),
    HostileCase("gpu_solid_16384_run", huge_solids, RUN, 0),
    HostileCase("texture_from_huge_array_run", texture_from_huge_array, RUN, 0),
    HostileCase("zip_bomb_unreferenced", zip_bomb(referenced=False), exit_code=0),
    HostileCase("zip_bomb_referenced", zip_bomb(referenced=True), says="array_elements"),
    HostileCase(
        "npz_header_8_tib",
        sidecar(zip_members({"a.value.npy": npy_header((2**40,))})),
        says="array_elements",
    ),
    HostileCase(
        "inline_array_8_tib",
        array_value({"dtype": "float64", "shape": [2**40], "data": []}),
        says="array_elements",
    ),
    HostileCase(
        "resolution_16384",
        lambda folder: write(folder, document([], settings={"resolution": [16384, 16384]})),
        says="texture_side",
    ),
    HostileCase(
        "outputs_16384",
        lambda folder: write(
            folder, document([], settings={"outputs": [{"name": "a", "size": [16384, 16384]}]})
        ),
        says="texture_side",
    ),
    HostileCase(
        "outputs_name_escapes",
        lambda folder: write(folder, document([], settings={"outputs": [{"name": "../../x"}]})),
        says="settings.outputs[0].name",
    ),
    HostileCase(
        "outputs_mesh_million_points",
        lambda folder: write(
            folder,
            document(
                [],
                settings={
                    "outputs": [
                        {
                            "name": "a",
                            "mesh": {"cols": 64, "rows": 64, "points": [[0.5, 0.5]] * 1_000_000},
                        }
                    ]
                },
            ),
        ),
        says="4096 points",
    ),
    HostileCase("over_file_limit", over_file_limit, says="file_bytes"),
    HostileCase("huge_string", huge_string, says="string_chars"),
    HostileCase(
        "many_nodes_limited", many_nodes, says="nodes = 100", extra=("--limit", "nodes=100")
    ),
    HostileCase("many_nodes_trusted", many_nodes, exit_code=0, extra=("--trust",)),
    HostileCase("definitions_10_of_10_deep", nested_definitions(10, 10), says="limit nodes"),
    HostileCase("definitions_10_of_10_deep_run", nested_definitions(10, 10), RUN, 2, "limit nodes"),
    HostileCase("definitions_3000_deep", nested_definitions(3000, 1), says="definitions deep"),
    HostileCase("definitions_5000_chains", nested_definitions(49, 1, 100), exit_code=0),
    HostileCase("definitions_in_a_cycle", definitions_in_a_cycle, says="contain itself"),
    # Tracebacks
    HostileCase("array_as_list", array_value(["dtype", "float64"]), says="must be an object"),
    HostileCase(
        "array_as_dict_keys", array_value({"npz": {"a": 1}, "key": ["k"]}), says="npz and key"
    ),
    HostileCase(
        "array_unicode_dtype",
        array_value({"dtype": "<U4", "shape": [1], "data": ["a"]}),
        says="not supported",
    ),
    HostileCase(
        "array_subarray_dtype",
        array_value({"dtype": "(100000000,)f8", "shape": [1], "data": [1]}),
        says="not supported",
    ),
    HostileCase("int_5000_digits", big_int_text, says="int_digits"),
    HostileCase("sidecar_empty", sidecar(lambda path: path.write_bytes(b"")), says="not an array"),
    HostileCase(
        "sidecar_plain_npy",
        sidecar(lambda path: path.write_bytes(npy_bytes(np.ones(3)))),
        says="not an array",
    ),
    HostileCase("sidecar_truncated", sidecar(truncated)),
    HostileCase("sidecar_bad_crc", sidecar(bad_crc), says="CRC"),
    HostileCase(
        "sidecar_object_array",
        sidecar(zip_members({"a.value.npy": npy_header((3,), "|O")})),
        says="not supported",
    ),
    HostileCase(
        "sidecar_name_escapes",
        lambda folder: write(
            folder,
            document(
                [
                    {
                        "id": "a",
                        "type": "value.array",
                        "values": {"value": {"$array": {"npz": "../x.npz", "key": "k"}}},
                    }
                ]
            ),
        ),
        says="bad sidecar file name",
    ),
    HostileCase("shader_file_nosuchuser", shader_named("~nosuchuser/x.glsl"), exit_code=0),
    HostileCase("shader_file_nosuchuser_run", shader_named("~nosuchuser/x.glsl"), RUN, 0),
    HostileCase("shader_file_dev_zero_run", shader_named("/dev/zero"), RUN, 0),
    HostileCase("not_utf8", lambda folder: write(folder, b"\xff\xfe{}"), says="not UTF-8"),
    HostileCase("escape_sequences_in_ids", escape_ids, says="\\x1b[2J"),
    HostileCase(
        "cycle",
        nodes_of(
            {"id": "a", "type": "math.add"},
            {"id": "b", "type": "math.add"},
            links=[
                {"from": ["a", "out"], "to": ["b", "a"]},
                {"from": ["b", "out"], "to": ["a", "a"]},
            ],
        ),
        says="cycle",
    ),
    # Positions no canvas can show (NaN hides a node, 1e308 leaves an empty-looking view)
    HostileCase("pos_1e308", nodes_of(_placed([0, 1e308])), says="position y = 1e+308 is beyond"),
    HostileCase("pos_nan", nodes_of(_placed([float("nan"), 0])), says="x = nan is not a finite"),
    HostileCase("pos_inf", nodes_of(_placed([0, float("-inf")])), says="y = -inf is not a finite"),
    HostileCase("pos_1e400", overflowing_position, says="node 'b': position x = inf"),
    HostileCase("pos_beyond_limit", nodes_of(_placed([0, -2e6])), says="MAX_POSITION"),
    HostileCase("pos_at_limit", nodes_of(_placed([1e6, -1e6])), exit_code=0),
    HostileCase(
        "pos_nan_in_definition",
        lambda folder: write(
            folder,
            {
                **document([]),
                "version": 2,
                "definitions": {"blob": {"nodes": [_placed([float("nan"), 0])], "links": []}},
            },
        ),
        says="definitions.blob.nodes[0].pos: node 'a': position x = nan",
    ),
    # Reads outside the folder
    HostileCase("shader_file_absolute_run", shader_named("/etc/passwd"), RUN, 0),
    HostileCase("shader_file_home_run", shader_named("~/.bashrc"), RUN, 0),
    HostileCase("shader_file_proc_environ_run", shader_named("/proc/self/environ"), RUN, 0),
    HostileCase("shader_file_dotdot_run", shader_named("../secret.glsl", secret_outside), RUN, 0),
    HostileCase("shader_file_symlink_out_run", shader_named("link.glsl", secret_outside), RUN, 0),
    HostileCase(
        "shader_file_symlink_dev_zero",
        shader_named("z.glsl", symlink("z.glsl", "/dev/zero")),
        exit_code=0,
    ),
    HostileCase("image_absolute_run", image_named("/etc/passwd"), RUN, 0),
    HostileCase("image_symlink_out_run", image_named("link.glsl", secret_outside), RUN, 0),
    # A good patch, to show the harness lets one through
    HostileCase("good_patch", good_patch, exit_code=0),
    HostileCase("good_patch_run", good_patch, RUN, 0),
)


def _fifo_patch(folder: Path) -> Path:
    path = folder / "p.patchbay"
    os.mkfifo(path)
    return path


def main(folder: str) -> int:
    for case in CASES:
        where = Path(folder) / case.name / "patch"
        where.mkdir(parents=True)
        print(case.make(where))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
