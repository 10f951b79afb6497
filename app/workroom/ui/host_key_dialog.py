"""The host-key question: an unknown key's SHA256 fingerprint, and the choice to trust it or cancel.

Asked without a nested event loop (`open()`, then awaiting `finished`), so every other host keeps
updating while the question is up.
"""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QVBoxLayout, QWidget

from workroom.core.questions import HostKeyQuestion
from workroom.platform.macos import bring_to_front
from workroom.ui.breakable_words import breakable
from workroom.ui.plain_widgets import markup, plain_label, rich_label


class HostKeyDialog(QDialog):
    def __init__(self, host_name: str, question: HostKeyQuestion, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("host_key_dialog")
        self.setWindowTitle(f"Trust {host_name}'s key?")
        text = rich_label(markup(
            "<p><b>{}</b> ({}) offered {} this computer has not seen before.</p>"
            "<p>Trust it only if this fingerprint matches the one the host's owner gives you:</p>",
            host_name, question.where, question.key_words))
        text.setObjectName("host_key_text")
        text.setWordWrap(True)
        self.text = text
        self.fingerprint = plain_label(breakable(question.fingerprint))
        self.fingerprint.setObjectName("host_key_fingerprint")
        self.fingerprint.setWordWrap(True)  # a long fingerprint wraps (copied, it is whole: ui/breakable_words.py)
        self.fingerprint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.fingerprint.setStyleSheet("font-family: monospace; font-size: 13px; padding: 6px;")
        buttons = QDialogButtonBox()
        self.trust_button = buttons.addButton("Trust and connect", QDialogButtonBox.ButtonRole.AcceptRole)
        self.trust_button.setObjectName("host_key_trust")
        self.cancel_button = buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.cancel_button.setObjectName("host_key_cancel")
        self.cancel_button.setDefault(True)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(text)
        layout.addWidget(self.fingerprint)
        layout.addWidget(buttons)


async def ask_host_key(host_name: str, question: HostKeyQuestion, parent: QWidget | None = None) -> bool:
    """Show the dialog and wait (without blocking the loop) for Trust (True) or Cancel (False)."""
    dialog = HostKeyDialog(host_name, question, parent)
    answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()

    def finished(result: int) -> None:
        if not answer.done():
            answer.set_result(result == QDialog.DialogCode.Accepted)

    dialog.finished.connect(finished)
    bring_to_front()  # asked by a background connect: a menu-bar app is not in front by itself
    dialog.open()
    try:
        return await answer
    finally:
        if dialog.isVisible():
            dialog.reject()
        dialog.deleteLater()
