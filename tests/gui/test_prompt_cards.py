"""Prompt cards from constructed snapshots: one per host, countdown, answered once, failing Keep stays."""

from __future__ import annotations

import time
from typing import Any

import pytest
from demo_states import AGENT_MONOTONIC, busy, make_snapshot
from gui_helpers import feed, wait_for
from workroom.core.connection import ConnectionState

pytestmark = pytest.mark.gui


def prompting(name: str, deadline_in: float = 300.0, *, provider: str = "boxd", **extra: Any) -> Any:
    return make_snapshot(name, provider, prompt=True, **busy(
        awake_seconds=4 * 3600 + 10.0, awake_ceiling_exceeded=True, ask_at_ceiling=True, prompt_pending=True,
        prompt_deadline=AGENT_MONOTONIC + deadline_in, **extra))


def visible_cards(window: Any) -> dict[str, Any]:
    return {name: card for name, card in window.cards.cards.items() if card.isVisible()}


def test_card_appears_counts_down_and_dismiss_is_final_for_that_prompt(window: Any, engine: Any) -> None:
    cards = window.cards
    cards._sleeper = None  # no agent behind these snapshots; the answer's trip to one is test_let_sleep.py's
    assert not cards.isVisible() and not cards.timer.isActive()
    raised: list[tuple[str, str]] = []
    cards.card_raised.connect(lambda n, w: raised.append((n, w)))
    snap = prompting("render-farm")
    feed(engine, snap)
    card = visible_cards(window)["render-farm"]
    assert cards.isVisible()
    assert card.title.text() == "render-farm: keep it awake?"
    assert card.countdown.text() in ("Answer within 5 min", "Answer within 4 min 59 s")
    assert cards.timer.isActive() and cards.timer.interval() == 1000
    assert raised == [("render-farm", "render-farm")]
    card.dismiss_button.click()
    assert "render-farm" not in cards.cards
    assert not cards.isVisible() and not cards.timer.isActive()
    feed(engine, snap)  # the same prompt again: not raised again
    assert "render-farm" not in cards.cards
    feed(engine, prompting("render-farm", deadline_in=900.0))  # a new prompt: raised
    assert visible_cards(window)["render-farm"]
    assert len(raised) == 2


def test_countdown_moves_with_the_clock(window: Any, engine: Any, run: Any) -> None:
    feed(engine, prompting("render-farm", deadline_in=5.0))
    card = window.cards.cards["render-farm"]
    first = card.countdown.text()

    async def moved() -> None:
        await wait_for(lambda: card.countdown.text() != first, 3.5, "the countdown to tick")

    run(moved())
    assert card.countdown.text().startswith("Answer within")


def test_cards_one_per_host_and_they_scroll(window: Any, engine: Any, qtbot: Any) -> None:
    for i in range(6):
        feed(engine, prompting(f"box-{i}"))
    feed(engine, prompting("box-0", deadline_in=300.0))  # same prompt re-sent: still one card
    assert len(window.cards.cards) == 6
    bar = window.cards.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=2000)  # more than fits: the area scrolls
    feed(engine, make_snapshot("box-3", "boxd", **busy()))  # the agent no longer asks
    assert "box-3" not in window.cards.cards and len(window.cards.cards) == 5


def test_failing_keep_keeps_the_card_and_says_why(window: Any, engine: Any, run: Any) -> None:
    """The host is in the hosts file but not connected: Keep awake cannot reach it."""
    from workroom.core.hosts import Host

    window.controller.add_host(Host(name="render-farm", provider="boxd", address="127.0.0.1", port=1),
                               connect=False)
    feed(engine, prompting("render-farm"))
    card = window.cards.cards["render-farm"]

    async def answered() -> None:
        card.keep_button.click()  # clicks arrive while the app's loop runs, as in the app
        await wait_for(lambda: card.error.isVisible(), 10, "the card to show why Keep failed")

    run(answered())
    assert "Not connected" in card.error.text()
    assert window.cards.cards.get("render-farm") is card
    assert card.keep_button.isEnabled()


def test_host_connecting_mid_prompt_shows_its_card_at_once(window: Any, engine: Any) -> None:
    feed(engine, make_snapshot("late", "boxd", ConnectionState.CONNECTING))
    assert "late" not in window.cards.cards
    feed(engine, prompting("late", deadline_in=120.0))
    assert visible_cards(window)["late"].countdown.text().startswith("Answer within")


def test_card_raises_a_system_notification(engine: Any, qtbot: Any) -> None:
    from workroom.ui.app import WorkroomApp

    app = WorkroomApp(engine)
    qtbot.addWidget(app.window)
    assert app.notifications.last_notification is None
    feed(engine, prompting("render-farm"))
    title, message = app.notifications.last_notification  # type: ignore[misc]
    assert title == "render-farm: keep it awake?"
    assert "Busy for 4 h, longer than its 4 h awake ceiling. Compiling: cc1plus." in message, message
    app.window.cards.timer.stop()


def test_clicking_a_card_selects_its_host(window: Any, engine: Any, qtbot: Any) -> None:
    from PySide6.QtCore import Qt

    feed(engine, prompting("render-farm"))
    card = window.cards.cards["render-farm"]
    qtbot.mouseClick(card.title, Qt.MouseButton.LeftButton)
    assert window.detail.title.text() == "render-farm"
    assert time.monotonic() > 0
