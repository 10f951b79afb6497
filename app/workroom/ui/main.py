"""`workroom-app`: the desktop app's entry point.

`--version` and `--self-test` answer before any window exists. On Linux without a display (and no
QT_QPA_PLATFORM chosen) the app says so and shows the CLI's live view instead of failing in Qt.
Otherwise one asyncio loop (qasync) runs the whole app on the Qt thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workroom.single_instance import InstanceLock
    from workroom.ui.app import WorkroomApp

log = logging.getLogger("workroom")

STARTUP_FAILED = ("Something went wrong while starting Workroom. Open it again; if this repeats, "
                  "the log below says what happened.")
ALREADY_RUNNING = "workroom-app: Workroom is already running for this home; its window was brought forward."
NO_ANSWER = ("workroom-app: Workroom is already running for this home but did not answer. If it is stuck, "
             "quit it (or end it in Activity Monitor / with kill) and open it again.")
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
    from workroom import single_instance
    from workroom.paths import app_paths

    claimed = single_instance.claim(app_paths())
    if isinstance(claimed, int):
        print(ALREADY_RUNNING if claimed == single_instance.EXIT_HANDED_OVER else NO_ANSWER, file=sys.stderr)
        return claimed
    try:
        return _run_app(claimed, show_window=show_window)
    finally:
        if claimed is not None:
            claimed.release()


def _run_app(lock: InstanceLock | None, *, show_window: bool) -> int:
    import qasync
    from PySide6.QtWidgets import QApplication

    from workroom.core.errors import UserError

    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "workroom-app"])
    assert isinstance(app, QApplication)
    app.setApplicationName("Workroom")
    app.setQuitOnLastWindowClosed(False)
    from workroom.ui.palette_override import apply_from_env

    forced = apply_from_env(app)
    log_path = start_logging()
    if forced:
        log.info("palette: %s (WORKROOM_PALETTE)", forced)
    log.info("Workroom %s starting (Python %s, %s)", _version(), sys.version.split()[0], sys.platform)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    try:
        with loop:
            code: int = loop.run_until_complete(_run(show_window, lock))
            return code
    except UserError as error:
        log.error("start-up failed: %s", error.info().text())
        show_startup_error(error.title, f"{error.message}\n\n{error.hint}".strip(), log_path)
        return 1
    except Exception:
        log.exception("start-up failed")
        show_startup_error("Workroom could not start", STARTUP_FAILED, log_path)
        return 1
    finally:
        log.info("Workroom stopped")


def start_logging() -> Path | None:
    """The log file (platform.logs); None when it cannot be made (then only stderr, and the dialog says so)."""
    from workroom.paths import app_log_folder
    from workroom.platform.logs import setup_logging

    folder = app_log_folder()
    try:
        return setup_logging(folder)
    except OSError as exc:
        print(f"workroom-app: cannot write the log in {folder}: {exc}", file=sys.stderr)
        return None


def show_startup_error(title: str, message: str, log_path: Path | None) -> None:
    """A dialog, since stderr goes nowhere for an app started from Finder; it names the log file."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QMessageBox

    from workroom.platform.macos import bring_to_front

    where = f"Details are in the log: {log_path}" if log_path else "No log file could be written."
    print(f"workroom-app: {title}: {message}", file=sys.stderr)
    box = QMessageBox(QMessageBox.Icon.Critical, title, message)
    box.setObjectName("startup_error")
    box.setInformativeText(where)
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    bring_to_front()
    box.exec()


def _version() -> str:
    from workroom import __version__

    return __version__


async def _run(show_window: bool, lock: InstanceLock | None = None) -> int:
    app = open_app(show_window)
    if lock is not None:
        await lock.serve(app.show_for_another_launch)
    await app.run_until_quit()
    return 0


def open_app(show_window: bool) -> WorkroomApp:
    """The tray (and on a first run the window) at once; every host connects, all at once, as soon as the
    login shell's environment is read (ProxyCommands and local commands need its PATH and SSH agent): a slow
    ~/.zshrc delays the connects, never the menu-bar item. Call on the running loop."""
    from PySide6.QtWidgets import QApplication

    from workroom.agent_bundle import load_agent_bundle
    from workroom.paths import app_paths, profile_env
    from workroom.platform.login_item import login_item
    from workroom.resources import app_icon
    from workroom.sessions.engine import Engine
    from workroom.ui.app import WorkroomApp

    paths = app_paths()
    first_run = not paths.hosts_file.exists()
    engine = Engine(paths, load_agent_bundle(paths))
    QApplication.setWindowIcon(app_icon())
    app = WorkroomApp(engine, login_item=login_item(profile_env()))
    app.start(show_window=show_window or first_run, connect=False)
    app.connect_when(_adopt_login_env())
    return app


async def _adopt_login_env() -> None:
    """Read the login shell's environment off the loop, then take its PATH and SSH agent on the loop's thread
    (the GUI thread reads the environment meanwhile: it is never written from another thread)."""
    from workroom.platform.login_env import TAKEN, adopt_login_env

    scratch = dict(os.environ)
    await asyncio.to_thread(adopt_login_env, scratch)
    for key in TAKEN:
        if scratch.get(key) and scratch[key] != os.environ.get(key):
            os.environ[key] = scratch[key]


if __name__ == "__main__":
    sys.exit(main())
