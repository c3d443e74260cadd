"""Freezing: turn an editable patch into a runtime patch that plays the same and does less.

`freeze(patch)` returns a new Patch (the source is never touched) in which:

- every sink keeps its id, type and stored values, so `output(sink, "out")` reads the same thing;
- every node that runs every frame (HOT) and that a sink needs keeps its id too, so node state
  keyed by path (LFO phase, noise seeds, frame delays) is the same as in the editable patch;
- everything else a sink needs is "fixed" (CONST, or USER with the user inputs frozen at their
  current values): it is evaluated once, now, by a LazyEvaluator over a copy of the fixed part, and
  each output that crosses into the kept part becomes a value constant (`value.float`,
  `value.array`, `value.any`) that takes the place (and, when it can, the id) of its producer;
- an output is baked only if the file format gives it back exactly (same type, same value): plain
  floats, ints, bools, strings, None and numeric numpy arrays up to `threshold_bytes`. Anything
  else (larger arrays, tuples, numpy scalars, and every node with a `texture` output or fed by one,
  which is never evaluated here since GPU resources live in a GL context) keeps its producer as a
  node; it is still CONST in the frozen patch, so the flat evaluator runs it once at start;
- a `logic.switch` whose index ends up constant keeps only the link of the branch it picks: the
  other branches were never pulled in the editable patch either, so they are dropped unless
  something else needs them;
- nodes no sink needs are dropped; nodes are written in topological order, and `meta` records
  `frozen`, the patchbay version, the source's sha256, the flat program's schedule and a summary.

Equivalence is the contract: for the same clock, a fresh run of the frozen patch gives the sink
outputs of a fresh run of the editable one, frame by frame. A fixed node that fails yields its pin
defaults in a fresh run, so that is what gets baked. Known limits: a fixed node that reports
`Deferred` while freezing (background loading) is kept as a node rather than baked; baked values
are those of a fresh run, not last good values an editor session may still show.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from evaluators.flat.program import FlatProgram
from evaluators.graph.analysis import analyze
from evaluators.graph.ir import EAGER, FEEDBACK, LAZY, Edge, GraphIR, PatchSnapshot
from evaluators.graph.patch_graph import PatchGraph
from evaluators.graph.view import inlined
from evaluators.lazy import LazyEvaluator
from evaluators.run.context import HOT, ExecutionContext
from nodes import Determinism, Patch, patch_to_dict
from nodes.library.core.basics import switch_branch
from nodes.types import is_picture, types_compatible

Progress = Callable[[float, str], None]
"""Called as `progress(fraction, stage)` with fraction rising from 0.0 to 1.0."""

DEFAULT_THRESHOLD_BYTES = 1 << 20
_ALL_KINDS = frozenset({EAGER, LAZY, FEEDBACK})
_CHUNK = 256  # fixed outputs evaluated per progress report


def patchbay_version() -> str:
    from importlib import metadata  # here, not at the top: it costs players ~20 ms of startup

    try:
        return metadata.version("patchbay")
    except metadata.PackageNotFoundError:
        return "unknown"


def storable(value: Any, threshold_bytes: int) -> bool:
    """True if `value` can be stored in a value constant and read back exactly from a file."""
    kind = type(value)
    if kind in (float, int, bool, str) or value is None:
        return True
    if kind is np.ndarray:
        return value.dtype.kind in "biuf" and value.nbytes <= threshold_bytes
    return False


def _constant_type(value: Any) -> str:
    if type(value) is float and not math.isnan(value):
        return "value.float"
    if type(value) is np.ndarray:
        return "value.array"
    return "value.any"


def _stored_bytes(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, float):
        return 8
    return len(json.dumps(value))


class _FixedValues:
    """Evaluates the fixed part of a patch on demand, in a private copy with its own context."""

    def __init__(self, patch: PatchGraph, members: list[str]) -> None:
        self.patch = Patch()
        self.patch.allow_path_ids = True
        self.patch.settings = json.loads(json.dumps(patch.settings))
        for node_id in members:  # in topological order, so every link's source already exists
            instance = patch.nodes[node_id]
            self.patch.add_node(instance.type_id, instance.values, node_id=node_id)
            for link in patch.links_into(node_id).values():
                self.patch.connect(*link)
        self.evaluator = LazyEvaluator(self.patch)
        self.done: set[str] = set()

    def evaluate(self, node_ids: Iterable[str]) -> None:
        todo = [node_id for node_id in dict.fromkeys(node_ids) if node_id not in self.done]
        if todo:
            self.evaluator.watch(todo)
            self.evaluator.evaluate_frame()
            self.done.update(todo)

    def settled(self, node_id: str) -> bool:
        """Evaluated to a final result (cached: not deferred, nor fed by something deferred)."""
        self.evaluate([node_id])
        return node_id in self.evaluator.ctx.cache

    def value(self, node_id: str, pin: str) -> Any:
        self.evaluate([node_id])
        return self.evaluator.output(node_id, pin)

    def close(self) -> None:
        self.evaluator.close()


@dataclass
class _Plan:
    """What the frozen patch is made of, in terms of the source graph's node indices."""

    kept: dict[int, list[Edge]] = field(default_factory=dict)  # node -> the in-edges it keeps
    baked: dict[tuple[int, str], Any] = field(default_factory=dict)  # (node, pin) -> value
    index_values: dict[int, float] = field(default_factory=dict)  # switch -> its constant index


