"""Small example patches for the node help: one node type shown at work.

`example_patch(type_id)` reads the hand-made `resources/help/<type id>.patchbay` when there is
one, and otherwise builds a patch from the spec: the node in the middle, a source for each input
whose type has an obvious one (a slider for numbers, a toggle for booleans, a ramp for arrays, a
texture generator for textures) on the left, and a sink for each output (gpu.output or gpu.preview
for textures, output.value for the rest) on the right. Pins with no obvious source (text, colours,
2-vectors, integers, live pins) keep their default values on the node, where the inspector edits
them. Columns are stacked with heights estimated from the pin counts, so no two nodes overlap on
the canvas. Qt-free: the editor opens the result as a new untitled document.

`example_paths()` lists the bundled example patches (resources/examples), which the editor's
File > Examples menu opens.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from nodes import LIBRARY, NodeSpec, Patch, PinSpec, is_picture, load_patch

COLUMN_X = (0.0, 320.0, 640.0)  # sources, the node, sinks
NODE_GAP = 40.0
HEADER_HEIGHT = 60.0
PIN_HEIGHT = 26.0
THUMBNAIL_HEIGHT = 70.0  # a texture thumbnail under the body, with its gap
NUMBER_TYPES = ("float", "num", "any")
TEXTURE_SOURCES = ("gpu.noise", "gpu.circle", "gpu.gradient")


def example_paths() -> list[Path]:
    """The bundled example patches, by name."""
    folder = Path(str(resources.files("resources").joinpath("examples")))
    return sorted(folder.glob("*.patchbay"))


def hand_made_example(type_id: str) -> Patch | None:
    """The patch in resources/help/<type_id>.patchbay, if there is one."""
    entry = resources.files("resources").joinpath("help", f"{type_id}.patchbay")
    if not entry.is_file():
        return None
    with resources.as_file(entry) as path:
        return load_patch(path)


def example_patch(type_id: str) -> Patch:
    """A tiny patch that uses `type_id` (see the module note); KeyError for an unknown type."""
    spec = LIBRARY[type_id]
    made = hand_made_example(type_id)
    if made is not None:
        return made
    return generated_example(spec)


def node_height(spec: NodeSpec) -> float:
    """About how tall the canvas draws a node of this type, thumbnail included."""
    rows = max(len(spec.inputs), len(spec.outputs), 1)
    thumbnail = any(is_picture(out.type) for out in spec.outputs)
    return HEADER_HEIGHT + PIN_HEIGHT * rows + (THUMBNAIL_HEIGHT if thumbnail else 0.0)


def _source_for(pin: PinSpec, textures_used: int) -> tuple[str, dict[str, object]] | None:
    """The node type (and its values) that feeds `pin` in an example, or None to keep the value."""
    if pin.hint in ("live", "code", "file"):
        return None
    if pin.type in NUMBER_TYPES:
        default = pin.default if isinstance(pin.default, int | float) else 0.0
        low = pin.minimum if pin.minimum is not None else min(0.0, float(default))
        high = pin.maximum if pin.maximum is not None else max(1.0, float(default))
        return "input.float", {"value": float(default), "min": float(low), "max": float(high)}
    if pin.type == "bool":
        return "input.toggle", {"value": bool(pin.default)}
    if pin.type == "array":
        return "array.linspace", {"start": 0.0, "stop": 1.0, "count": 8}
    if is_picture(pin.type):
        return TEXTURE_SOURCES[min(textures_used, len(TEXTURE_SOURCES) - 1)], {}
    return None


def generated_example(spec: NodeSpec) -> Patch:
    """The node, a source per input that has one and a sink per output, in three columns."""
    patch = Patch()
    sources: list[tuple[str, str, dict[str, object]]] = []  # (pin, type id, values)
    # Values and user inputs are sources themselves: their values are edited on the node.
    fed = spec.category not in ("value", "input")
    for pin in spec.inputs if fed else ():
        textures_used = sum(1 for _, type_id, _ in sources if type_id.startswith("gpu."))
        found = _source_for(pin, textures_used)
        if found is not None:
            sources.append((pin.name, *found))
    y = 0.0
    for pin_name, type_id, values in sources:
        patch.add_node(type_id, values, (COLUMN_X[0], y), node_id=f"{pin_name}_source")
        y += node_height(LIBRARY[type_id]) + NODE_GAP
    node_id = patch.add_node(spec.id, None, (COLUMN_X[1], 0.0), node_id=_short_id(spec.id))
    for pin_name, _type_id, _values in sources:
        patch.connect(f"{pin_name}_source", "out", node_id, pin_name)
    if not spec.sink:
        y = 0.0
        previewed = False
        for out in spec.outputs:
            if is_picture(out.type):
                sink = "gpu.preview" if previewed else "gpu.output"
                previewed = True
            else:
                sink = "output.value"
            sink_id = patch.add_node(sink, None, (COLUMN_X[2], y), node_id=f"{out.name}_result")
            patch.connect(node_id, out.name, sink_id, "in")
            y += node_height(LIBRARY[sink]) + NODE_GAP
    return patch


def _short_id(type_id: str) -> str:
    """The example node's id: the part of the type id after the category."""
    return type_id.rsplit(".", 1)[-1]
