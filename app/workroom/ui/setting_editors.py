"""One editor per kind of setting row (core.setting_rows.Kind): a duration's boxes, a yes/no's checkbox, a
text's line; each with a note under it (why it cannot be changed here, what the system says, a refusal, or
the exact value its boxes round).

A duration's boxes take any whole number up to nine digits and never clamp: what is typed is what the box
holds, and a value out of bounds is refused in words (`refusal`), never by a box silently refusing a digit.
A value the boxes cannot show whole (the CLI takes seconds: a 90 s ceiling shows as 2 min) is kept exactly as
loaded, and said in words under the boxes (`remark`), until the person changes those boxes.
"""

from __future__ import annotations

from typing import Any, assert_never

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLineEdit, QSpinBox, QVBoxLayout, QWidget

from workroom.core.durations import exact_duration, format_duration
from workroom.core.setting_checks import SettingsError, check_setting
from workroom.core.setting_rows import UNIT_SECONDS, Kind, SettingRow
from workroom.ui import styles
from workroom.ui.plain_widgets import plain_label, set_tooltip

MAX_TYPED = 999_999_999
"""Every box takes any whole number up to nine digits (far past 30 days in any unit)."""


class RowEditor(QWidget):
    """The controls of one row on a line (`line`: a row shown inline joins it), and its note below."""

    edited = Signal()
    """The person changed the value (not a `load`)."""

    def __init__(self, row: SettingRow) -> None:
        super().__init__()
        self.row = row
        self.setObjectName(f"setting_{row.name}")
        self.line = QHBoxLayout()
        self.line.setContentsMargins(0, 0, 0, 0)
        self.note = plain_label()  # may quote the system's own error (a file's name)
        self.note.setObjectName(f"{row.name}_note")
        self.note.setWordWrap(True)
        styles.set_role(self.note, styles.MUTED)
        self.note.hide()  # never show() here: a widget without its parent yet would open as a window
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addLayout(self.line)
        column.addWidget(self.note)

    def controls(self) -> tuple[QWidget, ...]:
        raise NotImplementedError

    def value(self) -> Any:
        raise NotImplementedError

    def load(self, value: Any) -> None:
        """Show `value` (as stored), without `edited`."""
        for control in self.controls():
            control.blockSignals(True)
        try:
            self._show(value)
        finally:
            for control in self.controls():
                control.blockSignals(False)

    def _show(self, value: Any) -> None:
        raise NotImplementedError

    def refusal(self) -> str | None:
        """Why the value shown cannot be taken, in words (None: it can)."""
        try:
            check_setting(self.row.name, self.value())
        except SettingsError as error:
            return error.message
        return None

    def remark(self) -> str:
        """Anything more to say of the value shown ("" for nothing)."""
        return ""

    def set_editable(self, editable: bool) -> None:
        for control in self.controls():
            control.setEnabled(editable)

    def say(self, text: str, role: str = styles.MUTED) -> None:
        """Put `text` in the note (hidden when empty)."""
        if self.note.property(styles.ROLE_PROPERTY) != role:
            styles.set_role(self.note, role)
        self.note.setText(text)
        self.note.setVisible(bool(text))


