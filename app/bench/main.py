"""`patchbay bench`: the benchmark suite, reported as medians and ratios measured in one run.

Sections:
- evaluators: per benchmark patch and size, the median frame time of a plain Python loop calling
  the same compute functions in a precomputed order (the CPython floor), the lazy evaluator, the
  flat evaluator, and the flat evaluator with caching disabled; ratios against the floor.
- codegen: on a 10,000-node HOT chain, the flat evaluator's step loop, the flat evaluator's
  generated straight-line code (evaluators/flat/codegen.py, the default) and straight-line generated
  Python with no evaluator at all (`straight_line`): median frames side by side, their ratios,
  and the build time with and without generating.
- lazy: on a 10,000-node HOT chain, lazy frames against flat ones side by side: replaying the
  last frame's schedule (profiler on and off) and walking the graph (the first frame after an
  edit); ratios to flat.
- live_edit: on a 10,000-node patch run by the dual evaluator at 60 fps, the time from a
  structural edit to the first frame that shows it and to the first flat frame, the build time,
  and the longest frame after the edit's own frame against a normal flat frame.
- rebuild: the same edit at 1,000 and 10,000 nodes, the program built from the stopped one
  (evaluators/flat/incremental.py) between frames as the engine does, or by the frame after the
  edit, against a lazy phase and a full background build, side by side; and the two builds alone.
- freeze: frozen against editable flat frames, and player start-up.
- gpu: a 10-pass 1080p chain, per-pass cost by size, readbacks per frame, pool size after 1,000
  edits (app/bench/gpu.py).
- editor: load and repaint times of 200 / 1,000 / 2,000-node patches (app/bench/qt.py).
- autosave: the longest stall of the GUI thread while a patch with a 100 MB array is autosaved,
  on the GUI thread (the old way) and by the editor session's worker (app/bench/autosave.py).
- show: the output's frame intervals while the editor is stressed, with the output in the engine
  process and in the editor's own process, and edit-to-output latency (app/bench/show.py).
- subpatch: 100 instances of a 100-node HOT definition (10,000 nodes expanded) against the same
  patch inlined by hand: flat and lazy frame times side by side, building the expanded view, and
  with the dual evaluator the time from a value edit and from a structural edit inside the
  definition to the end of the first frame in which every instance shows it.
- controls: live controls (app/bench/controls.py): latency from an OSC packet sent over loopback to
  the end of the first frame that uses it at 60 fps pacing (median and p99, ms and frames), and
  the frame time with 1,000 bound controls moving at once against the same patch without bindings.
- profiler: the flat evaluator on a 10,000-node HOT chain with its profiler on (the default: HOT
  steps timed one by one on every 32nd frame, or less often so that timing stays under 3% of the
  untimed frames), off (`profiler.enabled = False`: the frame loop as it was before there was a
  profiler), and timing every frame (what `patchbay profile` does): median and mean frame times
  side by side, and the overheads against "off" (with, for "on", the frames that timed their
  steps and a mean overhead worked out from the medians of the timed and the untimed frames,
  which preempted frames on a busy machine do not swamp); the lazy evaluator's median frame with
  the profiler on and off.
- video: `video.file` at 1080p: frame-thread time per frame (upload only) against the worker's
  decode time per frame, medians side by side (app/bench/video.py).
- audio: audio input to frame latency through the input's ring buffer (median and p99) and the
  per-frame cost of level, bands and onset on 800-sample frames (app/bench/audio.py).
- instancing: one instanced pass of 10,000 and of 1,000 circles side by side (the GL service's
  draw, and a whole frame of a patch whose gpu.instances node draws a grid of them every frame;
  app/bench/instancing.py).
- load: the flat program under load, frames back to back: a render against flat frames, an
  engine stepped back to back from a load and a big edit to its first flat frame, and a paced
  engine's frames around an edit (app/bench/load.py).
- file_load: `load_patch` of chains of 1,000 to 16,000 nodes, links listed in forward and in
  reversed order: ms per MB and per 1,000 nodes, and the ratio of ms per 1,000 nodes to the
  smallest size's (near 1 at every size when loading is linear; quadratic loading doubles it with
  every doubling).
- memory: on 1,000-node layered graphs (seed 004's generator, several seeds), the peak memory of
  `memory_order` against DFS order, BFS order and a width-8 beam search (approximate dynamic
  programme): the median and worst ratio of memory_order's peak to each, and the median time to
  compute memory_order on 1,000 and 10,000 nodes.
- gpu_memory: render targets a 50-pass GPU chain at 512x512 needs, the flat evaluator (HOT outputs
  back to the pool after their last consumer) against the lazy one (a target per node), with
  median frame times side by side (app/bench/gpu_memory.py).

Timings are for reading by people, never asserted in tests: these machines are shared and noisy.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from operator import itemgetter
from pathlib import Path
from typing import Any

from app.bench.layered_graphs import layered_graph
from app.bench.patches import CASES, hot_chain, subpatch_chains, subpatch_chains_inlined
from evaluators import (
    DualEvaluator,
    ExecutionContext,
    FlatEvaluator,
    FlatProgram,
    GraphIR,
    LazyEvaluator,
    PatchSnapshot,
    bind_compute,
    freeze,
)
from evaluators.flat.memory_order import beam_order, bfs_order, dfs_order, memory_order, peak_memory
from evaluators.graph.view import ExpandedPatch
from nodes import Patch, load_patch, save_patch

Report = dict[str, Any]


def plain_loop(patch: Patch) -> Callable[[float, int], None]:
    """The CPython floor: the compute functions called in topological order over a list of
    values, arguments gathered by one `operator.itemgetter` per call (the cheapest way Python
    has), and nothing else: no caching, no error handling, no status."""
    ctx = ExecutionContext()
    ir = GraphIR(PatchSnapshot.of(patch))
    slot_of: dict[tuple[int, str], int] = {}
    values: list[Any] = []
    order: list[tuple[Callable[..., Any], Callable[[list[Any]], Any], int]] = []
    for i in ir.topological_order():
        node = ir.nodes[i]
        linked = {edge.dst_pin: edge for edge in ir.in_edges[i]}
        inputs = []
        for pin in node.inputs:
            edge = linked.get(pin.name)
            if edge is None:
                values.append(node.values[pin.name])
                inputs.append(len(values) - 1)
            else:
                inputs.append(slot_of[(edge.src, edge.src_pin)])
        values.append(None)
        slot_of[(i, "out")] = len(values) - 1
        call = bind_compute(node.spec, ctx, node.id, tuple(p.name for p in node.inputs))
        gather = (
            itemgetter(*inputs)
            if len(inputs) > 1
            else itemgetter(slice(inputs[0], inputs[0] + 1))
            if inputs
            else itemgetter(slice(0, 0))
        )
        order.append((call, gather, len(values) - 1))

    def run(t: float, frame: int) -> None:
        ctx.t, ctx.frame = t, frame
        slots = values
        for call, gather, out in order:
            slots[out] = call(*gather(slots))

    return run


def straight_line(patch: Patch) -> tuple[Callable[[float, int], None], dict[str, Any]]:
    """Straight-line generated Python for the patch, with no evaluator at all: one statement a
    node in topological order, `v<i> = c<i>(...)`, inputs from the locals of earlier nodes or, for
    stored values, from globals; no slots, no error handling, no status. Nodes with one output
    only. Like the flat evaluator's generated code, the source holds only integers and fixed text
    (compute functions and values are globals named by node number). Returns the frame function
    and the dict of sink values it fills."""
    ctx = ExecutionContext()
    ir = GraphIR(PatchSnapshot.of(patch))
    names: dict[str, Any] = {"__builtins__": {}}
    lines = ["def run():"]
    for i in ir.topological_order():
        node = ir.nodes[i]
        if len(node.spec.outputs) != 1:
            raise ValueError(f"{node.id}: straight-line baseline takes one-output nodes only")
        linked = {edge.dst_pin: edge for edge in ir.in_edges[i]}
        args = []
        for k, pin in enumerate(node.inputs):
            edge = linked.get(pin.name)
            if edge is None:
                names[f"k{i}_{k}"] = node.values[pin.name]
                args.append(f"k{i}_{k}")
            else:
                args.append(f"v{edge.src}")
        names[f"c{i}"] = bind_compute(node.spec, ctx, node.id, tuple(p.name for p in node.inputs))
        lines.append(f"    v{i} = c{i}({', '.join(args)})")
    sinks = [i for i in ir.sinks() if ir.nodes[i].spec.outputs]
    lines.append(f"    return ({''.join(f'v{i}, ' for i in sinks)})")
    exec(compile("\n".join(lines) + "\n", "<straight line>", "exec"), names)
    generated: Callable[[], tuple[Any, ...]] = names["run"]
    sink_ids = [ir.ids[i] for i in sinks]
    outputs: dict[str, Any] = {}

    def run(t: float, frame: int) -> None:
        ctx.t, ctx.frame = t, frame
        outputs.update(zip(sink_ids, generated(), strict=True))

    return run, outputs


def _interleaved_medians(
    runs: dict[str, Callable[[float, int], None]], frames: int, warmup: int = 3
) -> dict[str, float]:
    """Median frame seconds per method, the methods taking turns frame by frame (in reverse
    order every other frame, so none always follows the same one) so that the machine's noise
    falls on all of them alike."""
    samples = _interleaved_samples(runs, frames, warmup)
    return {name: statistics.median(values) for name, values in samples.items()}


def _interleaved_samples(
    runs: dict[str, Callable[[float, int], None]], frames: int, warmup: int = 3
) -> dict[str, list[float]]:
    """Frame seconds per method, taking turns as `_interleaved_medians` does."""
    samples: dict[str, list[float]] = {name: [] for name in runs}
    order = list(runs.items())
    for frame in range(warmup + frames):
        for name, run in order if frame % 2 == 0 else order[::-1]:
            started = time.perf_counter()
            run(frame / 60.0, frame)
            if frame >= warmup:
                samples[name].append(time.perf_counter() - started)
    return samples


def _sampled_frames(samples: dict[str, list[float]], timed: set[int], warmup: int) -> Report:
    """The "on" frames that timed their HOT steps one by one (`timed`: frame numbers; the
    samples are the frames after `warmup` ones) against the others, and the mean overhead
    worked out from the medians of both kinds: the mean frame time on a machine nothing else
    holds up, which a few preempted frames would swamp in the plain mean."""
    on = samples["on"]
    sampled = [seconds for k, seconds in enumerate(on) if warmup + k in timed]
    plain = [seconds for k, seconds in enumerate(on) if warmup + k not in timed]
    row: Report = {"on_timed_frames": len(sampled)}
    if sampled and plain:
        timed_median, plain_median = statistics.median(sampled), statistics.median(plain)
        mean = (timed_median * len(sampled) + plain_median * len(plain)) / len(on)
        row["on_timed_median_ms"] = timed_median * 1e3
        row["on_untimed_median_ms"] = plain_median * 1e3
        off = statistics.median(samples["off"])
        row["on_mean_from_medians_overhead_percent"] = (mean / off - 1.0) * 100.0
    return row


def profiler_section(size: int, frames: int, lazy_frames: int) -> Report:
    """Flat frames of a HOT chain with the profiler on, off and timing every frame; and lazy
    frames (every node timed one by one anyway) with the profiler on and off."""
    patch = hot_chain(size)
    evaluators = {name: FlatEvaluator(patch) for name in ("off", "on", "every_frame")}
    evaluators["off"].observer.profiler.enabled = False
    evaluators["every_frame"].observer.profiler.sample_every = 1
    warmup = 3
    samples = _interleaved_samples(
        {name: evaluator.run_frame for name, evaluator in evaluators.items()}, frames, warmup
    )
    outputs = {evaluator.output("sink") for evaluator in evaluators.values()}
    recorded = {name: len(e.observer.profiler.frames) for name, e in evaluators.items()}
    timed = {r.frame for r in evaluators["on"].observer.profiler.frames if r.hot_times is not None}
    for evaluator in evaluators.values():
        evaluator.close()
    row: Report = {"nodes": len(patch.nodes), "frames": frames, "outputs_agree": len(outputs) == 1}
    row["frames_recorded"] = recorded
    for name, values in samples.items():
        row[f"{name}_median_ms"] = statistics.median(values) * 1e3
        row[f"{name}_mean_ms"] = statistics.fmean(values) * 1e3
    for name in ("on", "every_frame"):
        for stat in ("median", "mean"):
            ratio = row[f"{name}_{stat}_ms"] / row[f"off_{stat}_ms"]
            row[f"{name}_{stat}_overhead_percent"] = (ratio - 1.0) * 100.0
    row.update(_sampled_frames(samples, timed, warmup))
    lazy = {name: LazyEvaluator(patch) for name in ("off", "on")}
    lazy["off"].observer.profiler.enabled = False
    medians = _interleaved_medians({n: e.run_frame for n, e in lazy.items()}, lazy_frames)
    for evaluator in lazy.values():
        evaluator.close()
    row["lazy_off_median_ms"] = medians["off"] * 1e3
    row["lazy_on_median_ms"] = medians["on"] * 1e3
    row["lazy_on_median_overhead_percent"] = (medians["on"] / medians["off"] - 1.0) * 100.0
    return row


def codegen_section(size: int, frames: int) -> Report:
    """On a HOT chain: the flat evaluator running its step loop, the flat evaluator running its
    generated code (the default) and straight-line generated Python with no evaluator, median
    frames side by side, ratios, and what generating costs the build."""
    patch = hot_chain(size)
    loop, generated = FlatEvaluator(patch, codegen=False), FlatEvaluator(patch)
    baseline, baseline_outputs = straight_line(patch)
    medians = _interleaved_medians(
        {
            "straight_line": baseline,
            "flat_step_loop": loop.run_frame,
            "flat_generated": generated.run_frame,
            "plain_loop": plain_loop(patch),
        },
        frames,
    )
    outputs = {loop.output("sink"), generated.output("sink"), baseline_outputs["sink"]}
    program = generated.program
    row: Report = {"nodes": len(patch.nodes), "frames": frames, "outputs_agree": len(outputs) == 1}
    row["generated_ready"] = (
        program is not None and program.hot_code is not None and program.hot_code.ready
    )
    row.update({f"{name}_ms": seconds * 1e3 for name, seconds in medians.items()})
    row["step_loop_vs_straight"] = row["flat_step_loop_ms"] / row["straight_line_ms"]
    row["generated_vs_straight"] = row["flat_generated_ms"] / row["straight_line_ms"]
    row["generated_vs_step_loop"] = row["flat_generated_ms"] / row["flat_step_loop_ms"]
    row["build_step_loop_ms"] = loop.last_build_seconds * 1e3
    row["build_generated_ms"] = generated.last_build_seconds * 1e3
    for evaluator in (loop, generated):
        evaluator.close()
    return row


def lazy_section(size: int, frames: int) -> Report:
    """Lazy against flat frames of a HOT chain, side by side: lazy replaying its last frame (the
    steady state, profiler on and off) and lazy walking the graph every frame (as on the first
    frame after an edit, its schedule dropped before each frame).

    The walk is measured against flat in a round of its own: the megabytes it goes through
    would slow down whichever frame runs next (a replay, half of the time)."""
    patch = hot_chain(size)
    flat = FlatEvaluator(patch)
    lazy = {name: LazyEvaluator(patch) for name in ("replay", "replay_profiler_off", "walk")}
    lazy["replay_profiler_off"].observer.profiler.enabled = False
    walker = lazy["walk"]

    def walk(t: float, frame: int) -> None:
        walker._schedule = None  # what any edit does
        walker.run_frame(t, frame)

    runs = {"flat": flat.run_frame}
    runs.update(
        {f"lazy_{name}": lazy[name].run_frame for name in ("replay", "replay_profiler_off")}
    )
    medians = _interleaved_medians(runs, frames)
    walked = _interleaved_medians({"flat": flat.run_frame, "lazy_walk": walk}, frames)
    agree = len({flat.output("sink"), *(e.output("sink") for e in lazy.values())}) == 1
    for evaluator in (flat, *lazy.values()):
        evaluator.close()
    row: Report = {"nodes": len(patch.nodes), "frames": frames, "outputs_agree": agree}
    row.update({f"{name}_median_ms": seconds * 1e3 for name, seconds in medians.items()})
    row["lazy_walk_median_ms"] = walked["lazy_walk"] * 1e3
    for name in runs:
        if name != "flat":
            row[f"{name}_vs_flat"] = medians[name] / medians["flat"]
    row["lazy_walk_vs_flat"] = walked["lazy_walk"] / walked["flat"]
    return row


def evaluator_section(sizes: list[int], frames: int) -> Report:
    results: Report = {}
    for case, build in CASES.items():
        for size in sizes:
            patch = build(size)
            lazy, flat = LazyEvaluator(patch), FlatEvaluator(patch)
            uncached = FlatEvaluator(patch, caching=False)
            medians = _interleaved_medians(
                {
                    "plain_loop": plain_loop(patch),
                    "lazy": lazy.run_frame,
                    "flat": flat.run_frame,
                    "flat_uncached": uncached.run_frame,
                },
                frames,
            )
            assert lazy.output("sink") == flat.output("sink") == uncached.output("sink")
            row = {"nodes": len(patch.nodes)}
            row.update({f"{name}_ms": seconds * 1e3 for name, seconds in medians.items()})
            row["flat_vs_plain"] = row["flat_ms"] / row["plain_loop_ms"]
            row["lazy_vs_plain"] = row["lazy_ms"] / row["plain_loop_ms"]
            row["lazy_vs_flat"] = row["lazy_ms"] / row["flat_ms"]
            row["flat_cached_vs_uncached"] = row["flat_ms"] / row["flat_uncached_ms"]
            row["flat_build_ms"] = flat.last_build_seconds * 1e3
            results[f"{case}/{size}"] = row
            for evaluator in (lazy, flat, uncached):
                evaluator.close()
    return results


EDIT_WAYS = ("between_frames", "next_frame", "full")
"""How the program after a structural edit is made: built from the stopped one between frames
(`DualEvaluator.prepare`, as the engine does when the edit arrives), built from it by the next
frame, or (`incremental=False`) lazy frames while a full build runs in the background."""


def live_edit_section(
    size: int, fps: float = 60.0, debounce: float = 0.5, way: str = "between_frames"
) -> Report:
    """A structural edit on a running dual evaluator, frames paced at `fps` like the editor;
    `way`: see `EDIT_WAYS`. The edit comes right after a frame. Without incremental builds the
    full build is debounced by `debounce` seconds, so the lazy frames right after the edit (no
    build running) and the frames while the build runs are measured on the same evaluator.
    Garbage is collected between frames, as the editor does (app/qt/support/gc.py)."""
    patch = hot_chain(size)
    dual = DualEvaluator(patch, debounce=debounce, incremental=way != "full")
    period = 1.0 / fps
    frame = 0
    last_collection = time.monotonic()

    def tick() -> float:
        nonlocal frame, last_collection
        started = time.perf_counter()
        dual.run_frame(frame * period, frame)
        frame += 1
        spent = time.perf_counter() - started
        if time.monotonic() - last_collection > 1.0:
            gc.collect(1)
            last_collection = time.monotonic()
        time.sleep(max(0.0, period - spent))
        return spent

    gc.disable()
    try:
        return _measure_live_edit(patch, dual, tick, period, way == "between_frames")
    finally:
        gc.enable()
        dual.close()


def _measure_live_edit(
    patch: Patch, dual: DualEvaluator, tick: Callable[[], float], period: float, prepare: bool
) -> Report:
    deadline = time.monotonic() + 120
    while dual.mode != "flat" and time.monotonic() < deadline:
        tick()
    flat_frames = [tick() for _ in range(30)]

    before = dual.output("sink")
    builds_before = dual.builds
    tick()  # the edit comes right after a frame, its remaining period idle
    edit_started = time.perf_counter()
    last = next(link for link in patch.links if link.dst == "sink")
    patch.disconnect(*last)
    patch.add_node("math.add", {"b": 1.0}, node_id="edit")
    patch.connect(last.src, "out", "edit", "a")
    patch.connect("edit", "out", "sink", "in")
    edit_seconds = time.perf_counter() - edit_started
    prepare_seconds = 0.0
    if prepare:  # what the engine does as the edit arrives
        dual.prepare()
        prepare_seconds = time.perf_counter() - edit_started - edit_seconds
    time.sleep(max(0.0, period - (time.perf_counter() - edit_started)))
    frame_started = time.perf_counter()
    first_frame = tick()
    first_mode = str(dual.mode)
    reflected = dual.output("sink") != before
    flat_at = frame_started + first_frame  # the end of the first flat frame

    lazy_frames, during_build = [], []
    while dual.mode != "flat" and time.monotonic() < deadline:
        started = time.perf_counter()
        spent = tick()
        flat_at = started + spent
        (during_build if dual.builds > builds_before else lazy_frames).append(spent)
    after_flat = [tick() for _ in range(30)]  # the HOT code of the edit made meanwhile
    report = {
        "nodes": len(patch.nodes),
        "edit_seconds_ms": edit_seconds * 1e3,
        "rebuild_between_frames_ms": prepare_seconds * 1e3,
        "first_frame_after_edit_ms": first_frame * 1e3,
        "first_frame_after_edit_mode": first_mode,
        "edit_reflected_on_next_frame": reflected,
        "build_ms": dual.last_build_seconds * 1e3,
        "edit_to_flat_ms": (flat_at - edit_started) * 1e3,
        "lazy_frames_after_edit": len(lazy_frames) + (first_mode == "lazy"),
        "normal_lazy_frame_ms": statistics.median(lazy_frames or [0.0]) * 1e3,
        "longest_lazy_frame_without_build_ms": max(lazy_frames, default=0.0) * 1e3,
        "frames_during_build": len(during_build),
        "median_frame_during_build_ms": statistics.median(during_build or [0.0]) * 1e3,
        "longest_frame_during_build_ms": max(during_build, default=0.0) * 1e3,
        "longest_frame_after_edit_frame_ms": max([*lazy_frames, *during_build, *after_flat]) * 1e3,
        "normal_flat_frame_ms": statistics.median(flat_frames) * 1e3,
        "longest_normal_flat_frame_ms": max(flat_frames) * 1e3,  # sampled by the profiler too
        "flat_frame_after_edit_ms": statistics.median(after_flat) * 1e3,
        "swapped_to_flat": dual.mode == "flat",
    }
    flat = max(report["normal_flat_frame_ms"], 1e-9)
    report["first_frame_vs_flat"] = report["first_frame_after_edit_ms"] / flat
    report["longest_frame_after_edit_frame_vs_flat"] = (
        report["longest_frame_after_edit_frame_ms"] / flat
    )
    report["longest_frame_after_edit_frame_vs_longest_flat"] = report[
        "longest_frame_after_edit_frame_ms"
    ] / max(report["longest_normal_flat_frame_ms"], 1e-9)
    report["longest_build_frame_vs_lazy"] = report["longest_frame_during_build_ms"] / max(
        report["normal_lazy_frame_ms"], 1e-9
    )
    return report


def rebuild_section(sizes: list[int], repeats: int) -> Report:
    """The same edit at each size, made each of the `EDIT_WAYS` side by side (`repeats` runs
    each, alternating): medians of the edit, the rebuild between frames, the frame after the
    edit, edit-to-flat, the longest frame after the edit's frame, and a normal flat frame; plus
    the build alone, from scratch and from the previous program, on this thread with no frames
    running."""
    report: Report = {}
    fields = (
        "edit_seconds_ms", "rebuild_between_frames_ms", "first_frame_after_edit_ms",
        "edit_to_flat_ms", "lazy_frames_after_edit", "longest_frame_after_edit_frame_ms",
        "normal_flat_frame_ms", "flat_frame_after_edit_ms", "first_frame_vs_flat",
        "longest_normal_flat_frame_ms", "longest_frame_after_edit_frame_vs_flat",
        "longest_frame_after_edit_frame_vs_longest_flat", "build_ms",
    )  # fmt: skip
    for size in sizes:
        runs: dict[str, list[Report]] = {way: [] for way in EDIT_WAYS}
        for _ in range(repeats):
            for way, reports in runs.items():
                reports.append(live_edit_section(size, debounce=0.05, way=way))
        row: Report = {"nodes": runs["full"][0]["nodes"], "repeats": repeats}
        for way, reports in runs.items():
            for field in fields:
                row[f"{way}_{field}"] = statistics.median(float(r[field]) for r in reports)
            row[f"{way}_first_frame_modes"] = sorted({str(r["first_frame_after_edit_mode"])
                                                      for r in reports})  # fmt: skip
            row[f"{way}_all_reflected_and_flat"] = all(
                r["edit_reflected_on_next_frame"] and r["swapped_to_flat"] for r in reports
            )
        row.update(_build_times(size, max(repeats, 5)))
        report[str(size)] = row
    return report


def _build_times(size: int, repeats: int) -> Report:
    """The edit's flat program compiled on this thread with no pauses, from scratch and from the
    previous program, alternating: median ms of each, and their ratio."""
    patch = hot_chain(size)
    ctx = ExecutionContext()
    previous = FlatProgram(PatchSnapshot.of(patch), ctx)
    previous.run()
    last = next(link for link in patch.links if link.dst == "sink")
    patch.disconnect(*last)
    patch.add_node("math.add", {"b": 1.0}, node_id="edit")
    patch.connect(last.src, "out", "edit", "a")
    patch.connect("edit", "out", "sink", "in")
    snapshot = PatchSnapshot.of(patch)
    times: dict[str, list[float]] = {"full": [], "derived": []}
    for _ in range(repeats):
        for name, seconds in times.items():
            gc.collect()
            started = time.perf_counter()
            built = FlatProgram(snapshot, ctx, previous=previous if name == "derived" else None)
            seconds.append(time.perf_counter() - started)
            built.release()
    row: Report = {
        f"{name}_build_alone_ms": statistics.median(t) * 1e3 for name, t in times.items()
    }
    row["full_vs_derived_build"] = row["full_build_alone_ms"] / row["derived_build_alone_ms"]
    return row


def subpatch_section(instances: int, body_size: int, frames: int, edits: int) -> Report:
    """See the module note. Edits alternate (the last mul of the body set to 0 and back; a
    `math.add` of 1000 put before the outlet and taken out), each made on a dual evaluator
    running flat, frames back to back; an edit is shown when every instance's output is what
    it makes (0, or at least 1000)."""
    patch = subpatch_chains(instances, body_size)
    by_hand = subpatch_chains_inlined(instances, body_size)
    builds = []
    for _ in range(3):
        started = time.perf_counter()
        view = ExpandedPatch(patch)
        builds.append(time.perf_counter() - started)
        view.close()
    runs = {
        "inlined_flat": FlatEvaluator(by_hand),
        "subpatch_flat": FlatEvaluator(patch),
        "inlined_lazy": LazyEvaluator(by_hand),
        "subpatch_lazy": LazyEvaluator(patch),
    }
    # Flat frames side by side, then lazy ones: a lazy frame between two flat ones would leave
    # the processor's caches cold for the flat frame after it. Flat frames are short: many more.
    medians = _interleaved_medians(
        {name: runs[name].run_frame for name in ("inlined_flat", "subpatch_flat")}, frames * 10
    )
    medians.update(
        _interleaved_medians(
            {name: runs[name].run_frame for name in ("inlined_lazy", "subpatch_lazy")}, frames
        )
    )
    sinks = [f"s{k}" for k in range(instances)]
    agree = all(runs["subpatch_flat"].output(s) == runs["inlined_flat"].output(s) for s in sinks)
    for evaluator in runs.values():
        evaluator.close()
    report: Report = {
        "nodes_in_view": len(view.nodes),
        "nodes_inlined_by_hand": len(by_hand.nodes),
        "view_build_ms": statistics.median(builds) * 1e3,
        "outputs_agree": agree,
    }
    report.update({f"{name}_ms": seconds * 1e3 for name, seconds in medians.items()})
    report["flat_vs_inlined"] = medians["subpatch_flat"] / medians["inlined_flat"]
    report["lazy_vs_inlined"] = medians["subpatch_lazy"] / medians["inlined_lazy"]
    report.update(_definition_edits(patch, instances, edits))
    return report


def _definition_edits(patch: Patch, instances: int, edits: int) -> Report:
    body = patch.definition("chain")
    last_mul = next(n for n in reversed(body.nodes) if body.nodes[n].type_id == "math.mul")
    dual = DualEvaluator(patch, debounce=0.0)
    frame = 0

    def tick() -> float:
        nonlocal frame
        started = time.perf_counter()
        dual.run_frame(frame / 60.0, frame)
        frame += 1
        return time.perf_counter() - started

    def until_flat() -> None:
        deadline = time.monotonic() + 120
        while dual.mode != "flat" and time.monotonic() < deadline:
            tick()
            time.sleep(0.005)
        tick()

    def shown(edit: Callable[[], None], check: Callable[[float], bool]) -> tuple[float, int]:
        """Seconds from the edit to the end of the first frame that shows it everywhere, and
        how many frames that took."""
        started = time.perf_counter()
        edit()
        for count in range(1, 601):
            tick()
            if all(check(dual.output(f"i{k}", "y")) for k in range(instances)):
                return time.perf_counter() - started, count
        raise RuntimeError("an edit inside the definition never showed in every instance")

    value, structural, frames_needed, modes = [], [], [], []
    try:
        until_flat()
        for _ in range(edits):
            modes.append(dual.mode)
            seconds, count = shown(lambda: body.set_value(last_mul, "b", 0.0), lambda y: y == 0)
            value.append(seconds)
            frames_needed.append(count)
            body.set_value(last_mul, "b", 1.0001)
            until_flat()

            def insert() -> None:
                body.disconnect(last_mul, "out", "outy", "in")
                body.add_node("math.add", {"b": 1000.0}, node_id="extra")
                body.connect(last_mul, "out", "extra", "a")
                body.connect("extra", "out", "outy", "in")

            modes.append(dual.mode)
            seconds, count = shown(insert, lambda y: y >= 1000.0)
            structural.append(seconds)
            frames_needed.append(count)
            body.remove_node("extra")
            body.connect(last_mul, "out", "outy", "in")
            until_flat()
    finally:
        dual.close()
    return {
        "edits_started_flat": all(mode == "flat" for mode in modes),
        "value_edit_to_frame_ms": statistics.median(value) * 1e3,
        "structural_edit_to_frame_ms": statistics.median(structural) * 1e3,
        "frames_until_shown_max": max(frames_needed),
        "background_build_ms": dual.last_build_seconds * 1e3,
    }


def freeze_section(quick: bool) -> Report:
    """What freezing buys: frame time (interleaved medians) and work of the editable patch under
    the flat evaluator beside the frozen one, and player start-up (process start to the first
    printed frame of `patchbay run --headless`) on the bundled examples."""
    frames = 20 if quick else 100
    cases = []
    for name, build in CASES.items():
        for size in [1000] if quick else [1000, 10000]:
            patch = build(size)
            started = time.perf_counter()
            frozen = freeze(patch)
            freeze_seconds = time.perf_counter() - started
            editable, played = FlatEvaluator(patch), FlatEvaluator(frozen)
            medians = _interleaved_medians(
                {"editable": editable.run_frame, "frozen": played.run_frame}, frames, warmup=1
            )
            cases.append(
                {
                    "case": name,
                    "nodes": len(patch.nodes),
                    "frozen_nodes": len(frozen.nodes),
                    "freeze_ms": freeze_seconds * 1e3,
                    "editable_frame_ms": medians["editable"] * 1e3,
                    "frozen_frame_ms": medians["frozen"] * 1e3,
                    "editable_nodes_run": editable.nodes_run,
                    "frozen_nodes_run": played.nodes_run,
                }
            )
            editable.close()
            played.close()
    startup = []
    examples = resources.files("resources") / "examples"
    with tempfile.TemporaryDirectory() as folder:
        for entry in sorted(examples.iterdir(), key=lambda item: item.name):
            if not entry.name.endswith(".patchbay"):
                continue
            with resources.as_file(entry) as source:
                patch = load_patch(source)
                sink = next(node.id for node in patch.nodes.values() if node.spec.sink)
                frozen_path = Path(folder) / entry.name
                save_patch(freeze(patch, source_path=source), frozen_path)
                repeats = 3 if quick else 7
                startup.append(
                    {
                        "example": entry.name,
                        "editable_startup_ms": _startup_seconds(source, sink, repeats) * 1e3,
                        "frozen_startup_ms": _startup_seconds(frozen_path, sink, repeats) * 1e3,
                    }
                )
    return {"cases": cases, "startup": startup}


def _startup_seconds(path: Path, sink: str, repeats: int) -> float:
    """Median seconds from starting `patchbay run --headless` to reading its first frame."""
    command = [
        sys.executable,
        "-m",
        "app.cli.main",
        "run",
        str(path),
        "--headless",
        "--frames",
        "1",
    ]
    command += ["--print", f"{sink}.out"]
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        with subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        ) as process:
            assert process.stdout is not None
            first_line = process.stdout.readline()
            times.append(time.perf_counter() - started)
            process.communicate()
        if not first_line or process.returncode != 0:
            raise RuntimeError(f"{path.name} did not play")
    return statistics.median(times)


def _chain_file(folder: Path, size: int, reversed_links: bool) -> Path:
    """A saved chain of `size` math nodes (values, positions, links), its links in file order
    or reversed."""
    patch = Patch()
    previous = patch.add_node("value.float", {"value": 1.0}, (0.0, 0.0), node_id="n0")
    for index in range(1, size):
        node_id = patch.add_node("math.add", {"b": 0.5}, (index * 80.0, 0.0), node_id=f"n{index}")
        patch.connect(previous, "out", node_id, "a")
        previous = node_id
    path = folder / f"chain_{size}_{'reversed' if reversed_links else 'forward'}.patchbay"
    save_patch(patch, path)
    if reversed_links:
        document = json.loads(path.read_text(encoding="utf-8"))
        document["links"].reverse()
        path.write_text(json.dumps(document, indent=1), encoding="utf-8")
    return path


def file_load_section(sizes: list[int], repeats: int) -> Report:
    """Median `load_patch` time per file size and link order; see the module note."""
    results: Report = {}
    with tempfile.TemporaryDirectory() as folder:
        for order in ("forward", "reversed"):
            first_per_node = None
            for size in sizes:
                path = _chain_file(Path(folder), size, order == "reversed")
                samples = []
                for _ in range(repeats):
                    gc.collect()
                    started = time.perf_counter()
                    load_patch(path)
                    samples.append(time.perf_counter() - started)
                seconds = statistics.median(samples)
                megabytes = path.stat().st_size / 1e6
                per_thousand = seconds * 1e3 / (size / 1000)
                first_per_node = first_per_node or per_thousand
                results[f"{order}/{size}"] = {
                    "nodes": size,
                    "mb": megabytes,
                    "load_ms": seconds * 1e3,
                    "ms_per_mb": seconds * 1e3 / megabytes,
                    "ms_per_1000_nodes": per_thousand,
                    "vs_smallest": per_thousand / first_per_node,
                }
    for size in sizes:
        forward, backward = results[f"forward/{size}"], results[f"reversed/{size}"]
        backward["vs_forward"] = backward["load_ms"] / forward["load_ms"]
    return results


def memory_section(
    seeds: int, nodes: int = 1000, timed_sizes: tuple[int, ...] = (1000, 10000), beam_width: int = 8
) -> Report:
    """Peak memory of `memory_order` against the baselines; see the module note. A ratio below
    1 means memory_order needs less memory than the baseline."""
    ratios: dict[str, list[float]] = {"dfs": [], "bfs": [], "beam": []}
    for seed in range(seeds):
        graph = layered_graph(nodes, seed)
        args = (graph.successors, graph.output_bytes, graph.scratch_bytes)
        peak = peak_memory(memory_order(*args), *args)
        baselines = {
            "dfs": dfs_order(graph.successors),
            "bfs": bfs_order(graph.successors),
            "beam": beam_order(*args, width=beam_width),
        }
        for name, order in baselines.items():
            ratios[name].append(peak / peak_memory(order, *args))
    results: Report = {"graphs": seeds, "nodes": nodes, "beam_width": beam_width}
    for name, values in ratios.items():
        results[f"vs_{name}"] = {
            "median_ratio": statistics.median(values),
            "worst_ratio": max(values),
            "best_ratio": min(values),
        }
    for size in timed_sizes:
        graph = layered_graph(size, 0)
        args = (graph.successors, graph.output_bytes, graph.scratch_bytes)
        samples = []
        for _ in range(3):
            started = time.perf_counter()
            memory_order(*args)
            samples.append(time.perf_counter() - started)
        results[f"memory_order_ms/{size}"] = statistics.median(samples) * 1e3
    return results


def _gpu_section(quick: bool) -> Report:
    from app.bench.gpu import gpu_bench

    return gpu_bench(quick)


def _editor_section(quick: bool) -> Report:
    """Editor load and repaint times; offscreen unless a display is there."""
    if not os.environ.get("DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from app.bench.qt import editor_bench

    return editor_bench((200,) if quick else (200, 1000, 2000))


def _autosave_section(quick: bool) -> Report:
    from app.bench.autosave import autosave_bench

    return autosave_bench(quick)


def _load_section(quick: bool) -> Report:
    from app.bench.load import load_section

    return load_section(2000 if quick else 10000, 300 if quick else 2200, 1 if quick else 3)


def _show_section(quick: bool) -> Report:
    from app.bench.show import show_bench

    return show_bench(quick)


def _controls_section(quick: bool) -> Report:
    from app.bench.controls import controls_bench

    return controls_bench(quick)


def _video_section(quick: bool) -> Report:
    from app.bench.video import video_bench

    return video_bench(quick)


def _audio_section(quick: bool) -> Report:
    from app.bench.audio import audio_bench

    return audio_bench(quick)


def _instancing_section(quick: bool) -> Report:
    from app.bench.instancing import instancing_bench

    return instancing_bench(quick)


def _gpu_memory_section(quick: bool) -> Report:
    from app.bench.gpu_memory import gpu_memory_bench

    return gpu_memory_bench(quick)


def _optional_section(name: str, run: Callable[[], Report]) -> Report:
    try:
        return run()
    except Exception as error:  # a broken section is reported, the others still run
        return {"error": f"{type(error).__name__}: {error}"}


def run_suite(quick: bool, only: list[str] | None = None) -> Report:
    sizes = [1000] if quick else [1000, 10000]
    frames = 5 if quick else 21
    sections: dict[str, Callable[[], Report]] = {
        "evaluators": lambda: evaluator_section(sizes, frames),
        "codegen": lambda: codegen_section(1000 if quick else 10000, 21 if quick else 101),
        "lazy": lambda: lazy_section(1000 if quick else 10000, 5 if quick else 21),
        "live_edit": lambda: live_edit_section(2000 if quick else 10000),
        "rebuild": lambda: rebuild_section([1000] if quick else [1000, 10000], 1 if quick else 3),
        "freeze": lambda: freeze_section(quick),
        "gpu": lambda: _gpu_section(quick),
        "editor": lambda: _editor_section(quick),
        "autosave": lambda: _autosave_section(quick),
        "show": lambda: _show_section(quick),
        "subpatch": lambda: subpatch_section(100, 100, 5 if quick else 21, 2 if quick else 5),
        "load": lambda: _load_section(quick),
        "file_load": lambda: file_load_section([1000, 4000] if quick else [1000, 4000, 16000], 3),
        "memory": lambda: memory_section(3 if quick else 10),
        "gpu_memory": lambda: _gpu_memory_section(quick),
        "controls": lambda: _controls_section(quick),
        "profiler": lambda: profiler_section(
            1000 if quick else 10000, 64 if quick else 320, 8 if quick else 40
        ),
        "video": lambda: _video_section(quick),
        "audio": lambda: _audio_section(quick),
        "instancing": lambda: _instancing_section(quick),
    }
    report: Report = {"python": sys.version.split()[0], "quick": quick}
    for name, run in sections.items():
        if only and name not in only:
            continue
        print(f"running {name} ...", file=sys.stderr, flush=True)
        report[name] = _optional_section(name, run)
    return report


def _print_table(report: Report) -> None:
    evaluators = report.get("evaluators", {})
    if evaluators and "error" not in evaluators:
        print("evaluators (median frame, ms; ratio to the plain loop)")
        print(f"  {'case':<24}{'plain':>9}{'lazy':>9}{'flat':>9}{'uncached':>10}"
              f"{'flat/plain':>12}{'lazy/flat':>11}{'cached/uncached':>17}")  # fmt: skip
        for case, row in evaluators.items():
            print(
                f"  {case:<24}{row['plain_loop_ms']:>9.3f}{row['lazy_ms']:>9.3f}"
                f"{row['flat_ms']:>9.3f}{row['flat_uncached_ms']:>10.3f}"
                f"{row['flat_vs_plain']:>12.2f}{row['lazy_vs_flat']:>11.2f}"
                f"{row['flat_cached_vs_uncached']:>17.3f}"
            )
    for name, section in report.items():
        if name in ("evaluators", "python", "quick"):
            continue
        print(f"{name}:")
        _print_nested(section, "  ")


def _shown(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _print_nested(value: Any, indent: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list):
                flat = isinstance(item, dict) and not any(
                    isinstance(v, dict | list) for v in item.values()
                )
                if flat:
                    pairs = ", ".join(f"{k}={_shown(v)}" for k, v in item.items())
                    print(f"{indent}{key}: {pairs}")
                else:
                    print(f"{indent}{key}:")
                    _print_nested(item, indent + "  ")
            else:
                print(f"{indent}{key}: {_shown(item)}")
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                print(indent + ", ".join(f"{k}={_shown(v)}" for k, v in item.items()))
            else:
                print(f"{indent}{_shown(item)}")
    else:
        print(f"{indent}{_shown(value)}")


def bench_command(options: argparse.Namespace) -> int:
    report = run_suite(options.quick, options.only)
    if options.json == "-":
        print(json.dumps(report, indent=1, default=str))
    else:
        _print_table(report)
        if options.json:
            with open(options.json, "w", encoding="utf-8") as handle:
                json.dump(report, handle, indent=1, default=str)
    return 0
