"""What the window and the menu-bar item say about the provider seeing the keep-awake: the detail panel's
"Keep-awake seen" line (never "confirmed" without a reading), the badge, and one notification when it stops
being seen. Snapshots are fed through the engine's listeners, as a session publishes them.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from gui_helpers import feed
from unit.core.status_factory import make_busy
from workroom.core.badge import BadgeKind
from workroom.core.connection import ConnectionInfo, ConnectionState
from workroom.core.heartbeat_proof import CANNOT_READ, HeartbeatProof, IdleClockReading, judge
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.hosts import Host
from workroom.core.traits import BOXD_TRAITS
from workroom.ui.app import WorkroomApp

pytestmark = pytest.mark.gui

INTERVAL = 20.0


def snapshot(proof: HeartbeatProof | None, name: str = "gpu-box") -> HostSnapshot:
    now = time.monotonic()
    info = ConnectionInfo(state=ConnectionState.LIVE, since_monotonic=now - 5, status_received_monotonic=now,
                          heartbeat_proof=proof)
    host = Host(name=name, provider="boxd", address=f"{name}.example")
    traits = BOXD_TRAITS.with_idle_window(60).with_heartbeat_interval(INTERVAL)
    status = make_busy(keep_awake={"interval_seconds": INTERVAL, "enabled": True})
    return HostSnapshot(host, traits, info, status, None, now)


def proof(idle: float) -> HeartbeatProof:
    reading = IdleClockReading(idle_seconds=idle, window_seconds=60, read_at=time.monotonic())
    return judge(reading, interval_seconds=INTERVAL, own_traffic_at=None, previous=None)


@pytest.fixture
def app(engine: Any, qtbot: Any) -> Any:
    workroom_app = WorkroomApp(engine)
    qtbot.addWidget(workroom_app.window)
    yield workroom_app
    workroom_app.window.cards.timer.stop()


def seen_line(app: Any) -> str:
    app.window.select_host("gpu-box")
    text: str = app.window.detail.fields.text()
    assert "Keep-awake seen" in text
    return text.split("Keep-awake seen", 1)[1]


def test_confirmed_then_not_seen_notifies_once_then_confirmed_again(app: Any, engine: Any) -> None:
    feed(engine, snapshot(proof(4)))
    assert "confirmed; the provider last saw activity 4 s ago" in seen_line(app)
    assert app.notifications.last_notification is None

    feed(engine, snapshot(proof(41)))
    line = seen_line(app)
    assert "NOT seen; the provider last saw activity 41 s ago" in line
    assert "Busy but not kept awake" in app.window.detail.badge_label.text()
    assert "not seeing the heartbeat (idle 41 s of a 60 s window)" in app.window.detail.tooltip.text()
    title, message = app.notifications.last_notification
    assert title == "gpu-box: busy but not kept awake"
    assert "put to sleep in 19 s" in message or "put to sleep in 18 s" in message
    assert app.tray.worst_kind is BadgeKind.BUSY_NOT_KEPT_AWAKE

    app.notifications.last_notification = None
    feed(engine, snapshot(proof(45)))  # still not seen: no second notification
    assert app.notifications.last_notification is None
    feed(engine, snapshot(proof(2)))
    assert "confirmed" in seen_line(app)
    feed(engine, snapshot(proof(42)))  # not seen again after a recovery: notified again
    assert app.notifications.last_notification is not None


@pytest.mark.parametrize("value", [None, CANNOT_READ])
def test_an_unreadable_provider_is_unconfirmed_never_confirmed(app: Any, engine: Any,
                                                               value: HeartbeatProof | None) -> None:
    feed(engine, snapshot(value))
    line = seen_line(app)
    assert "unconfirmed" in line.lower()
    assert "confirmed;" not in line and "<td>confirmed" not in line
    assert app.window.detail.badge_label.text() == "<b>Busy</b>"
