"""The detail panel for the selected host: its badge in full words, every field, and one primary action.

The panel is at least `MIN_WIDTH` wide and wraps every text (it never scrolls sideways). One button is
the prominent one for the host's state (Keep awake, Retry now, Wake and connect or Connect); Disconnect
sits beside it when the session is active. An error shows in plain words; its full text (which may name
what failed inside the app) is behind "Details…", and in the log.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import Qt, Signal, SignalInstance
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from workroom.core.app_settings import NoticeSettings
from workroom.core.connection import CONNECT_WORDS, ConnectAction
from workroom.core.errors import Face
from workroom.core.exception_names import without_exception_names
from workroom.core.host_snapshot import HostSnapshot
from workroom.ui import row_text, styles
from workroom.ui.badge_icons import icon_for
from workroom.ui.breakable_words import breakable
from workroom.ui.plain_widgets import escape, markup, plain_label, rich_label, set_tooltip

MIN_WIDTH = 360


def _wrapping(name: str, *, rich: bool = False) -> QLabel:
    """A wrapping label: plain text, or the app's own markup with every value escaped (ui/plain_widgets.py)."""
    label = rich_label() if rich else plain_label()
    label.setObjectName(name)
    label.setWordWrap(True)
    label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    return label


class HostDetailView(QWidget):
    connect_requested = Signal(str)
    retry_requested = Signal(str)
    disconnect_requested = Signal(str)
    keep_requested = Signal(str)
    finished_notice_toggled = Signal(str, bool, bool)
    """(host, wanted, this computer): the user changed "Tell me when its work finishes" for this host."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self.snapshot: HostSnapshot | None = None
        self.setMinimumWidth(MIN_WIDTH)
        self.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # can hold focus when its buttons go away
        self.icon = plain_label()
        self.title = _wrapping("detail_title")
        self.title.setText("Select a host")
        font = self.title.font()
        font.setPointSize(font.pointSize() + 3)
        font.setBold(True)
        self.title.setFont(font)
        self.badge_label = _wrapping("detail_badge", rich=True)
        self.tooltip = _wrapping("detail_explanation")  # carries busy reasons: host-supplied text
        self.fields = _wrapping("detail_fields", rich=True)
        self.fields.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error = _wrapping("detail_error")  # error text may quote what a host sent
        styles.set_role(self.error, styles.ERROR)
        self.details_button = QToolButton()
        self.details_button.setObjectName("detail_error_details")
        self.details_button.setText("Details…")
        self.details_button.setCheckable(True)
        self.error_details = _wrapping("detail_error_text")
        self.error_details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        styles.set_role(self.error_details, styles.MUTED)
        self.details_button.toggled.connect(self.error_details.setVisible)
        self.connect_button = QPushButton("Connect")
        self.connect_button.setObjectName("detail_connect")
        self.disconnect_button = QPushButton("Disconnect")
        self.disconnect_button.setObjectName("detail_disconnect")
        self.keep_button = QPushButton("Keep awake")
        self.keep_button.setObjectName("detail_keep")
        self.connect_button.clicked.connect(self._connect_clicked)
        self.disconnect_button.clicked.connect(lambda: self._emit(self.disconnect_requested))
        self.keep_button.clicked.connect(lambda: self._emit(self.keep_requested))
        self._notices = NoticeSettings()
        self.finished_box = QCheckBox("Tell me when its work finishes")
        self.finished_box.setObjectName("detail_finished_notice")
        self.finished_box.toggled.connect(self._finished_toggled)
        head = QHBoxLayout()
        head.addWidget(self.icon)
        head.addWidget(self.title, 1)
        error_row = QHBoxLayout()
        error_row.addWidget(self.error, 1)
        # Left-aligned: beside the red line, or alone under the explanation when that already says the error.
        error_row.addWidget(self.details_button, 0, Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        buttons = QHBoxLayout()
        buttons.addWidget(self.keep_button)
        buttons.addWidget(self.connect_button)
        buttons.addWidget(self.disconnect_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(head)
        layout.addWidget(self.badge_label)
        layout.addWidget(self.tooltip)
        layout.addLayout(buttons)
        layout.addLayout(error_row)
        layout.addWidget(self.error_details)
        layout.addWidget(self.fields)
        layout.addWidget(self.finished_box)
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

    def _connect_clicked(self) -> None:
        self._emit(self.connect_requested)  # the controller does what the button's words said (its state's row)

    def primary_button(self) -> QPushButton | None:
        """The one prominent action now showing (None when there is nothing to do)."""
        for button in (self.keep_button, self.connect_button):
            if button.property(styles.ROLE_PROPERTY) == styles.PRIMARY and not button.isHidden():
                return button
        return None

    def _set_primary(self, primary: QPushButton | None) -> None:
        for button in (self.keep_button, self.connect_button, self.disconnect_button):
            role = styles.PRIMARY if button is primary else ""
            if button.property(styles.ROLE_PROPERTY) != role:
                styles.set_role(button, role)
            button.setDefault(button is primary)

    def show_snapshot(self, snapshot: HostSnapshot | None) -> None:
        self.snapshot = snapshot
        for section in getattr(self, "sections", ()):
            section.show_snapshot(snapshot)
        if snapshot is None:
            self.title.setText("Select a host")
            for widget in (self.badge_label, self.tooltip, self.fields):
                widget.setText("")
            self.icon.clear()
            self._show_error(None)
            for button in (self.connect_button, self.disconnect_button, self.keep_button):
                button.hide()
            self.finished_box.hide()
            self._set_primary(None)
            return
        now = self._clock()
        badge = snapshot.badge(now)
        self.title.setText(snapshot.host.name)
        self.icon.setPixmap(icon_for(badge.kind, self.palette()).pixmap(24, 24))
        self.badge_label.setText(markup("<b>{}</b>", row_text.badge_text(snapshot, now)))
        self.tooltip.setText(breakable(row_text.badge_tooltip(snapshot, now)))
        muted = styles.muted_text(self.palette()).name()
        rows = "".join(
            f"<tr><td style='color:{muted};padding-right:10px'>{escape(k)}</td><td>{escape(v)}</td></tr>"
            for k, v in row_text.detail_lines(snapshot, now) if k != "Last error"
        )
        self.fields.setText(f"<table>{rows}</table>")
        self._show_error(snapshot)
        self._show_finished_box(snapshot)
        spec = snapshot.connection.spec
        focused = next((b for b in (self.keep_button, self.connect_button, self.disconnect_button)
                        if b.hasFocus()), None)
        self.connect_button.setText(CONNECT_WORDS[spec.connect] or "Connect")
        self.connect_button.setVisible(spec.connect is not ConnectAction.NONE)
        self.connect_button.setEnabled(True)
        self.disconnect_button.setVisible(spec.disconnect)
        self.disconnect_button.setEnabled(spec.disconnect)
        self.keep_button.setVisible(badge.offers_keep)
        self.keep_button.setEnabled(badge.offers_keep)
        if badge.offers_keep:
            self._set_primary(self.keep_button)
        elif spec.connect is not ConnectAction.NONE:
            self._set_primary(self.connect_button)
        else:
            self._set_primary(None)
        if focused is not None and focused.isHidden():
            self._keep_focus_here()

    def _keep_focus_here(self) -> None:
        """The clicked button went away (Connect became Disconnect): focus the button that took its place, or
        the panel itself, never the next field in the tab order (the price box, its text selected)."""
        for button in (self.disconnect_button, self.connect_button, self.keep_button):
            if not button.isHidden() and button.isEnabled():
                button.setFocus(Qt.FocusReason.OtherFocusReason)
                return
        self.setFocus(Qt.FocusReason.OtherFocusReason)

    def set_notice_settings(self, notices: NoticeSettings) -> None:
        self._notices = notices
        if self.snapshot is not None:
            self._show_finished_box(self.snapshot)

    def _show_finished_box(self, snapshot: HostSnapshot) -> None:
        wanted = self._notices.finished_for(snapshot.host.name,
                                            this_computer=snapshot.host.is_this_computer)
        self.finished_box.blockSignals(True)
        self.finished_box.setChecked(wanted)
        self.finished_box.blockSignals(False)
        self.finished_box.setEnabled(self._notices.finished)
        set_tooltip(self.finished_box, "" if self._notices.finished else
                    "Turned off for every host in Settings › Notifications.")
        self.finished_box.show()

    def _finished_toggled(self, wanted: bool) -> None:
        if self.snapshot is not None:
            self.finished_notice_toggled.emit(self.snapshot.host.name, wanted,
                                              self.snapshot.host.is_this_computer)

    def _show_error(self, snapshot: HostSnapshot | None) -> None:
        info = snapshot.connection.error if snapshot is not None else None
        if info is None:
            self.error.hide()
            self.details_button.hide()
            self.details_button.setChecked(False)
            self.error_details.hide()
            return
        message = without_exception_names(info.message)
        self.error.setText(breakable(f"{info.title}: {message}"))
        # Said once: where the badge's explanation above already gives the error's words (an unreachable host, an
        # unreadable provider), the red line would repeat them; its full text stays behind Details….
        self.error.setVisible(snapshot is None or message not in row_text.badge_tooltip(snapshot, self._clock()))
        self.error_details.setText(breakable(info.text(Face.APP)))
        self.details_button.show()
        self.error_details.setVisible(self.details_button.isChecked())