class _Freezer:
    def __init__(self, patch: PatchGraph, threshold_bytes: int, progress: Progress) -> None:
        self.patch = patch
        self.threshold = threshold_bytes
        self.progress = progress
        self.ir = ir = GraphIR(PatchSnapshot.of(patch))
        order = ir.topological_order()
        self.position = [0] * len(ir)
        for position, i in enumerate(order):
            self.position[i] = position
        classes, _ = analyze(ir, order)
        sinks = ir.sinks()
        self.needed = ir.upstream(sinks, _ALL_KINDS)
        self.sink = [node.spec.sink for node in ir.nodes]
        # Fixed: not HOT (with user inputs frozen, USER nodes are as constant as CONST ones).
        self.fixed = [
            classes[i] != HOT and all(e.kind != FEEDBACK for e in ir.in_edges[i])
            for i in range(len(ir))
        ]
        # GPU resources live in a GL context: never evaluated here, never baked.
        self.gpu = [False] * len(ir)
        for i in order:
            self.gpu[i] = any(is_picture(out.type) for out in ir.nodes[i].spec.outputs) or any(
                self.gpu[e.src] for e in ir.in_edges[i] if e.kind != FEEDBACK
            )
        members = [
            ir.ids[i] for i in order if i in self.needed and self.fixed[i] and not self.gpu[i]
        ]
        self.values = _FixedValues(patch, members)
        self.plan = _Plan()
        self.sinks = sinks

    def _bakeable(self, i: int) -> bool:
        return self.fixed[i] and not self.gpu[i] and not self.sink[i]

    def plan_nodes(self) -> _Plan:
        ir, plan = self.ir, self.plan
        # Evaluate the outputs most likely to be baked in one go, reporting progress.
        frontier = sorted(
            {
                e.src
                for i in self.needed
                if not self._bakeable(i)
                for e in ir.in_edges[i]
                if self._bakeable(e.src)
            },
            key=self.position.__getitem__,
        )
        for start in range(0, len(frontier), _CHUNK):
            self.progress(0.05 + 0.75 * start / len(frontier), "evaluating constants")
            self.values.evaluate(ir.ids[i] for i in frontier[start : start + _CHUNK])
        self.progress(0.8, "choosing what to keep")
        todo = list(self.sinks)
        for i in todo:
            plan.kept[i] = []
        while todo:
            i = todo.pop()
            for edge in self._followed_edges(i):
                plan.kept[i].append(edge)
                src = edge.src
                if src in plan.kept or (src, edge.src_pin) in plan.baked:
                    continue
                if self._bakeable(src):
                    node_id = ir.ids[src]
                    if self.values.settled(node_id):
                        value = self.values.value(node_id, edge.src_pin)
                        if storable(value, self.threshold):
                            plan.baked[(src, edge.src_pin)] = value
                            continue
                plan.kept[src] = []
                todo.append(src)
        plan.baked = {key: v for key, v in plan.baked.items() if key[0] not in plan.kept}
        return plan

    def _followed_edges(self, i: int) -> list[Edge]:
        """The in-edges of a kept node that the frozen patch keeps (every one but the unused
        branches of a switch with a constant index, and that index's link)."""
        edges = self.ir.in_edges[i]
        node = self.ir.nodes[i]
        if node.spec.id != "logic.switch":
            return list(edges)
        index_edge = next((e for e in edges if e.dst_pin == "index"), None)
        if index_edge is None:
            index = node.values["index"]
        elif self._bakeable(index_edge.src) and self.values.settled(self.ir.ids[index_edge.src]):
            index = self.values.value(self.ir.ids[index_edge.src], index_edge.src_pin)
        else:
            return list(edges)
        if type(index) not in (float, int, bool) or not math.isfinite(index):
            return list(edges)  # leave odd indices to the switch itself (it fails on them)
        branches = [f"in{k}" for k in range(4)]
        linked = {e.dst_pin for e in edges}
        chosen = switch_branch(index, [pin in linked for pin in branches])
        # With only the chosen branch linked (or none), the stored index picks it again.
        self.plan.index_values[i] = float(chosen)
        return [e for e in edges if e.dst_pin == branches[chosen]]


