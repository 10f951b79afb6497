"""Request metering (docs/providers.md) on the simulator's request meter: only requests through the provider's proxy
count; the guest's own work does not. The app is the caller outside: while its host is BUSY, KeepAwake polls
GET /v1/health (the agent's endpoint) through the proxy.

A: the app connected, a job longer than the window survives; once the job ends (and the agent's hold runs
   out) KeepAwake stops and the box is suspended within the window.
B: the same job with nobody polling is suspended mid-job.
Real simulator, real agent, real engine; nothing faked.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest
from workroom.agent_bundle import locate_agent_bundle
from workroom.core.hosts import Host, IdentityRef
from workroom.core.keepawake import KeepAwakeEnd
from workroom.core.protocol import Verdict
from workroom.paths import app_paths
from workroom.sessions.engine import Engine

pytestmark = [pytest.mark.acceptance, pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(300)]

WINDOW = 6.0
JOB = 20


def _box(health_url: str) -> dict:
    with urllib.request.urlopen(health_url, timeout=3) as reply:
        return json.loads(reply.read())


@pytest.fixture
def metered(tmp_path: Path):  # type: ignore[no-untyped-def]
    if os.geteuid() != 0:
        pytest.skip("the simulator needs root; CI runs as root")
    from simbox import control

    home = tmp_path / "sim"
    state = control.up(2, WINDOW, metering="requests", guest_port=8080, home=home)
    try:
        yield home, control.connection_info(state)
    finally:
        control.down(home=home)


def test_keep_awake_from_outside_on_the_request_meter(metered, tmp_path: Path) -> None:
    home, info = metered
    from simbox import control

    kept, control_box = info["boxes"]
    bundle = locate_agent_bundle(tmp_path / "cache")
    paths = app_paths({"WORKROOM_HOME": str(tmp_path / "app")}).ensure()
    paths.known_hosts_file.write_text(kept["host_key_line"] + "\n")
    engine = Engine(paths, bundle, auto_reconnect=False)
    engine.add_host(Host(name=kept["name"], provider="request-metered", address="127.0.0.1", port=kept["ssh_port"],
                         user=kept["user"], identity=IdentityRef.file(kept["client_key"]),
                         idle_window_seconds=WINDOW, reference={"proxy_url": kept["http_url"]}))
    jobs: list[subprocess.Popen[bytes]] = []
    figures: dict[str, object] = {}

    async def scenario() -> None:
        session = engine.session(kept["name"])
        await session.connect(timeout=60)
        t0 = time.monotonic()
        for box in (kept, control_box):
            jobs.append(subprocess.Popen(control.exec_argv(box["name"], ["sleep", str(JOB)], home=home)))
        idle_at: list[float] = []
        trace: list[str] = []  # what the agent said, each change once: the failure message shows it

        def heard(s) -> None:  # type: ignore[no-untyped-def]
            if s.status is None:
                return
            said = f"{s.status.verdict.value} {', '.join(s.status.busy_reasons)}"
            if not trace or not trace[-1].endswith(said):
                trace.append(f"{time.monotonic() - t0:.1f}s {said}")
            if s.status.verdict is Verdict.IDLE and not idle_at and time.monotonic() - t0 > 2:
                idle_at.append(time.monotonic())
        session.listeners.append(heard)
        control_suspended = None
        kept_suspended = None
        # Job, hold, window, and slack for a loaded CI machine; how soon it slept after IDLE is asserted below.
        deadline = t0 + JOB + 30 + WINDOW + 45
        while time.monotonic() < deadline and kept_suspended is None:
            now = time.monotonic()
            if control_suspended is None and _box(control_box["health_url"])["state"] == "asleep":
                control_suspended = now - t0
            if now - t0 < JOB:
                assert _box(kept["health_url"])["state"] == "awake", "the kept box was suspended mid-job"
            elif _box(kept["health_url"])["state"] == "asleep":
                kept_suspended = now
            await asyncio.sleep(0.25)
        assert control_suspended is not None and control_suspended < JOB, control_suspended
        if kept_suspended is None:
            box = _box(kept["health_url"])
            seen = {k: box.get(k) for k in ("state", "idle_for_s", "last_activity_reason", "connections")}
            raise AssertionError(f"the kept box never slept after its job; the agent said: {trace}; "
                                 f"the box: {seen}; keep-awake: {session.keepawake_report}")
        assert idle_at, f"the agent never said IDLE: {trace}"
        report = session.keepawake_report
        assert report is not None and report.ended is KeepAwakeEnd.NO_LONGER_BUSY, report
        figures.update(control_suspended_after_s=round(control_suspended, 2),
                       kept_suspended_after_idle_s=round(kept_suspended - idle_at[0], 2),
                       keepawake_polls=report.polls, keepawake_failures=report.failures)
        assert kept_suspended - idle_at[0] <= WINDOW + 3, figures
        await engine.close()

    try:
        asyncio.run(scenario())
    finally:
        for job in jobs:
            if job.poll() is None:
                job.kill()
        print("request-metered figures:", json.dumps(figures))
