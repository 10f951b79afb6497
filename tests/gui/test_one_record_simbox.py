"""One record of what is known: the window, the tray, the command line and last_verdicts.json say the same of an
asleep box, across faces and across an app restart, and a provider that cannot be read is never "asleep".

Real parts: the simulator's boxes (tools/simbox: real sshd in a network namespace, frozen when asleep), the real
agent pushed into them, a real job inside, the app's own engine, sessions and widgets (offscreen), and the real
`workroom` command as its own process on the same app home. The only change from the shipped simbox provider:
the agent's test-only lower bound, so the awake ceiling can be seconds (the prompt comes quickly).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.simboxes import simulated_boxes
from gui_helpers import wait_for
from workroom.core.ceiling import CeilingSettings
from workroom.core.connection import ConnectionState
from workroom.core.hosts import Host, IdentityRef
from workroom.core.provider_specs import spec_for
from workroom.providers.simbox import SimboxProvider
from workroom.remote.agent_install import ServeOptions
from workroom.sessions.reconnect_rules import asleep_recheck_seconds
from workroom.ui.app import WorkroomApp
from workroom.ui.host_table_model import Column
from workroom.ui.tray import host_menu_text

pytestmark = [pytest.mark.gui, pytest.mark.integration, pytest.mark.root, pytest.mark.slow]

WINDOW = 8.0
LIVE = (ConnectionState.LIVE, ConnectionState.QUIET)
WORKROOM = Path(sys.executable).with_name("workroom")


class QuickCeilingSimbox(SimboxProvider):
    def serve_options(self, host: Host) -> ServeOptions:
        options = super().serve_options(host)
        return dataclasses.replace(options, extra=(*options.extra, "--test-min-duration", "1"))


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    with simulated_boxes(tmp_path / "sim", 1, WINDOW) as boxes:
        yield boxes


def prepare(engine: Any, sim: tuple[Path, dict[str, Any]], *, ask: bool = False) -> None:
    import simbox

    home, info = sim
    b = info["boxes"][0]
    engine.paths.known_hosts_file.write_text(b["host_key_line"] + "\n")
    engine.use_provider(QuickCeilingSimbox(engine.context, spec_for("simbox")))
    if ask:
        engine.settings = engine.settings.model_copy(update={"ceiling": CeilingSettings.model_construct(
            ceiling_seconds=3.0, prompt_timeout_seconds=600.0, ask_at_ceiling=True)})
    simbox.wake("box1", home=home)
    engine.add_host(Host(name="box1", provider="simbox", address="127.0.0.1", port=b["ssh_port"], user=b["user"],
                         identity=IdentityRef.file(b["client_key"]), idle_window_seconds=WINDOW,
                         reference={"health_url": b["health_url"]}))


def box_state(sim: tuple[Path, dict[str, Any]]) -> str:
    import simbox

    return str(simbox.box_status("box1", home=sim[0])["state"])


def start_job(sim: tuple[Path, dict[str, Any]]) -> subprocess.Popen[bytes]:
    import simbox

    return subprocess.Popen(simbox.exec_argv("box1", ["sleep", "300"], home=sim[0]),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop_job(job: subprocess.Popen[bytes], sim: tuple[Path, dict[str, Any]]) -> None:
    import simbox

    if box_state(sim) == "asleep":
        simbox.wake("box1", home=sim[0])  # nsenter sits in the frozen cgroup and could not be reaped
    job.kill()
    job.wait(timeout=10)


def badge_cell(app: Any) -> str:
    model = app.window.model
    return str(model.data(model.index(model.row_of("box1"), Column.BADGE)))


def cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """The real `workroom` command, as its own process, on the app's home (WORKROOM_HOME is set per test)."""
    return subprocess.run([str(WORKROOM), *argv], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})


def record(engine: Any) -> dict[str, Any]:
    return dict(json.loads((engine.paths.state_dir / "last_verdicts.json").read_text())["box1"])


def test_a_box_let_sleep_while_busy_is_last_known_busy_on_every_face(sim: Any, engine: Any, qtbot: Any,
                                                                     run: Any) -> None:
    """Let it sleep with the job still running: the agent reports idle so the box may sleep, but the box was
    busy. The window, the CLI (text and --json) and the stored record all say "last known busy"."""
    prepare(engine, sim, ask=True)
    job = start_job(sim)
    app = WorkroomApp(engine)
    qtbot.addWidget(app.window)

    async def scenario() -> None:
        app.start(show_window=True)
        card = await wait_for(lambda: app.window.cards.cards.get("box1"), 60, "the ceiling prompt's card")
        card.dismiss_button.click()  # Let it sleep
        await wait_for(lambda: box_state(sim) == "asleep", WINDOW + 10, "the box asleep after Let it sleep")
        await wait_for(lambda: app.window.model.snapshot("box1").connection.state is ConnectionState.ASLEEP,
                       asleep_recheck_seconds(WINDOW) + 10, "the row to say Asleep")
        await asyncio.sleep(0.5)  # the record is written off the loop
        assert re.fullmatch(r"Asleep · last known busy \(.+ ago\)", badge_cell(app)), badge_cell(app)

    try:
        run(scenario(), timeout=120)
        stored = record(engine)
        assert stored["doing"] == "BUSY" and stored["verdict"] == "IDLE", stored  # busy, reported idle
        line = next(li for li in cli("status").stdout.splitlines() if li.startswith("box1"))
        assert re.search(r"last known busy \(.+ ago\)", line), line
        shown = next(h for h in json.loads(cli("status", "--json").stdout) if h["name"] == "box1")
        assert shown["last_known"]["verdict"] == "busy" and shown["last_known"]["reported"] == "idle", shown
        assert box_state(sim) == "asleep"  # asking the CLI woke nothing
    finally:
        app.window.cards.timer.stop()
        stop_job(job, sim)


