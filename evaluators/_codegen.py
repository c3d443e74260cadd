"""Straight-line Python for a flat program's HOT list (evaluators/_flat.py), instead of its step
loop.

The HOT list `[(call, get, out), ...]` becomes a few generated functions of up to `CHUNK_STEPS`
steps each, compiled once per program, a chunk at a time (`advance`), so whoever generates it (a
synchronous build, the dual evaluator's builder thread, or the frame loop a chunk a frame) never
holds the interpreter for long. A chunk calls each step's bound compute function with
its arguments written out: values produced earlier in the same chunk from local variables, the
others read from the slot list by constant index; each result goes to its slot (the program's
outputs, previews and caches read slots) and, when a later step of the chunk reads it, to a local.

A chunk has no error handling of its own, and one step a line: when a step raises, the line the
traceback names in the chunk gives the step; its failure goes to the program (as in the step loop),
its output slot keeps the last good value (nothing was stored), and the rest of the chunk runs as
the step loop (every output is in its slot, so nothing a local held is lost), then the next chunks.
So failing, deferred and bypassed nodes behave as in the step loop; lazy inputs are pull objects
in slots and feedback values are slots, the same for both.

Safety: the source is made only of fixed text and integers (step numbers and slot indices).
Compute functions reach the code as the globals `c0`, `c1`, ... (by step number), never by name;
no node id, pin name or value from the patch is spliced into the source, so a hostile file cannot
inject code. The generated code sees no builtins.

Assumes the step shape of evaluators/_flat.py: `get` is an `operator.itemgetter` of integer slots
(or of a one-slot or empty slice). Anything else makes generation fail; the program then keeps
its step loop (`HotCode.error` says why).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from evaluators._context import error_text

Step = tuple[Callable[..., Any], Callable[[Any], Any], int]
Chunk = Callable[[list[Any]], None]

CHUNK_STEPS = 128  # compiling one chunk takes about 1.5 ms (with the GIL held)


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


def chunk_source(first: int, steps: Sequence[Step]) -> str:
    """The source of `run(S)` for `steps`, numbered from `first` (`S` is the slot list): the
    k-th step on line k + 2."""
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
        n = first + k
        text = ", ".join(f"v{slot}" if slot in local else f"S[{slot}]" for slot in args)
        target = f"v{out} = S[{out}]" if read_later[k] else f"S[{out}]"
        lines.append(f"    {target} = c{n}({text})")
        if read_later[k]:
            local.add(out)
    lines.append("    return")
    return "\n".join(lines) + "\n"


def compile_chunk(first: int, steps: Sequence[Step]) -> tuple[Chunk, str]:
    """The compiled chunk function for `steps` (numbered from `first`) and its source."""
    source = chunk_source(first, steps)
    names: dict[str, Any] = {"__builtins__": {}}
    for k, (call, _, _) in enumerate(steps):
        names[f"c{first + k}"] = call
    exec(compile(source, "<hot steps>", "exec"), names)
    run: Chunk = names["run"]
    return run, source


class HotCode:
    """The generated form of one step list: built chunk by chunk (`advance`, `generate`), run
    once complete (`ready`). A failure to generate leaves `error` set and `ready` false for
    good: the program keeps its step loop."""

    def __init__(
        self,
        steps: list[Step],
        on_failure: Callable[[int, Exception], None],
        owner: object = None,
    ) -> None:
        self.steps = steps
        self.on_failure = on_failure  # (step number, exception) of a step that raised
        self.owner = owner  # the program it runs for (evaluators/_running.py asks)
        self.chunks: list[Chunk] = []
        self.sources: list[str] = []
        self.done = 0  # steps generated so far
        self.error: str | None = None
        # True while another thread generates it (a background build); else the frame loop
        # generates what is missing, a chunk a frame.
        self.background = False

    @property
    def ready(self) -> bool:
        return self.error is None and self.done >= len(self.steps)

    @property
    def pending(self) -> bool:
        """Chunks remain to be generated (and nothing failed)."""
        return self.error is None and self.done < len(self.steps)

    def advance(self) -> None:
        """Generate the next chunk (nothing once ready or failed)."""
        if self.error is not None or self.done >= len(self.steps):
            return
        end = min(self.done + CHUNK_STEPS, len(self.steps))
        try:
            chunk, source = compile_chunk(self.done, self.steps[self.done : end])
        except Exception as problem:  # e.g. a step of another shape, or a compiler limit
            self.error = error_text(problem)
            self.chunks, self.sources = [], []
            return
        self.chunks.append(chunk)
        self.sources.append(source)
        self.done = end

    def generate(self, pause: Callable[[], None] = lambda: None) -> None:
        """Generate every chunk, calling `pause` between them."""
        while self.pending:
            self.advance()
            pause()

    def run(self, slots: list[Any]) -> None:
        """Run every step in order over `slots` (only when `ready`); a step that raises is
        handed to `on_failure` and the rest of its chunk runs as the step loop."""
        chunks = self.chunks
        done = 0  # chunks finished
        while True:
            try:
                for chunk in chunks[done:] if done else chunks:
                    chunk(slots)
                    done += 1
                return
            except Exception as problem:
                n = self._failed_step(done, problem)
                self.on_failure(n, problem)
                self._run_loop(slots, n + 1, min((done + 1) * CHUNK_STEPS, len(self.steps)))
                done += 1

    def _failed_step(self, chunk: int, problem: Exception) -> int:
        """The step of chunk number `chunk` that raised `problem`, from the line its traceback
        names in the chunk's code."""
        code = self.chunks[chunk].__code__
        trace = problem.__traceback__
        while trace is not None and trace.tb_frame.f_code is not code:
            trace = trace.tb_next
        return self.step_at(chunk, trace.tb_lineno if trace is not None else None)

    def step_at(self, chunk: int, line: int | None) -> int:
        """The step on `line` of chunk number `chunk` (its first step for an unknown line)."""
        first = chunk * CHUNK_STEPS
        last = min(first + CHUNK_STEPS, len(self.steps)) - 1
        return min(max(first + (line or 2) - 2, first), last)

    def _run_loop(self, slots: list[Any], start: int, end: int) -> None:
        """Steps `start` to `end` (excluded) as the step loop runs them."""
        on_failure = self.on_failure
        for n in range(start, end):
            call, get, out = self.steps[n]
            try:
                slots[out] = call(*get(slots))
            except Exception as problem:
                on_failure(n, problem)

    def source(self) -> str:
        """All generated source so far, for tests and debugging."""
        return "".join(self.sources)
