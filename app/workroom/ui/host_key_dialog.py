"""The host-key question: an unknown key's SHA256 fingerprint, and the choice to trust it or cancel
(ui/question_dialog.py)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from workroom.core.questions import HostKeyQuestion
from workroom.ui.breakable_words import breakable
from workroom.ui.plain_widgets import markup, plain_label, rich_label
from workroom.ui.question_dialog import QuestionDialog


class HostKeyDialog(QuestionDialog):
    def __init__(self, host_name: str, question: HostKeyQuestion, parent: QWidget | None = None) -> None:
        text = rich_label(markup(
            "<p><b>{}</b> ({}) offered {} this computer has not seen before.</p>"
            "<p>Trust it only if this fingerprint matches the one the host's owner gives you:</p>",
            host_name, question.where, question.key_words))
        text.setObjectName("host_key_text")
        self.fingerprint = plain_label(breakable(question.fingerprint))
        self.fingerprint.setObjectName("host_key_fingerprint")
        self.fingerprint.setWordWrap(True)  # a long fingerprint wraps (copied, it is whole: ui/breakable_words.py)
        self.fingerprint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.fingerprint.setStyleSheet("font-family: monospace; font-size: 13px; padding: 6px;")
        super().__init__("host_key", f"Trust {host_name}'s key?", text, self.fingerprint, "Trust and connect",
                         "trust", cancel_is_default=True, parent=parent)
        self.trust_button = self.yes_button


async def ask_host_key(host_name: str, question: HostKeyQuestion, parent: QWidget | None = None) -> bool:
    """Trust (True) or Cancel (False)."""
    return await HostKeyDialog(host_name, question, parent).ask()