def test_an_app_restart_keeps_asleep_since_and_last_known(sim: Any, engine: Any, qtbot: Any, run: Any) -> None:
    """The box fell asleep busy under the first app's eyes; a second app (a new engine on the same files)
    says how long it has really been asleep and what it was doing, not "Asleep 0 s" with nothing known."""
    import simbox
    from workroom.agent_bundle import load_agent_bundle
    from workroom.sessions.engine import Engine

    prepare(engine, sim)
    job = start_job(sim)
    first = WorkroomApp(engine)
    qtbot.addWidget(first.window)
    seen_asleep: list[float] = []

    async def before_restart() -> None:
        first.start(show_window=True)
        await wait_for(lambda: (s := first.window.model.snapshot("box1")) is not None and s.connection.state in LIVE
                       and s.status is not None and s.status.busy, 40, "box1 live and busy with its job")
        simbox.sleep("box1", home=sim[0])  # put to sleep under the app's eyes (the provider's hand)
        await wait_for(lambda: first.window.model.snapshot("box1").connection.state is ConnectionState.ASLEEP,
                       20, "the first app to say Asleep")
        seen_asleep.append(time.time())
        await engine.close()
        first.window.cards.timer.stop()
        first.tray.icon.hide()

    try:
        run(before_restart(), timeout=90)
        time.sleep(4)  # the box sleeps on while no app runs
        second_engine = Engine(engine.paths, load_agent_bundle(engine.paths))
        second_engine.use_provider(QuickCeilingSimbox(second_engine.context, spec_for("simbox")))
        second = WorkroomApp(second_engine)
        qtbot.addWidget(second.window)

        async def after_restart() -> None:
            second.start(show_window=True)
            await wait_for(lambda: (s := second.window.model.snapshot("box1")) is not None
                           and s.connection.state is ConnectionState.ASLEEP, 20, "the second app to say Asleep")
            now = time.monotonic()
            snapshot = second.window.model.snapshot("box1")
            menu_line = host_menu_text(snapshot, now)
            # the tray's clock is the row's: when its agent was last heard (not 0 s from this app's start)
            asleep_for = re.fullmatch(r"box1 — Asleep · last known busy \((\d+) s ago\)", menu_line)
            assert asleep_for and int(asleep_for[1]) >= 4, menu_line
            assert int(asleep_for[1]) <= time.time() - seen_asleep[0] + 1, menu_line
            assert re.fullmatch(r"Asleep · last known busy \(.+ ago\)", badge_cell(second)), badge_cell(second)
            line = next(li for li in cli("status").stdout.splitlines() if li.startswith("box1"))
            assert "last known busy" in line and re.search(r"Asleep \(since \d\d:\d\d\)", line), line
            await second_engine.close()

        try:
            run(after_restart(), timeout=60)
        finally:
            second.window.cards.timer.stop()
            second.tray.icon.hide()
        assert box_state(sim) == "asleep"
    finally:
        stop_job(job, sim)


def test_a_provider_that_cannot_be_read_is_never_said_to_be_asleep(sim: Any, engine: Any, qtbot: Any,
                                                                   run: Any) -> None:
    """The simulator's daemon dies while its box is shown asleep: within one re-read the row says the provider
    could not be read (and why), never "The provider has put this box to sleep", and nothing connects to it;
    the CLI says the same."""
    import simbox

    prepare(engine, sim)
    simbox.sleep("box1", home=sim[0])
    app = WorkroomApp(engine)
    qtbot.addWidget(app.window)
    recheck = asleep_recheck_seconds(WINDOW)

    async def scenario() -> None:
        app.start(show_window=True)
        await wait_for(lambda: (s := app.window.model.snapshot("box1")) is not None
                       and s.connection.state is ConnectionState.ASLEEP, 20, "the row to say Asleep")
        os.kill(sim[1]["daemon_pid"], signal.SIGKILL)  # the provider is gone
        killed = time.monotonic()
        await wait_for(lambda: app.window.model.snapshot("box1").connection.state is ConnectionState.UNREADABLE,
                       recheck + 8, "the row to say the provider could not be read")
        assert time.monotonic() - killed <= recheck + 8
        snapshot = app.window.model.snapshot("box1")
        badge = snapshot.badge(time.monotonic())
        assert "could not read the provider" in badge.label.lower()
        assert "put this box to sleep" not in badge.tooltip and "Offline" not in badge_cell(app), badge.tooltip
        assert "health page" in badge.tooltip, badge.tooltip  # why, in words
        assert not re.search(r"\b[A-Z]\w*(Error|Exception)\b", badge.tooltip), badge.tooltip
        app.window.select_host("box1")
        assert app.window.detail.connect_button.text() == "Wake and connect"  # it may wake it: said so
        await asyncio.sleep(recheck + 1)  # another re-read: still unreadable, still not connected
        assert app.window.model.snapshot("box1").connection.state is ConnectionState.UNREADABLE
        line = next(li for li in cli("status").stdout.splitlines() if li.startswith("box1"))
        assert "could not read the provider" in line.lower() and "asleep" not in line.split("(")[0].lower(), line

    try:
        run(scenario(), timeout=90)
    finally:
        app.window.cards.timer.stop()
