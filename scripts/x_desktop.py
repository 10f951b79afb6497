"""A throwaway Linux desktop: Xvfb on a free display number, openbox (window manager) and trayer (system tray
host, a dark panel at the top right). Used by scripts/render_screenshots.py and tests/gui/test_real_desktop.py,
so the screenshots and the real-desktop test see the same desktop.

Xvfb picks its own free display number (`-displayfd`), so parallel runs never collide. Each start is waited
for with a bound (the WM's _NET_SUPPORTING_WM_CHECK, trayer's panel window), and every process is stopped by
its PID afterwards.

    sudo apt-get install xvfb openbox trayer x11-utils
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

TOOLS = ("Xvfb", "openbox", "trayer", "xprop", "xwininfo")
PANEL_TINT = 0x2B2B2B  # trayer's panel colour: a dark panel, where a dark-only tray icon would vanish
PANEL_HEIGHT = 26


class DesktopUnavailable(RuntimeError):
    """A tool is missing or did not start in time; the message says which."""


@dataclass
class Desktop:
    display: str
    env: dict[str, str]
    screen: tuple[int, int]
    pids: list[int] = field(default_factory=list)

    def x(self, *argv: str, timeout: float = 10) -> str:
        """Run an X client (xprop, xwininfo...) against this display; its stdout ('' if it failed)."""
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout, check=False)
        return done.stdout if done.returncode == 0 else ""


def missing_tools() -> list[str]:
    return [tool for tool in TOOLS if shutil.which(tool) is None]


def _wait(condition: Callable[[], bool], timeout: float, what: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            raise DesktopUnavailable(f"{what}: the process exited ({proc.returncode})")
        if time.monotonic() > deadline:
            raise DesktopUnavailable(f"{what}: not ready after {timeout:.0f} s")
        time.sleep(0.05)


def _start_xvfb(screen: tuple[int, int], timeout: float) -> tuple[subprocess.Popen[bytes], str]:
    read, write = os.pipe()
    try:
        proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", f"{screen[0]}x{screen[1]}x24",
                                 "-nolisten", "tcp"], pass_fds=(write,),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        os.close(write)
    number = b""
    deadline = time.monotonic() + timeout
    try:
        os.set_blocking(read, False)
        while not number.endswith(b"\n"):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                proc.wait(5)
                raise DesktopUnavailable("Xvfb did not start")
            try:
                chunk = os.read(read, 16)
            except BlockingIOError:
                time.sleep(0.05)
                continue
            if not chunk:
                time.sleep(0.05)
            number += chunk
    finally:
        os.close(read)
    return proc, f":{int(number)}"


@contextmanager
def desktop(screen: tuple[int, int] = (1440, 900), timeout: float = 15) -> Iterator[Desktop]:
    """Xvfb + openbox + trayer; yields the Desktop (its DISPLAY in `env`). Raises DesktopUnavailable."""
    missing = missing_tools()
    if missing:
        raise DesktopUnavailable(f"missing {', '.join(missing)}: sudo apt-get install xvfb openbox trayer x11-utils")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        xvfb, display = _start_xvfb(screen, timeout)
        procs.append(xvfb)
        env = {**os.environ, "DISPLAY": display}
        env.pop("QT_QPA_PLATFORM", None)
        env.pop("WAYLAND_DISPLAY", None)
        here = Desktop(display, env, screen)
        wm = subprocess.Popen(["openbox"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(wm)
        _wait(lambda: "window id #" in here.x("xprop", "-root", "_NET_SUPPORTING_WM_CHECK"), timeout,
              "openbox", wm)
        tray = subprocess.Popen(["trayer", "--edge", "top", "--align", "right", "--widthtype", "request",
                                 "--height", str(PANEL_HEIGHT), "--SetDockType", "true", "--transparent", "false",
                                 "--tint", f"0x{PANEL_TINT:06x}", "--expand", "true"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(tray)
        _wait(lambda: '"panel"' in here.x("xwininfo", "-root", "-tree"), timeout, "trayer", tray)
        here.pids = [p.pid for p in procs]
        yield here
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
