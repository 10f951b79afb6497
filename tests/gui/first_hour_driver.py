"""Runs the real app (`workroom.ui.main.main`, as `workroom-app --window` does) and, inside its process, does what
a person does with the mouse, one command at a time, for tests/gui/first_hour.py: the commands come as files
`cmd-N.json` in the folder argv[1], each answered by `done-N.json` (what the window, the tray, the dialogs and
the cards say then, and any error). Pictures are taken from the X server's own pixels (the screen) and from
the widgets (`grab`), in the light and the dark palette.

Nothing in the app is changed: the driver finds its window, tray and dialogs as a test would, clicks their
buttons, picks from their lists and types into their fields.
"""

from __future__ import annotations

import gc
import json
import re
import sys
import time
import traceback
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

from PySide6.QtCore import QPoint, QTimer
from PySide6.QtWidgets import QApplication, QDialog, QLabel, QPushButton, QWidget
from shiboken6 import isValid

Step = Iterator[int]
"""A command runs as a generator: each value it yields is a pause (ms) while the app's loop runs on."""


def workroom_app() -> Any:
    from workroom.ui.app import WorkroomApp

    return next((o for o in gc.get_objects() if isinstance(o, WorkroomApp)), None)


def visible_dialogs() -> list[QDialog]:
    return [w for w in QApplication.topLevelWidgets() if isinstance(w, QDialog) and w.isVisible()]


def label_texts(widget: QWidget) -> list[str]:
    from workroom.ui.breakable_words import ZWSP

    return [w.text().replace(ZWSP, "") for w in widget.findChildren(QLabel) if w.isVisible() and w.text()]


def facts(app: Any) -> dict[str, Any]:
    """What a person reads now: every row's cells, the selected host's panel, cards, the tray's lines, dialogs."""
    from workroom.ui.host_table_model import HEADERS, Column

    window = app.window
    model = window.model
    rows = {}
    now = time.monotonic()
    from workroom.ui import row_text

    for snap in model.snapshots():
        row = model.row_of(snap.host.name)
        rows[snap.host.name] = {
            **{HEADERS[c]: str(model.data(model.index(row, c))) for c in Column},
            "connection_state": snap.connection.state.value,
            "detail": dict(row_text.detail_lines(snap, now)),
            "tooltip": row_text.badge_tooltip(snap, now),
            "let_sleep": bool(snap.status and snap.status.let_sleep),
            "connect_words": window.detail.connect_button.text() if window.detail.snapshot is snap else None,
        }
    detail = window.detail
    tray = app.tray
    tray.refresh_texts()
    return {
        "headers": [HEADERS[c] for c in Column],
        "rows": rows,
        "selected": detail.snapshot.host.name if detail.snapshot is not None else None,
        "detail_labels": label_texts(window.detail_scroll.widget()),
        "detail_buttons": [b.text() for b in detail.findChildren(QPushButton) if b.isVisible()],
        "cards": {name: card.body.text() for name, card in window.cards.cards.items()},
        "tray": [a.text() for a in tray.menu.actions() if a.isVisible() and not a.isSeparator()],
        "tray_tooltip": tray.icon.toolTip(),
        "dialogs": [{"class": type(d).__name__, "title": d.windowTitle(), "labels": label_texts(d)}
                    for d in visible_dialogs()],
        "notifications": sorted(app.notifications.shown),
        "log_tail": log_tail(),
    }


