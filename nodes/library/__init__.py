"""The built-in node library. Importing this package registers every node type."""

from nodes.library import core, gpu, osc, subpatch  # noqa: F401
