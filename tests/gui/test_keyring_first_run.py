"""Acceptance: a first run against a locked keyring, on a real desktop. The row names the keyring's wait while its
unlock dialog is up, one Cancel holds for the whole run (the dialog never comes back, and the log says so once),
and a simulated box added after it still connects and falls asleep on time.

Real parts: Xvfb with openbox and trayer (scripts/x_desktop.py); a private session bus (tests/gui/first_hour.py)
with dunst as the notification server and gnome-keyring-daemon, its login collection locked
(tests/fixtures/secret_service.py); GNOME's system prompter, `gcr-prompter`, started by the bus when the keyring
asks for it, as a desktop's bus does, drawing its "Unlock Login Keyring" dialog on the display; `dbus-monitor`
counting the prompts the keyring begins; the app as its own process in a fresh home (tests/gui/first_hour_driver.py
reads its rows), with no keyring chosen for it (keyring's own discovery finds the Secret Service); the simulator
(tools/simbox) for the box. The dialog is cancelled as a person does, with its window's close button
(`wmctrl -c`).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.gui, pytest.mark.integration, pytest.mark.root, pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a freedesktop desktop (Linux)")]

PROMPTER = Path("/usr/libexec/gcr-prompter")
DIALOG = "Unlock Login Keyring"
IDLE_WINDOW = 20.0
BOX = "box1"


def prompts_begun(monitor: Path) -> int:
    """How many prompts the keyring began with the system prompter (its BeginPrompting calls on the bus)."""
    text = monitor.read_text(errors="replace") if monitor.exists() else ""
    return sum(1 for line in text.splitlines() if "member=BeginPrompting" in line)


def this_computer(facts: dict[str, Any]) -> dict[str, Any]:
    """This computer's row (the first run's only host, named after the machine)."""
    rows: dict[str, dict[str, Any]] = facts["rows"]
    return next((r for name, r in rows.items() if name != BOX), {})


def dialogs(x: Any) -> list[str]:
    """The ids of the keyring's unlock dialogs the window manager shows (`wmctrl -l`)."""
    return [line.split()[0] for line in x.x("wmctrl", "-l").splitlines() if line.endswith(DIALOG)]


@pytest.mark.timeout(420)
def test_a_first_run_with_a_locked_keyring_names_the_wait_and_one_cancel_holds(tmp_path: Path) -> None:
    from x_desktop import missing_tools

    gone = [*missing_tools(), *(t for t in ("wmctrl", "gnome-keyring-daemon", "dunst", "dbus-daemon", "dbus-monitor",
                                            "dbus-send") if shutil.which(t) is None)]
    if not PROMPTER.exists():
        gone.append("gcr-prompter (gcr)")
    if gone:
        pytest.skip(f"missing {', '.join(gone)} (./dev setup)")
    home, user_home = tmp_path / "wrhome", tmp_path / "user"
    (user_home / ".ssh").mkdir(parents=True, mode=0o700)
    services = tmp_path / "services"
    services.mkdir()
    short = Path(tempfile.mkdtemp(prefix="wr-kr-", dir="/tmp"))  # unix socket paths must stay short
    try:
        _run(tmp_path, short, services, home, user_home)
    finally:
        shutil.rmtree(short, ignore_errors=True)


def _run(tmp_path: Path, short: Path, services: Path, home: Path, user_home: Path) -> None:
    import first_hour
    import simbox
    from first_hour import App, notification_server
    from fixtures import secret_service
    from x_desktop import desktop, stop_all

    with desktop(first_hour.SCREEN) as x:
        # The desktop's prompter, started by the bus at the keyring's first prompt, on this display.
        (services / "org.gnome.keyring.SystemPrompter.service").write_text(
            "[D-BUS Service]\nName=org.gnome.keyring.SystemPrompter\n"
            f"Exec=/usr/bin/env DISPLAY={x.display} GDK_BACKEND=x11 {PROMPTER}\n")
        (short / "dunstrc").write_text("[global]\n    notification_limit = 0\n")
        with notification_server(x.env, short, services, ("dunst", "-config", str(short / "dunstrc"))) as (address, _):
            keyring = secret_service.on_bus(address, short / "keyring", unlock=False)
            monitor = tmp_path / "prompts.txt"
            env = {**x.env, "WORKROOM_HOME": str(home), "HOME": str(user_home), "DBUS_SESSION_BUS_ADDRESS": address,
                   "QT_QPA_PLATFORM": "xcb", "WORKROOM_LOGIN_ENV": "0", "XDG_RUNTIME_DIR": str(keyring.runtime_dir)}
            for name in ("PYTHON_KEYRING_BACKEND", "WORKROOM_PALETTE"):
                env.pop(name, None)
            with open(monitor, "wb") as out:
                watcher = subprocess.Popen(["dbus-monitor", "--address", address, "member='BeginPrompting'"],
                                           stdout=out, stderr=subprocess.STDOUT, env=env)
            app: App | None = None
            try:
                app = App(env, tmp_path / "app")
                _walk(app, x, env, home, monitor)
            finally:
                if app is not None:
                    app.stop()
                simbox.down(home=home)
                stop_all([watcher])
                secret_service.stop(keyring)
                first_hour._stop_processes_under(home)


