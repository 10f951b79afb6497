"""The first run's one-time offer, above the host list: open the app at login (Open at login / Not now).

The setting itself is a row of the settings pane (core.setting_rows: open at login, read back from the system).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QHBoxLayout, QPushButton, QWidget

from workroom.platform.login_item import LoginItem, LoginItemError
from workroom.ui import styles
from workroom.ui.plain_widgets import plain_label

OFFER_TEXT = "Open Workroom when you log in, so your boxes are watched from the start of the day?"


class LoginItemOffer(QWidget):
    """A one-time offer on the first run, above the host list: Open at login / Not now."""

    def __init__(self, login_item: LoginItem, on_answered: Callable[[bool], None]) -> None:
        super().__init__()
        self.setObjectName("login_item_offer")
        self.login_item = login_item
        self._on_answered = on_answered
        text = plain_label(OFFER_TEXT)
        text.setWordWrap(True)
        self.accept_button = QPushButton("Open at login")
        self.accept_button.setObjectName("login_offer_accept")
        self.decline_button = QPushButton("Not now")
        self.decline_button.setObjectName("login_offer_decline")
        self.error = plain_label()  # the platform's error: may name a file
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
