"""The detail panel for the selected host: its badge in full words, every field, and its actions."""

from __future__ import annotations

import html
import time
from collections.abc import Callable

from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from workroom.core.connection import ConnectionState
from workroom.sessions.host_session import HostSnapshot
from workroom.ui import row_text
from workroom.ui.badge_icons import icon_for

ACTIVE_STATES = frozenset({ConnectionState.CONNECTING, ConnectionState.HOST_KEY_QUESTION, ConnectionState.PUSHING,
                           ConnectionState.LIVE, ConnectionState.QUIET, ConnectionState.LOST,
                           ConnectionState.BACKING_OFF})
"""States in which the session is trying or connected: Disconnect applies, Connect does not."""


class HostDetailView(QWidget):
    connect_requested = Signal(str)
    disconnect_requested = Signal(str)
    keep_requested = Signal(str)

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self.snapshot: HostSnapshot | None = None
        self.icon = QLabel()
        self.title = QLabel("Select a host")
        self.title.setObjectName("detail_title")
        font = self.title.font()
        font.setPointSize(font.pointSize() + 3)
        font.setBold(True)
        self.title.setFont(font)
        self.badge_label = QLabel()
        self.badge_label.setObjectName("detail_badge")
        self.tooltip = QLabel()
        self.tooltip.setObjectName("detail_explanation")
        self.tooltip.setWordWrap(True)
        self.tooltip.setTextFormat(Qt.TextFormat.PlainText)  # carries busy reasons: host-supplied text
        self.fields = QLabel()
        self.fields.setObjectName("detail_fields")
        self.fields.setWordWrap(True)
        self.fields.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.connect_button = QPushButton("Connect")
        self.connect_button.setObjectName("detail_connect")
        self.disconnect_button = QPushButton("Disconnect")
        self.disconnect_button.setObjectName("detail_disconnect")
        self.keep_button = QPushButton("Keep awake")
        self.keep_button.setObjectName("detail_keep")
        self.connect_button.clicked.connect(lambda: self._emit(self.connect_requested))
        self.disconnect_button.clicked.connect(lambda: self._emit(self.disconnect_requested))
        self.keep_button.clicked.connect(lambda: self._emit(self.keep_requested))
        head = QHBoxLayout()
        head.addWidget(self.icon)
        head.addWidget(self.title, 1)
        buttons = QHBoxLayout()
        buttons.addWidget(self.connect_button)
        buttons.addWidget(self.disconnect_button)
        buttons.addWidget(self.keep_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(head)
        layout.addWidget(self.badge_label)
        layout.addWidget(self.tooltip)
        layout.addWidget(self.fields)
        layout.addLayout(buttons)
        self.sections: list[QWidget] = []
        """Further sections (the why-awake timeline), shown below the buttons and given every snapshot."""
        layout.addStretch(1)
        self.show_snapshot(None)

    def add_section(self, section: QWidget) -> None:
        """Append a section with a `show_snapshot(snapshot | None)` method."""
        layout = self.layout()
        assert isinstance(layout, QVBoxLayout)
        layout.insertWidget(layout.count() - 1, section)
        self.sections.append(section)
        section.show_snapshot(self.snapshot)  # type: ignore[attr-defined]

    def _emit(self, signal: SignalInstance) -> None:
        if self.snapshot is not None:
            signal.emit(self.snapshot.host.name)

    def show_snapshot(self, snapshot: HostSnapshot | None) -> None:
        self.snapshot = snapshot
        for section in getattr(self, "sections", ()):
            section.show_snapshot(snapshot)
        if snapshot is None:
            self.title.setText("Select a host")
            for widget in (self.badge_label, self.tooltip, self.fields):
                widget.setText("")
            self.icon.clear()
            for button in (self.connect_button, self.disconnect_button, self.keep_button):
                button.setEnabled(False)
            self.keep_button.hide()
            return
        now = self._clock()
        badge = snapshot.badge(now)
        self.title.setText(snapshot.host.name)
        self.icon.setPixmap(icon_for(badge.kind).pixmap(24, 24))
        self.badge_label.setText(f"<b>{html.escape(badge.label)}</b>")
        self.tooltip.setText(badge.tooltip)
        rows = "".join(
            f"<tr><td style='color:#666;padding-right:10px'>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>"
            for k, v in row_text.detail_lines(snapshot, now)
        )
        self.fields.setText(f"<table>{rows}</table>")
        active = snapshot.connection.state in ACTIVE_STATES
        self.connect_button.setEnabled(not active)
        self.disconnect_button.setEnabled(active)
        self.keep_button.setVisible(badge.offers_keep)
        self.keep_button.setEnabled(badge.offers_keep)
