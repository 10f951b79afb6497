"""The real app on a real X desktop, as a Linux user meets it: Xvfb with a window manager (openbox) and a tray
host (trayer, a dark panel), a private WORKROOM_HOME whose first run gives "this computer" as the only host
(its real local agent), in the light and in the dark palette (WORKROOM_PALETTE, ui/palette_override.py).

Checked from outside the app, with X tools and the X server's own pixels: the tray icon is embedded in
trayer's panel, the window is mapped and managed by the WM, the app's log says this computer went live, and
the state texts on screen read (WCAG AA 4.5:1). The app runs as its own process (tests/gui/
real_desktop_driver.py adds only a probe that reports where the window's widgets are), stopped by SIGTERM.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gui_helpers import agent_pids_under, region_contrast
from workroom.ui import styles
from x_desktop import Desktop, DesktopUnavailable, desktop

pytestmark = [pytest.mark.gui, pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="an X11 desktop (Linux)")]

HERE = Path(__file__).resolve().parent
AA_TEXT = 4.5
SCREEN = (1280, 800)
LIVE_SECONDS = 45.0


@pytest.fixture(scope="module")
def x_desktop() -> Iterator[Desktop]:
    try:
        with desktop(SCREEN) as here:
            yield here
    except DesktopUnavailable as error:
        pytest.skip(str(error))


def wait_file(path: Path, proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert proc.poll() is None, f"the app exited ({proc.returncode})"
        assert time.monotonic() < deadline, f"the app reported nothing within {timeout:.0f} s"
        time.sleep(0.1)
    time.sleep(0.05)  # the writer's single write lands whole
    facts: dict[str, Any] = json.loads(path.read_text())
    return facts


def screenshot(here: Desktop, path: Path) -> Any:
    """The X server's own pixels (the root window, as another X client reads them), as a QImage."""
    code = ("import sys; from PySide6.QtGui import QGuiApplication; a = QGuiApplication(['grab']); "
            "sys.exit(0 if a.primaryScreen().grabWindow(0).save(sys.argv[1]) else 1)")
    done = subprocess.run([sys.executable, "-c", code, str(path)], env={**here.env, "QT_QPA_PLATFORM": "xcb"},
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    from PySide6.QtGui import QImage

    image = QImage(str(path))
    assert not image.isNull()
    return image


def background(image: Any, x0: int, y0: int, x1: int, y1: int) -> Any:
    """The commonest colour of a region (a text's background)."""
    from PySide6.QtGui import QColor

    counts = Counter(image.pixel(x, y) for y in range(y0, y1) for x in range(x0, x1))
    return QColor.fromRgb(counts.most_common(1)[0][0])


def tree(here: Desktop) -> str:
    return here.x("xwininfo", "-root", "-tree")


def parent_chain(here: Desktop, window: int) -> list[str]:
    """The names of `window`'s ancestors up to the root, nearest first (xwininfo -children per step)."""
    names: list[str] = []
    current = hex(window)
    for _ in range(10):
        info = here.x("xwininfo", "-children", "-id", current)
        match = re.search(r"Parent window id: (0x[0-9a-f]+)\s*(.*)", info)
        if match is None or "(the root window)" in match.group(2):
            break
        current = match.group(1)
        names.append(match.group(2).strip())
    return names


def window_area(here: Desktop, window: str) -> tuple[int, int, int, int]:
    """A window's absolute x, y, width, height (xwininfo)."""
    info = here.x("xwininfo", "-id", window)
    fields = {key: int(value) for key, value in re.findall(
        r"(Absolute upper-left X|Absolute upper-left Y|Width|Height):\s+(-?\d+)", info)}
    return (fields["Absolute upper-left X"], fields["Absolute upper-left Y"], fields["Width"], fields["Height"])


def _log_tail(home: Path, lines: int = 40) -> str:
    """The end of the app's own log: what it was doing when a check failed."""
    try:
        return "\n".join((home / "logs" / "workroom.log").read_text(errors="replace").splitlines()[-lines:])
    except OSError as error:
        return f"(no app log: {error})"


def stop(proc: subprocess.Popen[str], home: Path) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # the app's orderly quit: every session closed
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    for pid in agent_pids_under(home):  # the local agent, if the app's quit left it
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("palette", ["light", "dark"])
def test_app_on_a_real_desktop(palette: str, x_desktop: Desktop, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    report = tmp_path / "facts.json"
    env = {**x_desktop.env, "WORKROOM_HOME": str(home), "WORKROOM_PALETTE": palette, "QT_QPA_PLATFORM": "xcb"}
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)  # the icon goes to the X tray (XEmbed), not a D-Bus watcher
    proc = subprocess.Popen([sys.executable, str(HERE / "real_desktop_driver.py"), str(report)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        facts = wait_file(report, proc, LIVE_SECONDS + 10)
        assert "error" not in facts, (facts["error"], _log_tail(home))
        assert facts["provider"] == "local"

        # The app's own log says this computer went live (the line a user would find when asking why).
        log_text = (home / "logs" / "workroom.log").read_text()
        assert f"palette: {palette}" in log_text
        assert re.search(rf"{re.escape(facts['host'])}: (live|quiet)\b", log_text), log_text

        # The window: mapped, viewable, managed by openbox (reparented into its frame, WM_STATE Normal).
        window = facts["window_id"]
        info = x_desktop.x("xwininfo", "-id", hex(window))
        assert "Map State: IsViewable" in info, info
        props = x_desktop.x("xprop", "-id", hex(window), "WM_STATE", "_NET_FRAME_EXTENTS", "_NET_WM_STATE")
        assert re.search(r"window state: Normal", props), props
        assert "_NET_FRAME_EXTENTS(CARDINAL) =" in props, props  # only a WM sets it
        assert parent_chain(x_desktop, window), "the window is not reparented into a WM frame"

        # The tray icon: a tray is there, the icon is shown, and its X window (WM_CLASS "workroom-app") has
        # been reparented into trayer's panel (XEmbed), where it sits inside the panel's area.
        assert facts["tray_available"] and facts["tray_visible"], facts
        panel_line = next(line for line in tree(x_desktop).splitlines() if '"panel": ("panel" "trayer")' in line)
        panel_id = panel_line.split()[0]
        in_panel = x_desktop.x("xwininfo", "-tree", "-id", panel_id)
        assert '("workroom-app" ' in in_panel, in_panel
        ix, iy, iw, ih = facts["tray_geometry"][0]
        px, py, pw, ph = window_area(x_desktop, panel_id)
        assert iw > 0 and ih > 0
        assert px <= ix and ix + iw <= px + pw and py <= iy and iy + ih <= py + ph, (panel_line, facts)

        # What a user reads: the row's state and the detail panel's state line, in the X server's pixels.
        image = screenshot(x_desktop, tmp_path / f"screen_{palette}.png")
        measured = {}
        for what in ("state_cell", "detail_state"):
            x, y, w, h = facts[what]
            measured[what] = round(region_contrast(image, x, y, x + w, y + h), 2)
        assert all(ratio >= AA_TEXT for ratio in measured.values()), (palette, measured)
        # ... and the palette on screen is the one asked for (a dark window in dark mode).
        x, y, w, h = facts["detail_state"]
        dark_window = styles.relative_luminance(background(image, x, y, x + w, y + h)) < 0.2
        assert dark_window is (palette == "dark"), palette
        # The tray icon reads on trayer's dark panel (3:1 for graphics).
        x, y, w, h = facts["tray_geometry"][0]
        icon = round(region_contrast(image, x, y, x + w, y + h), 2)
        print(f"{palette}: contrast {measured}, tray icon {icon}")
        assert icon >= 3.0, icon

        # Keyboard focus after Disconnect, then Connect, clicked in the real window under openbox: on the
        # panel's own button, never the price box with its text selected.
        report.with_suffix(".go").write_text("go")
        focus = wait_file(report.with_suffix(".focus.json"), proc, LIVE_SECONDS)
        assert "error" not in focus, focus
        assert focus["price_selected"] == "" and focus["focus"] != "timeline_price", focus
        assert focus["focus"] in ("detail_disconnect", "detail_connect"), focus
    finally:
        stop(proc, home)
        output = proc.stdout.read() if proc.stdout else ""
    assert proc.returncode == 0, output
