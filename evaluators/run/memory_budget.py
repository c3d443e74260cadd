"""The patch-wide memory budget: what a running patch's node results and textures hold, against
`Limits.memory_bytes`.

Per-object limits (`array_elements`, `texture_side`) bound one value; this bounds their sum, so a
patch of many big nodes cannot push the process into the kernel's out-of-memory killer.

One `MemoryMeter` per execution context (`ctx.memory`). It keeps, per node id, the bytes of the
result the node holds now (the numpy arrays among its outputs, by `nbytes`; numbers, strings and
other small values count nothing; textures are counted by the GL service) and their sum. Charging
a result costs a look at each of its outputs and one dictionary update: the difference with what
the node held before is added, so a result that replaces another gives the old one's bytes back,
and `release(node_id)` gives back what a removed node held. Outputs cached for a node and its last
good outputs are the same objects, counted once, per node.

A result that would bring the use over the budget is refused: `charge` returns the one-line reason
and the evaluator bypasses the node with it (`ExecutionContext.refuse`), so its last good outputs
stay what it and its downstream show, the rest of the patch plays on, and the node runs again
when it is edited or retried. The GL service counts the bytes of the textures it allocated
(`texture_bytes`) and asks the meter before allocating another (`check`): a texture that would
pass the budget raises `MemoryBudgetError` in the node that asked for it.

Where results are charged: every node run one at a time (the lazy walk; CONST/USER and lazily
pulled nodes of a flat program) and, for a flat program's HOT list, each HOT node once after the
program's first frame. The HOT loops themselves (the flat step list, its generated code, the lazy
replay) charge nothing, so a steady frame costs nothing more. Known downsides: a HOT result is
measured when a program first runs it, not on every frame (a HOT node whose output grows frame
after frame is charged again at the next build, and each is bounded by the per-object limits); a
result shared by identical nodes (`ExecutionContext.recall`) is charged to the node that computed
it only; an array that is a view of another is counted whole; a pass-through node (its output is
its input) is never charged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nodes.limits import active_limits

_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB")


class MemoryBudgetError(Exception):
    """Something would bring the memory a patch holds over `limits.memory_bytes`."""


def shown_bytes(amount: float) -> str:
    """`amount` bytes for a message: `512 bytes`, `128.0 MiB`, `1.02 GiB`."""
    unit = 0
    while amount >= 1024 and unit < len(_UNITS) - 1:
        amount /= 1024
        unit += 1
    if unit == 0:
        return f"{int(amount)} bytes"
    return f"{amount:.2f} {_UNITS[unit]}" if amount < 10 else f"{amount:.1f} {_UNITS[unit]}"


def result_bytes(outputs: tuple[Any, ...]) -> int:
    """The bytes a node's outputs hold that the budget counts: its numpy arrays."""
    total = 0
    for value in outputs:
        if isinstance(value, np.ndarray):
            total += value.nbytes
    return total


class MemoryMeter:
    """The bytes node results hold, per node and in all, plus the GPU's textures; see the
    module note. `budget`: the most they may hold (default: `limits.memory_bytes` in force)."""

    def __init__(self, gpu: Any = None, budget: int | None = None) -> None:
        self.budget = active_limits().memory_bytes if budget is None else budget
        self.gpu = gpu  # its `texture_bytes` count too
        self.held: dict[str, int] = {}
        self.results = 0

    @property
    def use(self) -> int:
        """Bytes held now: node results and textures."""
        return self.results + getattr(self.gpu, "texture_bytes", 0)

    def charge(self, node_id: str, outputs: tuple[Any, ...]) -> str | None:
        """Count `outputs` as what `node_id` holds from now on, in place of what it held; or,
        when that would bring the use over the budget, leave everything as it was and return
        the one-line reason."""
        size = result_bytes(outputs)
        before = self.held.get(node_id, 0)
        if size == before:
            return None
        if size > before:
            use = self.use - before + size
            if use > self.budget:
                return self._over("result", size, use)
        self.results += size - before
        if size:
            self.held[node_id] = size
        else:
            del self.held[node_id]
        return None

    def release(self, node_id: str) -> None:
        """`node_id` holds nothing any more (it was removed)."""
        self.results -= self.held.pop(node_id, 0)

    def check(self, nbytes: int, what: str) -> None:
        """Raise MemoryBudgetError when `nbytes` more would bring the use over the budget."""
        use = self.use + nbytes
        if use > self.budget:
            raise MemoryBudgetError(self._over(what, nbytes, use))

    def _over(self, what: str, nbytes: int, use: int) -> str:
        return (
            f"memory budget: {what} of {shown_bytes(nbytes)} would bring use to "
            f"{shown_bytes(use)} of {shown_bytes(self.budget)} (limits.memory_bytes)"
        )
