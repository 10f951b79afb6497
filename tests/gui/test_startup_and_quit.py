"""Failures leave a trace: a logged run writes the log file, a start-up error reaches a dialog naming the
log, and a quit by signal closes every session before the loop stops (the real app, offscreen Qt)."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from gui_helpers import kill_agents_under
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

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
    seen: list[tuple[str, str, str]] = []

    def answer() -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            seen.append((box.windowTitle(), box.text(), box.informativeText()))
            box.accept()
        else:
            QTimer.singleShot(50, answer)

    QTimer.singleShot(50, answer)
    try:
        code = main.run_app()
    finally:
        asyncio.set_event_loop(None)
        kill_agents_under(home)
        root = logging.getLogger()
        for handler in [h for h in root.handlers if getattr(h, "workroom_log", False)]:
            root.removeHandler(handler)
            handler.close()
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
