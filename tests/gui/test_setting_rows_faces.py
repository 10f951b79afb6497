"""Every setting row through every face: the settings pane (real widgets), the `workroom` command (the real
program, a subprocess with its own WORKROOM_HOME and XDG_CONFIG_HOME) and where the value is kept (settings.json,
or for open at login the real XDG autostart entry). The rows are read from core/setting_rows.py: a row added
there is driven here with no line changed, and a kind with no driver here fails.

Each face changes only the row it was asked to: the others keep their values (checked through the command's
listing after every change). The idle-sleep hold needs a Mac: the pane is told this computer has it
(`ThisComputer(can_hold_idle_sleep=True)`: the one stand-in, as IOKit cannot run here) so the row is driven and
stored, while the real command on this computer refuses it, naming the flag and why.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, assert_never

import pytest
from gui_helpers import wait_for
from PySide6.QtCore import Qt
from workroom.core.setting_rows import SETTING_ROWS, UNIT_SECONDS, Kind, SettingRow, Store
from workroom.paths import AppPaths, app_paths, profile_env
from workroom.platform.login_item import XdgAutostart
from workroom.this_computer import ThisComputer

pytestmark = pytest.mark.gui

WORKROOM = [str(Path(sys.executable).with_name("workroom"))]


def workroom(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {name: os.environ[name] for name in ("PATH", "HOME", "WORKROOM_HOME", "XDG_CONFIG_HOME")}
    return subprocess.run([*WORKROOM, *argv], capture_output=True, text=True, timeout=60, env=env,
                          stdin=subprocess.DEVNULL)


def listed() -> dict[str, Any]:
    """Every row's value as `workroom settings get --json` says."""
    done = workroom("settings", "get", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [r["name"] for r in rows] == [row.name for row in SETTING_ROWS], "a row `settings get` does not list"
    return {r["name"]: r["value"] for r in rows}


def other_value(row: SettingRow) -> Any:
    """A value the row takes that is not its default (a duration: whole in the pane's smallest unit)."""
    match row.kind:
        case Kind.DURATION:
            assert row.minimum is not None and row.maximum is not None
            value = row.minimum + UNIT_SECONDS[row.units[-1]]
            assert value <= row.maximum and value != row.default
            return value
        case Kind.YES_NO:
            return not row.default
        case Kind.TEXT:
            return "xterm"
        case _:
            assert_never(row.kind)


def typed(row: SettingRow, value: Any) -> str:
    """`value` as typed after the row's flag."""
    match row.kind:
        case Kind.DURATION:
            return f"{value:.10g}"
        case Kind.YES_NO:
            return "on" if value else "off"
        case Kind.TEXT:
            return str(value)
        case _:
            assert_never(row.kind)


def refused(row: SettingRow) -> tuple[str, int]:
    """A value the row refuses, as typed, and the command's exit code for it."""
    match row.kind:
        case Kind.DURATION:
            assert row.maximum is not None
            return f"{row.maximum + 1:.10g}", 7
        case Kind.YES_NO:
            return "maybe", 2
        case Kind.TEXT:
            return "two\nlines", 7
        case _:
            assert_never(row.kind)


def kept(paths: AppPaths, here: ThisComputer, row: SettingRow) -> Any:
    """The row's value where it is kept: settings.json's object for its store, or the system."""
    data = json.loads(paths.settings_file.read_text()) if paths.settings_file.exists() else {}
    match row.store:
        case Store.AGENTS:
            return data.get("ceiling", {}).get(row.name, row.default)
        case Store.NOTICES:
            return data.get("notices", {}).get(row.name, row.default)
        case Store.THIS_COMPUTER:
            return data.get(row.name, row.default)
        case Store.SYSTEM:
            return here.read(row)
        case _:
            assert_never(row.store)


def drive(qtbot: Any, editor: Any, value: Any) -> None:
    """Change the row's editor to `value` as a person does."""
    row: SettingRow = editor.row
    match row.kind:
        case Kind.DURATION:
            smallest = UNIT_SECONDS[row.units[-1]]
            rest = round(value / smallest)
            for unit, box in editor.boxes.items():
                count, rest = divmod(rest, UNIT_SECONDS[unit] // smallest)
                box.setValue(count)
        case Kind.YES_NO:
            if editor.check.isChecked() != value:
                editor.check.click()
        case Kind.TEXT:
            editor.text.clear()
            qtbot.keyClicks(editor.text, value)
            qtbot.keyClick(editor.text, Qt.Key.Key_Return)
        case _:
            assert_never(row.kind)


@pytest.fixture
def xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wr_home: Path) -> Path:
    """This test's own XDG config folder (the autostart entry goes there), for the app and the command alike."""
    folder = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    return folder


@pytest.mark.timeout(180)
@pytest.mark.parametrize("row", SETTING_ROWS, ids=[row.name for row in SETTING_ROWS])
def test_every_row_through_the_command_the_pane_and_where_it_is_kept(row: SettingRow, xdg: Path, qtbot: Any,
                                                                      run: Any) -> None:
    from workroom.agent_bundle import load_agent_bundle
    from workroom.sessions.engine import Engine
    from workroom.ui.app_controller import AppController
    from workroom.ui.main_window import MainWindow

    paths = app_paths()
    here = ThisComputer.here(profile_env())  # this computer as the command finds it
    before = listed()
    assert before == {r.name: r.default for r in SETTING_ROWS}
    value = other_value(row)

    # The command: refuses what the row cannot hold naming the flag; else sets it, and only it.
    bad, code = refused(row)
    done = workroom("settings", "set", f"--{row.flag}", bad)
    assert done.returncode == code and f"--{row.flag}" in done.stderr and "Traceback" not in done.stderr, done.stderr
    why = here.why_not(row)
    done = workroom("settings", "set", f"--{row.flag}", typed(row, value))
    if why is not None:
        assert done.returncode == 1 and f"--{row.flag}: {why}" in " ".join(done.stderr.split()), done.stderr
        line = next(line for line in workroom("settings", "get").stdout.splitlines() if line.startswith(row.flag))
        assert "cannot be changed here" in line, line
        shown, target = row.default, value
    else:
        assert done.returncode == 0, done.stderr
        assert kept(paths, here, row) == value
        assert listed() == {**before, row.name: value}
        shown, target = value, row.default

    # The pane: shows what is kept, and changes it (to the default again, or where the command could not).
    engine = Engine(paths, load_agent_bundle(paths))
    window = MainWindow(AppController(engine), login_item=XdgAutostart(os.environ, profile_env()),
                        can_hold_idle_sleep=True)
    qtbot.addWidget(window)
    window.show_settings()
    pane = window.settings
    editor = pane.editors[row.name]
    assert editor.value() == shown
    assert editor.isVisibleTo(window), "a row the pane does not show"

    async def change() -> None:
        drive(qtbot, editor, target)
        if row.store is Store.AGENTS:
            pane.apply_button.click()
            await wait_for(lambda: pane.result.text().startswith("Saved"), 10, "Apply to all hosts")
        await wait_for(lambda: kept(paths, here, row) == target, 10, f"{row.name} kept as {target!r}")
        await engine.close()

    try:
        run(change())
    finally:
        window.cards.timer.stop()
    assert listed() == {**before, row.name: target}


def test_a_file_from_before_and_from_a_newer_app_keeps_what_it_holds(xdg: Path) -> None:
    """settings.json as this app wrote it before the rows, with fields a newer app added at every level: it
    loads unchanged, and a change through the command changes that one value and keeps every other field."""
    paths = app_paths().ensure()
    older = {"version": 1, "theme": "dark",
             "ceiling": {"ceiling_seconds": 90.5, "prompt_timeout_seconds": 600.0, "ask_at_ceiling": True,
                         "quiet_hours": "22-07"},
             "login_item_offered": True, "hold_idle_sleep": True, "terminal_app": "iTerm",
             "notices": {"finished": True, "finished_after_seconds": 900.0, "finished_this_computer": False,
                         "finished_muted_hosts": ["box1"], "lost_work": False, "sound": "chime"}}
    paths.settings_file.write_text(json.dumps(older))
    values = listed()
    assert (values["ceiling_seconds"], values["ask_at_ceiling"], values["hold_idle_sleep"], values["terminal_app"],
            values["finished_after_seconds"], values["lost_work"]) == (90.5, True, True, "iTerm", 900.0, False)
    done = workroom("settings", "set", "--notify-lost-work", "on")
    assert done.returncode == 0, done.stderr
    changed = json.loads(paths.settings_file.read_text())
    older["notices"]["lost_work"] = True  # type: ignore[index]
    assert changed == older
