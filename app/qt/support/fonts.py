"""The fonts patchbay ships (resources/fonts), registered with Qt once a process.

The code editor's monospace font is bundled DejaVu Sans Mono rather than whatever the system's
"fixed" font resolves to: machines resolve that to different families (some of which Qt does not
even report as fixed pitch), so the editor would look different from machine to machine, and on a
machine with no monospace font at all it would not be monospace.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from PySide6.QtGui import QFont, QFontDatabase

MONOSPACE_FAMILY = "DejaVu Sans Mono"
BUNDLED_FONT_FILES = ("DejaVuSans.ttf", "DejaVuSansMono.ttf")


@cache
def register_bundled_fonts() -> tuple[str, ...]:
    """Register the bundled font files with Qt (needs a QGuiApplication); returns the families
    Qt found in them. A file Qt cannot read is left out (the system's fonts stand in)."""
    families: list[str] = []
    folder = resources.files("resources") / "fonts"
    for name in BUNDLED_FONT_FILES:
        font_id = QFontDatabase.addApplicationFont(str(folder / name))
        if font_id >= 0:
            families.extend(QFontDatabase.applicationFontFamilies(font_id))
    return tuple(families)


def monospace_font(point_size: int = 10) -> QFont:
    """The bundled monospace font at `point_size` (the system's fixed font if it is missing)."""
    if MONOSPACE_FAMILY in register_bundled_fonts():
        font = QFont(MONOSPACE_FAMILY)
    else:
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
    font.setStyleHint(QFont.StyleHint.Monospace)
    font.setFixedPitch(True)
    font.setPointSize(max(font.pointSize(), point_size))
    return font
