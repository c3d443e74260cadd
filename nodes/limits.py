"""Resource limits: how much a patch file may make patchbay read, allocate and build.

A patch file is data from a stranger, so everything in it that costs memory or time is checked
against a `Limits` before anything is allocated: the loader checks sizes, counts and declared array
shapes (sidecar headers are read before their data), and nodes that allocate from their values
(`array.range`, texture sizes, the pins a shader derives) check them when they run or derive.
Exceeding a limit is one line naming the limit, e.g. `... 20000000 is above the limit
array_elements = 16777216`. Saving refuses, the same way, a patch that these limits would refuse
to load (nodes.fileformat.format), so a file written is a file that loads.

The limits in force are process-wide (`active_limits()`): the command line replaces them for files
the person trusts (`--trust`, `--limit NAME=VALUE`, see app/cli/main.py). Every default leaves room
for the bundled examples and the benchmark patches many times over, except `memory_bytes`: the
bytes a running patch's node results and textures may hold together
(evaluators/run/memory_budget.py), by default half the machine's RAM.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from dataclasses import dataclass

MIB = 1024 * 1024


def physical_memory_bytes() -> int | None:
    """The machine's RAM in bytes, or None where the system does not say."""
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    return pages * page_size if pages > 0 and page_size > 0 else None


#: The default `memory_bytes`: half the RAM (the rest is the system's, the editor's and the GPU
#: driver's), or 4 GiB where the system does not say how much there is.
DEFAULT_MEMORY_BYTES = (physical_memory_bytes() or 8 * 1024 * MIB) // 2


@dataclass(frozen=True)
class Limits:
    """What a patch may cost; every field is a maximum."""

    #: Bytes of the `.patchbay` JSON file itself.
    file_bytes: int = 16 * MIB
    #: Nodes in a patch.
    nodes: int = 100_000
    #: Links in a patch.
    links: int = 400_000
    #: Characters of any one string in a patch file (shader sources are strings).
    string_chars: int = 1 * MIB
    #: Digits of any one integer in a patch file.
    int_digits: int = 100
    #: Elements of any one array: stored in the file, in a sidecar, or made by a node.
    array_elements: int = 16 * MIB
    #: Bytes of all the arrays read from a patch's sidecar files together (as loaded).
    sidecar_bytes: int = 1024 * MIB
    #: Pixels on either side of a texture (render targets, images, the patch resolution).
    texture_side: int = 8192
    #: Bytes of a shader source file.
    shader_file_bytes: int = 1 * MIB
    #: Bytes of an image file (before decoding; the decoded size is held by `texture_side`).
    image_file_bytes: int = 256 * MIB
    #: Bytes of a video file (it is decoded a frame at a time; frame sizes are held by
    #: `texture_side`).
    video_file_bytes: int = 64 * 1024 * MIB
    #: Bytes of a font file (a font is read whole).
    font_file_bytes: int = 32 * MIB
    #: Bytes of an audio file (before decoding; the decoded length is held by `array_elements`).
    audio_file_bytes: int = 512 * MIB
    #: Input pins a node derives from its values (a shader's uniforms): each instance holds a
    #: value for each, so a small file of many such nodes must not make them many.
    pins_per_node: int = 1024
    #: Shapes one instanced draw (gpu.instances) may draw: each is a row of GPU buffer and a
    #: quad to fill, on every frame it runs.
    instances: int = 1024 * 1024
    #: Bytes a running patch may hold at once in node results (numpy arrays) and textures, all
    #: nodes together: a node whose result would pass it is bypassed with a message.
    memory_bytes: int = DEFAULT_MEMORY_BYTES

    def exceeded(self, name: str, amount: int) -> str:
        """The one-line reason for `amount` being above the limit `name`."""
        return f"{amount} is above the limit {name} = {getattr(self, name)}"

    def replaced(self, **changes: int) -> Limits:
        """A copy with some limits changed; ValueError naming an unknown limit or a bad value."""
        names = {limit.name for limit in dataclasses.fields(self)}
        for name, value in changes.items():
            if name not in names:
                raise ValueError(f"unknown limit {name!r} (limits: {', '.join(sorted(names))})")
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"limit {name} must be a non-negative integer")
        return dataclasses.replace(self, **changes)


DEFAULT_LIMITS = Limits()

#: Largest |x| or |y| of a node's position on the canvas. Not a resource (`--trust` does not lift
#: it): a node far beyond it, or at NaN or infinity, cannot be shown or framed, so a file with one
#: is refused. The widest real patch spans a few ten thousand units.
MAX_POSITION = 1_000_000.0

#: The limits of `--trust`: a file the person vouches for may use the whole machine.
TRUSTED_LIMITS = Limits(
    **{limit.name: sys.maxsize for limit in dataclasses.fields(Limits)}
).replaced(int_digits=sys.get_int_max_str_digits() or 4300, texture_side=16384)

_active = DEFAULT_LIMITS


def active_limits() -> Limits:
    """The limits in force in this process."""
    return _active


def set_active_limits(limits: Limits) -> None:
    """Replace the limits in force (the command line does, before loading a file)."""
    global _active
    _active = limits
