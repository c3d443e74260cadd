"""Definitions and instances: the pins a definition gives its instances, and the rules that keep a
document of definitions sound.

A document (the root Patch) keeps named definitions, each a Patch of its own (its body), whose
`owner` is the document. A `subpatch` node names a definition; its input pins are the body's
`subpatch.inlet` nodes and its outputs the body's `subpatch.outlet` nodes, in body order. A pin's
type follows what the inlet or outlet is linked to inside (the first link, in link order), else
`float` for an inlet (0.0 until set) and `any` for an outlet. An inlet's default is its `default`
value when the pin type takes it; an inlet whose `default` is unset (None, as a new inlet's) or
does not suit gives the value of the pin it feeds, so wiring it in changes no picture. An
instance's value that equals its pin's old default follows a new one (`Patch` re-derives
instances so): instances nobody set follow the inlet's default, as parameters at their default
follow a changed default in Houdini's digital assets.

Rules checked here, before an edit changes anything:
- no definition contains an instance of itself, directly or through others (`CycleError` naming
  the chain, e.g. `a -> b -> a`);
- the document expanded (every instance replaced by its body, at every depth) stays within the
  limit `nodes`, so a small file cannot describe an exponential patch;
- definitions nest at most MAX_NESTING deep.

Plain functions over Patches, no state of their own: nodes.document.patch calls them.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from nodes.errors import CycleError, PatchValueError
from nodes.limits import active_limits
from nodes.spec import NodeSpec, OutputSpec, PinSpec, get_spec
from nodes.types import coerce_value, zero_of

if TYPE_CHECKING:  # nodes.document.patch's methods call this module: no import at run time
    from nodes.document.patch import NodeInstance, Patch

SUBPATCH, INLET, OUTLET = "subpatch", "subpatch.inlet", "subpatch.outlet"
MAX_NESTING = 64
"""The most definitions inside one another: an edit of the innermost body re-derives the
instances of every level in turn, one Python call chain deep (200 levels overflowed it)."""
PORT_TYPES = (INLET, OUTLET)
UNLINKED_INLET_TYPE = "float"
"""The type of the pin an inlet linked to nothing inside gives its instances."""


def is_instance(instance: NodeInstance) -> bool:
    return instance.spec.id == SUBPATCH


def definition_name(instance: NodeInstance) -> str:
    return str(instance.values.get("definition", ""))


def checked_definition_name(name: Any) -> str:
    """A definition name as given, or PatchValueError: non-empty text without "/"."""
    if not isinstance(name, str) or not name.strip() or "/" in name:
        raise PatchValueError(f"bad definition name {name!r} (non-empty, without '/')")
    return name


# ----------------------------------------------------------------------------- pins


def ports(body: Patch, type_id: str) -> Iterator[NodeInstance]:
    """The body's inlets or outlets, in body order."""
    return (node for port in body.ports if (node := body.nodes[port]).type_id == type_id)


_UNSET = object()


def _suited(pin_type: str, value: Any) -> Any:
    """`value` as a value of `pin_type`, or _UNSET when it is not one."""
    try:
        return coerce_value(pin_type, value)
    except ValueError:
        return _UNSET


def inlet_pin(body: Patch, inlet: NodeInstance) -> PinSpec:
    """The pin `inlet` gives the instances of `body` (see the module note for its type). Its
    default: the inlet's `default` when it suits that type; else, for a linked inlet, the value
    the pin it feeds held (wiring an inlet in changes nothing until an instance is given another
    value); else the type's zero (an unlinked inlet is a float pin, default 0.0)."""
    pin_type, hint, low, high, fed = UNLINKED_INLET_TYPE, None, None, None, _UNSET
    choices = None
    for link in body.links_out_of(inlet.id):
        target_node = body.nodes[link.dst]
        target = target_node.input(link.dst_pin)
        if target is not None:
            pin_type, hint, low, high = target.type, target.hint, target.minimum, target.maximum
            choices = target.choices
            fed = target_node.values.get(link.dst_pin, target.default)
            break
    default = _suited(pin_type, inlet.values.get("default"))
    if default is _UNSET and fed is not _UNSET:
        default = _suited(pin_type, fed)
    if default is _UNSET:
        default = zero_of(pin_type)
    if hint == "live":
        hint = None  # the instance's pin is a person's to set, not a control's
    return PinSpec(str(inlet.values["name"]), pin_type, default, hint=hint, minimum=low,
                   maximum=high, choices=choices)  # fmt: skip


