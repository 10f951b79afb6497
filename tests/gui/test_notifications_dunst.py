"""Ceiling-prompt notifications on a real freedesktop notification server, answered from the notification.

Everything a Linux user meets is real: an X server (Xvfb, from scripts/x_desktop.py), a private D-Bus session
bus (tests/fixtures/secret_service.py, no auto-activation), Debian's dunst on it as the notification server,
the app's own notification code (desktop-notifier over D-Bus) and the real agent (the boxd stand-in of
test_live_app.py: this computer's agent declaring a sleepable provider's traits, a 2 s ceiling in ask mode).
The buttons are pressed the way dunst offers them: `dunstctl context` hands the notification's actions to its
dmenu hook, here a script that picks the line naming the wanted button. `dbus-monitor` on the same bus reads
what the app posted (Notify and its actions) and withdrew (CloseNotification); `dunstctl count displayed`
says what is on screen.
"""

from __future__ import annotations

import asyncio
import html
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures import secret_service
from gui_helpers import OrphanJob, wait_for
from test_live_app import SleepyProvider
from workroom.core.ceiling import CeilingSettings
from workroom.core.hosts import Host
from workroom.core.provider_specs import spec_for
from workroom.ui.app import WorkroomApp
from x_desktop import Desktop, DesktopUnavailable, desktop, stop_all

