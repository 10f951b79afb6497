"""System notifications behind one small seam: the app says what to post and what to withdraw, a backend
delivers it.

- `SystemBackend` (desktop-notifier): the freedesktop Notifications service on Linux (D-Bus), and
  UNUserNotificationCenter on macOS. Buttons ("Keep awake", "Let it sleep") come back as presses, a click on
  the body as a click, and a withdrawal is a real one (CloseNotification; removeDeliveredNotifications).
  asyncio-native, so it runs on the app's qasync loop; on macOS its callbacks need the main thread's run
  loop, which Qt's event loop is.
- `BalloonBackend` (Qt's tray balloon): only where no notification service answers (no session bus, no
  server on it; on macOS an app run from source, outside a bundle). No buttons; Qt has no call to close a
  balloon, so a withdrawal replaces the last one with a blank that expires at once. The log says when this
  fallback is in use.

`Notifications` records what the app means to show synchronously (`shown`, `last_notification`: what the
tests and the settings pane read) and hands the backend its work in order, one step at a time, on the loop:
a withdrawal never overtakes the post it withdraws. The backend is chosen at the first post, not at start-up:
on macOS that first post is what asks for permission (docs/macos.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QSystemTrayIcon

from workroom.core.host_text import escape_markup, markup_inert

log = logging.getLogger(__name__)

APP_NAME = "Workroom"
PROBE_SECONDS = 5.0
WITHDRAWN_EXPIRE_MS = 1000
"""A withdrawn notification is replaced by one that expires this soon, for servers that ignore the close."""
POSTED_KEPT = 64
"""How many notifications' server ids are remembered, to answer a press on one desktop-notifier has let go."""
"""How long the notification service may take to answer the first question (is anyone there?)."""


@dataclass(frozen=True)
class NoticeButton:
    id: str
    title: str


@dataclass(frozen=True)
class Notice:
    """One notification. `key` names what it is about ("prompt:box1"): posting a key again replaces it."""

    key: str
    title: str
    message: str
    buttons: tuple[NoticeButton, ...] = ()
    sticky: bool = False
    """Stays until withdrawn (a question, a problem), instead of the server's usual timeout."""


ButtonHandler = Callable[[str, str], None]
"""(notice key, button id)"""
ClickHandler = Callable[[str], None]


class Backend(Protocol):
    name: str
    has_buttons: bool

    async def probe(self) -> None:
        """Raise when there is no notification service to talk to."""

    async def post(self, notice: Notice) -> None: ...
    async def withdraw(self, key: str) -> None: ...
    async def authorised(self) -> bool:
        """False when the user turned notifications off for the app (macOS); True where nobody asks."""


