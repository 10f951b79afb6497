"""GUI-tier fixtures: a private WORKROOM_HOME per test, a qasync loop over pytest-qt's QApplication,
a real Engine, cleanup (by PID) of every agent a test's WORKROOM_HOME started, and a real X desktop for the
tests that launch the app as its own process."""

from __future__ import annotations

import asyncio
import gc
import os
import sys
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest
from gui_helpers import kill_agents_under

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(scope="module")
def x_session() -> Iterator[Any]:
    """A real X desktop for this module: Xvfb, openbox (window manager), trayer (tray host), from
    scripts/x_desktop.py; skipped, with what is missing, where one cannot start (./dev setup installs it)."""
    from x_desktop import DesktopUnavailable, desktop

    if not sys.platform.startswith("linux"):
        pytest.skip("an X11 desktop (Linux)")
    try:
        with desktop((1024, 700)) as here:
            yield here
    except DesktopUnavailable as error:
        pytest.skip(str(error))


@pytest.fixture
def wr_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "wrhome"
    monkeypatch.setenv("WORKROOM_HOME", str(home))
    yield home
    kill_agents_under(home)


@pytest.fixture
def aloop(qapp: Any) -> Iterator[asyncio.AbstractEventLoop]:
    """The app's one loop: qasync over the test QApplication."""
    import qasync

    qapp.setQuitOnLastWindowClosed(False)  # as the app does: a closing dialog must not stop the loop
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    yield loop
    for task in asyncio.all_tasks(loop):
        task.cancel()
    loop.run_until_complete(asyncio.sleep(0.05))
    loop.close()
    asyncio.set_event_loop(None)
    # Collect this test's Qt garbage here, on the GUI thread: left to chance, a collection could run in
    # some worker thread and destroy Qt objects there (PySide then crashes in the next test's event loop).
    gc.collect()


Runner = Callable[..., Any]


@pytest.fixture
def run(aloop: asyncio.AbstractEventLoop) -> Runner:
    """Run a coroutine on the qasync loop (Qt events flow meanwhile), bounded by `timeout` seconds."""

    def runner(coro: Coroutine[Any, Any, Any], timeout: float = 30.0) -> Any:
        return aloop.run_until_complete(asyncio.wait_for(coro, timeout))

    return runner


@pytest.fixture
def engine(wr_home: Path, aloop: asyncio.AbstractEventLoop) -> Iterator[Any]:
    from workroom.agent_bundle import load_agent_bundle
    from workroom.paths import app_paths
    from workroom.sessions.engine import Engine

    paths = app_paths()
    eng = Engine(paths, load_agent_bundle(paths))
    yield eng
    aloop.run_until_complete(asyncio.wait_for(eng.close(), 15))


@pytest.fixture
def window(engine: Any, qtbot: Any) -> Iterator[Any]:
    from workroom.ui.app_controller import AppController
    from workroom.ui.main_window import MainWindow

    controller = AppController(engine)
    win = MainWindow(controller)
    qtbot.addWidget(win)
    win.show()
    yield win
    win.cards.timer.stop()


@pytest.fixture
def app(engine: Any, qtbot: Any) -> Iterator[Any]:
    """The whole app (window, tray, controller) over the test engine, as ui.main puts it together."""
    from workroom.ui.app import WorkroomApp

    workroom_app = WorkroomApp(engine)
    qtbot.addWidget(workroom_app.window)
    yield workroom_app
    workroom_app.window.cards.timer.stop()
    workroom_app.tray.icon.hide()
