"""About, Help, Quit and Open in terminal, as real widgets in the real app wiring. Opening a terminal and a file
runs a stand-in program on PATH that records its argv (no terminal emulator or desktop opener here: said so)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from demo_states import make_snapshot
from gui_helpers import feed
from PySide6.QtWidgets import QApplication
from workroom.core.connection import ConnectionState
from workroom.platform import desktop_open
from workroom.ui.about_dialog import QUIT_WORDS, AboutDialog, QuitDialog, app_version

pytestmark = pytest.mark.gui


@pytest.fixture
def recorder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`xdg-open` and `x-terminal-emulator` on PATH that write their argv, one per line, to a file."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    out = tmp_path / "argv.txt"
    for name in ("xdg-open", "x-terminal-emulator", "my-term"):
        script = bin_dir / name
        script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$(basename "$0")" "$@" >> "{out}"\n')
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("TERMINAL", raising=False)
    return out


def _wait_lines(path: Path, count: int) -> list[str]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = path.read_text().splitlines() if path.exists() else []
        if len(lines) >= count:
            return lines
        time.sleep(0.05)
    raise AssertionError(f"the stand-in was not run: {path}")


def test_about_names_the_version_the_agent_build_and_the_log(app: Any, engine: Any, recorder: Path) -> None:
    app.tray.about_requested.emit()
    about = app.about
    assert isinstance(about, AboutDialog) and about.isVisible()
    text = about.text.text()
    assert app_version() in text and engine.context.bundle.sha256[:12] in text
    assert str(about.log_file) in text and about.log_file.name == "workroom.log"
    about.open_log.click()
    assert _wait_lines(recorder, 2) == ["xdg-open", str(about.log_file)]
    about.reveal_log.click()
    assert _wait_lines(recorder, 4)[2:] == ["xdg-open", str(about.log_file.parent)]
    about.accept()


def test_about_shows_a_failed_open_whole(app: Any, engine: Any) -> None:
    """The system's opener failed: the words and where the log is show whole (the dialog grows to hold every
    wrapped line; it kept its height and cut the first and last lines)."""
    app.tray.about_requested.emit()
    about = app.about
    assert isinstance(about, AboutDialog)
    about._show_failure("Could not open the log: no program on this computer opens text files (xdg-open said "
                        "'no method available for opening'). Open it with any text editor.")
    assert about.error.isVisible()
    need = about.error.heightForWidth(about.error.width())
    assert about.error.height() >= need, (about.error.height(), need)
    about.accept()


def test_quit_says_what_keeps_running_and_quits_on_the_answer(app: Any) -> None:
    app.tray.quit_requested.emit()
    dialog = app.quit_dialog
    assert isinstance(dialog, QuitDialog) and dialog.isVisible()
    assert "this computer's agent keeps running" in dialog.text() and dialog.text() == QUIT_WORDS
    assert not app.quit_event.is_set()  # asking, not quitting yet
    dialog.cancel_button.click()
    assert not app.quit_event.is_set()
    app.window.quit_requested.emit()  # ⌘Q in the window asks the same
    app.quit_dialog.quit_button.click()
    assert app.quit_event.is_set() and not app.stop_local_agent_on_quit


def test_the_tray_connects_disconnects_and_opens_a_terminal(app: Any, engine: Any, recorder: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    feed(engine, make_snapshot("box1", "ssh", ConnectionState.LIVE))
    menu = app.tray.host_menus["box1"]
    assert menu.disconnect_action.isVisible() and not menu.connect_action.isVisible()
    disconnected: list[str] = []
    monkeypatch.setattr(app.controller, "disconnect_host", disconnected.append)
    app.tray.disconnect_requested.disconnect()
    app.tray.disconnect_requested.connect(app.controller.disconnect_host)
    menu.disconnect_action.trigger()
    assert disconnected == ["box1"]
    feed(engine, make_snapshot("box1", "ssh", ConnectionState.DISCONNECTED))
    assert menu.connect_action.isVisible() and not menu.disconnect_action.isVisible()
    snapshot = app.window.model.snapshot("box1")
    from workroom.ui import row_text

    command = row_text.ssh_command(snapshot)
    assert command is not None and menu.terminal_action.isVisible()
    menu.terminal_action.trigger()
    assert _wait_lines(recorder, 5) == ["x-terminal-emulator", "-e", "sh", "-c", command]
    engine.settings = engine.settings.model_copy(update={"terminal_app": "my-term"})  # the user's pick
    menu.terminal_action.trigger()
    assert _wait_lines(recorder, 10)[5:] == ["my-term", "-e", "sh", "-c", command]


def test_no_terminal_program_is_said_in_words(app: Any, engine: Any, monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing to run
    monkeypatch.delenv("TERMINAL", raising=False)
    feed(engine, make_snapshot("box1", "ssh", ConnectionState.LIVE))
    app.open_terminal("box1")
    assert "No terminal program found" in app.window.action_error.text()


def test_macos_opens_a_command_file_with_the_chosen_terminal(tmp_path: Path) -> None:
    argv = desktop_open.terminal_argv("ssh -p 2222 dev@box1", terminal="iTerm", platform="darwin",
                                      script_dir=tmp_path)
    opener, *rest = argv  # macOS's own `open`, not run here: only the command line is checked
    assert opener == "open" and rest == ["-a", "iTerm", str(tmp_path / "workroom-ssh.command")]
    script = tmp_path / "workroom-ssh.command"
    assert script.read_text() == "#!/bin/sh\nssh -p 2222 dev@box1\n" and script.stat().st_mode & 0o777 == 0o700
    assert desktop_open.terminal_argv("x", platform="darwin", script_dir=tmp_path)[2] == "Terminal"
    assert QApplication.instance() is not None


def test_quit_and_stop_this_computers_agent_stops_it_and_keeps_its_record(app: Any, engine: Any, run: Any,
                                                                         wr_home: Path) -> None:
    """The real local agent, started by the real install path (its own supervisor here): stopped the way it was
    started, so nothing restarts it; its files stay, and the next connect starts it again."""
    from gui_helpers import agent_pids_under
    from workroom.core.connection import ConnectionState as State

    host = engine.this_computer()
    assert host is not None and app.can_stop_local_agent
    session = engine.session(host.name)
    run(session.connect(timeout=60), timeout=90)
    assert agent_pids_under(wr_home), "the local agent did not start"
    bundle = Path(engine.provider_for(host).layout(host).bundle_path).expanduser()
    run(engine.sessions.pop(host.name).close())  # what Quit does first: every session closed
    app.tray.quit_requested.emit()
    assert app.quit_dialog is not None and app.quit_dialog.stop_button is not None
    assert "stop this computer's agent" in app.quit_dialog.stop_button.text()
    app.quit_dialog.stop_button.click()
    assert app.quit_event.is_set() and app.stop_local_agent_on_quit
    run(app.stop_local_agent(), timeout=60)
    deadline = time.monotonic() + 5
    while agent_pids_under(wr_home) and time.monotonic() < deadline:  # no supervisor left to restart it
        time.sleep(0.1)
    assert agent_pids_under(wr_home) == []
    time.sleep(1.5)
    assert agent_pids_under(wr_home) == [], "something started it again"
    assert bundle.exists()  # its files stay (and with them its why-awake record)
    snap = run(engine.session(host.name).connect(timeout=60), timeout=90)
    assert snap.connection.state in (State.LIVE, State.QUIET)


def _children_defunct() -> list[str]:
    """This process's children that have exited and were never reaped (zombies), by their names."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] == "Z" and int(fields[1]) == os.getpid():
            out.append(stat.parent.joinpath("comm").read_text().strip())
    return out


@pytest.mark.linux(reason="xdg-open and /proc")
def test_a_failing_opener_is_said_and_reaped(app: Any, qtbot: Any, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """xdg-open that exits 4 (as it does when no program opens the file): About › Open log said nothing and left a
    defunct child, and Help did nothing visible. Now each says what failed, and no child is left defunct."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "xdg-open").write_text("#!/bin/sh\necho 'xdg-open: no method available' >&2\nexit 4\n")
    (bin_dir / "xdg-open").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    app.tray.about_requested.emit()
    about = app.about
    about.open_log.click()
    qtbot.waitUntil(lambda: about.error.isVisible(), timeout=10000)
    assert about.error.text() == ("xdg-open could not open it: no program on this computer opened it (exit status 4)."
                                  f" The log is {about.log_file}.")
    about.accept()
    app.tray.help_requested.emit()
    qtbot.waitUntil(lambda: app.help is not None and app.help.box is not None and app.help.box.isVisible(),
                    timeout=10000)
    text = app.help.box.text()
    assert text.startswith("xdg-open could not open it: no program on this computer opened it (exit status 4).")
    assert "docs/ui.md" in text
    app.help.box.close()
    assert _children_defunct() == []
