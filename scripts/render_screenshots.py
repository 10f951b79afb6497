"""Render the app's main views and states to docs/screenshots/*.png, offscreen (no display needed).

The window is the real one, fed constructed snapshots (workroom.ui.demo_states) through the engine's
listeners exactly as live sessions feed it, so every badge state shows without real boxes.

    QT_QPA_PLATFORM=offscreen .venv/bin/python scripts/render_screenshots.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "app"), str(ROOT / "agent_bundle")]


def demo_day() -> object:
    """A developer's last 24 hours as an agent records them (a compile, an ssh session, sleep), ending now."""
    import time

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args(argv)
    os.environ["WORKROOM_HOME"] = tempfile.mkdtemp(prefix="wr-shots-")
    from PySide6.QtCore import QSize
    from PySide6.QtWidgets import QApplication, QWidget

    app = QApplication.instance() or QApplication(["render_screenshots"])
    from workroom.agent_bundle import load_agent_bundle
    from workroom.core.ceiling import CeilingSettings
    from workroom.paths import app_paths
    from workroom.sessions.engine import Engine
    from workroom.ui.app import WorkroomApp
    from workroom.ui.demo_states import AGENT_MONOTONIC, busy, every_state, make_snapshot
    from workroom.ui.host_dialog import AddHostDialog
    from workroom.ui.host_key_dialog import HostKeyDialog

    paths = app_paths()
    engine = Engine(paths, load_agent_bundle(paths), hostname="laptop")
    wapp = WorkroomApp(engine)
    window = wapp.window
    window.resize(1180, 640)
    window.show()
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []

    def settle() -> None:
        for _ in range(5):
            app.processEvents()

    def grab(widget: QWidget, name: str) -> None:
        settle()
        path = out / f"{name}.png"
        if not widget.grab().save(str(path)):
            raise SystemExit(f"could not write {path}")
        written.append(path)

    def feed(snapshot: object) -> None:
        for listener in list(engine.listeners):
            listener(snapshot)

    states = every_state()
    states.pop("busy_past_ceiling")
    for snap in states.values():
        feed(snap)
    window.select_host("ci-runner")
    grab(window, "window_hosts")

    window.select_host("ci-runner")
    window.timeline.show_record(demo_day(), ("watch", "top"))
    window.timeline.price.setValue(0.36)
    window.timeline.hourly_price = 0.36
    window.timeline.show_record(window.timeline.reply, ("watch", "top"))
    window.detail.resize(560, window.detail.sizeHint().height())
    grab(window.detail, "detail_why_awake_timeline")

    window.select_host("build-box")
    grab(window, "window_offline_host")

    for name, deadline in (("render-farm", 420.0), ("train-job", 95.0), ("etl-nightly", 1500.0)):
        feed(make_snapshot(name, "boxd", prompt=True, **busy(
            awake_seconds=4 * 3600 + 300.0, awake_ceiling_exceeded=True, ask_at_ceiling=True, prompt_pending=True,
            prompt_deadline=AGENT_MONOTONIC + deadline)))
    window.select_host("render-farm")
    grab(window, "window_prompt_cards")
    window.cards.timer.stop()

    window.settings.load(CeilingSettings())
    window.show_settings()
    grab(window, "settings_pane")
    window.settings.timeout_minutes.setValue(0)
    window.settings.timeout_seconds.setValue(10)
    grab(window, "settings_pane_out_of_bounds")

    dialog = AddHostDialog(engine.hosts, window)
    dialog.inputs["name"].setText("gpu/box")  # type: ignore[union-attr]
    dialog.inputs["port"].setText("70000")  # type: ignore[union-attr]
    dialog.inputs["address"].setText("gpu box")  # type: ignore[union-attr]
    dialog.show()
    dialog.try_accept()
    dialog.resize(dialog.sizeHint().expandedTo(QSize(520, 0)))
    grab(dialog, "add_host_dialog_errors")
    dialog.close()

    class Question:
        host, port, key_type = "10.1.2.3", 2222, "ssh-ed25519"
        fingerprint = "SHA256:q8H0bQ0qK1m1m2oXkz4vU5y3d2C8rB3a4Qe7nYt9wXc"

    key_dialog = HostKeyDialog("fresh-box", Question(), window)
    key_dialog.resize(520, key_dialog.sizeHint().height())
    key_dialog.show()
    grab(key_dialog, "host_key_dialog")
    key_dialog.close()

    menu = wapp.tray.menu
    menu.adjustSize()
    menu.show()
    grab(menu, "tray_menu")
    menu.hide()
    for path in written:
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
