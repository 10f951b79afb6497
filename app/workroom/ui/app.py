"""Puts the app together: engine -> controller -> window + menu-bar item, and the way out.

Quit from the menu, a system quit (logout, Activity Monitor: a Qt Quit event) and SIGTERM all take the
same way out: every session is closed before the event loop stops (docs/macos.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, QSocketNotifier, Qt
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from workroom.core.errors import UserError
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.notification_rules import prompt_note
from workroom.core.prompt_answers import AnswerFace, already_answered
from workroom.core.protocol import Method, Verdict
from workroom.paths import app_log_folder
from workroom.platform.desktop_open import DesktopOpenError, open_terminal
from workroom.platform.login_item import LoginItem
from workroom.platform.logs import LOG_FILE_NAME
from workroom.platform.macos import AppNapGuard, IdleSleepGuard, bring_to_front, hide_dock_icon, power
from workroom.sessions.engine import Engine
from workroom.ui import row_text
from workroom.ui.app_controller import AppController
from workroom.ui.computer_sleep import ComputerSleepWatch
from workroom.ui.file_watch import FileWatch
from workroom.ui.main_window import SETTINGS_TAB, MainWindow
from workroom.ui.notification_delivery import BackendFactory, Notice, NoticeButton, Notifications, choose_backend
from workroom.ui.notification_tracker import HostNotices
from workroom.ui.open_failed import OpenFailed
from workroom.ui.tray import TrayController, copy_to_clipboard

if TYPE_CHECKING:  # the dialogs load when one opens, not at start-up (docs/architecture.md)
    from workroom.app_link import LinkTerminal
    from workroom.ui.about_dialog import AboutDialog, Help, QuitDialog

log = logging.getLogger(__name__)


KEEP_BUTTON, SLEEP_BUTTON = "keep", "sleep"
PROMPT_BUTTONS = (NoticeButton(KEEP_BUTTON, "Keep awake"), NoticeButton(SLEEP_BUTTON, "Let it sleep"))
"""A ceiling prompt's notification: the same two answers as its card and its pinned menu entry."""


NOTIFICATIONS_DRAIN_SECONDS = 2.0


def prompt_key(name: str) -> str:
    return f"prompt:{name}"


def answered_key(name: str) -> str:
    """The notice that says a prompt was already answered (a click on its notification came too late)."""
    return f"answered:{name}"


