"""Open at login: the XDG autostart entry written, read back and removed for real, started by a real XDG
autostart runner (Debian's `dex -a`, as a desktop session does at login) on a real X desktop; the macOS login
item's calls with the Objective-C seam faked (no Cocoa here: the only fake; docs/macos.md says what a real Mac
must confirm); the settings row and the first-run offer as real widgets."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from gui_helpers import desktop_app_env, kill_agents_under, poll_until, wait_for
from workroom.core.hosts import HostsFile
from workroom.paths import app_paths, profile_env
from workroom.platform import login_item as li
from workroom.platform.login_item import LoginItemState, MacLoginItem, XdgAutostart
from workroom.storage import save_hosts, this_host_name
from x_desktop import Desktop

pytestmark = pytest.mark.gui


def _xdg(tmp_path: Path, home: Path | None = None) -> XdgAutostart:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    return XdgAutostart(env, profile_env({"WORKROOM_HOME": str(home)} if home else {}))


def test_the_entry_is_written_read_back_and_removed(tmp_path: Path) -> None:
    item = _xdg(tmp_path, tmp_path / "my home")
    assert item.state() is LoginItemState.OFF
    item.enable()
    assert item.state() is LoginItemState.ON
    text = item.path.read_text()
    assert item.path.parent == tmp_path / "xdg" / "autostart"
    assert "Type=Application" in text and "Name=Workroom" in text
    exec_line = next(line for line in text.splitlines() if line.startswith("Exec="))
    assert f'"WORKROOM_HOME={tmp_path}/my home"' in exec_line  # a path with a space, quoted per the spec
    assert oct(item.path.stat().st_mode & 0o777) == "0o644"
    item.disable()
    assert not item.path.exists() and item.state() is LoginItemState.OFF
    item.disable()  # already gone: nothing to do, no error


def test_two_profiles_get_two_entries(tmp_path: Path) -> None:
    assert _xdg(tmp_path).path.name == "workroom.desktop"
    assert _xdg(tmp_path, tmp_path / "a").path != _xdg(tmp_path, tmp_path / "b").path


def test_an_entry_the_desktop_turned_off_reads_off(tmp_path: Path) -> None:
    item = _xdg(tmp_path)
    item.enable()
    item.path.write_text(item.path.read_text() + "Hidden=true\n")
    assert item.state() is LoginItemState.OFF


def test_an_unwritable_folder_is_said_in_words(tmp_path: Path) -> None:
    item = _xdg(tmp_path)
    (tmp_path / "xdg").write_text("a file where the folder should be")
    with pytest.raises(li.LoginItemError, match="Could not write"):
        item.enable()


def test_exec_quoting_follows_the_desktop_entry_spec() -> None:
    assert li.desktop_exec(["/opt/app/bin/workroom-app"]) == "/opt/app/bin/workroom-app"
    assert li.desktop_exec(["env", 'A=x "y" $z `w` \\', "100%"]) == 'env "A=x \\"y\\" \\$z \\`w\\` \\\\" 100%%'


@pytest.mark.linux(reason="an X11 desktop")
@pytest.mark.skipif(shutil.which("dex") is None, reason="needs dex (an XDG autostart runner; ./dev installs it)")
def test_a_login_session_starts_the_app_from_the_entry(x_session: Desktop, tmp_path: Path) -> None:
    """`dex -a` runs the autostart entries in $XDG_CONFIG_HOME/autostart as an XDG session does at login, here on
    a real X desktop (Xvfb, openbox, trayer's panel): the app comes up from the entry with its icon in the tray,
    once, and (not a first run: the user turned the setting on before) without opening its window."""
    x = x_session
    home = tmp_path / "home"
    # The system's own entries (/etc/xdg/autostart: gnome-keyring's three daemons, say) are left out: a login
    # would start them, but here they would outlive the test, unowned.
    (tmp_path / "xdg-system").mkdir()
    env = dict(desktop_app_env(x), XDG_CONFIG_HOME=str(tmp_path / "xdg"), XDG_CONFIG_DIRS=str(tmp_path / "xdg-system"))
    save_hosts(app_paths({"WORKROOM_HOME": str(home)}), HostsFile.first_run(this_host_name()))
    item = XdgAutostart(env, profile_env({"WORKROOM_HOME": str(home)}))
    item.enable()
    log = home / "logs" / "workroom.log"
    pid = None
    try:
        # The app outlives dex (as it outlives the login session's start-up): nothing of ours is left on its pipes.
        subprocess.run(["dex", "-a", "-e", "GNOME"], env=env, check=True, timeout=30, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pid = poll_until("the autostart entry to start the app (its home's lock held)", lambda: _lock_holder(home),
                         timeout=40)
        poll_until("the app's start in its log", lambda: log.exists() and "starting (Python" in log.read_text(),
                   timeout=20)
        icons = poll_until("the app's icon in trayer's panel", lambda: x.tray_icons(pid), timeout=30)
        assert len(icons) == 1, icons
        assert x.viewable(icons[0])
        time.sleep(1.0)  # a window (or a second icon) shown at start-up would be there by now
        assert x.managed_windows(pid) == [], "a login start opened the window"
        assert len(x.tray_icons(pid)) == 1
    finally:
        pid = pid or _lock_holder(home)
        if pid:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
                time.sleep(0.1)
        kill_agents_under(home)


def _lock_holder(home: Path) -> int | None:
    """The PID written into the home's app lock by the app that holds it (workroom.single_instance)."""
    lock = next(home.rglob("app.lock"), None) if home.exists() else None
    text = lock.read_text().strip() if lock is not None else ""
    return int(text.split()[0]) if text else None


class LoginItemBridge:
    """A stand-in for the Objective-C runtime (no Cocoa here): SMAppService's status and its (un)register."""

    def __init__(self, register_ok: bool = True) -> None:
        self.status = 0
        self.register_ok = register_ok
        self.calls: list[str] = []

    def cls(self, name: str) -> int:
        return 10 if name == "SMAppService" else 0

    def string(self, text: str) -> int:
        return 2

    def msg(self, receiver: int, selector: str, *args: object) -> int:
        self.calls.append(selector)
        if selector == "mainAppService":
            return 11
        if selector == "status":
            return self.status
        if selector == "registerAndReturnError:":
            if self.register_ok:
                self.status = 1
            return int(self.register_ok)
        if selector == "unregisterAndReturnError:":
            self.status = 0
            return 1
        return 0


def test_macos_login_item_registers_and_unregisters_the_main_app() -> None:
    seam = LoginItemBridge()
    item = MacLoginItem(seam)
    assert item.state() is LoginItemState.OFF
    item.enable()
    assert item.state() is LoginItemState.ON
    assert "registerAndReturnError:" in seam.calls
    seam.status = 2
    assert item.state() is LoginItemState.NEEDS_APPROVAL
    item.disable()
    assert item.state() is LoginItemState.OFF and "unregisterAndReturnError:" in seam.calls
    with pytest.raises(li.LoginItemError, match="System Settings"):
        MacLoginItem(LoginItemBridge(register_ok=False)).enable()


def test_the_settings_row_reads_the_system_back(qtbot: Any, tmp_path: Path) -> None:
    from workroom.this_computer import ThisComputer
    from workroom.ui.settings_view import SettingsView

    item = _xdg(tmp_path)
    view = SettingsView(ThisComputer(item, can_hold_idle_sleep=False))
    qtbot.addWidget(view)
    row, hold = view.editors["open_at_login"], view.editors["hold_idle_sleep"]
    assert not row.check.isChecked() and row.check.isEnabled()
    assert not hold.check.isHidden() and not hold.check.isEnabled()  # shown, not editable here, saying why
    assert "Only macOS" in hold.note.text()
    row.check.click()
    assert item.state() is LoginItemState.ON and row.check.isChecked()
    assert str(item.path) in row.note.text()
    item.disable()  # turned off outside the app (the desktop's own settings)
    view.refresh_system()
    assert not row.check.isChecked()


def test_the_settings_row_says_when_the_system_refuses(qtbot: Any, tmp_path: Path) -> None:
    from workroom.this_computer import ThisComputer
    from workroom.ui.settings_view import SettingsView

    item = _xdg(tmp_path)
    # A folder where the entry's temporary file goes: the entry cannot be written (the system refuses).
    (item.path.parent / f".{item.path.name}.{os.getpid()}.tmp").mkdir(parents=True)
    view = SettingsView(ThisComputer(item, can_hold_idle_sleep=False))
    qtbot.addWidget(view)
    row = view.editors["open_at_login"]
    assert row.check.isEnabled()
    row.check.click()
    assert not row.check.isChecked() and "Could not write" in row.note.text()
    assert item.state() is LoginItemState.OFF


def test_no_way_to_open_at_login_is_said_in_the_row(qtbot: Any) -> None:
    from workroom.this_computer import ThisComputer
    from workroom.ui.settings_view import SettingsView

    view = SettingsView(ThisComputer(None, can_hold_idle_sleep=False))
    qtbot.addWidget(view)
    row = view.editors["open_at_login"]
    assert not row.check.isEnabled() and "no way to open apps at login" in row.note.text()


def test_the_first_run_offer_answers_once(engine: Any, qtbot: Any, run: Any, tmp_path: Path) -> None:
    from workroom.ui.app_controller import AppController
    from workroom.ui.main_window import MainWindow

    item = _xdg(tmp_path)
    win = MainWindow(AppController(engine), login_item=item)
    qtbot.addWidget(win)
    assert win.login_offer is not None
    offer = win.login_offer

    async def accept() -> None:
        offer.accept_button.click()
        await wait_for(lambda: engine.paths.settings_file.exists() and '"login_item_offered":true' in
                       engine.paths.settings_file.read_text().replace(" ", ""), 5, "the saved answer")

    run(accept())
    assert item.state() is LoginItemState.ON and offer.isHidden()
    assert engine.settings.login_item_offered
    again = MainWindow(AppController(engine), login_item=_xdg(tmp_path / "other"))
    qtbot.addWidget(again)
    assert again.login_offer is None  # answered once: not offered again
    win.cards.timer.stop()
    again.cards.timer.stop()
