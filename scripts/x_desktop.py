"""A throwaway Linux desktop: Xvfb on a free display number, openbox (window manager) and trayer (system tray
host, a dark panel at the top right). Used by scripts/render_screenshots.py and tests/gui/test_real_desktop.py,
so the screenshots and the real-desktop test see the same desktop.

Xvfb picks its own free display number (`-displayfd`), so parallel runs never collide. Each start is waited
for with a bound (the WM's _NET_SUPPORTING_WM_CHECK, trayer's panel window), and every process is stopped by
its PID afterwards.

    sudo apt-get install xvfb openbox trayer x11-utils   (wmctrl too, to close a window as its close button does)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

TOOLS = ("Xvfb", "openbox", "trayer", "xprop", "xwininfo")
PANEL_TINT = 0x2B2B2B  # trayer's panel colour: a dark panel, where a dark-only tray icon would vanish
PANEL_HEIGHT = 26


# A private session bus (`dbus-daemon --config-file`): one socket of its own, anyone on it may own any name
# (the notification server, the Secret Service). {socket} is the socket's path.
SESSION_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


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

    def pid_of(self, window: int) -> int | None:
        """The process that owns `window` (its _NET_WM_PID, which Qt sets on each of its windows)."""
        match = re.search(r"= (\d+)", self.x("xprop", "-id", hex(window), "_NET_WM_PID"))
        return int(match.group(1)) if match else None

    def root_windows(self, name: str) -> list[int]:
        """A WINDOW-list property of the root window (_NET_CLIENT_LIST_STACKING: bottom to top)."""
        text = self.x("xprop", "-root", name)
        return [int(w, 16) for w in re.findall(r"0x[0-9a-f]+", text.split("#", 1)[1])] if "#" in text else []

    def managed_windows(self, pid: int) -> list[int]:
        """The windows of process `pid` that the window manager manages now (mapped top-levels: a hidden or
        closed window leaves _NET_CLIENT_LIST), bottom to top."""
        return [w for w in self.root_windows("_NET_CLIENT_LIST_STACKING") if self.pid_of(w) == pid]

    def active_window(self) -> int | None:
        active = self.root_windows("_NET_ACTIVE_WINDOW")
        return active[0] if active and active[0] else None

    def viewable(self, window: int) -> bool:
        return "Map State: IsViewable" in self.x("xwininfo", "-id", hex(window))

    def tray_icons(self, pid: int) -> list[int]:
        """The windows of process `pid` embedded in trayer's panel (XEmbed): the tray icons it shows there."""
        tree = self.x("xwininfo", "-root", "-tree")
        panel = next((line.split()[0] for line in tree.splitlines() if '"panel": ("panel" "trayer")' in line), None)
        if panel is None:
            return []
        inside = re.findall(r"^\s+(0x[0-9a-f]+) ", self.x("xwininfo", "-tree", "-id", panel), re.M)
        return [w for w in (int(i, 16) for i in inside) if self.pid_of(w) == pid]


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
        procs.append(_start_openbox(here, timeout))
        # A panel reserves its strip (a strut), as desktop panels do: notifications and maximised windows
        # stay below it instead of covering the tray.
        tray = subprocess.Popen(["trayer", "--edge", "top", "--align", "right", "--widthtype", "request",
                                 "--height", str(PANEL_HEIGHT), "--SetDockType", "true", "--SetPartialStrut", "true",
                                 "--transparent", "false",
                                 "--tint", f"0x{PANEL_TINT:06x}", "--expand", "true"],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(tray)
        _wait(lambda: '"panel"' in here.x("xwininfo", "-root", "-tree"), timeout, "trayer", tray)
        here.pids = [p.pid for p in procs]
        yield here
    finally:
        stop_all(procs)


def _start_openbox(here: Desktop, timeout: float, tries: int = 3) -> subprocess.Popen[bytes]:
    """openbox on the display, up to `tries` times: in CI beside other tiers it now and then exits 1 at start
    (seen a few times in a hundred runs); what it said is kept for the message."""
    said = ""
    for _ in range(tries):
        with tempfile.TemporaryFile() as err:
            wm = subprocess.Popen(["openbox"], env=here.env, stdout=subprocess.DEVNULL, stderr=err)
            try:
                _wait(lambda: "window id #" in here.x("xprop", "-root", "_NET_SUPPORTING_WM_CHECK"), timeout,
                      "openbox", wm)
                return wm
            except DesktopUnavailable as error:
                stop_all([wm])
                err.seek(0)
                said = f"{error}: {err.read()[-500:].decode(errors='replace').strip() or 'nothing on stderr'}"
    raise DesktopUnavailable(said)


def stop_all(procs: Sequence[subprocess.Popen[Any]]) -> None:
    """Stop what was started, the last started first: SIGTERM, then SIGKILL after 5 s; each one reaped."""
    for proc in reversed(procs):
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