class WorkroomApp:
    def __init__(self, engine: Engine, *, login_item: LoginItem | None = None,
                 notification_backend: BackendFactory = choose_backend,
                 tray_icon: QSystemTrayIcon | None = None) -> None:
        """`tray_icon`: the icon shown while the app started (ui/early_tray.py); the tray adopts it."""
        self.controller = AppController(engine)
        self.idle_sleep = IdleSleepGuard()
        self.idle_sleep.set_enabled(engine.settings.hold_idle_sleep)
        self.window = MainWindow(self.controller, login_item=login_item, can_hold_idle_sleep=power() is not None)
        self.tray = TrayController(icon=tray_icon)
        self.notifications = Notifications(self.tray.icon, notification_backend)
        self.notification_tracker = HostNotices(self.notifications, lambda: self.controller.notice_settings)
        self.quit_event = asyncio.Event()
        self.app_nap = AppNapGuard()
        self.sleep_watch = ComputerSleepWatch()
        self.file_watch = FileWatch(engine)
        """hosts.json, settings.json and the state files changed by another process: the engine reads them again."""
        self._kept_by_this_computer: set[str] = set()
        """Hosts whose keep-awake is this computer's own polls (request-metered, busy): they stop while it sleeps."""
        self.can_stop_local_agent = engine.this_computer() is not None
        self.stop_local_agent_on_quit = False
        self.about: AboutDialog | None = None
        self.help: Help | None = None
        self.quit_dialog: QuitDialog | None = None
        self._slept_while_kept: set[str] = set()
        """After this computer slept: the hosts it was keeping awake, to be told about if they are found asleep."""
        self._last_state: dict[str, str] = {}
        self._quit_filter = _QuitFilter(self.request_quit)
        self._signal_pipe: tuple[socket.socket, socket.socket] | None = None
        self._signal_notifier: QSocketNotifier | None = None
        self._previous_wakeup_fd = -1
        self._previous_sigterm: Any = signal.SIG_DFL
        self._connect_after: asyncio.Task[None] | None = None
        self._asked_at: dict[str, float] = {}
        """Per host, when (Unix time) the prompt last notified was announced."""
        self._announced: dict[str, float] = {}
        """Per host, the deadline of the prompt last notified: the same prompt back after a reconnect is
        shown again, not announced again."""
        self._terminal_failed = OpenFailed()
        """The terminal did not start, or failed at once: said in the window."""
        self._terminal_failed.said.connect(
            lambda words: self.window.show_error(UserError("No terminal opened", words, "")))
        self._wire()
        for snapshot in self.window.model.snapshots():
            self.tray.update(snapshot)

    def _wire(self) -> None:
        c, t, w = self.controller, self.tray, self.window
        c.snapshot_changed.connect(t.update)
        c.snapshot_changed.connect(self._track_pending)
        c.host_removed.connect(lambda name: self.app_nap.release(name))
        c.host_removed.connect(self._forget_notices)
        c.host_removed.connect(lambda name: self.idle_sleep.release(name))
        c.local_settings_changed.connect(lambda: self.idle_sleep.set_enabled(c.engine.settings.hold_idle_sleep))
        self.sleep_watch.woke.connect(self._computer_woke)
        c.host_added.connect(t.update)
        c.host_removed.connect(t.remove)
        t.open_requested.connect(bring_to_front)
        t.open_requested.connect(w.bring_up)
        t.settings_requested.connect(bring_to_front)
        t.settings_requested.connect(w.show_settings)
        t.connect_all_requested.connect(w.connect_all)
        t.quit_requested.connect(self.confirm_quit)
        w.quit_requested.connect(self.confirm_quit)
        t.about_requested.connect(self.show_about)
        t.help_requested.connect(self.show_help)
        t.disconnect_requested.connect(c.disconnect_host)
        t.terminal_requested.connect(self.open_terminal)
        t.host_requested.connect(self._show_host)
        t.connect_requested.connect(c.connect_clicked)
        t.keep_requested.connect(lambda name: self._keep(name, AnswerFace.MENU))
        t.let_sleep_requested.connect(lambda name: w.cards.dismiss(name, AnswerFace.MENU))
        t.copy_requested.connect(self._copy_ssh)
        w.cards.card_raised.connect(self._notify_card)
        c.snapshot_changed.connect(self._withdraw_answered)
        c.snapshot_changed.connect(self.notification_tracker.on_snapshot)
        c.local_settings_changed.connect(self.notification_tracker.settings_changed)
        w.cards.prompt_answered.connect(t.answered)
        w.cards.prompt_answered.connect(lambda name: self.notifications.withdraw(prompt_key(name)))
        self.notifications.button_pressed.connect(self._notification_button)
        self.notifications.clicked.connect(self._notification_clicked)
        w.tabs.currentChanged.connect(self._tab_changed)
        self.notifications.service_changed.connect(
            lambda: w.settings.show_notification_service(self.notifications.service_words()))

    def _keep(self, name: str, face: AnswerFace) -> None:
        if not self.window.cards.keep_host(name, face):
            self.window.keep_host(name, face)

    def _let_sleep(self, task: str, name: str, face: AnswerFace) -> None:
        async def let_sleep() -> None:
            await self.controller.agent(name)(Method.LET_SLEEP, face=face)

        self.controller.tasks.run(task, let_sleep())

    def open_terminal(self, name: str) -> None:
        """Open in terminal: the user's terminal app running the host's ssh command."""
        snapshot = self.window.model.snapshot(name)
        command = row_text.ssh_command(snapshot) if snapshot is not None else None
        if command is None:
            return
        try:
            open_terminal(command, terminal=self.controller.engine.settings.terminal_app,
                          on_failed=self._terminal_failed.said.emit)
        except DesktopOpenError as error:
            self._terminal_failed.said.emit(str(error))

    def show_about(self) -> None:
        from workroom.ui.about_dialog import AboutDialog

        bring_to_front()
        self.about = AboutDialog(self.controller.engine.context.agent_bundle(), app_log_folder() / LOG_FILE_NAME,
                                 self.window)
        self.about.open()

    def confirm_quit(self) -> None:
        """Quit from the menu or the keyboard says what keeps running first (a system quit does not ask)."""
        from workroom.ui.about_dialog import QuitDialog

        bring_to_front()
        self.quit_dialog = QuitDialog(self._quit_answered, can_stop_local_agent=self.can_stop_local_agent,
                                      parent=self.window)
        self.quit_dialog.open()

    def show_help(self) -> None:
        from workroom.ui.about_dialog import show_help

        self.help = show_help(self.window)

    def _quit_answered(self, stop_local_agent: bool) -> None:
        self.stop_local_agent_on_quit = stop_local_agent
        self.request_quit()

    async def stop_local_agent(self) -> None:
        """Quit and stop this computer's agent: the way it was started (systemd, launchd or its own supervisor,
        so nothing starts it again); its files, and so its why-awake record, stay for the next start."""
        host = self.controller.engine.this_computer()
        if host is None:
            return
        try:
            report = await self.controller.engine.uninstall_agent(host, stop_only=True)
        except UserError as error:
            log.warning("quit: this computer's agent was not stopped: %s", error.info().text())
            return
        log.info("quit: this computer's agent stopped (%s)", ", ".join(report.stopped) or "it was not running")

    def _copy_ssh(self, name: str) -> None:
        snapshot = self.window.model.snapshot(name)
        command = row_text.ssh_command(snapshot) if snapshot is not None else None
        if command is not None:
            copy_to_clipboard(command)

    def _track_pending(self, snapshot: HostSnapshot) -> None:
        state = snapshot.connection.state.value
        if self._last_state.get(snapshot.host.name) != state:
            self._last_state[snapshot.host.name] = state
            log.info("%s: %s", snapshot.host.name, state)
        if needs_full_speed(snapshot):
            self.app_nap.hold(snapshot.host.name)
        else:
            self.app_nap.release(snapshot.host.name)
        name = snapshot.host.name
        if snapshot.kept_by_this_computer:
            self._kept_by_this_computer.add(name)
            self.idle_sleep.hold(name)
        else:
            self._kept_by_this_computer.discard(name)
            self.idle_sleep.release(name)
        if name in self._slept_while_kept and snapshot.connection.spec.asleep:
            self._slept_while_kept.discard(name)
            self.notifications.post(Notice(
                f"slept:{name}", f"{name} went to sleep while this computer slept",
                f"This computer was keeping {name} awake while it was busy, and its provider "
                "suspended it meanwhile: work on it may have been cut short. "
                + ("Settings can hold off this Mac's idle sleep while a box it keeps awake is busy."
                   if power() is not None else "Keep this computer awake while such a job runs.")))

    def _computer_woke(self, slept_seconds: float) -> None:
        """This computer was asleep: the boxes it was keeping awake by its own polls may have been suspended."""
        log.info("this computer was asleep for about %.0f s", slept_seconds)
        self._slept_while_kept = set(self._kept_by_this_computer)

    def _show_host(self, name: str) -> None:
        bring_to_front()
        self.window.select_host(name)
        self.window.bring_up()

    def _notify_card(self, name: str, _workroom: str) -> None:
        """Titled with the app's own name for the host (`name`), never the one its agent sends."""
        snapshot = self.window.model.snapshot(name)
        deadline = row_text.prompt_deadline(snapshot) if isinstance(snapshot, HostSnapshot) else None
        if deadline is not None:
            if self._announced.get(name) == deadline:
                return  # this prompt was announced before its link dropped; its card and menu entry are back
            self._announced[name] = deadline
            self._asked_at[name] = time.time()
        detail = ""
        if isinstance(snapshot, HostSnapshot) and snapshot.status is not None:
            now = row_text.agent_now(snapshot, time.monotonic())
            if now is not None:
                detail = prompt_note(snapshot.status, now, deadline)
        self.notifications.post(Notice(
            prompt_key(name), f"{name}: keep it awake?", detail or f"{name} has been busy past its ceiling.",
            buttons=PROMPT_BUTTONS, sticky=True))

    def _withdraw_answered(self, snapshot: HostSnapshot) -> None:
        """A prompt answered anywhere (here, another computer) or run out, or whose link is gone: its
        notification is taken back (the card and the pinned entry go by the same rule)."""
        name = snapshot.host.name
        if self.notifications.showing(prompt_key(name)) and (
                row_text.prompt_deadline(snapshot) != self._announced.get(name)
                or self.tray.answered_prompts.get(name) == self._announced.get(name)):
            self.notifications.withdraw(prompt_key(name))

    def _tab_changed(self, index: int) -> None:
        if index == SETTINGS_TAB:  # notifications may have been turned off or on in System Settings meanwhile
            with contextlib.suppress(RuntimeError):  # no loop running (a test driving the window by hand)
                asyncio.get_running_loop()
                self.controller.tasks.run("notification-permission", self.notifications.refresh_authorisation())

    def _notification_button(self, key: str, button: str) -> None:
        """A notification's button: exactly what the card's (and the menu's) buttons do while its prompt waits.
        One left from a prompt already answered (its notification outlived the answer) acts if it still can — a
        busy box on a live link can still be kept awake or let sleep — and otherwise says the prompt was already
        answered, and how."""
        kind, _, name = key.partition(":")
        if kind == "stopping":  # a platform about to stop a busy box (ui/notification_tracker.py)
            self.notifications.withdraw(key)
            if button == KEEP_BUTTON:
                # restarts the ceiling, and so the extensions (a let-go box is connected to)
                self._keep(name, AnswerFace.NOTIFICATION)
            elif button == SLEEP_BUTTON:
                snapshot = self.window.model.snapshot(name)
                if isinstance(snapshot, HostSnapshot) and snapshot.connection.spec.live:  # else: already let go
                    self._let_sleep(f"let-sleep-{name}", name, AnswerFace.NOTIFICATION)
            return
        if kind != "prompt" or button not in (KEEP_BUTTON, SLEEP_BUTTON):
            return
        face = AnswerFace.NOTIFICATION
        if button == KEEP_BUTTON and self.window.cards.keep_host(name, face):
            return
        if button == SLEEP_BUTTON and self.window.cards.dismiss(name, face):
            return
        snapshot = self.window.model.snapshot(name)
        if snapshot is None:
            return  # removed since
        status = snapshot.status
        live = row_text.is_live(snapshot)
        busy = live and status is not None and status.classifier_verdict is Verdict.BUSY
        if button == KEEP_BUTTON and busy and snapshot.traits.metering.sleeps:
            log.info("%s: Keep awake from a notification whose prompt was already answered: sent", name)
            self.window.keep_host(name, face)
            return
        if button == SLEEP_BUTTON and busy and status is not None and not status.suppressed:
            log.info("%s: Let it sleep from a notification whose prompt was already answered: sent", name)
            self._let_sleep(f"let-sleep:{name}", name, face)
            return
        words = already_answered(name, snapshot.last_answer, status, self._asked_at.get(name), time.time(),
                                 live=live, asleep=snapshot.connection.spec.asleep)
        log.info("%s: a button on an answered prompt's notification: %s", name, words)
        self.notifications.post(Notice(answered_key(name), f"{name}: already answered", words))

    def _notification_clicked(self, key: str) -> None:
        _, _, name = key.partition(":")
        if self.window.model.row_of(name) is not None:  # a host removed since has nothing to show
            self._show_host(name)

    def _forget_notices(self, name: str) -> None:
        self.notifications.withdraw(prompt_key(name))
        self.notifications.withdraw(answered_key(name))
        self.notification_tracker.forget(name)

    def start(self, *, connect: bool = True, show_window: bool = False) -> None:
        """Show the tray (or, without one, the window) and connect every host in the background."""
        has_tray = self.tray.show()
        self.window.hide_on_close = has_tray
        if show_window or not has_tray:
            self.window.bring_up()
        hide_dock_icon()  # a no-op off macOS
        self.sleep_watch.start()
        self.file_watch.start()
        if connect:
            self.controller.connect_all()  # never wakes a sleeping box just to look

    def connect_when(self, ready: Awaitable[object]) -> asyncio.Task[None]:
        """Connect every host once `ready` is done (the login shell's environment read), unless quitting by
        then; a `ready` that failed is logged and the hosts connect all the same."""

        async def connect() -> None:
            try:
                await ready
            except Exception:
                log.exception("reading the login shell's environment failed; connecting with this one")
            if not self.quit_event.is_set():
                self.controller.connect_all()  # never wakes a sleeping box just to look

        self._connect_after = asyncio.get_running_loop().create_task(connect(), name="connect-after-login-env")
        return self._connect_after

    def request_quit(self) -> None:
        self.quit_event.set()

    @property
    def log_path(self) -> Path | None:
        return app_log_folder() / LOG_FILE_NAME

    def quit(self) -> None:
        """`workroom app quit`: the same orderly quit as the menu's (every session closed first), unasked."""
        log.info("quit requested by `workroom app quit`")
        self.request_quit()

    async def run_command(self, argv: list[str], term: LinkTerminal) -> int:
        """A `workroom` command sent to this app (workroom.app_link): run by this app's engine, so what it changes
        shows here at once and it opens no connection of its own; its words go back to the command."""
        from workroom import cli

        return await cli.serve(argv, term, self.controller.engine, self)

    def show_for_another_launch(self) -> None:
        """Another launch of the app for this home (Finder, Spotlight, a login item, the binary again): it
        ends, and this one shows its window instead (workroom.single_instance)."""
        bring_to_front()
        self.window.bring_up()

    def on_application_state(self, state: Qt.ApplicationState) -> None:
        """macOS reopen: opening the app again while it runs (its menu-bar icon may be hidden by a crowded
        menu bar or the notch) reaches Qt as the app turning active; show the window then. Not when a
        dialog of ours activated the app, and not elsewhere (activation means nothing there)."""
        if sys.platform != "darwin" or state != Qt.ApplicationState.ApplicationActive:
            return
        if QApplication.activeModalWidget() is None and not self.window.isVisible():
            self.window.bring_up()

    async def run_until_quit(self) -> None:
        app = QApplication.instance()
        if isinstance(app, QApplication):
            app.lastWindowClosed.connect(self._last_window_closed)
            app.applicationStateChanged.connect(self.on_application_state)
            app.installEventFilter(self._quit_filter)
        self._catch_sigterm()
        try:
            await self.quit_event.wait()
        finally:
            await self.close()
            if self.stop_local_agent_on_quit:
                await self.stop_local_agent()
            if app is not None:
                app.removeEventFilter(self._quit_filter)
            self._release_sigterm()
            log.info("quit: every session closed")

    def _catch_sigterm(self) -> None:
        """SIGTERM (`kill`, launchd at shutdown) -> request_quit, through a socket Qt watches (no polling)."""
        try:
            pair = socket.socketpair()
            for end in pair:
                end.setblocking(False)
            self._previous_wakeup_fd = signal.set_wakeup_fd(pair[1].fileno())
            self._previous_sigterm = signal.signal(signal.SIGTERM, lambda _signum, _frame: None)  # the byte works
        except ValueError:  # not the main thread: nothing to catch here
            return
        self._signal_pipe = pair
        self._signal_notifier = QSocketNotifier(pair[0].fileno(), QSocketNotifier.Type.Read)

        def on_signal() -> None:
            try:
                pair[0].recv(64)
            except OSError:
                pass
            log.info("quit requested by a signal")
            self.request_quit()

        self._signal_notifier.activated.connect(on_signal)

    def _release_sigterm(self) -> None:
        if self._signal_pipe is None:
            return
        signal.set_wakeup_fd(self._previous_wakeup_fd)
        signal.signal(signal.SIGTERM, self._previous_sigterm)
        if self._signal_notifier is not None:
            self._signal_notifier.setEnabled(False)
        for end in self._signal_pipe:
            end.close()
        self._signal_pipe = None

    def _last_window_closed(self) -> None:
        if not self.window.hide_on_close:
            self.request_quit()

    async def close(self) -> None:
        for key in list(self.notifications.shown):  # a question left on screen could not be answered any more
            self.notifications.withdraw(key)
        try:
            await asyncio.wait_for(self.notifications.drain(), NOTIFICATIONS_DRAIN_SECONDS)
        except TimeoutError:
            log.warning("the notification service did not take back every notification within %.0f s",
                        NOTIFICATIONS_DRAIN_SECONDS)
        self.sleep_watch.stop()
        self.file_watch.stop()
        self.idle_sleep.set_enabled(False)
        if self._connect_after is not None:
            self._connect_after.cancel()
        self.tray.icon.hide()
        await self.controller.close()
        self.window.close()


def needs_full_speed(snapshot: HostSnapshot) -> bool:
    """A prompt that can be answered is counting down (on a live link: row_text.prompt_deadline), or this
    computer's outside keep-awake is polling a request-metered host (the session's own word: it stops with
    Disconnect, while the last status may still say busy)."""
    return row_text.prompt_deadline(snapshot) is not None or snapshot.connection.keepawake_running


class _QuitFilter(QObject):
    """Turns Qt's Quit event (a system quit: logout, Activity Monitor, Cmd-Q) into an orderly quit."""

    def __init__(self, request_quit: Callable[[], None]) -> None:
        super().__init__()
        self._request_quit = request_quit

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Quit:
            log.info("quit requested by the system")
            self._request_quit()
            return True  # the loop keeps running until every session is closed
        return False
