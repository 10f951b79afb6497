"""The tray icon while the app starts: shown right after the QApplication exists, before the engine and the
rest of the ui are imported (docs/architecture.md, "Start-up, in order").

It holds the app icon, the tooltip "Workroom — starting…" and a menu of two lines: "Workroom is starting…"
and Quit. Quit works at once: before the app is built it ends the start (`quit_requested`); a click on the
icon asks for the window once the app can show it. When the app is built, its `TrayController` adopts this
same QSystemTrayIcon (`handed_over`): one icon from start to quit, never a second one, never hidden and shown
again. Only Qt is imported here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QMenu, QSystemTrayIcon, QWidget

STARTING_TOOLTIP = "Workroom — starting…"
STARTING_LINE = "Workroom is starting…"
QUIT_TEXT = "Quit"


class EarlyTray(QObject):
    quit_requested = Signal()
    """Quit from the starting menu, before the app is built (afterwards it goes to the app: `handed_over`)."""

    def __init__(self, icon: QIcon) -> None:
        super().__init__()
        self.icon = QSystemTrayIcon(icon)
        self.icon.setObjectName("tray")
        self.icon.setToolTip(STARTING_TOOLTIP)
        self.menu = QMenu()
        self.menu.setObjectName("early_tray_menu")
        self.starting = self.menu.addAction(STARTING_LINE)
        self.starting.setEnabled(False)
        self.menu.addSeparator()
        self.quit_action = self.menu.addAction(QUIT_TEXT)
        self.quit_action.setObjectName("early_quit")
        self.quit_action.triggered.connect(self._quit)
        self.icon.setContextMenu(self.menu)
        self.icon.activated.connect(self._activated)
        self.quit_asked = False
        self.window_asked = False
        """The icon was clicked while starting: the app shows its window as soon as it has one."""
        self._quit_after: Callable[[], None] | None = None

    def show(self) -> bool:
        """Show the icon where there is a tray; False where there is none (the window will open instead)."""
        if not QSystemTrayIcon.isSystemTrayAvailable():
            return False
        self.icon.show()
        return True

    def own_window(self) -> QWidget | None:
        """The widget Qt draws the icon in where it draws it itself (an X11 tray, XEmbed: Qt's
        QSystemTrayIconSys), while it is shown; None elsewhere (a macOS status item, a StatusNotifierItem).
        Hold the widget, not its windowHandle(): PySide lets go of that with the widget's wrapper."""
        if not self.icon.isVisible():
            return None
        for widget in QApplication.topLevelWidgets():
            if widget.metaObject().className() == "QSystemTrayIconSys" and widget.isVisible():
                return widget
        return None

    @staticmethod
    def exposed(widget: QWidget) -> bool:
        """Mapped by the tray host and on screen (its window exposed)."""
        handle = widget.windowHandle()
        return handle is not None and handle.isExposed()

    def hide(self) -> None:
        self.icon.hide()

    def handed_over(self, quit_app: Callable[[], None]) -> None:
        """The app's TrayController has adopted `icon` (its menu, icon and tooltip replace these). A Quit from
        this menu after that (it was open while the app was built) quits the app."""
        self.icon.activated.disconnect(self._activated)
        self._quit_after = quit_app

    def _quit(self) -> None:
        if self._quit_after is not None:
            self._quit_after()
            return
        self.quit_asked = True
        self.icon.hide()  # the answer is seen at once; the process ends when the start stops
        self.quit_requested.emit()

    def _activated(self, reason: QSystemTrayIcon.ActivationReason) -> None:
        if reason is QSystemTrayIcon.ActivationReason.Trigger and sys.platform != "darwin":  # a Mac opens the menu
            self.window_asked = True
