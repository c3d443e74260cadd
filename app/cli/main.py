"""The `patchbay` command line.

    patchbay [edit] [FILE] [LIMITS] [LIVE] [--output [--screen N] [--fullscreen]] [--attach]
    patchbay run FILE [LIMITS] [LIVE] [--headless --frames N [--realtime]] [--fps F]
                 [--print NODE.PIN ...] [--out DIR] [--record OUT [--codec C]]
    patchbay freeze FILE -o OUT [LIMITS]
    patchbay check FILE [LIMITS]
    patchbay profile FILE [LIMITS] [--frames N] [--json] [--trace OUT.json]
    patchbay nodes [--json]
    patchbay bench [--json] [--quick]

Only the editor and windowed playback import Qt, and only when they are asked for: `check`, `nodes`,
`bench`, `profile` and headless `run` work where Qt cannot even be imported. Bad input never prints
a traceback: one line naming the problem, and exit status 2.

LIMITS: a patch file is data from a stranger, loaded within the documented resource limits
(nodes/limits.py: `patchbay check --help` lists them). For a file the person trusts, `--trust`
lifts them all, and `--limit NAME=VALUE` (repeatable) changes one, e.g. `--limit nodes=500000`.
A file beyond the limits fails `check` (exit status 2) with the limit named.

LIVE (app/engine/options/services.py): `--osc-port P` (OSC input port, 0: off), `--osc-host HOST`
(listen on another interface than 127.0.0.1), `--allow-send` (let `osc.out` nodes send).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from app.engine.options.exit_codes import EXIT_BAD_INPUT, EXIT_INTERRUPTED
from app.engine.options.limits import add_limit_arguments, apply_limits, limit_flags
from app.engine.options.services import add_service_arguments, service_flags

if TYPE_CHECKING:
    from nodes import Patch


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="patchbay", description="Node-based live patching.")
    commands = parser.add_subparsers(dest="command")

    edit = commands.add_parser("edit", help="open the editor")
    edit.add_argument("file", nargs="?")
    edit.add_argument("--output", action="store_true", help="open the output window at start")
    edit.add_argument("--screen", type=int, default=None, help="screen number for the output")
    edit.add_argument("--fullscreen", action="store_true", help="output window fullscreen")
    edit.add_argument(
        "--attach", action="store_true", help="take the patch of the engine already playing"
    )
    add_limit_arguments(edit)
    add_service_arguments(edit)

    run = commands.add_parser("run", help="play a patch (output window, or headless)")
    run.add_argument("file")
    add_limit_arguments(run)
    add_service_arguments(run)
    run.add_argument("--headless", action="store_true", help="no window: evaluate frames only")
    run.add_argument("--frames", type=int, default=None, help="number of frames to play")
    run.add_argument("--fps", type=float, default=60.0, help="frame clock rate (t = frame / fps)")
    run.add_argument(
        "--realtime",
        action="store_true",
        help="headless: start frame k at k / fps seconds on the wall clock (windows always do)",
    )
    run.add_argument("--preset", default=None, help="start on this preset of the patch")
    run.add_argument("--print", dest="prints", nargs="+", default=[], metavar="NODE.PIN")
    run.add_argument("--out", default=None, help="headless: write each gpu.output frame as PNG")
    run.add_argument("--size", default=None, help="render size WxH (default: the patch's)")
    run.add_argument(
        "--record",
        default=None,
        metavar="OUT",
        help="headless: encode the gpu.output frames into a video file (.mkv, .mov or .mp4) "
        "at --fps",
    )
    run.add_argument(
        "--codec",
        default=None,
        help="--record codec: ffv1, png, prores, prores4444, h264, mjpeg (default: from the "
        "extension: .mkv ffv1, .mov prores, .mp4 h264)",
    )
    run.add_argument("--fullscreen", action="store_true", help="output window fullscreen")
    run.add_argument("--screen", type=int, default=None, help="screen number for the output")

    freeze = commands.add_parser("freeze", help="export a frozen runtime patch")
    freeze.add_argument("file")
    freeze.add_argument("-o", "--output", required=True)
    add_limit_arguments(freeze)

    check = commands.add_parser("check", help="validate a patch file")
    check.add_argument("file")
    add_limit_arguments(check)

    profile = commands.add_parser("profile", help="play headless and list the costliest nodes")
    profile.add_argument("file")
    add_limit_arguments(profile)
    profile.add_argument("--frames", type=int, default=300, help="frames to play (default 300)")
    profile.add_argument("--fps", type=float, default=60.0, help="frame clock rate")
    profile.add_argument(
        "--budget", type=float, default=1.0 / 60.0, help="frame budget, seconds (default 1/60)"
    )
    profile.add_argument("--top", type=int, default=20, help="nodes listed (default 20)")
    profile.add_argument("--json", action="store_true", help="print one JSON document")
    profile.add_argument("--trace", default=None, metavar="OUT.json", help="write a Chrome trace")

    listing = commands.add_parser("nodes", help="list the node library")
    listing.add_argument("--json", action="store_true")

    bench = commands.add_parser("bench", help="run the benchmark suite")
    bench.add_argument("--json", nargs="?", const="-", default=None, metavar="FILE")
    bench.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    bench.add_argument(
        "--only",
        nargs="+",
        default=None,
        choices=(
            "evaluators",
            "codegen",
            "lazy",
            "live_edit",
            "rebuild",
            "freeze",
            "gpu",
            "editor",
            "autosave",
            "show",
            "subpatch",
            "load",
            "file_load",
            "memory",
            "gpu_memory",
            "controls",
            "profiler",
            "video",
            "audio",
            "instancing",
        ),
        help="run only these sections",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    known = {"edit", "run", "freeze", "check", "profile", "nodes", "bench", "-h", "--help"}
    if args and args[0] not in known:
        args.insert(0, "edit")  # `patchbay FILE` opens the editor on FILE
    options = _parser().parse_args(args)
    command = options.command or "edit"
    from nodes.limits import active_limits, set_active_limits

    limits_before = active_limits()
    try:
        from nodes import PatchError

        try:
            apply_limits(options)  # every command: the defaults unless its flags say otherwise
        except PatchError as error:
            print(f"patchbay {command}: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if command != "bench":
            _load_packs(getattr(options, "file", None))
        if command == "edit":
            from app.qt.launch import run_editor

            return run_editor(
                getattr(options, "file", None),
                engine_args=limit_flags(options) + service_flags(options),
                attach=getattr(options, "attach", False),
                output=getattr(options, "output", False),
                screen=getattr(options, "screen", None),
                fullscreen=getattr(options, "fullscreen", False),
                allow_send=getattr(options, "allow_send", False),
            )
        if command == "check":
            return _guarded(lambda: _check(options.file))
        if command == "nodes":
            return _nodes(options.json)
        if command == "run":
            from app.engine.player import run_command

            return _guarded(lambda: run_command(options))
        if command == "profile":
            from app.cli.profile import profile_command

            return _guarded(lambda: profile_command(options))
        if command == "freeze":
            from app.engine.export import freeze_command

            return _guarded(lambda: freeze_command(options.file, options.output))
        if command == "bench":
            from app.bench.main import bench_command

            return bench_command(options)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    finally:
        set_active_limits(limits_before)  # a caller in this process keeps the limits it had
    return 0


def _load_packs(patch_file: str | None) -> None:
    """Load the node packs (entry points, the user's nodes folder) before any patch is read;
    a pack that does not load is one line on stderr, and the command goes on without it."""
    from pathlib import Path

    from nodes import load_packs

    folder = Path(patch_file).absolute().parent if patch_file else None
    for problem in load_packs(folder):
        print(f"patchbay: {problem}", file=sys.stderr)


def _guarded(command: Callable[[], int]) -> int:
    """Run a command on a file; an exception nothing else caught (a bug, or a case the checks
    missed) is still one line and exit status 2, never a traceback."""
    from nodes.errors import one_line

    try:
        return command()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as error:
        print(one_line(f"patchbay: unexpected {type(error).__name__}: {error}"), file=sys.stderr)
        return EXIT_BAD_INPUT


def _check(path: str) -> int:
    from nodes import PatchError, load_patch

    try:
        patch = load_patch(path)
    except PatchError as error:
        print(error, file=sys.stderr)
        return EXIT_BAD_INPUT
    kind = "frozen patch" if patch.frozen else "patch"
    sinks = sum(1 for node in patch.nodes.values() if node.spec.sink)
    counts = f"{len(patch.nodes)} nodes, {len(patch.links)} links, {sinks} sinks"
    if patch.definitions:
        instances = sum(len(patch.instances(name)) for name in patch.definitions)
        counts += f", {len(patch.definitions)} definitions, {instances} instances"
    print(f"{path}: ok: {kind}, {counts}")
    for warning in _refused_file_names(patch) + _missing_types(patch) + _too_many_uniforms(patch):
        print(f"{path}: warning: {warning}")
    return 0


def _missing_types(patch: Patch) -> list[str]:
    """One line per node whose type is not installed (it loads as a placeholder and fails)."""
    return [
        f"{node.id}: node type {node.type_id!r} is not installed (missing pack?)"
        for container in (patch, *patch.definitions.values())
        for node in container.nodes.values()
        if node.spec.missing
    ]


def _too_many_uniforms(patch: Patch) -> list[str]:
    """One line per shader node whose shader declares more uniforms than the limit
    `pins_per_node` (it loads, and fails when it runs)."""
    from nodes.library.gpu.sources import too_many_uniforms

    found = []
    for container in (patch, *patch.definitions.values()):
        for node in container.nodes.values():
            if node.type_id == "gpu.shader":
                problem = too_many_uniforms(node.values, patch.folder)
                if problem is not None:
                    found.append(f"{node.id}: {problem}")
    return found


def _refused_file_names(patch: Patch) -> list[str]:
    """One line per file name in the patch's values that it may not use (the patch loads, and
    those nodes fail when they run)."""
    from nodes.errors import one_line
    from nodes.paths import PathRefusedError, resolve_patch_path

    found = []
    for node in patch.nodes.values():
        for pin in node.inputs:
            name = node.values.get(pin.name)
            if pin.hint != "file" or not isinstance(name, str) or not name:
                continue
            try:
                resolve_patch_path(patch.folder, name, "file")
            except PathRefusedError as refused:
                found.append(one_line(f"{node.id}.{pin.name}: {refused} (the node will fail)"))
    return found


def _nodes(as_json: bool) -> int:
    from nodes import LIBRARY, pack_of

    entries = []
    for spec in sorted(LIBRARY.values(), key=lambda s: s.id):
        entries.append(
            {
                "id": spec.id,
                "category": spec.category,
                "determinism": spec.determinism.value,
                "sink": spec.sink,
                "inputs": [
                    {
                        "name": pin.name,
                        "type": pin.type,
                        "default": _jsonable(pin.default),
                        "lazy": pin.lazy,
                        "feedback": pin.feedback,
                        "live": pin.hint == "live",
                        "doc": spec.pin_docs.get(pin.name, ""),
                    }
                    for pin in spec.inputs
                ],
                "outputs": [
                    {"name": out.name, "type": out.type, "doc": spec.pin_docs.get(out.name, "")}
                    for out in spec.outputs
                ],
                "summary": spec.summary,
                "doc": spec.doc,
                "pack": pack_of(spec.id),  # None: built in
            }
        )
    if as_json:
        print(json.dumps(entries, indent=1))
        return 0
    for entry in entries:
        pins = ", ".join(
            f"{pin['name']}:{pin['type']}" + ("~lazy" if pin["lazy"] else "")
            + ("~feedback" if pin["feedback"] else "") + ("~live" if pin["live"] else "")
            for pin in entry["inputs"]
        )  # fmt: skip
        outs = ", ".join(f"{out['name']}:{out['type']}" for out in entry["outputs"])
        sink = " sink" if entry["sink"] else ""
        pack = f" [pack {entry['pack']}]" if entry["pack"] else ""
        print(
            f"{entry['id']:<20} {entry['determinism']:<16}{sink} ({pins}) -> {outs}{pack}"
            f"  -- {entry['summary']}"
        )
    return 0


def _jsonable(value: object) -> object:
    try:
        json.dumps(value)
    except TypeError:
        return repr(value)
    return value


if __name__ == "__main__":
    sys.exit(main())
