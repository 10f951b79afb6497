"""A live boxd run, automated on the local simulator (vmd rules: a box sleeps after a window of network
silence; processes frozen). Three boxes at once, as the live run had three machines:

1. control, no agent: sleeps mid-job;
2. the agent, advisory mode: every heartbeat lands, the job finishes, then the box sleeps within window + 2 s
   of the agent turning IDLE — while the app is still connected (our own traffic does not keep it up), and
   the app's stream fails visibly (the session says asleep) instead of hanging;
3. ask mode with nobody answering: sleeps mid-job.
Then wake on connect (time to first status) and a woken box whose ceiling went unanswered does not start its
ceiling afresh. Real simulator, real sshd in each box, real agent, real app engine; nothing faked.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from fixtures.simboxes import simulated_boxes
from workroom.agent_bundle import AgentBundle, locate_agent_bundle
from workroom.core.app_settings import AppSettings
from workroom.core.ceiling import CeilingSettings
from workroom.core.connection import ConnectionState
from workroom.core.hosts import Host, IdentityRef
from workroom.core.protocol import PromptEvent, Verdict
from workroom.paths import app_paths
from workroom.sessions.engine import Engine
from workroom.storage import save_settings

pytestmark = [pytest.mark.acceptance, pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(400)]

WINDOW = 6.0
CONTROL_JOB = 25
AGENT_JOB = 25
ASK_JOB = 150
FIGURES = Path(os.environ.get("WR_ACCEPTANCE_FIGURES", "/tmp/wr-acceptance-figures.json"))


def _health(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=3) as reply:
        return json.loads(reply.read())


async def _wait_asleep(url: str, limit: float) -> float:
    """Monotonic time at which the box's health says asleep (bounded by `limit` seconds)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if (await asyncio.to_thread(_health, url))["state"] == "asleep":
            return time.monotonic()
        await asyncio.sleep(0.2)
    raise AssertionError(f"box at {url} did not sleep within {limit} s: {_health(url)}")


def _host(box: dict) -> Host:
    return Host(name=box["name"], provider="simbox", address="127.0.0.1", port=box["ssh_port"], user=box["user"],
                identity=IdentityRef.file(box["client_key"]), idle_window_seconds=box["idle_window_s"],
                reference={"health_url": box["health_url"]})


def _engine(tmp: Path, label: str, bundle: AgentBundle, box: dict, ceiling: CeilingSettings) -> Engine:
    paths = app_paths({"WORKROOM_HOME": str(tmp / label)}).ensure()
    save_settings(paths, AppSettings(ceiling=ceiling))
    paths.known_hosts_file.write_text(box["host_key_line"] + "\n")
    engine = Engine(paths, bundle, auto_reconnect=False)
    engine.add_host(_host(box))
    return engine


@pytest.fixture
def simbox(tmp_path: Path):  # type: ignore[no-untyped-def]
    with simulated_boxes(tmp_path / "sim", 3, WINDOW) as boxes:
        yield boxes


