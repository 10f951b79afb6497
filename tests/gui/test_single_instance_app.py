"""A second launch of the real app (`workroom-app`, offscreen Qt) for the same home shows the first one's window
and exits; a launch for another home runs beside it. Real processes, a real local agent each."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from gui_helpers import kill_agents_under
from PySide6.QtCore import Qt
from workroom import single_instance
from workroom.paths import app_paths

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]
STARTED = "starting (Python"


def _env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONPATH=os.pathsep.join([str(ROOT / "app"), str(ROOT / "agent_bundle")]),
               WORKROOM_HOME=str(home), QT_QPA_PLATFORM="offscreen", WORKROOM_LOGIN_ENV="0")
    return env


def _launch(home: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "workroom.ui.main"], env=_env(home), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _log(home: Path) -> str:
    path = home / "logs" / "workroom.log"
    return path.read_text(errors="replace") if path.exists() else ""


def _wait_serving(home: Path, proc: subprocess.Popen[str], timeout: float = 30.0) -> None:
    sock = single_instance.instance_folder(app_paths({"WORKROOM_HOME": str(home)})) / single_instance.SOCKET_NAME
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        if sock.exists() and STARTED in _log(home):
            return
        time.sleep(0.1)
    raise AssertionError(f"the app never started serving:\n{_log(home)}")


def _quit(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_a_second_launch_shows_the_first_and_ends(tmp_path: Path) -> None:
    home, other = tmp_path / "home", tmp_path / "other"
    first = _launch(home)
    beside = None
    try:
        _wait_serving(home, first)
        second = subprocess.run([sys.executable, "-m", "workroom.ui.main"], env=_env(home), text=True,
                                capture_output=True, timeout=60)
        assert second.returncode == single_instance.EXIT_HANDED_OVER, second.stderr
        assert "already running for this home" in second.stderr
        assert "another launch of this app: showing the window" in _log(home)
        assert _log(home).count(STARTED) == 1  # one engine: the second never started its own
        assert first.poll() is None
        beside = _launch(other)  # another home: its own app, side by side
        _wait_serving(other, beside)
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
