"""The canvas legend: what the node colours and the evaluation words mean, in plain language.

A small panel floating over the canvas's bottom-left corner (hidden and shown from the View menu,
or its own close button): the node colours in a few words, and, expanded (More), every colour and
word in a sentence. Built from the colours the canvas really uses (app.qt.canvas.canvas), so the two
cannot drift apart. While View > Heat tint colours nodes by cost (app.qt.profiling), `show_heat`
puts the heat scale (cold .. hot, from app.qt.panels.profiler) in place of the class colours.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Signal
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel, QToolButton, QWidget

from app.qt.canvas.canvas import CLASS_COLORS, DEFERRED_BORDER, FAILED_COLOR, IDLE_OPACITY
from app.qt.panels.profiler import HEAT_COLD_MS, HEAT_HOT_MS, HEAT_STOPS
from evaluators import NodeClass

# (swatch style, word, short meaning, plain-language explanation)
ENTRIES: list[tuple[str, str, str, str]] = [
    (
        f"background: rgb{CLASS_COLORS[NodeClass.CONST]};",
        "CONST",
        "runs once",
        "deterministic all the way up: runs once, then its result is reused until you edit it",
    ),
    (
        f"background: rgb{CLASS_COLORS[NodeClass.USER]};",
        "USER",
        "runs when you change a value",
        "depends on a value you set live (user_input): runs again only when you change it",
    ),
    (
        f"background: rgb{CLASS_COLORS[NodeClass.HOT]};",
        "HOT",
        "runs every frame",
        "nondeterministic itself or upstream (time, noise): runs every frame",
    ),
    (
        f"background: rgb{FAILED_COLOR};",
        "failed",
        "error: hover to read it",
        "raised an error: hover the node to read why; its last good result stands",
    ),
    (
        f"background: rgba(46, 72, 110, {int(IDLE_OPACITY * 255)});",
        "dimmed",
        "idle, not needed",
        "idle: nothing that is shown or output needs its result, so it does not run",
    ),
    (
        f"background: #2e486e; border: 2px solid rgb{DEFERRED_BORDER};",
        "outlined",
        "deferred, still working",
        "deferred: working in the background; its previous result stands meanwhile",
    ),
    (
        "",
        "cached",
        "",
        "its result was reused this frame, not recomputed (hover a node for its status)",
    ),
    (
        "",
        "deterministic",
        "",
        "a node type whose result depends on its inputs only: CONST when they are constant,"
        " USER or HOT when a user input or something live feeds it",
    ),
    (
        "",
        "nondeterministic",
        "",
        "a node type that may give a new result each frame (time, noise): always HOT",
    ),
    ("", "user_input", "", "a node type whose value you set live (a control): USER"),
]
CLASS_WORDS = ("CONST", "USER", "HOT")  # the rows the heat scale replaces while it is shown
_GRADIENT = ", ".join(
    f"stop:{i / (len(HEAT_STOPS) - 1):g} rgb{stop}" for i, stop in enumerate(HEAT_STOPS)
)
HEAT_ENTRY = (
    f"background: qlineargradient(x1:0, y1:0, x2:1, y2:0, {_GRADIENT});",
    "heat",
    "cost per frame: cold .. hot",
    f"heat tint: cost per frame on a log scale, blue-grey cold (under {HEAT_COLD_MS:g} ms) to"
    f" red hot ({HEAT_HOT_MS:.1f} ms, a whole 60 fps frame); View ▸ Heat tint turns it off",
)
_ALL_ENTRIES = [*ENTRIES[: len(CLASS_WORDS)], HEAT_ENTRY, *ENTRIES[len(CLASS_WORDS) :]]


class QtLegend(QFrame):
    """The legend panel: short by default (the node colours), every word explained when
    expanded (`More`); `closed` is emitted when its own close button hides it."""

    closed = Signal()

    def __init__(self, canvas_widget: QWidget) -> None:
        super().__init__(canvas_widget)
        self.setObjectName("legend")
        self.setStyleSheet(
            "#legend { background: rgba(20, 22, 26, 220); border: 1px solid #555;"
            " border-radius: 6px; } QLabel { color: #ddd; background: transparent; }"
        )
        layout = QGridLayout(self)
        layout.setContentsMargins(8, 4, 8, 6)
        layout.setHorizontalSpacing(6)
        layout.setVerticalSpacing(2)
        layout.addWidget(QLabel("<b>Legend</b>"), 0, 0, 1, 2)
        self.more_button = QToolButton()
        self.more_button.setText("More")
        self.more_button.setCheckable(True)
        self.more_button.setAutoRaise(True)
        self.more_button.setToolTip("Explain every colour and word")
        self.more_button.toggled.connect(self._expand)
        layout.addWidget(self.more_button, 0, 2)
        close = QToolButton()
        close.setText("×")
        close.setToolTip("Hide the legend (View ▸ Legend shows it again)")
        close.setAutoRaise(True)
        close.clicked.connect(self._close)
        layout.addWidget(close, 0, 3)
        self._labels: list[tuple[QLabel, str, str]] = []
        self._rows: dict[str, tuple[QLabel | None, QLabel]] = {}  # word -> (swatch, label)
        for row, (style, word, short, meaning) in enumerate(_ALL_ENTRIES, start=1):
            swatch = None
            if style:
                swatch = QLabel()
                swatch.setFixedSize(18 if word != "heat" else 40, 12)
                swatch.setStyleSheet(style + " border-radius: 3px;")
                layout.addWidget(swatch, row, 0)
            label = QLabel()
            label.setToolTip(f"{word}: {meaning}")
            layout.addWidget(label, row, 1, 1, 3)
            self._labels.append((label, f"<b>{word}</b> {short}", f"<b>{word}</b>: {meaning}"))
            self._rows[word] = (swatch, label)
        self.heat_shown = False
        self.expanded = False
        canvas_widget.installEventFilter(self)
        self._expand(False)

    @property
    def texts(self) -> list[str]:
        """The words shown and what they mean (the heat scale while it is shown, else the class
        colours)."""
        return [f"{w}: {m}" for _, w, _, m in _ALL_ENTRIES if self._row_wanted(w)]

    def show_heat(self, shown: bool) -> None:
        """The heat scale in place of the class colours (View > Heat tint), or them again."""
        self.heat_shown = shown
        self._expand(self.expanded)

    def _row_wanted(self, word: str) -> bool:
        if word == "heat":
            return self.heat_shown
        return not (self.heat_shown and word in CLASS_WORDS)

    def _expand(self, expanded: bool) -> None:
        self.expanded = expanded
        for (label, short, full), (word, (swatch, _)) in zip(
            self._labels, self._rows.items(), strict=True
        ):
            wanted = self._row_wanted(word)
            label.setText(full if expanded else short)
            label.setVisible(wanted and (expanded or not short.endswith("</b> ")))
            if swatch is not None:
                swatch.setVisible(wanted)
        self._place()

    def _close(self) -> None:
        self.hide()
        self.closed.emit()

    def _place(self) -> None:
        self.adjustSize()
        parent = self.parentWidget()
        if parent is not None:
            self.move(10, max(0, parent.height() - self.height() - 10))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Resize:
            self._place()
        return False
