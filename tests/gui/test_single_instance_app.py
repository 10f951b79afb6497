"""A second launch of the real app (`python -m workroom.ui.main`, as `workroom-app` runs) for the same home, on a
real X desktop (Xvfb, openbox as the window manager, trayer as the tray host; scripts/x_desktop.py): it exits 0
and the first app's closed window comes back mapped, on top and active, above another app's window; the tray
still holds one icon of the first app (not two); the first app's log shows one engine. A launch for another
home runs beside it. Checked from outside the app with X tools (xprop, xwininfo; wmctrl closes a window as its
close button does). Real processes, a real local agent each, every one stopped by its PID."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from gui_helpers import desktop_app_env, kill_agents_under, poll_until
from PySide6.QtCore import Qt
from workroom import single_instance
from workroom.paths import app_paths
from x_desktop import Desktop

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]
STARTED = "starting (Python"


def _env(home: Path, x: Desktop) -> dict[str, str]:
    env = desktop_app_env(x)
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT / "app"), str(ROOT / "agent_bundle")]), WORKROOM_HOME=str(home))
    return env


def _launch(home: Path, x: Desktop) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "workroom.ui.main"], env=_env(home, x), text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _log(home: Path) -> str:
    path = home / "logs" / "workroom.log"
    return path.read_text(errors="replace") if path.exists() else ""


def _serving(home: Path) -> bool:
    sock = single_instance.instance_folder(app_paths({"WORKROOM_HOME": str(home)})) / single_instance.SOCKET_NAME
    return sock.exists() and STARTED in _log(home)


def _quit(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _second_launch(home: Path, x: Desktop) -> None:
    second = subprocess.run([sys.executable, "-m", "workroom.ui.main"], env=_env(home, x), text=True,
                            capture_output=True, timeout=60)
    assert second.returncode == single_instance.EXIT_HANDED_OVER, second.stderr
    assert "already running for this home" in second.stderr


@pytest.mark.linux(reason="an X11 desktop")
@pytest.mark.skipif(shutil.which("wmctrl") is None, reason="needs wmctrl (./dev setup installs it)")
def test_a_second_launch_raises_the_first_and_ends(x_session: Desktop, tmp_path: Path) -> None:
    home, other = tmp_path / "home", tmp_path / "other"
    x = x_session
    first = _launch(home, x)
    beside = None
    try:
        # A first run: the window opens and the icon sits in the tray. The user closes the window (its close
        # button: the WM's WM_DELETE_WINDOW); the app stays in the tray.
        window = poll_until("the first app's window managed by the WM", lambda: x.managed_windows(first.pid),
                            [first])[0]
        poll_until("the first app's tray icon in trayer's panel", lambda: x.tray_icons(first.pid), [first])
        poll_until("the first app serving later launches", lambda: _serving(home), [first])
        subprocess.run(["wmctrl", "-i", "-c", hex(window)], env=x.env, check=True, timeout=10)
        poll_until("the closed window unmapped",
                   lambda: not x.viewable(window) and not x.managed_windows(first.pid), [first], 10)
        assert len(x.tray_icons(first.pid)) == 1

        # Launched again: it hands over and ends; the closed window is back (the same one, not a second).
        _second_launch(home, x)
        shown = poll_until("the first app's window managed again", lambda: x.managed_windows(first.pid), [first], 10)
        assert shown == [window]
        assert x.viewable(window)
        assert "window state: Normal" in x.x("xprop", "-id", hex(window), "WM_STATE")

        # Another home's app runs beside it; its window opens over the first one's and takes the focus.
        beside = _launch(other, x)
        other_window = poll_until("the other home's window", lambda: x.managed_windows(beside.pid), [first, beside])[0]
        poll_until("the other home's window active", lambda: x.active_window() == other_window, [first, beside], 10)
        poll_until("the other home's app serving", lambda: _serving(other), [first, beside])
        stacking = x.root_windows("_NET_CLIENT_LIST_STACKING")
        assert stacking.index(other_window) > stacking.index(window)

        # Launched again while its window is open but covered: the window is raised and made active.
        _second_launch(home, x)
        poll_until("the first app's window active", lambda: x.active_window() == window, [first, beside], 10)
        stacking = x.root_windows("_NET_CLIENT_LIST_STACKING")
        assert stacking.index(window) > stacking.index(other_window), "not raised above the other app's window"

        # One icon in the tray per home, and one engine: the second launches never started their own.
        time.sleep(1.0)  # an icon a second launch made would have appeared by now
        assert len(x.tray_icons(first.pid)) == 1
        assert len(x.tray_icons(beside.pid)) == 1
        assert _log(home).count("another launch of this app: showing the window") == 2
        assert _log(home).count(STARTED) == 1
        assert first.poll() is None and beside.poll() is None
    finally:
        for proc in (first, beside):
            if proc is not None:
                _quit(proc)
        kill_agents_under(home)
        kill_agents_under(other)


def test_reopen_on_macos_shows_the_hidden_window(engine: Any, qtbot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The reopen itself needs a Mac (docs/macos.md); here its Qt side: the app turning active shows the window."""
    from workroom.ui.app import WorkroomApp

    app = WorkroomApp(engine)
    qtbot.addWidget(app.window)
    try:
        app.window.hide()
        # A context of its own: the home's teardown (which asks launchd on macOS) must see the real platform.
        with monkeypatch.context() as patch:
            patch.setattr(sys, "platform", "linux")
            app.on_application_state(Qt.ApplicationState.ApplicationActive)
            assert not app.window.isVisible()  # activation means nothing off macOS
            patch.setattr(sys, "platform", "darwin")
            app.on_application_state(Qt.ApplicationState.ApplicationInactive)
            assert not app.window.isVisible()
            app.on_application_state(Qt.ApplicationState.ApplicationActive)
            assert app.window.isVisible()
    finally:
        app.window.hide()
        app.tray.icon.hide()
