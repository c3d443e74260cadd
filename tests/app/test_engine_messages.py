"""The messages between editor and engine: every registered message round-trips through JSON, and
what is no message of the protocol is refused in one line naming the message and the field."""

from __future__ import annotations

import json

import pytest

from app.engine.protocol import messages as m

EXAMPLES: list[m.Message] = [
    # editor -> engine
    m.Hello(m.PROTOCOL_VERSION),
    m.PatchDocument(
        3,
        7,
        {"format": "patchbay"},
        {"a": {"dtype": "<f4", "shape": [2], "index": 0}},
        "/shows",
        "/shows/a.patchbay",
        4,
    ),
    m.Edits(2, 3, 7, [{"op": "move", "node": "a", "pos": [1.0, 2.0]}]),
    m.DocumentPath("/shows/a.patchbay"),
    m.GetPatch(),
    m.Watch(["out"], ["add"]),
    m.Level("blob1/inner2"),
    m.Images(["noise"], [["noise", "out"]]),
    m.Output(True, 1, True),
    m.Pause(True),
    m.Step(-0.5),
    m.Rate(2.0),
    m.FixedStep(25.0),
    m.PresetRecall("A", "transition", 1.5, "linear", "middle", "beat"),
    m.Morph({"A": 0.25, "B": 0.75}),
    m.Crossfade("A", "B", 0.5),
    m.ResetTime(),
    m.Nudge(0.25),
    m.ResyncBeats(),
    m.AllowSend(True),
    m.Services("0.0.0.0"),
    m.Learn("lfo", "rate"),
    m.Retry("slow"),
    m.ProfileRequest("blob1/lfo3", 200),
    m.Quit(True),
    # engine -> editor
    m.EngineHello(m.PROTOCOL_VERSION, 42, 3, 7, True, "llvmpipe", True, 41, {"slow": "hung"}),
    m.ResyncNeeded("revisions disagree"),
    m.Report(
        frame=9,
        rev=3,
        applied=[2, 8],
        fps=60.0,
        frame_ms=1.5,
        mode="flat",
        build_ms=3.0,
        paused=False,
        rate=1.0,
        fixed_fps=None,
        output_open=True,
        output_screen="0: HDMI",
        output_fullscreen=False,
        bypassed={},
        nodes={"a": ["HOT", "ok", None]},
        values={"a": {"out": 1.0}},
        images=[{"node": "a", "pin": "out", "size": [96, 54], "role": "thumbnail"}],
        ids=["a"],
    ),
    m.Learned("lfo", "rate", "midi:cc:1", "nanoKONTROL"),
    m.LearnUnreachable("lfo", "rate", "OSC off", "free the port"),
    m.ServiceChanged("osc", "on", "listening on 127.0.0.1:9000", "", "127.0.0.1:9000"),
    m.NodeFailed("blob1/lfo3", "ZeroDivisionError: division by zero"),
    m.LiveValues([["lfo", "rate", 0.5]], 2),
    m.ProfileReply(
        10,
        [["a", 10, 0.5, 0.4, "HOT"]],
        {"a": 0.1},
        "",
        [["blob1", 0.5]],
        {"node": "a", "lines": ["a: HOT"]},
    ),
    m.Error("edits: malformed"),
]


def _registered() -> list[tuple[str, type[m.Message]]]:
    return [("to engine", cls) for cls in m.TO_ENGINE.values()] + [
        ("to editor", cls) for cls in m.TO_EDITOR.values()
    ]


def test_every_registered_message_has_an_example() -> None:
    shown = {type(example) for example in EXAMPLES}
    missing = sorted({cls.__name__ for _, cls in _registered()} - {c.__name__ for c in shown})
    assert not missing, f"add an example of {', '.join(missing)} to EXAMPLES"


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: type(example).__name__)
def test_every_message_round_trips_through_json(example: m.Message) -> None:
    registries = [r for r in (m.TO_ENGINE, m.TO_EDITOR) if r.get(example.TYPE) is type(example)]
    assert registries, f"{type(example).__name__} is in no registry"
    wire = json.loads(json.dumps(m.encode(example)))
    assert wire["type"] == example.TYPE
    for registry in registries:
        assert m.decode(wire, registry) == example


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        ({"type": "dance"}, "unknown message type 'dance'"),
        ({"kind": "pause"}, "unknown message type None"),
        ({"type": "pause"}, "pause: missing field 'paused'"),
        ({"type": "pause", "paused": 1}, "pause: 'paused' must be true or false, not 1"),
        ({"type": "pause", "paused": True, "why": "x"}, "pause: unknown field 'why'"),
        ({"type": "rate", "rate": "fast"}, "rate: 'rate' must be a number, not 'fast'"),
        ({"type": "watch", "nodes": "out"}, "watch: 'nodes' must be a list, not 'out'"),
        ({"type": "morph", "weights": [1, 2]}, "morph: 'weights' must be an object, not [1, 2]"),
        ({"type": "learn", "node": 3}, "learn: 'node' must be a string or null, not 3"),
        (
            {"type": "edits", "seq": True, "rev": 0, "vrev": 0, "ops": []},
            "edits: 'seq' must be a whole number, not True",
        ),
    ],
)
def test_what_is_no_message_is_refused_in_one_line(raw: dict, said: str) -> None:
    with pytest.raises(m.MessageError) as caught:
        m.decode(raw, m.TO_ENGINE)
    assert str(caught.value) == said


def test_a_message_travels_only_its_own_direction() -> None:
    with pytest.raises(m.MessageError, match="unknown message type 'report'"):
        m.decode(m.encode(m.Report()), m.TO_ENGINE)
    with pytest.raises(m.MessageError, match="unknown message type 'edits'"):
        m.decode(m.encode(m.Edits(1, 0, 0, [])), m.TO_EDITOR)


def test_the_engine_has_a_handler_for_every_message_sent_to_it() -> None:
    from app.engine.engine import ArrivedPatch, Engine
    from nodes import Patch

    engine = Engine(Patch())
    try:
        expected = {cls for cls in m.TO_ENGINE.values() if cls is not m.PatchDocument}
        # a patch is built on the reader thread and handled with its Patch
        assert set(engine._handlers) == expected | {ArrivedPatch}
    finally:
        engine.close()
