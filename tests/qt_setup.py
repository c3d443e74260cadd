"""Qt set-up for the test folders that make widgets (tests/app, tests/gl): GL contexts are shared,
which must be set before the QApplication exists. Imported by their conftests, never by the root
one, so `pytest tests/nodes tests/evaluators` runs where Qt cannot be imported."""

from PySide6.QtCore import QCoreApplication, Qt

QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