def freeze(
    patch: Patch,
    *,
    threshold_bytes: int = DEFAULT_THRESHOLD_BYTES,
    source_path: str | os.PathLike[str] | None = None,
    progress: Progress | None = None,
) -> Patch:
    """A frozen runtime copy of `patch`; see the module note. `source_path` names the file the
    patch came from (its sha256 goes into the frozen patch's meta); `progress(fraction, stage)` is
    called as the work advances (for a progress bar)."""
    report: Progress = progress or (lambda fraction, stage: None)
    report(0.0, "analysing")
    source = patch
    if patch.definitions:
        patch = inlined(patch)  # instances become plain nodes at their paths
    freezer = _Freezer(patch, threshold_bytes, report)
    try:
        plan = freezer.plan_nodes()
    finally:
        freezer.values.close()
    report(0.85, "building the frozen patch")
    frozen = _build(freezer, plan)
    report(0.95, "scheduling")
    frozen.meta = _meta(source, frozen, freezer, plan, source_path)
    frozen.revision = 0
    frozen.value_revision = 0
    report(1.0, "done")
    return frozen


def _build(freezer: _Freezer, plan: _Plan) -> Patch:
    ir, source = freezer.ir, freezer.patch
    frozen = Patch()
    frozen.allow_path_ids = True
    frozen.settings = json.loads(json.dumps(source.settings))
    taken = {ir.ids[i] for i in plan.kept}
    constant_ids: dict[tuple[int, str], str] = {}
    pins_of: dict[int, list[str]] = {}
    for src, pin in plan.baked:
        pins_of.setdefault(src, []).append(pin)
    for (src, pin), _value in sorted(plan.baked.items(), key=lambda kv: freezer.position[kv[0][0]]):
        base = ir.ids[src] if len(pins_of[src]) == 1 else f"{ir.ids[src]}_{pin}"
        candidate, suffix = base, 1
        while candidate in taken:
            suffix += 1
            candidate = f"{base}_{suffix}"
        taken.add(candidate)
        constant_ids[(src, pin)] = candidate

    consumers: dict[tuple[int, str], list[str]] = {}
    for i, edges in plan.kept.items():
        for edge in edges:
            dst_pin = next(p for p in ir.nodes[i].inputs if p.name == edge.dst_pin)
            consumers.setdefault((edge.src, edge.src_pin), []).append(dst_pin.type)

    # Source order is topological, and a constant sits where its producer was.
    entries = [(freezer.position[i], 1, i, "") for i in plan.kept]
    entries += [(freezer.position[src], 0, src, pin) for src, pin in constant_ids]
    feedback_links: list[tuple[tuple[str, str], tuple[str, str]]] = []
    for _, is_kept, i, baked_pin in sorted(entries):
        if not is_kept:
            value = plan.baked[(i, baked_pin)]
            type_id = _constant_type(value)
            out_type = "float" if type_id == "value.float" else "array"
            if not all(types_compatible(out_type, t) for t in consumers[(i, baked_pin)]):
                type_id = "value.any"
            pos = source.nodes[ir.ids[i]].pos
            frozen.add_node(type_id, {"value": value}, pos, node_id=constant_ids[(i, baked_pin)])
            continue
        node = ir.nodes[i]
        values = dict(node.values)
        if i in plan.index_values:
            values["index"] = plan.index_values[i]
        frozen.add_node(node.spec.id, values, source.nodes[node.id].pos, node_id=node.id)
        for edge in plan.kept[i]:
            baked = constant_ids.get((edge.src, edge.src_pin))
            origin = (baked, "out") if baked is not None else (ir.ids[edge.src], edge.src_pin)
            if edge.kind == FEEDBACK:
                feedback_links.append((origin, (node.id, edge.dst_pin)))
            else:
                frozen.connect(*origin, node.id, edge.dst_pin)
    for (from_id, from_pin), (to_id, to_pin) in feedback_links:
        frozen.connect(from_id, from_pin, to_id, to_pin)
    return frozen


