"""Asks for an SSH key's passphrase (or a password) when the keyring has none; the answer goes to the
keyring only (the engine stores it; nothing is written anywhere else). Asked without a nested event loop."""

from __future__ import annotations

import asyncio

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLineEdit, QVBoxLayout, QWidget

from workroom.core.questions import SecretRequest
from workroom.platform.macos import bring_to_front
from workroom.ui.plain_widgets import markup, rich_label


class SecretDialog(QDialog):
    def __init__(self, request: SecretRequest, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("secret_dialog")
        self.setWindowTitle(f"SSH {request.kind.value} needed")
        text = rich_label(markup("<p>{}</p><p>It is kept in your system keyring, and nowhere else.</p>",
                                 request.prompt))
        text.setWordWrap(True)
        self.field = QLineEdit()
        self.field.setObjectName("secret_field")
        self.field.setEchoMode(QLineEdit.EchoMode.Password)
        buttons = QDialogButtonBox()
        self.ok_button = buttons.addButton("Save in keyring and log in", QDialogButtonBox.ButtonRole.AcceptRole)
        self.ok_button.setObjectName("secret_ok")
        self.cancel_button = buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(self.field)
        layout.addWidget(buttons)


async def ask_secret(request: SecretRequest, parent: QWidget | None = None) -> str | None:
    """Show the dialog; the secret, or None when cancelled."""
    dialog = SecretDialog(request, parent)
    answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()

    def finished(result: int) -> None:
        if not answer.done():
            answer.set_result(dialog.field.text() or None if result == QDialog.DialogCode.Accepted else None)

    dialog.finished.connect(finished)
    bring_to_front()  # asked by a background connect: a menu-bar app is not in front by itself
    dialog.open()
    try:
        return await answer
    finally:
        dialog.field.clear()
        dialog.deleteLater()
