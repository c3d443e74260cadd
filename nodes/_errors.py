"""Errors raised by the patch document and the file format.

Every edit the Patch refuses raises a subclass of `PatchError` whose message is one line naming the
node and pin involved, so the editor can show it in its status bar as is.
"""

from __future__ import annotations


class PatchError(Exception):
    """An edit the patch refuses; the patch is left unchanged."""


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


class PatchFileError(PatchError):
    """A patch file that cannot be read; the message names the file and the bad place."""


class Deferred(Exception):
    """Raised by a compute function whose result is not ready yet (e.g. a file still loading).

    The evaluator keeps the node's previous outputs, reports the node as `deferred` and asks again
    on the next frame.
    """
