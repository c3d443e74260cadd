"""The editor's half of pin types: each type's colour on the canvas and the inspector widget that
edits its values, and the widgets a pin's UI hint asks for.

The core's half (coercion, links, blending, uniforms) is `nodes.PinType`; this table is keyed by
the same names. A new pin type is one `nodes.register_pin_type(...)` plus one `PIN_LOOKS` entry
here (its colour and editor). A type without an entry is drawn in NodeGraphQt's default colour
and shown read-only in words.

An editor is made by a factory from the pin and the `PinEditorHost` (the inspector): it returns
the widget and a `show(value)` that puts a value in it with its signals blocked, so nothing
echoes. Edits go out through `host.emit`; nothing reads values back out of widgets.

Choosing (`editor_for`): the "live" hint is shown read-only; a "slider" hint, or a pin with both
bounds, gets a slider; "code" and "toggle" hints get their widget; a "file" hint gets a line with a
Browse button; a text pin with `choices` gets a drop-down of them; every other pin gets its type's
editor: colours a swatch (a click opens a colour dialog with alpha) beside four 0..1 number fields,
2- and 3-vectors two and three number fields.

One edit is one undo step: a number field's value when it is typed or stepped, a colour dialog
from opening to OK (the patch follows it live, every edit with one gesture token; Cancel puts the
colour back and leaves no step), a choice picked, a file chosen. A file chosen in
the dialog (which opens in the patch's folder) is named relative to that folder, as the file
format requires; one outside it is refused by the Patch with its reason.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import (
    QCheckBox,
    QColorDialog,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QSlider,
    QSpinBox,
    QStyle,
    QWidget,
)

from app.qt.panels.code_editor import QtCodeField
from app.qt.support.pictures import paint_checkerboard
from nodes import PinSpec

SLIDER_STEPS = 1000
_gestures = itertools.count(1)


class PinEditor(NamedTuple):
    """An input's widget in the inspector and how to show a value in it without echo."""

    widget: QWidget
    show: Callable[[Any], None]


class PinEditorHost(Protocol):
    """What an editor factory may ask of the panel that holds it (the inspector)."""

    def emit(self, pin: str, value: Any, gesture: int | None = None) -> None:
        """Report an edit of `pin` (a drag carries one gesture token from press to release)."""

    def slider_range(self, pin: PinSpec) -> tuple[float, float]:
        """The range a slider of `pin` spans now."""

    def show_stored(self) -> None:
        """Show the stored values again (an edit that could not be read)."""

    def code_field(self, pin: str) -> QtCodeField:
        """The code editor of `pin` (kept across rebuilds of the same node)."""

    def folder(self) -> Path | None:
        """The folder file names are relative to: the patch's (None: never saved, the current
        directory)."""


EditorFactory = Callable[[PinSpec, PinEditorHost], PinEditor]


@dataclass(frozen=True)
class PinLook:
    """How the editor shows a pin type: its port colour and its inspector editor (None: the
    value is shown in words, not edited)."""

    color: tuple[int, int, int]
    editor: EditorFactory | None = None


class QtSliderField(QWidget):
    """A slider over a range with a number field; reports drags with a gesture token.

    The range is asked for again whenever a value is shown, so it follows edits of the node's own
    `min` / `max` inputs."""

    def __init__(
        self,
        range_of: Callable[[], tuple[float, float]],
        edited: Callable[[float, int | None], None],
    ):
        super().__init__()
        self._range_of = range_of
        self.low, self.high = range_of()
        self._edited = edited
        self._gesture: int | None = None
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        self.number = QDoubleSpinBox()
        self.number.setDecimals(3)
        self.number.setRange(-1e9, 1e9)
        self.number.setKeyboardTracking(False)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.slider, 3)
        layout.addWidget(self.number, 1)
        self.slider.sliderPressed.connect(self._begin)
        self.slider.sliderReleased.connect(self._end)
        self.slider.valueChanged.connect(self._slid)
        self.number.valueChanged.connect(lambda v: self._edited(float(v), None))

    def _begin(self) -> None:
        self._gesture = next(_gestures)

    def _end(self) -> None:
        self._gesture = None

    def _slid(self, step: int) -> None:
        value = self.low + (self.high - self.low) * step / SLIDER_STEPS
        self.number.blockSignals(True)
        self.number.setValue(value)
        self.number.blockSignals(False)
        self._edited(value, self._gesture)

    def set_value(self, value: float) -> None:
        self.low, self.high = self._range_of()
        span = self.high - self.low
        step = round((value - self.low) / span * SLIDER_STEPS) if span else 0
        for widget, new in ((self.slider, min(max(step, 0), SLIDER_STEPS)), (self.number, value)):
            widget.blockSignals(True)
            widget.setValue(new)
            widget.blockSignals(False)


