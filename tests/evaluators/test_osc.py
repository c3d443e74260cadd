"""OSC in and out over loopback with python-osc clients and servers in the test, every evaluator.

`osc.in` is driven by the controls runtime (evaluators.controls.runtime), as the frame loops of the
engine and the player do: `Controls.before_frame()` before every `run_frame`. Waits are by deadline
(`poll_until`): a message counts as received once the service's server thread has queued it, and
must then show on the next frame.
"""

from __future__ import annotations

import io
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pythonosc.dispatcher import Dispatcher
from pythonosc.osc_bundle_builder import IMMEDIATELY, OscBundleBuilder
from pythonosc.osc_message_builder import OscMessageBuilder
from pythonosc.osc_server import ThreadingOSCUDPServer
from pythonosc.udp_client import SimpleUDPClient

from evaluators import Controls, ExecutionContext, NodeStatus
from evaluators.controls.events import ControlEvent
from evaluators.services.osc import OscService, well_formed
from nodes import Patch
from tests.waiting import poll_until


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Player:
    """An evaluator on a patch with one `osc.in` node and its controls runtime, its pins watched,
    frames counted."""

    def __init__(self, make_evaluator: Any, address: str, **options: Any) -> None:
        self.patch = Patch()
        self.node = self.patch.add_node("osc.in", {"address": address}, node_id="osc")
        sink = self.patch.add_node("output.value", node_id="sink")
        self.patch.connect(self.node, "out", sink, "in")
        self.evaluator = make_evaluator(self.patch)
        self.evaluator.ctx.services.options.update(options)
        self.evaluator.watch([self.node])
        self.controls = Controls(self.patch, self.evaluator.ctx)
        self.frame = 0
        self.step()  # the first frame opens the service

    @property
    def service(self) -> OscService:
        return self.evaluator.ctx.service("osc")

    def step(self) -> tuple[float, bool, int]:
        self.controls.before_frame()
        self.evaluator.run_frame(self.frame / 60.0, self.frame)
        self.frame += 1
        return tuple(self.evaluator.output(self.node, pin) for pin in ("out", "trigger", "count"))

    def wait_received(self, count: int) -> None:
        assert poll_until(lambda: self.service.pending() >= count), "messages never arrived"


@pytest.fixture
def port() -> int:
    return free_udp_port()


@pytest.fixture
def player_of(make_evaluator: Any, port: int) -> Iterator[Any]:
    made: list[Player] = []

    def make(address: str) -> Player:
        player = Player(make_evaluator, address, osc_port=port)
        made.append(player)
        return player

    yield make
    for player in made:
        player.evaluator.ctx.release_all()


def test_a_value_shows_on_the_frame_after_it_arrived(player_of: Any, port: int) -> None:
    player = player_of("/fader/1")
    assert player.service.listening == ("127.0.0.1", port)
    assert player.step() == (0.0, False, 0)
    SimpleUDPClient("127.0.0.1", port).send_message("/fader/1", 0.25)
    player.wait_received(1)
    assert player.step() == (0.25, True, 1)
    assert player.step() == (0.25, False, 0)  # the value stays, the trigger was one frame
    assert player.evaluator.output("sink") == 0.25


def test_a_hundred_messages_in_one_frame_apply_once_latest_wins(player_of: Any, port: int) -> None:
    player = player_of("/fader/1")
    client = SimpleUDPClient("127.0.0.1", port)
    for i in range(100):
        client.send_message("/fader/1", i / 128)  # exact in the 32-bit floats OSC sends
    player.wait_received(100)
    out, trigger, count = player.step()
    assert (out, trigger, count) == (99 / 128, True, 100)
    assert player.service.pending() == 0


def test_five_triggers_in_one_frame_fire_on_five_frames(player_of: Any, port: int) -> None:
    player = player_of("/go")
    client = SimpleUDPClient("127.0.0.1", port)
    for _ in range(5):
        client.send_message("/go", [])  # no argument: a trigger only, `out` unchanged
    player.wait_received(5)
    frames = [player.step() for _ in range(7)]
    assert [trigger for _, trigger, _ in frames] == [True] * 5 + [False] * 2
    assert [count for _, _, count in frames] == [5, 0, 0, 0, 0, 0, 0]
    assert {out for out, _, _ in frames} == {0.0}