class SystemBackend:
    """desktop-notifier: the platform's own notification service."""

    name = "system"
    has_buttons = True

    def __init__(self, on_button: ButtonHandler, on_click: ClickHandler, notifier: Any = None) -> None:
        if notifier is None:
            from desktop_notifier import DesktopNotifier, Icon

            icon = None
            with contextlib.suppress(OSError):
                from workroom.resources import app_icon_path

                icon = Icon(path=app_icon_path(128))
            notifier = DesktopNotifier(app_name=APP_NAME, app_icon=icon)
        self._notifier = notifier
        self._on_button = on_button
        self._on_click = on_click
        self.reads_markup = sys.platform != "darwin"
        """Whether the server may render markup (every freedesktop server; not macOS's)."""
        self._ids: dict[str, tuple[str, int | None]] = {}
        """notice key -> (the library's identifier, the server's id where it has one) of what is on screen."""
        self._posted: dict[int, str] = {}
        """server id -> notice key of the last `POSTED_KEPT` notifications: a server may still show one that
        desktop-notifier has let go (taken back but not closed, or pressed once already: dunst leaves it up), and a
        press on it must reach the app, which says what it can do (desktop-notifier drops such an action)."""
        self._listening = False
        self._notices: dict[str, Notice] = {}
        self._closed: dict[int, None] = {}
        """Server ids the server said it closed (NotificationClosed): nothing there to take back."""
        self._handed_on = False
        """desktop-notifier handed the press being dispatched to `_on_button` (so `_late_press` leaves it)."""

    async def probe(self) -> None:
        from desktop_notifier.main import get_backend_class

        backend = get_backend_class()
        if backend.__name__ == "DummyNotificationCenter":
            raise RuntimeError("no notification center for this process (on macOS: not run from an app bundle)")
        if sys.platform.startswith("linux") and not _session_bus_named():
            raise RuntimeError("no D-Bus session bus")
        await asyncio.wait_for(self._notifier.get_capabilities(), PROBE_SECONDS)

    def server_text(self, notice: Notice) -> tuple[str, str]:
        """(summary, body) as the server is sent them, so that host text stays text (docs/ui.md, "Notifications").
        A freedesktop server reads a body's markup (`<a href>`, `<img>`, `<span>`, entities), and some read it
        without saying so (dunst 1.9 does not advertise `body-markup`): the body is always escaped there. The
        summary is plain by the spec, yet rendered by some: it is made markup-inert, the same words either way.
        macOS's UNUserNotificationCenter reads no markup (docs/macos.md): there both go as they are."""
        if not self.reads_markup:
            return notice.title, notice.message
        return markup_inert(notice.title), escape_markup(notice.message)

    async def post(self, notice: Notice) -> None:
        from desktop_notifier import Button

        await self.withdraw(notice.key)
        buttons = [Button(title=b.title, identifier=b.id, on_pressed=partial(self._pressed, notice.key, b.id))
                   for b in notice.buttons]
        title, message = self.server_text(notice)
        identifier = await self._notifier.send(
            title, message, buttons=buttons, on_clicked=partial(self._on_click, notice.key),
            timeout=0 if notice.sticky else -1)
        server_id = self._server_id(identifier)
        self._ids[notice.key] = (identifier, server_id)
        self._notices[notice.key] = notice
        if server_id is not None:
            self._posted[server_id] = notice.key
            while len(self._posted) > POSTED_KEPT:
                del self._posted[next(iter(self._posted))]
        self._listen_for_late_presses()

    def _pressed(self, key: str, button: str) -> None:
        self._handed_on = True
        self._on_button(key, button)

    def _listen_for_late_presses(self) -> None:
        """Hear the server's ActionInvoked ourselves too, after desktop-notifier's own handler (registered when
        it first reached the bus): `_late_press` takes the presses it dropped."""
        interface = getattr(getattr(self._notifier, "_backend", None), "interface", None)
        if self._listening or interface is None or not hasattr(interface, "on_action_invoked"):
            return
        interface.on_action_invoked(self._late_press)
        if hasattr(interface, "on_notification_closed"):
            interface.on_notification_closed(self._closed_by_server)
        self._listening = True

    def _closed_by_server(self, server_id: int, _reason: int) -> None:
        self._closed[server_id] = None
        while len(self._closed) > POSTED_KEPT:
            del self._closed[next(iter(self._closed))]

    def _late_press(self, server_id: int, action: str) -> None:
        handed_on, self._handed_on = self._handed_on, False
        key = self._posted.get(server_id)
        if handed_on or key is None:
            return  # desktop-notifier handed it on, or it is another app's notification
        log.info("a button pressed on the notification %s, which desktop-notifier had let go", key)
        if action == "default":
            self._on_click(key)
        else:
            self._on_button(key, action)

    def _server_id(self, identifier: str) -> int | None:
        """The freedesktop server's own id for a notification (Linux), while desktop-notifier knows it.

        desktop-notifier forgets it once a button was pressed, but a server need not close a notification on
        an action (dunst 1.9's menu does not): the answered question would stay on screen. So it is kept
        here, to close it by that id (CloseNotification)."""
        ids = getattr(getattr(self._notifier, "_backend", None), "_platform_to_interface_notification_identifier",
                      None)
        try:
            value = ids.inverse.get(identifier) if ids is not None else None
        except AttributeError:
            return None
        return value if isinstance(value, int) else None

    async def withdraw(self, key: str) -> None:
        known = self._ids.pop(key, None)
        notice = self._notices.pop(key, None)
        if known is None:
            return
        identifier, server_id = known
        interface = getattr(getattr(self._notifier, "_backend", None), "interface", None)
        if server_id is not None and interface is not None and notice is not None and server_id not in self._closed:
            # GNOME's notification-daemon (3.20) answers CloseNotification with NotificationClosed yet leaves the
            # bubble up, buttons and all; one that expires by itself does go. So it is first replaced by its own
            # words, without buttons, expiring in a moment, and then closed: gone at once where the server
            # closes, a moment later where it does not. The replacement is marked transient: a server that keeps
            # a history (GNOME Shell's list, dunst with a rule on it) does not keep a question already answered.
            try:
                await interface.call_notify(APP_NAME, server_id, "", notice.title, notice.message, [],
                                            transient_hints(interface), WITHDRAWN_EXPIRE_MS)
            except Exception as error:  # gone already, or a server that refuses: the close below still goes
                log.debug("replacing notification %s before closing it: %s", key, error)
        try:
            await self._notifier.clear(identifier)
            return
        except KeyError:
            pass  # desktop-notifier let go of it (a button was pressed): close it by the server's id
        except Exception as error:  # a notification server that went away must not take the app with it
            log.warning("could not withdraw the notification %s: %s", key, error)
            return
        if server_id is None or interface is None:
            return
        try:
            await interface.call_close_notification(server_id)
        except Exception as error:  # already closed by the user or the server: nothing left to take back
            log.debug("closing notification %s: %s", key, error)

    async def authorised(self) -> bool:
        return bool(await self._notifier.has_authorisation())


