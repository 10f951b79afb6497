"""The app does not count itself as work: this computer's real agent, started by the app, leaves out the app's
process and everything it runs (a relay, a helper) while still seeing a user's job beside them.

Real parts only: the app's engine, sessions and window (offscreen), and the agent on this computer.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from gui_helpers import wait_for
from workroom.core.connection import ConnectionState
from workroom.ui.app import WorkroomApp

pytestmark = [pytest.mark.gui, pytest.mark.integration, pytest.mark.slow,
              pytest.mark.linux(reason="busy reasons from the agent's /proc sampler")]

LIVE = (ConnectionState.LIVE, ConnectionState.QUIET)
BUSY_LOOP = "while True: pass"
OBSERVE_SECONDS = 5.0


@pytest.fixture
def app(engine: Any, qtbot: Any) -> Iterator[Any]:
    workroom_app = WorkroomApp(engine)
    qtbot.addWidget(workroom_app.window)
    yield workroom_app
    workroom_app.window.cards.timer.stop()


def burn_in_this_process(stop: threading.Event) -> threading.Thread:
    """CPU spent by the app's own process: hashing big buffers releases the GIL, so the window stays live."""
    data = b"x" * 8_000_000

    def burn() -> None:
        while not stop.is_set():
            hashlib.sha256(data).digest()

    thread = threading.Thread(target=burn, daemon=True)
    thread.start()
    return thread


@pytest.fixture
def jobs() -> Iterator[dict[str, int]]:
    """A CPU-bound child of the app (as a relay or helper it ran would be) and a user's CPU-bound job started
    the way a user's is: not the app's child (its shell exits at once, so init adopts it)."""
    child = subprocess.Popen([sys.executable, "-c", BUSY_LOOP], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = subprocess.run(["sh", "-c", f"'{sys.executable}' -c '{BUSY_LOOP}' >/dev/null 2>&1 & echo $!"],
                             capture_output=True, text=True, check=True, timeout=10)
    user_job = int(started.stdout.strip())
    try:
        yield {"app_child": child.pid, "user_job": user_job}
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(user_job, signal.SIGKILL)
        child.kill()
        child.wait(10)


def test_the_app_and_what_it_runs_are_never_busy_reasons(app: Any, engine: Any, run: Any,
                                                         jobs: dict[str, int]) -> None:
    name = engine.hosts.hosts[0].name
    assert engine.hosts.hosts[0].provider == "local"
    reasons: list[str] = []

    def collect(snapshot: Any) -> None:
        if snapshot.host.name == name and snapshot.status is not None:
            reasons.extend(snapshot.status.busy_reasons)

    engine.listeners.append(collect)
    stop = threading.Event()

    async def scenario() -> None:
        app.start(show_window=True)
        await wait_for(lambda: (s := app.window.model.snapshot(name)) is not None and s.connection.state in LIVE,
                       30, "this computer to go live")
        burn_in_this_process(stop)
        # The agent is looking: the user's job is named; by then the app and its child have burnt as long.
        await wait_for(lambda: any(f"(pid {jobs['user_job']})" in r for r in reasons), 40,
                       f"the user's job (pid {jobs['user_job']}) named as a reason")
        await asyncio.sleep(OBSERVE_SECONDS)  # several agent ticks with all three burning

    try:
        run(scenario(), timeout=80)
    finally:
        stop.set()
        engine.listeners.remove(collect)
    own = {str(os.getpid()), str(jobs["app_child"])}
    counted = [r for r in reasons if any(f"(pid {pid})" in r for pid in own)]
    assert not counted, counted