def test_three_boxes_like_the_live_run(simbox, tmp_path: Path) -> None:
    home, info = simbox
    from simbox import control

    control_box, agent_box, ask_box = info["boxes"]
    bundle = locate_agent_bundle(tmp_path / "cache")
    advisory = _engine(tmp_path, "advisory", bundle, agent_box, CeilingSettings())
    asking = _engine(tmp_path, "asking", bundle, ask_box,
                     CeilingSettings(ceiling_seconds=30, prompt_timeout_seconds=30, ask_at_ceiling=True))
    figures: dict[str, float | int | str] = {}
    jobs: list[subprocess.Popen[bytes]] = []

    # Count the agent box's heartbeats where they land: its gateway, port 9.
    counter = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    counter.bind((agent_box["gateway"], 9))
    counter.setblocking(False)
    landed: list[float] = []

    def drain() -> None:
        while True:
            try:
                counter.recv(16)
            except BlockingIOError:
                return
            landed.append(time.monotonic())

    async def run() -> None:
        try:
            await scenario()
        finally:
            await advisory.close()
            await asking.close()

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        loop.add_reader(counter.fileno(), drain)
        adv = advisory.session(agent_box["name"])
        ask = asking.session(ask_box["name"])
        await asyncio.gather(adv.connect(timeout=60), ask.connect(timeout=60))
        figures["connect_first_status_s"] = round(adv.first_status_seconds or 0, 3)

        idle_at: list[float] = []
        busy_at: list[float] = []
        asleep_seen: list[float] = []
        prompts: list[PromptEvent] = []

        def on_adv(s) -> None:  # type: ignore[no-untyped-def]
            if s.status is not None and s.status.verdict is Verdict.BUSY and not busy_at:
                busy_at.append(time.monotonic())
            if busy_at and s.status is not None and s.status.verdict is Verdict.IDLE and not idle_at:
                idle_at.append(time.monotonic())
            if s.connection.state is ConnectionState.ASLEEP and not asleep_seen:
                asleep_seen.append(time.monotonic())

        adv.listeners.append(on_adv)
        ask.listeners.append(lambda s: prompts.append(s.prompt) if s.prompt and not prompts else None)

        t0 = time.monotonic()
        for box, seconds in ((control_box, CONTROL_JOB), (agent_box, AGENT_JOB), (ask_box, ASK_JOB)):
            jobs.append(subprocess.Popen(control.exec_argv(box["name"], ["sleep", str(seconds)], home=home)))

        # 1. The control box sleeps mid-job.
        control_slept = await _wait_asleep(control_box["health_url"], WINDOW + 6)
        figures["control_slept_after_s"] = round(control_slept - t0, 2)
        assert control_slept - t0 < CONTROL_JOB, "the control box should sleep while its job still runs"

        # 2. The agent box stays awake through its job, then sleeps within window + 2 s of turning IDLE.
        agent_slept = await _wait_asleep(agent_box["health_url"], AGENT_JOB + 30 + WINDOW + 20)
        assert busy_at and idle_at, (busy_at, idle_at)
        assert idle_at[0] - t0 >= AGENT_JOB, "the agent said IDLE while its job still ran"
        assert agent_slept - idle_at[0] <= WINDOW + 2, (agent_slept - idle_at[0])
        figures["agent_idle_after_s"] = round(idle_at[0] - t0, 2)
        figures["agent_slept_after_idle_s"] = round(agent_slept - idle_at[0], 2)
        busy_span = [t for t in landed if busy_at[0] <= t <= idle_at[0]]
        interval = adv.traits.heartbeat_interval_seconds
        assert interval is not None
        gaps = [b - a for a, b in itertools.pairwise(busy_span)]
        figures["heartbeats_landed_while_busy"] = len(busy_span)
        figures["heartbeat_max_gap_s"] = round(max(gaps), 2) if gaps else -1
        assert len(busy_span) >= int((idle_at[0] - busy_at[0]) / interval) - 1
        assert gaps and max(gaps) <= interval + 1.0, gaps
        assert not [t for t in landed if t > idle_at[0] + 0.5], "a heartbeat was sent while IDLE"
        # 4 + 7: the app stayed connected and the box still slept; the stream failed visibly.
        deadline = time.monotonic() + 5
        while not asleep_seen and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert asleep_seen, f"the session did not notice the box sleeping: {adv.connection.state}"
        figures["app_noticed_sleep_after_s"] = round(asleep_seen[0] - agent_slept, 2)
        assert asleep_seen[0] - agent_slept <= 3

        # 3. Ask mode, nobody answering: a prompt came, then the box slept mid-job.
        ask_slept = await _wait_asleep(ask_box["health_url"], 30 + 30 + WINDOW + 30)
        assert prompts, "no ceiling prompt reached the app"
        figures["ask_slept_after_s"] = round(ask_slept - t0, 2)
        assert ask_slept - t0 < ASK_JOB - 30, "the unanswered box should sleep mid-job"
        assert jobs[2].poll() is None

        # 5. Wake on connect: time to first status.
        await adv.connect(timeout=30, wake=True)
        figures["wake_connect_to_first_status_s"] = round(adv.first_status_seconds or 0, 3)
        assert adv.connection.wake_seconds is not None
        assert adv.first_status_seconds is not None and adv.first_status_seconds <= 3.0

        # ... and the user's explicit Wake and connect is their answer: the ceiling restarts (`keep`), the prompt
        # that ran out while nobody answered does not carry over, and the job still running reads busy again
        # (asleep >= 30 s: a tick gap, measured afresh after it).
        await asyncio.sleep(max(0.0, ask_slept + 32 - time.monotonic()))
        await ask.connect(timeout=30, wake=True)
        woken = ask.status
        assert woken is not None
        figures["ask_after_wake"] = json.dumps({k: getattr(woken, k) for k in (
            "verdict", "suppressed", "awake_ceiling_exceeded", "awake_seconds", "prompt_pending")})
        assert not woken.suppressed and not woken.awake_ceiling_exceeded and not woken.prompt_pending, woken
        assert woken.verdict is Verdict.BUSY, woken
        assert jobs[2].poll() is None
        loop.remove_reader(counter.fileno())

    try:
        asyncio.run(run())
    finally:
        counter.close()
        for job in jobs:
            if job.poll() is None:
                job.kill()
        FIGURES.write_text(json.dumps(figures, indent=2))
        print("acceptance figures:", json.dumps(figures))
