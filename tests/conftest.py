"""Root test setup: Qt renders offscreen unless a test asks for a real display, and GL contexts are
shared, which must be set before the QApplication exists."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QCoreApplication, Qt

QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)


def pytest_addoption(parser):
    parser.addoption(
        "--regenerate-references",
        action="store_true",
        default=False,
        help="rewrite the reference PNGs of GL tests (tests/gl/references) from this run",
    )
