"""Text from a host, a file or a process reaches the screen as plain text: busy reasons (process names any
user of a shared host can choose) without control characters, and every label, tooltip, notice, card and
dialog without rendering markup (docs/ui.md, "Text is never markup")."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from demo_states import AGENT_MONOTONIC, busy, make_snapshot
from gui_helpers import feed, wait_for
from PySide6 import QtGui
from PySide6.QtCore import QPoint, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QLabel, QMenu, QMessageBox, QToolTip, QWidget
from workroom.core.connection import ConnectionState
from workroom.ui.host_table_model import Column

pytestmark = pytest.mark.gui

HOSTILE = "cpu: \x1b]0;PWNED\x07\x1b[2J<h1>x</h1><img src=q> (pid 7)"


def test_hostile_busy_reasons_are_shown_as_plain_text(window: Any, engine: Any) -> None:
    snap = make_snapshot("shared", "boxd", prompt=True, **busy(
        busy_reasons=[HOSTILE], awake_seconds=4 * 3600 + 10.0, awake_ceiling_exceeded=True, ask_at_ceiling=True,
        prompt_pending=True, prompt_deadline=AGENT_MONOTONIC + 300.0))
    feed(engine, snap)
    card = window.cards.cards["shared"]
    assert card.body.textFormat() == Qt.TextFormat.PlainText
    assert "<h1>x</h1>" in card.body.text() and "\x1b" not in card.body.text() and "\x07" not in card.body.text()
    window.select_host("shared")
    assert window.detail.tooltip.textFormat() == Qt.TextFormat.PlainText
    assert "\x1b" not in window.detail.tooltip.text()
    model = window.model
    row = model.row_of("shared")
    for column in (Column.BUSY, Column.BADGE):
        tip = model.data(model.index(row, column), Qt.ItemDataRole.ToolTipRole)
        assert "<h1>" not in tip and "\x1b" not in tip  # escaped for Qt's rich-text tooltips
    assert "&lt;h1&gt;x&lt;/h1&gt;" in model.data(model.index(row, Column.BUSY), Qt.ItemDataRole.ToolTipRole)


def test_a_prompt_is_titled_with_the_apps_name_for_the_host_never_the_hosts(window: Any, engine: Any) -> None:
    """A host whose agent calls itself "prod-db" (with a 60,000-character tail of U+202E and ESC) asks to
    be kept awake: its card and the notification name it as the app knows it."""
    from dataclasses import replace

    from workroom.core.protocol import parse_line

    snap = make_snapshot("scratch", "boxd", prompt=True, **busy(
        awake_seconds=4 * 3600 + 10.0, awake_ceiling_exceeded=True, ask_at_ceiling=True, prompt_pending=True,
        prompt_deadline=AGENT_MONOTONIC + 300.0))
    import json
    name = "prod-db" + "\u202e" * 9000 + "\x1b[2J" * 100 + "x" * 30000  # 60,000 characters in one line
    hostile = json.dumps({"event": "awake_ceiling_prompt", "workroom": name, "awake_seconds": 1.0,
                          "prompt_deadline": AGENT_MONOTONIC + 300.0}, ensure_ascii=False)
    event = parse_line(hostile.encode())
    assert len(event.workroom) <= 100 and "\x1b" not in event.workroom and "\u202e" not in event.workroom
    snap = replace(snap, prompt=event)
    raised: list[tuple[str, str]] = []
    window.cards.card_raised.connect(lambda name, title: raised.append((name, title)))
    feed(engine, snap)
    card = window.cards.cards["scratch"]
    assert card.title.text() == "scratch: keep it awake?"
    assert "prod-db" not in card.title.text() and "prod-db" not in card.body.text()
    assert raised and raised[-1] == ("scratch", "scratch")


# -- every label, tooltip, notice, card and dialog, fed markup ------------------------------------------------

NAME_A = "<img src=fifo><h1>A&B"
"""Host names come from hosts.json (a file): they may hold markup too (no '/', so the FIFO is named relative
to the test's working folder, which is where Qt looks for a relative image, and no closing tags)."""


def _named(snapshot: Any, name: str) -> Any:
    """A demo snapshot for a host called `name` (demo_states makes its address from the name)."""
    from dataclasses import replace

    from workroom.core.hosts import Host

    host = snapshot.host
    return replace(snapshot, host=Host(name=name, provider=host.provider, address="box.example"))
NAME_E = "<img src=fifo><a href=x>E"
NAME_U = "<img src=fifo><h1>U"
RICH = '<img src=fifo><h1 style="color:red">YOUR KEY IS COMPROMISED</h1><a href="https://evil.example/">re-enter</a>'
RAW_TAGS = ("<img", "<h1", "<a ")
WATCHER = """
import os, sys, time
fifo, log, stop, seconds = sys.argv[1:5]
end = time.monotonic() + float(seconds)
while time.monotonic() < end and not os.path.exists(stop):
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # succeeds only while a reader has it open
    except OSError:
        time.sleep(0.005)
        continue
    with open(log, "a") as out:
        out.write("opened\\n")
    os.close(fd)  # the reader gets end of file: nothing hangs
"""


class RefusingLoginItem:
    """A login item whose change fails with words of markup (the platform's error names a file)."""

    def state(self) -> Any:
        from workroom.platform.login_item import LoginItemState
        return LoginItemState.OFF

    def enable(self) -> None:
        from workroom.platform.login_item import LoginItemError
        raise LoginItemError(RICH)

    def disable(self) -> None:
        self.enable()

    def where(self) -> str:
        return RICH


class FifoWatch:
    """A FIFO named `fifo`, and a separate process that notices each time something opens it to read (a rich
    label loading `<img src=fifo>`), then lets that reader go with end of file. A process, not a thread: the
    GUI thread blocks in Qt's open() holding Python's lock. Bounded: it stops by itself after `seconds`."""

    def __init__(self, folder: Path, seconds: float = 240.0) -> None:
        self.fifo, self.log, self.stop_file = folder / "fifo", folder / "fifo-opened.log", folder / "fifo.stop"
        os.mkfifo(self.fifo)
        self.proc = subprocess.Popen([sys.executable, "-c", WATCHER, str(self.fifo), str(self.log),
                                      str(self.stop_file), str(seconds)])

    def opened(self) -> int:
        time.sleep(0.05)  # the watcher polls every 5 ms
        return self.log.read_text().count("opened") if self.log.exists() else 0

    def stop(self) -> None:
        self.stop_file.touch()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def fifo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FifoWatch]:
    monkeypatch.chdir(tmp_path)
    watch = FifoWatch(tmp_path)
    yield watch
    watch.stop()


