"""Every node type of the built-in library documents itself: one short sentence for the node
(its `summary`, shown by the library panel, tab search and `patchbay nodes`) and one for each
input and output pin (shown in pin tooltips and the help window)."""

from __future__ import annotations

import pytest

import nodes.library  # noqa: F401 - registers the library
from nodes import LIBRARY
from nodes.spec import NodeSpec

SUMMARY_MAX_CHARS = 120


def _library_specs() -> list[NodeSpec]:
    """The specs defined by the library's modules (tests register their own nodes too)."""
    return sorted(
        (spec for spec in LIBRARY.values() if spec.compute.__module__.startswith("nodes.library")),
        key=lambda spec: spec.id,
    )


SPECS = _library_specs()


def test_the_library_is_found() -> None:
    ids = {spec.id for spec in SPECS}
    assert {"math.add", "gpu.shader", "osc.in", "midi.cc", "subpatch"} <= ids


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.id)
def test_node_has_a_short_summary(spec: NodeSpec) -> None:
    summary = spec.summary
    assert summary, f"{spec.id} has no docstring"
    assert summary.endswith("."), f"{spec.id}: {summary!r} is not a sentence"
    assert len(summary) <= SUMMARY_MAX_CHARS, f"{spec.id}: summary of {len(summary)} chars"
    assert summary[0].isupper() or not summary[0].isalpha(), f"{spec.id}: {summary!r}"


@pytest.mark.parametrize("spec", SPECS, ids=lambda spec: spec.id)
def test_every_pin_has_a_sentence(spec: NodeSpec) -> None:
    names = [pin.name for pin in spec.inputs] + [out.name for out in spec.outputs]
    missing = [name for name in names if not spec.pin_docs.get(name, "").strip()]
    assert not missing, f"{spec.id}: pins without docs: {missing}"
    unknown = set(spec.pin_docs) - set(names)
    assert not unknown, f"{spec.id}: docs for pins it does not have: {sorted(unknown)}"
    for name in names:
        assert spec.pin_docs[name].rstrip().endswith("."), f"{spec.id}.{name}: not a sentence"
