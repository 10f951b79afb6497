"""The settings pane's "This computer" rows: open at login, and holding off this Mac's idle sleep while it keeps
a request-metered box awake.

Open at login is read back from the system each time the pane is shown (the user may have turned the login
item off in System Settings, or removed the autostart entry): the checkbox says what is, not what was asked.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from workroom.platform.login_item import LoginItem, LoginItemError, LoginItemState
from workroom.ui import styles

OPEN_AT_LOGIN = "Open Workroom when I log in"
HOLD_IDLE_SLEEP = ("While this Mac keeps a busy box awake, keep this Mac from going to sleep when idle "
                   "(closing the lid still sleeps it)")
TERMINAL_PLACEHOLDER = "Terminal on macOS; $TERMINAL or x-terminal-emulator elsewhere"
OFFER_TEXT = "Open Workroom when you log in, so your boxes are watched from the start of the day?"


class ComputerOptionsView(QWidget):
    hold_idle_sleep_changed = Signal(bool)
    terminal_changed = Signal(str)

    def __init__(self, login_item: LoginItem | None, *, hold_idle_sleep: bool | None, terminal: str = "") -> None:
        """`hold_idle_sleep` None: this computer cannot hold off its idle sleep (not a Mac): the row is not shown."""
        super().__init__()
        self.login_item = login_item
        title = QLabel("<b>This computer</b>")
        self.open_at_login = QCheckBox(OPEN_AT_LOGIN)
        self.open_at_login.setObjectName("open_at_login")
        self.login_note = QLabel()
        self.login_note.setObjectName("open_at_login_note")
        self.login_note.setWordWrap(True)
        styles.set_role(self.login_note, styles.MUTED)
        self.hold_idle_sleep = QCheckBox(HOLD_IDLE_SLEEP)
        self.hold_idle_sleep.setObjectName("hold_idle_sleep")
        self.hold_idle_sleep.setToolTip("A box whose provider counts only requests from outside is kept awake by "
                                        "this Mac's polls; they stop while this Mac sleeps.")
        self.terminal = QLineEdit(terminal)
        self.terminal.setObjectName("terminal_app")
        self.terminal.setPlaceholderText(TERMINAL_PLACEHOLDER)
        self.terminal.editingFinished.connect(lambda: self.terminal_changed.emit(self.terminal.text().strip()))
        terminal_row = QHBoxLayout()
        terminal_row.addWidget(QLabel("Terminal for Open in terminal:"))
        terminal_row.addWidget(self.terminal, 1)
        layout = QVBoxLayout(self)  # the settings view's default margins: both sections line up
        layout.addWidget(title)
        layout.addWidget(self.open_at_login)
        layout.addWidget(self.login_note)
        layout.addWidget(self.hold_idle_sleep)
        layout.addLayout(terminal_row)
        self.hold_idle_sleep.setVisible(hold_idle_sleep is not None)
        self.hold_idle_sleep.setChecked(bool(hold_idle_sleep))
        self.hold_idle_sleep.toggled.connect(self.hold_idle_sleep_changed.emit)
        self.open_at_login.toggled.connect(self._toggle_login_item)
        self.refresh()

    def refresh(self) -> None:
        """Read the login item back from the system."""
        state = self.login_item.state() if self.login_item is not None else LoginItemState.UNAVAILABLE
        self.open_at_login.blockSignals(True)
        self.open_at_login.setChecked(state in (LoginItemState.ON, LoginItemState.NEEDS_APPROVAL))
        self.open_at_login.blockSignals(False)
        self.open_at_login.setEnabled(state is not LoginItemState.UNAVAILABLE)
        if state is LoginItemState.UNAVAILABLE:
            self._note("This computer offers no way to open apps at login that Workroom can use.")
        elif state is LoginItemState.NEEDS_APPROVAL:
            self._note("Waiting for your approval in System Settings › General › Login Items.")
        elif state is LoginItemState.ON and self.login_item is not None:
            self._note(f"Opens at login ({self.login_item.where()}).")
        else:
            self._note("")

    def _note(self, text: str) -> None:
        self.login_note.setText(text)
        self.login_note.setVisible(bool(text))

    def _toggle_login_item(self, on: bool) -> None:
        if self.login_item is None:
            return
        try:
            self.login_item.enable() if on else self.login_item.disable()
        except LoginItemError as error:
            self.refresh()
            self._note(str(error))
            return
        self.refresh()


class LoginItemOffer(QWidget):
    """A one-time offer on the first run, above the host list: Open at login / Not now."""

    def __init__(self, login_item: LoginItem, on_answered: Callable[[bool], None]) -> None:
        super().__init__()
        self.setObjectName("login_item_offer")
        self.login_item = login_item
        self._on_answered = on_answered
        text = QLabel(OFFER_TEXT)
        text.setWordWrap(True)
        self.accept_button = QPushButton("Open at login")
        self.accept_button.setObjectName("login_offer_accept")
        self.decline_button = QPushButton("Not now")
        self.decline_button.setObjectName("login_offer_decline")
        self.error = QLabel()
        self.error.setWordWrap(True)
        styles.set_role(self.error, styles.ERROR)
        self.error.hide()
        row = QHBoxLayout(self)
        row.addWidget(text, 1)
        row.addWidget(self.accept_button)
        row.addWidget(self.decline_button)
        row.addWidget(self.error)
        self.accept_button.clicked.connect(self._accept)
        self.decline_button.clicked.connect(lambda: self._answer(False))

    def _accept(self) -> None:
        try:
            self.login_item.enable()
        except LoginItemError as error:
            self.error.setText(str(error))
            self.error.show()
            return
        self._answer(True)

    def _answer(self, accepted: bool) -> None:
        self.hide()
        self._on_answered(accepted)
