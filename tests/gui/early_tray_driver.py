"""Runs the real app (`workroom.ui.main.main`, as `workroom-app` does) on the X display in DISPLAY and reports,
as JSON files beside argv[1], what it was like at two moments, read inside the process:

* `<argv[1]>` — the moment the tray icon's own X window is first exposed (trayer embedded and mapped it):
  which modules were loaded then (is the engine there yet?), the icon's tooltip and menu, its X window.
* `<argv[1] stem>.up.json` — the moment the app's window is first exposed: every QSystemTrayIcon alive,
  whether the one shown at first is the one the app's tray uses, its menu and tooltip, and how often the
  icon's X window was hidden in between.

`argv[2]` = "quit": at the first moment, trigger the starting menu's Quit (the app should end); "quit-loading":
trigger it once the engine's import has begun on its thread (`<stem>.quit.json` says how far it was).
`<argv[1] stem>.exit.json` is written as the process leaves: which app modules were ever loaded.

Only the probe is added (an event filter that reads, and in "quit" mode one QAction.trigger()); the app is
started unchanged. Shared with nothing: bench/app_bench.py has its own probe for its figures.
"""

from __future__ import annotations

import atexit
import gc
import json
import sys
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtGui import QAction, QWindow
from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

WATCHED = ("workroom.sessions.engine", "pydantic", "paramiko", "workroom.ui.app", "workroom.ui.main_window",
           "workroom.ui.tray", "workroom.core.errors", "workroom.ui.about_dialog", "workroom.ui.host_dialog")


def loaded() -> dict[str, str]:
    """Each watched module: "no", "importing" (in sys.modules, still running: another thread imports it) or
    "yes"."""

    def state(name: str) -> str:
        module = sys.modules.get(name)
        if module is None:
            return "no"
        return "importing" if getattr(getattr(module, "__spec__", None), "_initializing", False) else "yes"

    return {name: state(name) for name in WATCHED}


def widget_of(window: QObject) -> QWidget | None:
    return next((w for w in QApplication.topLevelWidgets() if w.windowHandle() is window), None)


def tray_icons() -> list[QSystemTrayIcon]:
    return [o for o in gc.get_objects() if isinstance(o, QSystemTrayIcon)]


class Probe(QObject):
    def __init__(self, out: Path, mode: str) -> None:
        super().__init__()
        self.out, self.mode = out, mode
        self.first: QSystemTrayIcon | None = None
        self.tray_widget: QWidget | None = None
        """Held (not its QWindow: PySide lets go of that with the widget's wrapper)."""
        self.shown_with: dict[str, str] | None = None
        self.hidden = 0
        self.up = False

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in (QEvent.Type.Show, QEvent.Type.Hide) and isinstance(watched, QWidget) \
                and watched.metaObject().className() == "QSystemTrayIconSys":
            if kind == QEvent.Type.Show and self.shown_with is None:
                self.shown_with = loaded()  # the icon's widget made visible (QSystemTrayIcon.show)
            if kind == QEvent.Type.Hide:
                self.hidden += 1
        if kind != QEvent.Type.Expose or not isinstance(watched, QWindow) or not watched.isExposed():
            return False
        widget = widget_of(watched)
        name = widget.metaObject().className() if widget is not None else ""
        if name == "QSystemTrayIconSys" and self.first is None:
            self.tray_widget = widget
            self._tray_exposed(watched)
        elif name == "MainWindow" and not self.up:
            self.up = True
            self._window_exposed(widget)
        return False

    def _tray_exposed(self, window: QWindow) -> None:
        icons = tray_icons()
        self.first = icons[0] if len(icons) == 1 else None
        menu = icons[0].contextMenu() if icons else None
        facts = {"loaded": loaded(), "loaded_at_show": self.shown_with, "icons": len(icons),
                 "visible": [i.isVisible() for i in icons],
                 "tray_available": QSystemTrayIcon.isSystemTrayAvailable(), "tray_window": int(window.winId()),
                 "tooltip": icons[0].toolTip() if icons else None,
                 "menu": [a.text() for a in menu.actions() if not a.isSeparator()] if menu is not None else [],
                 "menu_name": menu.objectName() if menu is not None else None}
        self.out.write_text(json.dumps(facts))
        if self.mode.startswith("quit") and menu is not None:
            quit_action = next(a for a in menu.findChildren(QAction) if a.objectName() == "early_quit")
            if self.mode == "quit":
                QTimer.singleShot(0, quit_action.trigger)
            else:  # "quit-loading": once the engine's import has begun (on its thread)
                self._quit_when_loading(quit_action)

    def _quit_when_loading(self, quit_action: QAction) -> None:
        timer = QTimer(self)
        timer.setInterval(1)
        tries = [0]

        def check() -> None:
            tries[0] += 1
            state = loaded()["workroom.sessions.engine"]
            if state != "no" or tries[0] > 5000:  # bounded: the test then sees what state it was in
                timer.stop()
                self.out.with_suffix(".quit.json").write_text(json.dumps({"engine_at_quit": state}))
                quit_action.trigger()

        timer.timeout.connect(check)
        timer.start()

    def _window_exposed(self, window: QWidget | None) -> None:
        icons = tray_icons()
        icon = icons[0] if icons else None
        menu = icon.contextMenu() if icon is not None else None
        tray = self.tray_widget
        facts = {"loaded": loaded(), "icons": len(icons), "same_object": icon is not None and icon is self.first,
                 "visible": [i.isVisible() for i in icons], "tooltip": icon.toolTip() if icon else None,
                 "menu_name": menu.objectName() if menu is not None else None,
                 "tray_window": int(tray.winId()) if tray is not None else 0,
                 "tray_hidden": self.hidden, "window_id": int(window.winId()) if window is not None else 0}
        self.out.with_suffix(".up.json").write_text(json.dumps(facts))


def main() -> int:
    out = Path(sys.argv[1])
    mode = sys.argv[2] if len(sys.argv) > 2 else "run"
    app = QApplication(["workroom-app"])
    probe = Probe(out, mode)
    app.installEventFilter(probe)
    atexit.register(lambda: out.with_suffix(".exit.json").write_text(json.dumps({"loaded": loaded()})))
    from workroom.ui.main import main as workroom_app

    code: int = workroom_app([])
    return code


if __name__ == "__main__":
    sys.exit(main())

