"""`nodes` and `evaluators` work where Qt cannot even be imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = textwrap.dedent(
    """
    import importlib
    import pkgutil
    import sys

    sys.modules["PySide6"] = None
    sys.modules["NodeGraphQt"] = None

    import nodes
    import evaluators

    imported = []
    for package in (nodes, evaluators):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(info.name)
            imported.append(info.name)
    assert "nodes.document.patch" in imported and "evaluators.dual" in imported, imported
    assert not any(name.startswith(("PySide6.", "NodeGraphQt.")) for name in sys.modules)

    from evaluators import EVALUATOR_KINDS, make_evaluator
    from nodes import Patch

    patch = Patch()
    t = patch.add_node("time.seconds")
    add = patch.add_node("math.add", {"b": 1.0})
    out = patch.add_node("output.value")
    patch.connect(t, "out", add, "a")
    patch.connect(add, "out", out, "in")
    results = []
    for kind in EVALUATOR_KINDS:
        evaluator = make_evaluator(kind, patch)
        for frame in range(3):
            evaluator.run_frame(frame / 2, frame)
        results.append(evaluator.output(out))
        evaluator.close()
    assert results == [2.0] * len(EVALUATOR_KINDS) == [2.0, 2.0, 2.0], results

    from app.cli.main import main
    assert main(["nodes"]) == 0
    print("OK", len(imported))
    """
)


def test_core_imports_and_runs_without_qt() -> None:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1].startswith("OK ")


def test_the_core_suites_need_no_qt() -> None:
    """Every test module of tests/nodes and tests/evaluators (and their conftests) imports with
    Qt blocked, and one suite of each runs."""
    blocked = [sys.executable, str(ROOT / "tests" / "without_qt.py"), "-q", "-p", "no:xvfb"]
    collected = subprocess.run(
        [*blocked, "--collect-only", "tests/nodes", "tests/evaluators"],
        capture_output=True, text=True, cwd=ROOT, timeout=300,
    )  # fmt: skip
    assert collected.returncode == 0, collected.stdout[-3000:] + collected.stderr[-3000:]
    assert " tests collected" in collected.stdout.splitlines()[-1], collected.stdout[-500:]
    ran = subprocess.run(
        [*blocked, "tests/nodes/test_patch.py", "tests/evaluators/test_dual.py"],
        capture_output=True, text=True, cwd=ROOT, timeout=600,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-3000:]
    assert " passed" in ran.stdout.splitlines()[-1], ran.stdout[-500:]
