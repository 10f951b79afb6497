"""Helpers for the GUI tests: waiting on the qasync loop, feeding snapshots, cleaning up agents by PID."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from fixtures.procs import boot_out_launch_agents_naming, pids_naming

T = TypeVar("T")


def agent_pids_under(home: Path) -> list[int]:
    """PIDs of processes whose command line names a path under `home` (the agents this test started)."""
    return pids_naming(str(home))


def kill_agents_under(home: Path) -> None:
    boot_out_launch_agents_naming(str(home))  # macOS: launchd would restart them
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = agent_pids_under(home)
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 3
        while pids and time.monotonic() < deadline:
            pids = [p for p in pids if _alive(p)]
            time.sleep(0.05)


def _alive(pid: int) -> bool:
    """Not gone and not a zombie (/proc on Linux, `ps` elsewhere)."""
    if os.path.isdir("/proc/self"):
        try:
            return not Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].startswith("Z")
        except (OSError, IndexError):
            return False
    out = subprocess.run(["ps", "-o", "state=", "-p", str(pid)], capture_output=True, text=True, timeout=10)
    return out.returncode == 0 and not out.stdout.strip().startswith("Z")


def desktop_app_env(x: Any) -> dict[str, str]:
    """The environment for the app as its own process on a real X desktop (`x`, a scripts/x_desktop.Desktop):
    Qt's X platform, no D-Bus session bus (the tray icon goes to the X tray by XEmbed, notifications to the
    balloon), and the login shell's environment not read (WORKROOM_LOGIN_ENV=0)."""
    env = dict(x.env)
    env.update(QT_QPA_PLATFORM="xcb", WORKROOM_LOGIN_ENV="0")
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)
    env.pop("WORKROOM_HOME", None)
    return env


def poll_until(what: str, condition: Callable[[], T], procs: Sequence[subprocess.Popen[Any]] = (),
               timeout: float = 30.0) -> T:
    """Off any loop: `condition()` once truthy (its value), checked every 0.1 s; fails naming `what` after
    `timeout` s, or as soon as one of `procs` (the app processes it waits on) has exited."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        for proc in procs:
            assert proc.poll() is None, f"the app exited ({proc.returncode}) waiting for {what}"
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {what}"
        time.sleep(0.1)


async def wait_for(condition: Callable[[], Any], timeout: float, what: str, step: float = 0.05) -> Any:
    """Poll `condition` on the running loop until truthy; fail naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(step)


def feed(engine: Any, snapshot: Any) -> None:
    """Hand a snapshot to the app exactly as a HostSession does: through the engine's listeners."""
    for listener in list(engine.listeners):
        listener(snapshot)


def open_dialog(kind: type) -> Any:
    """The visible top-level widget of type `kind`, or None."""
    from PySide6.QtWidgets import QApplication

    for widget in QApplication.topLevelWidgets():
        if isinstance(widget, kind) and widget.isVisible():
            return widget
    return None


def region_contrast(image: Any, x0: int, y0: int, x1: int, y1: int) -> float:
    """Contrast of the text drawn in a region of `image` (a QImage): its commonest pixel (the background)
    against the pixel that differs most from it (the ink of the glyphs). WCAG's ratio, 1..21."""
    from collections import Counter

    from PySide6.QtGui import QColor, QImage
    from workroom.ui import styles

    rgb = image.convertToFormat(QImage.Format.Format_RGB32)
    xs = range(max(0, x0), min(rgb.width(), x1))
    ys = range(max(0, y0), min(rgb.height(), y1))
    pixels = Counter(rgb.pixel(x, y) for y in ys for x in xs)
    assert len(pixels) > 1, f"nothing drawn in {x0},{y0}-{x1},{y1}"
    background = QColor.fromRgb(pixels.most_common(1)[0][0])
    return max(styles.contrast_ratio(QColor.fromRgb(p), background) for p in pixels)


class OrphanJob:
    """A job started the way a user's would be: not a child of the app (the local agent leaves the app's own
    process tree out once the app subscribes, and here the app is the test process), so it is handed to init
    through a shell that exits at once. By default CPU-bound; `argv` for another kind of work."""

    def __init__(self, argv: list[str] | None = None) -> None:
        argv = argv or [sys.executable, "-c", "while True: pass"]
        started = subprocess.run(["sh", "-c", '"$@" </dev/null >/dev/null 2>&1 & echo $!', "sh", *argv],
                                 capture_output=True, text=True, check=True, timeout=10)
        self.pid = int(started.stdout.strip())

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)


def run_app_answering_dialogs(home: Path) -> tuple[int, list[tuple[str, str, str]]]:
    """`ui.main.run_app()` here (offscreen), each modal message box it shows accepted as it comes; returns the
    exit code and the boxes' (title, text, informative text). Afterwards the app's agents under `home` are
    killed and its log handlers removed (so the next test's log is its own)."""
    import asyncio
    import logging

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox
    from workroom.ui import main

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
    return code, seen