def _outlet_pin(body: Patch, outlet: NodeInstance) -> OutputSpec:
    link = body.link_into(outlet.id, "in")
    pin_type = "any"
    if link is not None:
        source = body.nodes[link.src]
        index = source.spec.output_index(link.src_pin)
        if index is not None:
            pin_type = source.spec.outputs[index].type
    return OutputSpec(str(outlet.values["name"]), pin_type, zero_of(pin_type))


def definition_pins(body: Patch) -> tuple[tuple[PinSpec, ...], tuple[OutputSpec, ...]]:
    """The dynamic input pins and the outputs that instances of `body` have."""
    inputs = tuple(inlet_pin(body, inlet) for inlet in ports(body, INLET))
    outputs = tuple(_outlet_pin(body, outlet) for outlet in ports(body, OUTLET))
    return inputs, outputs


def instance_spec(body: Patch) -> NodeSpec:
    """The spec of every instance of `body`: the library's `subpatch` with the definition's pins.
    One object per shape of the pins, so unchanged pins compare (and are) equal."""
    pins = definition_pins(body)
    cached = body.instance_spec_cache
    if cached is not None and cached[0] == pins:
        return cached[1]
    base = get_spec(SUBPATCH)
    assert base is not None
    inputs = pins[0]

    def dynamic_inputs(values: Mapping[str, Any], folder: Any) -> tuple[PinSpec, ...]:
        return inputs

    spec = dataclasses.replace(base, outputs=pins[1], dynamic_inputs=dynamic_inputs)
    body.instance_spec_cache = (pins, spec)
    return spec


def unique_port_name(body: Patch, type_id: str, wanted: str, skip: str | None = None) -> str:
    """`wanted`, or `wanted2`, `wanted3`... : a name no other port of this kind uses."""
    taken = {str(n.values.get("name")) for n in ports(body, type_id) if n.id != skip}
    if type_id == INLET:
        taken.add("definition")  # the instance's own pin
    if wanted not in taken:
        return wanted
    count = 2
    while f"{wanted}{count}" in taken:
        count += 1
    return f"{wanted}{count}"


# ----------------------------------------------------------------------------- structure


def contained(document: Patch) -> dict[str, dict[str, int]]:
    """Per definition, how many instances of each definition its body holds (a copy)."""
    return {name: dict(body.instance_counts) for name, body in document.definitions.items()}


def check_instance_allowed(container: Patch, name: str, replacing: str | None = None) -> None:
    """Refuse an instance of definition `name` in `container` (the document or a body) with
    PatchValueError when there is no such definition, CycleError when the body would then contain
    itself, and PatchValueError when the expanded document would exceed the limit `nodes`.
    `replacing`: the definition the instance names now (switching it to `name`)."""
    document = container.document
    if name not in document.definitions:
        raise PatchValueError(f"no definition {name!r} in the document")
    if document.checks_deferred:
        return
    counts = contained(document)
    if container.name is not None:
        chain = _chain(counts, name, container.name)
        if chain is not None:
            cycle = [container.name, *chain]
            raise CycleError("a definition cannot contain itself: " + " -> ".join(cycle), cycle)
    top = dict(document.instance_counts)
    target = counts[container.name] if container.name is not None else top
    target[name] = target.get(name, 0) + 1
    if replacing is not None and target.get(replacing):
        target[replacing] -= 1
    added = replacing is None  # a new node: the instance itself counts too
    grown = container.name if added else None
    check_expanded_size(document, counts, top, grown, new_nodes=int(added and grown is None))


def _chain(counts: Mapping[str, Mapping[str, int]], start: str, goal: str) -> list[str] | None:
    """Definitions start -> ... -> goal along "holds an instance of", or None."""
    return find_path(start, goal, lambda name: counts.get(name, {}))


