"""The built-in node library. Importing this package registers every node type."""

from nodes.library import control, core, gpu, midi, osc, shaping, subpatch, vector  # noqa: F401
