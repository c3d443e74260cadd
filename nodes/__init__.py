"""patchbay's vocabulary: node specs, pins, the Patch document, the file format, the node library.

Never imports Qt, NodeGraphQt or moderngl.
"""

from nodes import library as _library  # noqa: F401  (registers the built-in node types)
from nodes._errors import (
    CycleError,
    Deferred,
    DuplicateNodeError,
    InputOccupiedError,
    PatchError,
    PatchFileError,
    PatchValueError,
    PinTypeError,
    UnknownNodeError,
    UnknownNodeTypeError,
    UnknownPinError,
    UnsavableValueError,
)
from nodes._fileformat import (
    load_patch,
    patch_from_dict,
    patch_from_text,
    patch_to_dict,
    remove_stale_temporary_files,
    save_patch,
)
from nodes._patch import Backdrop, Link, NodeInstance, Patch, PatchEvent
from nodes._presets import (
    EASINGS,
    START_POINTS,
    SWITCH_POINTS,
    PresetDeck,
    PresetPlayer,
    Recall,
    capture,
    morph,
    oklab_to_srgb,
    preset_named,
    srgb_to_oklab,
)
from nodes._spec import LIBRARY, Determinism, NodeSpec, OutputSpec, PinSpec, Pull, get_spec, node
from nodes._tempo import DEFAULT_BPM, BeatClock, TapTempo, nudge_beats, resync_beats

__all__ = [
    "DEFAULT_BPM",
    "EASINGS",
    "LIBRARY",
    "START_POINTS",
    "SWITCH_POINTS",
    "Backdrop",
    "BeatClock",
    "CycleError",
    "Deferred",
    "Determinism",
    "DuplicateNodeError",
    "InputOccupiedError",
    "Link",
    "NodeInstance",
    "NodeSpec",
    "OutputSpec",
    "Patch",
    "PatchError",
    "PatchEvent",
    "PatchFileError",
    "PatchValueError",
    "PinSpec",
    "PinTypeError",
    "PresetDeck",
    "PresetPlayer",
    "Pull",
    "Recall",
    "TapTempo",
    "UnknownNodeError",
    "UnknownNodeTypeError",
    "UnknownPinError",
    "UnsavableValueError",
    "capture",
    "get_spec",
    "load_patch",
    "morph",
    "node",
    "nudge_beats",
    "oklab_to_srgb",
    "patch_from_dict",
    "patch_from_text",
    "patch_to_dict",
    "preset_named",
    "remove_stale_temporary_files",
    "resync_beats",
    "save_patch",
    "srgb_to_oklab",
]