pytestmark = [pytest.mark.gui, pytest.mark.integration, pytest.mark.slow,
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a freedesktop desktop (Linux)")]

TOOLS = ("dunst", "dunstctl", "dbus-monitor", "dbus-daemon")

DMENU = """#!/bin/sh
# dunst's dmenu hook: it gets one line per action ("#Keep awake (title) [id,keep]") and runs the line printed.
cat > "{folder}/offered.part"
grep -F "#$(cat "{folder}/want")" "{folder}/offered.part" | head -n 1
mv "{folder}/offered.part" "{folder}/offered.txt"  # whole, for the test to read
"""

DUNSTRC = """[global]
    dmenu = {folder}/dmenu.sh
    browser = /bin/true
    notification_limit = 0
[urgency_low]
    timeout = 0
[urgency_normal]
    timeout = 0
[urgency_critical]
    timeout = 0
[transient]
    # What GNOME Shell does by default: a notification marked transient is not kept in the server's history.
    match_transient = yes
    history_ignore = yes
"""


class NotificationServer:
    """dunst and dbus-monitor on a private bus; every wait bounded, every process stopped by PID."""

    def __init__(self, folder: Path, bus: secret_service.SecretServiceSession, x: Desktop) -> None:
        self.folder = folder
        self.env = bus.env(DISPLAY=x.display)
        self.address = bus.address
        (folder / "dmenu.sh").write_text(DMENU.format(folder=folder))
        (folder / "dmenu.sh").chmod(0o755)
        (folder / "dunstrc").write_text(DUNSTRC.format(folder=folder))
        self.monitor_log = folder / "monitor.txt"
        self.procs: list[subprocess.Popen[bytes]] = []
        with open(self.monitor_log, "wb") as out, open(folder / "dunst.log", "wb") as dunst_log:
            self.procs.append(subprocess.Popen(
                ["dbus-monitor", "--address", bus.address, "interface='org.freedesktop.Notifications'"],
                stdout=out, stderr=subprocess.STDOUT, env=self.env))
            self.procs.append(subprocess.Popen(["dunst", "-config", str(folder / "dunstrc")], env=self.env,
                                               stdout=subprocess.DEVNULL, stderr=dunst_log))
        deadline = time.monotonic() + 10
        while self.ctl("is-paused").strip() not in ("true", "false"):
            if time.monotonic() > deadline or self.procs[-1].poll() is not None:
                raise RuntimeError(f"dunst did not come up: {(folder / 'dunst.log').read_text()}")
            time.sleep(0.1)

    def history_summaries(self) -> list[str]:
        """The titles dunst keeps in its history (`dunstctl history`), newest first."""
        import json

        return [entry["summary"]["data"] for entry in json.loads(self.ctl("history"))["data"][0]]

    def ctl(self, *args: str) -> str:
        done = subprocess.run(["dunstctl", *args], env=self.env, capture_output=True, text=True, timeout=10,
                              check=False)
        return done.stdout

    def displayed(self) -> int:
        text = self.ctl("count", "displayed").strip()
        return int(text) if text.isdigit() else -1

    async def press(self, button: str) -> None:
        """Pick `button` from the displayed notification's actions, as a user does in dunst's menu."""
        (self.folder / "want").write_text(button)
        (self.folder / "offered.txt").unlink(missing_ok=True)
        proc = await asyncio.create_subprocess_exec("dunstctl", "context", env=self.env,
                                                    stdout=asyncio.subprocess.DEVNULL)
        await asyncio.wait_for(proc.wait(), 10)
        # dunst runs its dmenu hook in the background after answering dunstctl
        await wait_for(lambda: (self.folder / "offered.txt").exists(), 10, "dunst to offer the actions")

    def offered(self) -> str:
        path = self.folder / "offered.txt"
        return path.read_text() if path.exists() else ""

    def log(self) -> str:
        return self.monitor_log.read_text(errors="replace")

    def posted(self) -> list[tuple[str, list[str]]]:
        """(summary, actions) of every new notification posted on the bus, in order (a Notify that replaces one
        on screen, as a withdrawal does first, is not a new one)."""
        out = []
        for block in self.log().split("method call")[1:]:
            if "member=Notify" not in block.splitlines()[0] or _replaces(block):
                continue
            strings = re.findall(r'^\s+string "(.*)"$', block, re.M)
            # app name, icon, summary, body, then the actions array (key, label, key, label, ...)
            actions_part = block.split("array [", 1)[1].split("]", 1)[0]
            actions = re.findall(r'string "(.*)"', actions_part)
            out.append((strings[2], actions))
        return out

    def notified(self) -> list[tuple[str, str]]:
        """(summary, body) of every new notification posted on the bus, in order."""
        out = []
        for block in self.log().split("method call")[1:]:
            if "member=Notify" in block.splitlines()[0] and not _replaces(block):
                strings = re.findall(r'^\s+string "(.*)"$', block, re.M)
                out.append((strings[2], strings[3]))
        return out

    def closed_calls(self) -> int:
        return sum(1 for line in self.log().splitlines() if "member=CloseNotification" in line)

    def stop(self) -> None:
        stop_all(self.procs)


def _replaces(block: str) -> bool:
    """A Notify call whose replaces_id (its first uint32) names a notification on screen."""
    match = re.search(r"^\s+uint32 (\d+)$", block, re.M)
    return match is not None and match.group(1) != "0"


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[NotificationServer]:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (run ./dev setup)")
    try:
        with desktop((800, 600)) as x:
            bus = secret_service.start(keyring=False)
            try:
                running = NotificationServer(tmp_path, bus, x)
                try:
                    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", bus.address)  # the app's bus from here on
                    yield running
                finally:
                    running.stop()
            finally:
                secret_service.stop(bus)
    except DesktopUnavailable as error:
        pytest.skip(str(error))


@pytest.fixture
def app(engine: Any, qtbot: Any) -> Iterator[Any]:
    workroom_app = WorkroomApp(engine)
    qtbot.addWidget(workroom_app.window)
    yield workroom_app
    workroom_app.window.cards.timer.stop()


@pytest.fixture
def cpu_job() -> Iterator[OrphanJob]:
    job = OrphanJob()
    yield job
    job.stop()


PROMPT_BUTTONS = ["keep", "Keep awake", "sleep", "Let it sleep"]


def test_a_prompt_is_answered_from_its_notification_and_withdrawn_when_answered_elsewhere(
        server: NotificationServer, app: Any, engine: Any, run: Any, cpu_job: OrphanJob) -> None:
    engine.use_provider(SleepyProvider(engine.context, spec_for("boxd")))
    ceiling = CeilingSettings.model_construct(ceiling_seconds=2.0, prompt_timeout_seconds=120.0, ask_at_ceiling=True)
    engine.settings = engine.settings.model_copy(update={"ceiling": ceiling})
    cards = app.window.cards

    def prompts() -> list[tuple[str, list[str]]]:
        return [p for p in server.posted() if p[0] == "sleepy: keep it awake?"]

    async def next_prompt(count: int) -> Any:
        try:
            await wait_for(lambda: len(prompts()) >= count and server.displayed() == 1, 40,
                           f"prompt notification number {count} on the server")
        except AssertionError as error:
            raise AssertionError(f"{error}; posted {server.posted()}, displayed {server.displayed()}") from None
        return await wait_for(lambda: cards.cards.get("sleepy"), 10, "its card")

    async def scenario() -> None:
        app.controller.add_host(Host(name="sleepy", provider="boxd"))

        # 1. The notification carries both answers; answering on the card takes it back for real.
        card = await next_prompt(1)
        assert prompts()[0][1][-4:] == PROMPT_BUTTONS, prompts()[0]
        assert app.notifications.backend is not None and app.notifications.backend.name == "system"
        closes = server.closed_calls()
        card.keep_button.click()
        await wait_for(lambda: server.closed_calls() > closes, 15, "CloseNotification after the card's answer")
        await wait_for(lambda: server.displayed() == 0, 10, "the notification gone from the server")
        assert len(server.posted()) == len(prompts()), "withdrawn by replacing it with another notification"
        # Nor kept in the server's history: the withdrawn question went as a transient one (dunst's rule above).
        assert server.history_summaries() == [], "an answered prompt stayed in the notification server's history"

        # 2. Keep awake on the notification restarts the ceiling on the agent, as the card's button does.
        first = await next_prompt(2)
        key = first.key
        await server.press("Keep awake")
        assert "#Keep awake" in server.offered() and "#Let it sleep" in server.offered()
        await wait_for(lambda: "sleepy" not in cards.cards or cards.cards["sleepy"].key != key, 15,
                       "Keep awake from the notification to answer the prompt")
        assert key in cards.answered
        kept = engine.session("sleepy").status
        assert kept is not None and kept.prompt_deadline != key[1]
        assert not (kept.prompt_pending and kept.prompt_deadline == key[1])
        assert kept.awake_seconds < 2.5, "the agent's awake clock did not restart"

        # 3. Let it sleep on the notification does what the card's Let it sleep does.
        second = await next_prompt(3)
        key = second.key
        await server.press("Let it sleep")
        await wait_for(lambda: key in cards.answered and "sleepy" not in cards.cards, 15,
                       "Let it sleep from the notification to answer the card")
        assert "sleepy" not in app.tray.prompt_actions
        await wait_for(lambda: server.displayed() == 0, 10, "the answered notification gone from the server")

    run(scenario(), timeout=150)


def test_without_a_notification_service_the_balloon_is_used_and_said_so(
        app: Any, run: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    """A session bus with no notification server on it: the tray's balloon, and the log says so."""
    bus = secret_service.start(keyring=False)
    try:
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", bus.address)
        from workroom.ui.notification_delivery import Notice

        app.notifications.post(Notice("prompt:x", "x: keep it awake?", "busy"))
        run(app.notifications.drain(), timeout=20)
    finally:
        secret_service.stop(bus)
    assert app.notifications.backend is not None and app.notifications.backend.name == "tray balloon"
    assert "no notification service" in caplog.text and "balloon" in caplog.text
    assert app.notifications.service_words() is not None
    assert "no buttons" in app.notifications.service_words()
    assert os.environ["DBUS_SESSION_BUS_ADDRESS"] == bus.address


SUBJECT = '<a href="https://evil.example/login">Re-enter your SSH passphrase</a>'
ALERT = '<span size="x-large" foreground="red">KEY COMPROMISED</span> &amp; <b>bold</b> <img src="/etc/hostname"/>'


def test_host_text_reaches_the_server_as_text_never_markup(server: NotificationServer, app: Any, run: Any) -> None:
    """A job subject of `<a href>` and a `<span>` alert, in a notification's title and body, reach dunst (which
    reads body markup, and summary markup too) as those very characters: no link in its menu, no span
    rendered. `dunstctl history` shows what dunst kept and what it rendered (its `message`)."""
    import json

    from workroom.core.host_text import escape_markup, markup_inert
    from workroom.ui.notification_delivery import Notice

    title = f"box1 {ALERT} finished"
    message = f"box1 finished — {SUBJECT} for 42 min. {ALERT}"
    app.notifications.post(Notice("finished:box1", title, message))
    run(app.notifications.drain(), timeout=20)

    async def shown() -> None:
        await wait_for(lambda: server.displayed() == 1, 20, "the notification on the server")

    run(shown(), timeout=30)
    assert app.notifications.backend is not None and app.notifications.backend.name == "system"
    run(server.press("no such entry"), timeout=30)  # dunst's menu: its actions and the links it found
    offered = server.offered()
    server.ctl("close-all")  # into dunst's history, where dunstctl shows it
    entries = json.loads(server.ctl("history"))["data"][0]
    assert entries, "dunst kept nothing"
    seen = {key: value["data"] for key, value in entries[0].items() if isinstance(value, dict) and "data" in value}
    # What dunst renders (its `message`, Pango markup): every tag and entity of the host's text as characters.
    rendered = seen["message"]
    for text in (SUBJECT, ALERT):
        assert escape_markup(text) in rendered, (text, rendered)
    assert "<span" not in rendered and "<a " not in rendered and "[image]" not in rendered, rendered
    assert "Re-enter your SSH passphrase]" not in offered, f"the subject became a link in dunst's menu: {offered}"
    # The title: dunst escapes a summary itself; the app sends it markup-inert, the same words on every server.
    assert markup_inert(f"box1 {ALERT} finished") == seen["summary"]


def test_an_answer_from_any_face_takes_the_notification_back_and_a_late_press_says_what_it_did(
        server: NotificationServer, app: Any, engine: Any, run: Any, cpu_job: OrphanJob, wr_home: Path) -> None:
    """The prompt's notification goes when the prompt is answered from the menu or from `workroom keep` (a real
    command, through the app's socket), not only from the card. A notification that outlived its answer (as one
    did on notification-daemon: taken back here by not withdrawing it once) still answers a press: it acts while
    it can (a busy box on a live link is let sleep), and otherwise says, in another notification, that the prompt
    was already answered and how (before, the press was delivered and silently ignored)."""
    from workroom import single_instance
    from workroom.paths import app_paths

    engine.use_provider(SleepyProvider(engine.context, spec_for("boxd")))
    ceiling = CeilingSettings.model_construct(ceiling_seconds=2.0, prompt_timeout_seconds=120.0, ask_at_ceiling=True)
    engine.settings = engine.settings.model_copy(update={"ceiling": ceiling})
    cards = app.window.cards
    lock = single_instance.claim(app_paths())
    assert isinstance(lock, single_instance.InstanceLock)

    def prompts() -> int:
        return sum(1 for p in server.posted() if p[0] == "sleepy: keep it awake?")

    async def next_prompt(count: int) -> Any:
        await wait_for(lambda: prompts() >= count and server.displayed() == 1, 40,
                       f"prompt notification number {count} on the server")
        return await wait_for(lambda: cards.cards.get("sleepy"), 10, "its card")

    async def workroom(*argv: str) -> str:
        proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "workroom.cli", *argv,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 0, out
        return out.decode()

    async def gone(what: str, closes: int) -> None:
        await wait_for(lambda: server.closed_calls() > closes, 15, f"CloseNotification after {what}")
        await wait_for(lambda: server.displayed() == 0, 10, f"the notification gone from the server after {what}")

    async def scenario() -> None:
        await lock.serve(app.show_for_another_launch, app.run_command)
        app.controller.add_host(Host(name="sleepy", provider="boxd"))

        # 1. From the menu's pinned Keep awake.
        await next_prompt(1)
        closes = server.closed_calls()
        keep_action = app.tray.prompt_actions["sleepy"][1]
        assert keep_action.text().strip() == "Keep awake"
        keep_action.trigger()
        await gone("the menu's Keep awake", closes)

        # 2. From the command line, through the app.
        card = await next_prompt(2)
        closes = server.closed_calls()
        said = await workroom("keep", "sleepy")
        assert "kept awake" in said, said
        await gone("workroom keep", closes)
        await wait_for(lambda: cards.cards.get("sleepy") is not card, 10, "the card to go with the answer")

        # 3. A notification left up after its answer: Let it sleep on it can still act (busy, kept awake).
        card = await next_prompt(3)
        withdraw = app.notifications.withdraw
        app.notifications.withdraw = lambda key: None  # this once, the answered notification stays up
        try:
            said = await workroom("keep", "sleepy")
            await wait_for(lambda: cards.cards.get("sleepy") is not card, 10, "the card to go with the answer")
            assert server.displayed() == 1
            await server.press("Let it sleep")
            await wait_for(lambda: (lambda s: s is not None and s.let_sleep)(engine.session("sleepy").status), 15,
                           "Let it sleep from the late notification to reach the agent")
            last = engine.session("sleepy").last_answer
            assert last is not None and last.face.value == "its notification", last

            # 4. Pressed again, it cannot act (already let sleep): it says so, and how it was answered.
            await server.press("Let it sleep")
            # The body goes escaped for the server's markup (docs/ui.md): read as the server shows it.
            answered = await wait_for(lambda: [html.unescape(b) for t, b in server.notified()
                                               if t == "sleepy: already answered"],
                                      15, "a notification saying it was already answered")
        finally:
            app.notifications.withdraw = withdraw
        assert answered[-1].startswith("sleepy's question was already answered: Let it sleep, from its "
                                       "notification, "), answered
        assert "no longer kept awake" in answered[-1], answered

    try:
        run(scenario(), timeout=200)
    finally:
        lock.release()
