"""The resource-limit options of commands that read patch files: `--trust` and `--limit NAME=VALUE`.

One place for them, below every command: the CLI adds them to its commands, and the engine process
takes the same flags from whoever starts it (`limit_flags`), so the limits a person chose for a
file hold where the file is played too.
"""

from __future__ import annotations

import argparse
import dataclasses


def add_limit_arguments(command: argparse.ArgumentParser) -> None:
    """`--trust` and `--limit NAME=VALUE` on a command that reads patch files."""
    from nodes.limits import DEFAULT_LIMITS

    defaults = ", ".join(
        f"{field.name}={getattr(DEFAULT_LIMITS, field.name)}"
        for field in dataclasses.fields(DEFAULT_LIMITS)
    )
    command.add_argument(
        "--trust", action="store_true", help="a file you trust: lift the resource limits"
    )
    command.add_argument(
        "--limit",
        dest="limits",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"change one resource limit (defaults: {defaults})",
    )


def apply_limits(options: argparse.Namespace) -> None:
    """Put the limits asked for on the command line in force; PatchError on a bad --limit."""
    from nodes import PatchError
    from nodes.limits import DEFAULT_LIMITS, TRUSTED_LIMITS, set_active_limits

    limits = TRUSTED_LIMITS if getattr(options, "trust", False) else DEFAULT_LIMITS
    changes = {}
    for item in getattr(options, "limits", []):
        name, sep, value = item.partition("=")
        if not sep or not value.strip().isdigit():
            raise PatchError(f"--limit {item}: expected NAME=VALUE, e.g. nodes=500000")
        changes[name.strip()] = int(value)
    try:
        set_active_limits(limits.replaced(**changes))
    except ValueError as error:
        raise PatchError(f"--limit: {error}") from None


def limit_flags(options: argparse.Namespace) -> list[str]:
    """The command-line flags that ask for the limits in `options` again (for a child process)."""
    flags = ["--trust"] if getattr(options, "trust", False) else []
    for item in getattr(options, "limits", []):
        flags += ["--limit", item]
    return flags
