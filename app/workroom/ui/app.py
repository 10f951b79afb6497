"""Puts the app together: engine -> controller -> window + menu-bar item, and the way out (Quit)."""

from __future__ import annotations

import asyncio
import sys

from PySide6.QtWidgets import QApplication

from workroom.sessions.engine import Engine
from workroom.sessions.host_session import HostSnapshot
from workroom.ui import row_text
from workroom.ui.app_controller import AppController
from workroom.ui.main_window import MainWindow
from workroom.ui.tray import TrayController, copy_to_clipboard


class WorkroomApp:
    def __init__(self, engine: Engine) -> None:
        self.controller = AppController(engine)
        self.window = MainWindow(self.controller)
        self.tray = TrayController()
        self.quit_event = asyncio.Event()
        self._wire()
        for snapshot in self.window.model.snapshots():
            self.tray.update(snapshot)

    def _wire(self) -> None:
        c, t, w = self.controller, self.tray, self.window
        c.snapshot_changed.connect(t.update)
        c.host_added.connect(t.update)
        c.host_removed.connect(t.remove)
        t.open_requested.connect(w.bring_up)
        t.settings_requested.connect(w.show_settings)
        t.connect_all_requested.connect(w.connect_all)
        t.quit_requested.connect(self.request_quit)
        w.quit_requested.connect(self.request_quit)
        t.host_requested.connect(self._show_host)
        t.connect_requested.connect(c.connect_host)
        t.keep_requested.connect(self._keep)
        t.let_sleep_requested.connect(w.cards.dismiss)
        t.copy_requested.connect(self._copy_ssh)
        w.cards.card_raised.connect(self._notify_card)
        w.cards.prompt_answered.connect(t.answered)

    def _keep(self, name: str) -> None:
        if not self.window.cards.keep_host(name):
            self.window.keep_host(name)

    def _copy_ssh(self, name: str) -> None:
        snapshot = self.window.model.snapshot(name)
        command = row_text.ssh_command(snapshot) if snapshot is not None else None
        if command is not None:
            copy_to_clipboard(command)

    def _show_host(self, name: str) -> None:
        self.window.select_host(name)
        self.window.bring_up()

    def _notify_card(self, name: str, workroom: str) -> None:
        snapshot = self.window.model.snapshot(name)
        detail = snapshot.badge().tooltip if isinstance(snapshot, HostSnapshot) else ""
        self.tray.notify(f"{workroom}: keep it awake?", detail or f"{workroom} has been busy past its ceiling.",
                         host=name)

    def start(self, *, connect: bool = True, show_window: bool = False) -> None:
        """Show the tray (or, without one, the window) and connect every host in the background."""
        has_tray = self.tray.show()
        self.window.hide_on_close = has_tray
        if show_window or not has_tray:
            self.window.bring_up()
        if sys.platform == "darwin":
            hide_dock_icon()
        if connect:
            self.controller.connect_all()  # never wakes a sleeping box just to look

    def request_quit(self) -> None:
        self.quit_event.set()

    async def run_until_quit(self) -> None:
        app = QApplication.instance()
        if isinstance(app, QApplication):
            app.lastWindowClosed.connect(self._last_window_closed)
        await self.quit_event.wait()
        await self.close()

    def _last_window_closed(self) -> None:
        if not self.window.hide_on_close:
            self.request_quit()

    async def close(self) -> None:
        self.tray.icon.hide()
        await self.controller.close()
        self.window.close()


def hide_dock_icon() -> None:
    """macOS: a menu-bar app has no Dock icon (NSApplicationActivationPolicyAccessory).

    The packaged app says so in Info.plist (LSUIElement); this covers running from source. Uses the
    Objective-C runtime through ctypes so no extra dependency is needed; failure only leaves the icon.
    """
    import ctypes
    import ctypes.util

    try:
        objc = ctypes.cdll.LoadLibrary(ctypes.util.find_library("objc") or "libobjc.dylib")
        ctypes.cdll.LoadLibrary("/System/Library/Frameworks/AppKit.framework/AppKit")
        objc.objc_getClass.restype = ctypes.c_void_p
        objc.sel_registerName.restype = ctypes.c_void_p
        send = objc.objc_msgSend
        send.restype = ctypes.c_void_p
        send.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        ns_app = send(objc.objc_getClass(b"NSApplication"), objc.sel_registerName(b"sharedApplication"))
        send.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long]
        send(ns_app, objc.sel_registerName(b"setActivationPolicy:"), 1)
    except (OSError, AttributeError):
        pass
