"""Ask mode with nobody answering, then a wake: the span that slept is over, the next work gets its own.

On a real simulated box (tools/simbox: bytes on the wire are activity, the box's processes frozen while it
sleeps), with the real agent, the real app engine and the app's real notice rules (`HostNotices`, the same object
the tray uses; what it posts is recorded here in place of the desktop's notification server, which
tests/gui/test_notices.py drives for real):

1. a job started over SSH (`ssh box 'sleep 600'`, OpenSSH's own client) is kept awake to the 45 s ceiling, a
   prompt comes, nobody answers, and the box sleeps with the job still running: one lost-work notice ("fell
   asleep while busy"), since a box that sleeps under a job of its span is work cut short whoever let it;
2. the simulator wakes the box (someone else's wake: the app only watches, and reconnects on its own), the old
   job is ended and a new one started over SSH: it is kept awake past the box's window, with no prompt carried
   over from the old span, and a fresh prompt comes about 45 s into the new work — not at once, not never;
3. still exactly one lost-work notice.

Before the span rule a new job after such a wake was let sleep 26 s in (the old prompt's answer carried over);
before `under_running_job` no notice came, the agent's published verdict being IDLE once its prompt ran out.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures.simboxes import simulated_boxes
from workroom.agent_bundle import locate_agent_bundle
from workroom.core.app_settings import AppSettings, NoticeSettings
from workroom.core.ceiling import CeilingSettings
from workroom.core.connection import ConnectionState
from workroom.core.hosts import Host, IdentityRef
from workroom.core.protocol import Verdict
from workroom.paths import app_paths
from workroom.sessions.engine import Engine
from workroom.storage import save_settings
from workroom.ui.notification_tracker import HostNotices, lost_key

pytestmark = [pytest.mark.acceptance, pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(480)]

WINDOW = 8.0
CEILING = 45
PROMPT_TIMEOUT = 30
ASLEEP_FOR = 36.0  # longer than the agent's tick gap (30 s): the wake is a sleep the agent sees
LIVE = (ConnectionState.LIVE, ConnectionState.QUIET)


class PostedNotices:
    """What the notice rules post and withdraw, in order (in place of the desktop's notification server)."""

    def __init__(self) -> None:
        self.posted: list[tuple[str, str, str]] = []
        self.withdrawn: list[str] = []

    def post(self, notice: Any) -> None:
        self.posted.append((notice.key, notice.title, notice.message))

    def withdraw(self, key: str) -> None:
        self.withdrawn.append(key)


def _ssh_job(box: dict[str, Any], known: Path, seconds: int) -> subprocess.Popen[bytes]:
    """`ssh box 'sleep N'` with OpenSSH's own client: a person's job, nothing of the app's."""
    return subprocess.Popen(
        ["ssh", "-i", box["client_key"], "-p", str(box["ssh_port"]), "-o", f"UserKnownHostsFile={known}",
         "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes",
         f"{box['user']}@127.0.0.1", f"sleep {seconds}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _remote_sleeps(seconds: int) -> list[int]:
    """The pids of the box's `sleep N` (the remote command of `_ssh_job`), seen from here: the simulator's boxes
    share this computer's process table. The ssh client itself ends when the sleeping box drops its link."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if f.read() == f"sleep\0{seconds}\0".encode():
                        found.append(int(entry))
            except OSError:
                continue
    return found


async def _until(what: str, limit: float, check: Any) -> float:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        result = check()
        if asyncio.iscoroutine(result):
            result = await result
        if result:
            return time.monotonic()
        await asyncio.sleep(0.2)
    raise AssertionError(f"{what} not within {limit:.0f} s")


def test_a_new_job_after_an_unanswered_prompt_and_a_wake_gets_its_own_span(tmp_path: Path) -> None:
    import simbox

    with simulated_boxes(tmp_path / "sim", 1, WINDOW) as (home, info):
        box = info["boxes"][0]
        known = tmp_path / "known_hosts"
        known.write_text(box["host_key_line"] + "\n")
        paths = app_paths({"WORKROOM_HOME": str(tmp_path / "app")}).ensure()
        save_settings(paths, AppSettings(ceiling=CeilingSettings(
            ceiling_seconds=CEILING, prompt_timeout_seconds=PROMPT_TIMEOUT, ask_at_ceiling=True)))
        paths.known_hosts_file.write_text(box["host_key_line"] + "\n")
        engine = Engine(paths, locate_agent_bundle(tmp_path / "cache"), auto_reconnect=False)
        engine.add_host(Host(name=box["name"], provider="simbox", address="127.0.0.1", port=box["ssh_port"],
                             user=box["user"], identity=IdentityRef.file(box["client_key"]),
                             idle_window_seconds=WINDOW, reference={"health_url": box["health_url"]}))
        posted = PostedNotices()
        notices = HostNotices(posted, lambda: NoticeSettings(lost_work=True))  # type: ignore[arg-type]
        jobs: list[subprocess.Popen[bytes]] = []
        figures: dict[str, float] = {}

        def asleep() -> bool:
            return bool(simbox.box_status(box["name"], home)["state"] == "asleep")

        async def scenario() -> None:
            session = engine.session(box["name"])
            prompts: list[float] = []  # when each new prompt reached the app
            shown: list[Any] = [None]

            def on_snapshot(snap: Any) -> None:
                if snap.prompt is not None and snap.prompt is not shown[0]:
                    prompts.append(time.monotonic())
                shown[0] = snap.prompt

            session.listeners.append(notices.on_snapshot)
            session.listeners.append(on_snapshot)
            await session.connect(timeout=60)

            # 1. The first job: kept awake to the ceiling, a prompt nobody answers, asleep with the job running.
            jobs.append(_ssh_job(box, known, 600))
            first_busy = await _until("the first job read busy", 30, lambda: session.status is not None
                                      and session.status.classifier_verdict is Verdict.BUSY)
            await _until("the first prompt", CEILING + 30, lambda: bool(prompts))
            figures["first_prompt_after_busy_s"] = round(prompts[0] - first_busy, 1)
            assert prompts[0] - first_busy >= CEILING - 5, figures
            slept = await _until("the box to sleep after the unanswered prompt", PROMPT_TIMEOUT + WINDOW + 30,
                                 lambda: asyncio.to_thread(asleep))
            figures["slept_after_prompt_s"] = round(slept - prompts[0], 1)
            assert _remote_sleeps(600), "the first job should still be running when its box sleeps"
            await _until("the session to show asleep", 10, lambda: session.connection.state is ConnectionState.ASLEEP)
            lost = [p for p in posted.posted if p[0] == lost_key(box["name"])]
            assert len(lost) == 1 and "fell asleep while busy" in lost[0][1], posted.posted
            assert session.connection.suspended_while_busy

            # 2. Someone else's wake: the app sees it and reconnects on its own; the old job ends, a new one starts.
            await asyncio.sleep(ASLEEP_FOR)
            assert await asyncio.to_thread(asleep), "the box should have stayed asleep: nothing of ours woke it"
            await asyncio.to_thread(simbox.wake, box["name"], home)
            woke = time.monotonic()
            await _until("the session back live after the simulator's wake", 60,
                         lambda: session.connection.state in LIVE)
            figures["live_after_wake_s"] = round(time.monotonic() - woke, 1)
            assert _remote_sleeps(600), "the first job should have come through the sleep"
            jobs[0].kill()
            for pid in _remote_sleeps(600):
                os.kill(pid, signal.SIGKILL)
            prompts_before = len(prompts)
            jobs.append(_ssh_job(box, known, 300))
            second = time.monotonic()
            await _until("the new job read busy", 30, lambda: session.status is not None
                         and session.status.classifier_verdict is Verdict.BUSY)
            status = session.status
            assert status is not None and not status.suppressed and not status.prompt_pending, status
            # kept awake past its window, to a fresh prompt about one ceiling into the new span
            await _until("a fresh prompt for the new job", CEILING + 40, lambda: len(prompts) > prompts_before)
            fresh = prompts[prompts_before]
            figures["new_prompt_after_new_job_s"] = round(fresh - second, 1)
            figures["new_prompt_after_wake_s"] = round(fresh - woke, 1)
            assert fresh - woke >= CEILING - 5, figures  # not carried over from the old span
            assert fresh - second <= CEILING + 20, figures
            assert not await asyncio.to_thread(asleep), "the box slept under the new job before its prompt"
            assert jobs[1].poll() is None

            # 3. One lost-work notice in all.
            assert len([p for p in posted.posted if p[0] == lost_key(box["name"])]) == 1, posted.posted

        async def run() -> None:
            try:
                await scenario()
            finally:
                await engine.close()

        try:
            asyncio.run(run())
        finally:
            for job in jobs:
                if job.poll() is None:
                    job.kill()
                    job.wait(timeout=10)
            print("figures:", json.dumps(figures))
