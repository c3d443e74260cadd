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
bounds, gets a slider; "code" and "toggle" hints get their widget; every other pin gets its type's
editor ("color" and "file" hints keep the type's widget).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QDoubleSpinBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSlider,
    QSpinBox,
    QWidget,
)

from app.qt.panels.code_editor import QtCodeField
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

    def __init__(self, size: int, edited: Callable[[tuple[float, ...]], None]):
        super().__init__()
        self.fields: list[QDoubleSpinBox] = []
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for _ in range(size):
            field = QDoubleSpinBox()
            field.setDecimals(4)
            field.setRange(-1e9, 1e9)
            field.setKeyboardTracking(False)
            field.valueChanged.connect(lambda _v: edited(self.value()))
            layout.addWidget(field)
            self.fields.append(field)

    def value(self) -> tuple[float, ...]:
        return tuple(float(field.value()) for field in self.fields)

    def set_value(self, value: Any) -> None:
        for field, component in zip(self.fields, value, strict=True):
            _quiet(field, field.setValue, float(component))


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


def _numbers_line(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    """A line of numbers separated by spaces or commas (colours, 2-vectors); text that is not
    numbers shows the stored value again."""
    line = QLineEdit()

    def edited() -> None:
        try:
            value = tuple(float(part) for part in line.text().replace(",", " ").split())
        except ValueError:
            host.show_stored()
            return
        host.emit(pin.name, value)

    line.editingFinished.connect(edited)
    return PinEditor(line, lambda v: _quiet(line, line.setText, " ".join(f"{c:g}" for c in v)))


def _vector3(pin: PinSpec, host: PinEditorHost) -> PinEditor:
    field = QtVectorField(3, lambda v: host.emit(pin.name, v))
    return PinEditor(field, field.set_value)


#: The editor's half of each pin type, by name.
PIN_LOOKS: dict[str, PinLook] = {
    "float": PinLook((120, 190, 255), _float),
    "num": PinLook((120, 190, 255), _float),
    "int": PinLook((90, 160, 230), _int),
    "bool": PinLook((230, 200, 80), _check_box),
    "array": PinLook((90, 220, 200)),
    "str": PinLook((220, 150, 220), _text),
    "color": PinLook((255, 140, 110), _numbers_line),
    "vec2": PinLook((170, 200, 255), _numbers_line),
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
    if hint in HINT_EDITORS:
        return HINT_EDITORS[hint]
    look = PIN_LOOKS.get(pin.type)
    return shown_in_words if look is None or look.editor is None else look.editor
