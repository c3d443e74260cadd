"""Root test setup: Qt renders offscreen unless a test asks for a real display (the Qt set-up
itself is in tests/qt_setup.py, imported by the folders that make widgets, so this one runs
without Qt); `make_evaluator`, the fixture that runs a test once per evaluator kind."""

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Node packs: an empty nodes folder of the run's own, never the user's (tests that load packs
# point PATCHBAY_NODES_DIR at theirs); child processes inherit it.
os.environ["PATCHBAY_NODES_DIR"] = tempfile.mkdtemp(prefix="patchbay-test-nodes-")

from tests.evaluator_kinds import EVALUATOR_KINDS, evaluator_for_tests

atexit.register(shutil.rmtree, os.environ["PATCHBAY_NODES_DIR"], ignore_errors=True)


def pytest_addoption(parser):
    parser.addoption(
        "--regenerate-references",
        action="store_true",
        default=False,
        help="rewrite the reference PNGs of GL tests (tests/gl/references) from this run",
    )


@pytest.fixture(params=EVALUATOR_KINDS)
def make_evaluator(request: pytest.FixtureRequest) -> Iterator[Callable[..., Any]]:
    """`make_evaluator(patch, **options)` makes an evaluator of the kind under test (every kind
    in turn, see tests/evaluator_kinds.py); all of them are closed after the test."""
    made: list[Any] = []

    def factory(patch: Any, **options: Any) -> Any:
        evaluator = evaluator_for_tests(request.param, patch, **options)
        made.append(evaluator)
        return evaluator

    yield factory
    for evaluator in made:
        evaluator.close()
