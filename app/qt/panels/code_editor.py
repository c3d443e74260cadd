"""The GLSL editor of `code` pins (a gpu.shader's source), shown in the inspector.

`QtCodeField` is a multi-line monospace editor with line numbers in a gutter, GLSL syntax colouring
(`GLSLHighlighter`: keywords, types, built-in functions and variables, numbers, comments,
preprocessor lines) and a fixed message line under it. Typing is applied after a short pause
(`APPLY_PAUSE_MS`), on Ctrl+Enter, or when the editor loses focus; each application emits
`applied(text)` once, which the inspector turns into one undoable value edit.

Undo: keys go to the text first, then to the document, as in any desktop editor. Typing not yet
applied is undone by the editor's own undo; once applied, the editor's text history is cleared, so
Ctrl+Z (Ctrl+Shift+Z) is left to the window's Undo (Redo) action, which undoes the whole applied
edit at once.

Compile errors: the node's error text, as `ShaderError` writes it ("line 3, column 5: ..."), is
read back by `evaluators.services.gl.shader_error_location`; the line is marked in the gutter and
painted, and the message is shown under the editor. Only the first error has a location in a
node's error text, so only that one is marked. The message line always keeps its height, so an
error appearing never moves the widgets below it.

Pop-out: the field's Pop Out button moves the editor and its message line into a window of its own
(`QtCodeWindow`, resizable, owned by the field, so it goes when the inspector shows another node),
with the inspector saying so; Dock Back (or closing that window) moves them back. It is the same
editor, so edits are applied as in the inspector, each one undo step; the window's Undo and Redo
reach the document from the popped-out window too (they are window shortcuts of the editor's
window, added to the pop-out window).
"""

from __future__ import annotations

import re
from typing import Any

from PySide6.QtCore import QEvent, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QColor,
    QFont,
    QKeyEvent,
    QKeySequence,
    QPainter,
    QPaintEvent,
    QPalette,
    QResizeEvent,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextDocument,
    QTextFormat,
)
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QTextEdit,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.qt.support.fonts import monospace_font
from evaluators.services.gl import SHADER_ERROR_PREFIX, shader_error_location

APPLY_PAUSE_MS = 800  # typing is applied this long after the last key
EDITOR_MIN_HEIGHT = 260
POP_OUT_SIZE = QSize(860, 640)  # the pop-out window's first size
GUTTER_PADDING = 6
EDITOR_BACKGROUND = QColor(40, 44, 52)
EDITOR_TEXT = QColor(171, 178, 191)
GUTTER_BACKGROUND = QColor(33, 37, 43)
ERROR_LINE_COLOUR = QColor(120, 30, 30)
ERROR_MARK_COLOUR = QColor(235, 70, 70)

_KEYWORDS = (
    "attribute break case centroid const continue default discard do else flat for highp if in "
    "inout invariant layout lowp mediump noperspective out precision return smooth struct "
    "subroutine switch uniform varying void while true false"
)
_TYPES = (
    "bool int uint float double vec2 vec3 vec4 ivec2 ivec3 ivec4 uvec2 uvec3 uvec4 bvec2 bvec3 "
    "bvec4 dvec2 dvec3 dvec4 mat2 mat3 mat4 mat2x2 mat2x3 mat2x4 mat3x2 mat3x3 mat3x4 mat4x2 "
    "mat4x3 mat4x4 sampler1D sampler2D sampler3D samplerCube sampler2DArray sampler2DShadow "
    "isampler2D usampler2D"
)
_BUILTINS = (
    "radians degrees sin cos tan asin acos atan sinh cosh tanh asinh acosh atanh pow exp log "
    "exp2 log2 sqrt inversesqrt abs sign floor trunc round roundEven ceil fract mod modf min max "
    "clamp mix step smoothstep isnan isinf length distance dot cross normalize faceforward "
    "reflect refract matrixCompMult outerProduct transpose determinant inverse lessThan "
    "lessThanEqual greaterThan greaterThanEqual equal notEqual any all not texture textureLod "
    "textureOffset texelFetch textureSize textureGrad dFdx dFdy fwidth floatBitsToInt "
    "intBitsToFloat packUnorm2x16 unpackUnorm2x16"
)


_NUMBER = re.compile(r"\b(?:\d+\.\d*|\d+)(?:[eE][+-]?\d+)?[fFuU]?|\B\.\d+(?:[eE][+-]?\d+)?[fF]?")


