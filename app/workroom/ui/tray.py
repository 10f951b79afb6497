"""The menu-bar item, the app's main surface: the worst host's badge as its icon, and a menu that answers
"is everything all right?" without opening the window.

Menu, top to bottom: a summary line ("2 live · 1 asleep · box2 needs an answer": a box asleep or let go on
purpose is counted as such, never as a host that failed to be live); each pending prompt pinned
with "Keep awake" and "Let it sleep"; one line per host (its state word and how long) opening a submenu
(Connect or Wake and connect, or Disconnect; Keep awake; Copy ssh command, Open in terminal; Details…); then
Open Workroom, Settings…, Connect all, About Workroom, Help, Quit… (which says what keeps running). Where the
platform has no tray the app opens its window instead (see ui/app.py).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer, Signal, SignalInstance
from PySide6.QtGui import QAction, QGuiApplication, Qt
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from workroom.core.badge import LABELS, Badge, BadgeKind, MenuTime, tray_icon_kind, tray_summary
from workroom.core.connection import CONNECT_WORDS, ConnectAction
from workroom.core.durations import format_duration
from workroom.core.host_snapshot import HostSnapshot
from workroom.ui import row_text
from workroom.ui.badge_icons import icon_for, tray_icon_for
from workroom.ui.plain_widgets import action_text, set_tooltip, set_tray_tooltip

MAX_TIMER_MS = 2**31 - 1


def host_menu_text(snapshot: HostSnapshot, now: float) -> str:
    """One line per host: its one state word and how long, as its badge kind's row says (`BadgeSpec.menu_time`):
    "gpu-box — Busy 42 min", "box2 — Asleep 3 min", "box1 — Asking to keep awake, answer within 9 min"; a
    platform's box adds its own clock ("ws1 — Busy 42 min · stops in 12 min")."""
    text = _state_text(snapshot, now)
    platform = row_text.platform_text(snapshot, short=True)
    return " · ".join(part for part in (text, platform, snapshot.badge(now).note) if part)


def _state_text(snapshot: HostSnapshot, now: float) -> str:
    badge = snapshot.badge(now)
    name, when = snapshot.host.name, badge.spec.menu_time
    if when is MenuTime.BUSY:
        busy = row_text.busy_seconds(snapshot, now)
        if busy is not None:
            return f"{name} — {LABELS[badge.kind]} {format_duration(busy)}"
    if when is MenuTime.LEFT:
        left = row_text.prompt_seconds_left(snapshot, now)
        if left is not None:
            return f"{name} — {LABELS[badge.kind]}, answer within {format_duration(left)}"
    if badge.kind is BadgeKind.ASLEEP:
        # One clock per box: the row's (when its agent was last heard), not when this app first saw it asleep (an
        # app started later would count from its own start: "Asleep 4 min 58 s" beside "last known idle (6 min
        # ago)").
        known = row_text.last_known_text(snapshot, now)
        if known:
            return f"{name} — {LABELS[badge.kind]} · {known}"
    in_state = row_text.in_state_seconds(snapshot, now) if when is MenuTime.IN_STATE else None
    if in_state is not None:
        return f"{name} — {LABELS[badge.kind]} {format_duration(in_state)}"
    return f"{name} — {badge.label}"


class HostMenu(QMenu):
    """One host's submenu; its actions emit the tray's signals with the host's name."""

    def __init__(self, name: str, tray: TrayController) -> None:
        super().__init__()
        self.setObjectName(f"tray_host_{name}")
        self.name = name
        self.connect_action = self._action("Connect", tray.connect_requested)
        self.disconnect_action = self._action("Disconnect", tray.disconnect_requested)
        self.keep_action = self._action("Keep awake", tray.keep_requested)
        self.copy_action = self._action("Copy ssh command", tray.copy_requested)
        self.terminal_action = self._action("Open in terminal", tray.terminal_requested)
        self.addSeparator()
        self.details_action = self._action("Details…", tray.host_requested)

    def _action(self, text: str, signal: SignalInstance) -> QAction:
        action = self.addAction(text)
        action.triggered.connect(lambda _checked=False: signal.emit(self.name))
        return action

    def render_snapshot(self, snapshot: HostSnapshot, now: float) -> None:
        badge = snapshot.badge(now)
        self.setTitle(action_text(host_menu_text(snapshot, now)))
        set_tooltip(self, row_text.badge_tooltip(snapshot, now))
        spec = snapshot.connection.spec
        self.connect_action.setText(CONNECT_WORDS[spec.connect] or "Connect")
        self.connect_action.setVisible(spec.connect is not ConnectAction.NONE)
        self.disconnect_action.setVisible(spec.disconnect)
        self.keep_action.setVisible(badge.offers_keep)
        has_ssh = row_text.ssh_command(snapshot) is not None
        self.copy_action.setVisible(has_ssh)
        self.terminal_action.setVisible(has_ssh)


