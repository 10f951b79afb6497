"""This computer's own sleep and a request-metered box it keeps awake by its polls: the idle-sleep hold (IOKit
faked: no macOS here, the only fake; docs/macos.md), the wake noticed from two real clock readings drifting
apart (injected clocks), and the words after the wake. Real widgets, the real app wiring."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from demo_states import busy, make_snapshot
from gui_helpers import feed, wait_for
from workroom.core.connection import ConnectionState
from workroom.core.traits import REQUEST_METERED_TRAITS
from workroom.platform import macos
from workroom.ui.app import WorkroomApp
from workroom.ui.computer_sleep import ComputerSleepWatch

pytestmark = pytest.mark.gui


class FakePower:
    def __init__(self) -> None:
        self.held: dict[int, tuple[str, str]] = {}
        self.next_id = 7

    def create_assertion(self, kind: str, reason: str) -> int | None:
        self.next_id += 1
        self.held[self.next_id] = (kind, reason)
        return self.next_id

    def release_assertion(self, assertion_id: int) -> None:
        del self.held[assertion_id]


@pytest.fixture
def power(monkeypatch: pytest.MonkeyPatch) -> FakePower:
    fake = FakePower()
    monkeypatch.setattr(macos, "_power", fake)
    return fake


def _metered(state: ConnectionState, polling: bool) -> Any:
    snap = make_snapshot("api-box", "request-metered", state, traits=REQUEST_METERED_TRAITS, **busy())
    return replace(snap, connection=snap.connection.model_copy(update={"keepawake_running": polling}))


def test_idle_sleep_is_held_only_while_set_and_a_box_is_kept_by_this_computer(engine: Any, qtbot: Any, run: Any,
                                                                            power: FakePower) -> None:
    app = WorkroomApp(engine)
    qtbot.addWidget(app.window)
    row = app.window.settings.editors["hold_idle_sleep"].check
    assert not row.isHidden() and row.isEnabled()  # changeable where the seam exists (a Mac)

    async def scenario() -> None:
        feed(engine, _metered(ConnectionState.LIVE, polling=True))
        assert power.held == {}  # the setting is off by default
        row.click()
        assert list(power.held.values()) == [(macos.IDLE_SLEEP_ASSERTION, macos.ASSERTION_REASON)]
        feed(engine, _metered(ConnectionState.LIVE, polling=False))  # IDLE heard: the polls stop
        assert power.held == {}
        feed(engine, _metered(ConnectionState.LIVE, polling=True))
        assert len(power.held) == 1
        row.click()  # turned off: released at once
        assert power.held == {}
        await wait_for(lambda: '"hold_idle_sleep":false' in engine.paths.settings_file.read_text().replace(" ", "")
                       if engine.paths.settings_file.exists() else False, 5, "the saved setting")

    run(scenario())
    app.tray.icon.hide()


def test_the_idle_sleep_row_says_why_where_the_computer_cannot_hold_it(engine: Any, qtbot: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(macos, "_power", None)
    monkeypatch.setattr(macos.sys, "platform", "linux")
    app = WorkroomApp(engine)
    qtbot.addWidget(app.window)
    row = app.window.settings.editors["hold_idle_sleep"]
    assert not row.check.isHidden() and not row.check.isEnabled()
    assert "Only macOS" in row.note.text()
    app.tray.icon.hide()


def test_the_wake_is_the_drift_between_a_clock_that_stops_in_sleep_and_one_that_does_not(qapp: Any) -> None:
    clocks = {"awake": 100.0, "total": 5000.0}
    watch = ComputerSleepWatch(stops_in_sleep=lambda: clocks["awake"], counts_sleep=lambda: clocks["total"])
    woke: list[float] = []
    watch.woke.connect(woke.append)
    watch.start()
    clocks["awake"] += 15
    clocks["total"] += 15.2
    watch.check()
    assert woke == []  # awake the whole time: the clocks move together
    clocks["awake"] += 15
    clocks["total"] += 15 + 3600  # an hour asleep between two checks
    watch.check()
    assert woke == [pytest.approx(3600, abs=0.5)]
    watch.stop()


def test_after_the_wake_the_user_hears_which_box_slept_while_busy(engine: Any, qtbot: Any) -> None:
    app = WorkroomApp(engine)
    qtbot.addWidget(app.window)
    feed(engine, _metered(ConnectionState.LIVE, polling=True))
    app._computer_woke(3600.0)
    feed(engine, _metered(ConnectionState.LOST, polling=False))
    assert app.notifications.last_notification is None or "sleep" not in app.notifications.last_notification[0]
    feed(engine, _metered(ConnectionState.ASLEEP, polling=False))
    assert app.notifications.last_notification is not None
    title, message = app.notifications.last_notification
    assert title == "api-box went to sleep while this computer slept"
    assert "cut short" in message
    app.notifications.last_notification = None
    feed(engine, _metered(ConnectionState.ASLEEP, polling=False))
    assert app.notifications.last_notification is None  # once per wake
    app.tray.icon.hide()
