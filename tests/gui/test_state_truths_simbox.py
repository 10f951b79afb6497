"""The state truths on real sleepable boxes: the simulator's boxes (tools/simbox: real sshd in a network
namespace, frozen when asleep, woken by a connection through its proxy), the real agent pushed into them,
and the app's own engine, sessions and widgets (offscreen). Nothing is a stand-in.

Whether the app woke a box is read from the simulator's health page: every wake is in the box's history with
its cause ("proxy connect" when a connection woke it, "admin" for the simulator's own wake, which stands in for
a user's ssh here).
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.simboxes import simulated_boxes
from gui_helpers import open_dialog, wait_for
from workroom.core.badge import BadgeKind
from workroom.core.connection import ConnectionState
from workroom.core.hosts import Host, IdentityRef
from workroom.sessions.reconnect_rules import asleep_recheck_seconds
from workroom.ui import row_text
from workroom.ui.app import WorkroomApp
from workroom.ui.host_dialog import AddHostDialog
from workroom.ui.host_table_model import Column

pytestmark = [pytest.mark.gui, pytest.mark.integration, pytest.mark.root, pytest.mark.slow]

WINDOW = 12.0
"""The boxes' idle window: long enough to connect in, short enough that the re-read (a quarter) is quick."""
LIVE = (ConnectionState.LIVE, ConnectionState.QUIET)
EXCEPTION_NAME = re.compile(r"\b[A-Z]\w*(Error|Exception)\b")


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Two simulated boxes for the module (bringing them up costs seconds); each test sets their state."""
    with simulated_boxes(tmp_path_factory.mktemp("sim"), 2, WINDOW) as boxes:
        yield boxes


def health(sim: tuple[Path, dict[str, Any]], name: str) -> dict[str, Any]:
    import simbox

    return simbox.box_status(name, home=sim[0])


def app_wakes(sim: tuple[Path, dict[str, Any]], name: str) -> int:
    """How often a connection (the app's) woke the box, from the simulator's own record."""
    return sum(1 for h in health(sim, name)["history"] if h["event"] == "wake" and h.get("reason") == "proxy connect")


def put_to_sleep(sim: tuple[Path, dict[str, Any]], name: str) -> None:
    import simbox

    simbox.sleep(name, home=sim[0])
    assert health(sim, name)["state"] == "asleep"


def wake_outside(sim: tuple[Path, dict[str, Any]], name: str) -> None:
    """The box wakes by someone else's hand (a user's own ssh would do the same)."""
    import simbox

    simbox.wake(name, home=sim[0])
    assert health(sim, name)["state"] == "awake"


def box(sim: tuple[Path, dict[str, Any]], name: str) -> dict[str, Any]:
    return next(b for b in sim[1]["boxes"] if b["name"] == name)


def stop_inside(job: Any, sim: tuple[Path, dict[str, Any]]) -> None:
    """Stop a job started with `simbox.exec_argv`, by PID: the command inside the box, then nsenter (a sleeping
    box is woken first: nsenter sits in its frozen cgroup and could not reap)."""
    import contextlib
    import signal
    import subprocess

    import simbox

    if job.poll() is None and health(sim, "box1")["state"] == "asleep":
        simbox.wake("box1", home=sim[0])
    with contextlib.suppress(FileNotFoundError):
        for kid in Path(f"/proc/{job.pid}/task/{job.pid}/children").read_text().split():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(kid), signal.SIGKILL)
    try:
        job.wait(timeout=5)
    except subprocess.TimeoutExpired:
        job.kill()
        job.wait(timeout=5)


def simbox_host(info: dict[str, Any]) -> Host:
    return Host(name=info["name"], provider="simbox", address="127.0.0.1", port=info["ssh_port"], user=info["user"],
                identity=IdentityRef.file(info["client_key"]), idle_window_seconds=WINDOW,
                reference={"health_url": info["health_url"]})


@pytest.fixture
def app(engine: Any, qtbot: Any, sim: tuple[Path, dict[str, Any]]) -> Iterator[Any]:
    with engine.paths.known_hosts_file.open("a") as known:  # the simulator hands out its boxes' host keys
        for info in sim[1]["boxes"]:
            known.write(info["host_key_line"] + "\n")
    workroom_app = WorkroomApp(engine)
    qtbot.addWidget(workroom_app.window)
    yield workroom_app
    workroom_app.window.cards.timer.stop()


def snap(app: Any, name: str) -> Any:
    return app.window.model.snapshot(name)


def state(app: Any, name: str) -> ConnectionState | None:
    s = snap(app, name)
    return None if s is None else s.connection.state


def shown_texts(app: Any, name: str) -> list[str]:
    """Every word the user sees for `name` without asking for details: its row's cells and the detail panel."""
    model = app.window.model
    row = model.row_of(name)
    texts = [str(model.data(model.index(row, column))) for column in Column]
    app.window.select_host(name)
    detail = app.window.detail
    texts += [detail.badge_label.text(), detail.tooltip.text(), detail.fields.text(), detail.error.text()]
    return texts


