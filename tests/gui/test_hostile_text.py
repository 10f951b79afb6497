"""Busy reasons carry process names any user of a shared host can choose: they reach the screen as plain
text (no markup rendered, no control characters), however the agent sent them."""

from __future__ import annotations

from typing import Any

import pytest
from demo_states import AGENT_MONOTONIC, busy, make_snapshot
from gui_helpers import feed
from PySide6.QtCore import Qt
from workroom.ui.host_table_model import Column

pytestmark = pytest.mark.gui

HOSTILE = "cpu: \x1b]0;PWNED\x07\x1b[2J<h1>x</h1><img src=q> (pid 7)"


def test_hostile_busy_reasons_are_shown_as_plain_text(window: Any, engine: Any) -> None:
    snap = make_snapshot("shared", "boxd", prompt=True, **busy(
        busy_reasons=[HOSTILE], awake_seconds=4 * 3600 + 10.0, awake_ceiling_exceeded=True, ask_at_ceiling=True,
        prompt_pending=True, prompt_deadline=AGENT_MONOTONIC + 300.0))
    feed(engine, snap)
    card = window.cards.cards["shared"]
    assert card.body.textFormat() == Qt.TextFormat.PlainText
    assert "<h1>x</h1>" in card.body.text() and "\x1b" not in card.body.text() and "\x07" not in card.body.text()
    window.select_host("shared")
    assert window.detail.tooltip.textFormat() == Qt.TextFormat.PlainText
    assert "\x1b" not in window.detail.tooltip.text()
    model = window.model
    row = model.row_of("shared")
    for column in (Column.BUSY, Column.BADGE):
        tip = model.data(model.index(row, column), Qt.ItemDataRole.ToolTipRole)
        assert "<h1>" not in tip and "\x1b" not in tip  # escaped for Qt's rich-text tooltips
    assert "&lt;h1&gt;x&lt;/h1&gt;" in model.data(model.index(row, Column.BUSY), Qt.ItemDataRole.ToolTipRole)


def test_a_prompt_is_titled_with_the_apps_name_for_the_host_never_the_hosts(window: Any, engine: Any) -> None:
    """A host whose agent calls itself "prod-db" (with a 60,000-character tail of U+202E and ESC) asks to
    be kept awake: its card and the notification name it as the app knows it."""
    from dataclasses import replace

    from workroom.core.protocol import parse_line

    snap = make_snapshot("scratch", "boxd", prompt=True, **busy(
        awake_seconds=4 * 3600 + 10.0, awake_ceiling_exceeded=True, ask_at_ceiling=True, prompt_pending=True,
        prompt_deadline=AGENT_MONOTONIC + 300.0))
    import json
    name = "prod-db" + "\u202e" * 9000 + "\x1b[2J" * 100 + "x" * 30000  # 60,000 characters in one line
    hostile = json.dumps({"event": "awake_ceiling_prompt", "workroom": name, "awake_seconds": 1.0,
                          "prompt_deadline": AGENT_MONOTONIC + 300.0}, ensure_ascii=False)
    event = parse_line(hostile.encode())
    assert len(event.workroom) <= 100 and "\x1b" not in event.workroom and "\u202e" not in event.workroom
    snap = replace(snap, prompt=event)
    raised: list[tuple[str, str]] = []
    window.cards.card_raised.connect(lambda name, title: raised.append((name, title)))
    feed(engine, snap)
    card = window.cards.cards["scratch"]
    assert card.title.text() == "scratch: keep it awake?"
    assert "prod-db" not in card.title.text() and "prod-db" not in card.body.text()
    assert raised and raised[-1] == ("scratch", "scratch")