def _rich(fmt: Qt.TextFormat, text: str) -> bool:
    """Whether Qt renders `text` in this format as rich text (AutoText: as Qt::mightBeRichText guesses)."""
    return fmt == Qt.TextFormat.RichText or (fmt == Qt.TextFormat.AutoText and QtGui.Qt.mightBeRichText(text))


def _raw_markup(text: str) -> bool:
    return any(tag in text for tag in RAW_TAGS)


class Walk:
    """Renders every label, tooltip and menu entry it is shown, as Qt would; notes what it rendered as rich
    text with the hostile markup still in it, and counts the FIFO's openings around each."""

    def __init__(self, watch: FifoWatch) -> None:
        self.watch = watch
        self.rich: list[str] = []
        self.opened_by: list[str] = []
        self.marks: list[str] = []
        self.seen_hostile = 0

    def _check(self, what: str, text: str, fmt: Qt.TextFormat, render: Callable[[], object]) -> None:
        if not text:
            return
        hostile = "fifo" in text or "evil.example" in text
        self.seen_hostile += hostile
        before = self.watch.opened()
        render()
        if self.watch.opened() > before:
            self.opened_by.append(f"{what}: {text[:120]!r}")
        if _rich(fmt, text) and _raw_markup(text):
            self.rich.append(f"{what}: {text[:120]!r}")

    def label(self, label: QLabel, what: str) -> None:
        self._check(f"label {what}", label.text(), label.textFormat(), label.grab)

    def tooltip(self, text: str, what: str, widget: QWidget | None = None) -> None:
        def show() -> None:
            QToolTip.showText(QPoint(10, 10), text, widget)
            QApplication.processEvents()
            QToolTip.hideText()
        self._check(f"tooltip {what}", text, Qt.TextFormat.AutoText, show)

    def widgets(self, *roots: QWidget) -> None:
        for root in roots:
            for widget in [root, *root.findChildren(QWidget)]:
                name = f"{type(widget).__name__} {widget.objectName() or ''}".strip()
                if isinstance(widget, QLabel):
                    self.label(widget, name)
                if widget.toolTip():
                    self.tooltip(widget.toolTip(), name, widget)

    def menu(self, menu: QMenu, what: str) -> None:
        for action in menu.actions():
            text = action.text()
            # A menu draws its entries as plain text, but takes a single '&' for a shortcut's mark.
            if re.search(r"&[^&]", text.replace("&&", "")):
                self.marks.append(f"{what} entry {text!r}")
            if menu.toolTipsVisible() and action.toolTip():
                self.tooltip(action.toolTip(), f"{what} entry tooltip")
            if action.menu() is not None:
                self.menu(action.menu(), what)

    def model(self, model: Any, what: str) -> None:
        for row in range(model.rowCount()):
            for column in range(model.columnCount()):
                tip = model.data(model.index(row, column), Qt.ItemDataRole.ToolTipRole)
                if tip:
                    self.tooltip(tip, f"{what} row {row} column {column}")

    def assert_clean(self) -> None:
        assert self.seen_hostile >= 10, "the hostile text did not reach the widgets the walk looked at"
        assert not self.opened_by, "rendered as rich text, loading <img src=fifo>:\n" + "\n".join(self.opened_by)
        assert not self.rich, "rendered as rich text with the host's markup in it:\n" + "\n".join(self.rich)
        assert not self.marks, "menu entries with a shortcut's mark from a host's name:\n" + "\n".join(self.marks)