class BalloonBackend:
    """Qt's tray balloon: the fallback where no notification service answers."""

    name = "tray balloon"
    has_buttons = False

    def __init__(self, icon: QSystemTrayIcon, on_click: ClickHandler) -> None:
        self._icon = icon
        self._last: str | None = None
        icon.messageClicked.connect(lambda: self._last is not None and on_click(self._last))

    async def probe(self) -> None:
        return None

    def _can_show(self) -> bool:
        return self._icon.isVisible() and QSystemTrayIcon.supportsMessages()

    async def post(self, notice: Notice) -> None:
        self._last = notice.key
        if self._can_show():  # Qt's own balloon is plain; a tray on D-Bus hands it to a server that reads markup
            self._icon.showMessage(markup_inert(notice.title), markup_inert(notice.message), self._icon.icon(),
                                   balloon_timeout_ms(notice.sticky))

    async def withdraw(self, key: str) -> None:
        if self._last != key:
            return
        self._last = None
        if self._can_show():  # Qt cannot close a balloon: replace it with a blank that expires at once
            self._icon.showMessage("", "", QSystemTrayIcon.MessageIcon.NoIcon, 1)

    async def authorised(self) -> bool:
        return True


def balloon_timeout_ms(sticky: bool, platform: str = sys.platform) -> int:
    """A question or a problem stays in macOS's Notification Center until dismissed (0); elsewhere a balloon is
    a 15 s banner (the card and the menu entry stay)."""
    return 0 if sticky and platform == "darwin" else 15000


BackendFactory = Callable[["Notifications"], Coroutine[Any, Any, Backend]]


async def choose_backend(notifications: Notifications) -> Backend:
    """The platform's notification service when one answers, else the tray's balloon (said in the log)."""
    try:
        system = SystemBackend(notifications.pressed, notifications.clicked_body)
        await system.probe()
    except Exception as error:  # no bus, no server on it, no bundle: every one of them means "use the balloon"
        log.warning("no notification service (%s); notifications use the tray's balloon: no buttons, and "
                    "they cannot be withdrawn", str(error) or type(error).__name__)
        return BalloonBackend(notifications.tray_icon, notifications.clicked_body)
    log.info("notifications go to the system's notification service")
    return system


