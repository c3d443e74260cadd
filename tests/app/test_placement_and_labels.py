"""The pure parts of placement and value labels: the free spot nearest a wished position, and the
short texts labels show."""

from __future__ import annotations

import numpy as np

from app.qt.canvas.link_values import short_value
from app.session.placement import GAP, NODE_SIZE, free_offset, free_position, overlaps


def test_a_free_wish_is_kept():
    assert free_position([(1000.0, 1000.0, 160.0, 60.0)], (0.0, 0.0)) == (0.0, 0.0)


def test_an_occupied_wish_moves_to_the_nearest_free_spot():
    taken = [(0.0, 0.0, 160.0, 60.0), (-300.0, 200.0, 160.0, 200.0)]
    x, y = free_position(taken, (10.0, 10.0))
    assert not any(overlaps((x, y, *NODE_SIZE), rect, GAP) for rect in taken)
    assert abs(x - 10.0) + abs(y - 10.0) <= 400.0  # near, not anywhere


def test_a_piece_moves_as_one_to_the_nearest_shift_clear_of_others():
    piece = [(0.0, 0.0, 160.0, 60.0), (300.0, 0.0, 160.0, 60.0)]  # two nodes side by side
    taken = [*piece, (40.0, 100.0, 160.0, 60.0)]  # the originals, and one below them
    dx, dy = free_offset(taken, piece, (40.0, 40.0))
    for x, y, w, h in piece:
        assert not any(overlaps((x + dx, y + dy, w, h), rect, GAP) for rect in taken)
    assert abs(dx - 40.0) + abs(dy - 40.0) <= 400.0
    assert free_offset([(1000.0, 1000.0, 10.0, 10.0)], piece, (40.0, 40.0)) == (40.0, 40.0)


def test_short_values():
    assert short_value(0.123456) == "0.123"
    assert short_value(12345.0) == "1.23e+04"
    assert short_value(7) == "7"
    assert short_value(True) == "true"
    assert short_value(np.zeros((64, 3), np.float32)) == "float32[64, 3]"
    assert short_value(np.zeros(256), shape=(1000,)) == "float64[1000]"  # shortened in reports
    assert short_value((0.5, 1.0)) == "(0.5, 1)"
    assert short_value(None) == "—"
    assert short_value("a long piece of text for a label") == "a long piece of text fo…"