def _banner_server(lines: bytes, seconds: float = 20.0) -> tuple[socket.socket, int]:
    """A TCP server on loopback whose first words are not SSH's: a line of markup, over and over (an SSH
    client quotes the last line it read as an "indecipherable protocol version"), then it holds the line."""
    listen = socket.create_server(("127.0.0.1", 0))
    listen.settimeout(seconds)

    def serve() -> None:
        try:
            conn, _ = listen.accept()
        except OSError:
            return
        with conn:
            try:
                conn.sendall(lines * 120)
                conn.settimeout(seconds)
                conn.recv(1)
            except OSError:
                pass

    threading.Thread(target=serve, daemon=True).start()
    return listen, listen.getsockname()[1]


def test_no_label_tooltip_notice_card_or_dialog_renders_host_text_as_markup(
        app: Any, engine: Any, run: Any, fifo: FifoWatch, tmp_path: Path) -> None:
    """Host names, errors, busy reasons, an uninstall answer, an apply result, a Test connection against a
    server whose banner is markup, the prompt card's error, the key and secret dialogs, the remove question,
    About, Help and the start-up error: all rendered as Qt would, with a FIFO for `<img src=…>` whose every
    opening is detected. Before: the Connection tooltip, the test result, the notice, the card's and the
    settings' labels and more rendered the markup (and opened the FIFO)."""
    from workroom.core.errors import UserError
    from workroom.core.protocol import TimelineReply
    from workroom.core.questions import HostKeyQuestion, SecretKind, SecretRequest
    from workroom.ui.about_dialog import AboutDialog, show_help
    from workroom.ui.host_key_dialog import HostKeyDialog
    from workroom.ui.login_item_offer import LoginItemOffer
    from workroom.ui.main import startup_error_box
    from workroom.ui.secret_dialog import SecretDialog

    window = app.window
    walk = Walk(fifo)
    hostile_error = UserError(RICH, RICH, RICH)
    prompt_deadline = AGENT_MONOTONIC + 300.0
    feed(engine, _named(make_snapshot("a", "boxd", prompt=True, **busy(
        busy_reasons=[f"cpu: {RICH} (pid 7)"], awake_seconds=4 * 3600 + 10.0, awake_ceiling_exceeded=True,
        ask_at_ceiling=True, prompt_pending=True, prompt_deadline=prompt_deadline)), NAME_A))
    feed(engine, _named(make_snapshot("e", "ssh", ConnectionState.ERROR, error=hostile_error.info()),
                        NAME_E))
    # A provider that could not be read says why (its CLI's words) in the row's badge, tooltip and detail.
    feed(engine, _named(make_snapshot("u", "boxd", ConnectionState.UNREADABLE, error=hostile_error.info()),
                        NAME_U))
    assert all(window.model.row_of(name) is not None for name in (NAME_A, NAME_E, NAME_U))
    window.select_host(NAME_U)
    walk.widgets(window)
    window.select_host(NAME_E)
    walk.widgets(window)
    walk.model(window.model, "host table")
    window.select_host(NAME_A)
    window.cards.cards[NAME_A].show_error(hostile_error)
    window.show_error(hostile_error)
    window._show_problems([hostile_error])
    window.controller.host_uninstalled.emit(NAME_E, RICH)
    window.left_asleep.append(NAME_A)
    window._show_left_asleep()
    window.settings.show_outcome({NAME_A: hostile_error})
    wall = time.time()
    window.timeline.show_record(TimelineReply.model_validate({"now": wall, "spans": [
        {"start": wall - 3600, "end": wall, "state": "busy", "class": "cpu", "subject": RICH}]}), (RICH,))
    walk.widgets(window)
    window.settings.show_failure(hostile_error)
    for editor in window.settings.editors.values():  # a row's note may quote the system's own error
        editor.say(RICH)
    walk.widgets(window.settings)
    # The first run's login-item offer, whose error is the platform's (it may name a file).
    offer = LoginItemOffer(RefusingLoginItem(), lambda _accepted: None)
    offer.accept_button.click()
    assert "COMPROMISED" in offer.error.text()
    walk.widgets(offer)
    strip = window.timeline.strip
    strip.resize(320, 26)
    seg = strip.segment_at(316)
    assert seg is not None and "fifo" in seg.words
    before = fifo.opened()
    QTest.mouseMove(strip, QPoint(316, 10))
    QApplication.processEvents()
    QToolTip.hideText()
    if fifo.opened() > before:
        walk.opened_by.append("the timeline strip's hover tooltip")

    # The tray: its entries, its icon's tooltip and each host's submenu.
    walk.menu(app.tray.menu, "tray")
    walk.tooltip(app.tray.icon.toolTip(), "tray icon")
    assert any("<img src=fifo><h1>A" in a.text() for a in app.tray.menu.actions()), "no hostile entry seen"

    # The add-host dialog: a field error quoting what was typed, and Test connection against a banner of markup.
    dialog = window.open_add_dialog()
    dialog.inputs["name"].setText("banner")
    dialog.inputs["address"].setText("<img src=fifo>")
    dialog.select_provider("ssh")
    dialog.try_accept()
    assert "<img src=fifo>" in dialog.errors["address"].text()
    # A platform's box in the picker, whose note quotes what the platform's CLI listed.
    from workroom.ui.ssh_aliases import PickerEntry

    dialog.add_picker_entries([PickerEntry(label=RICH, name="ws", why=RICH)])
    dialog._alias_chosen(dialog.alias_picker.count() - 1)
    assert "COMPROMISED" in dialog.picker_note.text()
    walk.widgets(dialog)
    listen, port = _banner_server(b'<img src=fifo><h1>BANNER</h1><a href="https://evil.example/">x</a>\r\n')
    try:
        dialog.inputs["address"].setText("127.0.0.1")
        dialog.inputs["port"].setText(str(port))

        async def tested() -> None:
            dialog.test_button.click()
            await wait_for(lambda: dialog.test_button.isEnabled() and "Logging in" not in dialog.test_result.text(),
                           40, "Test connection to finish")

        run(tested(), timeout=60)
    finally:
        listen.close()
    assert "BANNER" in dialog.test_result.text(), dialog.test_result.text()
    walk.widgets(dialog)
    dialog.reject()

    # Dialogs that quote a host: the key question, the secret question, the remove question.
    question = HostKeyQuestion(host=NAME_A, port=22, key_type=RICH, fingerprint="SHA256:" + RICH)
    secret = SecretRequest(SecretKind.PASSPHRASE, str(tmp_path / RICH.replace("/", "_")))
    window.select_host(NAME_A)
    remove = window.confirm_remove()
    assert remove is not None
    dialogs: list[QWidget] = [HostKeyDialog(NAME_A, question), SecretDialog(secret), remove]
    # About (its log path is a file's name), Help, and the start-up error (its message quotes a file).
    dialogs.append(AboutDialog(None, tmp_path / RICH.replace("/", "_") / "workroom.log"))
    show_help(window)
    help_box = window.findChild(QMessageBox, "help_box")
    if help_box is not None:
        dialogs.append(help_box)
    dialogs.append(startup_error_box(RICH, RICH, tmp_path / "log" / RICH.replace("/", "_")))
    walk.widgets(*dialogs)
    for widget in dialogs:
        widget.close()
    walk.assert_clean()


