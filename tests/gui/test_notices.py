"""Notifications beyond the card: a prompt's buttons and click, "your job finished", lost work, the settings
rows and each host's "Tell me when its work finishes". Snapshots are fed through the engine's listeners, as a
session publishes them; the notification backend is the one this machine has (no notification service
here: the balloon), except where a test gives the seam a stand-in for what only macOS does (permission).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from demo_states import AGENT_MONOTONIC, busy, every_state, make_snapshot
from gui_helpers import feed, wait_for
from workroom.core.connection import ConnectionState
from workroom.ui.app import WorkroomApp
from workroom.ui.notification_delivery import Notice, Notifications

pytestmark = pytest.mark.gui


def prompting(name: str = "render-farm") -> Any:
    return make_snapshot(name, "boxd", prompt=True, **busy(
        awake_seconds=4 * 3600 + 10.0, awake_ceiling_exceeded=True, ask_at_ceiling=True, prompt_pending=True,
        prompt_deadline=AGENT_MONOTONIC + 300))


def span(minutes: float = 42, cls: str = "cpu", subject: str = "cc1plus", slept: bool = False,
         ended: float = AGENT_MONOTONIC) -> dict[str, Any]:
    return {"ended": ended, "seconds": minutes * 60, "class": cls, "subject": subject, "slept": slept}


def idle_after(name: str, provider: str = "boxd", **span_changes: Any) -> Any:
    state = ConnectionState.QUIET if provider == "boxd" else ConnectionState.LIVE
    return make_snapshot(name, provider, state, last_busy_span=span(**span_changes))


# -- a prompt's notification ---------------------------------------------------------------------------------

def test_a_prompts_notification_offers_the_cards_two_answers(app: Any, engine: Any) -> None:
    feed(engine, prompting())
    notice = app.notifications.shown["prompt:render-farm"]
    assert [(b.id, b.title) for b in notice.buttons] == [("keep", "Keep awake"), ("sleep", "Let it sleep")]
    assert notice.sticky and notice.title == "render-farm: keep it awake?"
    # Short, read at a glance (it ran 5+ lines: the whole badge tooltip); the card and the row say the rest.
    assert re.match(r"Busy for 4 h( \d+ min)?, longer than its 4 h awake ceiling\. Compiling: cc1plus\. ",
                    notice.message), notice.message
    assert "Unanswered, it is let sleep in" in notice.message and "heartbeat" not in notice.message
    assert len(notice.message) <= 140, len(notice.message)


def test_let_it_sleep_on_the_notification_answers_as_the_card_does(app: Any, engine: Any, run: Any) -> None:
    """The card's own Let it sleep runs (the agent's `let_sleep`; tests/gui/test_let_sleep.py drives it through a
    real agent): with no session behind this fed host it fails on the card, in words, and nothing pretends it
    was answered."""
    feed(engine, prompting())
    card = app.window.cards.cards["render-farm"]

    async def press() -> None:
        app.notifications.pressed("prompt:render-farm", "sleep")
        await wait_for(lambda: card.error.text(), 10, "the card to say why Let it sleep did not reach the host")

    run(press())
    assert "render-farm" in card.error.text() and card.key not in app.window.cards.answered
    assert "render-farm" in app.window.cards.cards and "render-farm" in app.tray.prompt_actions


def test_keep_awake_on_the_notification_runs_the_cards_keep(app: Any, engine: Any, run: Any) -> None:
    """The card's own Keep awake runs: with no session behind this fed host it fails on the card, in words."""
    feed(engine, prompting())
    card = app.window.cards.cards["render-farm"]

    async def press() -> None:  # a backend reports presses on the loop
        app.notifications.pressed("prompt:render-farm", "keep")
        await wait_for(lambda: card.error.text(), 10, "the card to say why Keep awake did not reach the host")

    run(press())
    assert "render-farm" in card.error.text() and card.keep_button.text() == "Keep awake"
    assert "render-farm" in app.window.cards.cards  # unanswered: the card stays, as after its own button


def test_clicking_a_notification_opens_its_host(app: Any, engine: Any, run: Any) -> None:
    for snap in every_state().values():
        feed(engine, snap)
    app.notifications.clicked_body("prompt:render-farm")
    run(asyncio.sleep(0.05))
    assert app.window.detail.snapshot.host.name == "render-farm" and app.window.isVisible()


# -- your job finished ------------------------------------------------------------------------------------

