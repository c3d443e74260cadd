"""The engine with GPU nodes: the output path reads nothing back; pictures for an editor cost one
small readback each, at most `PICTURES_HZ` times a second, and one whose pixels did not change is
not sent again; a texture that cannot be pictured is tried once until its node changes, and the
other pictures go on."""

from __future__ import annotations

import time
from collections.abc import Callable
from multiprocessing import Pipe
from typing import Any

import pytest

from app.engine.engine import PICTURES_HZ, PREVIEW_SIZE, Connected, EditorLink, Engine
from app.engine.protocol.channel import Channel, patch_message
from evaluators.services.gl import GLService
from nodes import Patch
from tests.waiting import TIMEOUT_S


def noise_patch() -> Patch:
    patch = Patch()
    patch.add_node("time.seconds", None, node_id="time")
    patch.add_node("gpu.noise", None, node_id="noise")
    patch.add_node("gpu.output", None, node_id="output")
    patch.connect("time", "out", "noise", "time")
    patch.connect("noise", "out", "output", "in")
    return patch


def noise_and_still_patch() -> Patch:
    """`noise_patch` and a constant texture, `still` (the same pixels every frame)."""
    patch = noise_patch()
    patch.add_node("gpu.shader", None, node_id="still")
    patch.add_node("gpu.output", None, node_id="still_output")
    patch.connect("still", "out", "still_output", "in")
    return patch


def attach_editor(engine: Engine) -> Channel:
    """The editor's end of a channel to `engine`, which gets the patch it plays from it."""
    editor_end, engine_end = Pipe()
    editor = Channel(editor_end)
    engine.inbox.put((EditorLink(Channel(engine_end), engine.inbox), Connected(), []))
    editor.send(*patch_message(engine.patch))
    return editor


def test_the_output_path_reads_nothing_back_and_pictures_are_small(gl: GLService) -> None:
    engine = Engine(noise_patch(), gpu=gl)
    readbacks = 0
    for _ in range(20):
        engine.step()
        readbacks += gl.last_frame_readbacks
    assert readbacks == 0 and engine.evaluator.status("output") == "ok"

    editor = attach_editor(engine)
    editor.send({"type": "images", "thumbnails": ["noise"], "previews": [["output", "out"]]})
    pictures: dict[str, tuple[list[int], bytes]] = {}
    frames = readbacks = 0
    started = time.monotonic()
    while len(pictures) < 2 and time.monotonic() - started < TIMEOUT_S:
        engine.step()
        frames += 1
        readbacks += gl.last_frame_readbacks
        while editor.connection.poll():
            message, blobs = editor.receive()
            for meta, blob in zip(message.get("images", []), blobs, strict=True):
                pictures[meta["role"]] = (meta["size"], blob)
        time.sleep(1 / 120)
    assert len(pictures) == 2, (
        f"waited {TIMEOUT_S:.0f} s for a preview and a thumbnail: {list(pictures)}"
    )
    size, pixels = pictures["preview"]
    assert size[0] <= PREVIEW_SIZE[0] and size[1] <= PREVIEW_SIZE[1]
    assert len(pixels) == size[0] * size[1] * 4 and len(set(pixels)) > 10  # a picture, not a fill
    assert "thumbnail" in pictures
    # one readback per picture, at most PICTURES_HZ turns of pictures a second
    seconds = time.monotonic() - started
    assert readbacks <= 2 * (PICTURES_HZ * seconds + 1)
    editor.close()
    engine.close()


def test_a_released_texture_is_pictured_once_and_the_other_pictures_go_on(
    gl: GLService, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    patch = noise_and_still_patch()
    engine = Engine(patch, gpu=gl)
    editor = attach_editor(engine)
    editor.send({"type": "images", "thumbnails": ["still", "noise"],
                 "previews": [["output", "out"]]})  # fmt: skip
    attempts: dict[str, int] = {}  # pictures tried, by node
    readback_scaled = gl.readback_scaled

    def counted(source: Any, size: tuple[int, int]) -> Any:
        node = next((n for n in patch.nodes if engine.evaluator.output(n) is source), "?")
        attempts[node] = attempts.get(node, 0) + 1
        return readback_scaled(source, size)

    monkeypatch.setattr(gl, "readback_scaled", counted)

    def run(frames: int) -> dict[tuple[str, str], list[bytes]]:
        pictures: dict[tuple[str, str], list[bytes]] = {}
        for _ in range(frames):
            engine.step()  # raises if anything escapes
            while editor.connection.poll():
                message, blobs = editor.receive()
                for meta, blob in zip(message.get("images", []), blobs, strict=True):
                    pictures.setdefault((meta["node"], meta["role"]), []).append(blob)
            time.sleep(1 / 60)
        return pictures

    before = run(40)
    assert before.get(("still", "thumbnail")), "a thumbnail of the shader first"
    engine.evaluator.output("still").texture.release()  # as a failed reallocation leaves it
    attempts.clear()
    pictures = run(100)
    assert attempts.get("still", 0) == 1  # tried once, then not until it changes
    assert ("still", "thumbnail") not in pictures
    noise = pictures.get(("noise", "thumbnail"), [])
    assert len(noise) >= 2 and len(set(noise)) >= 2  # the others go on, and they move
    assert len(pictures.get(("output", "preview"), [])) >= 10
    assert engine.refresh_steps.failures == 1 and engine.refresh_steps.logged == 1
    log = capsys.readouterr().err
    assert log.count("reported once") == 1 and "texture was released" in log

    engine.patch.set_value("still", "resolution", (32, 32))  # the node changes: tried again
    attempts.clear()
    pictures = run(40)
    assert ("still", "thumbnail") in pictures and attempts.get("still", 0) >= 1
    assert engine.refresh_steps.failures == 1
    editor.close()
    engine.close()


def test_a_picture_whose_pixels_did_not_change_is_sent_once(gl: GLService) -> None:
    """A still node's thumbnail goes to the editor once, a moving one's again and again; a new
    `images` request (what the editor shows changed) sends each once more."""
    patch = noise_and_still_patch()
    engine = Engine(patch, gpu=gl)
    editor = attach_editor(engine)
    request = {"type": "images", "thumbnails": ["still", "noise"], "previews": [["still", "out"]]}
    editor.send(request)

    def run(done: Callable[[dict[tuple[str, str], int]], bool]) -> dict[tuple[str, str], int]:
        """Frames at about 60 fps until `done(sent)` (by a generous deadline: a busy machine's
        frames and picture rounds come late), then half a second more."""
        sent: dict[tuple[str, str], int] = {}
        deadline, after = time.monotonic() + TIMEOUT_S, None
        while after is None or time.monotonic() < after:
            assert time.monotonic() < deadline, sent
            engine.step()
            while editor.connection.poll():
                message, _ = editor.receive()
                for meta in message.get("images", []):
                    key = (meta["node"], meta["role"])
                    sent[key] = sent.get(key, 0) + 1
            if after is None and done(sent):
                after = time.monotonic() + 0.5
            time.sleep(1 / 60)
        return sent

    sent = run(lambda sent: sent.get(("noise", "thumbnail"), 0) >= 3)  # it moves: sent again
    assert sent.get(("still", "thumbnail")) == 1 and sent.get(("still", "preview")) == 1
    editor.send(request)  # asked again: the editor may have dropped what it had
    sent = run(lambda sent: ("still", "thumbnail") in sent and ("still", "preview") in sent)
    assert sent.get(("still", "thumbnail")) == 1 and sent.get(("still", "preview")) == 1
    editor.close()
    engine.close()