def _walk(app: Any, x: Any, env: dict[str, str], home: Path, monitor: Path) -> None:
    import simbox
    from first_hour import live, row

    # The first run connects this computer; its agent's key is asked of the keyring, which puts up its dialog.
    deadline = time.monotonic() + 60
    seen: list[str] = []
    while not dialogs(x):
        assert time.monotonic() < deadline, f"no unlock dialog within 60 s; the row said {seen[-3:]}"
        facts = app.do("facts")
        seen.append(this_computer(facts).get("Connection", ""))
        time.sleep(0.05)
    named = next((words for words in seen if "waiting for the keyring" in words), None)
    while named is None and dialogs(x) and time.monotonic() < deadline + 30:
        facts = app.do("facts")
        words = this_computer(facts).get("Connection", "")
        if "waiting for the keyring" in words:
            named = words
        elif this_computer(facts).get("connection_state") in ("live", "quiet"):
            break
        time.sleep(0.05)
    assert named is not None, f"the row never named the keyring's wait: {seen[-5:]}"
    # A connect does not wait for the person: this computer's agent gives its key while the dialog is still up.
    app.until("this computer live, the dialog still up",
              lambda f: this_computer(f).get("connection_state") in ("live", "quiet") and bool(dialogs(x)), 60)

    # Cancel, as a person does: the dialog's close button.
    for window in dialogs(x):
        x.x("wmctrl", "-i", "-c", window)
    app.until("the dialog gone", lambda f: not dialogs(x), 20)
    begun = prompts_begun(monitor)
    assert begun >= 1, monitor.read_text(errors="replace")[-2000:]

    # A simulated box, added after the Cancel: no dialog again, live, and asleep on time once idle.
    up = subprocess.run([sys.executable, "-m", "simbox", "up", "--boxes", "1", "--idle-window", f"{IDLE_WINDOW:g}",
                         "--json"], env=env, capture_output=True, text=True, timeout=180, check=False)
    assert up.returncode == 0, up.stdout + up.stderr
    box = json.loads(up.stdout)["boxes"][0]
    url = re.search(r'https?://[^"]+', up.stdout)
    assert url is not None, up.stdout
    simbox.wake(BOX, home=home)
    app.do("add_simbox", name=BOX, port=box["ssh_port"], user=box["user"], key=box["client_key"], url=url.group(0))
    app.until("the box's key question", lambda f: any(d["class"] == "HostKeyDialog" for d in f["dialogs"]), 60)
    app.do("trust_key")
    app.until(f"{BOX} live", live(BOX), 90)
    app.until(f"{BOX} idle", lambda f: row(f, BOX).get("State", "").startswith("Idle"), 60)
    idle_at = time.monotonic()
    asleep = app.until(f"{BOX} asleep", lambda f: row(f, BOX).get("connection_state") == "asleep", IDLE_WINDOW + 60)
    slept_after = time.monotonic() - idle_at
    assert simbox.box_status(BOX, home=home)["state"] == "asleep"
    assert slept_after <= IDLE_WINDOW + 20, f"asleep {slept_after:.0f} s after it read idle (window {IDLE_WINDOW:g} s)"
    print(f"keyring walk: the row said {named!r}; asleep {slept_after:.1f} s after idle", file=sys.stderr)

    # One Cancel held: no prompt begun since, no dialog, and the log said once that the keys are this run's.
    assert prompts_begun(monitor) == begun, "the keyring's dialog came back after Cancel"
    assert not dialogs(x)
    log_text = (home / "logs" / "workroom.log").read_text(errors="replace")
    assert log_text.count("kept in memory for this run only") == 1, asleep.get("log_tail", "")
