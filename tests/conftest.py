"""Root test setup: Qt renders offscreen unless a test asks for a real display, and GL contexts are
shared, which must be set before the QApplication exists."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QCoreApplication, Qt

QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
