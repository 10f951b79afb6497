"""Adding and looking after hosts the way VS Code's Remote Explorer does: aliases from ~/.ssh/config, a key
file browser, Test connection (against the real sshd fixture), Edit host, Retry now, shortcuts, a right-click
menu on rows, double-click for details, and a window that remembers its size and place."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from demo_states import every_state
from fixtures.fifo import within
from gui_helpers import feed, open_dialog, wait_for
from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from workroom.core.hosts import Host, IdentityRef
from workroom.ui.host_dialog import AddHostDialog
from workroom.ui.ssh_aliases import config_aliases

pytestmark = pytest.mark.gui


def test_aliases_from_ssh_config_with_include(tmp_path: Path) -> None:
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "conf.d" / "work").write_text("Host build-*\n  User ci\nHost gpu-box\n  HostName 10.0.0.9\n")
    config = tmp_path / "config"
    config.write_text("# mine\nHost devbox devbox-alt\n  HostName 10.0.0.2\nHost *\n  ServerAliveInterval 5\n"
                      "Host !bad ok?\nInclude conf.d/*\nHost=laptop2\n")
    assert config_aliases(config) == ["devbox", "devbox-alt", "gpu-box", "laptop2"]
    assert config_aliases(tmp_path / "missing") == []


def test_a_fifo_as_ssh_config_or_an_included_file_gives_no_aliases_instead_of_a_frozen_dialog(
        tmp_path: Path) -> None:
    fifo = tmp_path / "fifo-config"
    os.mkfifo(fifo)
    assert within(lambda: config_aliases(fifo), [fifo]) == []
    config = tmp_path / "config"
    config.write_text(f"Host devbox\nInclude {fifo}\nHost laptop2\n")
    assert within(lambda: config_aliases(config), [fifo]) == ["devbox", "laptop2"]


def test_picking_an_alias_fills_the_name_and_a_key_from_the_browser(engine: Any, qtbot: Any, tmp_path: Path) -> None:
    dialog = AddHostDialog(engine.hosts, aliases=["devbox", "gpu-box"])
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.alias_picker.isVisible()
    dialog.alias_picker.setCurrentIndex(1)
    dialog.alias_picker.activated.emit(1)
    assert dialog.inputs["name"].text() == "devbox" and dialog.inputs["address"].text() == ""  # type: ignore[union-attr]
    assert dialog.inputs["provider"].currentData() == "ssh"  # type: ignore[union-attr]
    key = tmp_path / "id_test"
    key.write_text("not really a key\n")
    browser = dialog.browse_key()
    assert browser.isVisible()
    browser.selectFile(str(key))
    browser.accept()
    assert dialog.inputs["identity"].text() == str(key)  # type: ignore[union-attr]
    dialog.try_accept()
    assert dialog.host is not None and dialog.host.identity == IdentityRef.file(str(key))
    assert dialog.host.name == "devbox" and dialog.host.address is None


@pytest.mark.integration
def test_test_connection_reaches_the_real_sshd_and_says_why_not(window: Any, engine: Any, run: Any,
                                                                 sshd: Any) -> None:
    dialog = window.open_add_dialog()
    assert dialog.test_button.isVisible()
    fields = {"name": "sshd-box", "address": sshd.host, "port": str(sshd.port), "user": sshd.user,
              "identity": str(sshd.key_path)}
    for key, value in fields.items():
        dialog.inputs[key].setText(value)
    dialog.select_provider("ssh")

    from workroom.ui.host_key_dialog import HostKeyDialog

    async def answer_key(trust: bool) -> str:
        """Test connection on a host whose key is new: the key question comes first, then (on Trust) the
        login; the words come only once the login has been tried."""
        dialog.test_button.click()
        question = await wait_for(lambda: open_dialog(HostKeyDialog), 40, "the host-key question")
        assert "Reached" not in dialog.test_result.text()  # not reported as reached at the key question
        offered = question.text.text()
        assert "offered an Ed25519 key (ssh-ed25519) this computer" in offered, offered  # not "a ssh-ed25519"
        (question.trust_button if trust else question.cancel_button).click()
        await wait_for(lambda: dialog.test_button.isEnabled() and "Logging in" not in dialog.test_result.text(),
                       40, "Test connection to finish")
        return str(dialog.test_result.text())

    words = run(answer_key(False), timeout=60)
    assert "not trusted" in words and "login was not tried" in words, words
    words = run(answer_key(True), timeout=60)
    assert "logged in" in words and "now trusted" in words, words
    assert engine.hosts.get("sshd-box") is None  # testing saves no host (the trusted key is kept)
    dialog.inputs["port"].setText("1")  # nobody listens on port 1 of loopback

    async def refused() -> None:
        dialog.test_button.click()
        await wait_for(lambda: dialog.test_button.isEnabled() and "Reached" not in dialog.test_result.text()
                       and "Logging in" not in dialog.test_result.text(), 40, "Test connection to fail")

    run(refused(), timeout=60)
    words = dialog.test_result.text()
    assert words and "Error" not in words.split(":")[0] and "Traceback" not in words
    dialog.reject()


def test_edit_host_changes_it_and_keeps_its_name(window: Any, engine: Any, run: Any) -> None:
    window.controller.add_host(Host(name="devbox", provider="ssh", address="10.9.9.9"), connect=False)
    window.select_host("devbox")
    assert window.edit_button.isEnabled()
    dialog = window.open_edit_dialog()
    assert dialog.windowTitle() == "Edit host" and dialog.ok_button.text() == "Save"
    assert dialog.inputs["address"].text() == "10.9.9.9" and dialog.inputs["name"].isReadOnly()
    dialog.inputs["address"].setText("10.9.9.10")
    dialog.inputs["port"].setText("2222")

    async def saved() -> None:
        dialog.try_accept()
        await wait_for(lambda: (engine.hosts.get("devbox") or Host(name="x")).address == "10.9.9.10", 10,
                       "the edited host to be saved")

    run(saved())
    assert engine.hosts.require("devbox").port == 2222
    local = engine.hosts.hosts[0].name
    window.select_host(local)
    assert not window.edit_button.isEnabled()  # this computer has nothing to edit


def _save_edit(window: Any, engine: Any, run: Any, name: str, **fields: str) -> None:
    """Edit `name` through the real dialog (Save), and wait until the edit is saved or refused."""
    window.select_host(name)
    dialog = window.open_edit_dialog()
    assert dialog is not None and dialog.inputs["name"].isReadOnly()
    for key, value in fields.items():
        dialog.inputs[key].setText(value)
    before = engine.hosts.get(name)

    async def saved() -> None:
        dialog.try_accept()
        assert dialog.host is not None, {k: v.text() for k, v in dialog.errors.items() if v.text()}
        await wait_for(lambda: engine.hosts.get(name) != before or window.action_error.isVisible(), 10,
                       "the edit to be saved or refused")

    run(saved())


def test_editing_the_port_keeps_the_hourly_price_and_every_field_the_dialog_does_not_change(
        window: Any, engine: Any, run: Any) -> None:
    window.controller.add_host(Host(name="gpu", provider="boxd", address="10.9.9.9", user="me",
                                    idle_window_seconds=1234567.0, reference={"machine": "gpu-1"}), connect=False)
    window.controller.set_hourly_price("gpu", 0.5)
    _save_edit(window, engine, run, "gpu", port="2222")
    assert not window.action_error.isVisible()
    edited = engine.hosts.require("gpu")
    assert edited == Host(name="gpu", provider="boxd", address="10.9.9.9", port=2222, user="me",
                          idle_window_seconds=1234567.0, reference={"machine": "gpu-1"}, hourly_price=0.5)
    on_disk = json.loads(engine.paths.hosts_file.read_text())
    saved = next(h for h in on_disk["hosts"] if h["name"] == "gpu")
    assert saved["port"] == 2222 and saved["hourly_price"] == 0.5 and saved["idle_window_seconds"] == 1234567.0
    assert saved["reference"] == {"machine": "gpu-1"}
    assert window.model.snapshot("gpu").host.hourly_price == 0.5


@pytest.fixture
def old_file_window(wr_home: Path, aloop: Any, qtbot: Any) -> Iterator[Any]:
    """The window over a hosts.json from before names starting with '-' were refused: it holds '-old'."""
    import asyncio

    from workroom.agent_bundle import load_agent_bundle
    from workroom.paths import app_paths
    from workroom.sessions.engine import Engine
    from workroom.ui.app_controller import AppController
    from workroom.ui.main_window import MainWindow

    paths = app_paths().ensure()
    paths.hosts_file.write_text(json.dumps({"version": 1, "hosts": [
        {"name": "-old", "provider": "ssh", "address": "10.9.9.9", "hourly_price": 1.25}]}))
    engine = Engine(paths, load_agent_bundle(paths))
    assert engine.hosts.names() == ["-old"] and not engine.problems
    win = MainWindow(AppController(engine))
    qtbot.addWidget(win)
    win.show()
    yield win
    win.cards.timer.stop()
    aloop.run_until_complete(asyncio.wait_for(engine.close(), 15))


def test_editing_a_host_from_an_old_file_whose_name_starts_with_a_dash_keeps_it(
        old_file_window: Any, run: Any) -> None:
    window = old_file_window
    engine = window.controller.engine
    _save_edit(window, engine, run, "-old", port="2222")
    assert not window.action_error.isVisible(), window.action_error.text()
    assert engine.hosts.require("-old").port == 2222 and engine.hosts.require("-old").hourly_price == 1.25
    on_disk = json.loads(engine.paths.hosts_file.read_text())
    assert [(h["name"], h.get("port")) for h in on_disk["hosts"]] == [("-old", 2222)]
    assert window.model.row_of("-old") is not None
    # An address the edit brings in still meets the rules of a new host: said under the field, nothing saved.
    window.select_host("-old")
    dialog = window.open_edit_dialog()
    dialog.inputs["address"].setText("-oProxyCommand=x")
    dialog.try_accept()
    assert dialog.host is None and dialog.errors["address"].isVisible()
    assert "cannot start with '-'" in dialog.errors["address"].text()
    # An address ssh itself refuses (a shell would read it in a Match exec): said under the field too.
    dialog.inputs["address"].setText("x;id>/tmp/pwned;")
    dialog.try_accept()
    assert dialog.host is None and "cannot contain ';'" in dialog.errors["address"].text()
    dialog.reject()
    assert engine.hosts.require("-old").address == "10.9.9.9"


def test_an_edit_the_engine_refuses_is_shown_in_words_and_changes_nothing(
        window: Any, engine: Any, run: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from workroom import storage

    controller = window.controller
    controller.add_host(Host(name="gpu", provider="ssh", address="10.9.9.9"), connect=False)
    controller.set_hourly_price("gpu", 0.5)
    before, file_before = engine.hosts, engine.paths.hosts_file.read_text()
    session = engine.sessions.get("gpu")

    def refused(host: Host) -> str:
        window.action_error.hide()

        async def shown() -> None:
            controller.edit_host("gpu", host)
            await wait_for(window.action_error.isVisible, 10, "the refusal to be shown")

        run(shown())
        assert engine.hosts == before and engine.paths.hosts_file.read_text() == file_before
        assert engine.sessions.get("gpu") is session and window.model.row_of("gpu") is not None
        text: str = window.action_error.text()
        assert "Error" not in text and "Traceback" not in text
        return text

    assert "address cannot start with" in refused(Host(name="gpu", provider="ssh", address="-oProxyCommand=x"))
    assert "name cannot be changed" in refused(Host(name="gpu2", provider="ssh", address="10.9.9.9"))

    def unwritable(*_: object) -> None:
        raise PermissionError(13, "Permission denied", str(engine.paths.hosts_file))

    monkeypatch.setattr(storage, "save_hosts", unwritable)
    assert "Changes not saved" in refused(Host(name="gpu", provider="ssh", address="10.9.9.9", port=2222))


def test_shortcuts_right_click_menu_and_double_click(window: Any, engine: Any, qtbot: Any) -> None:
    keys = {name: action.shortcut() for name, action in window.actions_by_name.items()}
    assert keys["add"] == QKeySequence(QKeySequence.StandardKey.New)
    assert keys["remove"] == QKeySequence(QKeySequence.StandardKey.Delete)
    assert keys["close"].toString() == "Ctrl+W"
    assert keys["quit"].toString() == "Ctrl+Q"
    assert keys["settings"].toString() == "Ctrl+,"
    quits: list[bool] = []
    window.quit_requested.connect(lambda: quits.append(True))
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=2000)
    qtbot.keyClick(window.table, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    assert quits == [True]
    qtbot.keyClick(window.table, Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)
    assert window.tabs.currentIndex() == 1
    window.tabs.setCurrentIndex(0)
    qtbot.keyClick(window.table, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert isinstance(window.add_dialog, AddHostDialog) and window.add_dialog.isVisible()
    window.add_dialog.reject()
    for snap in every_state().values():
        feed(engine, snap)
    menus = {name: [a.text() for a in window.row_menu(name).actions() if not a.isSeparator()]
             for name in ("nightly", "build-box", "gpu-box", "render-farm")}
    assert menus["nightly"][0] == "Wake and connect"
    assert menus["build-box"][0] == "Retry now"
    assert menus["gpu-box"][0] == "Disconnect" and "Copy ssh command" in menus["gpu-box"]
    assert "Keep awake" in menus["render-farm"]
    row = window.model.row_of("build-box")
    rect = window.table.visualRect(window.model.index(row, 0))
    qtbot.mouseDClick(window.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.detail.snapshot.host.name == "build-box"
    assert window.detail.primary_button() is window.detail.connect_button
    assert window.detail.connect_button.text() == "Retry now"


def test_window_remembers_its_size_and_place(engine: Any, qtbot: Any) -> None:
    from workroom.ui.app_controller import AppController
    from workroom.ui.main_window import MainWindow

    first = MainWindow(AppController(engine))
    qtbot.addWidget(first)
    first.show()
    first.resize(700, 480)  # within the offscreen screen (800 x 600), which restoring clamps to
    first.move(40, 30)
    qtbot.wait(20)
    first.hide()
    second = MainWindow(AppController(engine))
    qtbot.addWidget(second)
    assert second.geometry_restored
    assert (second.width(), second.height()) == (700, 480)
