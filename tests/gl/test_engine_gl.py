"""The engine with GPU nodes: the output path reads nothing back; pictures for an editor cost one
small readback each, at most at the report rate."""

from __future__ import annotations

import time
from multiprocessing import Pipe

from app.engine import PREVIEW_SIZE, REPORT_HZ, EditorLink, Engine
from app.engine_protocol import Channel, patch_message
from evaluators.gl_service import GLService
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


def test_the_output_path_reads_nothing_back_and_pictures_are_small(gl: GLService) -> None:
    engine = Engine(noise_patch(), gpu=gl)
    readbacks = 0
    for _ in range(20):
        engine.step()
        readbacks += gl.last_frame_readbacks
    assert readbacks == 0 and engine.evaluator.status("output") == "ok"

    editor_end, engine_end = Pipe()
    editor = Channel(editor_end)
    engine.inbox.put((EditorLink(Channel(engine_end), engine.inbox), {"type": "_connected"}, []))
    editor.send(*patch_message(engine.patch))
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
    # one readback per picture, pictures only with reports (at most REPORT_HZ a second)
    seconds = time.monotonic() - started
    assert readbacks <= 2 * (REPORT_HZ * seconds + 1)
    editor.close()
    engine.close()
