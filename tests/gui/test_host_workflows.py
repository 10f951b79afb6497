"""Adding and looking after hosts the way VS Code's Remote Explorer does: aliases from ~/.ssh/config, a key
file browser, Test connection (against the real sshd fixture), Edit host, Retry now, shortcuts, a right-click
menu on rows, double-click for details, and a window that remembers its size and place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from demo_states import every_state
from gui_helpers import feed, wait_for
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


def test_picking_an_alias_fills_the_name_and_a_key_from_the_browser(engine: Any, qtbot: Any, tmp_path: Path) -> None:
    dialog = AddHostDialog(engine.hosts, aliases=["devbox", "gpu-box"])
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.alias_picker.isVisible()
    dialog.alias_picker.setCurrentIndex(1)
    dialog.alias_picker.activated.emit(1)
    assert dialog.inputs["name"].text() == "devbox" and dialog.inputs["address"].text() == ""  # type: ignore[union-attr]
    assert dialog.inputs["provider"].currentText() == "ssh"  # type: ignore[union-attr]
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
    dialog.inputs["provider"].setCurrentText("ssh")

    async def reached() -> None:
        dialog.test_button.click()
        await wait_for(lambda: dialog.test_button.isEnabled() and "Reached" in dialog.test_result.text(), 40,
                       "Test connection to reach the sshd")

    run(reached(), timeout=60)
    assert "host key is new" in dialog.test_result.text()
    assert engine.hosts.get("sshd-box") is None  # testing saves nothing
    dialog.inputs["port"].setText("1")  # nobody listens on port 1 of loopback

    async def refused() -> None:
        dialog.test_button.click()
        await wait_for(lambda: dialog.test_button.isEnabled() and "Reached" not in dialog.test_result.text()
                       and "Connecting" not in dialog.test_result.text(), 40, "Test connection to fail")

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
