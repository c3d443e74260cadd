"""`PatchGraph`: everything the evaluators read from a patch, and nothing else.

The evaluators take the document and read its expanded view (`ExpandedPatch`,
evaluators/graph/view.py: instances inlined at path ids such as `blob1/lfo3`) through this protocol,
plus the view's own `flush` and `close`; what they hand it to (the live analysis, snapshots for flat
programs, a program's value refresh, freezing's internals) takes a `PatchGraph`, not a `Patch`. A
`Patch` is one, and so is any object shaped like it, which must then keep these answers and its
change events in step.

Read-only by contract: evaluators never edit the graph they run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from nodes import Link, NodeInstance, PatchEvent


class PatchGraph(Protocol):
    """A patch as evaluators read it (a `Patch` satisfies it)."""

    @property
    def nodes(self) -> Mapping[str, NodeInstance]:
        """Node id -> node, in the patch's order."""
        ...

    @property
    def links(self) -> Sequence[Link]:
        """Every link, in the patch's order."""
        ...

    def links_into(self, node_id: str) -> Mapping[str, Link]:
        """Input pin name -> the link into it, for the linked inputs of a node."""
        ...

    def links_out_of(self, node_id: str) -> Iterable[Link]: ...

    def node(self, node_id: str) -> NodeInstance:
        """The node, or `UnknownNodeError` naming the id."""
        ...

    def subscribe(self, listener: Callable[[PatchEvent], None]) -> Callable[[], None]:
        """Call `listener(event)` after every change; returns a function that unsubscribes."""
        ...

    @property
    def settings(self) -> dict[str, Any]:
        """The live settings dict (bound by execution contexts, so never replaced)."""
        ...

    @property
    def folder(self) -> Path | None: ...

    @property
    def revision(self) -> int:
        """Goes up with every structural change."""
        ...

    @property
    def value_revision(self) -> int:
        """Goes up with every value change."""
        ...
