"""Execution paths: where a node runs, the key of its private state.

A path is "/" followed by node ids joined by "/": `/lfo3` for a top-level node, `/blob1/lfo3`
for node `lfo3` inside instance `blob1`, at any depth. The graph an evaluator reads names a node
by its path without the leading "/" (`blob1/lfo3`; top-level ids never contain "/"), so
`NodePath.of(node_id)` and `path.node_id` go from one to the other. The root (the patch itself)
is the empty path: it has no parts, no parent and no leaf.

A `NodePath` is a `str` (it hashes and compares like its text, and is what a spec's
`init_state(path)` receives), so dictionaries keyed by paths stay plain string lookups.
"""

from __future__ import annotations


def _check_id(node_id: str, place: str) -> None:
    if not node_id or node_id.startswith("/") or node_id.endswith("/") or "//" in node_id:
        raise ValueError(f"{place}: {node_id!r} is not a node id (empty part or stray '/')")


class NodePath(str):
    """An execution path; see the module note."""

    __slots__ = ()

    def __new__(cls, text: str = "") -> NodePath:
        if text:
            if not text.startswith("/"):
                raise ValueError(f"node path {text!r} does not start with '/'")
            _check_id(text[1:], "node path")
        return str.__new__(cls, text)

    @classmethod
    def of(cls, node_id: str) -> NodePath:
        """The path of the graph node `node_id` (which may be nested: "blob1/lfo3")."""
        _check_id(node_id, "NodePath.of")
        return str.__new__(cls, "/" + node_id)

    @property
    def node_id(self) -> str:
        """The id the graph gives this node: the path without its leading "/"."""
        if not self:
            raise ValueError("the root path names no node")
        return self[1:]

    @property
    def parts(self) -> tuple[str, ...]:
        """The node ids from the outermost instance to the node itself (empty for the root)."""
        return tuple(self[1:].split("/")) if self else ()

    @property
    def parent(self) -> NodePath:
        """The path of the instance this node is inside (the root for a top-level node)."""
        if not self:
            raise ValueError("the root path has no parent")
        return str.__new__(NodePath, self[: self.rindex("/")])

    @property
    def leaf(self) -> str:
        """The node's own id inside its parent."""
        if not self:
            raise ValueError("the root path has no leaf")
        return self[self.rindex("/") + 1 :]

    def child(self, node_id: str) -> NodePath:
        """The path of node `node_id` (one id, no "/") inside the instance at this path."""
        if "/" in node_id:
            raise ValueError(f"NodePath.child: {node_id!r} is more than one node id")
        _check_id(node_id, "NodePath.child")
        return str.__new__(NodePath, self + "/" + node_id)

    def __repr__(self) -> str:
        return f"NodePath({str.__repr__(self)})"


ROOT = NodePath()
"""The path of the patch itself."""
