"""Asks for an SSH key's passphrase (or a password) when the keyring has none; the answer goes to the
keyring only (the engine stores it; nothing is written anywhere else). ui/question_dialog.py."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QLineEdit, QWidget

from workroom.core.questions import SecretRequest
from workroom.ui.plain_widgets import markup, rich_label
from workroom.ui.question_dialog import QuestionDialog


class SecretDialog(QuestionDialog):
    def __init__(self, request: SecretRequest, parent: QWidget | None = None) -> None:
        self.field = QLineEdit()
        self.field.setObjectName("secret_field")
        self.field.setEchoMode(QLineEdit.EchoMode.Password)
        self.secret: str | None = None
        text = rich_label(markup("<p>{}</p><p>It is kept in your system keyring, and nowhere else.</p>",
                                 request.prompt))
        super().__init__("secret", f"SSH {request.kind.value} needed", text, self.field,
                         "Save in keyring and log in", "ok", parent=parent)
        self.ok_button = self.yes_button

    def done(self, result: int) -> None:
        """Taken as it closes (the field is emptied at once: the secret lives no longer than the question)."""
        self.secret = (self.field.text() or None) if result == QDialog.DialogCode.Accepted else None
        self.field.clear()
        super().done(result)


async def ask_secret(request: SecretRequest, parent: QWidget | None = None) -> str | None:
    """The secret, or None when cancelled."""
    dialog = SecretDialog(request, parent)
    return dialog.secret if await dialog.ask() else None