class TrayController(QObject):
    open_requested = Signal()
    settings_requested = Signal()
    connect_all_requested = Signal()
    quit_requested = Signal()
    host_requested = Signal(str)
    """Details…: open the window on that host."""
    connect_requested = Signal(str)
    disconnect_requested = Signal(str)
    terminal_requested = Signal(str)
    """Open in terminal: the user's terminal running the host's ssh command."""
    about_requested = Signal()
    help_requested = Signal()
    keep_requested = Signal(str)
    let_sleep_requested = Signal(str)
    copy_requested = Signal(str)

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, icon: QSystemTrayIcon | None = None) -> None:
        """`icon`: the one shown while the app started (ui/early_tray.py), adopted as it is (this menu, icon
        and tooltip replace its own); None makes a new one."""
        super().__init__()
        self._clock = clock
        self.icon = icon if icon is not None else QSystemTrayIcon()
        self.icon.setObjectName("tray")
        self.menu = QMenu()
        self.menu.setObjectName("tray_menu")
        self.icon.setContextMenu(self.menu)
        self.summary = self.menu.addAction("")
        self.summary.triggered.connect(self.open_requested.emit)
        _bold(self.summary)
        self._prompts_end = self.menu.addSeparator()
        self._hosts_end = self.menu.addSeparator()
        self._add_action("Open Workroom", self.open_requested)
        self._add_action("Settings…", self.settings_requested)
        self._add_action("Connect all", self.connect_all_requested)
        self.menu.addSeparator()
        self._add_action("About Workroom", self.about_requested)
        self._add_action("Help", self.help_requested)
        self._add_action("Quit…", self.quit_requested)
        self.host_menus: dict[str, HostMenu] = {}
        self.prompt_actions: dict[str, list[QAction]] = {}
        self._badges: dict[str, Badge] = {}
        self._snapshots: dict[str, HostSnapshot] = {}
        self.worst_kind: BadgeKind | None = None
        self.expiry = QTimer(self)
        """One single-shot timer for the earliest time a host's badge stops being true (`Badge.valid_until`,
        e.g. a prompt's deadline): an idle box that sleeps sends no snapshot then, yet the icon must change."""
        self.expiry.setSingleShot(True)
        self.expiry.setTimerType(Qt.TimerType.PreciseTimer)
        self.expiry.timeout.connect(self._badges_expired)
        self.answered_prompts: dict[str, float] = {}
        """{host: deadline} of prompts answered here: not pinned again, not counted as needing an answer."""
        self.icon.activated.connect(self._activated)
        self.menu.aboutToShow.connect(self.refresh_texts)
        self._set_worst()
        self._render_summary()

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

    # -- feeding ----------------------------------------------------------------------------------

    def refresh_texts(self) -> None:
        """Re-render every line (ages move while nothing is pushed) and ink its icon for the palette now; called
        as the menu opens."""
        now = self._clock()
        for name in self.host_menus:
            self._render_host(name, now)
        for name in self.prompt_actions:
            self._render_prompt(self._snapshots[name], now)
        self._render_summary()

    def update(self, snapshot: HostSnapshot) -> None:
        name = snapshot.host.name
        now = self._clock()
        self._snapshots[name] = snapshot
        menu = self.host_menus.get(name)
        if menu is None:
            menu = self.host_menus[name] = HostMenu(name, self)
            self.menu.insertMenu(self._hosts_end, menu)
        self._render_host(name, now)
        self._set_worst()
        deadline = row_text.prompt_deadline(snapshot)
        if deadline is not None and self.answered_prompts.get(name) != deadline:
            self._render_prompt(snapshot, now)
        else:
            self._drop_prompt(name)  # answered anywhere (here, a card, another computer) or run out
        self._render_summary()

    def _render_host(self, name: str, now: float) -> None:
        """A host's line, submenu and icon from its badge as of `now`."""
        snapshot, menu = self._snapshots[name], self.host_menus[name]
        menu.render_snapshot(snapshot, now)
        badge = snapshot.badge(now)
        # Inked for the menu's palette as it is now: a switch to dark mode re-inks them as the menu opens (they
        # were drawn dark on a dark menu when only a new badge kind redrew them).
        icon = icon_for(badge.kind, self.menu.palette())
        if menu.icon().cacheKey() != icon.cacheKey():
            menu.setIcon(icon)
        self._badges[name] = badge

    def _badges_expired(self) -> None:
        """A badge's time ran out with nothing heard: every host is evaluated again as of now."""
        now = self._clock()
        for name in self._snapshots:
            self._render_host(name, now)
        for name in self.prompt_actions:
            self._render_prompt(self._snapshots[name], now)
        self._set_worst()
        self._render_summary()

    def remove(self, name: str) -> None:
        menu = self.host_menus.pop(name, None)
        if menu is not None:
            self.menu.removeAction(menu.menuAction())
        self._drop_prompt(name)
        self._badges.pop(name, None)
        self._snapshots.pop(name, None)
        self._set_worst()
        self._render_summary()

    def answered(self, name: str) -> None:
        """The prompt of `name` was answered (here, in the window, on a card or its notification): unpin it."""
        snapshot = self._snapshots.get(name)
        deadline = row_text.prompt_deadline(snapshot) if snapshot is not None else None
        if deadline is not None:
            self.answered_prompts[name] = deadline
        self._drop_prompt(name)
        self._render_summary()

    # -- prompts pinned at the top ------------------------------------------------------------------

    def _render_prompt(self, snapshot: HostSnapshot, now: float) -> None:
        name = snapshot.host.name
        actions = self.prompt_actions.get(name)
        if actions is None:
            title = QAction(self.menu)
            title.triggered.connect(lambda _checked=False, n=name: self.host_requested.emit(n))
            _bold(title)
            keep = QAction("    Keep awake", self.menu)
            keep.triggered.connect(lambda _checked=False, n=name: self.keep_requested.emit(n))
            sleep = QAction("    Let it sleep", self.menu)
            sleep.triggered.connect(lambda _checked=False, n=name: self.let_sleep_requested.emit(n))
            actions = self.prompt_actions[name] = [title, keep, sleep]
            for action in actions:
                self.menu.insertAction(self._prompts_end, action)
        left = row_text.prompt_seconds_left(snapshot, now)
        within = f" · answer within {format_duration(left)}" if left is not None else ""
        actions[0].setText(action_text(f"{snapshot.host.name}: keep it awake?{within}"))  # the app's name for it

    def _drop_prompt(self, name: str) -> None:
        for action in self.prompt_actions.pop(name, []):
            self.menu.removeAction(action)

    def _render_summary(self) -> None:
        self.summary.setText(action_text(row_text.summary_text(list(self._snapshots.values()),
                                                               self.answered_prompts)))
        self._prompts_end.setVisible(bool(self.prompt_actions))

    def _set_worst(self) -> None:
        """The icon shows the kind that most needs the user (drawn again only when that kind changes); the
        tooltip names who needs the user, else counts the hosts per state, so it is set whenever its words
        change, even under the same icon. Then the next badge expiry is scheduled."""
        worst = tray_icon_kind(self._badges.values())
        if worst is not self.worst_kind:
            self.worst_kind = worst
            self.icon.setIcon(tray_icon_for(worst))
        set_tray_tooltip(self.icon, tray_summary(self._badges))
        self._schedule_expiry()

    def _schedule_expiry(self) -> None:
        due = [b.valid_until for b in self._badges.values() if b.valid_until is not None]
        if not due:
            self.expiry.stop()
            return
        wait_ms = math.ceil(max(0.0, min(due) - self._clock()) * 1000) + 1
        self.expiry.start(min(wait_ms, MAX_TIMER_MS))

    def show(self) -> bool:
        if not self.available:
            return False
        self.icon.show()
        return True


def _bold(action: QAction) -> None:
    """A heading line: bold and readable (a disabled action would be greyed out); clicking it opens the
    window."""
    font = action.font()
    font.setBold(True)
    action.setFont(font)


def _menu_on_click() -> bool:
    return sys.platform == "darwin"  # the macOS menu bar opens the menu on click; elsewhere a click opens the window


def copy_to_clipboard(text: str) -> None:
    clipboard = QGuiApplication.clipboard()
    if clipboard is not None:
        clipboard.setText(text)

