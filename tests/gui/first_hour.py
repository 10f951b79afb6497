"""A new user's first hour, scripted on a real X desktop (used by tests/gui/test_first_hour.py and by
scripts/render_screenshots.py, whose README pictures are taken from it).

The desktop: Xvfb with openbox and trayer (scripts/x_desktop.py), a private D-Bus session bus with GNOME's
notification-daemon (it draws a notification's buttons) and dbus-monitor reading what the app posts and takes
back. The app runs as its own process (tests/gui/first_hour_driver.py clicks in it as a person would), with a
fresh WORKROOM_HOME and a HOME whose ~/.ssh/config names a real OpenSSH server on loopback. The simulator is
brought up by its own command, `workroom-simbox up --json`, and its box is added with the first URL that
command prints. Then, as a person would: add the SSH host from the ~/.ssh/config list (trusting its key), add
the simulated box, set a 30 s ceiling, run a job in the box past it, answer the prompt with `workroom keep`,
answer the next one with Let it sleep, watch the box fall asleep, wake it, end the job and watch it say when it
sleeps, and sleep. What the app says at each step is kept (`Report.seen`), and pictures in both palettes.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCREEN = (1720, 900)
IDLE_WINDOW = 20.0
CEILING = 30.0
NOTIFICATION_SERVER = Path("/usr/lib/notification-daemon/notification-daemon")
ALIAS = "devbox"
BOX = "box1"
SHOT_NAMES = ["desktop", "window", "tray_menu"]


class Unavailable(RuntimeError):
    """A tool this needs is missing (the message says which)."""


@dataclass
class Report:
    seen: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(milestone, what the app showed then)."""
    notified: list[tuple[str, str]] = field(default_factory=list)
    """(summary, body) of every notification the app posted."""
    closed: int = 0
    """CloseNotification calls the app made."""
    figures: dict[str, Any] = field(default_factory=dict)
    cli: dict[str, str] = field(default_factory=dict)
    """What each `workroom` command printed."""

    def at(self, milestone: str) -> dict[str, Any]:
        return next(facts for name, facts in self.seen if name == milestone)


def log(text: str) -> None:
    print(f"[first hour] {text}", file=sys.stderr, flush=True)


def missing() -> list[str]:
    from x_desktop import missing_tools

    tools = [*missing_tools(), *(t for t in ("dbus-daemon", "dbus-monitor", "dbus-send") if shutil.which(t) is None)]
    if not NOTIFICATION_SERVER.exists():
        tools.append("notification-daemon")
    return tools


