"""The built-in node library. Importing this package registers every node type."""

from nodes.library import subpatch  # noqa: F401
from nodes.library.control import shaping, stateful  # noqa: F401
from nodes.library.core import basics, vector  # noqa: F401
from nodes.library.gpu import effects, instancing, sources  # noqa: F401
from nodes.library.live import midi, osc  # noqa: F401
from nodes.library.media import audio, text, video  # noqa: F401