class Notifications(QObject):
    button_pressed = Signal(str, str)
    """(notice key, button id): a button on a notification was pressed."""
    clicked = Signal(str)
    """A notification's body was clicked (notice key)."""
    service_changed = Signal()
    """What `service_words` says may have changed (the backend was chosen, permission was asked)."""

    def __init__(self, tray_icon: QSystemTrayIcon, factory: BackendFactory = choose_backend) -> None:
        super().__init__()
        self.tray_icon = tray_icon
        self._factory = factory
        self.backend: Backend | None = None
        self.authorised: bool | None = None
        """None until asked (at the first post); False: the user turned them off for the app."""
        self.shown: dict[str, Notice] = {}
        self.last_notification: tuple[str, str] | None = None
        """(title, message) of the last notice posted, until it is withdrawn."""
        self._last_key: str | None = None
        self._queue: asyncio.Queue[tuple[str, Notice | str]] | None = None
        self._worker: asyncio.Task[None] | None = None

    # -- what the app means to show ---------------------------------------------------------------

    def post(self, notice: Notice) -> None:
        self.shown[notice.key] = notice
        self.last_notification = (notice.title, notice.message)
        self._last_key = notice.key
        self._enqueue("post", notice)

    def withdraw(self, key: str) -> None:
        if self.shown.pop(key, None) is None:
            return
        if self._last_key == key:
            self.last_notification = self._last_key = None
        self._enqueue("withdraw", key)

    def showing(self, key: str) -> bool:
        return key in self.shown

    def service_words(self) -> str | None:
        """A sentence for the settings pane when notifications cannot reach the user as designed."""
        if self.authorised is False:
            return ("Notifications are off for Workroom (System Settings › Notifications › Workroom): prompts, "
                    "finished jobs and lost work show only in the window and the menu.")
        if self.backend is not None and not self.backend.has_buttons:
            return ("No notification service answers on this desktop: notifications use the tray's balloon, "
                    "which has no buttons and cannot be taken back.")
        return None

    # -- what comes back ----------------------------------------------------------------------------

    def pressed(self, key: str, button: str) -> None:
        """A backend reports a button press (also the entry point tests use for a press). The answer is given
        by whoever listens; the notification is then withdrawn (a server need not close it on an action)."""
        self._on_loop(self.button_pressed.emit, key, button)
        self._on_loop(self.withdraw, key)

    def clicked_body(self, key: str) -> None:
        self._on_loop(self.clicked.emit, key)

    @staticmethod
    def _on_loop(call: Callable[..., Any], *args: Any) -> None:
        """Handlers start tasks: run them as a callback of the loop (a D-Bus signal can be read by Qt's event
        processing while the asyncio loop itself is not running)."""
        loop = _loop()
        if loop is None or loop.is_closed():
            call(*args)
            return
        loop.call_soon(call, *args)

    # -- delivery, in order -------------------------------------------------------------------------

    def _enqueue(self, op: str, item: Notice | str) -> None:
        loop = _loop()
        if loop is None or loop.is_closed():
            return
        if self._queue is None:
            self._queue = asyncio.Queue()
        self._queue.put_nowait((op, item))
        if self._worker is None or self._worker.done():
            self._worker = loop.create_task(self._deliver(self._queue), name="notifications")

    async def _deliver(self, queue: asyncio.Queue[tuple[str, Notice | str]]) -> None:
        if self.backend is None:
            self.backend = await self._factory(self)
            self.service_changed.emit()
        while not queue.empty():
            op, item = queue.get_nowait()
            try:
                if isinstance(item, Notice):
                    await self.backend.post(item)
                    if self.authorised is None:  # the first post asked for permission where one is needed
                        self.authorised = await self.backend.authorised()
                        self.service_changed.emit()
                else:
                    await self.backend.withdraw(item)
            except Exception:  # a notification that cannot be shown is logged; the card and menu still ask
                log.warning("notification %s failed", op, exc_info=True)

    async def refresh_authorisation(self) -> None:
        """Ask again whether notifications are allowed (the user may have changed it in System Settings)."""
        if self.backend is None:
            return
        with contextlib.suppress(Exception):
            allowed = await self.backend.authorised()
            if allowed != self.authorised:
                self.authorised = allowed
                self.service_changed.emit()

    async def drain(self) -> None:
        """Wait until everything asked so far has been handed to the backend (tests, quit)."""
        while self._worker is not None and not self._worker.done():
            await asyncio.shield(self._worker)


def transient_hints(interface: Any) -> dict[str, Any]:
    """The Notify hints that mark a notification transient (not kept in the server's history), in the type the
    server's Notify takes: the spec's `a{sv}` (a boolean variant), or `a{ss}` on older servers (desktop-notifier
    reads the signature the same way); none where it takes neither."""
    from desktop_notifier.backends.dbus import get_hints_signature

    signature = get_hints_signature(interface)
    if signature == "a{sv}":
        from dbus_fast import Variant

        return {"transient": Variant("b", True)}
    if signature == "a{ss}":
        return {"transient": "true"}
    return {}


def _session_bus_named() -> bool:
    """A session bus this process can find: named in the environment, or at its usual place."""
    if os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
        return True
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return runtime is not None and os.path.exists(os.path.join(runtime, "bus"))


def _loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    try:
        return asyncio.get_event_loop_policy().get_event_loop()
    except RuntimeError:
        return None
