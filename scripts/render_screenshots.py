"""Screenshots for the README and docs/ui.md, of real states, on a real X server with a window manager and a
tray host, in a light and a dark palette.

What runs: Xvfb (its own display number), openbox (window manager) and trayer (system tray host); a simbox
with two sleepable boxes (root, Linux: see docs/simbox.md); the app itself (engine, sessions, window, tray)
with this computer plus both boxes as hosts, their agents pushed and live. A CPU job in box1 makes it busy;
with a 30 s ceiling in ask mode it then asks "keep it awake?"; box2 stays idle until the simbox puts it to
sleep. The screenshots show those real states. Two views the boxes cannot produce in a minute (every badge
state side by side, a host being lost) are drawn from constructed snapshots (scripts/demo_states.py) and
named `demo_*`.

The prompt's notification is posted by the app's own notification code over a private D-Bus session bus to a
real freedesktop notification server on the same X server: GNOME's notification-daemon, which draws a
notification's actions as buttons (dunst, used by tests/gui/test_notifications_dunst.py, offers them only
through its context menu). It is drawn in the server's own theme, so there is one picture of it, not two.
Open at login is a real XDG autostart entry in this run's private folder (the first-run offer above the host
list is answered Open at login, as a user would); the idle-sleep row of Settings › This computer can be changed
only on a Mac: here it shows disabled, saying why.

    sudo apt-get install xvfb openbox trayer x11-utils dbus-daemon notification-daemon
    .venv/bin/python scripts/render_screenshots.py [--out docs/screenshots] [--theme light|dark|both]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "app"), str(ROOT / "agent_bundle"), str(ROOT / "tools" / "simbox"), str(ROOT / "scripts")]
from x_desktop import SESSION_BUS_CONFIG, Desktop, DesktopUnavailable, desktop, stop_all  # noqa: E402

SCREEN = (1720, 900)  # wide enough that the notification (top right, below the panel) leaves the window whole
IDLE_WINDOW = 30.0
CEILING = 30.0
NOTIFICATION_SERVER = Path("/usr/lib/notification-daemon/notification-daemon")


def log(text: str) -> None:
    print(f"[shots] {text}", file=sys.stderr, flush=True)


def dark_palette() -> Any:
    from workroom.ui.palette_override import dark_palette as dark

    return dark()


async def wait_for(condition: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.2)


def demo_day() -> object:
    """A developer's last 24 hours as an agent records them (a compile, an ssh session, sleep), ending now."""
    import time

    from workroom.core.protocol import TimelineReply

    now = time.time()
    t, spans = now - 24 * 3600, []
    for minutes, state, cls, subject in ((230, "", "", ""), (160, "asleep", "", ""), (25, "idle", "", ""),
                                         (190, "busy", "cpu", "cc1plus"), (10, "held", "cpu", "cc1plus"),
                                         (180, "busy", "tcp", "ssh"), (20, "busy", "keystroke", ""),
                                         (170, "busy", "cpu", "rustc"), (10, "held", "cpu", "rustc"),
                                         (40, "ceiling", "cpu", "python3"), (30, "idle", "", ""),
                                         (375, "asleep", "", "")):
        if state:
            spans.append({"start": t, "end": t + minutes * 60, "state": state, "class": cls, "subject": subject})
        t += minutes * 60
    return TimelineReply.model_validate({"now": now, "spans": spans, "more_since": None, "problem": None})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    parser.add_argument("--theme", choices=("light", "dark", "both"), default="both")
    args = parser.parse_args(argv)
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        raise SystemExit("the simbox needs root on Linux (see docs/simbox.md)")
    home = Path(tempfile.mkdtemp(prefix="wr-shots-"))
    os.environ["WORKROOM_HOME"] = str(home)
    os.environ.pop("QT_QPA_PLATFORM", None)
    if not NOTIFICATION_SERVER.exists() or shutil.which("dbus-daemon") is None:
        raise SystemExit("needs a notification server that draws buttons: sudo apt-get install dbus-daemon "
                         "notification-daemon")
    try:
        with desktop(SCREEN) as here:
            os.environ["DISPLAY"] = here.display
            with notification_server(here):
                return with_simbox(args, home, here)
    except DesktopUnavailable as error:
        raise SystemExit(str(error)) from None
    finally:
        _stop_processes_under(home)  # this computer's agent outlives the app by design; not this run's
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def notification_server(here: Desktop) -> Iterator[None]:
    """A private D-Bus session bus (no service activation: only what is started here answers) with GNOME's
    notification-daemon on it, drawing on this X server; the app's bus from here on. Stopped by PID."""
    folder = Path(tempfile.mkdtemp(prefix="wr-shots-bus-"))
    config = folder / "bus.conf"
    config.write_text(SESSION_BUS_CONFIG.format(socket=folder / "bus"))
    procs: list[subprocess.Popen[str]] = []
    try:
        bus = subprocess.Popen(["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(bus)
        assert bus.stdout is not None
        address = bus.stdout.readline().strip()
        if not address:
            raise SystemExit("the private D-Bus session bus did not start")
        env = {**here.env, "DBUS_SESSION_BUS_ADDRESS": address}
        procs.append(subprocess.Popen([str(NOTIFICATION_SERVER)], env=env, text=True,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 15
        while "org.freedesktop.Notifications" not in subprocess.run(
                ["dbus-send", f"--bus={address}", "--print-reply", "--dest=org.freedesktop.DBus", "/",
                 "org.freedesktop.DBus.ListNames"], capture_output=True, text=True, timeout=10).stdout:
            if time.monotonic() > deadline or procs[-1].poll() is not None:
                raise SystemExit("the notification server did not come up on the private bus")
            time.sleep(0.1)
        os.environ["DBUS_SESSION_BUS_ADDRESS"] = address
        log("notification server up (notification-daemon on a private session bus)")
        yield
    finally:
        stop_all(procs)
        shutil.rmtree(folder, ignore_errors=True)



def notification_area(here: Desktop) -> tuple[int, int, int, int] | None:
    """Where notification-daemon's bubble is on screen (x, y, width, height), if one is shown."""
    for line in here.x("xwininfo", "-root", "-tree").splitlines():
        match = re.search(r'"Notification": \("notification-daemon" "Notification-daemon"\)\s+'
                          r"(\d+)x(\d+)\+-?\d+\+-?\d+\s+\+(-?\d+)\+(-?\d+)", line)
        if match and int(match.group(1)) > 100 and "IsViewable" in here.x("xwininfo", "-id", line.split()[0]):
            width, height, x, y = (int(g) for g in match.groups())
            return x, y, width, height
    return None


def _stop_processes_under(home: Path) -> None:
    """Stop, by PID, every process whose command line names this run's private home (its local agent)."""
    marker = str(home).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "cmdline").read_bytes():
                os.kill(int(entry.name), signal.SIGKILL)
        except (OSError, ValueError):
            pass


def with_simbox(args: argparse.Namespace, home: Path, here: Desktop) -> int:
    import simbox

    log("simbox up (2 boxes)")
    state = simbox.up(2, IDLE_WINDOW, home=home)
    job: subprocess.Popen[bytes] | None = None
    tools = Path(tempfile.mkdtemp(prefix="wr-shots-job-"))  # outside the 0700 home: the box's user runs from it
    try:
        info = simbox.connection_info(state)
        # A compiler-like job: a CPU-bound program named cc1plus, as a C++ build would run.
        tools.chmod(0o755)
        shutil.copy("/usr/bin/yes", tools / "cc1plus")
        job = subprocess.Popen(simbox.exec_argv("box1", ["sh", "-c", f"exec {tools}/cc1plus >/dev/null"],
                                                home=home),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return run_app(args, info, home, here)
    finally:
        if job is not None:
            job.kill()
            job.wait(5)
        log("simbox down")
        simbox.down(home=home)
        shutil.rmtree(tools, ignore_errors=True)


def run_app(args: argparse.Namespace, info: dict[str, Any], home: Path, here: Desktop) -> int:
    import qasync
    from PySide6.QtWidgets import QApplication

    app = QApplication(["workroom-app"])
    app.setStyle("Fusion")
    app.setQuitOnLastWindowClosed(False)
    light = app.style().standardPalette()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        return loop.run_until_complete(shoot(app, light, args, info, home, here))


async def shoot(app: Any, light: Any, args: argparse.Namespace, info: dict[str, Any], home: Path,
                here: Desktop) -> int:
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QWidget
    from workroom.agent_bundle import load_agent_bundle
    from workroom.core.ceiling import CeilingSettings
    from workroom.core.connection import ConnectionState
    from workroom.core.hosts import Host, IdentityRef
    from workroom.paths import app_paths, profile_env
    from workroom.platform.login_item import XdgAutostart
    from workroom.sessions.engine import Engine
    from workroom.ui.app import WorkroomApp
    from workroom.ui.host_dialog import AddHostDialog

    paths = app_paths()
    engine = Engine(paths, load_agent_bundle(paths), hostname="laptop")
    engine.settings = engine.settings.model_copy(update={"ceiling": CeilingSettings.model_construct(
        ceiling_seconds=CEILING, prompt_timeout_seconds=600.0, ask_at_ceiling=True)})
    with paths.known_hosts_file.open("a") as known:  # the simbox hands out its boxes' host keys
        for box in info["boxes"]:
            known.write(box["host_key_line"] + "\n")
    for box in info["boxes"]:
        engine.add_host(Host(name=box["name"], provider="simbox", address=box["ssh_host"], port=box["ssh_port"],
                             user=box["user"], identity=IdentityRef.file(box["client_key"]),
                             reference={"health_url": box["health_url"]}, idle_window_seconds=IDLE_WINDOW))
    wapp = WorkroomApp(engine, login_item=XdgAutostart({"XDG_CONFIG_HOME": str(home / "xdg")}, profile_env()))
    window = wapp.window
    wapp.start(connect=False, show_window=True)
    window.resize(1240, 680)
    window.move(40, 60)
    offer = await wait_for(lambda: window.login_offer, 10, "the first run's open-at-login offer")
    offer.accept_button.click()  # as a user answers it: the autostart entry is written, the offer goes
    await wait_for(lambda: offer.isHidden() and window.settings.editors["open_at_login"].check.isChecked(), 10,
                   "the offer answered and the entry written")
    for name in engine.hosts.names():
        wapp.controller.connect_host(name, wake=True)
    live = (ConnectionState.LIVE, ConnectionState.QUIET)

    def snap(name: str) -> Any:
        return window.model.snapshot(name)

    log("waiting: every host live, box1 busy")
    await wait_for(lambda: all(snap(n).connection.state in live and snap(n).status for n in engine.hosts.names()),
                   120, "every host to go live")
    await wait_for(lambda: snap("box1").status.busy, 60, "box1 to be busy")
    log("waiting: box1 asks (30 s ceiling), box2 falls asleep (30 s idle window)")
    await wait_for(lambda: "box1" in window.cards.cards, 120, "box1's prompt")
    bubble = await wait_for(lambda: notification_area(here), 30, "the prompt's notification on the server")
    await wait_for(lambda: snap("box2").connection.state is ConnectionState.ASLEEP, 150, "box2 to fall asleep")
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    themes = ("light", "dark") if args.theme == "both" else (args.theme,)

    async def settle() -> None:
        await asyncio.sleep(0.4)  # the qasync loop paints meanwhile (processEvents here would re-enter it)

    def save(pixmap: Any, name: str) -> None:
        path = out / f"{name}.png"
        if not pixmap.save(str(path)):
            raise SystemExit(f"could not write {path}")
        written.append(path)

    async def grab(widget: QWidget, name: str) -> None:
        await settle()
        save(widget.grab(), name)

    async def grab_screen(name: str, area: tuple[int, int, int, int] | None = None) -> None:
        await settle()
        screen = app.primaryScreen()
        save(screen.grabWindow(0, *(area or (0, 0, -1, -1))), name)

    await settle()
    x, y, width, height = bubble
    await grab_screen("notification_prompt", (x - 12, max(0, y - 6), width + 24, height + 18))
    for theme in themes:
        app.setPalette(dark_palette() if theme == "dark" else light)
        await settle()
        window.select_host("box1")
        window.raise_()
        await grab_screen(f"desktop_{theme}")
        await grab(window, f"window_{theme}")
        window.select_host("box2")
        await grab(window.detail_scroll, f"detail_asleep_{theme}")
        window.select_host("box1")
        await grab(window.detail_scroll, f"detail_prompt_{theme}")
        menu = wapp.tray.menu
        menu.popup(QPoint(app.primaryScreen().geometry().width() - 20, 28))
        await settle()
        geo = menu.geometry()
        await grab_screen(f"tray_menu_{theme}", (geo.x() - 330, 0, geo.width() + 350, geo.bottom() + 12))
        submenu = wapp.tray.host_menus["box2"]
        menu.setActiveAction(submenu.menuAction())
        submenu.popup(QPoint(geo.x() - 220, geo.y() + 90))
        await settle()
        sub = submenu.geometry()
        left = min(sub.x(), geo.x()) - 10
        await grab_screen(f"tray_host_submenu_{theme}",
                          (left, 0, max(sub.right(), geo.right()) - left + 12, max(sub.bottom(), geo.bottom()) + 12))
        submenu.hide()
        menu.hide()
        dialog = AddHostDialog(engine.hosts, window, aliases=["devbox", "gpu-box"])
        dialog.select_provider("simbox")  # type: ignore[union-attr]
        dialog.inputs["name"].setText("gpu/box")  # type: ignore[union-attr]
        dialog.inputs["port"].setText("70000")  # type: ignore[union-attr]
        dialog.show()
        dialog.try_accept()
        await grab(dialog, f"add_host_dialog_{theme}")
        dialog.close()
        window.show_settings()
        await grab(window, f"settings_{theme}")
        window.tabs.setCurrentIndex(0)
        wapp.show_about()
        assert wapp.about is not None
        await grab(wapp.about, f"about_{theme}")
        wapp.about.close()
    await demo_views(app, engine, window, out, written, themes, light, settle)
    for path in written:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    await wapp.close()
    return 0


async def demo_views(app: Any, engine: Any, window: Any, out: Path, written: list[Path], themes: tuple[str, ...],
                     light: Any, settle: Callable[[], Any]) -> None:
    """Every badge state side by side, from constructed snapshots (fed as sessions feed them), the host-key
    question (a constructed one: the simbox's keys are trusted from its own record), and a day of the
    why-awake timeline (a constructed record: a real one takes a day)."""
    from demo_states import every_state
    from workroom.core.questions import HostKeyQuestion
    from workroom.ui.host_key_dialog import HostKeyDialog

    states = every_state()
    states.pop("asking")
    for snap in states.values():
        for listener in list(engine.listeners):
            listener(snap)
    for theme in themes:
        app.setPalette(dark_palette() if theme == "dark" else light)
        window.select_host("build-box")
        await settle()
        path = out / f"demo_every_state_{theme}.png"
        window.grab().save(str(path))
        written.append(path)
        question = HostKeyQuestion(host="10.1.2.3", port=2222, key_type="ssh-ed25519",
                                   fingerprint="SHA256:q8H0bQ0qK1m1m2oXkz4vU5y3d2C8rB3a4Qe7nYt9wXc")
        dialog = HostKeyDialog("fresh-box", question, window)
        dialog.show()
        await settle()
        path = out / f"host_key_dialog_{theme}.png"
        dialog.grab().save(str(path))
        written.append(path)
        dialog.close()
        window.select_host("ci-runner")
        window.timeline.show_record(demo_day(), ("watch", "top"))
        window.timeline.price.setValue(0.36)
        window.timeline.hourly_price = 0.36
        window.timeline.show_record(window.timeline.reply, ("watch", "top"))
        await settle()
        path = out / ("detail_why_awake_timeline.png" if theme == "light" else "detail_why_awake_timeline_dark.png")
        window.detail_scroll.grab().save(str(path))
        written.append(path)


if __name__ == "__main__":
    sys.exit(main())
