"""Run by test_hostile_files.py in a subprocess: `patchbay` on one hostile file, with an audit hook
that writes every file opened outside the allowed folders to a log.

Usage: python hostile_probe.py LOG ALLOWED_JSON -- patchbay arguments...

The hook is installed before patchbay is imported, so every `open` (Python's and `os.open`) is
seen; paths are compared after resolving symlinks. The memory cap is set by the parent
(`preexec_fn`), so it holds from the first instruction.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    log_path, allowed_text, separator, *arguments = sys.argv[1:]
    assert separator == "--"
    allowed = [os.path.realpath(folder) for folder in json.loads(allowed_text)]
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def audit(event: str, args: tuple) -> None:
        if event != "open" or not args or isinstance(args[0], int) or args[0] is None:
            return
        path = os.path.realpath(os.fsdecode(args[0]))
        if not any(path == folder or path.startswith(folder + os.sep) for folder in allowed):
            os.write(log, (json.dumps(path) + "\n").encode())

    sys.addaudithook(audit)
    from app.cli.main import main as patchbay

    return patchbay(arguments)


if __name__ == "__main__":
    sys.exit(main())
