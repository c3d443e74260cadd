"""Playing a patch without the editor: headless frames (values, PNG frames) or the output window.

Headless playback runs the flat evaluator at a fixed clock (t = frame / fps) and prints requested
values one line per frame. It never imports Qt: a frozen patch plays on a machine where PySide6 and
NodeGraphQt cannot be imported. GPU patches get a standalone EGL context from the GL service.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from evaluators import FlatEvaluator
from nodes import Patch, PatchError, load_patch

EXIT_BAD_INPUT = 2


def _format(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, np.ndarray):
        return np.array2string(value, precision=6, separator=",", threshold=16).replace("\n", "")
    return str(value)


def _parse_prints(patch: Patch, prints: list[str]) -> list[tuple[str, str]]:
    targets = []
    for item in prints:
        node_id, _, pin = item.partition(".")
        pin = pin or "out"
        instance = patch.nodes.get(node_id)
        if instance is None:
            raise PatchError(f"--print {item}: no node {node_id!r} in the patch")
        if instance.spec.output_index(pin) is None:
            raise PatchError(f"--print {item}: node {node_id!r} has no output {pin!r}")
        targets.append((node_id, pin))
    return targets


def play_headless(
    patch: Patch, frames: int, fps: float, prints: list[str], out=None
) -> FlatEvaluator:
    """Play `frames` frames at a fixed clock and print the requested values, one line a frame."""
    targets = _parse_prints(patch, prints)
    evaluator = FlatEvaluator(patch)
    evaluator.watch(node_id for node_id, _ in targets)
    for frame in range(frames):
        evaluator.run_frame(frame / fps, frame)
        if targets:
            values = " ".join(
                f"{node_id}.{pin}={_format(evaluator.output(node_id, pin))}"
                for node_id, pin in targets
            )
            print(f"{frame} {values}", file=out or sys.stdout)
    return evaluator


def run_command(options: argparse.Namespace) -> int:
    started = time.perf_counter()
    try:
        patch = load_patch(options.file)
        if options.headless:
            if options.frames is None or options.frames < 0:
                raise PatchError("--headless needs --frames N (N >= 0)")
            if options.fps <= 0:
                raise PatchError("--fps must be positive")
            play_headless(patch, options.frames, options.fps, options.prints)
            return 0
    except PatchError as error:
        print(error, file=sys.stderr)
        return EXIT_BAD_INPUT
    del started
    print("patchbay run: the output window needs the GPU service (not available yet)",
          file=sys.stderr)  # fmt: skip
    return EXIT_BAD_INPUT
