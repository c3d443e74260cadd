"""The node help window: what a node type does, pin by pin, with a small example patch to open.

`QtNodeHelp.show_type(type_id)` fills the window from the spec: the id, its one-sentence summary,
the rest of its doc, how it runs (its determinism in plain words), a table of input and output
pins with types, defaults and their sentence, and what the example patch holds. "Open example"
emits `open_example_requested(type_id)`; the editor opens `app.session.node_examples.example_patch`
as a new untitled document. The window is a non-modal tool window that stays over the editor, so the
person can read it while patching. `pin_doc` and `determinism_words` also serve the tooltips of
the canvas, the inspector and the library panel.
"""

from __future__ import annotations

import html
import re

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.session.node_examples import example_patch
from nodes import LIBRARY, Determinism, NodeSpec, Patch, PatchError

# Pins that come from a node's values rather than its spec have no sentence of their own.
DYNAMIC_PIN_DOCS = {
    "gpu.shader": "A uniform of the shader, set here or linked.",
    "subpatch": "A pin of the definition: an inlet or an outlet inside it.",
}

DETERMINISM_WORDS = {
    Determinism.DETERMINISTIC: (
        "Pure: its outputs depend on its inputs only, so it runs again only when an input changes."
    ),
    Determinism.NONDETERMINISTIC: (
        "Live: it depends on time, its own memory or the outside world, so it runs every frame."
    ),
    Determinism.USER_INPUT: (
        "User input: it holds a value set live (by hand or a controller) and runs again when that"
        " value changes."
    ),
}


# The canvas's classes (CONST / USER / HOT, app.qt.canvas.legend) each annotation leads to: the
# library and the help say them in the canvas's words.
CANVAS_CLASS = {
    Determinism.DETERMINISTIC: "CONST*",  # * as its inputs: the tooltip says it in full
    Determinism.NONDETERMINISTIC: "HOT",
    Determinism.USER_INPUT: "USER",
}
CLASS_SENTENCE = {
    Determinism.DETERMINISTIC: (
        "On the canvas it is CONST (runs once) when its inputs are constant, USER when a user"
        " input feeds it, HOT when something live (time, noise) does."
    ),
    Determinism.NONDETERMINISTIC: "On the canvas it is HOT: it runs every frame.",
    Determinism.USER_INPUT: "On the canvas it is USER: it runs when you change its value.",
}


def class_words(spec: NodeSpec) -> str:
    """The library's short line for how a node type runs: its annotation and the canvas class it
    leads to ("nondeterministic → HOT"; "deterministic → CONST*": CONST when its inputs are
    constant, USER or HOT when they are, which `determinism_words` says in full)."""
    return f"{spec.determinism.value} → {CANVAS_CLASS[spec.determinism]}"


def pin_doc(spec: NodeSpec, pin: str) -> str:
    """The sentence describing `pin` of a node of this spec ("" when it has none)."""
    doc = spec.pin_docs.get(pin, "")
    if doc:
        return doc
    return DYNAMIC_PIN_DOCS.get(spec.id, "")


def determinism_words(spec: NodeSpec) -> str:
    """How a node of this type runs, in plain words."""
    words = f"{DETERMINISM_WORDS[spec.determinism]} {CLASS_SENTENCE[spec.determinism]}"
    if spec.stateful and spec.determinism == Determinism.DETERMINISTIC:
        words += " It keeps some state of its own between runs."
    if spec.sink:
        words += " It is a sink: one of the results the patch is evaluated for."
    return words


def _details(spec: NodeSpec) -> str:
    """The doc after its first sentence."""
    text = " ".join(spec.doc.split())
    return text[len(spec.summary) :].strip()


