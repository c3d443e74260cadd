"""Building a flat program from the previous one, in time proportional to what an edit changed.

A value edit changes the stamp of the edited node (nodes/document/patch.py), so comparing stamps
with the previous program's, and the links with its links (`change_since`), finds what an edit
touched: nodes added, removed, with new values, a new spec or other input links. On the thread that
edits, an `EditJournal` of the edits since the previous program stopped names the nodes and links
to compare, so finding them takes time proportional to the edit (at 10,000 nodes, comparing every
stamp and link took about a third of deriving a one-node edit). `derive` then makes the new program
from the previous one:

- The graph (`GraphIR.derived`): kept nodes keep their indices, removed ones become dead indices,
  new ones are appended; only the input links of touched nodes are read again.
- The order: the previous topological order without the removed nodes; each new node goes right
  after the last of its sources; a new link that runs against the order is mended the way
  Pearce and Kelly maintain a topological order (only the nodes between the link's two ends that
  it reaches, or that reach it, are moved).
- Classes and cache keys: recomputed for the touched nodes, then downstream in order only while
  they change (a HOT node's class and key never do).
- The main program (what the roots need through eager links): nodes a new link or root makes
  needed are added, walking up; nodes that lost a consumer are dropped, walking up in reverse
  order while none of their consumers is needed. Guarded regions are computed again only when
  the graph has lazy or feedback links.
- Slots and steps: the slot list is copied (so indices and last values stay), and the touched or
  newly needed nodes are compiled again, plus the consumers of a node whose output slot moved (a
  pass-through node that now shares another slot). The slots of dropped or recompiled nodes
  become holes (None); `holes` counts them.

The step lists are then assembled as for any program (evaluators/flat/program.py), and the generated
code takes over the chunks of the previous program's code whose steps are the same
(evaluators/flat/codegen.py), so only the chunks around the edit are compiled.

The result runs exactly as a full build of the same snapshot would: the same nodes, classes, keys
and steps (slot numbers and, between independent nodes, the order may differ); tests compare them
over random edit sequences. A full build is made instead when too much changed (`MAX_CHANGED`
between frames, where a derived program holds up the next frame; `MAX_CHANGED_BACKGROUND` on the
builder thread, or when frames run back to back),
when holes would outweigh the live slots, or when deriving fails. Assumes the previous program no
longer runs while the new one is made (the dual evaluator stops it at the structural edit) and is
released only afterwards; nothing of it is changed but the link set it caches (`link_set`).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evaluators.flat.build_steps import BuildSteps
from evaluators.flat.memory_plan import value_bytes
from evaluators.graph.analysis import ir_node_info
from evaluators.graph.ir import EAGER, FEEDBACK, LAZY, Edge, GraphIR, NodeSnapshot, PatchSnapshot
from evaluators.graph.patch_graph import PatchGraph
from evaluators.run.context import CONST
from nodes import EditOp, Link, PatchEvent

if TYPE_CHECKING:  # evaluators.flat.program calls this module: no import at run time
    from evaluators.flat.program import FlatProgram

_DEPENDS = (EAGER, LAZY)
MAX_CHANGED = 0.25  # share of the nodes an edit may touch before it is derived between frames
# ... before a full build is cheaper: deriving a branch of 40% new nodes took 0.66x a full build.
MAX_CHANGED_BACKGROUND = 0.5
SMALL_EDIT = 16  # an edit touching at most this many nodes is always derived
MAX_NEW_PLACED = 32  # more new nodes than this: the order is sorted again from scratch


JOURNAL_LIMIT = 4096  # nodes an edit journal names before it gives up (a full scan follows)


class EditJournal:
    """The nodes and links the patch's edits touched since a program stopped, noted from its
    events on the thread that edits: `change_since` then compares only those. It gives up
    (`complete` False) on an edit it cannot place (a structural event naming no node, such as a
    definition's, when the patch is not an expanded view) or past `JOURNAL_LIMIT` nodes."""

    def __init__(self) -> None:
        self.nodes: set[str] = set()
        self.links_made: set[Link] = set()
        self.links_gone: set[Link] = set()
        self.complete = True

    def note(self, event: PatchEvent) -> None:
        if not self.complete or event.kind == "ui":
            return
        if event.node_id is None:
            # Bindings, presets and settings name no node and change none; anything else does.
            self.complete = event.kind != "structural"
            return
        self.nodes.add(event.node_id)
        link = event.link
        if link is not None and event.op in (EditOp.CONNECT, EditOp.DISCONNECT):
            made, gone = (
                (self.links_made, self.links_gone)
                if event.op == EditOp.CONNECT
                else (self.links_gone, self.links_made)
            )
            if link in gone:
                gone.discard(link)  # made and removed again (or the other way): no change
            else:
                made.add(link)
        if len(self.nodes) > JOURNAL_LIMIT:
            self.complete = False
            self.nodes, self.links_made, self.links_gone = set(), set(), set()


@dataclass
class Change:
    """What differs between a program's graph and a newer snapshot (indices of the old graph)."""

    changed: dict[int, NodeSnapshot] = field(default_factory=dict)  # links or spec may differ
    renewed: dict[int, NodeSnapshot] = field(default_factory=dict)  # values only, already known
    added: list[NodeSnapshot] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    links_into: dict[str, list[Link]] = field(default_factory=dict)
    links: frozenset[Link] = frozenset()  # every link of the snapshot


def change_since(
    previous: FlatProgram,
    source: PatchSnapshot | PatchGraph,
    max_changed: float = MAX_CHANGED,
    journal: EditJournal | None = None,
) -> Change | None:
    """What changed since `previous` was built (or refreshed), or None when a full build is the
    better way (more than `max_changed` of the nodes touched, too many holes). `source`: a
    snapshot, or on the thread that edits, the live patch itself (only what changed is copied
    out of it); then a complete `journal` of the edits since `previous` stopped spares comparing
    every node and link (values edited before it stopped are taken in by `refresh_values` as
    they are in any program)."""
    old = previous.ir
    if previous.holes * 2 > len(previous.slots) or len(old.dead) * 4 > len(old):
        return None
    old_links = previous.link_set
    if old_links is None:
        old_links = previous.link_set = frozenset(old.links)
    change = None
    if journal is not None and journal.complete and not isinstance(source, PatchSnapshot):
        change = _journaled_change(previous, source, old_links, journal)
    if change is None:
        change = _scanned_change(previous, source, old_links)
    touched = len(change.changed) + len(change.added) + len(change.removed)
    count = len(old.index) + len(change.added) - len(change.removed)
    if touched > max(max_changed * count, SMALL_EDIT):
        return None
    wanted = [old.ids[j] for j in change.changed] + [node.id for node in change.added]
    if not isinstance(source, PatchSnapshot):
        for node_id in wanted:
            change.links_into[node_id] = list(source.links_into(node_id).values())
    else:
        wanted_set = set(wanted)
        for link in source.links:
            if link.dst in wanted_set:
                change.links_into.setdefault(link.dst, []).append(link)
    return change


def _compared(
    change: Change,
    previous: FlatProgram,
    nodes: Iterable[Any],
    relinked: Collection[str],
) -> int:
    """Sort `nodes` of the newer patch into `change` (added, changed, renewed) by comparing them
    with `previous`; returns how many there were."""
    old = previous.ir
    old_index, old_stamps, old_nodes = old.index, previous.stamps, old.nodes
    count = 0
    for node in nodes:
        count += 1
        j = old_index.get(node.id)
        if j is None:
            change.added.append(_snapshot_of(node))
        elif (
            node.stamp != old_stamps[j] or node.spec is not old_nodes[j].spec or node.id in relinked
        ):
            change.changed[j] = _snapshot_of(node)
        elif node.stamp != old_nodes[j].stamp:
            change.renewed[j] = _snapshot_of(node)  # value edits the previous program took in
    return count


def _scanned_change(
    previous: FlatProgram, source: PatchSnapshot | PatchGraph, old_links: frozenset[Link]
) -> Change:
    """The change, by comparing every node and link of `source` with `previous`."""
    nodes: Collection[Any] = (
        source.nodes if isinstance(source, PatchSnapshot) else source.nodes.values()
    )
    change = Change(links=frozenset(source.links))
    # Nodes whose input links changed: in the expanded view a relinked node may keep its stamp
    # (inlets and instances have stamps of their own making, evaluators/graph/view.py).
    relinked = {link.dst for link in change.links ^ old_links}
    count = _compared(change, previous, nodes, relinked)
    old_index = previous.ir.index
    if count - len(change.added) != len(old_index):
        present = {node.id for node in nodes}
        change.removed = [j for node_id, j in old_index.items() if node_id not in present]
    return change


def _journaled_change(
    previous: FlatProgram,
    source: PatchGraph,
    old_links: frozenset[Link],
    journal: EditJournal,
) -> Change | None:
    """The change, by comparing only the nodes the journal names and those whose values
    `previous` took in while it ran (`refreshed`); None when the result does not add up to the
    patch (then every node is compared)."""
    old = previous.ir
    live = source.nodes
    links = (old_links - journal.links_gone) | journal.links_made
    if len(links) != len(source.links):
        return None
    names = journal.nodes.union(map(old.ids.__getitem__, previous.refreshed))
    relinked = {link.dst for link in journal.links_made}
    relinked.update(link.dst for link in journal.links_gone)
    change = Change(links=links)
    _compared(change, previous, (live[name] for name in names if name in live), relinked)
    change.removed = [old.index[name] for name in names if name not in live and name in old.index]
    if len(old.index) + len(change.added) - len(change.removed) != len(live):
        return None
    return change


def _snapshot_of(node: Any) -> NodeSnapshot:
    """A node as a snapshot holds it (values dicts are replaced on edits, never changed)."""
    if isinstance(node, NodeSnapshot):
        return node
    return NodeSnapshot(node.id, node.spec, node.values, node.inputs, node.stamp)


def deriving(
    program: FlatProgram,
    previous: FlatProgram,
    change: Change,
    watched: Iterable[str],
) -> BuildSteps[None]:
    """Fill `program` with what `previous` had, changed as `change` says; see the module note.
    Yields between its steps (evaluators/flat/build_steps.py)."""
    old_ir = previous.ir
    ir = program.ir = GraphIR.derived(
        old_ir, change.links, change.changed, change.renewed, change.added, change.removed,
        change.links_into,
    )  # fmt: skip
    program.link_set = change.links
    first_new = len(old_ir)
    new = list(range(first_new, len(ir)))
    touched = [*change.changed, *new]
    removed = set(change.removed)
    program.stamps = previous.stamps + [0] * len(new)
    for i in touched:
        program.stamps[i] = ir.nodes[i].stamp
    yield
    program.order, program.position = _mended_order(previous, ir, change, new)
    program.classes = previous.classes + [CONST] * len(new)
    program.keys = previous.keys + [0] * len(new)
    reclassed = _reanalyze(program, touched, first_new, previous.reasons)
    yield

    sinks = {i for i in previous.sink_nodes if i not in removed and ir.nodes[i].spec.sink}
    sinks.update(i for i in touched if ir.nodes[i].spec.sink)
    program.sink_nodes = sinks
    roots = program.roots = frozenset(sinks).union(ir.index[w] for w in watched if w in ir.index)
    program.main = _mended_main(previous, ir, change, roots, program.position)
    guarded = program._guarded_regions(program.order) if ir.not_eager else {}
    program.guarded_sets = guarded
    program.needed = program.main.union(*guarded.values())
    yield
    _mend_slots(program, previous, touched, removed)
    # Nodes that may now give their output back to the pool, or no longer.
    recheck = (program.main - previous.main) | reclassed | program.unmeasured
    recheck.update(i for i in touched if i in program.main)
    program.pooled = {
        i: state
        for i, state in previous.pooled.items()
        if i in program.main and i not in recheck and i not in program.aliases
    }
    program.pooled.update(program._pooled_states(recheck))


def _mended_order(
    previous: FlatProgram, ir: GraphIR, change: Change, new: list[int]
) -> tuple[list[int], list[int]]:
    """A topological order of `ir` from the previous program's (see the module note)."""
    if len(new) > MAX_NEW_PLACED:
        order = ir.topological_order()
        position = [0] * len(ir)
        for at, i in enumerate(order):
            position[i] = at
        return order, position
    removed = set(change.removed)
    order = [i for i in previous.order if i not in removed] if removed else list(previous.order)
    position = previous.position + [0] * len(new)
    if removed:
        for at, i in enumerate(order):
            position[i] = at
    # New nodes, each after the last of its sources (new sources placed first).
    waiting = {
        i: sum(1 for e in ir.in_edges[i] if e.kind in _DEPENDS and e.src >= len(previous.ir))
        for i in new
    }
    ready = [i for i in new if not waiting[i]]
    while ready:
        i = ready.pop()
        sources = [position[e.src] for e in ir.in_edges[i] if e.kind in _DEPENDS]
        at = max(sources, default=-1) + 1
        order.insert(at, i)
        for moved in range(at, len(order)):
            position[order[moved]] = moved
        for edge in ir.out_edges[i]:
            if edge.kind in _DEPENDS and edge.dst in waiting:
                waiting[edge.dst] -= 1
                if not waiting[edge.dst]:
                    ready.append(edge.dst)
    if len(order) != len(ir) - len(ir.dead):
        raise ValueError("the patch has a cycle outside feedback links")
    # New links that run against the order (between kept nodes): mend each.
    for i in change.changed:
        for edge in ir.in_edges[i]:
            if edge.kind in _DEPENDS and position[edge.src] > position[i]:
                _mend(ir, order, position, edge.src, i)
    return order, position


def _mend(ir: GraphIR, order: list[int], position: list[int], src: int, dst: int) -> None:
    """Pearce-Kelly: `src` sits after `dst` though `src` feeds it. The nodes `dst` reaches up
    to `src`'s place and the nodes reaching `src` down to `dst`'s place swap into an order that
    puts the latter first, each group keeping its own order."""
    low, high = position[dst], position[src]
    ahead = _reach(ir.out_edges, dst, lambda j: position[j] <= high, forward=True)
    if src in ahead:
        raise ValueError("the patch has a cycle outside feedback links")
    behind = _reach(ir.in_edges, src, lambda j: position[j] >= low, forward=False)
    moved = sorted(behind, key=position.__getitem__) + sorted(ahead, key=position.__getitem__)
    places = sorted(position[j] for j in moved)
    for at, j in zip(places, moved, strict=True):
        order[at] = j
        position[j] = at


def _reach(
    edges: list[list[Edge]], start: int, inside: Callable[[int], bool], forward: bool
) -> set[int]:
    found = {start}
    stack = [start]
    while stack:
        for edge in edges[stack.pop()]:
            if edge.kind not in _DEPENDS:
                continue
            j = edge.dst if forward else edge.src
            if j not in found and inside(j):
                found.add(j)
                stack.append(j)
    return found


def _reanalyze(
    program: FlatProgram, touched: list[int], first_new: int, previous_reasons: dict[int, int]
) -> set[int]:
    """Classes and keys of the touched nodes and, while they change, of what they feed; returns
    the nodes whose class changed."""
    ir, position, classes, keys, stamps = (
        program.ir, program.position, program.classes, program.keys, program.stamps
    )  # fmt: skip
    heap = [(position[i], i) for i in touched]
    heapq.heapify(heap)
    seen: set[int] = set()
    reasons = program.reasons = dict(previous_reasons)
    reclassed: set[int] = set()
    while heap:
        _, i = heapq.heappop(heap)
        if i in seen:
            continue
        seen.add(i)
        info = ir_node_info(ir, i, classes, keys, stamps[i])
        if i < first_new and info == (classes[i], keys[i]):
            continue
        if info[0] != classes[i]:
            reclassed.add(i)
            reasons.pop(i, None)
        classes[i], keys[i] = info
        for edge in ir.out_edges[i]:
            if edge.kind != FEEDBACK:
                heapq.heappush(heap, (position[edge.dst], edge.dst))
    return reclassed


def _mended_main(
    previous: FlatProgram, ir: GraphIR, change: Change, roots: frozenset[int], position: list[int]
) -> set[int]:
    """The roots and what they need through eager links, from the previous program's set."""
    removed = set(change.removed)
    main = previous.main - removed
    touched = [*change.changed, *range(len(previous.ir), len(ir))]
    stack = [r for r in roots if r not in main]
    for i in touched:
        if i in main:
            stack.extend(e.src for e in ir.in_edges[i] if e.kind == EAGER)
    while stack:
        i = stack.pop()
        if i not in main:
            main.add(i)
            stack.extend(e.src for e in ir.in_edges[i] if e.kind == EAGER)
    # Nodes that may have lost their last needed consumer: consumers first.
    maybe = {r for r in previous.roots if r not in roots and r not in removed}
    for i in [*change.changed, *change.removed]:
        maybe.update(e.src for e in previous.ir.in_edges[i] if e.kind == EAGER)
    heap = [(-position[i], i) for i in maybe - removed if i in main]
    heapq.heapify(heap)
    while heap:
        _, i = heapq.heappop(heap)
        if i not in main or i in roots:
            continue
        if any(e.kind == EAGER and e.dst in main for e in ir.out_edges[i]):
            continue
        main.discard(i)
        for edge in ir.in_edges[i]:
            if edge.kind == EAGER and edge.src in main:
                heapq.heappush(heap, (-position[edge.src], edge.src))
    return main


def _mend_slots(
    program: FlatProgram, previous: FlatProgram, touched: list[int], removed: set[int]
) -> None:
    """Slots, steps and their bookkeeping from the previous program's; see the module note."""
    ir, old_ir = program.ir, previous.ir
    slots = program.slots = list(previous.slots)
    program.node_slots = dict(previous.node_slots)
    program.out_slot = dict(previous.out_slot)
    program.aliases = set(previous.aliases)
    program.value_slot = dict(previous.value_slot)
    program.feedback_slot = dict(previous.feedback_slot)
    program.node_steps = dict(previous.node_steps)
    program.owner = dict(previous.owner)
    program.input_slots = dict(previous.input_slots)
    program.pull_slots = set(previous.pull_slots)
    program.release_slot = dict(previous.release_slot)
    program.holes = previous.holes
    program.unmeasured = previous.unmeasured & program.main
    for slot in program.pull_slots:  # pulls run their own program's sub-programs
        pull = slots[slot]
        slots[slot] = type(pull)(program, pull.source, pull.slot)  # the same kind, rebound

    def free(slot: int) -> None:
        slots[slot] = None
        program.holes += 1
        program.owner.pop(slot, None)
        program.pull_slots.discard(slot)

    # What a recompiled node's feedback inputs and outputs held: the context may be older (the
    # dual evaluator hands a stopped program's values to it only when something reads them).
    carried_feedback: dict[tuple[int, str], Any] = {}
    carried_outputs: dict[int, tuple[Any, ...]] = {}

    compiled: set[int] = set()  # compiled (and, for `allocated`, given outputs) in this pass
    allocated: set[int] = set()

    def free_inputs(i: int) -> None:
        for pin in (ir if i in compiled else old_ir).nodes[i].inputs:
            program.value_slot.pop((i, pin.name), None)
            slot = program.feedback_slot.pop((i, pin.name), None)
            if slot is not None:
                carried_feedback[(i, pin.name)] = slots[slot]
        for slot in program.input_slots.pop(i, ()):
            free(slot)

    def free_outputs(i: int) -> None:
        if i in program.aliases:
            program.aliases.discard(i)  # the slot is its source's
        else:
            for slot in program.node_slots[i]:
                free(slot)
        for out in old_ir.nodes[i].spec.outputs:
            program.out_slot.pop((i, out.name), None)
        del program.node_slots[i]
        program.node_steps.pop(i, None)

    needed, main = program.needed, program.main
    for i in [i for i in previous.node_slots if i in removed or i not in needed]:
        free_inputs(i)
        free_outputs(i)
    for i in [i for i in program.release_slot if i not in main]:
        free(program.release_slot.pop(i))
    position = program.position
    heap = [(position[i], i) for i in touched if i in needed]
    heap += [(position[i], i) for i in needed if i not in program.node_slots]
    heapq.heapify(heap)
    done: set[int] = set()
    while heap:
        _, i = heapq.heappop(heap)
        if i in done:
            continue
        done.add(i)
        had = i in program.node_slots
        same_spec = i < len(old_ir) and old_ir.nodes[i].spec is ir.nodes[i].spec
        source = program._alias_source(i)
        keep = had and (
            i in allocated  # a second visit (it feeds itself back, say)
            or (
                same_spec
                and (
                    (source is None and i not in program.aliases)
                    or (source is not None and program.node_slots[i] == [source])
                )
            )
        )
        if had:
            free_inputs(i)
        if not keep:
            if had:
                if same_spec:
                    carried_outputs[i] = previous._outputs_of(i)
                free_outputs(i)
            program._allocate_outputs(i)
            allocated.add(i)
            if i in carried_outputs and i not in program.aliases:
                program._store(i, carried_outputs[i])
            program.unmeasured.add(i)
            for edge in ir.out_edges[i]:  # what reads the node's slot must be compiled again
                if edge.dst in needed:
                    done.discard(edge.dst)  # a feedback consumer may come earlier
                    heapq.heappush(heap, (position[edge.dst], edge.dst))
        program.node_steps[i] = program._compile_node(i)
        compiled.add(i)
        for pin in ir.nodes[i].inputs:
            fed = program.feedback_slot.get((i, pin.name))
            if fed is not None and (i, pin.name) in carried_feedback:
                slots[fed] = carried_feedback[(i, pin.name)]
    sizes = program.sizes = dict(previous.sizes)
    for i in sizes.keys() - main:
        del sizes[i]
    for i in main - sizes.keys():
        sizes[i] = value_bytes(slots[program.node_slots[i][0]])
        program.unmeasured.add(i)
    program.unmeasured &= main
