"""`workroom-app`: the desktop app's entry point.

`--version` and `--self-test` answer before any window exists. On Linux without a display (and no
QT_QPA_PLATFORM chosen) the app says so and shows the CLI's live view instead of failing in Qt.
Otherwise one asyncio loop (qasync) runs the whole app on the Qt thread.
"""

from __future__ import annotations

import asyncio
import os
import sys

NO_DISPLAY_MESSAGE = (
    "workroom-app: no display found (DISPLAY and WAYLAND_DISPLAY are unset), so the window cannot open.\n"
    "Showing the live status view in this terminal instead (Ctrl-C to stop). "
    "Set QT_QPA_PLATFORM=offscreen to run the app without a screen."
)


def has_display(environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    if not sys.platform.startswith("linux"):
        return True
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY") or env.get("QT_QPA_PLATFORM"))


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    from workroom.self_test import early_flags

    early = early_flags(args)
    if early is not None:
        return early
    if not has_display():
        print(NO_DISPLAY_MESSAGE, file=sys.stderr)
        from workroom import cli

        return cli.main(["status", "--watch"])
    return run_app(show_window="--window" in args)


def run_app(*, show_window: bool = False) -> int:
    import qasync
    from PySide6.QtWidgets import QApplication

    from workroom.core.errors import UserError

    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "workroom-app"])
    assert isinstance(app, QApplication)
    app.setApplicationName("Workroom")
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    try:
        with loop:
            code: int = loop.run_until_complete(_run(show_window))
            return code
    except UserError as error:
        print(f"workroom-app: {error}", file=sys.stderr)
        return 1


async def _run(show_window: bool) -> int:
    from workroom.agent_bundle import load_agent_bundle
    from workroom.paths import app_paths
    from workroom.resources import app_icon
    from workroom.sessions.engine import Engine
    from workroom.ui.app import WorkroomApp

    paths = app_paths()
    first_run = not paths.hosts_file.exists()
    engine = Engine(paths, load_agent_bundle(paths))
    from PySide6.QtWidgets import QApplication

    QApplication.setWindowIcon(app_icon())
    app = WorkroomApp(engine)
    app.start(show_window=show_window or first_run)
    await app.run_until_quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