# python-osc itself reads the second and third (padding the float, skipping the unknown tag).
GARBAGE = (
    b"garbage",
    b"/fader/1\x00\x00\x00\x00,f\x00\x00\x01",  # a truncated float
    b"/fader/1\x00\x00\x00\x00,fz\x00\x00\x00\x00\x00\x00",  # an unknown type tag
    b"/fader/1\x00\x00\x00\x00,f\x00\x00",  # a float tag without its float
    b"#bundle\x00\x01",
    b"#bundle\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x08/a\x00\x00",  # too long
    b"/a\x00\x00,b\x00\x00\xff\xff\xff\xff",  # a blob longer than the packet
)


@pytest.mark.parametrize("garbage", GARBAGE)
def test_well_formed_refuses_broken_framing(garbage: bytes) -> None:
    assert not well_formed(garbage)


def test_well_formed_takes_what_python_osc_builds() -> None:
    message = OscMessageBuilder("/fader/1")
    for arg in (0.5, "hi", True, b"blob!", 3, 2**40):
        message.add_arg(arg)
    bundle = OscBundleBuilder(IMMEDIATELY)
    bundle.add_content(message.build())
    bundle.add_content(OscMessageBuilder("/go").build())
    assert well_formed(message.build().dgram)
    assert well_formed(bundle.build().dgram)


@given(st.binary(max_size=64))
def test_well_formed_never_raises(data: bytes) -> None:
    assert well_formed(data) in (True, False)
    assert well_formed(b"/a\x00\x00,s\x00\x00" + data) in (True, False)


def test_malformed_packets_are_counted_and_dropped(player_of: Any, port: int) -> None:
    player = player_of("/fader/1")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as raw:
        for garbage in GARBAGE:
            raw.sendto(garbage, ("127.0.0.1", port))
    SimpleUDPClient("127.0.0.1", port).send_message("/fader/1", 0.5)
    SimpleUDPClient("127.0.0.1", port).send_message("/other", 0.7)  # nobody listens
    player.wait_received(len(GARBAGE) + 2)
    assert player.step() == (0.5, True, 1)
    assert player.service.malformed == len(GARBAGE)
    assert player.service.ignored == 1
    assert player.evaluator.status(player.node) != NodeStatus.FAILED


def test_a_port_in_use_is_one_line_and_the_patch_plays_on(make_evaluator: Any) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        log = io.StringIO()
        service = OscService("127.0.0.1", port, allow_send=False, log=log)
        assert log.getvalue() == ""  # nothing is bound before a node listens
        service.listen("/fader/1")
        service.listen("/fader/2")
        assert service.listening is None
        assert log.getvalue().count("\n") == 1
        assert f"OSC input off: cannot listen on 127.0.0.1:{port}" in log.getvalue()
        service.close()
        player = Player(make_evaluator, "/fader/1", osc_port=port)
        try:
            assert player.step() == (0.0, False, 0)
            assert player.evaluator.status(player.node) != NodeStatus.FAILED
            assert player.evaluator.output("sink") == 0.0
        finally:
            player.evaluator.ctx.release_all()


def test_port_zero_turns_input_off(make_evaluator: Any) -> None:
    player = Player(make_evaluator, "/fader/1", osc_port=0)
    try:
        assert player.service.listening is None
        assert player.step() == (0.0, False, 0)
    finally:
        player.evaluator.ctx.release_all()


def test_release_all_closes_the_server(player_of: Any, port: int) -> None:
    player = player_of("/fader/1")
    player.evaluator.ctx.release_all()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as again:
        again.bind(("127.0.0.1", port))  # free again


def test_services_open_only_on_the_frame_thread() -> None:
    ctx = ExecutionContext()
    ctx.services.options["osc_port"] = 0
    errors: list[BaseException] = []

    def off_thread() -> None:
        try:
            ctx.service("osc")
        except RuntimeError as error:
            errors.append(error)

    ctx.advance(0.0, 0)  # this thread runs frames
    thread = threading.Thread(target=off_thread)
    thread.start()
    thread.join()
    assert [str(e) for e in errors] == ["the osc service can only be opened on the frame thread"]
    assert "osc" not in ctx.services
    ctx.service("osc")
    assert "osc" in ctx.services
    ctx.release_all()
    assert "osc" not in ctx.services


