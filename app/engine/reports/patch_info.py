"""Small questions that players, the engine and the windows ask about a patch, without Qt.

Which node is the patch's output, whether it has GPU nodes, and the render size given on a command
line. They live below every module that plays or shows a patch, so none of those imports another
just for these.
"""

from __future__ import annotations

from nodes import Patch, PatchError


def parse_size(text: str) -> tuple[int, int]:
    """Parse "1920x1080" into (1920, 1080); PatchError on anything else."""
    width, sep, height = text.lower().partition("x")
    if not sep or not width.isdigit() or not height.isdigit() or int(width) * int(height) == 0:
        raise PatchError(f"--size {text}: expected WIDTHxHEIGHT, e.g. 1280x720")
    return (int(width), int(height))


def uses_gpu(patch: Patch) -> bool:
    """True if the patch has GPU nodes."""
    return any(node.spec.category == "gpu" for node in patch.nodes.values())


def output_node(patch: Patch) -> str | None:
    """The id of the patch's `gpu.output` node (the first one by id), or None."""
    found = sorted(node.id for node in patch.nodes.values() if node.type_id == "gpu.output")
    return found[0] if found else None
