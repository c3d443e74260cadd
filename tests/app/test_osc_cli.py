"""`patchbay run` with OSC: `--osc-port` over `settings.osc_port`, a port in use, `--allow-send`."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pythonosc.dispatcher import Dispatcher
from pythonosc.osc_server import ThreadingOSCUDPServer

from nodes import Patch, PatchError, load_patch, save_patch
from tests.app.test_cli import run_cli
from tests.waiting import poll_until


@pytest.fixture
def taken_ports() -> Iterator[list[int]]:
    """Two UDP ports on 127.0.0.1 held by the test, so an OSC server cannot have them."""
    sockets = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    for sock in sockets:
        sock.bind(("127.0.0.1", 0))
    yield [sock.getsockname()[1] for sock in sockets]
    for sock in sockets:
        sock.close()


def listening_patch(tmp_path: Path, port: int) -> Path:
    patch = Patch()
    patch.add_node("osc.in", {"address": "/fader/1"}, node_id="fader")
    patch.update_settings(osc_port=port)
    path = tmp_path / "listen.patchbay"
    save_patch(patch, path)
    return path


def test_the_patch_port_is_used_and_a_port_in_use_is_one_line(
    tmp_path: Path, taken_ports: list[int]
) -> None:
    path = listening_patch(tmp_path, taken_ports[0])
    result = run_cli("run", str(path), "--headless", "--frames", "2", "--print", "fader")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["0 fader.out=0.0", "1 fader.out=0.0"]
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert f"OSC input off: cannot listen on 127.0.0.1:{taken_ports[0]}" in lines[0]


def test_osc_port_overrides_the_patch_setting(tmp_path: Path, taken_ports: list[int]) -> None:
    path = listening_patch(tmp_path, taken_ports[0])
    args = ("run", str(path), "--headless", "--frames", "1", "--print", "fader")
    result = run_cli(*args, "--osc-port", str(taken_ports[1]))
    assert result.returncode == 0, result.stderr
    assert f"cannot listen on 127.0.0.1:{taken_ports[1]}" in result.stderr
    assert str(taken_ports[0]) not in result.stderr
    off = run_cli(*args, "--osc-port", "0")
    assert (off.returncode, off.stderr) == (0, "")


def test_a_bad_osc_port_is_refused(tmp_path: Path) -> None:
    path = listening_patch(tmp_path, 9000)
    result = run_cli("run", str(path), "--headless", "--frames", "1", "--osc-port", "70000")
    assert result.returncode == 2
    assert "--osc-port: '70000' is not a port (0 to 65535; 0: no OSC input)" in result.stderr


def test_a_bad_osc_port_in_a_file_is_refused_with_its_place(tmp_path: Path) -> None:
    path = listening_patch(tmp_path, 9000)
    path.write_text(path.read_text().replace('"osc_port": 9000', '"osc_port": "x"'))
    with pytest.raises(PatchError, match=r"settings\.osc_port"):
        load_patch(path)


@pytest.fixture
def received() -> Iterator[tuple[int, list[Any]]]:
    got: list[Any] = []
    dispatcher = Dispatcher()
    dispatcher.set_default_handler(lambda address, *args: got.append((address, args)))
    server = ThreadingOSCUDPServer(("127.0.0.1", 0), dispatcher)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], got
    server.shutdown()
    server.server_close()


def sending_patch(tmp_path: Path, port: int) -> Path:
    patch = Patch()
    patch.add_node("osc.out", {"in": 0.5, "port": port, "address": "/level"}, node_id="send")
    path = tmp_path / "send.patchbay"
    save_patch(patch, path)
    return path


def test_a_patch_from_a_file_sends_only_with_allow_send(
    tmp_path: Path, received: tuple[int, list[Any]]
) -> None:
    port, got = received
    path = sending_patch(tmp_path, port)
    refused = run_cli("run", str(path), "--headless", "--frames", "2", "--print", "send")
    assert refused.returncode == 4
    assert "not allowed (start with --allow-send" in refused.stdout
    allowed = run_cli(
        "run", str(path), "--headless", "--frames", "2", "--print", "send", "--allow-send"
    )
    assert allowed.returncode == 0, allowed.stderr
    assert poll_until(lambda: got)
    assert got == [("/level", (0.5,))]  # once: the value did not change on the second frame


def test_the_engine_process_gets_the_same_service_options() -> None:
    from app.cli.main import _parser
    from app.engine.options.services import service_flags, service_options
    from app.qt.engine_host import _parser as engine_parser

    asked = _parser().parse_args(
        ["edit", "--osc-port", "9100", "--osc-host", "0.0.0.0", "--allow-send"]
    )
    engine = engine_parser().parse_args(["--run-dir", "x", *service_flags(asked)])
    expected = {"osc_port": 9100, "osc_host": "0.0.0.0", "allow_send": True}
    assert service_options(asked) == service_options(engine) == expected
    assert service_options(_parser().parse_args(["run", "f"])) == {}
