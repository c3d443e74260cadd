"""Pictures with alpha as a person reads them: over a checkerboard.

The engine sends small pictures of textures as straight (not premultiplied) RGBA rows, top row
first (`rgba_image`). Text on a transparent frame, a sprite or a mask has colour where it is
transparent, so a picture shown without its alpha is a solid block of that colour; shown over a
checkerboard, what is transparent reads as transparent and what is opaque as itself. Thumbnails,
the Preview panel and colour swatches all draw this way (`over_checkerboard`,
`paint_checkerboard`).
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QRectF
from PySide6.QtGui import QColor, QImage, QPainter

CHECKER_CELL = 6  # pixels
CHECKER_LIGHT = QColor(104, 104, 104)
CHECKER_DARK = QColor(64, 64, 64)


def rgba_image(size: tuple[int, int], pixels: bytes) -> QImage:
    """A QImage owning a copy of straight RGBA pixels (rows top to bottom), alpha kept."""
    width, height = size
    image = QImage(pixels, width, height, width * 4, QImage.Format.Format_RGBA8888)
    return image.copy()


def paint_checkerboard(painter: QPainter, rect: QRect | QRectF, cell: int = CHECKER_CELL) -> None:
    """Fill `rect` with a grey checkerboard of `cell`-pixel squares."""
    area = QRectF(rect).toAlignedRect()
    painter.save()
    painter.setClipRect(area)
    painter.fillRect(area, CHECKER_DARK)
    for row, y in enumerate(range(area.top(), area.bottom() + 1, cell)):
        for x in range(area.left() + (row % 2) * cell, area.right() + 1, 2 * cell):
            painter.fillRect(x, y, cell, cell, CHECKER_LIGHT)
    painter.restore()


def over_checkerboard(image: QImage, cell: int = CHECKER_CELL) -> QImage:
    """`image` drawn over a checkerboard, opaque: what is transparent in it shows the squares."""
    result = QImage(image.size(), QImage.Format.Format_RGB32)
    painter = QPainter(result)
    paint_checkerboard(painter, result.rect(), cell)
    painter.drawImage(0, 0, image)
    painter.end()
    return result
