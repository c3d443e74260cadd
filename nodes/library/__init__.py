"""The built-in node library. Importing this package registers every node type."""

from nodes.library import audio, core, gpu, midi, osc, subpatch, text, video  # noqa: F401
