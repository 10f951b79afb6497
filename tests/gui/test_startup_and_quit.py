"""Failures leave a trace: a logged run writes the log file, a start-up error reaches a dialog naming the
log, and a quit by signal closes every session before the loop stops (the real app, offscreen Qt)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from gui_helpers import kill_agents_under, run_app_answering_dialogs

pytestmark = pytest.mark.gui
ROOT = Path(__file__).resolve().parents[2]


def test_startup_error_reaches_a_dialog_with_the_log_path(qapp: Any, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from workroom.ui import main

    home = tmp_path / "wrhome"
    home.mkdir()
    (home / "config").write_text("not a folder")  # the app cannot make its config folder: start-up fails
    monkeypatch.setenv("WORKROOM_HOME", str(home))
    monkeypatch.setenv("WORKROOM_LOGIN_ENV", "0")
    code, seen = run_app_answering_dialogs(home)
    assert code == 1
    log_file = home / "logs" / "workroom.log"
    assert seen == [("Workroom could not start", main.STARTUP_FAILED,
                     f"Details are in the log: {log_file}")]
    text = log_file.read_text()
    assert "start-up failed" in text and "Traceback" in text  # the details go to the log, not the dialog


def test_a_logged_run_writes_the_log_and_sigterm_closes_every_session(tmp_path: Path) -> None:
    home = tmp_path / "wrhome"
    env = dict(os.environ, WORKROOM_HOME=str(home), QT_QPA_PLATFORM="offscreen", WORKROOM_LOGIN_ENV="0",
               PYTHONPATH=os.pathsep.join([str(ROOT / "app"), str(ROOT / "agent_bundle")]))
    proc = subprocess.Popen([sys.executable, "-m", "workroom.ui.main"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    log_file = home / "logs" / "workroom.log"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if log_file.exists() and ": live" in log_file.read_text():
                break
            if proc.poll() is not None:
                break
            time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        kill_agents_under(home)
    text = log_file.read_text()
    assert proc.returncode == 0, err
    assert "Event loop stopped" not in err and "Traceback" not in err, err
    for line in ("starting", ": live", "quit requested by a signal", "quit: every session closed"):
        assert line in text, text
    assert (log_file.stat().st_mode & 0o777) == 0o600


def test_the_window_shows_before_a_slow_login_shell_and_hosts_connect_after(
        qapp: Any, run: Any, wr_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real start-up (`main.open_app`) with a login shell that takes 2 s: a test $SHELL script that
    sleeps, notes when it finished, then runs the command it was given with /bin/sh."""
    from workroom.core.connection import ConnectionState
    from workroom.ui import main

    finished = tmp_path / "shell-finished"
    shell = tmp_path / "slow-shell"
    shell.write_text(f'#!/bin/sh\nsleep 2\npython3 -c "import time; print(time.time())" > {finished}\n'
                     'shift 3\nexec /bin/sh -c "$1"\n')  # called as: SHELL -l -i -c COMMAND
    shell.chmod(0o755)
    monkeypatch.setenv("SHELL", str(shell))
    monkeypatch.delenv("WORKROOM_LOGIN_ENV", raising=False)
    first_connecting: dict[str, float] = {}

    async def go() -> tuple[float, float, float | None]:
        started = time.time()
        app = main.open_app(show_window=False)  # a first run: this computer, and the window (offscreen: no tray)

        def seen(snapshot: Any) -> None:
            if snapshot.connection.state is not ConnectionState.DISCONNECTED:
                first_connecting.setdefault(snapshot.host.name, time.time())

        app.controller.snapshot_changed.connect(seen)
        try:
            while not (app.window.isVisible() or app.tray.icon.isVisible()) and time.time() - started < 10:
                await asyncio.sleep(0.01)
            shown = time.time()
            assert not finished.exists(), "the window waited for the login shell"
            assert first_connecting == {}, "a host connected before the login shell's PATH was read"
            deadline = time.time() + 30
            while time.time() < deadline and not any(
                    s.connection.state in (ConnectionState.LIVE, ConnectionState.QUIET)
                    for s in app.controller.snapshots()):
                await asyncio.sleep(0.05)
            live = [s.host.name for s in app.controller.snapshots()
                    if s.connection.state in (ConnectionState.LIVE, ConnectionState.QUIET)]
            assert live, "no host connected after the login shell was read"
        finally:
            await app.close()
        return started, shown, float(finished.read_text()) if finished.exists() else None

    _started, shown, shell_done = run(go(), timeout=60)
    assert shell_done is not None
    assert shown < shell_done
    assert first_connecting and min(first_connecting.values()) >= shell_done
