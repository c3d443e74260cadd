"""The live-input options of the commands that play patches: `--osc-port`, `--osc-host`,
`--allow-send`.

The CLI adds them to `edit` and `run`; a headless player hands `service_options` to its Engine,
and the engine process takes the same flags from whoever starts it (`service_flags`). They become
the execution context's service options (evaluators.services.registry), which win over the patch's
settings (`settings.osc_port`).
"""

from __future__ import annotations

import argparse
from typing import Any


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0 to 65535; 0: no OSC input)")
    return port


def add_service_arguments(command: argparse.ArgumentParser) -> None:
    """The live-input options on a command that plays patches."""
    command.add_argument(
        "--osc-port",
        type=_port,
        default=None,
        metavar="P",
        help="UDP port for OSC input (default: the patch's settings.osc_port, else 9000; 0: off)",
    )
    command.add_argument(
        "--osc-host",
        default=None,
        metavar="HOST",
        help="address OSC input listens on (default 127.0.0.1: this machine only)",
    )
    command.add_argument(
        "--allow-send",
        action="store_true",
        help="let the patch send OSC to the hosts its osc.out nodes name",
    )


def service_options(options: argparse.Namespace) -> dict[str, Any]:
    """The service options asked for in `options` (those not given are left out)."""
    found: dict[str, Any] = {}
    if getattr(options, "osc_port", None) is not None:
        found["osc_port"] = options.osc_port
    if getattr(options, "osc_host", None):
        found["osc_host"] = options.osc_host
    if getattr(options, "allow_send", False):
        found["allow_send"] = True
    return found


def service_flags(options: argparse.Namespace) -> list[str]:
    """The command-line flags that ask for the same service options again (for a child
    process)."""
    found = service_options(options)
    flags = []
    if "osc_port" in found:
        flags += ["--osc-port", str(found["osc_port"])]
    if "osc_host" in found:
        flags += ["--osc-host", found["osc_host"]]
    if found.get("allow_send"):
        flags.append("--allow-send")
    return flags