def find_path(start: str, goal: str, following: Callable[[str], Iterable[str]]) -> list[str] | None:
    """A path start -> ... -> goal, each step to one of `following(current)`, or None
    (depth-first, without recursion)."""
    parent: dict[str, str | None] = {start: None}
    stack = [start]
    while stack:
        current = stack.pop()
        if current == goal:
            path = [current]
            while (previous := parent[path[-1]]) is not None:
                path.append(previous)
            return path[::-1]
        for after in following(current):
            if after not in parent:
                parent[after] = current
                stack.append(after)
    return None


def definition_cycle(document: Patch) -> list[str] | None:
    """A chain of definitions that contain each other, `a -> ... -> a`, or None."""
    counts = contained(document)
    for name in counts:
        for inner in counts[name]:
            chain = _chain(counts, inner, name)
            if chain is not None:
                return [name, *chain]
    return None


def expanded_sizes(
    document: Patch,
    counts: Mapping[str, Mapping[str, int]] | None = None,
    grown: str | None = None,
) -> dict[str, int]:
    """Per definition, the nodes one of its instances expands to, with one more node in `grown`
    when given. Iterative, innermost definitions first; CycleError if definitions contain each
    other, PatchValueError if they nest deeper than MAX_NESTING."""
    counts = contained(document) if counts is None else counts
    sizes: dict[str, int] = {}
    depths: dict[str, int] = {}  # 1: a body without instances
    known = document.definitions
    for root in counts:
        if root in sizes:
            continue
        # Definitions being sized, each holding an instance of the next, with an iterator over
        # the definitions its body holds (each looked at once: linear, however deep or wide).
        path = [(root, iter(counts.get(root, {})))]
        on_path = {root}
        while path:
            name, holds = path[-1]
            missing = next((i for i in holds if i in known and i not in sizes), None)
            if missing is None:
                inner = counts.get(name, {})
                sizes[name] = (
                    len(known[name].nodes)
                    + (name == grown)
                    + sum(n * sizes[i] for i, n in inner.items() if i in known)
                )
                depths[name] = 1 + max((depths[i] for i in inner if i in known), default=0)
                if depths[name] > MAX_NESTING:
                    raise PatchValueError(
                        f"definition {name!r} nests {depths[name]} definitions deep, "
                        f"above the most, {MAX_NESTING}"
                    )
                path.pop()
                on_path.discard(name)
            elif missing in on_path:
                names = [entry[0] for entry in path]
                cycle = [*names[names.index(missing) :], missing]
                raise CycleError("a definition cannot contain itself: " + " -> ".join(cycle), cycle)
            else:
                path.append((missing, iter(counts.get(missing, {}))))
                on_path.add(missing)
    return sizes


def check_expanded_size(
    document: Patch,
    counts: Mapping[str, Mapping[str, int]] | None = None,
    top: Mapping[str, int] | None = None,
    grown: str | None = None,
    new_nodes: int = 0,
) -> None:
    """PatchValueError when the document expanded would exceed the limit `nodes` (with one more
    node in the body of definition `grown`, when given, and `new_nodes` more in the document).
    Nothing while the document defers its checks (`Patch.checks_deferred`)."""
    if document.checks_deferred:
        return
    limits = active_limits()
    counts = contained(document) if counts is None else counts
    sizes = expanded_sizes(document, counts, grown)
    top = document.instance_counts if top is None else top
    total = (
        len(document.nodes)
        + new_nodes
        + sum(count * sizes.get(name, 0) for name, count in top.items())
    )
    for name, body_size in sizes.items():
        if body_size > limits.nodes:
            raise PatchValueError(
                f"definition {name!r} expanded: {limits.exceeded('nodes', body_size)}"
            )
    if total > limits.nodes:
        raise PatchValueError(f"the patch expanded: {limits.exceeded('nodes', total)}")


def instances_of(document: Patch, name: str) -> list[tuple[Patch, str]]:
    """Every instance of definition `name`: (the patch holding it, its id), document first."""
    found = []
    for container in (document, *document.definitions.values()):
        found += [
            (container, node.id)
            for node in container.nodes.values()
            if is_instance(node) and definition_name(node) == name
        ]
    return found


