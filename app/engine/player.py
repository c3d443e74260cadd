"""Playing a patch without the editor: headless frames (values, PNG frames) or the output window.

Headless playback runs the engine (app.engine.engine, as shows do, without its process) at a fixed
clock (t = frame / fps) and prints requested values one line per frame; `PATCHBAY_FRAME_LOG` logs
each frame. Frames run as fast as they can, or with `--realtime` paced to the wall clock (frame k
starts k / fps seconds after the first), so live inputs can drive a headless player. Running as
fast as they can, frames are a render: a node waiting for background work (a video frame being
decoded, a file loading) waits for it (`ExecutionContext.ready`, up to `RENDER_WAIT_S`), so
every render of a patch gives the same frames; nodes are bypassed for slowness only past
`RENDER_NODE_BUDGET_S`. Paced to the wall clock, nothing waits, as in a show. It never
imports Qt: a frozen patch plays on a machine where PySide6 and NodeGraphQt cannot be imported.
Patches with GPU nodes (or `--out`) get a standalone EGL context from the GL service; `--out DIR`
reads the `gpu.output` texture back every frame and encodes the PNG files on a worker thread
(`GLFrameWriter`), so encoding overlaps the next frames; each output of the patch's `outputs`
setting is mapped from it on the GPU and written to `DIR/<output name>/` the same way. An `--out`
folder or frame file that cannot be written is reported in one line (exit status 2).
`--record OUT [--codec C]` reads the same texture back and encodes it into a video file
(evaluators/services/recording.py), checked before the first frame (a refused codec or container
writes nothing) and renamed into place only when the run has played all its frames.

Without `--headless` the patch plays in the engine process (app.qt.engine_host) with its output
window open and no editor, on a real-time clock, supervised from this process: an engine that dies
or hangs is restarted (a hung node bypassed). An editor can attach to it (`patchbay edit --attach`).
q, Ctrl+Q, or Esc outside fullscreen, in the window end the show, and so do SIGINT (Ctrl+C in the
terminal) and SIGTERM to this process: the engine quits cleanly and the player exits 0.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from app.engine.engine import Engine, FrameLog
from app.engine.options.exit_codes import EXIT_BAD_INPUT, EXIT_NO_GL, EXIT_NODE_FAILED
from app.engine.options.limits import limit_flags
from app.engine.options.services import service_flags, service_options
from app.engine.reports.patch_info import output_node, parse_size, uses_gpu
from evaluators import DualEvaluator, ExpandedPatch, NodeStatus
from evaluators.run.memory_budget import MemoryBudgetError
from nodes import Patch, PatchError, PresetPlayer, changes_nothing, load_patch
from nodes.document.outputs import outputs_from

#: How long a render waits for one piece of a node's background work, and the time a node may
#: take in one rendered frame before it is bypassed as hung.
RENDER_WAIT_S = 20.0
RENDER_NODE_BUDGET_S = 120.0


def _format(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, np.ndarray):
        return np.array2string(value, precision=6, separator=",", threshold=16).replace("\n", "")
    return str(value)


def failed_marker(error: str | None) -> str:
    """What `--print` shows instead of the value of a node that failed this frame (its last good
    value stands in the patch, but a script must not mistake it for a result)."""
    return f"<failed: {error or 'unknown error'}>"


def _printed(evaluator: DualEvaluator, node_id: str, pin: str) -> tuple[str, bool]:
    """`node.pin=value` for one `--print` target this frame, and whether the node failed."""
    if evaluator.status(node_id) == NodeStatus.FAILED:
        return f"{node_id}.{pin}={failed_marker(evaluator.error(node_id))}", True
    return f"{node_id}.{pin}={_format(evaluator.output(node_id, pin))}", False


def _parse_prints(patch: Patch, prints: list[str]) -> list[tuple[str, str]]:
    """(node, pin) of each `NODE.PIN`; a node inside an instance is named by its path
    (`blob1/lfo3.out`)."""
    targets = []
    graph = ExpandedPatch(patch)
    try:
        for item in prints:
            node_id, _, pin = item.partition(".")
            pin = pin or "out"
            instance = graph.nodes.get(node_id)
            if instance is None:
                raise PatchError(f"--print {item}: no node {node_id!r} in the patch")
            if instance.spec.output_index(pin) is None:
                raise PatchError(f"--print {item}: node {node_id!r} has no output {pin!r}")
            targets.append((node_id, pin))
    finally:
        graph.close()
    return targets


def play_headless(
    patch: Patch,
    frames: int,
    fps: float,
    prints: list[str],
    out=None,
    gpu: Any = None,
    out_dir: str | Path | None = None,
    failed: set[str] | None = None,
    services: dict[str, Any] | None = None,
    realtime: bool = False,
    clock: Callable[[], float] = time.perf_counter,
    sleep: Callable[[float], None] = time.sleep,
    record: Any = None,
) -> DualEvaluator:
    """Play `frames` frames at a fixed clock and print the requested values, one line a frame:
    the engine (app.engine.engine) with no editor, stepped by a fixed clock instead of real time.
    A printed node that failed in a frame is printed as `node.pin=<failed: ERROR>` in that
    frame (see `failed_marker`) and added to `failed` when given.

    With `gpu` (a GLService) GPU nodes render; with `out_dir` too, the `gpu.output` texture of
    every frame is written as `frame_00000.png`, ... (a frame without a texture writes nothing);
    a folder or file that cannot be written raises FrameWriteError. Each output of the patch's
    `outputs` setting (nodes/document/outputs.py) is drawn from that texture on the GPU
    (evaluators/services/gl_outputs.py) and written as `<out_dir>/<name>/frame_00000.png`, ...
    at the output's size. `services` are the options
    of the live-input services (app.engine.options.services: `--osc-port`, `--allow-send`).

    With `gpu` and `record` (a RecordingPlan, evaluators/services/recording.py) the `gpu.output`
    texture of every frame is read back and encoded into a video file at `fps` on a worker thread
    (`VideoRecorder`). A render waits for room in the encoder's queue (`block=True`: a render
    never loses a frame); with `realtime` a frame the encoder cannot take is dropped and counted,
    and the count is reported on stderr at the end. The file appears under its name only when
    every frame is in; a failed run leaves no file and keeps the one that was there.

    With `realtime` frame k starts `k / fps` seconds after the first on `clock` (waiting with
    `sleep`); a late frame starts at once, and the patch clock stays t = frame / fps.
    """
    targets = _parse_prints(patch, prints)
    sink = output_node(patch)
    if out_dir is not None and sink is None:
        raise PatchError("--out needs a gpu.output node in the patch")
    if record is not None and sink is None:
        raise PatchError("--record needs a gpu.output node in the patch")
    engine = Engine(
        patch, gpu=gpu, frame_log=FrameLog.from_environment(), services=services,
        build_first=realtime,  # a render builds below, once it watches what it prints
    )  # fmt: skip
    if not realtime:  # a render: each frame shows what its time asks for
        engine.ctx.render_wait = RENDER_WAIT_S
        engine.ctx.time_budget = max(engine.ctx.time_budget, RENDER_NODE_BUDGET_S)
    evaluator = engine.evaluator
    evaluator.watch(node_id for node_id, _ in targets)
    if not realtime:  # a render has no edit to show lazily: flat from its first frame
        evaluator.build_now()
    writer = None
    mapper: Any = None  # a GLOutputMapper when the patch has outputs: each gets its own folder
    output_writers: list[tuple[Any, Any]] = []
    if out_dir is not None and gpu is not None:
        from evaluators.services.gl import FrameWriteError, GLFrameWriter

        writer = GLFrameWriter(gpu, out_dir)
        outputs = outputs_from(patch.settings)
        if outputs:
            from evaluators.services.gl_outputs import GLOutputMapper

            mapper = GLOutputMapper(gpu)
            for output in outputs:  # few frames queued each: there may be 16 large ones
                folder = Path(out_dir) / output.name
                output_writers.append((output, GLFrameWriter(gpu, folder, max_pending=2)))
    recorder: Any = None  # a VideoRecorder, made at the first frame: it takes that frame's size

    def write_frame() -> None:
        nonlocal recorder
        if sink is None or (writer is None and record is None) or gpu is None:
            return
        texture = evaluator.output(sink)
        if texture is None:
            return
        if writer is not None:
            writer.write(texture, engine.frame)
        for output, output_writer in output_writers:
            try:
                picture = mapper.picture(output, texture)
            except MemoryBudgetError as error:  # one line, as a frame that cannot be written
                raise FrameWriteError(f"output {output.name}: {error}") from error
            try:
                output_writer.write(picture, engine.frame)
            finally:
                gpu.release(picture)
        if record is not None:
            if recorder is None:
                from evaluators.services.recording import VideoRecorder

                recorder = VideoRecorder(record, fps, texture.size)
            # a render waits for the encoder (it must not lose a frame); a show never does
            recorder.submit(gpu.readback(texture), engine.frame, block=not realtime)

    finished = False
    try:
        start = clock()
        for frame in range(frames):
            if realtime:
                wait = start + frame / fps - clock()
                if wait > 0:
                    sleep(wait)
            engine.step(frame / fps, write_frame)
            if targets:
                printed = [_printed(evaluator, node_id, pin) for node_id, pin in targets]
                if failed is not None:
                    failed.update(
                        n for (n, _), (_, bad) in zip(targets, printed, strict=True) if bad
                    )
                values = " ".join(text for text, _ in printed)
                print(f"{frame} {values}", file=out or sys.stdout)
        finished = True
    finally:
        try:
            if writer is not None:
                writer.close()
            for _, output_writer in output_writers:
                output_writer.close()
        finally:
            if mapper is not None:
                mapper.close()
            if recorder is not None:
                _finish_recording(recorder, finished)
            elif record is not None and finished:
                print(f"patchbay run: --record {record.path}: no frame to record, nothing written",
                      file=sys.stderr)  # fmt: skip
        if engine.frame_log is not None:
            engine.frame_log.close()
    return evaluator


def _finish_recording(recorder: Any, finished: bool) -> None:
    """Finish the video file of a run that played all its frames (and report what the encoder
    dropped), or remove the temporary file of one that did not."""
    if not finished:
        recorder.abort()
        return
    path = recorder.close()
    if recorder.dropped:
        print(
            f"patchbay run: --record {path}: {recorder.dropped} of {recorder.frames_submitted} "
            "frame(s) dropped (the encoder could not keep up)",
            file=sys.stderr,
        )


def _standalone_gl(size: tuple[int, int]) -> Any:
    from evaluators.services.gl import GLService

    return GLService.standalone(size)


def run_command(options: argparse.Namespace) -> int:
    try:
        patch = load_patch(options.file)
        if options.size:
            patch.update_settings(resolution=list(parse_size(options.size)))
        if options.preset is not None:  # before the first frame; the engine does it again
            PresetPlayer(patch).jump(options.preset)
            if changes_nothing(patch, patch.presets[options.preset]):
                print(
                    f"warning: preset {options.preset!r} holds no value of this patch: "
                    "it changes nothing",
                    file=sys.stderr,
                )
        if options.fps <= 0:
            raise PatchError("--fps must be positive")
        if options.codec is not None and options.record is None:
            raise PatchError("--codec needs --record OUT")
        if options.headless:
            if options.frames is None or options.frames < 0:
                raise PatchError("--headless needs --frames N (N >= 0)")
            return _run_headless(patch, options)
        if options.frames is not None and options.frames < 0:
            raise PatchError("--frames must not be negative")
        if options.record is not None:
            raise PatchError(
                "--record records a headless render for now: add --headless --frames N"
            )
    except PatchError as error:
        print(error, file=sys.stderr)
        return EXIT_BAD_INPUT
    from app.engine.client import EngineProcess, default_state_dir, supervise

    arguments = ["--file", str(options.file), "--output", "--player", "--fps", str(options.fps)]
    arguments += limit_flags(options) + service_flags(options)
    if options.frames is not None:
        arguments += ["--frames", str(options.frames)]
    if options.size:
        arguments += ["--size", options.size]
    if options.preset is not None:
        arguments += ["--preset", options.preset]
    if options.screen is not None:
        arguments += ["--screen", str(options.screen)]
    if options.fullscreen:
        arguments.append("--fullscreen")
    engine = EngineProcess(default_state_dir() / "engine", arguments, log_to_terminal=True)
    return supervise(engine)


def _run_headless(patch: Patch, options: argparse.Namespace) -> int:
    record = None
    record_errors: tuple[type[Exception], ...] = ()
    if options.record is not None:  # checked before anything runs: a refusal writes nothing
        from evaluators.services.recording import RecordingError, recording_plan

        record_errors = (RecordingError,)
        try:
            record = recording_plan(options.record, options.codec)
        except RecordingError as error:
            print(f"patchbay run: {error}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if output_node(patch) is None:
            print("--record needs a gpu.output node in the patch", file=sys.stderr)
            return EXIT_BAD_INPUT
    gl = None
    if options.out is not None or record is not None or uses_gpu(patch):
        size = tuple(patch.settings.get("resolution", (640, 360)))
        try:
            gl = _standalone_gl((int(size[0]), int(size[1])))
        except Exception as error:  # no EGL: values still play, GPU nodes report it
            if options.out is not None or record is not None:
                flag = "--out" if options.out is not None else "--record"
                print(f"{flag} needs OpenGL: {error}", file=sys.stderr)
                return EXIT_NO_GL
            print(f"warning: no OpenGL, GPU nodes will fail: {error}", file=sys.stderr)
    write_errors: tuple[type[Exception], ...] = record_errors
    if gl is not None:  # the GL service is imported already
        from evaluators.services.gl import FrameWriteError

        write_errors += (FrameWriteError,)
    evaluator = None
    failed: set[str] = set()
    try:
        evaluator = play_headless(patch, options.frames, options.fps, options.prints, gpu=gl,
                                  out_dir=options.out, failed=failed,
                                  services=service_options(options),
                                  realtime=options.realtime, record=record)  # fmt: skip
    except write_errors as error:  # --out or --record cannot be written: one line, no traceback
        print(f"patchbay run: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    finally:
        if evaluator is not None:
            evaluator.close()
            evaluator.ctx.release_all()  # node states, and the worker pool of file reads
        if gl is not None:
            gl.close()
    if failed:
        names = ", ".join(sorted(failed))
        print(f"patchbay run: printed node(s) failed: {names}", file=sys.stderr)
        return EXIT_NODE_FAILED
    return 0
