"""`workroom-app`: the desktop app's entry point.

`--version` and `--self-test` answer before any window exists. On Linux without a display (and no
QT_QPA_PLATFORM chosen) the app says so and shows the CLI's live view instead of failing in Qt.
Otherwise one asyncio loop (qasync) runs the whole app on the Qt thread.

Start-up, in order (docs/architecture.md, "Start-up, in order"): the single-instance lock, the QApplication,
the palette, the log, then at once the tray icon (ui/early_tray.py: the app icon, "starting…", Quit) — before
the engine and the heavy ui modules are imported, so this module imports neither at its top. The engine is
imported on a thread of its own while the loop keeps the icon painted and its menu working; then the ui
modules, the app (which adopts that icon) and the window; every host connects once the login shell's
environment, read meanwhile, is taken.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMessageBox

    from workroom.agent_bundle import AgentBundle
    from workroom.core.errors import UserError
    from workroom.single_instance import InstanceLock
    from workroom.ui.app import WorkroomApp
    from workroom.ui.early_tray import EarlyTray

log = logging.getLogger("workroom")

STARTUP_FAILED = ("Something went wrong while starting Workroom. Open it again; if this repeats, "
                  "the log below says what happened.")
ALREADY_RUNNING = "workroom-app: Workroom is already running for this home; its window was brought forward."
NO_ANSWER = ("workroom-app: Workroom is already running for this home but did not answer. If it is stuck, "
             "quit it (or end it in Activity Monitor / with kill) and open it again.")
TRAY_PAINT_WAIT_SECONDS = 0.3
"""How long the start waits for an X11 tray to embed and expose the icon before it loads the engine (it
takes ~40-80 ms under trayer here; a tray slower than this gets its icon while the engine loads)."""
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
    from PySide6.QtWidgets import QApplication

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
    early: EarlyTray | None = None
    try:
        early = show_early_tray(app)
        import asyncio

        import qasync

        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        with loop:
            code: int = loop.run_until_complete(_run(show_window, lock, early))
            return code
    except Exception as failure:
        if early is not None:
            early.hide()  # the app is not running: no icon beside the dialog that says so
        error = _user_error(failure)
        if error is not None:
            log.error("start-up failed: %s", error.info().text())
            show_startup_error(error.title, f"{error.message}\n\n{error.hint}".strip(), log_path)
        else:
            log.exception("start-up failed")
            show_startup_error("Workroom could not start", STARTUP_FAILED, log_path)
        return 1
    finally:
        log.info("Workroom stopped")


def _user_error(failure: Exception) -> UserError | None:
    """`failure` as a UserError, if it is one (core.errors is only loaded with the engine: a failure before
    that cannot be one, and this never imports it)."""
    errors = sys.modules.get("workroom.core.errors")
    user_error = getattr(errors, "UserError", None)
    if isinstance(user_error, type) and isinstance(failure, user_error):
        return failure  # type: ignore[return-value]
    return None


def show_early_tray(app: Any) -> EarlyTray:
    """The tray icon, right after the QApplication: the app icon, "starting…" and Quit (ui/early_tray.py).
    Where there is no tray it is made but not shown (the window opens when the app is built)."""
    from workroom.resources import app_icon
    from workroom.ui.early_tray import EarlyTray

    icon = app_icon()
    app.setWindowIcon(icon)
    early = EarlyTray(icon)
    if early.show():
        # Qt sends the icon to the tray host and paints it now, while the loop's own imports run (an X11
        # tray embeds it meanwhile: exposed ~80 ms after show() here, against ~200 ms when left to the loop).
        app.processEvents()
        log.info("start-up: tray icon shown; loading the engine")
    return early


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
    from workroom.platform.macos import bring_to_front

    print(f"workroom-app: {title}: {message}", file=sys.stderr)
    box = startup_error_box(title, message, log_path)
    bring_to_front()
    box.exec()


def startup_error_box(title: str, message: str, log_path: Path | None) -> QMessageBox:
    """The start-up error, plain: its message and the log's path may quote a file or an exception."""
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QMessageBox

    from workroom.ui.plain_widgets import message_box

    where = f"Details are in the log: {log_path}" if log_path else "No log file could be written."
    box = message_box(QMessageBox.Icon.Critical, title, message, informative=where)
    box.setObjectName("startup_error")
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return box


def _version() -> str:
    from workroom import __version__

    return __version__


async def _run(show_window: bool, lock: InstanceLock | None = None, early: EarlyTray | None = None) -> int:
    app = await start_app(show_window, early)
    if app is None:
        log.info("quit while starting (from the tray's menu)")
        return 0
    if lock is not None:
        await lock.serve(app.show_for_another_launch, app.run_command)
    await app.run_until_quit()
    return 0


