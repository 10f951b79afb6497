"""The settings pane, built from the rows of core.setting_rows: one editor per row (ui/setting_editors.py), in
three sections by where the row's value lives (`section_of`).

- Every host (the awake ceiling, prompt timeout, ask mode): **Apply to all hosts** sends the rows the person
  changed, and only those; every other setting keeps its stored value (sending what the pane merely showed
  would undo what another face set meanwhile, or reset a setting the pane does not show). A value out of
  bounds is said above the button, which is disabled; nothing is sent.
- Notifications and This computer: each row is taken as it changes (`local_changed`); a refused value is said
  under it and not taken. Open at login is the system's own state, read back each time the pane is shown (the
  person may have turned the login item off in System Settings, or removed the autostart entry): the checkbox
  says what is, not what was asked. A row this computer cannot change (the idle-sleep hold off macOS) is
  shown, disabled, saying why.

Bounds and checks are core.setting_checks', the same the CLI and settings.json's models use.
"""

from __future__ import annotations

from functools import partial
from typing import Any, assert_never

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFormLayout, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from workroom.core.durations import format_duration
from workroom.core.errors import UserError
from workroom.core.setting_rows import Kind, SettingRow, Store, rows_in
from workroom.this_computer import ThisComputer
from workroom.ui import styles
from workroom.ui.plain_widgets import markup, plain_label, rich_label
from workroom.ui.setting_editors import RowEditor, editor_for

EVERY_HOST, NOTIFICATIONS, THIS_COMPUTER = "every host", "Notifications", "This computer"
EXPLAIN = ("A host busy longer than the awake ceiling is flagged. In ask mode, a sleepable host's agent asks here "
           "whether to keep it awake; unanswered within the prompt timeout, it stops keeping it awake.")


def section_of(store: Store) -> str:
    """The pane's section for the rows kept in `store`."""
    match store:
        case Store.AGENTS:
            return EVERY_HOST
        case Store.NOTICES:
            return NOTIFICATIONS
        case Store.SYSTEM | Store.THIS_COMPUTER:
            return THIS_COMPUTER
        case _:
            assert_never(store)


def bounds_words(rows: tuple[SettingRow, ...]) -> str:
    """"Each between 30 s and 30 d." when the durations among `rows` share their bounds ("" otherwise)."""
    bounds = {(row.minimum, row.maximum) for row in rows if row.kind is Kind.DURATION}
    if len(bounds) != 1:
        return ""
    (low, high), = bounds
    assert low is not None and high is not None
    return f"Each between {format_duration(low)} and {format_duration(high)}."


def _label(name: str, role: str | None = None, text: str = "") -> QLabel:
    """A wrapped line of words (named for tests and styles), plain: the apply result quotes each host's answer."""
    label = plain_label(text)
    label.setObjectName(name)
    label.setWordWrap(True)
    if role is not None:
        styles.set_role(label, role)
    return label