def test_connect_all_skips_the_asleep_box_and_wake_and_connect_wakes_it(app: Any, engine: Any, run: Any,
                                                                        sim: Any) -> None:
    wake_outside(sim, "box2")  # awake (its window starts now) ...
    put_to_sleep(sim, "box1")  # ... and asleep
    for name in ("box1", "box2"):
        engine.add_host(simbox_host(box(sim, name)))
    window = app.window
    woken_before = app_wakes(sim, "box1")

    async def scenario() -> None:
        app.start(connect=False, show_window=True)
        window.connect_all_button.click()
        await wait_for(lambda: state(app, "box2") in LIVE, 40, "box2 (awake) to go live")
        await wait_for(lambda: state(app, "box1") is ConnectionState.ASLEEP, 20, "box1 to show Asleep")
        assert "box1" in window.notice.text() and "box2" not in window.notice.text()
        assert window.notice.isVisible() and "Wake and connect" in window.notice.text()
        window.connect_all_button.click()  # again, with box1 known asleep: still left alone
        await asyncio.sleep(asleep_recheck_seconds(WINDOW) + 1)  # room for a wrong connect (and a re-read)
        assert state(app, "box1") is ConnectionState.ASLEEP
        assert health(sim, "box1")["state"] == "asleep"
        assert app_wakes(sim, "box1") == woken_before, health(sim, "box1")["history"]
        assert app.tray.host_menus["box1"].connect_action.text() == "Wake and connect"
        window.select_host("box1")
        assert window.detail.connect_button.text() == "Wake and connect"
        window.detail.connect_button.click()
        await wait_for(lambda: state(app, "box1") in LIVE, 40, "box1 to go live after Wake and connect")
        assert app_wakes(sim, "box1") == woken_before + 1

    run(scenario(), timeout=100)


def test_a_box_woken_outside_the_app_goes_live_without_the_app_waking_it(app: Any, engine: Any, run: Any,
                                                                        sim: Any) -> None:
    put_to_sleep(sim, "box1")
    engine.add_host(simbox_host(box(sim, "box1")))
    recheck = asleep_recheck_seconds(WINDOW)
    assert recheck <= WINDOW / 4

    async def scenario() -> None:
        app.start(show_window=True)
        await wait_for(lambda: state(app, "box1") is ConnectionState.ASLEEP, 20, "box1 to show Asleep")
        woken_before = app_wakes(sim, "box1")
        await asyncio.sleep(2 * recheck + 0.5)  # two re-reads while asleep: neither wakes it
        assert state(app, "box1") is ConnectionState.ASLEEP
        assert health(sim, "box1")["state"] == "asleep"
        wake_outside(sim, "box1")
        woken_at = time.monotonic()
        await wait_for(lambda: state(app, "box1") is not ConnectionState.ASLEEP, recheck + 3,
                       "the row to leave Asleep within one re-read")
        # It connects before the box's own idle window could send it back to sleep.
        await wait_for(lambda: state(app, "box1") in LIVE, WINDOW, "box1 to go live on its own")
        assert time.monotonic() - woken_at < WINDOW
        assert snap(app, "box1").connection.error is None
        assert app_wakes(sim, "box1") == woken_before, health(sim, "box1")["history"]

    run(scenario(), timeout=60)


def test_a_sleeping_box_added_through_the_dialog_shows_asleep(app: Any, engine: Any, run: Any, sim: Any) -> None:
    put_to_sleep(sim, "box2")
    info = box(sim, "box2")
    woken_before = app_wakes(sim, "box2")

    async def scenario() -> None:
        app.start(connect=False, show_window=True)
        app.window.open_add_dialog()
        dialog = open_dialog(AddHostDialog)
        assert dialog is not None
        dialog.select_provider("simbox")
        assert dialog.inputs["ref_health_url"].placeholderText() == "health page URL"
        for key, value in (("name", "box2"), ("address", "127.0.0.1"), ("port", str(info["ssh_port"])),
                           ("user", info["user"]), ("identity", info["client_key"]),
                           ("ref_health_url", info["health_url"]), ("idle_window_seconds", str(int(WINDOW)))):
            dialog.inputs[key].setText(value)
        dialog.try_accept()
        assert engine.hosts.get("box2") is not None, dialog.errors["general"].text()
        await wait_for(lambda: state(app, "box2") is ConnectionState.ASLEEP, 20, "the added box to show Asleep")
        await asyncio.sleep(asleep_recheck_seconds(WINDOW) + 0.5)  # and it stays so across a re-read
        assert state(app, "box2") is ConnectionState.ASLEEP
        texts = shown_texts(app, "box2")
        assert any(t.startswith("Asleep") for t in texts), texts
        assert not [t for t in texts if "Offline" in t or EXCEPTION_NAME.search(t)], texts
        assert app.window.detail.connect_button.text() == "Wake and connect"
        assert app_wakes(sim, "box2") == woken_before, health(sim, "box2")["history"]

    run(scenario(), timeout=45)