async def start_app(show_window: bool, early: EarlyTray | None = None) -> WorkroomApp | None:
    """From the tray shown to the app built, never blocking the loop for long: the login shell's environment
    is read on a thread (its shell runs meanwhile), the engine imported and the agent bundle read on another,
    while the loop keeps the early tray painted and its Quit working; then the ui modules (Qt classes, on
    this thread), the app and the window (`open_app`). None when Quit was chosen from the starting menu
    (the engine's imports still end first: they cannot be stopped half way)."""
    import asyncio

    login_env = asyncio.ensure_future(_read_login_env())  # the shell is a process of its own: start it first
    asked = asyncio.Event()
    if early is not None:
        early.quit_requested.connect(asked.set)
        if early.quit_asked:  # while the icon was being shown (its first paint runs Qt's events)
            asked.set()
    waiting: asyncio.Future[Any] | None = None
    app: WorkroomApp | None = None
    try:
        if early is not None:
            await _painted(early)
        if asked.is_set():
            return None
        loading = asyncio.wrap_future(_on_a_thread("wr-start-engine", _load_engine))
        waiting = asyncio.ensure_future(asked.wait())
        await asyncio.wait({loading, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if asked.is_set():
            await asyncio.wait({loading})  # the thread's imports end first; what they loaded is not used
            if loading.exception() is not None:
                log.info("quit while starting; the engine had failed to load meanwhile", exc_info=loading.exception())
            return None
        bundle = loading.result()
        await asyncio.sleep(0)  # what the tray's menu was asked meanwhile is seen before the ui loads
        import workroom.ui.app  # noqa: F401  (Qt classes: on the GUI thread; ~50-150 ms)

        await asyncio.sleep(0)
        if asked.is_set():
            return None
        wanted = show_window or (early is not None and early.window_asked)
        app = open_app(wanted, early=early, bundle=bundle, login_env=login_env)
        log.info("start-up: the app is up")
        return app
    finally:
        if waiting is not None:
            waiting.cancel()
        if early is not None:
            early.quit_requested.disconnect(asked.set)
        if app is None:
            login_env.cancel()


async def _painted(early: EarlyTray, timeout: float = TRAY_PAINT_WAIT_SECONDS) -> None:
    """Let the loop put the tray icon on screen before the imports begin: where Qt draws the icon in a window
    of its own (an X11 tray, XEmbed), until the tray host has mapped and exposed it, for at most `timeout`;
    elsewhere (a macOS status item, a StatusNotifierItem over D-Bus) one turn of the loop."""
    import asyncio
    import time

    widget = early.own_window()
    if widget is None:
        await asyncio.sleep(0)
        return
    deadline = time.monotonic() + timeout
    while early.icon.isVisible() and not early.exposed(widget) and time.monotonic() < deadline:
        await asyncio.sleep(0.005)


def open_app(show_window: bool, *, early: EarlyTray | None = None, bundle: AgentBundle | None = None,
             login_env: Awaitable[dict[str, str]] | None = None) -> WorkroomApp:
    """The app over its engine: the tray (adopting `early`'s icon when there is one) and, on a first run,
    the window, at once; every host connects, all at once, as soon as the login shell's environment is read
    and taken (`login_env`, else read here; ProxyCommands and local commands need its PATH and SSH agent):
    a slow ~/.zshrc delays the connects, never the menu-bar item. Call on the running loop."""
    from workroom.agent_bundle import load_agent_bundle
    from workroom.paths import app_paths, profile_env
    from workroom.platform.login_item import login_item
    from workroom.sessions.engine import Engine
    from workroom.ui.app import WorkroomApp

    paths = app_paths()
    first_run = not paths.hosts_file.exists()
    engine = Engine(paths, bundle if bundle is not None else load_agent_bundle(paths))
    if early is None:
        from PySide6.QtWidgets import QApplication

        from workroom.resources import app_icon

        QApplication.setWindowIcon(app_icon())
    app = WorkroomApp(engine, login_item=login_item(profile_env()),
                      tray_icon=early.icon if early is not None else None)
    if early is not None:
        early.handed_over(app.request_quit)
    app.start(show_window=show_window or first_run, connect=False)
    app.connect_when(_adopt_login_env(login_env if login_env is not None else _read_login_env()))
    return app


def _load_engine() -> AgentBundle:
    """On a thread of its own, while the loop keeps the early tray painted and its menu working: the engine's
    imports (pydantic, asyncio; no Qt), paramiko's (the engine loads it only with a first SSH connection:
    here it is loaded ahead, off the path to the hosts' connects) and the agent bundle (read and hashed; in a
    checkout built first, in a child process)."""
    from workroom.pydantic_plugins import skip_pydantic_plugins

    skip_pydantic_plugins()
    import workroom.platform.login_item
    import workroom.remote.ssh_connection
    import workroom.sessions.engine  # noqa: F401
    from workroom.agent_bundle import load_agent_bundle
    from workroom.paths import app_paths

    return load_agent_bundle(app_paths())


def _on_a_thread(name: str, call: Callable[[], Any]) -> Any:
    """`call()` on a new thread; its concurrent future (the thread is joined on the way out: an import is not
    left half done)."""
    from concurrent.futures import Future

    future: Future[Any] = Future()

    def work() -> None:
        try:
            result = call()
        except BaseException as exc:  # handed to the waiter
            future.set_exception(exc)
        else:
            future.set_result(result)

    threading.Thread(target=work, name=name).start()
    return future


async def _read_login_env() -> dict[str, str]:
    """The login shell's environment, read on a daemon thread (a quit does not wait for a slow shell), into a
    copy: taken into os.environ later, on the loop's thread (`_adopt_login_env`)."""
    import asyncio

    from workroom.daemon_threads import DaemonThreads
    from workroom.platform.login_env import adopt_login_env

    scratch = dict(os.environ)
    thread = DaemonThreads("wr-login-env")
    try:
        await asyncio.get_running_loop().run_in_executor(thread, adopt_login_env, scratch)
    finally:
        thread.shutdown(wait=False)
    return scratch


async def _adopt_login_env(reading: Awaitable[dict[str, str]]) -> None:
    """Take the login shell's PATH and SSH agent on the loop's thread (the GUI thread reads the environment
    meanwhile: it is never written from another thread)."""
    from workroom.platform.login_env import TAKEN

    scratch = await reading
    for key in TAKEN:
        if scratch.get(key) and scratch[key] != os.environ.get(key):
            os.environ[key] = scratch[key]


if __name__ == "__main__":
    sys.exit(main())