@contextlib.contextmanager
def notification_server(env: dict[str, str], folder: Path, services: Path | None = None,
                        server: tuple[str, ...] = (str(NOTIFICATION_SERVER),)) -> Iterator[tuple[str, Path]]:
    """A private session bus with a notification server drawing on this display (`server`: GNOME's
    notification-daemon unless told), and dbus-monitor writing every Notifications call to a file: (the bus
    address, the monitor's file). Nothing is auto-started on the bus but the D-Bus services whose files are in
    `services`, if given (as a desktop's bus starts its prompters)."""
    from x_desktop import SESSION_BUS_CONFIG, stop_all

    config = folder / "bus.conf"
    text = SESSION_BUS_CONFIG.format(socket=folder / "bus")
    if services is not None:
        text = text.replace("</busconfig>", f"  <servicedir>{services}</servicedir>\n</busconfig>")
    config.write_text(text)
    procs: list[subprocess.Popen[Any]] = []
    monitor = folder / "monitor.txt"
    try:
        bus = subprocess.Popen(["dbus-daemon", f"--config-file={config}", "--nofork", "--print-address=1"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        procs.append(bus)
        assert bus.stdout is not None
        address = bus.stdout.readline().strip()
        if not address:
            raise Unavailable("the private D-Bus session bus did not start")
        with_bus = {**env, "DBUS_SESSION_BUS_ADDRESS": address}
        with open(monitor, "wb") as out:
            procs.append(subprocess.Popen(["dbus-monitor", "--address", address,
                                           "interface='org.freedesktop.Notifications'"],
                                          stdout=out, stderr=subprocess.STDOUT, env=with_bus))
        procs.append(subprocess.Popen(list(server), env=with_bus, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 15
        while "org.freedesktop.Notifications" not in subprocess.run(
                ["dbus-send", f"--bus={address}", "--print-reply", "--dest=org.freedesktop.DBus", "/",
                 "org.freedesktop.DBus.ListNames"], capture_output=True, text=True, timeout=10).stdout:
            if time.monotonic() > deadline or procs[-1].poll() is not None:
                raise Unavailable("the notification server did not come up on the private bus")
            time.sleep(0.1)
        yield address, monitor
    finally:
        stop_all(procs)


def notified(monitor: Path) -> tuple[list[tuple[str, str]], int]:
    """(summary, body) of each new notification the monitor saw (not a Notify replacing one on screen, as a
    withdrawal does first), and how many CloseNotification calls."""
    text = monitor.read_text(errors="replace") if monitor.exists() else ""
    posts = []
    for block in text.split("method call")[1:]:
        replaces = re.search(r"^\s+uint32 (\d+)$", block, re.M)
        if "member=Notify" in block.splitlines()[0] and (replaces is None or replaces.group(1) == "0"):
            strings = re.findall(r'^\s+string "(.*)"$', block, re.M)
            posts.append((strings[2], strings[3]))
    return posts, sum(1 for line in text.splitlines() if "member=CloseNotification" in line)


def bubble(x: Any) -> tuple[int, int, int, int] | None:
    """Where notification-daemon's bubble is on screen (x, y, width, height), while one shows."""
    for line in x.x("xwininfo", "-root", "-tree").splitlines():
        match = re.search(r'"Notification": \("notification-daemon" "Notification-daemon"\)\s+'
                          r"(\d+)x(\d+)\+-?\d+\+-?\d+\s+\+(-?\d+)\+(-?\d+)", line)
        if match and int(match.group(1)) > 100 and "IsViewable" in x.x("xwininfo", "-id", line.split()[0]):
            width, height, left, top = (int(g) for g in match.groups())
            return left, top, width, height
    return None


class App:
    """The app's process and its command folder."""

    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.env = env
        self.count = 0
        self.output = folder / "app-output.txt"
        with open(self.output, "wb") as out:
            self.proc = subprocess.Popen([sys.executable, str(HERE / "first_hour_driver.py"), str(folder)], env=env,
                                         stdout=out, stderr=subprocess.STDOUT)

    def do(self, what: str, timeout: float = 60, **args: Any) -> dict[str, Any]:
        n = self.count
        self.count += 1
        (self.folder / f"cmd-{n}.json").write_text(json.dumps({"do": what, "args": args}))
        done = self.folder / f"done-{n}.json"
        deadline = time.monotonic() + timeout
        while not done.exists():
            if self.proc.poll() is not None:
                raise AssertionError(f"the app exited ({self.proc.returncode}): {self.output.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"the app did not do {what} within {timeout:.0f} s")
            time.sleep(0.05)
        facts: dict[str, Any] = json.loads(done.read_text())
        if "error" in facts or "facts_error" in facts:
            raise AssertionError(f"{what}: {facts.get('error') or facts.get('facts_error')}\n{facts.get('trace')}\n"
                                 f"{facts.get('log_tail', '')}")
        return facts

    def until(self, what: str, condition: Callable[[dict[str, Any]], Any], timeout: float) -> dict[str, Any]:
        """The app's facts, asked for every half second until `condition` holds (fails naming `what`)."""
        deadline = time.monotonic() + timeout
        while True:
            facts = self.do("facts")
            if condition(facts):
                return facts
            if time.monotonic() > deadline:
                rows = {n: (r.get("State"), r.get("Connection")) for n, r in facts.get("rows", {}).items()}
                raise AssertionError(f"not within {timeout:.0f} s: {what}; rows {rows}; dialogs {facts['dialogs']}"
                                     f"\n{facts.get('log_tail', '')}")
            time.sleep(0.5)

    def stop(self) -> None:
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # the app's orderly quit
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def workroom(env: dict[str, str], *argv: str, report: Report) -> str:
    """A `workroom` command, as typed in a terminal (it goes through the running app)."""
    done = subprocess.run([sys.executable, "-m", "workroom.cli", *argv], env=env, capture_output=True, text=True,
                          timeout=90, check=False)
    said = done.stdout + done.stderr
    report.cli[" ".join(argv)] = said
    if done.returncode != 0:
        raise AssertionError(f"workroom {' '.join(argv)} exited {done.returncode}: {said}")
    return said


def row(facts: dict[str, Any], name: str) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = facts["rows"]
    return rows.get(name, {})


def live(name: str) -> Callable[[dict[str, Any]], bool]:
    return lambda f: row(f, name).get("connection_state") in ("live", "quiet")


def run(ssh: Any, work: Path, *, shots: Path | None = None, themes: tuple[str, ...] = ("light", "dark")) -> Report:
    """The first hour against `ssh` (a tests/fixtures/sshd.SshdServer); pictures into `shots` when given."""
    import simbox
    from x_desktop import desktop

    gone = missing()
    if gone:
        raise Unavailable(f"missing {', '.join(gone)}: ./dev setup, and apt-get install notification-daemon")
    report = Report()
    home = work / "wrhome"
    user_home = work / "user"
    (user_home / ".ssh").mkdir(parents=True, mode=0o700)
    (user_home / ".ssh" / "config").write_text(
        f"Host {ALIAS}\n    HostName {ssh.host}\n    Port {ssh.port}\n    User {ssh.user}\n"
        f"    IdentityFile {ssh.key_path}\n")
    job_dir = Path(tempfile.mkdtemp(prefix="wr-first-hour-job-"))
    job_dir.chmod(0o755)  # the box's user runs the job from here
    shutil.copy("/usr/bin/yes", job_dir / "cc1plus")  # a compiler-like job: CPU-bound, named as C++'s is
    with desktop(SCREEN) as x, notification_server(x.env, work) as (address, monitor):
        # BROWSER: xdg-open's only fallback for a file no program takes, so About's Open log fails as on a bare
        # desktop (the picture of what it says), whatever browser this machine has.
        env = {**x.env, "WORKROOM_HOME": str(home), "HOME": str(user_home), "DBUS_SESSION_BUS_ADDRESS": address,
               "QT_QPA_PLATFORM": "xcb", "WORKROOM_LOGIN_ENV": "0", "BROWSER": "false"}
        env.pop("WORKROOM_PALETTE", None)
        log("simbox up, by its own command")
        up = subprocess.run([sys.executable, "-m", "simbox", "up", "--boxes", "1", "--idle-window", f"{IDLE_WINDOW:g}",
                             "--json"], env=env, capture_output=True, text=True, timeout=180, check=False)
        if up.returncode != 0:
            raise AssertionError(f"workroom-simbox up: {up.stdout}{up.stderr}")
        job: subprocess.Popen[bytes] | None = None
        app: App | None = None
        try:
            printed = json.loads(up.stdout)
            first_url = re.search(r'https?://[^"]+', up.stdout)
            assert first_url is not None
            report.figures["simbox_url"] = url = first_url.group(0)
            box = printed["boxes"][0]
            app = App(env, work / "app")
            _hour(app, x, env, home, box, url, job_dir, report, shots, themes, monitor)
            job = report.figures.pop("_job", None)
        finally:
            if job is not None:
                job.kill()
                job.wait(5)
            if app is not None:
                app.stop()
            report.notified, report.closed = notified(monitor)
            simbox.down(home=home)
            shutil.rmtree(job_dir, ignore_errors=True)
            _stop_processes_under(home)
    return report


def _hour(app: App, x: Any, env: dict[str, str], home: Path, box: dict[str, Any], url: str, job_dir: Path,
          report: Report, shots: Path | None, themes: tuple[str, ...], monitor: Path) -> None:
    import simbox

    def keep(milestone: str, facts: dict[str, Any]) -> dict[str, Any]:
        report.seen.append((milestone, facts))
        log(milestone)
        return facts

    first = app.until("the window with this computer live", lambda f: any(
        r.get("connection_state") in ("live", "quiet") for r in f["rows"].values()), 90)
    keep("first run", first)

    # An SSH host from ~/.ssh/config: the list, the key question, live.
    app.do("add_ssh", alias=ALIAS)
    key = app.until("the host-key question", lambda f: any(d["class"] == "HostKeyDialog" for d in f["dialogs"]), 30)
    keep("host key question", key)
    app.do("trust_key")
    keep("ssh host live", app.until(f"{ALIAS} live", live(ALIAS), 60))

    # A short ceiling in ask mode, from the command line (through the app).
    workroom(env, "settings", "set", "--ceiling", f"{CEILING:g}", "--ask", "on", report=report)

    # The simulated box, with the URL `up --json` printed first; a compiler-like job in it.
    simbox.wake(BOX, home=home)
    job = subprocess.Popen(simbox.exec_argv(BOX, ["sh", "-c", f"exec {job_dir}/cc1plus >/dev/null"], home=home),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    report.figures["_job"] = job
    app.do("add_simbox", name=BOX, port=box["ssh_port"], user=box["user"], key=box["client_key"], url=url)
    facts = app.until("the box's key question or its row", lambda f: any(
        d["class"] == "HostKeyDialog" for d in f["dialogs"]) or row(f, BOX).get("connection_state") == "asleep", 60)
    if row(facts, BOX).get("connection_state") == "asleep":
        keep("box asleep when added", facts)
        app.do("select", host=BOX)
        app.do("click", name="detail_connect")
        app.until("the box's key question", lambda f: any(d["class"] == "HostKeyDialog" for d in f["dialogs"]), 60)
    app.do("trust_key")
    app.do("select", host=BOX)
    busy = app.until(f"{BOX} live and busy", lambda f: live(BOX)(f) and row(f, BOX).get("Busy because", "—") != "—",
                     90)
    keep("box busy", busy)

    # Past the ceiling: the card, the pinned entry and the notification ask.
    prompt = app.until("the ceiling prompt", lambda f: BOX in f["cards"], CEILING + 60)
    for _ in range(40):
        where = bubble(x)
        if where is not None:
            break
        time.sleep(0.25)
    time.sleep(1.5)  # the count-down ticks on: "Busy for" moves past the ceiling
    # Where the bubble is now: notification-daemon maps it first at the screen's corner, then moves it into place.
    where = bubble(x) or where
    report.figures["bubble"] = where
    prompt = keep("prompt", app.do("facts"))
    if shots is not None:
        app.do("shots", timeout=120, out=str(shots), names=[*SHOT_NAMES, "detail:detail_prompt"],
               themes=list(themes), host=BOX, notification=list(where) if where else None)
    report.figures["dark_icons"] = app.do("dark_icons")["result"]

    # Answered from the command line: the card and the notification go.
    _, closes = notified(monitor)
    said = workroom(env, "keep", BOX, report=report)
    report.figures["keep_said"] = said
    kept = app.until("the card gone after workroom keep", lambda f: BOX not in f["cards"], 20)
    deadline = time.monotonic() + 15
    while notified(monitor)[1] <= closes or bubble(x) is not None:
        if time.monotonic() > deadline:
            raise AssertionError(f"the notification stayed after workroom keep ({notified(monitor)})")
        time.sleep(0.2)
    keep("kept from the command line", app.do("facts"))
    del kept, prompt

    # The next prompt: Let it sleep on its card; the box sleeps within its window, the job still running.
    app.until("the next prompt", lambda f: BOX in f["cards"], CEILING + 60)
    app.do("card_button", host=BOX, which="sleep")
    clicked = time.monotonic()
    keep("let it sleep", app.do("facts"))
    asleep = app.until(f"{BOX} asleep", lambda f: row(f, BOX).get("connection_state") == "asleep", IDLE_WINDOW + 60)
    report.figures["click_to_asleep_s"] = round(time.monotonic() - clicked, 1)
    assert job.poll() is None, "the job ended"
    app.do("select", host=BOX)
    time.sleep(2)
    keep("asleep", app.do("facts"))
    if shots is not None:
        app.do("shots", timeout=120, out=str(shots), names=["detail:detail_asleep"], themes=list(themes), host=BOX)
    del asleep

    # Wake it: live and busy again, the ceiling restarted, Let it sleep not carried over.
    app.do("click", name="detail_connect")
    woken = app.until(f"{BOX} awake and live", lambda f: live(BOX)(f) and row(f, BOX).get("Busy because") != "—", 90)
    keep("woken", woken)
    time.sleep(3)
    keep("woken, a few seconds on", app.do("facts"))

    # The job ends: the row says when the box will sleep, and it sleeps about then.
    subprocess.run(simbox.exec_argv(BOX, ["pkill", "-x", "cc1plus"], home=home), timeout=30, check=False)
    job.wait(10)
    report.figures.pop("_job", None)
    said_when = app.until("the row to say when it sleeps", lambda f: "asleep in about" in row(f, BOX).get("State", "")
                          and row(f, BOX).get("State", "").startswith("Idle"), 90)
    keep("idle, says when", said_when)
    state = row(said_when, BOX)["State"]
    seconds = _seconds(state.rsplit("asleep in about ", 1)[1])
    predicted = time.monotonic() + seconds
    if shots is not None:
        app.do("shots", timeout=120, out=str(shots), names=["window:window_idle"], themes=["light"], host=BOX)
    app.until(f"{BOX} asleep again", lambda f: row(f, BOX).get("connection_state") == "asleep", seconds + 60)
    report.figures["asleep_vs_said_s"] = round(time.monotonic() - predicted, 1)
    keep("asleep again", app.do("facts"))
    if shots is not None:
        app.do("shots", timeout=120, out=str(shots), names=["settings", "about", "add_host_dialog",
                                                              "tray_this_computer_busy"],
               themes=list(themes))
        app.do("demo", timeout=120, out=str(shots), themes=list(themes), scripts=str(HERE.parent.parent / "scripts"))


def _seconds(words: str) -> float:
    """"1 min 5 s" -> 65."""
    total = 0.0
    for number, unit in re.findall(r"(\d+) (min|s|h)\b", words):
        total += int(number) * {"h": 3600, "min": 60, "s": 1}[unit]
    return total


def _stop_processes_under(home: Path) -> None:
    """Stop, by PID, every process whose command line names this run's home (this computer's agent outlives the
    app by design)."""
    import signal

    marker = str(home).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "cmdline").read_bytes():
                os.kill(int(entry.name), signal.SIGKILL)
        except (OSError, ValueError):
            pass
