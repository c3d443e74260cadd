"""`patchbay bench --only controls`: live controls, from an OSC packet to the frame that uses it.

- latency: an engine (app.engine.engine, no GPU, no editor) plays a slider bound to OSC `/knob` at
  60 fps pacing (frames start every 1/60 s on the wall clock), while a sender thread sends packets
  over loopback at random moments. For each packet: the time from sending to the end of the first
  frame whose output shows its value (ms), and the frames that started in between (1: the next frame
  used it). Medians and 99th percentiles.
- load: a patch of 1,000 sliders, each bound to its own OSC address and feeding a multiplication
  and a sink, run by the dual evaluator (flat) with the controls runtime. Frame time (the
  controls' drain and edits plus the evaluator's frame) when all 1,000 controls move every frame
  (one OSC bundle of 1,000 messages, received before the frame starts), when they rest, and for
  the same patch without bindings, resting and with its 1,000 sliders set by plain value edits
  each frame (what the evaluator alone costs for those cones); medians, the ratio moving / none
  and the controls' own share per control ((moving - edited) / 1,000).
"""

from __future__ import annotations

import random
import socket
import statistics
import threading
import time
from typing import Any

from pythonosc.osc_bundle_builder import IMMEDIATELY, OscBundleBuilder
from pythonosc.osc_message_builder import OscMessageBuilder
from pythonosc.udp_client import SimpleUDPClient

from app.engine.engine import Engine
from evaluators import Controls, DualEvaluator
from nodes import Patch
from nodes.document.bindings import Binding

FPS = 60.0
STEPS = 1024  # positions sent as i / STEPS: exact in the 32-bit floats OSC carries


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def latency(samples: int) -> dict[str, Any]:
    """Packet sent -> end of the first frame using it, at 60 fps pacing (see the module note)."""
    patch = Patch()
    patch.add_node("input.float", {"value": 0.0, "max": float(STEPS)}, node_id="knob")
    patch.add_node("output.value", node_id="out")
    patch.connect("knob", "out", "out", "in")
    patch.set_binding("binding1", Binding("osc:/knob", "knob", "value", 0.0, float(STEPS)))
    port = _free_port()
    engine = Engine(patch, services={"osc_port": port})
    sent: dict[float, float] = {}  # value -> perf_counter when sent
    lock = threading.Lock()
    done = threading.Event()
    client = SimpleUDPClient("127.0.0.1", port)

    def send() -> None:
        for i in range(samples):
            time.sleep(random.uniform(0.05, 0.12))  # a random phase within the frames
            value = float(1 + i % (STEPS - 1))
            with lock:
                sent[value] = time.perf_counter()
            client.send_message("/knob", value / STEPS)
        done.set()

    starts: list[float] = []
    milliseconds: list[float] = []
    frames: list[int] = []
    try:
        engine.step()  # opens the OSC server
        sender = threading.Thread(target=send, name="bench-osc-sender", daemon=True)
        sender.start()
        next_start = time.perf_counter()
        deadline = next_start + samples * 0.2 + 10
        while not (done.is_set() and not sent) and time.perf_counter() < deadline:
            next_start += 1.0 / FPS
            pause = next_start - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            starts.append(time.perf_counter())
            engine.step()
            ended = time.perf_counter()
            shown = engine.evaluator.output("out")
            with lock:
                sent_at = sent.pop(shown, None) if isinstance(shown, float) else None
            if sent_at is not None:
                milliseconds.append((ended - sent_at) * 1000)
                frames.append(sum(1 for start in starts[-30:] if start >= sent_at))
    finally:
        engine.close()
    if not milliseconds:
        return {"error": "no packet was seen"}
    return {
        "samples": len(milliseconds),
        "median_ms": statistics.median(milliseconds),
        "p99_ms": _percentile(milliseconds, 0.99),
        "median_frames": statistics.median(frames),
        "p99_frames": _percentile([float(f) for f in frames], 0.99),
        "frame_period_ms": 1000 / FPS,
    }


def knobs_patch(count: int, bound: bool) -> Patch:
    """`count` sliders, each into a multiplication and a sink; bound to `/k/<i>` if `bound`."""
    patch = Patch()
    for i in range(count):
        knob = patch.add_node("input.float", {"value": 0.0, "max": float(STEPS)})
        mul = patch.add_node("math.mul", {"b": 2.0})
        patch.connect(knob, "out", mul, "a")
        patch.connect(mul, "out", patch.add_node("output.value"), "in")
        if bound:
            patch.set_binding(f"b{i}", Binding(f"osc:/k/{i}", knob, "value", 0.0, float(STEPS)))
    return patch


def _frame_times(
    count: int, bound: bool, moving: bool, frames: int, edited: bool = False
) -> list[float]:
    patch = knobs_patch(count, bound)
    knobs = [node_id for node_id, node in patch.nodes.items() if node.type_id == "input.float"]
    port = _free_port()
    evaluator = DualEvaluator(patch)
    evaluator.ctx.services.options["osc_port"] = port
    controls = Controls(patch, evaluator.ctx)
    client = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    times: list[float] = []
    try:
        for frame in range(frames + 10):
            if frame == 2:
                evaluator.wait_for_flat(60.0)
            if moving and frame > 0:
                bundle = OscBundleBuilder(IMMEDIATELY)
                for i in range(count):
                    message = OscMessageBuilder(f"/k/{i}")
                    message.add_arg(((frame + i) % STEPS) / STEPS)
                    bundle.add_content(message.build())
                client.sendto(bundle.build().dgram, ("127.0.0.1", port))
                osc = evaluator.ctx.service("osc")
                deadline = time.perf_counter() + 5.0
                while osc.pending() < count and time.perf_counter() < deadline:
                    time.sleep(0.0005)
            started = time.perf_counter()
            if edited:
                for i, knob in enumerate(knobs):
                    patch.set_value(knob, "value", float((frame + i) % STEPS))
            controls.before_frame()
            evaluator.run_frame(frame / FPS, frame)
            if frame >= 10:  # after the flat build, and the server warm
                times.append((time.perf_counter() - started) * 1000)
    finally:
        client.close()
        evaluator.close()
        evaluator.ctx.release_all()
    return times


def load(count: int, frames: int) -> dict[str, Any]:
    """Frame times with `count` bound controls moving, resting, and without bindings."""
    moving = statistics.median(_frame_times(count, True, True, frames))
    resting = statistics.median(_frame_times(count, True, False, frames))
    none = statistics.median(_frame_times(count, False, False, frames))
    edited = statistics.median(_frame_times(count, False, False, frames, edited=True))
    return {
        "controls": count,
        "moving_median_ms": moving,
        "resting_median_ms": resting,
        "no_bindings_median_ms": none,
        "plain_edits_median_ms": edited,
        "moving_vs_none": moving / none if none else float("inf"),
        "moving_vs_plain_edits": moving / edited if edited else float("inf"),
        "controls_ms_per_control": (moving - edited) / count,
    }


def controls_bench(quick: bool) -> dict[str, Any]:
    return {
        "latency": latency(40 if quick else 300),
        "load": load(1000, 10 if quick else 60),
    }