def _words(names: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(names.split()) + r")\b")


def _format(colour: str, *, bold: bool = False, italic: bool = False) -> QTextCharFormat:
    text_format = QTextCharFormat()
    text_format.setForeground(QColor(colour))
    if bold:
        text_format.setFontWeight(QFont.Weight.Bold)
    text_format.setFontItalic(italic)
    return text_format


class GLSLHighlighter(QSyntaxHighlighter):
    """GLSL colouring. Comments win over everything else; a `/* */` comment may span lines
    (the block state says a line ends inside one)."""

    IN_COMMENT = 1

    RULES = (
        (_words(_KEYWORDS), _format("#c678dd", bold=True)),
        (_words(_TYPES), _format("#e5c07b")),
        (_words(_BUILTINS), _format("#61afef")),
        (re.compile(r"\bgl_\w+"), _format("#61afef", italic=True)),
        (_NUMBER, _format("#d19a66")),
    )
    PREPROCESSOR = (re.compile(r"^\s*#.*"), _format("#56b6c2"))
    COMMENT = _format("#7f848e", italic=True)

    def highlightBlock(self, text: str) -> None:
        for pattern, text_format in (*self.RULES, self.PREPROCESSOR):
            for match in pattern.finditer(text):
                self.setFormat(match.start(), match.end() - match.start(), text_format)
        self._comments(text)

    def _comments(self, text: str) -> None:
        self.setCurrentBlockState(0)
        start = 0 if self.previousBlockState() == self.IN_COMMENT else -1
        position = 0
        while True:
            if start < 0:  # outside a block comment: find the next comment of either kind
                line, block = text.find("//", position), text.find("/*", position)
                if line < 0 and block < 0:
                    return
                if block < 0 or 0 <= line < block:
                    self.setFormat(line, len(text) - line, self.COMMENT)
                    return
                start, position = block, block + 2
            end = text.find("*/", position)
            if end < 0:
                self.setFormat(start, len(text) - start, self.COMMENT)
                self.setCurrentBlockState(self.IN_COMMENT)
                return
            self.setFormat(start, end + 2 - start, self.COMMENT)
            start, position = -1, end + 2


class _Gutter(QWidget):
    """The line numbers beside a `QtCodeEditor`; it paints through the editor."""

    def __init__(self, editor: QtCodeEditor) -> None:
        super().__init__(editor)
        self.editor = editor

    def sizeHint(self) -> QSize:
        return QSize(self.editor.gutter_width(), 0)

    def paintEvent(self, event: QPaintEvent) -> None:
        self.editor.paint_gutter(event)