def test_an_asleep_row_shows_no_live_reasons(app: Any, engine: Any, run: Any, sim: Any) -> None:
    """A busy box (a job inside it) is live with its reason; once it sleeps, the row keeps only "last known"."""
    import subprocess

    import simbox

    wake_outside(sim, "box1")
    engine.add_host(simbox_host(box(sim, "box1")))
    job = subprocess.Popen(simbox.exec_argv("box1", ["timeout", "60", "sh", "-c", "while :; do :; done"],
                                            home=sim[0]),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: list[tuple[str, str]] = []  # (badge, verdict) of every snapshot the window got
    reasons: set[str] = set()

    def watch(s: Any) -> None:
        now = time.monotonic()
        seen.append((s.badge(now).kind.value, row_text.verdict_text(s, now)))
        if s.host.name == "box1" and s.status is not None:
            reasons.update(s.status.busy_reasons)

    engine.listeners.append(watch)

    async def scenario() -> None:
        app.start(show_window=True)
        await wait_for(lambda: state(app, "box1") in LIVE and snap(app, "box1").status is not None
                       and any("sh (pid" in r for r in snap(app, "box1").status.busy_reasons), 40,
                       "box1 to be live and busy with its job")
        live_reasons = row_text.busy_text(snap(app, "box1"))
        assert live_reasons != row_text.NO_VALUE
        model = app.window.model
        app.window.select_host("box1")
        app.window.detail.disconnect_button.click()  # a row that is not live, the box still busy
        await wait_for(lambda: state(app, "box1") is ConnectionState.DISCONNECTED, 10, "box1 to disconnect")
        assert str(model.data(model.index(model.row_of("box1"), Column.BUSY))) == row_text.NO_VALUE
        assert live_reasons not in " ".join(shown_texts(app, "box1"))
        app.window.detail.connect_button.click()
        await wait_for(lambda: state(app, "box1") in LIVE and snap(app, "box1").status is not None
                       and snap(app, "box1").status.busy, 30, "box1 live and busy again")
        put_to_sleep(sim, "box1")
        await wait_for(lambda: state(app, "box1") is ConnectionState.ASLEEP, 15, "box1 to show Asleep")
        await asyncio.sleep(1.2)  # a tick of the window's clock: ages re-rendered
        texts = shown_texts(app, "box1")
        busy_cell = str(model.data(model.index(model.row_of("box1"), Column.BUSY)))
        assert busy_cell == row_text.NO_VALUE, texts
        badge_cell = str(model.data(model.index(model.row_of("box1"), Column.BADGE)))
        age = re.fullmatch(r"Asleep · last known busy \((\d+) s ago\)", badge_cell)
        assert age, badge_cell
        await asyncio.sleep(2.2)  # nothing new arrives while asleep: the age ticks on its own
        later = str(model.data(model.index(model.row_of("box1"), Column.BADGE)))
        later_age = re.fullmatch(r"Asleep · last known busy \((\d+) s ago\)", later)
        assert later_age and int(later_age[1]) >= int(age[1]) + 2, (badge_cell, later)
        assert live_reasons not in " ".join(texts) and "cpu:" not in " ".join(texts), texts
        assert "Busy because</td><td>—" in app.window.detail.fields.text()

    try:
        run(scenario(), timeout=70)
    finally:
        engine.listeners.remove(watch)
        stop_inside(job, sim)
    assert seen
    beside_idle = [pair for pair in seen if pair[0] == BadgeKind.BUSY_NOT_KEPT_AWAKE.value and
                   pair[1].startswith("Idle")]
    assert not beside_idle, beside_idle
    # The app's relay and the agent inside the box are never the box's work; the job (sh) is.
    assert any("sh (pid" in r for r in reasons), reasons
    assert not [r for r in reasons if "wr-agent" in r or "relay" in r], reasons
