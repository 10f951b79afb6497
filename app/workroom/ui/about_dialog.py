"""About and Help, and what Quit leaves running.

About names what a bug report needs: the app's version (the one the package declares), the agent build it
pushes (its sha256 prefix: the agent's identity on every host), and where the log is, with Open log and Show in
folder (Reveal in Finder on macOS). Help opens the user guide that ships beside the app when there is one, and
otherwise says where the documentation lives.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QDialog, QHBoxLayout, QMessageBox, QPushButton, QVBoxLayout, QWidget

from workroom import __version__
from workroom.agent_bundle import AgentBundle
from workroom.platform.desktop_open import DesktopOpenError, open_path
from workroom.ui import styles
from workroom.ui.open_failed import OpenFailed
from workroom.ui.plain_widgets import fit_height, markup, message_box, plain_label, rich_label

log = logging.getLogger(__name__)

DISTRIBUTION = "workroom-companion"
DOCS_WORDS = ("The user guide is README.md and the docs/ folder of Workroom's source: the desktop app "
              "(docs/ui.md), the command line (docs/cli.md), macOS (docs/macos.md), security (docs/security.md).")
QUIT_WORDS = (
    "After Workroom quits:\n"
    "• this computer's agent keeps running and keeps recording why this computer is awake;\n"
    "• each box's agent keeps its box awake while it is busy, with nobody here to answer a prompt (in ask mode "
    "an unanswered prompt lets it sleep);\n"
    "• boxes kept awake by this computer's own polls (request-metered) are no longer kept awake."
)


def app_version() -> str:
    """The version the installed package declares (the source's own when running from a checkout)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return __version__


def docs_folder() -> Path | None:
    """The docs folder beside a source checkout (none in a packaged app)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "docs" / "ui.md").is_file() and (parent / "README.md").is_file():
            return parent / "docs"
    return None


class AboutDialog(QDialog):
    def __init__(self, bundle: AgentBundle | None, log_file: Path, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("about_dialog")
        self.setWindowTitle("About Workroom")
        self.log_file = log_file
        build = f"{bundle.version} · sha256 {bundle.sha256[:12]}" if bundle is not None else "not found"
        self.text = rich_label(markup(
            "<b>Workroom</b> {}<br>Keeps your remote workrooms honest about sleep.<br><br>Agent build: {}<br>"
            "Log: {}", app_version(), build, log_file))
        self.text.setObjectName("about_text")
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.text.setWordWrap(True)
        self.error = plain_label()
        self.error.setWordWrap(True)
        styles.set_role(self.error, styles.ERROR)
        self.error.hide()
        self.open_log = QPushButton("Open log")
        self.open_log.setObjectName("about_open_log")
        self.reveal_log = QPushButton("Show in folder")
        self.reveal_log.setObjectName("about_reveal_log")
        close = QPushButton("Close")
        close.setDefault(True)
        buttons = QHBoxLayout()
        for button in (self.open_log, self.reveal_log):
            buttons.addWidget(button)
        buttons.addStretch(1)
        buttons.addWidget(close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.text)
        layout.addWidget(self.error)
        layout.addLayout(buttons)
        self.open_log.clicked.connect(lambda: self._open(reveal=False))
        self.reveal_log.clicked.connect(lambda: self._open(reveal=True))
        close.clicked.connect(self.accept)
        self.open_failed = OpenFailed(self)
        self.open_failed.said.connect(self._show_failure)

    def _open(self, *, reveal: bool) -> None:
        self.error.hide()
        try:
            open_path(self.log_file, reveal=reveal, on_failed=self.open_failed.said.emit)
        except DesktopOpenError as error:
            self._show_failure(str(error))

    def _show_failure(self, words: str) -> None:
        """The system's opener failed (it may exit at once, or a moment later): said here, with where the log
        is, so the person can open it another way."""
        self.error.setText(f"{words} The log is {self.log_file}.")
        self.error.show()
        fit_height(self)


def help_text() -> str:
    folder = docs_folder()
    return f"{DOCS_WORDS}\n\nHere: {folder}" if folder is not None else DOCS_WORDS


class Help(QObject):
    """Help: the docs opened with this computer's opener, or, where there are none or the opener fails (at once
    or a moment later), a box that says where the docs are — never nothing."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.parent_widget = parent
        self.box: QMessageBox | None = None
        self.failed = OpenFailed(self)
        self.failed.said.connect(lambda words: self.show_box(f"{words}\n\n"))

    def open(self) -> None:
        folder = docs_folder()
        if folder is not None:
            try:
                open_path(folder / "ui.md", on_failed=self.failed.said.emit)
                return
            except DesktopOpenError as error:
                log.info("help: %s", error)
                self.show_box(f"{error}\n\n")
                return
        self.show_box("")

    def show_box(self, failure: str) -> None:
        self.box = message_box(QMessageBox.Icon.Information, "Workroom help", failure + help_text(),
                               parent=self.parent_widget)
        self.box.setObjectName("help_box")
        self.box.open()


def show_help(parent: QWidget | None = None) -> Help:
    help_ = Help(parent)
    help_.open()
    return help_


class QuitDialog(QMessageBox):
    """Quit from the menu or ⌘Q says what keeps running; a system quit (logout, SIGTERM) does not ask."""

    def __init__(self, on_quit: Callable[[bool], None], *, can_stop_local_agent: bool,
                 parent: QWidget | None = None) -> None:
        super().__init__(QMessageBox.Icon.Question, "Quit Workroom?", QUIT_WORDS, parent=parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setObjectName("quit_dialog")
        self.quit_button = self.addButton("Quit", QMessageBox.ButtonRole.AcceptRole)
        self.quit_button.setObjectName("quit_confirm")
        self.stop_button = None
        if can_stop_local_agent:
            self.stop_button = self.addButton("Quit and stop this computer's agent",
                                              QMessageBox.ButtonRole.DestructiveRole)
            self.stop_button.setObjectName("quit_and_stop_agent")
        self.cancel_button = self.addButton(QMessageBox.StandardButton.Cancel)
        self.setDefaultButton(self.quit_button)
        self.buttonClicked.connect(lambda button: self._answered(button, on_quit))

    def _answered(self, button: object, on_quit: Callable[[bool], None]) -> None:
        if button is self.quit_button:
            on_quit(False)
        elif button is self.stop_button:
            on_quit(True)