class Receiver:
    """A python-osc server on a free loopback port, keeping what it receives."""

    def __init__(self) -> None:
        self.received: list[tuple[str, tuple[Any, ...]]] = []
        dispatcher = Dispatcher()
        dispatcher.set_default_handler(lambda address, *args: self.received.append((address, args)))
        self.server = ThreadingOSCUDPServer(("127.0.0.1", 0), dispatcher)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    made = Receiver()
    yield made
    made.close()


def sender_patch(port: int) -> tuple[Patch, str, str]:
    patch = Patch()
    knob = patch.add_node("input.float", {"value": 0.25, "max": 10.0}, node_id="knob")
    out = patch.add_node("osc.out", {"port": port, "address": "/level"}, node_id="send")
    patch.connect(knob, "out", out, "in")
    return patch, knob, out


def test_osc_out_sends_nothing_unless_allowed(make_evaluator: Any, receiver: Receiver) -> None:
    patch, _, out = sender_patch(receiver.port)
    evaluator = make_evaluator(patch)
    evaluator.ctx.services.options["osc_port"] = 0
    try:
        for frame in range(3):
            evaluator.run_frame(frame / 60.0, frame)
        assert evaluator.status(out) == NodeStatus.FAILED
        assert "--allow-send" in (evaluator.error(out) or "")
        # a message sent after the node's would arrive after it: nothing came before it
        SimpleUDPClient("127.0.0.1", receiver.port).send_message("/marker", 1.0)
        assert poll_until(lambda: receiver.received)
        assert receiver.received == [("/marker", (1.0,))]
    finally:
        evaluator.ctx.release_all()


def test_osc_out_sends_when_allowed_and_on_change(make_evaluator: Any, receiver: Receiver) -> None:
    patch, knob, out = sender_patch(receiver.port)
    evaluator = make_evaluator(patch)
    evaluator.ctx.services.options.update(osc_port=free_udp_port(), allow_send=True)
    try:
        for frame in range(3):
            evaluator.run_frame(frame / 60.0, frame)
        assert poll_until(lambda: receiver.received)
        patch.set_value(knob, "value", 7.5)
        evaluator.run_frame(3 / 60.0, 3)
        assert poll_until(lambda: len(receiver.received) >= 2)
        assert evaluator.status(out) != NodeStatus.FAILED
        assert evaluator.ctx.service("osc").listening is None  # a patch that only sends
        SimpleUDPClient("127.0.0.1", receiver.port).send_message("/marker", 1.0)
        assert poll_until(lambda: len(receiver.received) >= 3)
        assert receiver.received == [("/level", (0.25,)), ("/level", (7.5,)), ("/marker", (1.0,))]
    finally:
        evaluator.ctx.release_all()


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"host": "example.org"}, "OSC host 'example.org' is not an IP address (or localhost)"),
        ({"address": "level"}, "OSC address 'level' must start with '/'"),
        ({"port": 0}, "OSC port 0 is not between 1 and 65535"),
    ],
)
def test_osc_out_refuses_bad_targets(make_evaluator: Any, values: dict, message: str) -> None:
    patch = Patch()
    out = patch.add_node("osc.out", {"port": 9, **values}, node_id="send")
    evaluator = make_evaluator(patch)
    evaluator.ctx.services.options.update(osc_port=0, allow_send=True)
    try:
        evaluator.run_frame(0.0, 0)
        assert evaluator.status(out) == NodeStatus.FAILED
        assert evaluator.error(out) == f"ValueError: {message}"
    finally:
        evaluator.ctx.release_all()


def test_a_flood_between_two_frames_is_bounded_and_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    import evaluators.services.osc as osc_service

    monkeypatch.setattr(osc_service, "MAX_QUEUED", 3)
    service = OscService("127.0.0.1", 0, allow_send=False)
    try:
        service.listen("/fader/1")
        for value in range(5):
            service._enqueue(("/fader/1", float(value)))  # what the server thread does
        assert (service.pending(), service.dropped) == (3, 2)
        service.begin_frame()
        assert service.take_controls() == [
            ControlEvent("osc:/fader/1", float(value)) for value in range(3)
        ]
    finally:
        service.close()
