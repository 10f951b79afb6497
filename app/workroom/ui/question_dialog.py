"""The one scaffold of a question a connect asks the person (a host key to trust, a secret the keyring lacks):
its words, what it shows or takes below them, a yes and a Cancel. Asked without a nested event loop (`open()`,
then awaiting `finished`), so every other host keeps updating while the question is up; brought to the front,
since a background connect asks it and a menu-bar app is not in front by itself."""

from __future__ import annotations

import asyncio

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from workroom.platform.macos import bring_to_front


class QuestionDialog(QDialog):
    """`text` and `body` above a `yes` button (object name `<name>_<yes_id>`) and Cancel (`<name>_cancel`)."""

    def __init__(self, name: str, title: str, text: QLabel, body: QWidget, yes: str, yes_id: str, *,
                 cancel_is_default: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(f"{name}_dialog")
        self.setWindowTitle(title)
        text.setWordWrap(True)
        self.text = text
        buttons = QDialogButtonBox()
        self.yes_button = buttons.addButton(yes, QDialogButtonBox.ButtonRole.AcceptRole)
        self.yes_button.setObjectName(f"{name}_{yes_id}")
        self.cancel_button = buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.cancel_button.setObjectName(f"{name}_cancel")
        self.cancel_button.setDefault(cancel_is_default)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(body)
        layout.addWidget(buttons)

    async def ask(self) -> bool:
        """Show it and wait (without blocking the loop) for the yes (True) or Cancel (False); it is gone after."""
        answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

        def finished(result: int) -> None:
            if not answer.done():
                answer.set_result(result == QDialog.DialogCode.Accepted)

        self.finished.connect(finished)
        bring_to_front()
        self.open()
        try:
            return await answer
        finally:
            if self.isVisible():
                self.reject()
            self.deleteLater()
