"""Runs the real app (`workroom.ui.main.main`, as `workroom-app --window` does) on the X display in DISPLAY,
and once its window shows this computer's row live, writes what the test needs to find it on screen (JSON to
argv[1]): the window's X id, the on-screen rectangles of the row's State cell and the detail panel's state
line, and the tray icon's state. Then the app runs on until SIGTERM (its own orderly quit).

Only a probe is added (a bounded QTimer that reads the window's widgets); the app is started unchanged.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import QRect, QSize, QTimer
from PySide6.QtWidgets import QApplication, QStyle, QStyleOptionViewItem, QSystemTrayIcon, QWidget

PROBE_SECONDS = 40.0


def global_rect(widget: QWidget, rect: QRect | None = None) -> list[int]:
    area = rect if rect is not None else widget.rect()
    top_left = widget.mapToGlobal(area.topLeft())
    return [top_left.x(), top_left.y(), area.width(), area.height()]


def text_rect(table: Any, index: Any) -> QRect:
    """Where the style draws the cell's text (the badge icon left of it is a graphic, measured apart)."""
    option = QStyleOptionViewItem()
    option.rect = table.visualRect(index)
    feature = QStyleOptionViewItem.ViewItemFeature
    option.features = feature.HasDisplay | feature.HasDecoration
    option.decorationSize = table.iconSize() if table.iconSize().isValid() else QSize(16, 16)
    option.text = str(index.data())
    option.font = table.font()
    rect: QRect = table.style().subElementRect(QStyle.SubElement.SE_ItemViewItemText, option, table)
    return rect


def probe(app: QApplication, out: Path, started: float, timer: QTimer) -> None:
    # Nothing is imported here until the window is up: the app imports the engine (pydantic and the core's
    # models) on a thread of its own meanwhile, and an import of those modules on this thread at the same time
    # could meet it half way (Python hands a module being imported to the second thread half made: "cannot
    # import name 'BaseModel' from 'pydantic'", seen in CI). The app itself imports none of them here then.
    windows = [w for w in app.topLevelWidgets() if type(w).__name__ == "MainWindow" and w.isVisible()]
    if time.monotonic() - started > PROBE_SECONDS:
        timer.stop()
        seen = [f"{s.host.name}: {s.connection.state.value}"
                + (f" ({s.connection.error.title}: {s.connection.error.message})" if s.connection.error else "")
                for s in (windows[0].model.snapshots() if windows else [])]
        out.write_text(json.dumps({"error": f"no live row within {PROBE_SECONDS:.0f} s (window shown: "
                                            f"{bool(windows)}; rows: {seen})"}))
        return
    if not windows:
        return
    from workroom.core.connection import ConnectionState
    from workroom.ui.host_table_model import Column

    window = windows[0]
    snapshots = window.model.snapshots()
    if len(snapshots) != 1 or snapshots[0].connection.state not in (ConnectionState.LIVE, ConnectionState.QUIET):
        return
    name = snapshots[0].host.name
    window.select_host(name)
    table = window.table
    index = window.model.index(window.model.row_of(name), Column.BADGE)
    cell = text_rect(table, index)
    icons = [o for o in gc.get_objects() if isinstance(o, QSystemTrayIcon)]
    timer.stop()
    facts: dict[str, Any] = {
        "host": name,
        "provider": snapshots[0].host.provider,
        "state_text": str(window.model.data(window.model.index(window.model.row_of(name), Column.BADGE))),
        "window_id": int(window.winId()),
        "window_title": window.windowTitle(),
        "state_cell": global_rect(table.viewport(), cell),
        "detail_state": global_rect(window.detail.badge_label),
        "tray_available": QSystemTrayIcon.isSystemTrayAvailable(),
        "tray_visible": any(icon.isVisible() for icon in icons),
        "tray_geometry": [[g.x(), g.y(), g.width(), g.height()] for g in (i.geometry() for i in icons)],
    }
    # Written once the window has painted the selection (the next turns of the event loop).
    QTimer.singleShot(600, lambda: out.write_text(json.dumps(facts)))
    focus_after_connect(app, window, out)


def focus_after_connect(app: QApplication, window: Any, out: Path) -> None:
    """Once the test says go (it has its screenshot): Disconnect, then Connect with the detail panel's own
    buttons under the real window manager, and report where the keyboard focus is once the host is live again
    (it used to land in the "Provider's price" box with its text selected)."""
    from workroom.core.connection import ConnectionState

    go, result = out.with_suffix(".go"), out.with_suffix(".focus.json")
    steps = {"phase": "wait"}
    timer = QTimer(app)
    timer.setInterval(100)
    started = time.monotonic()

    def state() -> ConnectionState:
        return window.model.snapshots()[0].connection.state

    def step() -> None:
        if time.monotonic() - started > PROBE_SECONDS * 2:
            timer.stop()
            result.write_text(json.dumps({"error": f"stuck in {steps['phase']}"}))
            return
        phase = steps["phase"]
        if phase == "wait" and go.exists():
            window.activateWindow()
            window.detail.disconnect_button.click()
            steps["phase"] = "disconnecting"
        elif phase == "disconnecting" and state() is ConnectionState.DISCONNECTED:
            window.detail.connect_button.setFocus()
            window.detail.connect_button.click()
            steps["phase"] = "connecting"
        elif phase == "connecting" and state() in (ConnectionState.LIVE, ConnectionState.QUIET):
            timer.stop()
            focused = app.focusWidget()
            result.write_text(json.dumps({
                "focus": focused.objectName() if focused is not None else None,
                "price_selected": window.timeline.price.lineEdit().selectedText(),
                "window_active": app.activeWindow() is window}))

    timer.timeout.connect(step)
    timer.start()


def main() -> int:
    out = Path(sys.argv[1])
    app = QApplication(["workroom-app"])
    started = time.monotonic()
    timer = QTimer()
    timer.setInterval(200)
    timer.timeout.connect(lambda: probe(app, out, started, timer))
    timer.start()
    from workroom.ui.main import main as workroom_app

    return workroom_app(["--window"])


if __name__ == "__main__":
    sys.exit(main())
