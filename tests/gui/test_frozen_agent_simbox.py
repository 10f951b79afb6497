"""A frozen agent is noticed and replaced, and where it cannot be replaced nothing of ours holds the box.

Real parts: the simulator's box (tools/simbox: real sshd in a network namespace, frozen after a 60 s window of
network silence), the real agent pushed into it with its heartbeat every 20 s (a third of the window), a real
job inside (`sleep`, a job step), the app's own engine, sessions, badges and notices (offscreen). The agent is
frozen with SIGSTOP from outside the box, as a debugger or an OOM-stopped cgroup would.

Replacement is made impossible, in the second test, by rewriting the frozen agent's lock file to name another
process of the box's user: the app verifies the lock's process is this user's agent before it signals anything
(wr_agent/agent_process.py), so it refuses to kill it and says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import pwd
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.simboxes import simulated_boxes
from gui_helpers import wait_for
from workroom.core.connection import ConnectionState
from workroom.core.heartbeat_proof import ProofState, margin_for
from workroom.core.hosts import Host, IdentityRef
from workroom.core.metering import NotKeptAwakeReason
from workroom.ui import row_text
from workroom.ui.app import WorkroomApp
from workroom.ui.notification_tracker import lost_key
from workroom.ui.tray import host_menu_text

pytestmark = [pytest.mark.gui, pytest.mark.acceptance, pytest.mark.root, pytest.mark.slow]

WINDOW = 60.0
INTERVAL = 20.0  # the simbox row's heartbeat: a third of the window
SLACK = margin_for(INTERVAL)
LIVE = (ConnectionState.LIVE, ConnectionState.QUIET)


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    with simulated_boxes(tmp_path / "sim", 1, WINDOW) as boxes:
        yield boxes


def health(sim: tuple[Path, dict[str, Any]]) -> dict[str, Any]:
    import simbox

    return dict(simbox.box_status("box1", home=sim[0]))


def agent_pids(user: str) -> list[int]:
    """The box user's agent processes, seen from outside the box (exact command name `wr-agent`)."""
    found = subprocess.run(["pgrep", "-u", user, "-x", "wr-agent"], capture_output=True, text=True)
    return [int(p) for p in found.stdout.split()]


def heartbeats_sent(sim: tuple[Path, dict[str, Any]], user: str) -> int:
    """How many heartbeats the box's agent says it sent (its own `status`, asked inside the box over its Unix
    socket: no byte on the box's link); -1 when it cannot say."""
    import simbox

    home = Path(pwd.getpwnam(user).pw_dir)
    argv = simbox.exec_argv("box1", ["python3", str(home / ".local/share/wr-agent/wr-agent.pyz"), "status",
                                     "--socket", str(home / ".local/state/wr-agent/agent.sock")], home=sim[0])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    try:
        keep = json.loads(done.stdout).get("keep_awake") or {}
    except ValueError:
        return -1
    sent = keep.get("sent")
    return sent if isinstance(sent, int) else -1