def test_a_long_job_going_idle_notifies_once_in_words(app: Any, engine: Any) -> None:
    feed(engine, make_snapshot("box1", "boxd", **busy()))
    feed(engine, idle_after("box1"))
    assert app.notifications.shown["finished:box1"].message == (
        "box1 finished — compiling for 42 min; it may sleep now.")
    app.notifications.withdraw("finished:box1")
    feed(engine, idle_after("box1"))  # the same idle again: not a second finish
    assert not app.notifications.showing("finished:box1")


@pytest.mark.parametrize(("why", "before", "after"), [
    ("shorter than the setting", "busy", {"minutes": 9}),
    ("the box slept in the span", "busy", {"slept": True}),
    ("only held", "busy", {"cls": "", "minutes": 0}),
    ("asleep between", "asleep", {}),
    ("offline between", "offline", {}),
])
def test_no_finished_notification_when(app: Any, engine: Any, why: str, before: str, after: dict[str, Any]) -> None:
    feed(engine, make_snapshot("box1", "boxd", **busy()))
    if before == "asleep":
        feed(engine, make_snapshot("box1", "boxd", ConnectionState.ASLEEP, **busy()))
    elif before == "offline":
        feed(engine, make_snapshot("box1", "boxd", ConnectionState.BACKING_OFF, **busy()))
    feed(engine, idle_after("box1", **after))
    assert not app.notifications.showing("finished:box1"), why


def test_this_computer_only_when_asked_and_a_host_can_opt_out(app: Any, engine: Any, run: Any) -> None:
    feed(engine, make_snapshot("laptop", "local", **busy()))
    feed(engine, idle_after("laptop", "local"))
    assert not app.notifications.showing("finished:laptop")
    pane = app.window.settings
    pane.editors["finished_this_computer"].check.setChecked(True)
    assert engine.settings.notices.finished_this_computer
    feed(engine, make_snapshot("laptop", "local", **busy()))
    feed(engine, idle_after("laptop", "local", ended=AGENT_MONOTONIC + 1))
    assert app.notifications.shown["finished:laptop"].message == "laptop finished — compiling for 42 min."

    feed(engine, make_snapshot("gpu-box", "ssh", **busy()))
    app.window.select_host("gpu-box")
    box = app.window.detail.finished_box
    assert box.isVisibleTo(app.window) and box.isChecked()
    box.setChecked(False)  # this host only
    assert engine.settings.notices.finished_muted_hosts == ("gpu-box",)
    feed(engine, idle_after("gpu-box", "ssh"))
    assert not app.notifications.showing("finished:gpu-box")
    run(wait_for(lambda: engine.paths.settings_file.exists(), 5, "the settings to be saved"))
    saved = json.loads(engine.paths.settings_file.read_text())
    assert saved["notices"]["finished_muted_hosts"] == ["gpu-box"] and saved["notices"]["finished_this_computer"]


def test_the_finished_rows_set_the_threshold_and_turn_it_off(app: Any, engine: Any) -> None:
    pane = app.window.settings
    finished, minutes = pane.editors["finished"].check, pane.editors["finished_after_seconds"].boxes["min"]
    assert finished.isChecked() and minutes.value() == 10
    minutes.setValue(0)  # out of bounds: said under it, not taken
    note = pane.editors["finished_after_seconds"].note
    assert "must be between 1 min and 24 h; 0 min is not. Not applied." in note.text()
    assert engine.settings.notices.finished_after_seconds == 600
    minutes.setValue(45)
    assert not note.isVisible()
    assert engine.settings.notices.finished_after_seconds == 45 * 60
    feed(engine, make_snapshot("box1", "boxd", **busy()))
    feed(engine, idle_after("box1"))  # 42 min < 45 min
    assert not app.notifications.showing("finished:box1")
    finished.setChecked(False)
    assert not minutes.isEnabled() and not pane.editors["finished_this_computer"].check.isEnabled()
    app.window.select_host("box1")
    assert not app.window.detail.finished_box.isEnabled()
    finished.setChecked(True)
    minutes.setValue(30)
    feed(engine, make_snapshot("box1", "boxd", **busy()))
    feed(engine, idle_after("box1", ended=AGENT_MONOTONIC + 5))
    assert app.notifications.showing("finished:box1")


# -- lost work ---------------------------------------------------------------------------------------------

def test_a_failing_heartbeat_is_one_notification_per_episode_withdrawn_when_it_resolves(app: Any,
                                                                                        engine: Any) -> None:
    failing = every_state()["heartbeat_failing"]
    feed(engine, failing)
    notice = app.notifications.shown["lost:data-box"]
    assert notice.title == "data-box: busy but not kept awake" and notice.sticky
    assert "heartbeat is failing" in notice.message and notice.message.endswith("the agent keeps retrying.")
    posted: list[Notice] = []
    post = app.notifications.post
    app.notifications.post = lambda n: (posted.append(n), post(n))
    feed(engine, failing)
    assert posted == []  # the same episode
    feed(engine, make_snapshot("data-box", "boxd", **busy()))  # kept awake again
    assert not app.notifications.showing("lost:data-box")
    feed(engine, failing)
    assert [n.key for n in posted] == ["lost:data-box"]  # a new episode


