"""Errors raised by the patch document and the file format.

Every edit the Patch refuses raises a subclass of `PatchError` whose message is one line naming the
node and pin involved, so the editor can show it in its status bar as is. The message is made safe
once, here: `one_line` escapes control characters (ANSI escapes and newlines from a hostile file
never reach a terminal) and shortens it, so no message is longer than `MESSAGE_CHARS`. Values put
into messages go through `shown` first, so that the place named at the start of a message survives.
"""

from __future__ import annotations

import reprlib
from typing import Any

#: The longest message an error carries (a file name, a place and a short reason fit easily).
MESSAGE_CHARS = 300
#: The longest a value is shown inside a message.
VALUE_CHARS = 60
_ELLIPSIS = "…"


def _short_repr() -> reprlib.Repr:
    short = reprlib.Repr()  # keyword arguments only from Python 3.12
    short.maxlevel = 3
    short.maxtuple = short.maxlist = short.maxarray = short.maxset = short.maxfrozenset = 6
    short.maxdeque = 6
    short.maxdict = 4
    short.maxstring = short.maxlong = short.maxother = VALUE_CHARS
    return short


_SHORT_REPR = _short_repr()


def _escaped(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def one_line(text: str, limit: int = MESSAGE_CHARS) -> str:
    """`text` with every non-printable character escaped (ANSI escapes, newlines, line
    separators, bidi overrides: `\\x1b`, `\\x0a`, `\\u202e`) and cut in the middle to at most
    `limit` characters."""
    if len(text) > 4 * limit:  # an escape is at most ten characters: cut before escaping
        text = text[: 2 * limit] + _ELLIPSIS + text[-2 * limit :]
    safe = "".join(char if char.isprintable() else _escaped(char) for char in text)
    if len(safe) <= limit:
        return safe
    head = (limit - 1) * 2 // 3
    return safe[:head] + _ELLIPSIS + safe[len(safe) - (limit - 1 - head) :]


def shown(value: Any, limit: int = VALUE_CHARS) -> str:
    """A value for a message: its `repr`, shortened on the way (`reprlib`: long strings, deep or
    long containers and huge numbers never get repr'd whole), one line, at most `limit` chars."""
    try:
        text = _SHORT_REPR.repr(value)
    except Exception:  # a broken __repr__, or an int too long to print, must not hide the problem
        text = f"<{type(value).__name__}>"
    return one_line(text, limit)


class PatchError(Exception):
    """An edit the patch refuses; the patch is left unchanged. The message is one safe line."""

    def __init__(self, message: str = "", *args: Any) -> None:
        super().__init__(one_line(str(message)), *args)


class UnknownNodeTypeError(PatchError):
    """A node type id that is not in the node library."""


class UnknownNodeError(PatchError):
    """A node id that is not in the patch."""


class UnknownPinError(PatchError):
    """A pin name the node does not have."""


class DuplicateNodeError(PatchError):
    """A node id that is already used in the patch."""


class PinTypeError(PatchError):
    """A link between pins of incompatible types."""


class InputOccupiedError(PatchError):
    """A second link into an input that already has one."""


class CycleError(PatchError):
    """A link that would close a cycle that does not pass through a feedback input."""

    def __init__(self, message: str, cycle: list[str]) -> None:
        super().__init__(message)
        self.cycle = cycle


class PatchValueError(PatchError):
    """A value of the wrong type for a pin."""


class UnsavableValueError(PatchValueError, ValueError):
    """A value `save_patch` refuses because it would not load back exactly; nothing was written.
    Also a ValueError, as the other reasons a save may fail."""


class PatchFileError(PatchError):
    """A patch file that cannot be read; the message names the file and the bad place."""


class Deferred(Exception):
    """Raised by a compute function whose result is not ready yet (e.g. a file still loading).

    The evaluator keeps the node's previous outputs, reports the node as `deferred` and asks again
    on the next frame.
    """
