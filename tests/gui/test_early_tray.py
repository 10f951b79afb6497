"""The tray icon comes first (ui/early_tray.py, ui/main.py; docs/architecture.md "Start-up, in order").

On a real X desktop (Xvfb, openbox, trayer: scripts/x_desktop.py), the real app as its own process
(tests/gui/early_tray_driver.py adds only a probe that reads sys.modules and the tray icons when the icon's X
window is first exposed, and when the window is): the icon is in trayer's panel before the engine is
imported, with "starting…" and Quit; the app's tray adopts that same icon (one QSystemTrayIcon, the same X
window, never hidden in between); Quit from the starting menu ends the app cleanly, before and while the
engine loads; a start-up error takes the icon away and shows its dialog. Offscreen, in this process: the
adoption itself, a quit while starting, an engine that fails to load on its thread. No timing is asserted.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from gui_helpers import agent_pids_under, desktop_app_env, kill_agents_under, poll_until, run_app_answering_dialogs
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QSystemTrayIcon
from workroom.ui.early_tray import QUIT_TEXT, STARTING_LINE, STARTING_TOOLTIP, EarlyTray
from x_desktop import Desktop

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ENGINE = "workroom.sessions.engine"


def _launch(home: Path, x: Desktop, report: Path, mode: str = "run") -> subprocess.Popen[str]:
    env = desktop_app_env(x)
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT / "app"), str(ROOT / "agent_bundle")]), WORKROOM_HOME=str(home))
    return subprocess.Popen([sys.executable, str(HERE / "early_tray_driver.py"), str(report), mode], env=env,
                            text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _facts(path: Path, proc: subprocess.Popen[str] | None = None) -> dict[str, Any]:
    poll_until(f"the probe's {path.name}", lambda: path.exists() and path.stat().st_size > 0,
               [proc] if proc is not None else [])
    facts: dict[str, Any] = json.loads(path.read_text())
    return facts


def _stop(proc: subprocess.Popen[str]) -> str:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # the app's orderly quit
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    return proc.stderr.read() if proc.stderr else ""


def _log(home: Path) -> str:
    path = home / "logs" / "workroom.log"
    return path.read_text(errors="replace") if path.exists() else ""


@pytest.mark.linux(reason="an X11 desktop")
def test_the_tray_shows_before_the_engine_loads_and_the_app_adopts_it(x_session: Desktop, tmp_path: Path) -> None:
    home, report = tmp_path / "home", tmp_path / "facts.json"
    x = x_session
    proc = _launch(home, x, report)
    try:
        early = _facts(report, proc)
        # When QSystemTrayIcon.show() made the icon's widget visible, nothing of the engine or the ui was loaded;
        # when the tray host had embedded and exposed it, the engine was not loaded yet either (at most
        # begun on its thread: the start waits up to 0.3 s for the tray before it begins).
        assert early["loaded_at_show"] == {name: "no" for name in early["loaded_at_show"]}, early
        assert early["loaded"][ENGINE] != "yes" and early["loaded"]["workroom.ui.app"] == "no", early
        assert early["tray_available"] and early["icons"] == 1 and early["visible"] == [True], early
        assert early["tooltip"] == STARTING_TOOLTIP
        assert early["menu"] == [STARTING_LINE, QUIT_TEXT] and early["menu_name"] == "early_tray_menu"
        # ... and that X window is the one trayer embedded (XEmbed): the icon a user sees.
        icon_window = early["tray_window"]
        assert poll_until("the icon in trayer's panel", lambda: x.tray_icons(proc.pid), [proc]) == [icon_window]

        # A first run: the window comes up; the app's tray is the same QSystemTrayIcon, in the same X window,
        # never hidden in between, now with the app's menu and tooltip.
        up = _facts(report.with_suffix(".up.json"), proc)
        assert up["loaded"][ENGINE] == "yes"
        assert up["icons"] == 1 and up["same_object"] and up["visible"] == [True], up
        assert up["tray_window"] == icon_window and up["tray_hidden"] == 0, up
        assert up["menu_name"] == "tray_menu" and up["tooltip"].startswith("Workroom: "), up
        poll_until("the window managed by the WM", lambda: up["window_id"] in x.managed_windows(proc.pid), [proc])
        assert x.tray_icons(proc.pid) == [icon_window]  # one icon, the first one
    finally:
        err = _stop(proc)
        kill_agents_under(home)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "Traceback" not in _log(home), err


@pytest.mark.linux(reason="an X11 desktop")
@pytest.mark.parametrize("when", ["quit", "quit-loading"], ids=["before-the-engine", "while-the-engine-loads"])
def test_quit_from_the_starting_menu_quits_cleanly(when: str, x_session: Desktop, tmp_path: Path) -> None:
    from workroom import single_instance
    from workroom.paths import app_paths

    home, report = tmp_path / "home", tmp_path / "facts.json"
    proc = _launch(home, x_session, report, when)
    try:
        early = _facts(report, proc)
        assert early["menu"] == [STARTING_LINE, QUIT_TEXT]
        proc.wait(60)
    finally:
        err = _stop(proc)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    if when == "quit-loading":  # the Quit came while the engine's import ran on its thread
        assert _facts(report.with_suffix(".quit.json"))["engine_at_quit"] == "importing"
    # The app was never built: no ui beyond the early tray was loaded, no host connected, no agent started.
    gone = _facts(report.with_suffix(".exit.json"))["loaded"]
    assert gone["workroom.ui.app"] == "no" and gone["workroom.ui.main_window"] == "no", gone
    assert agent_pids_under(home) == []
    text = _log(home)
    assert "quit while starting (from the tray's menu)" in text and "Workroom stopped" in text, text
    assert "Traceback" not in text and not re.search(r": (connecting|live)\b", text), text
    assert x_session.tray_icons(proc.pid) == []
    # The single-instance lock went with it: the next launch is the app, not a hand-over.
    lock = single_instance.claim(app_paths({"WORKROOM_HOME": str(home)}))
    assert isinstance(lock, single_instance.InstanceLock)
    lock.release()


@pytest.mark.linux(reason="an X11 desktop")
@pytest.mark.skipif(shutil.which("wmctrl") is None, reason="needs wmctrl (./dev setup installs it)")
def test_a_start_up_error_takes_the_icon_away_and_shows_its_dialog(x_session: Desktop, tmp_path: Path) -> None:
    """The agent bundle cannot be built (a folder where the app's cache keeps it): the engine's thread fails,
    and the user sees the dialog that names the log, with no "starting…" icon left beside it."""
    from workroom.agent_bundle import agent_source_root, source_digest
    from workroom.paths import app_paths

    home, report = tmp_path / "home", tmp_path / "facts.json"
    cache = app_paths({"WORKROOM_HOME": str(home)}).cache_dir
    (cache / f"wr-agent-{source_digest(agent_source_root())[:20]}.pyz").mkdir(parents=True)
    x = x_session
    proc = _launch(home, x, report)
    try:
        _facts(report, proc)  # the icon was shown first

        def dialog() -> int | None:
            for window in x.managed_windows(proc.pid):
                if "No agent to push" in x.x("xprop", "-id", hex(window), "_NET_WM_NAME"):
                    return window
            return None

        # The engine's thread imports the engine before it fails: past 30 s once on a loaded 2-core machine.
        box = poll_until("the start-up error's dialog", dialog, [proc], timeout=90)
        assert x.tray_icons(proc.pid) == []
        subprocess.run(["wmctrl", "-i", "-c", hex(box)], env=x.env, check=True, timeout=10)
        proc.wait(30)
    finally:
        err = _stop(proc)
        kill_agents_under(home)
    assert proc.returncode == 1, err
    text = _log(home)
    assert "start-up: tray icon shown" in text and "start-up failed: No agent to push" in text, text
    assert "workroom-app: No agent to push:" in err, err


# -- offscreen, in this process -----------------------------------------------------------------------


def test_the_tray_controller_adopts_the_early_icon(engine: Any, qtbot: Any) -> None:
    from workroom.resources import app_icon
    from workroom.ui.app import WorkroomApp
    from workroom.ui.tray import TrayController

    early = EarlyTray(app_icon())
    assert early.icon.toolTip() == STARTING_TOOLTIP and early.icon.contextMenu() is early.menu
    trigger = QSystemTrayIcon.ActivationReason.Trigger
    early.icon.activated.emit(trigger)  # a click on the starting icon: the window is wanted once there is one
    assert early.window_asked is (sys.platform != "darwin")  # a Mac's click opens the menu instead
    early.window_asked = False
    app = WorkroomApp(engine, tray_icon=early.icon)
    qtbot.addWidget(app.window)
    early.handed_over(app.request_quit)
    try:
        assert app.tray.icon is early.icon
        assert early.icon.contextMenu() is app.tray.menu
        assert early.icon.toolTip().startswith("Workroom: ")
        early.icon.activated.emit(trigger)  # now the app's tray answers a click, not the starting one
        assert not early.window_asked
        assert not app.quit_event.is_set()
        early.quit_action.trigger()  # the starting menu was open while the app was built: Quit quits the app
        assert app.quit_event.is_set() and not early.quit_asked
        assert TrayController().icon is not early.icon  # without one it makes its own
    finally:
        app.window.cards.timer.stop()
        app.tray.icon.hide()


def test_quit_while_starting_builds_no_app(run: Any, wr_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workroom.paths import app_paths
    from workroom.resources import app_icon
    from workroom.ui import main

    monkeypatch.setenv("WORKROOM_LOGIN_ENV", "0")
    early = EarlyTray(app_icon())  # offscreen there is no tray: never shown, its menu still works
    assert not early.show()
    QTimer.singleShot(0, early.quit_action.trigger)
    assert run(main.start_app(True, early)) is None
    assert early.quit_asked
    assert not app_paths().hosts_file.exists()  # no engine was made (it writes the first run's hosts)


def test_an_engine_that_fails_to_load_reaches_the_dialog(qapp: Any, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent bundle is read on the engine's thread; its UserError still reaches the start-up dialog."""
    from workroom import agent_bundle

    def no_bundle(*_args: object, **_kwargs: object) -> object:
        raise agent_bundle.AgentBundleError("the agent bundle is gone (test)")

    monkeypatch.setattr(agent_bundle, "locate_agent_bundle", no_bundle)
    home = tmp_path / "wrhome"
    monkeypatch.setenv("WORKROOM_HOME", str(home))
    monkeypatch.setenv("WORKROOM_LOGIN_ENV", "0")
    code, seen = run_app_answering_dialogs(home)
    assert code == 1
    assert len(seen) == 1 and seen[0][0] == "No agent to push", seen
    assert "the agent bundle is gone (test)" in seen[0][1]