class QtCodeEditor(QPlainTextEdit):
    """A monospace text editor with line numbers, a marked error line and Ctrl+Enter.

    Undo and redo keys act on the text only while it has something to undo (redo); otherwise
    they are left to the window's actions (see the module note)."""

    apply_requested = Signal()

    def __init__(self) -> None:
        super().__init__()
        self.setFont(monospace_font())
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setTabStopDistance(self.fontMetrics().horizontalAdvance(" ") * 4)
        self.setMinimumHeight(EDITOR_MIN_HEIGHT)
        palette = self.palette()  # dark, whatever the window's style: the colours are made for it
        palette.setColor(QPalette.ColorRole.Base, EDITOR_BACKGROUND)
        palette.setColor(QPalette.ColorRole.Text, EDITOR_TEXT)
        self.setPalette(palette)
        self.highlighter = GLSLHighlighter(self.document())
        self.error_line: int | None = None  # 1-based
        self._gutter = _Gutter(self)
        self.blockCountChanged.connect(self._fit_gutter)
        self.updateRequest.connect(self._scroll_gutter)
        self._fit_gutter()

    # -- gutter ----------------------------------------------------------------------------
    def gutter_width(self) -> int:
        digits = len(str(max(1, self.blockCount())))
        return GUTTER_PADDING * 2 + 8 + self.fontMetrics().horizontalAdvance("9") * max(2, digits)

    def _fit_gutter(self) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    def _scroll_gutter(self, rect: QRect, dy: int) -> None:
        if dy:
            self._gutter.scroll(0, dy)
        else:
            self._gutter.update(0, rect.y(), self._gutter.width(), rect.height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        area = self.contentsRect()
        self._gutter.setGeometry(QRect(area.left(), area.top(), self.gutter_width(), area.height()))

    def paint_gutter(self, event: QPaintEvent) -> None:
        painter = QPainter(self._gutter)
        painter.fillRect(event.rect(), GUTTER_BACKGROUND)
        block = self.firstVisibleBlock()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        height = self.fontMetrics().height()
        width = self._gutter.width()
        while block.isValid() and top <= event.rect().bottom():
            bottom = top + round(self.blockBoundingRect(block).height())
            number = block.blockNumber() + 1
            if block.isVisible() and bottom >= event.rect().top():
                if number == self.error_line:
                    painter.setPen(Qt.PenStyle.NoPen)
                    painter.setBrush(ERROR_MARK_COLOUR)
                    diameter = max(6, height // 2)
                    painter.drawEllipse(3, top + (height - diameter) // 2, diameter, diameter)
                    painter.setPen(QColor(255, 200, 200))
                else:
                    painter.setPen(QColor(120, 128, 140))
                painter.drawText(0, top, width - GUTTER_PADDING, height,
                                 Qt.AlignmentFlag.AlignRight, str(number))  # fmt: skip
            block = block.next()
            top = bottom
        painter.end()

    # -- error line ------------------------------------------------------------------------
    def mark_error_line(self, line: int | None) -> None:
        """Paint `line` (1-based) as the error line, or no line."""
        if line is not None and not 1 <= line <= self.blockCount():
            line = None
        if line == self.error_line:
            return
        self.error_line = line
        selections = []
        if line is not None:
            selection = QTextEdit.ExtraSelection()
            selection.format.setBackground(ERROR_LINE_COLOUR)
            selection.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            selection.cursor = self.textCursor()
            selection.cursor.setPosition(self.document().findBlockByNumber(line - 1).position())
            selections.append(selection)
        self.setExtraSelections(selections)
        self._gutter.update()

    # -- keys ------------------------------------------------------------------------------
    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent):
            document = self.document()
            undo = event.matches(QKeySequence.StandardKey.Undo)
            redo = event.matches(QKeySequence.StandardKey.Redo)
            if (undo and not document.isUndoAvailable()) or (
                redo and not document.isRedoAvailable()
            ):
                event.ignore()  # nothing typed to undo: the window's Undo / Redo acts
                return False
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and (
            event.modifiers() & Qt.KeyboardModifier.ControlModifier
        ):
            self.apply_requested.emit()
            return
        super().keyPressEvent(event)


class QtCodeWindow(QWidget):
    """The window a popped-out code editor lives in (see the module note); closing it docks
    the editor back."""

    def __init__(self, field: QtCodeField, title: str) -> None:
        super().__init__(field, Qt.WindowType.Window)
        self.field = field
        self.setWindowTitle(f"{title} · GLSL editor")
        self.dock_back_button = QPushButton("Dock Back")
        self.dock_back_button.setToolTip("Put the editor back in the inspector")
        self.dock_back_button.clicked.connect(field.dock_back)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("<span style='color: gray'>Ctrl+Enter applies</span>"))
        bar.addStretch(1)
        bar.addWidget(self.dock_back_button)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        self.resize(POP_OUT_SIZE)

    def closeEvent(self, event: QCloseEvent) -> None:
        event.accept()
        self.field.dock_back()


class QtCodeField(QWidget):
    """A code pin's editor in the inspector: a title, the editor and its message line; it can
    pop out into a window of its own (see the module note)."""

    applied = Signal(str)  # the text, once per application

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title = title
        self.editor = QtCodeEditor()
        self.message = QLabel()
        self.message.setStyleSheet("color: #ff6060;")
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        # One line, always there: an error appearing never moves what is below.
        self.message.setFixedHeight(self.message.fontMetrics().height() + 4)
        heading = QLabel(f"{title} <span style='color: gray'>· Ctrl+Enter applies</span>")
        self.pop_out_button = QToolButton()
        self.pop_out_button.setText("Pop Out")
        self.pop_out_button.setToolTip("Edit in a window of its own, as big as you make it")
        self.pop_out_button.clicked.connect(self.pop_out)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(heading, 1)
        top.addWidget(self.pop_out_button)
        self.body = QWidget()  # the editor and its message line: here or in the pop-out window
        body = QVBoxLayout(self.body)
        body.setContentsMargins(0, 0, 0, 0)
        body.addWidget(self.editor, 1)
        body.addWidget(self.message)
        self.popped_note = QLabel(
            "<span style='color: gray'>Editing in its own window.</span> <a href='#'>Dock back</a>"
        )
        self.popped_note.linkActivated.connect(lambda _link: self.dock_back())
        self.popped_note.hide()
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.addLayout(top)
        self._layout.addWidget(self.body, 1)
        self._layout.addWidget(self.popped_note)
        self.popup: QtCodeWindow | None = None
        self._shown = ""  # the value last shown or applied: the document's, as far as we know
        self._loading = False
        self._pause = QTimer(self)
        self._pause.setSingleShot(True)
        self._pause.setInterval(APPLY_PAUSE_MS)
        self._pause.timeout.connect(self.apply)
        self.editor.textChanged.connect(self._typed)
        self.editor.apply_requested.connect(self.apply)
        self.editor.installEventFilter(self)

    def pop_out(self) -> None:
        """Move the editor into a window of its own (or raise that window)."""
        if self.popup is None:
            self.popup = QtCodeWindow(self, self.title)
            self.popup.addActions(_undo_actions(self.window()))
            self.popup.layout().addWidget(self.body)  # type: ignore[union-attr]
            self.popped_note.show()
            self.pop_out_button.setEnabled(False)
        self.popup.show()
        self.popup.raise_()
        self.popup.activateWindow()
        self.editor.setFocus()

    def dock_back(self) -> None:
        """Move the editor back into the inspector and close its window."""
        popup, self.popup = self.popup, None
        if popup is None:
            return
        self._layout.insertWidget(1, self.body, 1)
        self.body.show()
        self.popped_note.hide()
        self.pop_out_button.setEnabled(True)
        popup.hide()
        popup.deleteLater()

    @property
    def text(self) -> str:
        return self.editor.toPlainText()

    @property
    def pending(self) -> bool:
        """Whether there is typing not applied yet."""
        return self.text != self._shown

    def set_text(self, value: Any) -> None:
        """Show the document's value. Typing not applied yet stays unless the document's value
        itself changed (an undo, say), which replaces it."""
        text = value if isinstance(value, str) else str(value)
        if text == self._shown:
            return
        self._shown = text
        if text == self.text:
            return
        self._pause.stop()
        cursor = self.editor.textCursor().position()
        scroll = self.editor.verticalScrollBar().value()
        self._loading = True
        self.editor.setPlainText(text)  # clears the text's own undo history too
        self._loading = False
        restored = self.editor.textCursor()
        restored.setPosition(min(cursor, len(text)))
        self.editor.setTextCursor(restored)
        self.editor.verticalScrollBar().setValue(scroll)

    def apply(self) -> None:
        """Apply the typed text now (if it differs from the document's)."""
        self._pause.stop()
        if not self.pending:
            return
        self._shown = self.text
        # What is applied is one step of the document's history now, not of the text's.
        self.editor.document().clearUndoRedoStacks(QTextDocument.Stacks.UndoAndRedoStacks)
        self.applied.emit(self._shown)

    def show_error(self, error: str | None) -> None:
        """Show a node's error text; a shader compile error also marks its line."""
        location = shader_error_location(error) if error else None
        self.editor.mark_error_line(location[0] if location is not None else None)
        text = (error or "").removeprefix(SHADER_ERROR_PREFIX)
        self.message.setText(self.message.fontMetrics().elidedText(
            text, Qt.TextElideMode.ElideRight, max(40, self.message.width())))  # fmt: skip
        self.message.setToolTip(error or "")

    def _typed(self) -> None:
        if not self._loading:
            self._pause.start()

    def eventFilter(self, watched: Any, event: QEvent) -> bool:
        if watched is self.editor and event.type() == QEvent.Type.FocusOut:
            self.apply()
        return super().eventFilter(watched, event)


def _undo_actions(window: QWidget) -> list[QAction]:
    """The actions of `window` whose shortcuts are Undo or Redo (the document's)."""
    keys = {
        *QKeySequence.keyBindings(QKeySequence.StandardKey.Undo),
        *QKeySequence.keyBindings(QKeySequence.StandardKey.Redo),
        QKeySequence("Ctrl+Shift+Z"),
    }
    return [a for a in window.findChildren(QAction) if keys.intersection(a.shortcuts())]
