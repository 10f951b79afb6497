"""The menu-bar item: the worst host's badge as its icon, each host in its menu, and the app's verbs.

Where the platform has no tray the app opens its window instead (see ui/app.py).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal, SignalInstance
from PySide6.QtGui import QAction, Qt
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from workroom.core.badge import BadgeKind, worst_badge_kind
from workroom.sessions.host_session import HostSnapshot
from workroom.ui import row_text
from workroom.ui.badge_icons import icon_for


def host_menu_text(snapshot: HostSnapshot, now: float) -> str:
    badge = snapshot.badge(now)
    verdict = row_text.verdict_text(snapshot)
    suffix = f" · {verdict}" if snapshot.status is not None else ""
    return f"{snapshot.host.name} — {badge.label}{suffix}"


class TrayController(QObject):
    open_requested = Signal()
    settings_requested = Signal()
    connect_all_requested = Signal()
    quit_requested = Signal()
    host_requested = Signal(str)

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self.icon = QSystemTrayIcon()
        self.icon.setObjectName("tray")
        self.menu = QMenu()
        self.icon.setContextMenu(self.menu)
        self.host_actions: dict[str, QAction] = {}
        self._kinds: dict[str, BadgeKind] = {}
        self.worst_kind: BadgeKind | None = None
        self.last_notification: tuple[str, str] | None = None
        self._hosts_end = self.menu.addSeparator()
        self._add_action("Open Workroom", self.open_requested)
        self._add_action("Settings…", self.settings_requested)
        self._add_action("Connect all", self.connect_all_requested)
        self.menu.addSeparator()
        self._add_action("Quit", self.quit_requested)
        self.icon.activated.connect(self._activated)
        self._set_worst()

    @property
    def available(self) -> bool:
        return QSystemTrayIcon.isSystemTrayAvailable()

    def _add_action(self, text: str, signal: SignalInstance) -> QAction:
        action = self.menu.addAction(text)
        action.triggered.connect(signal.emit)
        return action

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason is QSystemTrayIcon.ActivationReason.Trigger and not _menu_on_click():
            self.open_requested.emit()

    def update(self, snapshot: HostSnapshot) -> None:
        name = snapshot.host.name
        badge = snapshot.badge(self._clock())
        action = self.host_actions.get(name)
        if action is None:
            action = QAction(self.menu)
            action.triggered.connect(lambda _checked=False, n=name: self.host_requested.emit(n))
            self.menu.insertAction(self._hosts_end, action)
            self.host_actions[name] = action
        action.setText(host_menu_text(snapshot, self._clock()))
        action.setToolTip(Qt.convertFromPlainText(badge.tooltip))  # host-supplied text: never markup
        if self._kinds.get(name) is not badge.kind:
            action.setIcon(icon_for(badge.kind))
            self._kinds[name] = badge.kind
            self._set_worst()

    def remove(self, name: str) -> None:
        action = self.host_actions.pop(name, None)
        if action is not None:
            self.menu.removeAction(action)
        self._kinds.pop(name, None)
        self._set_worst()

    def _set_worst(self) -> None:
        worst = worst_badge_kind(self._kinds.values())
        if worst is self.worst_kind:
            return
        self.worst_kind = worst
        self.icon.setIcon(icon_for(worst))
        self.icon.setToolTip(f"Workroom: {_summary(self._kinds)}")

    def notify(self, title: str, message: str) -> None:
        """A system notification (shown by the tray where the platform has one)."""
        self.last_notification = (title, message)
        if self.icon.isVisible() and QSystemTrayIcon.supportsMessages():
            self.icon.showMessage(title, message, self.icon.icon(), notification_timeout_ms())

    def show(self) -> bool:
        if not self.available:
            return False
        self.icon.show()
        return True


def _summary(kinds: dict[str, BadgeKind]) -> str:
    if not kinds:
        return "no hosts"
    worst = worst_badge_kind(kinds.values())
    count = sum(1 for k in kinds.values() if k is worst)
    from workroom.core.badge import LABELS

    return f"{len(kinds)} host{'s' if len(kinds) != 1 else ''}; worst: {LABELS[worst]} ({count})"


def _menu_on_click() -> bool:
    import sys

    return sys.platform == "darwin"  # the macOS menu bar opens the menu on click; elsewhere a click opens the window


def notification_timeout_ms(platform: str = sys.platform) -> int:
    """macOS: 0, so a ceiling prompt stays in Notification Center until answered or expired
    (docs/macos.md); elsewhere a 15 s banner (the prompt card stays in the window)."""
    return 0 if platform == "darwin" else 15000
