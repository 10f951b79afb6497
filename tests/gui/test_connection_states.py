"""Every connection state is one row (core.connection.CONNECTION_SPECS), and every face shows that row: the
row's words in the table, the same Connect words and Disconnect in the tray submenu, the row's right-click
menu and the detail panel, and the click does what the words said. A state without a row, or a face with a
set of its own, fails here."""

from __future__ import annotations

from typing import Any

import pytest
from demo_states import make_snapshot
from gui_helpers import feed
from workroom.core.connection import CONNECT_WORDS, CONNECTION_SPECS, ConnectAction, ConnectionState
from workroom.ui import row_text

pytestmark = pytest.mark.gui


def test_every_state_has_its_row() -> None:
    assert set(CONNECTION_SPECS) == set(ConnectionState)
    for state, spec in CONNECTION_SPECS.items():
        assert spec.state is state and spec.words
        assert not (spec.live and (spec.waiting or spec.unreachable)), state
        assert spec.connect is ConnectAction.NONE or not spec.live, state  # nothing to connect while live


@pytest.mark.parametrize("state", list(ConnectionState))
def test_every_face_shows_the_states_row(app: Any, engine: Any, state: ConnectionState,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    spec = CONNECTION_SPECS[state]
    snapshot = make_snapshot("box1", "boxd", state)
    feed(engine, snapshot)
    window = app.window
    shown = window.model.snapshot("box1")
    assert row_text.connection_text(shown, now_monotonic=0.0).startswith(spec.words)

    words = CONNECT_WORDS[spec.connect]
    menu = app.tray.host_menus["box1"]
    assert menu.connect_action.isVisible() is (spec.connect is not ConnectAction.NONE)
    if words:
        assert menu.connect_action.text() == words
    assert menu.disconnect_action.isVisible() is spec.disconnect

    row_menu = [a.text() for a in window.row_menu("box1").actions() if not a.isSeparator()]
    assert (words in row_menu) is bool(words), row_menu
    assert ("Disconnect" in row_menu) is spec.disconnect, row_menu

    window.select_host("box1")
    detail = window.detail
    assert detail.connect_button.isHidden() is not (spec.connect is not ConnectAction.NONE)
    if words:
        assert detail.connect_button.text() == words
    assert detail.disconnect_button.isHidden() is not spec.disconnect

    # The click does what the words said: wake only on "Wake and connect", retry on "Retry now".
    done: list[tuple[str, Any]] = []
    monkeypatch.setattr(app.controller, "connect_host", lambda name, **kw: done.append(("connect", kw)))
    monkeypatch.setattr(app.controller, "retry_now", lambda name: done.append(("retry", None)))
    monkeypatch.setattr(app.controller, "_session", lambda name: type("S", (), {"connection": shown.connection})())
    app.controller.connect_clicked("box1")
    expected = {ConnectAction.WAKE: [("connect", {"wake": True})], ConnectAction.RETRY: [("retry", None)],
                ConnectAction.CONNECT: [("connect", {"wake": False})], ConnectAction.NONE: []}[spec.connect]
    assert done == expected
