"""A picture the editor already has (same node, output, role, size and pixels) is not sent
again, until the receiver may have dropped it."""

from __future__ import annotations

from app.engine.reports.refresh import SentPictures


def meta(node: str = "noise", role: str = "thumbnail", size: tuple[int, int] = (2, 1)) -> dict:
    return {"node": node, "pin": "out", "role": role, "size": list(size)}


def test_unchanged_pixels_are_sent_once() -> None:
    sent = SentPictures()
    still = bytes(range(8))
    assert sent.changed(meta(), still)
    assert [sent.changed(meta(), still) for _ in range(10)] == [False] * 10
    assert sent.changed(meta(), bytes(8))  # other pixels
    assert sent.changed(meta(role="preview"), bytes(8))  # the same pixels, another picture
    assert sent.changed(meta(node="other"), bytes(8))
    assert sent.changed(meta(size=(1, 2)), bytes(8))  # another size
    assert not sent.changed(meta(size=(1, 2)), bytes(8))


def test_clear_sends_each_picture_once_more() -> None:
    sent = SentPictures()
    assert sent.changed(meta(), bytes(8))
    sent.clear()
    assert sent.changed(meta(), bytes(8))
    assert not sent.changed(meta(), bytes(8))