def _pin_rows(spec: NodeSpec, output: bool) -> str:
    rows = []
    pins = spec.outputs if output else spec.inputs
    for pin in pins:
        default = "" if output else html.escape(_shown_default(getattr(pin, "default", None)))
        rows.append(
            f"<tr><td><b>{html.escape(pin.name)}</b></td><td>{html.escape(pin.type)}</td>"
            + ("" if output else f"<td>{default}</td>")
            + f"<td>{html.escape(pin_doc(spec, pin.name))}</td></tr>"
        )
    if not rows:
        return "<p><i>none</i></p>"
    cells = ["pin", "type"] + ([] if output else ["default"]) + ["what it is"]
    head = "<tr>" + "".join(f"<th align='left'>{cell}</th>" for cell in cells)
    return f"<table cellspacing='0' cellpadding='3'>{head}</tr>{''.join(rows)}</table>"


def _shown_default(value: object) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:39] + "…"


def example_words(patch: Patch) -> str:
    """What an example patch holds: its links as `source.pin → node.pin` lines."""
    lines = [
        f"{link.src} ({patch.nodes[link.src].type_id}).{link.src_pin} → "
        f"{link.dst} ({patch.nodes[link.dst].type_id}).{link.dst_pin}"
        for link in patch.links
    ]
    if not lines:
        lines = [f"{node_id} ({inst.type_id})" for node_id, inst in patch.nodes.items()]
    return "<br>".join(html.escape(line) for line in lines)


def _with_code(text: str) -> str:
    """Escaped text with its `quoted` names in a code font."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def help_html(spec: NodeSpec, example: Patch | None = None) -> str:
    """The help page of a node type, as rich text."""
    parts = [
        f"<h2>{html.escape(spec.id)}</h2>",
        f"<p><b>{html.escape(spec.summary)}</b></p>",
    ]
    details = _details(spec)
    if details:
        parts.append(f"<p>{_with_code(details)}</p>")
    parts.append(f"<p><i>{html.escape(determinism_words(spec))}</i></p>")
    parts.append("<h3>Inputs</h3>" + _pin_rows(spec, output=False))
    if spec.dynamic_inputs is not None:
        parts.append(f"<p>More inputs: {html.escape(DYNAMIC_PIN_DOCS.get(spec.id, ''))}</p>")
    parts.append("<h3>Outputs</h3>" + _pin_rows(spec, output=True))
    if example is not None:
        parts.append(
            "<h3>Example</h3><p>Open example opens a patch with these links as a new untitled"
            " document:</p><p>" + example_words(example) + "</p>"
        )
    return "".join(parts)


class QtNodeHelp(QDialog):
    """The help window of one node type at a time (see the module note)."""

    open_example_requested = Signal(str)  # type id

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("node_help")
        self.setWindowTitle("Node help")
        self.setModal(False)
        self.type_id: str | None = None
        self.example: Patch | None = None
        self.browser = QTextBrowser()
        self.browser.setOpenLinks(False)
        self.open_example_button = QPushButton("Open example")
        self.open_example_button.setToolTip("Open the example patch as a new untitled document")
        self.open_example_button.clicked.connect(self._open_example)
        close = QPushButton("Close")
        close.clicked.connect(self.close)
        buttons = QHBoxLayout()
        buttons.addWidget(self.open_example_button)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser, 1)
        layout.addLayout(buttons)
        self.resize(560, 620)

    def show_type(self, type_id: str) -> None:
        """Show the help of `type_id` and bring the window up."""
        spec = LIBRARY[type_id]
        self.type_id = type_id
        try:
            self.example = example_patch(type_id)
        except (PatchError, OSError):  # a bad example file never hides the help text
            self.example = None
        self.open_example_button.setEnabled(self.example is not None)
        self.setWindowTitle(f"Help: {type_id}")
        self.browser.setHtml(help_html(spec, self.example))
        self.show()
        self.raise_()
        self.activateWindow()

    def text(self) -> str:
        """The help as plain text (for tests and copying)."""
        return self.browser.toPlainText()

    def _open_example(self) -> None:
        if self.type_id is not None:
            self.open_example_requested.emit(self.type_id)