class QtVectorField(QWidget):
    """One number field per component of a vector; an edit of any field emits the whole vector."""

    def __init__(
        self,
        size: int,
        edited: Callable[[tuple[float, ...]], None],
        step: float = 1.0,
        names: str = "xyzw",
        buttons: bool = True,
    ):
        super().__init__()
        self.fields: list[QDoubleSpinBox] = []
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        for index in range(size):
            field = QDoubleSpinBox()
            field.setDecimals(4)
            field.setRange(-1e9, 1e9)
            field.setSingleStep(step)
            field.setKeyboardTracking(False)
            field.setToolTip(names[index])
            field.setMinimumWidth(40)
            if not buttons:  # narrow: arrow keys and the wheel still step
                field.setButtonSymbols(QDoubleSpinBox.ButtonSymbols.NoButtons)
            field.valueChanged.connect(lambda _v: edited(self.value()))
            layout.addWidget(field)
            self.fields.append(field)

    def value(self) -> tuple[float, ...]:
        return tuple(float(field.value()) for field in self.fields)

    def set_value(self, value: Any) -> None:
        for field, component in zip(self.fields, value, strict=True):
            _quiet(field, field.setValue, float(component))


class QtColorField(QWidget):
    """A colour: a swatch (the colour over a checkerboard, so its alpha shows; its tooltip gives
    the hex code and opacity) that opens a colour dialog with alpha, beside r, g, b, a number
    fields (0..1; brighter than 1 can be typed). While the dialog is open the patch follows the
    colour in it, every edit with one gesture token (one undo step, as a slider drag); Cancel
    puts the colour it started from back."""

    SWATCH = QSize(22, 14)

    def __init__(self, edited: Callable[[tuple[float, ...], int | None], None]):
        super().__init__()
        self._edited = edited
        self.dialog: QColorDialog | None = None  # while it is open
        self.swatch = QPushButton()
        self.swatch.setIconSize(self.SWATCH)
        self.swatch.setFixedWidth(self.SWATCH.width() + 10)
        self.swatch.clicked.connect(self.pick)
        self.numbers = QtVectorField(4, self._typed, step=0.05, names="rgba", buttons=False)
        for field in self.numbers.fields:
            field.setDecimals(3)
            field.setMinimumWidth(34)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addWidget(self.swatch)
        layout.addWidget(self.numbers, 1)
        self._paint_swatch()

    def value(self) -> tuple[float, ...]:
        return self.numbers.value()

    def set_value(self, value: Any) -> None:
        self.numbers.set_value(_rgba(value))
        self._paint_swatch()

    def color(self) -> QColor:
        """The shown colour (components clamped to 0..1)."""
        r, g, b, a = (min(1.0, max(0.0, c)) for c in self.value())
        return QColor.fromRgbF(r, g, b, a)

    def pick(self) -> None:
        """Open the colour dialog at the shown colour; the patch follows it live, and gets the
        starting colour back on Cancel."""
        original = self.value()
        gesture = next(_gestures)
        moved = False
        dialog = QColorDialog(self.color(), self)
        dialog.setWindowTitle("Colour")
        dialog.setOption(QColorDialog.ColorDialogOption.ShowAlphaChannel)
        dialog.setOption(QColorDialog.ColorDialogOption.DontUseNativeDialog)

        def follow(color: QColor) -> None:
            nonlocal moved
            if color.isValid():
                moved = True
                self._show_and_emit(_components(color), gesture)

        dialog.currentColorChanged.connect(follow)
        self.dialog = dialog
        try:
            accepted = dialog.exec() == QDialog.DialogCode.Accepted
            chosen = dialog.currentColor()
        finally:
            self.dialog = None
            dialog.currentColorChanged.disconnect(follow)
            dialog.deleteLater()
        if accepted and chosen.isValid():
            self._show_and_emit(_components(chosen), gesture)
        elif moved:
            self._show_and_emit(original, gesture)

    def _show_and_emit(self, value: tuple[float, ...], gesture: int | None) -> None:
        self.numbers.set_value(value)
        self._paint_swatch()
        self._edited(value, gesture)

    def _typed(self, value: tuple[float, ...]) -> None:
        self._paint_swatch()
        self._edited(value, None)

    def _paint_swatch(self) -> None:
        size = self.SWATCH
        pixmap = QPixmap(size)
        painter = QPainter(pixmap)
        paint_checkerboard(painter, pixmap.rect(), 5)
        color = self.color()
        painter.fillRect(0, 0, size.width(), size.height(), color)
        opaque = QColor(color)
        opaque.setAlphaF(1.0)
        painter.fillRect(size.width() * 2 // 3, 0, size.width(), size.height(), opaque)
        painter.setPen(QColor(40, 40, 40))
        painter.drawRect(0, 0, size.width() - 1, size.height() - 1)
        painter.end()
        self.swatch.setIcon(QIcon(pixmap))
        alpha = round(color.alphaF() * 100)
        self.swatch.setToolTip(f"{opaque.name().upper()}, {alpha}% opaque: click to pick a colour")


def _components(color: QColor) -> tuple[float, ...]:
    """A QColor as r, g, b, a in 0..1, to the fields' three decimals."""
    return tuple(round(c, 3) for c in (color.redF(), color.greenF(), color.blueF(), color.alphaF()))


def _rgba(value: Any) -> tuple[float, ...]:
    """A colour value as four components (three mean opaque)."""
    components = tuple(float(c) for c in value)
    return (*components, 1.0) if len(components) == 3 else components[:4]


class QtFileField(QWidget):
    """A file name: a line to type it and a Browse button whose dialog opens in the patch's
    folder; the file chosen is named relative to that folder."""

    def __init__(self, folder_of: Callable[[], Path | None], edited: Callable[[str], None]):
        super().__init__()
        self._folder_of = folder_of
        self._edited = edited
        self.dialog: QFileDialog | None = None  # while it is open
        self.line = QLineEdit()
        self.line.setPlaceholderText("a file in the patch's folder")
        self.line.editingFinished.connect(lambda: self._edited(self.line.text()))
        self.browse = QPushButton("…")
        self.browse.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_DirOpenIcon))
        self.browse.setToolTip("Browse: choose a file in the patch's folder (or a subfolder)")
        self.browse.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.browse.setMaximumWidth(44)
        self.browse.clicked.connect(self.choose)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.line, 1)
        layout.addWidget(self.browse)

    def base(self) -> Path:
        """The folder names are relative to (the current directory for a patch never saved)."""
        folder = self._folder_of()
        return Path(folder) if folder is not None else Path.cwd()

    def set_value(self, value: Any) -> None:
        _quiet(self.line, self.line.setText, "" if value is None else str(value))

    def choose(self) -> None:
        """Open the file dialog in the patch's folder (at the current file, if any)."""
        base = self.base()
        dialog = QFileDialog(self, "Choose a file", str(base))
        dialog.setOption(QFileDialog.Option.DontUseNativeDialog)
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        current = self.line.text()
        if current and not os.path.isabs(current):
            dialog.selectFile(str(base / current))
        self.dialog = dialog
        try:
            accepted = dialog.exec() == QDialog.DialogCode.Accepted
            chosen = dialog.selectedFiles()
        finally:
            self.dialog = None
            dialog.deleteLater()
        if accepted and chosen:
            name = relative_name(Path(chosen[0]), base)
            self.line.setText(name)
            self._edited(name)