def log_tail(lines: int = 30) -> str:
    from workroom.paths import app_log_folder

    try:
        return "\n".join((app_log_folder() / "workroom.log").read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


# -- what a person does --------------------------------------------------------------------------------------


def add_ssh(app: Any, alias: str) -> Step:
    """Add host…, pick `alias` from the ~/.ssh/config list, Add host."""
    dialog = app.window.open_add_dialog()
    yield 300
    picker = dialog.alias_picker
    index = picker.findText(alias)
    assert index > 0, [picker.itemText(i) for i in range(picker.count())]
    picker.setCurrentIndex(index)
    picker.activated.emit(index)
    yield 200
    dialog.try_accept()
    yield 200
    assert not isValid(dialog) or not dialog.isVisible(), label_texts(dialog)


def add_simbox(app: Any, name: str, port: int, user: str, key: str, url: str) -> Step:
    """Add host…, Provider simbox, the box's SSH details and the Health page URL `up --json` printed first."""
    from workroom.ui.host_dialog import REFERENCE_FIELDS, ref_key

    dialog = app.window.open_add_dialog()
    yield 300
    dialog.select_provider("simbox")
    yield 100
    for field, value in (("name", name), ("address", "127.0.0.1"), ("port", str(port)), ("user", user),
                         ("identity", key)):
        dialog.inputs[field].setText(value)
    dialog.inputs[ref_key(REFERENCE_FIELDS["health_url"])].setText(url)
    yield 200
    dialog.try_accept()
    yield 200
    assert not isValid(dialog) or not dialog.isVisible(), label_texts(dialog)


def trust_key(app: Any) -> Step:
    """The host-key question: read it, then Trust and connect."""
    from workroom.ui.host_key_dialog import HostKeyDialog

    for _ in range(100):
        found = [d for d in visible_dialogs() if isinstance(d, HostKeyDialog)]
        if found:
            break
        yield 100
    else:
        raise AssertionError("no host-key question")
    found[0].trust_button.click()
    yield 200


def click(app: Any, name: str) -> Step:
    """Click the visible button named `name` (its object name), wherever it is."""
    for _ in range(50):
        buttons = [b for w in QApplication.topLevelWidgets() for b in w.findChildren(QPushButton, name)
                   if b.isVisible() and b.isEnabled()]
        if buttons:
            buttons[0].click()
            yield 300
            return
        yield 100
    raise AssertionError(f"no visible, enabled button {name}")


def card_button(app: Any, host: str, which: str) -> Step:
    card = app.window.cards.cards[host]
    (card.keep_button if which == "keep" else card.dismiss_button).click()
    yield 500


def select(app: Any, host: str) -> Step:
    app.window.select_host(host)
    yield 200


def palette(name: str) -> None:
    from workroom.ui.palette_override import dark_palette

    qapp = QApplication.instance()
    assert isinstance(qapp, QApplication)
    qapp.setPalette(dark_palette() if name == "dark" else qapp.style().standardPalette())


def shots(app: Any, out: str, names: list[str], themes: list[str], host: str | None = None,
          notification: list[int] | None = None) -> Step:
    """Pictures of what shows now, in each palette: the screen, the window, the tray menu (and `host`'s submenu),
    the detail panel, Settings, About."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    qapp = QApplication.instance()
    assert isinstance(qapp, QApplication)
    window = app.window
    screen = qapp.primaryScreen()
    if notification:
        x, y, w, h = notification
        screen.grabWindow(0, x - 12, max(0, y - 6), w + 24, h + 18).save(str(folder / "notification_prompt.png"))
    window.resize(1240, 680)  # beside the notification, which shows at the top right, below the tray's panel
    window.move(40, 60)
    for theme in themes:
        palette(theme)
        if host is not None:
            window.select_host(host)
        window.raise_()
        yield 500
        for name in names:
            kind, _, label = name.partition(":")
            path = str(folder / f"{label or kind}_{theme}.png")
            if kind == "desktop":
                screen.grabWindow(0).save(path)
            elif kind == "window":
                window.grab().save(path)
            elif kind == "detail":
                window.detail_scroll.grab().save(path)
            elif kind == "tray_menu":
                menu = app.tray.menu
                geo = yield from tray_menu_shot(app, screen, path)
                if host is not None:
                    submenu = app.tray.host_menus[host]
                    menu.setActiveAction(submenu.menuAction())
                    submenu.popup(QPoint(geo.x() - 220, geo.y() + 90))
                    yield 500
                    sub = submenu.geometry()
                    left = min(sub.x(), geo.x()) - 10
                    screen.grabWindow(0, left, 0, max(sub.right(), geo.right()) - left + 12,
                                      max(sub.bottom(), geo.bottom()) + 12).save(
                        str(folder / f"tray_host_submenu_{theme}.png"))
                    submenu.hide()
                menu.hide()
                yield 200
            elif kind == "settings":
                window.show_settings()
                yield 400
                window.grab().save(path)
                window.tabs.setCurrentIndex(0)
                yield 200
            elif kind == "about":
                app.show_about()
                yield 400
                app.about.grab().save(path)
                app.about.open_log.click()  # no program opens a text file on this bare desktop: the dialog says so
                for _ in range(50):
                    if app.about.error.isVisible():
                        break
                    yield 100
                assert app.about.error.isVisible(), "Open log did not fail here: no picture of what it says"
                yield 200
                app.about.grab().save(str(folder / f"about_open_log_failed_{theme}.png"))
                app.about.close()
            elif kind == "tray_this_computer_busy":
                yield from tray_this_computer_busy(app, screen, path)
            elif kind == "add_host_dialog":
                dialog = app.window.open_add_dialog()
                dialog.select_provider("simbox")
                dialog.inputs["name"].setText("gpu/box")
                dialog.inputs["port"].setText("70000")
                dialog.show()
                dialog.try_accept()
                yield 400
                dialog.grab().save(path)
                dialog.reject()
            yield 100
    palette("light")
    yield 300


def tray_this_computer_busy(app: Any, screen: Any, path: str) -> Step:
    """The tray when only this computer is busy, past the awake ceiling's length (it never sleeps, so there is
    nothing to keep awake and no ceiling's clock on the icon) and every box idle or asleep: this computer's row is
    fed a constructed busy status (scripts/demo_states.py) for the picture; its next real status replaces it."""
    scripts = str(Path(__file__).resolve().parents[2] / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    from demo_states import busy, make_snapshot

    host = app.controller.engine.this_computer()
    if host is None:
        return
    snap = make_snapshot(host.name, "local", **busy(awake_seconds=9 * 3600.0, awake_ceiling_exceeded=True))
    for listener in list(app.controller.engine.listeners):
        listener(snap)
    yield 300
    yield from tray_menu_shot(app, screen, path)
    app.tray.menu.hide()


def tray_menu_shot(app: Any, screen: Any, path: str) -> Generator[int, None, Any]:
    """The tray menu popped up under the tray's panel and taken with the panel's icon beside it; its geometry."""
    menu = app.tray.menu
    app.tray.refresh_texts()
    menu.popup(QPoint(screen.geometry().width() - 20, 28))
    yield 500
    geo = menu.geometry()
    screen.grabWindow(0, geo.x() - 330, 0, geo.width() + 350, geo.bottom() + 12).save(path)
    return geo


def demo_day() -> Any:
    """A developer's last 24 hours as an agent records them (a compile, an ssh session, sleep), ending now."""
    from workroom.core.protocol import TimelineReply

    now = time.time()
    t, spans = now - 24 * 3600, []
    for minutes, state, cls, subject in ((230, "", "", ""), (160, "asleep", "", ""), (25, "idle", "", ""),
                                         (190, "busy", "cpu", "cc1plus"), (10, "held", "cpu", "cc1plus"),
                                         (180, "busy", "tcp", "ssh"), (20, "busy", "keystroke", ""),
                                         (170, "busy", "cpu", "rustc"), (10, "held", "cpu", "rustc"),
                                         (40, "ceiling", "cpu", "python3"), (30, "idle", "", ""),
                                         (375, "asleep", "", "")):
        if state:
            spans.append({"start": t, "end": t + minutes * 60, "state": state, "class": cls, "subject": subject})
        t += minutes * 60
    return TimelineReply.model_validate({"now": now, "spans": spans, "more_since": None, "problem": None})


def demo(app: Any, out: str, themes: list[str], scripts: str) -> Step:
    """The pictures no first hour reaches, from constructed snapshots (scripts/demo_states.py), named demo_* or
    said so in docs/ui.md: every badge state side by side, the host-key question, a day of the why-awake record."""
    sys.path.insert(0, scripts)
    from demo_states import every_state
    from workroom.core.questions import HostKeyQuestion
    from workroom.ui.host_key_dialog import HostKeyDialog

    folder = Path(out)
    window = app.window
    states = every_state()
    states.pop("asking")
    for snap in states.values():
        for listener in list(app.controller.engine.listeners):
            listener(snap)
    for theme in themes:
        palette(theme)
        window.select_host("build-box")
        yield 500
        window.grab().save(str(folder / f"demo_every_state_{theme}.png"))
        question = HostKeyQuestion(host="10.1.2.3", port=2222, key_type="ssh-ed25519",
                                   fingerprint="SHA256:q8H0bQ0qK1m1m2oXkz4vU5y3d2C8rB3a4Qe7nYt9wXc")
        dialog = HostKeyDialog("fresh-box", question, window)
        dialog.show()
        yield 400
        dialog.grab().save(str(folder / f"host_key_dialog_{theme}.png"))
        dialog.close()
        window.select_host("ci-runner")
        window.timeline.hourly_price = 0.36
        window.timeline.price.setValue(0.36)
        window.timeline.show_record(demo_day(), ("watch", "top"))
        yield 500
        name = "detail_why_awake_timeline.png" if theme == "light" else "detail_why_awake_timeline_dark.png"
        window.detail_scroll.grab().save(str(folder / name))
    palette("light")
    yield 200


def tray_icon_contrast(app: Any) -> dict[str, float]:
    """The tray menu's per-host badge icons against the menu, as drawn: the lowest contrast of each icon's ink."""
    from PySide6.QtGui import QImage
    from workroom.ui import styles

    app.tray.refresh_texts()
    background = styles.window(app.tray.menu.palette())
    out = {}
    for name, menu in app.tray.host_menus.items():
        image = menu.icon().pixmap(36, 36).toImage().convertToFormat(QImage.Format.Format_ARGB32)
        ink = [image.pixelColor(x, y) for y in range(image.height()) for x in range(image.width())
               if image.pixelColor(x, y).alpha() == 255]
        out[name] = round(min(styles.contrast_ratio(c, background) for c in ink), 2) if ink else 0.0
    return out


def dark_icons(app: Any) -> Step:
    palette("dark")
    yield 300
    app.result = tray_icon_contrast(app)
    palette("light")
    yield 200


COMMANDS: dict[str, Callable[..., Step]] = {
    "add_ssh": add_ssh, "add_simbox": add_simbox, "trust_key": trust_key, "click": click, "select": select,
    "card_button": card_button, "shots": shots, "dark_icons": dark_icons, "demo": demo,
}


class Runner:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.next = 0
        self.step: Step | None = None
        self.app: Any = None
        self.timer = QTimer()
        self.timer.setInterval(100)
        self.timer.timeout.connect(self.poll)
        self.timer.start()

    def poll(self) -> None:
        if self.step is not None:
            return
        path = self.folder / f"cmd-{self.next}.json"
        if not path.exists():
            return
        self.app = self.app or workroom_app()
        command = json.loads(path.read_text())
        if self.app is None:
            return  # not started yet: the command waits
        if command["do"] == "facts":
            self.finish({})
            return
        self.app.result = None
        self.step = COMMANDS[command["do"]](self.app, **command.get("args", {}))
        self.advance()

    def advance(self) -> None:
        assert self.step is not None
        try:
            pause = next(self.step)
        except StopIteration:
            self.step = None
            self.finish({"result": getattr(self.app, "result", None)})
            return
        except Exception as error:
            self.step = None
            self.finish({"error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()})
            return
        QTimer.singleShot(pause, self.advance)

    def finish(self, extra: dict[str, Any]) -> None:
        try:
            seen = facts(self.app)
        except Exception as error:
            seen = {"facts_error": f"{type(error).__name__}: {error}", "trace": traceback.format_exc()}
        done = self.folder / f"done-{self.next}.json"
        part = done.with_suffix(".part")
        part.write_text(json.dumps({**seen, **extra}))
        part.rename(done)
        self.next += 1


def main() -> int:
    folder = Path(sys.argv[1])
    QApplication(["workroom-app"])
    runner = Runner(folder)
    from workroom.ui.main import main as start

    code = start(["--window"])
    runner.timer.stop()
    return code


NESTED_BRACKETS = re.compile(r"\([^()]*\(")
"""An opening bracket inside an open one: "(running: sh (just now))"."""

if __name__ == "__main__":
    sys.exit(main())
