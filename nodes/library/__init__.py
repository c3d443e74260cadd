"""The built-in node library. Importing this package registers every node type."""

from nodes.library import (  # noqa: F401
    audio,
    control,
    core,
    gpu,
    gpu_effects,
    gpu_instancing,
    midi,
    osc,
    shaping,
    subpatch,
    text,
    vector,
    video,
)