class Watch:
    """Every snapshot of box1 the app got, with when (this computer's monotonic clock)."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, Any]] = []

    def __call__(self, snapshot: Any) -> None:
        if snapshot.host.name == "box1":
            self.seen.append((time.monotonic(), snapshot))

    def last(self) -> Any:
        return self.seen[-1][1]

    def heartbeats(self) -> int:
        last = self.last()
        keep = last.status.keep_awake if last.status is not None else None
        return keep.sent if keep is not None and keep.sent is not None else -1


def start(engine: Any, qtbot: Any, sim: tuple[Path, dict[str, Any]]) -> tuple[Any, Watch, list[str], Any]:
    import simbox

    home, info = sim
    b = info["boxes"][0]
    engine.paths.known_hosts_file.write_text(b["host_key_line"] + "\n")
    simbox.wake("box1", home=home)
    engine.add_host(Host(name="box1", provider="simbox", address="127.0.0.1", port=b["ssh_port"], user=b["user"],
                         identity=IdentityRef.file(b["client_key"]), idle_window_seconds=WINDOW,
                         reference={"health_url": b["health_url"]}))
    job = subprocess.Popen(simbox.exec_argv("box1", ["sleep", "600"], home=home),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    app = WorkroomApp(engine)
    qtbot.addWidget(app.window)
    watch = Watch()
    engine.listeners.append(watch)
    posted: list[str] = []
    real_post = app.notifications.post

    def counting(notice: Any) -> None:  # the real notifications, counted on the way
        posted.append(notice.key)
        real_post(notice)

    app.notifications.post = counting  # type: ignore[method-assign]
    return app, watch, posted, job


async def frozen_after_a_report(app: Any, watch: Watch, user: str) -> tuple[float, int]:
    """Go live and busy, wait for a heartbeat report, and freeze the agent just after it: (when, its pid)."""
    app.start(show_window=True)
    await wait_for(lambda: watch.seen and watch.last().connection.state in LIVE and watch.last().status is not None
                   and watch.last().status.busy and watch.heartbeats() >= 1, 60, "box1 live, busy, heartbeating")
    first = watch.heartbeats()
    await wait_for(lambda: watch.heartbeats() > first, INTERVAL + SLACK + 5, "the next heartbeat's report")
    pids = agent_pids(user)
    assert len(pids) == 1, pids
    os.kill(pids[0], signal.SIGSTOP)
    return time.monotonic(), pids[0]


@pytest.mark.timeout(260)
def test_a_frozen_agent_is_named_within_30_s_and_a_fresh_one_keeps_the_box_awake(sim: Any, engine: Any,
                                                                                  qtbot: Any, run: Any) -> None:
    user = sim[1]["boxes"][0]["user"]
    app, watch, posted, job = start(engine, qtbot, sim)
    frozen: list[int] = []

    async def scenario() -> None:
        t0, pid = await frozen_after_a_report(app, watch, user)
        frozen.append(pid)
        reported_at = t0  # the report just arrived; the freeze came right after it

        def stalled() -> bool:
            b = watch.last().badge(time.monotonic())
            return b.reason is NotKeptAwakeReason.STALLED_AGENT

        await wait_for(stalled, 30, "the badge to name a stalled agent")
        assert time.monotonic() - t0 <= 30
        # A fresh agent (another process) is live and sends heartbeats again before the box's window runs out.
        # Its heartbeats are read from the agent itself, on the box: a heartbeat alone pushes nothing to the app
        # (docs/protocol.md), so the app's count can lag one whole interval behind what the agent sent.
        await wait_for(lambda: any(p != pid for p in agent_pids(user)) and watch.last().connection.state in LIVE
                       and watch.last().status is not None
                       and watch.last().connection.agent_silent_since is None, t0 + WINDOW - time.monotonic(),
                       "a fresh agent live before the window ran out")
        # Every face says the agent was replaced, and when; the fresh agent is never shown "Idle" under the job
        # (while it has its first look it says "Checking…", and the job it finds is busy).
        replaced = watch.last().connection.agent_replaced
        assert replaced is not None and replaced.why == "stopped answering", watch.last().connection
        assert "agent replaced at" in row_text.badge_text(watch.last(), time.monotonic())
        assert "agent replaced at" in host_menu_text(watch.last(), time.monotonic())
        shown_idle = [(round(at - t0, 1), s.badge(at).label) for at, s in watch.seen
                      if at > t0 and s.badge(at).label == "Idle"]
        assert not shown_idle, shown_idle
        while (sent := await asyncio.to_thread(heartbeats_sent, sim, user)) < 1:
            assert time.monotonic() < t0 + WINDOW, f"the fresh agent sent no heartbeat in the window (it says {sent})"
            await asyncio.sleep(0.5)
        confirmed_late = [(at - reported_at, s.connection.heartbeat_proof.why) for at, s in watch.seen
                          if at > reported_at + INTERVAL + SLACK and at < t0 + 45
                          and s.connection.heartbeat_proof is not None
                          and s.connection.heartbeat_proof.state is ProofState.CONFIRMED
                          and any(p == pid for p in agent_pids(user))]
        assert not confirmed_late, confirmed_late
        await asyncio.sleep(3)
        status = health(sim)
        assert status["state"] == "awake" and status["sleeps"] == 0, status["history"]  # never slept mid-job
        assert job.poll() is None

    try:
        run(scenario(), timeout=200)
    finally:
        app.window.cards.timer.stop()
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        job.kill()
        job.wait(timeout=10)
    assert posted.count(lost_key("box1")) == 1  # the stall was told once


@pytest.mark.timeout(320)
def test_with_replacement_impossible_the_box_sleeps_within_its_window_of_our_last_byte(sim: Any, engine: Any,
                                                                                        qtbot: Any, run: Any) -> None:
    import simbox

    user = sim[1]["boxes"][0]["user"]
    app, watch, posted, job = start(engine, qtbot, sim)
    frozen: list[int] = []
    others: list[int] = []

    async def scenario() -> None:
        _, pid = await frozen_after_a_report(app, watch, user)
        frozen.append(pid)
        # The lock now names another process of the box's user: the app must not signal it.
        lock_file = next(Path(f"/proc/{pid}/root{os.readlink(fd)}") for fd in Path(f"/proc/{pid}/fd").iterdir()
                         if os.readlink(fd).endswith(".sock.lock"))
        other = next(int(p) for p in subprocess.run(["pgrep", "-u", user, "-x", "sleep"], capture_output=True,
                                                    text=True).stdout.split())
        others.append(other)
        in_box = next(line.split()[-1] for line in Path(f"/proc/{other}/status").read_text().splitlines()
                      if line.startswith("NSpid:"))  # its pid as the box's own processes see it
        lock_file.write_text(f"{in_box}\n")
        await wait_for(lambda: watch.last().connection.state in (ConnectionState.BACKING_OFF, ConnectionState.LOST)
                       and watch.last().connection.error is not None
                       and "did not stop it" in watch.last().connection.error.message, 60,
                       "the replacement refused, in words")
        last_byte = time.time()
        error = watch.last().connection.error
        assert "will not" in error.message or "not the agent" in error.message, error
        await wait_for(lambda: health(sim)["state"] == "asleep", WINDOW + 15, "the box asleep")
        slept_at = time.time()
        assert slept_at - last_byte <= WINDOW + 10, slept_at - last_byte
        await wait_for(lambda: watch.last().connection.state is ConnectionState.ASLEEP, WINDOW + 15,
                       "the row to say Asleep")
        await asyncio.sleep(2)
        assert health(sim)["state"] == "asleep"  # nothing of ours woke it again
        assert Path(f"/proc/{others[0]}").exists()  # the process the lock named was never signalled

    try:
        run(scenario(), timeout=260)
    finally:
        app.window.cards.timer.stop()
        if health(sim)["state"] == "asleep":
            simbox.wake("box1", home=sim[0])
        for pid in frozen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        job.kill()
        job.wait(timeout=10)
    assert posted.count(lost_key("box1")) == 1  # one lost-work notice
