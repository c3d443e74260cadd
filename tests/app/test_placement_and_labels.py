"""The pure parts of placement and value labels: the free spot nearest a wished position, and the
short texts labels show."""

from __future__ import annotations

import numpy as np

from app.qt.canvas.link_values import short_value
from app.session.placement import GAP, NODE_SIZE, free_position, overlaps


def test_a_free_wish_is_kept():
    assert free_position([(1000.0, 1000.0, 160.0, 60.0)], (0.0, 0.0)) == (0.0, 0.0)


def test_an_occupied_wish_moves_to_the_nearest_free_spot():
    taken = [(0.0, 0.0, 160.0, 60.0), (-300.0, 200.0, 160.0, 200.0)]
    x, y = free_position(taken, (10.0, 10.0))
    assert not any(overlaps((x, y, *NODE_SIZE), rect, GAP) for rect in taken)
    assert abs(x - 10.0) + abs(y - 10.0) <= 400.0  # near, not anywhere


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