def test_the_balloon_fallback_gets_markup_inert_words(qapp: Any, run: Any) -> None:
    """Qt's balloon is plain on X11, but a tray on D-Bus hands it to a notification server that reads markup:
    the fallback sends words with no `& < >` at all. The tray here records what it is asked to show (no tray
    host runs offscreen: Qt would drop the call); everything else is the app's BalloonBackend."""
    from PySide6.QtWidgets import QSystemTrayIcon
    from workroom.ui.notification_delivery import BalloonBackend, Notice

    class RecordingTray(QSystemTrayIcon):
        def __init__(self) -> None:
            super().__init__()
            self.shown: list[tuple[str, str]] = []

        def isVisible(self) -> bool:
            return True

        def showMessage(self, title: str, message: str, *_: object) -> None:  # type: ignore[override]
            self.shown.append((title, message))

    tray = RecordingTray()
    backend = BalloonBackend(tray, lambda key: None)
    backend._can_show = lambda: True  # type: ignore[method-assign]
    run(backend.post(Notice("finished:x", f"{NAME_A} finished", f"x finished — {RICH}")))
    (title, message), = tray.shown
    assert not set("<>&") & set(title + message)
    assert "YOUR KEY IS COMPROMISED" in message and "\uff1cimg src=fifo\uff1e" in message
