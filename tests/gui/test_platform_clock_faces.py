"""A platform's own clock in the faces: the row's connection column, the detail panel and the tray say when the
platform stops a Coder workspace ("stops in 4 min", its maximum beside the awake ceiling), and a busy box it will
stop that the app does not keep up gets one notification a few minutes before, with Keep awake and Let it sleep,
taken back when that no longer holds. Snapshots are fed as a session publishes them (the session side is driven
against the fake coder in tests/integration/engine/test_platform_coder.py)."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest
from demo_states import busy, make_snapshot
from gui_helpers import feed
from workroom.core.connection import ConnectionState
from workroom.core.platform_clock import PlatformClock, PlatformState
from workroom.core.traits import CODER_TRAITS
from workroom.ui import row_text
from workroom.ui.tray import host_menu_text

pytestmark = pytest.mark.gui


def coder_snapshot(state: ConnectionState, left: float, **status: Any) -> Any:
    now = time.time()
    clock = PlatformClock(state=PlatformState.RUNNING, said="running", read_at=now, deadline=now + left,
                          max_deadline=now + 8 * 3600, can_extend=True)
    snap = make_snapshot("ws1", "ssh", state, traits=CODER_TRAITS, **status)
    return dataclasses.replace(snap, connection=snap.connection.model_copy(update={"platform": clock}))


PAST_CEILING = busy(awake_seconds=4 * 3600 + 60.0, awake_ceiling_exceeded=True)


def test_the_platforms_clock_is_in_the_row_the_detail_panel_and_the_tray(app: Any, engine: Any) -> None:
    snap = coder_snapshot(ConnectionState.LIVE, 12 * 60 + 20, **busy())
    feed(engine, snap)
    shown = app.window.model.snapshot("ws1")
    assert row_text.connection_text(shown, time.monotonic()) == "Live · stops in 12 min"
    detail = dict(row_text.detail_lines(shown, time.monotonic()))
    assert detail["Platform"].startswith("stops in 12 min; at most 8 h more by the platform's limit, awake ceiling")
    assert host_menu_text(shown, time.monotonic()).endswith(" · stops in 12 min")
    assert "nothing keeps it awake while this Mac sleeps" in shown.badge(time.monotonic()).label
    assert "stopping:ws1" not in app.notifications.shown  # kept up: nothing to warn of


def test_a_busy_box_the_app_let_go_of_is_warned_of_before_its_platform_stops_it(app: Any, engine: Any) -> None:
    first = coder_snapshot(ConnectionState.RELEASED, 4 * 60 + 20, **PAST_CEILING)
    feed(engine, first)
    notice = app.notifications.shown["stopping:ws1"]
    assert notice.title == "ws1 stops in 4 min" and notice.sticky
    assert [(b.id, b.title) for b in notice.buttons] == [("keep", "Keep awake"), ("sleep", "Let it sleep")]
    assert "past its 4 h awake ceiling" in notice.message
    assert "lost:ws1" not in app.notifications.shown  # the ceiling the user set: warned of, not lost work
    read_again = first.connection.platform.model_copy(update={"read_at": time.time()})
    feed(engine, dataclasses.replace(first, connection=first.connection.model_copy(update={"platform": read_again})))
    assert app.notifications.shown["stopping:ws1"] is notice  # once per deadline, however often it is read
    feed(engine, coder_snapshot(ConnectionState.LIVE, 40 * 60, **busy()))  # Keep awake answered: kept up again
    assert "stopping:ws1" not in app.notifications.shown