class DurationEditor(RowEditor):
    """A duration in the row's units, largest first ("h", "min", "s")."""

    def __init__(self, row: SettingRow) -> None:
        super().__init__(row)
        self.boxes: dict[str, QSpinBox] = {}
        bounds = f"Between {row.bounds_words().replace(' – ', ' and ')}."
        for unit in row.units:
            box = QSpinBox()
            box.setRange(0, MAX_TYPED)
            box.setSuffix(f" {unit}")
            box.setObjectName(f"{row.name}_{unit}")
            box.setKeyboardTracking(True)
            set_tooltip(box, bounds)
            box.valueChanged.connect(lambda _value: self.edited.emit())
            self.boxes[unit] = box
            self.line.addWidget(box)
        self._loaded: tuple[tuple[int, ...], float] | None = None
        """What the boxes showed when loaded, and the exact seconds loaded."""

    def controls(self) -> tuple[QWidget, ...]:
        return tuple(self.boxes.values())

    def _show(self, value: Any) -> None:
        smallest = UNIT_SECONDS[self.row.units[-1]]
        rest = round(float(value) / smallest)
        counts = []
        for unit in self.row.units:
            count, rest = divmod(rest, UNIT_SECONDS[unit] // smallest)
            counts.append(count)
        for box, count in zip(self.boxes.values(), counts, strict=True):
            box.setValue(count)
        self._loaded = (self.shown(), float(value))

    def shown(self) -> tuple[int, ...]:
        return tuple(box.value() for box in self.boxes.values())

    def typed(self) -> float:
        """What the boxes show, in seconds."""
        return float(sum(box.value() * UNIT_SECONDS[unit] for unit, box in self.boxes.items()))

    def kept(self) -> float | None:
        """The seconds loaded while the boxes still show what they showed then (None once changed)."""
        return self._loaded[1] if self._loaded is not None and self._loaded[0] == self.shown() else None

    def value(self) -> float:
        kept = self.kept()
        return self.typed() if kept is None else kept

    def typed_words(self) -> str:
        """What the boxes hold, as typed ("99999 min", "0 s")."""
        words = [f"{box.value()}{box.suffix()}" for box in self.boxes.values() if box.value()]
        return " ".join(words) or f"0{list(self.boxes.values())[-1].suffix()}"

    def refusal(self) -> str | None:
        if super().refusal() is None:
            return None
        assert self.row.minimum is not None and self.row.maximum is not None
        typed, total = self.typed_words(), format_duration(self.value())
        got = f"; {typed} is not" if typed == total or not self.typed() else f"; {typed} ({total}) is not"
        return (f"{self.row.words} must be between {format_duration(self.row.minimum)} and "
                f"{format_duration(self.row.maximum)}{got}.")

    def remark(self) -> str:
        kept = self.kept()
        if kept is None or kept == self.typed():
            return ""
        return (f"{self.row.words} is {exact_duration(kept)} (set in seconds); the boxes above round it, and it "
                "stays as it is unless you change them.")


class YesNoEditor(RowEditor):
    def __init__(self, row: SettingRow) -> None:
        super().__init__(row)
        self.check = QCheckBox(row.label)
        self.check.setObjectName(row.name)
        set_tooltip(self.check, row.tooltip)
        self.check.toggled.connect(lambda _on: self.edited.emit())
        self.line.addWidget(self.check)

    def controls(self) -> tuple[QWidget, ...]:
        return (self.check,)

    def value(self) -> bool:
        return self.check.isChecked()

    def _show(self, value: Any) -> None:
        self.check.setChecked(bool(value))


class TextEditor(RowEditor):
    """One line of text, taken when the person leaves the field or presses Return."""

    def __init__(self, row: SettingRow) -> None:
        super().__init__(row)
        self.text = QLineEdit()
        self.text.setObjectName(row.name)
        self.text.setPlaceholderText(row.empty)
        set_tooltip(self.text, row.tooltip)
        self.text.editingFinished.connect(self.edited.emit)
        self.line.addWidget(plain_label(f"{row.label}:"))
        self.line.addWidget(self.text, 1)

    def controls(self) -> tuple[QWidget, ...]:
        return (self.text,)

    def value(self) -> str:
        return self.text.text().strip()

    def _show(self, value: Any) -> None:
        self.text.setText(str(value))


def editor_for(row: SettingRow) -> RowEditor:
    match row.kind:
        case Kind.DURATION:
            return DurationEditor(row)
        case Kind.YES_NO:
            return YesNoEditor(row)
        case Kind.TEXT:
            return TextEditor(row)
        case _:
            assert_never(row.kind)
