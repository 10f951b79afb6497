"""The menu-bar item: the worst host's badge as its icon, each host in its menu, and the app's verbs.

Where the platform has no tray the app opens its window instead (see ui/app.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal, SignalInstance
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from workroom.core.badge import BadgeKind, worst_badge_kind
from workroom.core.durations import format_duration
from workroom.sessions.host_session import HostSnapshot
from workroom.ui import row_text
from workroom.ui.badge_icons import icon_for


def host_menu_text(snapshot: HostSnapshot, now: float) -> str:
    """One line per host: its one state word and how long it has been in it ("gpu-box — Busy 42 min")."""
    badge = snapshot.badge(now)
    awake = row_text.awake_seconds(snapshot, now)
    if badge.kind in (BadgeKind.BUSY, BadgeKind.BUSY_PAST_CEILING, BadgeKind.BUSY_NOT_KEPT_AWAKE) \
            and awake is not None:
        return f"{snapshot.host.name} — {badge.label} {format_duration(awake)}"
    if badge.kind is BadgeKind.IDLE:  # the agent does not say since when; connected-for would mislead
        return f"{snapshot.host.name} — {badge.label}"
    since = snapshot.connection.since_monotonic
    age = f" {format_duration(max(0.0, now - since))}" if since is not None else ""
    return f"{snapshot.host.name} — {badge.label}{age}"


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
        self._snapshots: dict[str, HostSnapshot] = {}
        self.worst_kind: BadgeKind | None = None
        self.last_notification: tuple[str, str] | None = None
        self._hosts_end = self.menu.addSeparator()
        self._add_action("Open Workroom", self.open_requested)
        self._add_action("Settings…", self.settings_requested)
        self._add_action("Connect all", self.connect_all_requested)
        self.menu.addSeparator()
        self._add_action("Quit", self.quit_requested)
        self.icon.activated.connect(self._activated)
        self.menu.aboutToShow.connect(self.refresh_texts)
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

    def refresh_texts(self) -> None:
        """Re-render every host line (ages move while nothing is pushed); called as the menu opens."""
        now = self._clock()
        for name, action in self.host_actions.items():
            action.setText(host_menu_text(self._snapshots[name], now))

    def update(self, snapshot: HostSnapshot) -> None:
        name = snapshot.host.name
        self._snapshots[name] = snapshot
        badge = snapshot.badge(self._clock())
        action = self.host_actions.get(name)
        if action is None:
            action = QAction(self.menu)
            action.triggered.connect(lambda _checked=False, n=name: self.host_requested.emit(n))
            self.menu.insertAction(self._hosts_end, action)
            self.host_actions[name] = action
        action.setText(host_menu_text(snapshot, self._clock()))
        action.setToolTip(badge.tooltip)
        if self._kinds.get(name) is not badge.kind:
            action.setIcon(icon_for(badge.kind))
            self._kinds[name] = badge.kind
            self._set_worst()

    def remove(self, name: str) -> None:
        action = self.host_actions.pop(name, None)
        if action is not None:
            self.menu.removeAction(action)
        self._kinds.pop(name, None)
        self._snapshots.pop(name, None)
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
            self.icon.showMessage(title, message, self.icon.icon(), 15000)

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
