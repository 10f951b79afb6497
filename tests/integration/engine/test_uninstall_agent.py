"""A removed host leaves no agent running: `Engine.remove_host(uninstall=True)` and `workroom hosts remove NAME
--uninstall` stop the agent the way it was started and remove what it installed, on the real sshd with the
real agent. One test per way the agent is kept running here: its own supervisor (every host), a systemd user
unit (only where the test host runs a user manager with linger; this machine's PID 1 is not systemd, so that
test skips here and says why). The launchd way is held in tests/integration/macos/test_launchd_agent.py."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest
from engine_helpers import agent_pids, ssh_host, trust_sshd
from workroom.remote.agent_install import SUPERVISOR_OWN, SUPERVISOR_SYSTEMD
from workroom.sessions.engine import Engine

pytestmark = pytest.mark.integration
WORKROOM = [sys.executable, "-m", "workroom.cli"]


def supervisor_pids(uid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-u", str(uid), "-x", "wr-agent-super"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def agent_files(sshd) -> list[str]:  # type: ignore[no-untyped-def]
    found = []
    for folder in (sshd.home / ".local/share/wr-agent", sshd.home / ".local/state/wr-agent",
                   sshd.home / ".config/systemd/user"):
        if folder.exists():
            found += [str(p) for p in folder.iterdir()]
    return found


def connect_once(app_home, agent_bundle, sshd) -> str:  # type: ignore[no-untyped-def]
    async def go() -> str:
        engine = Engine(app_home, agent_bundle, auto_reconnect=False)
        engine.add_host(ssh_host(sshd))
        try:
            snap = await engine.session("box1").connect(timeout=60)
            assert snap.install is not None and snap.install.supervisor is not None
            return snap.install.supervisor
        finally:
            await engine.close()

    return asyncio.run(go())


def test_remove_uninstalling_stops_the_own_supervisor_and_removes_everything(sshd, app_home, agent_bundle) -> None:
    trust_sshd(app_home, sshd)
    assert connect_once(app_home, agent_bundle, sshd) == SUPERVISOR_OWN
    assert agent_pids(sshd.uid) and supervisor_pids(sshd.uid), "the agent and its supervisor should run"
    assert agent_files(sshd)
    result = subprocess.run([*WORKROOM, "hosts", "remove", "box1", "--uninstall"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "supervisor" in result.stdout and "removed box1" in result.stdout, result.stdout
    time.sleep(2.5)  # longer than the supervisor's restart delay: nothing comes back
    assert not agent_pids(sshd.uid) and not supervisor_pids(sshd.uid)
    assert not agent_files(sshd), agent_files(sshd)
    listed = subprocess.run([*WORKROOM, "hosts", "list"], capture_output=True, text=True, timeout=60)
    assert "box1" not in listed.stdout


def test_an_unreachable_host_is_kept_and_says_its_agent_may_still_run(sshd, app_home, agent_bundle) -> None:
    """Nothing to reach: the host is not removed (nothing lost), and the words say why and what to do."""
    from workroom.core.hosts import Host

    async def go() -> None:
        engine = Engine(app_home, agent_bundle, auto_reconnect=False)
        engine.add_host(Host(name="gone", provider="ssh", address="127.0.0.1", port=1, user="nobody"))
        await engine.close()

    asyncio.run(go())
    result = subprocess.run([*WORKROOM, "hosts", "remove", "gone", "--uninstall"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 4, result.stdout + result.stderr
    assert "was not removed" in result.stderr and "Traceback" not in result.stderr
    assert "gone" in subprocess.run([*WORKROOM, "hosts", "list"], capture_output=True, text=True, timeout=60).stdout


def test_remove_uninstalling_disables_the_systemd_user_unit(sshd, app_home, agent_bundle) -> None:
    probe = subprocess.run(["runuser", "-u", sshd.user, "--", "systemctl", "--user", "is-system-running"],
                           capture_output=True, text=True, timeout=30)
    if probe.stdout.strip() not in ("running", "degraded"):
        pytest.skip("this test host has no systemd user manager (PID 1 is not systemd); the unit cannot run here")
    trust_sshd(app_home, sshd)
    assert connect_once(app_home, agent_bundle, sshd) == SUPERVISOR_SYSTEMD

    async def remove() -> None:
        engine = Engine(app_home, agent_bundle, auto_reconnect=False)
        try:
            report = await engine.remove_host("box1", uninstall=True)
            assert report is not None and "systemd user unit" in report.stopped
        finally:
            await engine.close()

    asyncio.run(remove())
    time.sleep(2.5)  # longer than the unit's RestartSec
    assert not agent_pids(sshd.uid)
    assert not (sshd.home / ".config/systemd/user/wr-agent.service").exists()