def test_a_box_put_to_sleep_while_busy_is_told_with_what_to_do(app: Any, engine: Any) -> None:
    asleep = make_snapshot("nightly", "boxd", ConnectionState.ASLEEP, **busy())
    info = asleep.connection.model_copy(update={"suspended_while_busy": True})
    feed(engine, type(asleep)(asleep.host, asleep.traits, info, asleep.status, None, asleep.status_received_at))
    notice = app.notifications.shown["lost:nightly"]
    assert notice.title == "nightly fell asleep while busy"
    assert "cut short" in notice.message and "Wake and connect" in notice.message
    feed(engine, make_snapshot("nightly", "boxd", ConnectionState.ASLEEP))
    assert not app.notifications.showing("lost:nightly")


def test_an_unanswered_prompt_is_not_lost_work(app: Any, engine: Any) -> None:
    feed(engine, every_state()["busy_not_kept_awake"])
    assert not any(key.startswith("lost:") for key in app.notifications.shown)


def test_the_lost_work_row_turns_it_off_and_withdraws(app: Any, engine: Any) -> None:
    pane = app.window.settings
    lost_work = pane.editors["lost_work"].check
    assert lost_work.isChecked()
    feed(engine, every_state()["heartbeat_failing"])
    assert app.notifications.showing("lost:data-box")
    lost_work.setChecked(False)
    assert not engine.settings.notices.lost_work
    assert not app.notifications.showing("lost:data-box")
    feed(engine, every_state()["heartbeat_failing"])
    assert not app.notifications.showing("lost:data-box")


# -- what only macOS decides: permission (the seam's stand-in) ---------------------------------------------

class DeniedBackend:
    """Stands in for UNUserNotificationCenter with notifications turned off for the app (macOS only)."""

    name = "system"
    has_buttons = True

    def __init__(self) -> None:
        self.asked = 0
        self.posted: list[str] = []

    async def probe(self) -> None:
        return None

    async def post(self, notice: Notice) -> None:
        self.posted.append(notice.key)

    async def withdraw(self, key: str) -> None:
        return None

    async def authorised(self) -> bool:
        self.asked += 1
        return False


def test_permission_is_asked_at_the_first_notification_and_the_pane_says_when_it_is_off(
        engine: Any, qtbot: Any, run: Any) -> None:
    backend = DeniedBackend()
    chosen: list[Notifications] = []

    async def factory(notifications: Notifications) -> Any:
        chosen.append(notifications)
        return backend

    app = WorkroomApp(engine, notification_backend=factory)
    qtbot.addWidget(app.window)
    app.start(connect=False)
    run(app.notifications.drain())
    assert chosen == [] and backend.asked == 0, "asked at start-up"
    pane = app.window.settings
    assert not pane.notification_service.isVisibleTo(app.window)
    feed(engine, prompting())
    run(app.notifications.drain())
    assert backend.posted == ["prompt:render-farm"] and backend.asked == 1
    app.window.show_settings()
    assert pane.notification_service.isVisibleTo(app.window)
    assert "Notifications are off for Workroom" in pane.notification_service.text()
    app.window.cards.timer.stop()
    run(app.close())


def test_a_withdrawn_notification_is_marked_transient_in_the_type_the_server_takes() -> None:
    """The hint goes in the Notify signature the server introspects (the spec's a{sv}, an older server's a{ss});
    a server whose Notify takes neither gets no hints. (dunst reading it for real: test_notifications_dunst.py.)"""
    from types import SimpleNamespace

    from dbus_fast import Variant
    from workroom.ui.notification_delivery import transient_hints

    def server(signature: str | None) -> Any:
        args = [SimpleNamespace(signature=s) for s in ("s", "u", "s", "s", "s", "as")]
        if signature is not None:
            args += [SimpleNamespace(signature=signature), SimpleNamespace(signature="i")]
        notify = SimpleNamespace(name="Notify", in_args=args)
        return SimpleNamespace(introspection=SimpleNamespace(methods=[notify]))

    assert transient_hints(server("a{sv}")) == {"transient": Variant("b", True)}
    assert transient_hints(server("a{ss}")) == {"transient": "true"}
    assert transient_hints(server(None)) == {}
