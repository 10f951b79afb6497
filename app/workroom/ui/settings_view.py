"""The settings pane: awake ceiling (hours + minutes), prompt timeout, ask mode; and which notifications this
computer shows ("finished" after N minutes, also for this computer; lost work), with a line when the
system will not show them (turned off for the app, or no notification service).

A value the boxes cannot show whole (the CLI takes seconds: a 90 s ceiling shows as 2 min) is kept exactly
as loaded, and said in words under the boxes, until the user changes that value's boxes: applying
something else (ask mode, say) never rounds it.

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

from workroom.core.app_settings import FINISHED_AFTER_MAX_SECONDS, FINISHED_AFTER_MIN_SECONDS, NoticeSettings
from workroom.core.ceiling import (
    DURATION_FIELDS,
    MAX_DURATION_SECONDS,
    MIN_DURATION_SECONDS,
    SETTING_FIELDS,
    SETTINGS_BY_NAME,
    CeilingSettings,
    SettingsError,
)
from workroom.core.durations import exact_duration, format_duration
from workroom.core.errors import UserError
from workroom.ui import styles

FIELD_WORDS = {f.name: f.words for f in SETTING_FIELDS}
BOUNDS_TEXT = (
    f"Each between {format_duration(MIN_DURATION_SECONDS)} and {format_duration(MAX_DURATION_SECONDS)}."
)


MAX_TYPED = 999_999_999
"""Every box takes any whole number up to nine digits (far past 30 days in any unit), so what is typed is what the
box holds: the bounds are checked in words below the boxes, never by a box silently refusing a digit."""


def _note(name: str, role: str | None = None, *, hidden: bool = True) -> QLabel:
    """A wrapped line of words under the controls (named for tests and styles), hidden until it has some."""
    label = QLabel()
    label.setObjectName(name)
    label.setWordWrap(True)
    if role is not None:
        styles.set_role(label, role)
    if hidden:
        label.hide()  # never show() here: a widget without its parent yet would open as a window
    return label


def _spin(suffix: str, name: str) -> QSpinBox:
    box = QSpinBox()
    box.setRange(0, MAX_TYPED)
    box.setSuffix(suffix)
    box.setObjectName(name)
    box.setKeyboardTracking(True)
    return box


class SettingsView(QWidget):
    apply_requested = Signal(object)
    """A checked CeilingSettings the user asked to apply."""
    notices_changed = Signal(object)
    """NoticeSettings, as soon as a notification row changes (this computer only: applied at once)."""

    def __init__(self) -> None:
        super().__init__()
        self.ceiling_hours = _spin(" h", "ceiling_hours")
        self.ceiling_minutes = _spin(" min", "ceiling_minutes")
        self.ceiling_seconds = _spin(" s", "ceiling_seconds")
        self.timeout_minutes = _spin(" min", "timeout_minutes")
        self.timeout_seconds = _spin(" s", "timeout_seconds")
        self.ask_mode = QCheckBox("Ask before keeping a box awake past the ceiling")
        self.ask_mode.setObjectName("ask_mode")
        self.ask_mode.setToolTip("Only hosts that sleep when idle are asked; hosts that never sleep just report it.")
        self.bounds = QLabel(BOUNDS_TEXT)
        self.bounds.setObjectName("settings_bounds")
        self.exact = _note("settings_exact", styles.MUTED)
        self._loaded: dict[str, tuple[tuple[int, ...], float]] = {}
        """Per duration field: (what its two boxes showed when loaded, the exact seconds loaded)."""
        self.error = _note("settings_error", styles.ERROR)
        bold = self.error.font()
        bold.setBold(True)
        self.error.setFont(bold)
        self.result = _note("settings_result", hidden=False)
        self.apply_button = QPushButton("Apply to all hosts")
        self.apply_button.setObjectName("settings_apply")
        self.apply_button.clicked.connect(self.request_apply)
        self._notices = NoticeSettings()
        self.finished = QCheckBox("Tell me when a host's work finishes, if it was busy for at least")
        self.finished.setObjectName("notice_finished")
        self.finished_minutes = _spin(" min", "notice_finished_minutes")
        self.finished_minutes.setRange(int(FINISHED_AFTER_MIN_SECONDS // 60), int(FINISHED_AFTER_MAX_SECONDS // 60))
        self.finished_local = QCheckBox("Also for this computer")
        self.finished_local.setObjectName("notice_finished_local")
        self.finished_local.setToolTip("Off by default: you are sitting at it. Each host's details can turn it "
                                       "off for that host.")
        self.lost_work = QCheckBox("Tell me when a box is busy but not kept awake, or fell asleep while busy")
        self.lost_work.setObjectName("notice_lost_work")
        self.notification_service = _note("notification_service", styles.MUTED)

        ceiling_row = QHBoxLayout()
        ceiling_row.addWidget(self.ceiling_hours)
        ceiling_row.addWidget(self.ceiling_minutes)
        ceiling_row.addWidget(self.ceiling_seconds)
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
        form.addRow("", self.exact)
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
        finished_row = QHBoxLayout()
        finished_row.addWidget(self.finished)
        finished_row.addWidget(self.finished_minutes)
        finished_row.addStretch(1)
        notices = QFormLayout()
        notices.addRow("Notifications", finished_row)
        notices.addRow("", self.finished_local)
        notices.addRow("", self.lost_work)
        notices.addRow("", self.notification_service)
        layout.addLayout(notices)
        layout.addStretch(1)
        for check in (self.finished, self.finished_local, self.lost_work):
            check.toggled.connect(self._notices_edited)
        self.finished_minutes.valueChanged.connect(self._notices_edited)
        for box in self._boxes():
            box.valueChanged.connect(self._validate)
        self.ask_mode.toggled.connect(self._validate)

    def load_notices(self, notices: NoticeSettings) -> None:
        self._notices = notices
        for widget, value in ((self.finished, notices.finished), (self.finished_local, notices.finished_this_computer),
                              (self.lost_work, notices.lost_work)):
            widget.blockSignals(True)
            widget.setChecked(value)
            widget.blockSignals(False)
        self.finished_minutes.blockSignals(True)
        self.finished_minutes.setValue(round(notices.finished_after_seconds / 60))
        self.finished_minutes.blockSignals(False)
        self._enable_finished_rows()

    def _enable_finished_rows(self) -> None:
        self.finished_minutes.setEnabled(self.finished.isChecked())
        self.finished_local.setEnabled(self.finished.isChecked())

    def entered_notices(self) -> NoticeSettings:
        """The notification rows as shown (per-host choices kept as loaded)."""
        return self._notices.model_copy(update={
            "finished": self.finished.isChecked(),
            "finished_after_seconds": float(self.finished_minutes.value() * 60),
            "finished_this_computer": self.finished_local.isChecked(),
            "lost_work": self.lost_work.isChecked(),
        })

    def _notices_edited(self) -> None:
        self._enable_finished_rows()
        self._notices = self.entered_notices()
        self.notices_changed.emit(self._notices)

    def show_notification_service(self, words: str | None) -> None:
        """Say when the system will not show notifications as designed (off for the app, no service)."""
        self.notification_service.setText(words or "")
        self.notification_service.setVisible(bool(words))

    def _boxes(self) -> tuple[QSpinBox, ...]:
        return (self.ceiling_hours, self.ceiling_minutes, self.ceiling_seconds, self.timeout_minutes,
                self.timeout_seconds)

    def load(self, settings: CeilingSettings) -> None:
        hours, rest = divmod(round(settings.ceiling_seconds), 3600)
        minutes, seconds = divmod(rest, 60)
        t_minutes, t_seconds = divmod(round(settings.prompt_timeout_seconds), 60)
        self._loaded = {"ceiling_seconds": ((hours, minutes, seconds), settings.ceiling_seconds),
                        "prompt_timeout_seconds": ((t_minutes, t_seconds), settings.prompt_timeout_seconds)}
        for box, value in zip(self._boxes(), (hours, minutes, seconds, t_minutes, t_seconds), strict=True):
            box.blockSignals(True)
            box.setValue(value)
            box.blockSignals(False)
        self.ask_mode.setChecked(settings.ask_at_ceiling)
        self._validate()

    def _shown(self) -> dict[str, tuple[int, ...]]:
        return {"ceiling_seconds": (self.ceiling_hours.value(), self.ceiling_minutes.value(),
                                    self.ceiling_seconds.value()),
                "prompt_timeout_seconds": (self.timeout_minutes.value(), self.timeout_seconds.value())}

    def _typed_words(self, field: str) -> str:
        """What the boxes of `field` hold, as typed ("99999 min", "0 s")."""
        boxes = {"ceiling_seconds": (self.ceiling_hours, self.ceiling_minutes, self.ceiling_seconds),
                 "prompt_timeout_seconds": (self.timeout_minutes, self.timeout_seconds)}.get(field, ())
        words = [f"{b.value()}{b.suffix()}" for b in boxes if b.value()]
        return " ".join(words) or f"0{boxes[-1].suffix()}" if boxes else ""

    def _kept(self) -> dict[str, float]:
        """The loaded seconds of each field whose boxes still show what they showed when loaded."""
        shown = self._shown()
        return {field: exact for field, (was_shown, exact) in self._loaded.items() if shown[field] == was_shown}

    def _typed_seconds(self) -> dict[str, float]:
        """What the boxes show, in seconds."""
        (hours, minutes, seconds), (t_minutes, t_seconds) = (self._shown()[field] for field in DURATION_FIELDS)
        return {"ceiling_seconds": float(hours * 3600 + minutes * 60 + seconds),
                "prompt_timeout_seconds": float(t_minutes * 60 + t_seconds)}

    def _entered_seconds(self) -> dict[str, float]:
        return {**self._typed_seconds(), **self._kept()}

    def _show_exact(self) -> None:
        """Say in words each kept value the boxes show rounded."""
        typed = self._typed_seconds()
        lines = [f"{FIELD_WORDS[field]} is {exact_duration(exact)} (set in seconds); the boxes above round it, "
                 "and it stays as it is unless you change them."
                 for field, exact in self._kept().items() if exact != typed[field]]
        self.exact.setText("\n".join(lines))
        self.exact.setVisible(bool(lines))

    def entered(self) -> CeilingSettings:
        """The settings as typed (a value whose boxes are untouched: exactly as loaded), checked against the
        bounds (raises SettingsError)."""
        return CeilingSettings.checked(**self._entered_seconds(), ask_at_ceiling=self.ask_mode.isChecked())

    def _validate(self) -> CeilingSettings | None:
        self._show_exact()
        try:
            settings = self.entered()
        except SettingsError as error:
            value = self._entered_seconds().get(error.field)
            row = SETTINGS_BY_NAME.get(error.field)
            what = FIELD_WORDS.get(error.field, error.field)
            typed = self._typed_words(error.field)
            got = ""
            if value is not None:
                total = format_duration(value)
                got = f"; {typed} is not" if typed == total or not typed else f"; {typed} ({total}) is not"
            if row is not None and row.minimum is not None and row.maximum is not None:
                self.error.setText(f"{what} must be between {format_duration(row.minimum)} and "
                                   f"{format_duration(row.maximum)}{got}. Not applied.")
            else:
                self.error.setText(f"{error.message} Not applied.")
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

