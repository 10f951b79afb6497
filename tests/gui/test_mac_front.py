"""A menu-bar app must bring itself to the front for what it opens, and hold off App Nap while a prompt
deadline is pending. The Objective-C bridge is faked (no Cocoa here: the only fake); the widgets, the app
wiring and the dialogs are real (docs/macos.md)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from gui_helpers import wait_for
from PySide6.QtWidgets import QApplication
from workroom.core.questions import HostKeyQuestion
from workroom.platform import macos
from workroom.ui.app import WorkroomApp
from workroom.ui.host_key_dialog import HostKeyDialog, ask_host_key

pytestmark = pytest.mark.gui


class RecordingBridge:
    def __init__(self) -> None:
        self.selectors: list[str] = []

    def cls(self, name: str) -> int:
        return 1

    def string(self, text: str) -> int:
        return 2

    def msg(self, receiver: int, selector: str, *args: object) -> int:
        macos.signature(selector, args)  # declared, as the real bridge wants it
        self.selectors.append(selector)
        return 3


@pytest.fixture
def bridge(monkeypatch: pytest.MonkeyPatch) -> RecordingBridge:
    fake = RecordingBridge()
    monkeypatch.setattr(macos, "_bridge", fake)
    return fake


QUESTION = HostKeyQuestion("10.1.2.3", 2222, "ssh-ed25519", "SHA256:q8H0bQ0qK1m1m2oXkz4vU5y3d2C8rB3a4Qe7nYt9wXc")


def test_a_host_key_question_from_a_background_connect_comes_to_the_front(qapp: Any, run: Any,
                                                                         bridge: RecordingBridge) -> None:
    async def ask() -> bool:
        answer = asyncio.ensure_future(ask_host_key("build-box", QUESTION))
        dialog = await wait_for(lambda: next((w for w in QApplication.topLevelWidgets()
                                              if isinstance(w, HostKeyDialog) and w.isVisible()), None),
                                5, "the host-key dialog")
        assert "activateIgnoringOtherApps:" in bridge.selectors
        dialog.cancel_button.click()
        return await answer

    assert run(ask()) is False


def test_opening_the_window_from_the_menu_bar_activates_the_app(engine: Any, qtbot: Any,
                                                                bridge: RecordingBridge) -> None:
    app = WorkroomApp(engine)
    qtbot.addWidget(app.window)
    try:
        app.tray.open_requested.emit()
        assert bridge.selectors[-1] == "activateIgnoringOtherApps:"
        assert app.window.isVisible()
        bridge.selectors.clear()
        app.tray.settings_requested.emit()
        assert "activateIgnoringOtherApps:" in bridge.selectors
    finally:
        app.window.cards.timer.stop()


def test_app_nap_is_held_while_a_prompt_is_pending_and_released_after(engine: Any, qtbot: Any,
                                                                     bridge: RecordingBridge) -> None:
    from demo_states import every_state, make_snapshot
    from gui_helpers import feed

    app = WorkroomApp(engine)
    qtbot.addWidget(app.window)
    try:
        prompted = every_state()["asking"]
        assert prompted.prompt is not None
        feed(engine, prompted)
        assert bridge.selectors.count("beginActivityWithOptions:reason:") == 1
        feed(engine, prompted)  # still pending: one activity, not two
        assert bridge.selectors.count("beginActivityWithOptions:reason:") == 1
        feed(engine, make_snapshot(prompted.host.name, "boxd"))  # answered: idle, no prompt
        assert bridge.selectors.count("endActivity:") == 1 and app.app_nap.token is None
    finally:
        app.window.cards.timer.stop()


def test_a_system_quit_closes_every_session_before_the_loop_stops(engine: Any, qtbot: Any, run: Any) -> None:
    """Qt's Quit event is what Cmd-Q, logout and Activity Monitor's Quit become on macOS."""
    from PySide6.QtCore import QCoreApplication, QEvent, QTimer

    app = WorkroomApp(engine)
    qtbot.addWidget(app.window)
    closed: list[bool] = []
    real_close = engine.close

    async def close() -> None:
        await real_close()
        closed.append(True)

    engine.close = close
    try:
        app.start(connect=False)
        QTimer.singleShot(100, lambda: QCoreApplication.sendEvent(QCoreApplication.instance(),
                                                                    QEvent(QEvent.Type.Quit)))
        run(app.run_until_quit(), timeout=20)
        assert closed == [True]
        assert run(asyncio.sleep(0, result="loop still runs")) == "loop still runs"
    finally:
        app.window.cards.timer.stop()
