"""Straight-line Python for a flat program's HOT list (evaluators/flat/program.py), instead of its
step loop.

The HOT list `[(call, get, out), ...]` becomes a few generated functions of about `CHUNK_STEPS`
steps each, compiled once per program, a chunk at a time (`advance`), so whoever generates it (a
synchronous build, the dual evaluator's builder thread, or the frame loop a chunk a frame) never
holds the interpreter for long.

A chunk calls each step's bound compute function with its arguments written out: values produced
earlier in the same chunk from local variables, the others read from the slot list by constant
index; each result goes to its slot (the program's outputs, previews and caches read slots) and,
when a later step of the chunk reads it, to a local.

A chunk has no error handling of its own, and one step a line: when a step raises, the line the
traceback names in the chunk gives the step; its failure goes to the program (as in the step loop),
its output slot keeps the last good value (nothing was stored), and the rest of the chunk runs as
the step loop (every output is in its slot, so nothing a local held is lost), then the next chunks.
So failing, deferred and bypassed nodes behave as in the step loop; lazy inputs are pull objects
in slots and feedback values are slots, the same for both.

Chunk boundaries depend on the steps themselves, not on their positions: a chunk ends after a
step whose output slot hashes to a marker (one in `CHUNK_STEPS` on average; chunks have
`MIN_CHUNK_STEPS` to `MAX_CHUNK_STEPS` steps). So a program rebuilt after an edit
(evaluators/flat/incremental.py), whose list differs from the previous one in a few places, cuts the
same chunks everywhere else and takes their compiled functions over (`HotCode(reuse=...)`): only
the chunks around the edit are compiled again.

Safety: the source is made only of fixed text and integers (step numbers and slot indices).
Compute functions reach the code as the globals `c0`, `c1`, ... (by step in the chunk), never by
name;
no node id, pin name or value from the patch is spliced into the source, so a hostile file cannot
inject code. The generated code sees no builtins.

Assumes the step shape of evaluators/flat/program.py: `get` is an `operator.itemgetter` of integer
slots (or of a one-slot or empty slice). Anything else makes generation fail; the program then keeps
its step loop (`HotCode.error` says why).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import is_, itemgetter
from typing import Any

import numpy as np

from evaluators.run.context import error_text

Step = tuple[Callable[..., Any], Callable[[Any], Any], int]
Chunk = Callable[[list[Any]], None]

CHUNK_STEPS = 128  # on average; compiling one chunk takes about 1.5 ms (with the GIL held)
MAX_CHUNK_STEPS = 2 * CHUNK_STEPS
MIN_CHUNK_STEPS = CHUNK_STEPS // 4
_SCRAMBLE = 2654435761  # Knuth's multiplicative hash: consecutive slots land far apart


def chunk_starts(steps: Sequence[Step]) -> list[int]:
    """Where each chunk of `steps` starts, plus `len(steps)` at the end: a chunk of at least
    `MIN_CHUNK_STEPS` ends after a step whose output slot hashes to a marker, and
    at `MAX_CHUNK_STEPS` steps in any case."""
    count = len(steps)
    if not count:
        return [0]
    outs = np.fromiter(map(itemgetter(2), steps), dtype=np.uint64, count=count)
    spread = np.uint64(CHUNK_STEPS - MIN_CHUNK_STEPS)  # a chunk of CHUNK_STEPS on average
    marked = ((outs * np.uint64(_SCRAMBLE)) >> np.uint64(16)) % spread == 0
    starts = [0]
    for end in (np.flatnonzero(marked) + 1).tolist():
        while end - starts[-1] > MAX_CHUNK_STEPS:
            starts.append(starts[-1] + MAX_CHUNK_STEPS)
        if end - starts[-1] >= MIN_CHUNK_STEPS and count - end >= MIN_CHUNK_STEPS:
            starts.append(end)
    while count - starts[-1] > MAX_CHUNK_STEPS:
        starts.append(starts[-1] + MAX_CHUNK_STEPS)
    starts.append(count)
    return starts


class _SlotProbe:
    """Stands in for the slot list: an itemgetter applied to it returns the slot indices."""

    def __getitem__(self, key: int | slice) -> Any:
        if isinstance(key, slice):
            return list(range(key.start, key.stop))  # the one-slot or empty slices
        return key


_PROBE = _SlotProbe()


def argument_slots(get: Callable[[Any], Any]) -> list[int]:
    """The slots a step's getter gathers, in argument order; ValueError if they are not plain
    integers."""
    found = list(get(_PROBE))
    if not all(type(slot) is int and slot >= 0 for slot in found):
        raise ValueError("a step reads something other than integer slots")
    return found


def chunk_source(steps: Sequence[Step]) -> str:
    """The source of `run(S)` for `steps` (`S` is the slot list): the k-th step on line k + 2,
    calling `c<k>`."""
    reads = [argument_slots(get) for _, get, _ in steps]
    outs = [out for _, _, out in steps]
    if not all(type(out) is int and out >= 0 for out in outs):
        raise ValueError("a step writes something other than an integer slot")
    read_later = [False] * len(steps)
    made_at = {out: k for k, out in enumerate(outs)}
    for args in reads:
        for slot in args:
            k = made_at.get(slot)
            if k is not None:
                read_later[k] = True
    lines = ["def run(S):"]
    local: set[int] = set()
    for k, (out, args) in enumerate(zip(outs, reads, strict=True)):
        text = ", ".join(f"v{slot}" if slot in local else f"S[{slot}]" for slot in args)
        target = f"v{out} = S[{out}]" if read_later[k] else f"S[{out}]"
        lines.append(f"    {target} = c{k}({text})")
        if read_later[k]:
            local.add(out)
    lines.append("    return")
    return "\n".join(lines) + "\n"


def compile_chunk(steps: Sequence[Step]) -> tuple[Chunk, str]:
    """The compiled chunk function for `steps` and its source."""
    source = chunk_source(steps)
    names: dict[str, Any] = {"__builtins__": {}}
    for k, (call, _, _) in enumerate(steps):
        names[f"c{k}"] = call
    exec(compile(source, "<hot steps>", "exec"), names)
    run: Chunk = names["run"]
    return run, source


class HotCode:
    """The generated form of one step list: built chunk by chunk (`advance`, `generate`), and run
    as it is by the step runtime (evaluators/run/steps.py: chunks still missing run as the step
    loop) until complete (`ready`). A failure to
    generate leaves `error` set and `ready` false for good: the program keeps its step loop.
    `reuse`: the code of a previous list, whose chunks of the very same steps are taken over
    instead of compiled again."""

    def __init__(self, steps: list[Step], reuse: HotCode | None = None) -> None:
        self.steps = steps
        self.starts = chunk_starts(steps)  # chunk k runs steps starts[k] to starts[k + 1]
        count = len(self.starts) - 1
        self.chunks: list[Chunk | None] = [None] * count
        self.sources: list[str] = [""] * count
        self.missing = list(range(count - 1, -1, -1))  # chunks to compile, the next one last
        self.error: str | None = None
        self.reused = 0
        # True while another thread generates it (a background build); else the frame loop
        # generates what is missing, a chunk a frame.
        self.background = False
        if reuse is not None and reuse.error is None:
            self._take_over(reuse)

    def _take_over(self, previous: HotCode) -> None:
        """Take the compiled chunks of `previous` that run exactly the same steps."""
        old_steps, old_starts = previous.steps, previous.starts
        by_first = {id(old_steps[old_starts[k]]): k for k in range(len(previous.chunks))}
        steps, starts = self.steps, self.starts
        for k in range(len(self.chunks)):
            first, end = starts[k], starts[k + 1]
            old = by_first.get(id(steps[first]))
            if old is None or previous.chunks[old] is None:
                continue
            old_first, old_end = old_starts[old], old_starts[old + 1]
            if old_end - old_first == end - first and all(
                map(is_, steps[first:end], old_steps[old_first:old_end])
            ):
                self.chunks[k] = previous.chunks[old]
                self.sources[k] = previous.sources[old]
                self.reused += 1
        self.missing = [k for k in reversed(range(len(self.chunks))) if self.chunks[k] is None]

    @property
    def ready(self) -> bool:
        return self.error is None and not self.missing

    @property
    def pending(self) -> bool:
        """Chunks remain to be generated (and nothing failed)."""
        return self.error is None and bool(self.missing)

    def advance(self) -> None:
        """Generate the next missing chunk (nothing once ready or failed)."""
        if self.error is not None or not self.missing:
            return
        k = self.missing[-1]
        try:
            chunk, source = compile_chunk(self.steps[self.starts[k] : self.starts[k + 1]])
        except Exception as problem:  # e.g. a step of another shape, or a compiler limit
            self.error = error_text(problem)
            self.chunks, self.sources, self.missing = [], [], []
            return
        self.chunks[k] = chunk
        self.sources[k] = source
        self.missing.pop()

    def generate(self) -> None:
        """Generate every chunk (a background build advances it a chunk at a time instead)."""
        while self.pending:
            self.advance()

    def failed_step(self, chunk: int, problem: Exception) -> int:
        """The step of chunk number `chunk` that raised `problem`, from the line its traceback
        names in the chunk's code."""
        code = self.chunks[chunk].__code__  # type: ignore[union-attr]
        trace = problem.__traceback__
        while trace is not None and trace.tb_frame.f_code is not code:
            trace = trace.tb_next
        return self.step_at(chunk, trace.tb_lineno if trace is not None else None)

    def step_at(self, chunk: int, line: int | None) -> int:
        """The step on `line` of chunk number `chunk` (its first step for an unknown line)."""
        first, last = self.starts[chunk], self.starts[chunk + 1] - 1
        return min(max(first + (line or 2) - 2, first), last)

    def source(self) -> str:
        """All generated source so far, for tests and debugging."""
        return "".join(self.sources)
