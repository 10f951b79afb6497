"""Notifications about hosts besides ceiling prompts: "your job finished" and "lost work" (docs/ui.md,
"Notifications"). The rules are core's (`core.notification_rules`, over the badge and the status); this keeps what
each host last showed, so each job finishes once and each episode of lost work is told once and withdrawn
when it resolves.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from workroom.core.app_settings import NoticeSettings
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.metering import NotKeptAwakeReason
from workroom.core.notification_rules import (
    finished_note,
    finished_span,
    lost_work_note,
    lost_work_reason,
    stop_warning,
)
from workroom.core.protocol import Status
from workroom.ui.notification_delivery import Notice, NoticeButton, Notifications


def finished_key(name: str) -> str:
    return f"finished:{name}"


def lost_key(name: str) -> str:
    return f"lost:{name}"


def stopping_key(name: str) -> str:
    return f"stopping:{name}"


STOP_BUTTONS = (NoticeButton("keep", "Keep awake"), NoticeButton("sleep", "Let it sleep"))
"""A platform about to stop a busy box: the prompt's two answers (Keep awake restarts the ceiling, and so the
extensions; Let it sleep leaves it to the platform)."""


class HostNotices:
    def __init__(self, notifications: Notifications, settings: Callable[[], NoticeSettings],
                 clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        self._notifications = notifications
        self._settings = settings
        self._clock = clock
        self._wall = wall
        self.stopping: dict[str, float] = {}
        """Per host, the platform deadline a stop warning was posted for (one per deadline)."""
        self._live: dict[str, Status] = {}
        """Per host, the last status seen on the live link now open (none: not live)."""
        self.episodes: dict[str, NotKeptAwakeReason] = {}
        """Per host, the lost-work episode it is in, as its notification was posted."""
        self._snapshots: dict[str, HostSnapshot] = {}

    def on_snapshot(self, snapshot: HostSnapshot) -> None:
        name = snapshot.host.name
        self._snapshots[name] = snapshot
        settings = self._settings()
        self._finished(snapshot, settings)
        self._lost_work(snapshot, settings)
        self._stopping(snapshot)

    def _finished(self, snapshot: HostSnapshot, settings: NoticeSettings) -> None:
        name, status = snapshot.host.name, snapshot.status
        if not snapshot.connection.spec.live or status is None:
            self._live.pop(name, None)  # asleep, offline or not connected: what follows is not "finished"
            return
        previous = self._live.get(name)
        self._live[name] = status
        if not settings.finished_for(name, this_computer=snapshot.host.is_this_computer):
            return
        span = finished_span(previous, status, settings.finished_after_seconds)
        if span is not None:
            title, message = finished_note(name, span, sleeps=snapshot.traits.metering.sleeps)
            self._notifications.post(Notice(finished_key(name), title, message))

    def _lost_work(self, snapshot: HostSnapshot, settings: NoticeSettings) -> None:
        name = snapshot.host.name
        now = self._clock()
        badge = snapshot.badge(now)
        reason = lost_work_reason(badge) if settings.lost_work else None
        if reason is None:
            if self.episodes.pop(name, None) is not None:
                self._notifications.withdraw(lost_key(name))  # resolved (or no longer wanted)
            return
        if name in self.episodes:
            return  # one notification per episode, whatever its reason turns into meanwhile
        self.episodes[name] = reason
        title, message = lost_work_note(name, badge, snapshot.connection.heartbeat_proof, now)
        self._notifications.post(Notice(lost_key(name), title, message, sticky=True))

    def _stopping(self, snapshot: HostSnapshot) -> None:
        """A busy box its platform stops within minutes, which the app will not keep up: told once per deadline,
        with Keep awake and Let it sleep; withdrawn when that no longer holds."""
        name, clock = snapshot.host.name, snapshot.connection.platform
        note = stop_warning(name, snapshot.badge(self._clock()), snapshot.status, clock, self._wall())
        if note is None or clock is None or clock.deadline is None:
            if self.stopping.pop(name, None) is not None:
                self._notifications.withdraw(stopping_key(name))
            return
        if self.stopping.get(name) == clock.deadline:
            return
        self.stopping[name] = clock.deadline
        self._notifications.post(Notice(stopping_key(name), *note, buttons=STOP_BUTTONS, sticky=True))

    def settings_changed(self) -> None:
        """Settings changed: episodes no longer wanted are withdrawn, new ones are told."""
        for snapshot in list(self._snapshots.values()):
            self._lost_work(snapshot, self._settings())

    def forget(self, name: str) -> None:
        self._live.pop(name, None)
        self._snapshots.pop(name, None)
        if self.episodes.pop(name, None) is not None:
            self._notifications.withdraw(lost_key(name))
        self._notifications.withdraw(finished_key(name))
        if self.stopping.pop(name, None) is not None:
            self._notifications.withdraw(stopping_key(name))
