"""Subpatch node types: an instance of a definition, and the inlets and outlets of a definition.

A definition is a Patch kept in the document (`Patch.add_definition`). Its `subpatch.inlet` and
`subpatch.outlet` nodes become the input and output pins of every `subpatch` node that names it
(nodes.document.definitions derives them). Evaluators never call these compute functions for
instances: they expand every instance into its definition's nodes (evaluators/graph/view.py). Run on
its own, a definition's body still works: an inlet gives its `default`, an outlet passes its input
on. An inlet's `default` is stored as it is given (of any type); the pin its instances get coerces
it to the pin's type, and an unset one (None) follows the pin the inlet feeds
(nodes.document.definitions.inlet_pin), which the inspector shows and edits.
"""

from __future__ import annotations

from typing import Any

from nodes.spec import node


@node(
    "subpatch.inlet",
    outputs={"out": "any"},
    output_defaults={"out": None},
    docs={
        "name": "The name of the pin instances show.",
        "default": "What an instance's pin holds until set on the instance (of the pin's type;"
        " unset: the value of the pin the inlet feeds, or 0.0).",
        "out": "What the instance's pin receives.",
    },
)
def inlet(name: str = "in", default: Any = None) -> Any:
    """An input pin of a subpatch definition.

    Instances show a pin of this name; inside, it gives what
    the instance's pin receives (its `default` when nothing does)."""
    return default


@node(
    "subpatch.outlet",
    outputs={"out": "any"},
    output_defaults={"out": None},
    passthrough="in",
    docs={
        "name": "The name of the pin instances show.",
        "in": "What the instance's pin gives.",
        "out": "What in receives, passed on.",
    },
)
def outlet(name: str = "out", in_: Any = None) -> Any:
    """An output pin of a subpatch definition.

    Instances show a pin of this name, giving what this
    node's input receives inside."""
    return in_


def _no_pins(values: Any, folder: Any) -> tuple[Any, ...]:
    return ()


@node(
    "subpatch",
    outputs={},
    dynamic_inputs=_no_pins,
    dynamic_from=("definition",),
    docs={"definition": "The name of the definition it is an instance of."},
)
def subpatch(definition: str = "", pins: Any = None) -> Any:
    """An instance of a subpatch definition of the document.

    Its pins are the definition's inlets and
    outlets, its values are its own, and editing the definition edits every instance."""
    raise RuntimeError(f"an instance of {definition!r} runs expanded, never as one node")
