"""The in-process engine link with a GL service: the pictures an editor asks for come back with
the reports, frame by frame, as from the engine process."""

from __future__ import annotations

from app.engine.engine import PREVIEW_SIZE, THUMBNAIL_SIZE
from app.engine.local import LocalEngineLink
from app.engine.protocol.channel import patch_message
from app.engine.protocol.messages import Images
from evaluators.services.gl import GLService
from tests.gl.test_engine_gl import noise_patch


def test_pictures_come_back_with_the_report_of_a_stepped_frame(gl: GLService) -> None:
    link = LocalEngineLink(gpu=gl)  # the module's service: the link does not own it
    assert link.hello.gl is True
    link.send(*patch_message(noise_patch()))
    link.send(Images(["noise"], [["output", "out"]]))
    link.step(report=True)
    assert link.evaluator.status("output") == "ok"
    size, pixels = link.evaluator.take_image("output", "out", "preview") or ((0, 0), b"")
    assert 0 < size[0] <= PREVIEW_SIZE[0] and 0 < size[1] <= PREVIEW_SIZE[1]
    assert len(pixels) == size[0] * size[1] * 4 and len(set(pixels)) > 10  # a picture
    thumbnail = link.evaluator.take_image("noise", "out", "thumbnail")
    assert thumbnail is not None and thumbnail[0][0] <= THUMBNAIL_SIZE[0]
    assert link.evaluator.take_image("output", "out", "preview") is None  # each once
    link.close()  # the GL service stays open: the link closes only one it owns
