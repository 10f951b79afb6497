"""The settings pane: awake ceiling (hours + minutes), prompt timeout, ask mode.

Bounds come from core.ceiling and are checked by the same `CeilingSettings.checked` the CLI and the
agent rely on. A value out of bounds says so under the fields and is not applied (Apply is disabled);
the spin boxes themselves do not clamp, so a person sees why instead of a silently changed number.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from workroom.core.ceiling import (
    MAX_DURATION_SECONDS,
    MIN_DURATION_SECONDS,
    CeilingSettings,
    SettingsError,
)
from workroom.core.durations import format_duration
from workroom.core.errors import UserError
from workroom.ui import styles

FIELD_WORDS = {"ceiling_seconds": "The awake ceiling", "prompt_timeout_seconds": "The prompt timeout"}
BOUNDS_TEXT = (
    f"Each between {format_duration(MIN_DURATION_SECONDS)} and {format_duration(MAX_DURATION_SECONDS)}."
)


def _spin(maximum: int, suffix: str, name: str) -> QSpinBox:
    box = QSpinBox()
    box.setRange(0, maximum)
    box.setSuffix(suffix)
    box.setObjectName(name)
    box.setKeyboardTracking(True)
    return box


class SettingsView(QWidget):
    apply_requested = Signal(object)
    """A checked CeilingSettings the user asked to apply."""

    def __init__(self) -> None:
        super().__init__()
        max_hours = int(MAX_DURATION_SECONDS // 3600)
        self.ceiling_hours = _spin(max_hours, " h", "ceiling_hours")
        self.ceiling_minutes = _spin(59, " min", "ceiling_minutes")
        self.timeout_minutes = _spin(int(MAX_DURATION_SECONDS // 60), " min", "timeout_minutes")
        self.timeout_seconds = _spin(59, " s", "timeout_seconds")
        self.ask_mode = QCheckBox("Ask before keeping a box awake past the ceiling")
        self.ask_mode.setObjectName("ask_mode")
        self.ask_mode.setToolTip("Only hosts that sleep when idle are asked; hosts that never sleep just report it.")
        self.bounds = QLabel(BOUNDS_TEXT)
        self.bounds.setObjectName("settings_bounds")
        self.error = QLabel()
        self.error.setObjectName("settings_error")
        self.error.setWordWrap(True)
        styles.set_role(self.error, styles.ERROR)
        bold = self.error.font()
        bold.setBold(True)
        self.error.setFont(bold)
        self.error.hide()
        self.result = QLabel()
        self.result.setObjectName("settings_result")
        self.result.setWordWrap(True)
        self.apply_button = QPushButton("Apply to all hosts")
        self.apply_button.setObjectName("settings_apply")
        self.apply_button.clicked.connect(self.request_apply)

        ceiling_row = QHBoxLayout()
        ceiling_row.addWidget(self.ceiling_hours)
        ceiling_row.addWidget(self.ceiling_minutes)
        ceiling_row.addStretch(1)
        timeout_row = QHBoxLayout()
        timeout_row.addWidget(self.timeout_minutes)
        timeout_row.addWidget(self.timeout_seconds)
        timeout_row.addStretch(1)
        form = QFormLayout()
        form.addRow("Awake ceiling", ceiling_row)
        form.addRow("Prompt timeout", timeout_row)
        form.addRow("", self.ask_mode)
        form.addRow("", self.bounds)
        explain = QLabel(
            "A host busy longer than the awake ceiling is flagged. In ask mode, a sleepable host's agent asks "
            "here whether to keep it awake; unanswered within the prompt timeout, it stops keeping it awake."
        )
        explain.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(explain)
        layout.addLayout(form)
        layout.addWidget(self.error)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.apply_button)
        layout.addLayout(buttons)
        layout.addWidget(self.result)
        layout.addStretch(1)
        for box in (self.ceiling_hours, self.ceiling_minutes, self.timeout_minutes, self.timeout_seconds):
            box.valueChanged.connect(self._validate)
        self.ask_mode.toggled.connect(self._validate)

    def load(self, settings: CeilingSettings) -> None:
        hours, minutes = settings.ceiling_hours_minutes
        t_minutes, t_seconds = divmod(round(settings.prompt_timeout_seconds), 60)
        for box, value in ((self.ceiling_hours, hours), (self.ceiling_minutes, minutes),
                           (self.timeout_minutes, t_minutes), (self.timeout_seconds, t_seconds)):
            box.blockSignals(True)
            box.setValue(value)
            box.blockSignals(False)
        self.ask_mode.setChecked(settings.ask_at_ceiling)
        self._validate()

    def _entered_seconds(self) -> dict[str, float]:
        return {
            "ceiling_seconds": float(self.ceiling_hours.value() * 3600 + self.ceiling_minutes.value() * 60),
            "prompt_timeout_seconds": float(self.timeout_minutes.value() * 60 + self.timeout_seconds.value()),
        }

    def entered(self) -> CeilingSettings:
        """The settings as typed, checked against the bounds (raises SettingsError)."""
        return CeilingSettings.checked(**self._entered_seconds(), ask_at_ceiling=self.ask_mode.isChecked())

    def _validate(self) -> CeilingSettings | None:
        try:
            settings = self.entered()
        except SettingsError as error:
            value = self._entered_seconds().get(error.field)
            what = FIELD_WORDS.get(error.field, error.field)
            got = f"; {format_duration(value)} is not" if value is not None else ""
            self.error.setText(f"{what} must be between {format_duration(MIN_DURATION_SECONDS)} and "
                               f"{format_duration(MAX_DURATION_SECONDS)}{got}. Not applied.")
            self.error.show()
            self.apply_button.setEnabled(False)
            return None
        self.error.hide()
        self.error.setText("")
        self.apply_button.setEnabled(True)
        return settings

    def request_apply(self) -> None:
        settings = self._validate()
        if settings is None:
            return
        self.result.setText("Applying…")
        self.apply_button.setEnabled(False)
        self.apply_requested.emit(settings)

    def show_outcome(self, outcome: dict[str, UserError | None]) -> None:
        self.apply_button.setEnabled(True)
        failed = {name: err for name, err in outcome.items() if err is not None}
        lines = ["Saved, and applied to every connected host (others get it when they connect)."]
        if failed:
            lines = ["Saved, but not every host took it:"]
        lines += [f"{name}: {err.title}: {err.message}" for name, err in failed.items()]
        self.result.setText("\n".join(lines))

    def show_failure(self, error: UserError) -> None:
        self.apply_button.setEnabled(True)
        self.result.setText(f"{error.title}: {error.message} {error.hint}".strip())