# ----------------------------------------------------------------------------- group, ungroup


def _crossing_cycle(container: Patch, chosen: set[str]) -> list[str] | None:
    """Nodes outside `chosen` that its instance would both feed and be fed by (a cycle once the
    selection is one node), as a path from the selection back to it, or None."""
    parent: dict[str, str] = {}
    stack: list[str] = []
    for node_id in chosen:
        for link in container.links_out_of(node_id):
            pin = container.nodes[link.dst].input(link.dst_pin)
            if link.dst not in chosen and link.dst not in parent and not (pin and pin.feedback):
                parent[link.dst] = node_id
                stack.append(link.dst)
    while stack:
        current = stack.pop()
        for link in container.links_out_of(current):
            pin = container.nodes[link.dst].input(link.dst_pin)
            if link.dst in chosen:
                path = [link.dst, current]
                while path[-1] in parent:
                    path.append(parent[path[-1]])
                return path[::-1]
            if link.dst not in parent and not (pin and pin.feedback):
                parent[link.dst] = current
                stack.append(link.dst)
    return None


def group(container: Patch, node_ids: list[str], name: str) -> str:
    """See `Patch.group`."""
    document = container.document
    checked_definition_name(name)
    if name in document.definitions:
        raise PatchValueError(f"definition {name!r} already exists")
    if not node_ids:
        raise PatchValueError("nothing to group: select nodes first")
    chosen = set(node_ids)
    for node_id in node_ids:
        container.node(node_id)
    cycle = _crossing_cycle(container, chosen)
    if cycle is not None:
        raise CycleError(
            "grouping would close the cycle " + " -> ".join(cycle) + " through the new instance",
            cycle,
        )
    ordered = [node_id for node_id in container.nodes if node_id in chosen]
    links = container.links
    inner = [ln for ln in links if ln.src in chosen and ln.dst in chosen]
    entering = [ln for ln in links if ln.src not in chosen and ln.dst in chosen]
    leaving = [ln for ln in links if ln.src in chosen and ln.dst not in chosen]
    xs = [container.nodes[n].pos[0] for n in ordered]
    ys = [container.nodes[n].pos[1] for n in ordered]
    centre = ((min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2)
    records = [
        (n, container.nodes[n].type_id, container.nodes[n].values, container.nodes[n].pos)
        for n in ordered
    ]

    document.add_definition(name, type(document)())  # a new, empty Patch
    body = document.definition(name)
    for node_id, type_id, values, pos in records:
        body.add_node(type_id, values, pos, node_id=node_id)
    for link in inner:
        body.connect(*link, check_cycles=False)
    # One inlet per outside source, one outlet per inside source that feeds the outside.
    inlets: dict[tuple[str, str], str] = {}
    instance_values: dict[str, Any] = {"definition": name}
    for link in entering:
        source = (link.src, link.src_pin)
        if source not in inlets:
            stored = container.nodes[link.dst].values.get(link.dst_pin)
            inlet_id = body.add_node(
                INLET,
                {"name": link.dst_pin, "default": stored},
                (min(xs) - 250.0, centre[1] + 60.0 * len(inlets)),
            )
            inlets[source] = inlet_id
            instance_values[str(body.nodes[inlet_id].values["name"])] = stored
        body.connect(inlets[source], "out", link.dst, link.dst_pin, check_cycles=False)
    outlets: dict[tuple[str, str], str] = {}
    for link in leaving:
        source = (link.src, link.src_pin)
        if source not in outlets:
            outlet_id = body.add_node(
                OUTLET, {"name": link.src_pin}, (max(xs) + 250.0, centre[1] + 60.0 * len(outlets))
            )
            outlets[source] = outlet_id
            body.connect(link.src, link.src_pin, outlet_id, "in", check_cycles=False)

    for node_id in ordered:
        container.remove_node(node_id)
    pin_of = {
        source: str(body.nodes[port].values["name"])
        for source, port in [*inlets.items(), *outlets.items()]
    }
    values = {
        key: value
        for key, value in instance_values.items()
        if key == "definition" or _accepts(body, key, value)
    }
    instance_id = container.add_node(SUBPATCH, values, centre)
    made: set[tuple[str, str, str, str]] = set()
    for link in entering:
        wired = link._replace(dst=instance_id, dst_pin=pin_of[(link.src, link.src_pin)])
        if wired not in made:
            made.add(wired)
            container.connect(*wired, check_cycles=False)
    for link in leaving:
        container.connect(
            instance_id,
            pin_of[(link.src, link.src_pin)],
            link.dst,
            link.dst_pin,
            check_cycles=False,
        )
    return instance_id


def _accepts(body: Patch, pin_name: str, value: Any) -> bool:
    pin = next((p for p in definition_pins(body)[0] if p.name == pin_name), None)
    if pin is None:
        return False
    try:
        coerce_value(pin.type, value)
    except ValueError:
        return False
    return True


def ungroup(container: Patch, instance_id: str) -> list[str]:
    """See `Patch.ungroup`."""
    instance = container.node(instance_id)
    if not is_instance(instance):
        raise PatchValueError(f"{instance_id!r} is not an instance of a definition")
    name = definition_name(instance)
    body = container.definition(name)
    fed = {
        link.dst_pin: (link.src, link.src_pin)
        for link in container.links_into(instance_id).values()
    }
    feeding = [
        (link.src_pin, link.dst, link.dst_pin) for link in container.links_out_of(instance_id)
    ]
    stored = dict(instance.values)
    plain = [node for node in body.nodes.values() if node.type_id not in PORT_TYPES]
    xs = [node.pos[0] for node in plain] or [0.0]
    ys = [node.pos[1] for node in plain] or [0.0]
    centre = ((min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2)
    offset = (instance.pos[0] - centre[0], instance.pos[1] - centre[1])
    records = [(node.id, node.type_id, node.values, node.pos) for node in plain]
    inlet_names = {port.id: str(port.values["name"]) for port in ports(body, INLET)}
    outlet_feeds = {port.id: body.link_into(port.id, "in") for port in ports(body, OUTLET)}
    outlet_sources = {str(body.nodes[port].values["name"]): link
                      for port, link in outlet_feeds.items()}  # fmt: skip
    body_links = body.links

    container.remove_node(instance_id)
    new_id: dict[str, str] = {}
    for node_id, type_id, values, pos in records:
        wanted = None if node_id in container.nodes else node_id
        new_id[node_id] = container.add_node(
            type_id, values, (pos[0] + offset[0], pos[1] + offset[1]), node_id=wanted
        )

    def outside(src: str, src_pin: str) -> tuple[str, str] | None:
        """Where a body output comes from once inlined (None: an inlet nothing feeds, or an
        outlet nothing feeds; an outlet passes on what feeds it)."""
        while src in outlet_feeds:
            inner = outlet_feeds[src]
            if inner is None:
                return None
            src, src_pin = inner.src, inner.src_pin
        if src in inlet_names:
            return fed.get(inlet_names[src])
        return new_id[src], src_pin

    for link in body_links:
        if link.dst not in new_id:
            continue  # into an outlet: the links out of the instance take its place
        source = outside(link.src, link.src_pin)
        if source is not None:
            container.connect(*source, new_id[link.dst], link.dst_pin, check_cycles=False)
        elif link.src in inlet_names:
            _set_if_accepted(container, new_id[link.dst], link.dst_pin,
                             stored.get(inlet_names[link.src]))  # fmt: skip
    for src_pin, dst, dst_pin in feeding:
        inner = outlet_sources.get(src_pin)
        source = outside(inner.src, inner.src_pin) if inner is not None else None
        if source is not None:
            container.connect(*source, dst, dst_pin, check_cycles=False)
    if not instances_of(container.document, name):
        container.remove_definition(name)
    return [new_id[node_id] for node_id, *_ in records]


def _set_if_accepted(container: Patch, node_id: str, pin: str, value: Any) -> None:
    """Give the pin the inlet's value, unless it does not suit the pin (it keeps its own)."""
    with contextlib.suppress(PatchValueError):
        container.set_value(node_id, pin, value)