def _schedule(frozen: Patch) -> dict[str, list[str]]:
    """The flat program's order, split into what runs once and what runs every frame (read off
    a compiled program, so it is the order the player will run)."""
    program = FlatProgram(PatchSnapshot.of(frozen), ExecutionContext(), codegen=False)
    ids = program.ir.ids
    ordered = sorted(program.node_slots, key=program.position.__getitem__)
    return {
        "once": [ids[i] for i in ordered if program.classes[i] != HOT],
        "every_frame": [ids[i] for i in ordered if program.classes[i] == HOT],
    }


def _source_hash(patch: Patch, source_path: str | os.PathLike[str] | None) -> str:
    digest = hashlib.sha256()
    if source_path is not None:
        digest.update(Path(source_path).read_bytes())
        return digest.hexdigest()
    arrays: dict[str, np.ndarray] = {}
    document = patch_to_dict(patch, arrays)
    digest.update(json.dumps(document, sort_keys=True, default=str).encode("utf-8"))
    for key in sorted(arrays):
        digest.update(key.encode("utf-8"))
        digest.update(np.ascontiguousarray(arrays[key]).tobytes())
    return digest.hexdigest()


def _meta(
    source: Patch,
    frozen: Patch,
    freezer: _Freezer,
    plan: _Plan,
    source_path: str | os.PathLike[str] | None,
) -> dict[str, Any]:
    ir = freezer.ir
    schedule = _schedule(frozen)
    every_frame = set(schedule["every_frame"])
    kept_fixed = [i for i in plan.kept if ir.ids[i] not in every_frame]
    user_inputs = [
        i
        for i in freezer.needed
        if ir.nodes[i].spec.determinism is Determinism.USER_INPUT and i not in plan.kept
    ]
    summary = {
        "nodes_before": len(freezer.patch.nodes),  # instances inlined
        "nodes_after": len(frozen.nodes),
        "constants_baked": len(plan.baked),
        "bytes_stored": sum(_stored_bytes(v) for v in plan.baked.values()),
        "user_inputs_frozen": len(user_inputs),
        "run_once": len(kept_fixed),
        "every_frame": len(every_frame),
        "dropped": len(freezer.patch.nodes) - len(plan.kept) - len({s for s, _ in plan.baked}),
    }
    return {
        "frozen": True,
        "patchbay_version": patchbay_version(),
        "source": {
            "file": Path(source_path).name if source_path is not None else None,
            "sha256": _source_hash(source, source_path),
        },
        "schedule": schedule,
        "summary": summary,
    }


__all__ = ["DEFAULT_THRESHOLD_BYTES", "Progress", "freeze", "patchbay_version", "storable"]
