"""Refresh steps that fail alone, and texture pictures that are not tried again until they change.

The editor window and the engine refresh many views each frame (node colours, the preview, node
thumbnails, the output panel, the status bar). `RefreshSteps.run` runs one such step and catches
what it raises, so a failing step never stops the steps after it nor the frame loop; a failure is
written to stderr once per distinct (step, error) with its traceback, not once per frame.

`FailedPictures` remembers, per node output, the texture whose picture (a thumbnail, a preview)
failed, for instance a texture the GPU released. No picture of that same texture is tried again
until the node's output is another object or the node is edited (`on_patch_event`).

`SentPictures` remembers a digest of the last picture sent per (node, output, role), so a
picture whose pixels did not change (a still node, a paused show) is not sent, decoded and
repainted again.

Qt-free: the engine process uses them too.
"""

from __future__ import annotations

import hashlib
import sys
import traceback
from collections.abc import Callable
from typing import Any, TextIO, TypeVar

from nodes import EditOp, PatchEvent

T = TypeVar("T")

MAX_REMEMBERED = 256  # distinct failures remembered; beyond, the memory starts again
MAX_MESSAGE = 300  # characters of an error's first line in the log


class RefreshSteps:
    """Runs refresh steps, each isolated; `failures` counts the failures caught (logged or not),
    `logged` the distinct ones written."""

    def __init__(self, who: str, stream: TextIO | None = None) -> None:
        self.who = who
        self._stream = stream
        self._seen: set[str] = set()
        self.failures = 0
        self.logged = 0

    def run(self, step: str, function: Callable[..., T], *args: Any) -> T | None:
        """`function(*args)`, or None when it raised (the failure is reported)."""
        try:
            return function(*args)
        except Exception as error:
            self.report(step, error)
            return None

    def report(self, step: str, error: BaseException) -> None:
        """Count a failure of `step`; write it unless the same failure was written already."""
        self.failures += 1
        lines = str(error).strip().splitlines()
        text = f"{step}: {type(error).__name__}: {lines[0] if lines else ''}"[:MAX_MESSAGE]
        if text in self._seen:
            return
        if len(self._seen) >= MAX_REMEMBERED:
            self._seen.clear()
        self._seen.add(text)
        self.logged += 1
        stream = self._stream or sys.stderr
        print(f"{self.who}: {text} (reported once; the other views go on)", file=stream)
        traceback.print_exception(error, file=stream)
        stream.flush()


class FailedPictures:
    """The textures whose pictures failed, by (node id, output name)."""

    def __init__(self) -> None:
        self._failed: dict[tuple[str, str], Any] = {}

    def known_bad(self, node_id: str, pin: str, texture: Any) -> bool:
        """Whether a picture of `texture` failed before and the node has not changed since."""
        failed = self._failed.get((node_id, pin))
        return failed is not None and failed is texture

    def failed(self, node_id: str, pin: str, texture: Any) -> None:
        self._failed[(node_id, pin)] = texture

    def forget(self, node_id: str) -> None:
        for key in [key for key in self._failed if key[0] == node_id]:
            del self._failed[key]

    def clear(self) -> None:
        self._failed.clear()

    def on_patch_event(self, event: PatchEvent) -> None:
        """Forget the nodes an edit touches (their values, their links, the node itself)."""
        if not self._failed:
            return
        if event.node_id is not None:
            self.forget(event.node_id)
        if event.link is not None:
            self.forget(event.link.src)
            self.forget(event.link.dst)
        if event.op == EditOp.SETTINGS:  # the patch resolution, say: every node may render anew
            self._failed.clear()

    def picture(self, node_id: str, pin: str, texture: Any, make: Callable[[], T]) -> T | None:
        """`make()` (a picture of `texture`), or None without trying when it failed before;
        when `make()` raises, the texture is remembered as failed and the error goes on."""
        if self.known_bad(node_id, pin, texture):
            return None
        try:
            return make()
        except Exception:
            self.failed(node_id, pin, texture)
            raise


class SentPictures:
    """The pixels last sent per picture, as digests: `changed` tells whether a picture is worth
    sending; `clear` when the receiver may no longer hold what it got (a new editor, a new
    request)."""

    def __init__(self) -> None:
        self._digests: dict[tuple[str, str, str], tuple[Any, bytes]] = {}

    def changed(self, meta: dict[str, Any], pixels: bytes) -> bool:
        """Whether `pixels` differ from the last picture with this `meta`'s node, pin and role
        (and size); if so they are remembered as sent."""
        key = (str(meta["node"]), str(meta["pin"]), str(meta["role"]))
        sent = (list(meta["size"]), hashlib.blake2b(pixels, digest_size=16).digest())
        if self._digests.get(key) == sent:
            return False
        self._digests[key] = sent
        return True

    def clear(self) -> None:
        self._digests.clear()