class SettingsView(QWidget):
    apply_requested = Signal(object)
    """{row name: value}: the every-host rows the person changed (checked), for Apply to all hosts."""
    local_changed = Signal(str, object)
    """A Notifications or This computer row and its new value (checked): take it now."""

    def __init__(self, here: ThisComputer | None = None) -> None:
        """`here`: what this computer can do, and the system's own settings (None: none of either)."""
        super().__init__()
        self.here = here if here is not None else ThisComputer(None, can_hold_idle_sleep=False)
        self.editors: dict[str, RowEditor] = {}
        self._why_not: dict[str, str | None] = {}
        """Per row, why this computer cannot change it (None: it can); asked again with `refresh_system`."""
        self._stored: dict[str, Any] = {}
        """Each row's value as loaded (or as last taken): a row differs from it only when the person changed it."""
        forms = {section: QFormLayout() for section in (EVERY_HOST, NOTIFICATIONS, THIS_COMPUTER)}
        previous: RowEditor | None = None
        for row in rows_in(*Store):
            editor = editor_for(row)
            self.editors[row.name] = editor
            if row.inline and previous is not None:
                previous.line.insertWidget(previous.line.count() - 1, editor)  # before its line's stretch
            else:
                if row.kind is not Kind.TEXT:
                    editor.line.addStretch(1)
                form = forms[section_of(row.store)]
                if row.kind is Kind.DURATION:
                    form.addRow(row.label, editor)
                elif row.kind is Kind.YES_NO:
                    form.addRow("", editor)
                else:
                    form.addRow(editor)  # a text says its label on its own line, across the section
                previous = editor
            editor.edited.connect(partial(self._edited, editor))
        self.bounds = _label("settings_bounds", text=bounds_words(rows_in(Store.AGENTS)))
        forms[EVERY_HOST].addRow("", self.bounds)
        self.error = _label("settings_error", styles.ERROR)
        bold = self.error.font()
        bold.setBold(True)
        self.error.setFont(bold)
        self.error.hide()  # never show() here: a widget without its parent yet would open as a window
        self.result = _label("settings_result")
        self.apply_button = QPushButton("Apply to all hosts")
        self.apply_button.setObjectName("settings_apply")
        self.apply_button.clicked.connect(self.request_apply)
        self.notification_service = _label("notification_service", styles.MUTED)
        self.notification_service.hide()

        layout = QVBoxLayout(self)
        layout.addWidget(_label("settings_explain", text=EXPLAIN))
        layout.addLayout(forms[EVERY_HOST])
        layout.addWidget(self.error)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.apply_button)
        layout.addLayout(buttons)
        layout.addWidget(self.result)
        for section in (NOTIFICATIONS, THIS_COMPUTER):
            layout.addSpacing(6)
            layout.addWidget(rich_label(markup("<b>{}</b>", section)))
            layout.addLayout(forms[section])
            if section == NOTIFICATIONS:
                layout.addWidget(self.notification_service)
        layout.addStretch(1)
        self.refresh_system()
        for editor in self.editors.values():
            self._show_note(editor)
        self._validate()

    # -- values ------------------------------------------------------------------------------------

    def load(self, values: dict[str, Any], stores: tuple[Store, ...] | None = None) -> None:
        """Show the stored `values` (row name -> value) of the rows in `stores` (None: every row given)."""
        for name, value in values.items():
            editor = self.editors.get(name)
            if editor is None or (stores is not None and editor.row.store not in stores):
                continue
            editor.load(value)
            self._stored[name] = value
            self._show_note(editor)
        self._enable()
        self._validate()

    def show_stored(self, values: dict[str, Any]) -> None:
        """The stored values changed (Apply here, `workroom settings set`, settings.json edited): show each row
        whose stored value is now another than the one this pane last showed or took (an edit being typed in a
        row nobody else changed is left as it is)."""
        self.load({name: value for name, value in values.items()
                   if name not in self._stored or self._stored[name] != value})

    def refresh_system(self) -> None:
        """Read the settings the system keeps (open at login) back from it, and what this computer can do."""
        self._why_not = {name: self.here.why_not(editor.row) for name, editor in self.editors.items()}
        for editor in self._editors_in(Store.SYSTEM):
            value = self.here.read(editor.row)
            editor.load(value)
            self._stored[editor.row.name] = value
            self._show_note(editor)
        self._enable()

    def changes(self) -> dict[str, Any]:
        """The every-host rows whose value the person changed, by name."""
        return {name: editor.value() for name, editor in self.editors.items()
                if editor.row.store is Store.AGENTS and (name not in self._stored
                                                         or editor.value() != self._stored[name])}

    def _editors_in(self, store: Store) -> list[RowEditor]:
        return [editor for editor in self.editors.values() if editor.row.store is store]

    # -- edits -------------------------------------------------------------------------------------

    def _edited(self, editor: RowEditor) -> None:
        self._enable()
        store = editor.row.store
        match store:
            case Store.AGENTS:
                self._validate()
            case Store.SYSTEM:
                self._write_system(editor)
            case Store.NOTICES | Store.THIS_COMPUTER:
                self._take(editor)
            case _:
                assert_never(store)

    def _take(self, editor: RowEditor) -> None:
        """A row of this computer's, at once: refused in words under it, or handed on when it changed."""
        refusal = editor.refusal()
        if refusal is not None:
            editor.say(f"{refusal} Not applied.", styles.ERROR)
            return
        self._show_note(editor)
        name, value = editor.row.name, editor.value()
        if name not in self._stored or value != self._stored[name]:
            self._stored[name] = value
            self.local_changed.emit(name, value)

    def _write_system(self, editor: RowEditor) -> None:
        try:
            self.here.write(editor.row, editor.value())
        except OSError as error:  # the platform's error says what happened, in words
            self.refresh_system()
            editor.say(str(error), styles.ERROR)
            return
        self.refresh_system()

    def _enable(self) -> None:
        """A row is changeable where this computer can change it, and while the row it sits under is on."""
        for editor in self.editors.values():
            under = self.editors.get(editor.row.under) if editor.row.under is not None else None
            editor.set_editable(self._why_not[editor.row.name] is None and (under is None or under.value() is True))

    def _show_note(self, editor: RowEditor) -> None:
        """Why it cannot be changed here; else what the system says of it; else what its boxes round."""
        why = self._why_not[editor.row.name]
        if why is not None:
            editor.say(why)
        elif editor.row.store is Store.SYSTEM:
            editor.say(self.here.note(editor.row))
        else:
            editor.say(editor.remark())

    def _validate(self) -> bool:
        """Whether every every-host row can be applied; the first that cannot is said above Apply."""
        refusal = None
        for editor in self._editors_in(Store.AGENTS):
            self._show_note(editor)
            refusal = refusal or editor.refusal()
        self.error.setText(f"{refusal} Not applied." if refusal else "")
        self.error.setVisible(refusal is not None)
        self.apply_button.setEnabled(refusal is None)
        return refusal is None

    def request_apply(self) -> None:
        if not self._validate():
            return
        self.result.setText("Applying…")
        self.apply_button.setEnabled(False)
        self.apply_requested.emit(self.changes())

    # -- outcomes ----------------------------------------------------------------------------------

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

    def show_notification_service(self, words: str | None) -> None:
        """Say when the system will not show notifications as designed (off for the app, no service)."""
        self.notification_service.setText(words or "")
        self.notification_service.setVisible(bool(words))
