"""Run pytest where Qt cannot be imported, e.g.
`python tests/without_qt.py tests/nodes tests/evaluators`.

PySide6 and NodeGraphQt are blocked (`sys.modules[name] = None` makes every import of them fail)
and pytest-qt, which imports Qt when it loads, is left out. The core suites must pass like this:
nothing in `nodes`, `evaluators` or their tests may need Qt."""

import sys

import pytest

BLOCKED = ("PySide6", "NodeGraphQt", "shiboken6")


def main(arguments: list[str]) -> int:
    for name in BLOCKED:
        sys.modules[name] = None  # type: ignore[assignment]
    return int(pytest.main(["-p", "no:pytest-qt", *arguments]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
