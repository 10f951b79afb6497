"""The tray menu as the main surface: summary line, pinned prompts with Keep awake / Let it sleep, one line
per host with one state word and how long, a submenu per host; a notification goes once answered."""

from __future__ import annotations

from typing import Any

import pytest
from demo_states import AGENT_MONOTONIC, busy, every_state, make_snapshot
from gui_helpers import feed
from PySide6.QtGui import QGuiApplication
from workroom.core.connection import ConnectionState
from workroom.ui.app import WorkroomApp

pytestmark = pytest.mark.gui


@pytest.fixture
def app(engine: Any, qtbot: Any) -> Any:
    workroom_app = WorkroomApp(engine)
    qtbot.addWidget(workroom_app.window)
    yield workroom_app
    workroom_app.window.cards.timer.stop()


def prompting(name: str) -> Any:
    return make_snapshot(name, "boxd", prompt=True, **busy(
        awake_seconds=4 * 3600 + 10.0, awake_ceiling_exceeded=True, ask_at_ceiling=True, prompt_pending=True,
        prompt_deadline=AGENT_MONOTONIC + 300))


def texts(menu: Any) -> list[str]:
    return [a.text() for a in menu.actions() if a.isVisible() and not a.isSeparator()]


def test_summary_pinned_prompt_and_host_lines(app: Any, engine: Any) -> None:
    states = every_state()
    states.pop("busy_past_ceiling")
    for snap in states.values():
        feed(engine, snap)
    feed(engine, prompting("render-farm"))
    tray = app.tray
    tray.refresh_texts()
    lines = texts(tray.menu)
    live = sum(1 for s in app.window.model.snapshots()
               if s.connection.state in (ConnectionState.LIVE, ConnectionState.QUIET) and s.status is not None)
    total = app.window.model.rowCount()
    assert lines[0] == f"{live} of {total} live · render-farm needs an answer"
    assert lines[1].startswith("render-farm: keep it awake? · answer within")
    assert lines[2:4] == ["    Keep awake", "    Let it sleep"]
    assert "gpu-box — Busy 42 min" in lines
    assert "laptop — Idle" in lines
    assert any(x.startswith("nightly — Asleep") for x in lines)
    assert not any("·" in x for x in lines if x.startswith("gpu-box"))  # one state word, not "Busy · Busy"
    assert lines[-4:] == ["Open Workroom", "Settings…", "Connect all", "Quit"]


def test_host_submenus_offer_what_applies(app: Any, engine: Any) -> None:
    states = every_state()
    for snap in states.values():
        feed(engine, snap)
    tray = app.tray
    asleep = tray.host_menus["nightly"]
    assert asleep.connect_action.isVisible() and asleep.connect_action.text() == "Wake and connect"
    assert not tray.host_menus["gpu-box"].connect_action.isVisible()  # live: nothing to connect
    assert tray.host_menus["render-farm"].keep_action.isVisible()
    assert not tray.host_menus["laptop"].copy_action.isVisible()  # this computer: no ssh
    tray.host_menus["gpu-box"].copy_action.trigger()
    assert QGuiApplication.clipboard().text() == "ssh gpu-box.example"
    tray.host_menus["build-box"].details_action.trigger()
    assert app.window.detail.snapshot.host.name == "build-box"


def test_let_it_sleep_answers_the_card_unpins_the_prompt_and_withdraws_the_notification(app: Any,
                                                                                        engine: Any) -> None:
    feed(engine, prompting("render-farm"))
    tray = app.tray
    assert "render-farm" in app.window.cards.cards
    assert tray.last_notification is not None and "render-farm" in tray.notified
    assert "render-farm" in tray.prompt_actions
    let_sleep = tray.prompt_actions["render-farm"][2]
    let_sleep.trigger()
    assert "render-farm" not in app.window.cards.cards
    assert "render-farm" not in tray.prompt_actions
    assert "render-farm" not in tray.notified and tray.last_notification is None
    assert "needs an answer" not in tray.summary.text()


def test_a_prompt_answered_elsewhere_unpins_and_withdraws_too(app: Any, engine: Any) -> None:
    feed(engine, prompting("render-farm"))
    assert "render-farm" in app.tray.notified
    feed(engine, make_snapshot("render-farm", "boxd", **busy()))  # the agent says: no prompt pending any more
    assert "render-farm" not in app.tray.prompt_actions and "render-farm" not in app.tray.notified