def relative_name(path: Path, base: Path) -> str:
    """`path` as a file name relative to `base`, with `/` between parts (as files store them).
    A file outside `base` gets a name leading out with `..`, which the Patch refuses unless it
    leads into a trusted folder or the built-in resources."""
    try:
        relative = os.path.relpath(path.resolve(), base.resolve())
    except ValueError:  # another drive (Windows): only an absolute name would do
        return str(path)
    return Path(relative).as_posix()


def format_value(value: Any) -> str:
    """A value in words, for read-only pins."""
    if isinstance(value, np.ndarray):
        return f"array {value.shape} {value.dtype}"
    if isinstance(value, tuple):
        return ", ".join(f"{v:g}" for v in value)
    return repr(value)


def _quiet(widget: QWidget, setter: Callable[[Any], None], value: Any) -> None:
    widget.blockSignals(True)
    setter(value)
    widget.blockSignals(False)


# ----------------------------------------------------------------------------- editors


def shown_in_words(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    """A read-only label (types without an editor)."""
    label = QLabel()
    return PinEditor(label, lambda v: label.setText(format_value(v)))


def _live(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    live = QLabel()
    live.setToolTip("Set by a live control while the patch plays (read-only)")
    live.setStyleSheet("color: #9fd49f;")
    return PinEditor(live, lambda v: live.setText(format_value(v)))


def _slider(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    field = QtSliderField(lambda: host.slider_range(pin), lambda v, g: host.emit(pin.name, v, g))
    return PinEditor(field, lambda v: field.set_value(float(v)))


def _code(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    code = host.code_field(pin.name)
    return PinEditor(code, code.set_text)


def _check_box(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    box = QCheckBox()
    box.toggled.connect(lambda on: host.emit(pin.name, bool(on)))
    return PinEditor(box, lambda v: _quiet(box, box.setChecked, bool(v)))


def _float(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    number = QDoubleSpinBox()
    number.setDecimals(4)
    number.setRange(-1e9, 1e9)
    number.setKeyboardTracking(False)
    number.valueChanged.connect(lambda v: host.emit(pin.name, float(v)))
    return PinEditor(number, lambda v: _set_number_or_array(number, v))


def _set_number_or_array(number: QDoubleSpinBox, value: Any) -> None:
    is_array = isinstance(value, np.ndarray)
    number.setEnabled(not is_array)
    number.setToolTip(format_value(value) if is_array else "")
    _quiet(number, number.setValue, 0.0 if is_array else float(value))


def _int(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    integer = QSpinBox()
    integer.setRange(-(2**31), 2**31 - 1)
    integer.setKeyboardTracking(False)
    integer.valueChanged.connect(lambda v: host.emit(pin.name, int(v)))
    return PinEditor(integer, lambda v: _quiet(integer, integer.setValue, int(v)))


def _text(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    line = QLineEdit()
    line.editingFinished.connect(lambda: host.emit(pin.name, line.text()))
    return PinEditor(line, lambda v: _quiet(line, line.setText, str(v)))


def _vector2(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    field = QtVectorField(2, lambda v: host.emit(pin.name, v), step=0.05)
    return PinEditor(field, field.set_value)


def _vector3(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    field = QtVectorField(3, lambda v: host.emit(pin.name, v))
    return PinEditor(field, field.set_value)


def _color(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    field = QtColorField(lambda value, gesture: host.emit(pin.name, value, gesture))
    return PinEditor(field, field.set_value)


def _choice(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    """A drop-down of the pin's choices; a stored value that is none of them (a file written
    by hand) is listed too, marked, so that it shows as it is."""
    box = QComboBox()
    box.addItems(list(pin.choices or ()))
    box.activated.connect(lambda index: host.emit(pin.name, box.itemText(index)))

    def show(value: Any) -> None:
        text = str(value)
        if box.findText(text) < 0:
            box.addItem(text)
            box.setItemData(box.count() - 1, "not one of the choices", Qt.ItemDataRole.ToolTipRole)
        _quiet(box, box.setCurrentText, text)

    return PinEditor(box, show)


def _file(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    field = QtFileField(host.folder, lambda name: host.emit(pin.name, name))
    return PinEditor(field, field.set_value)


#: The editor's half of each pin type, by name.
PIN_LOOKS: dict[str, PinLook] = {
    "float": PinLook((120, 190, 255), _float),
    "num": PinLook((120, 190, 255), _float),
    "int": PinLook((90, 160, 230), _int),
    "bool": PinLook((230, 200, 80), _check_box),
    "array": PinLook((90, 220, 200)),
    "str": PinLook((220, 150, 220), _text),
    "color": PinLook((255, 140, 110), _color),
    "vec2": PinLook((170, 200, 255), _vector2),
    "vec3": PinLook((150, 170, 255), _vector3),
    "texture": PinLook((250, 110, 180)),
    "any": PinLook((200, 200, 200)),
}

#: The editors a UI hint asks for, over the type's (nodes.PIN_HINTS lists every hint).
HINT_EDITORS: dict[str, EditorFactory] = {
    "live": _live,
    "slider": _slider,
    "code": _code,
    "toggle": _check_box,
    "file": _file,
}


def pin_color(type_name: str) -> tuple[int, int, int] | None:
    """A pin type's port colour (None: NodeGraphQt's default)."""
    look = PIN_LOOKS.get(type_name)
    return None if look is None else look.color


def editor_for(pin: PinSpec) -> EditorFactory:
    """The factory of the inspector widget that edits `pin` (see the module note)."""
    hint = pin.hint
    if hint != "live" and pin.minimum is not None and pin.maximum is not None:
        hint = "slider"
    if hint in HINT_EDITORS and (hint != "file" or pin.type in ("str", "any")):
        return HINT_EDITORS[hint]
    if pin.choices and pin.type == "str":
        return _choice
    look = PIN_LOOKS.get(pin.type)
    return shown_in_words if look is None or look.editor is None else look.editor
