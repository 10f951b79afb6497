"""The engine against a real OpenSSH server and the real agent: push by hash, hand-off, host keys,
settings fan-out, a frozen peer. Nothing here is faked."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from engine_helpers import agent_pids, host_agent_status_argv, ssh_host, trust_sshd, variant_bundle
from workroom.core.app_settings import AppSettings
from workroom.core.ceiling import CeilingSettings
from workroom.core.connection import ConnectionState
from workroom.core.protocol import Verdict
from workroom.providers import make_provider
from workroom.remote.agent_install import AgentInstaller, AgentLayout
from workroom.sessions.engine import Engine
from workroom.storage import save_settings
from wr_agent.classifier import TIMER_MIN_SLEEP

pytestmark = pytest.mark.integration
WORKROOM = [sys.executable, "-m", "workroom.cli"]


def _engine(paths, bundle, *hosts, settings: CeilingSettings | None = None) -> Engine:  # type: ignore[no-untyped-def]
    if settings is not None:
        save_settings(paths, AppSettings(ceiling=settings))
    engine = Engine(paths, bundle, auto_reconnect=False)
    for host in hosts:
        engine.add_host(host)
    return engine


def _remote_status(sshd) -> dict:  # type: ignore[no-untyped-def]
    """The agent's own status, read on the host with the installed bundle (not through the app)."""
    out = subprocess.run(host_agent_status_argv(sshd), capture_output=True, text=True, timeout=30, check=True)
    return json.loads(out.stdout)


def test_first_connect_pushes_second_pushes_nothing(sshd, app_home, agent_bundle) -> None:
    trust_sshd(app_home, sshd)

    async def go() -> tuple[int, int, str, float]:
        engine = _engine(app_home, agent_bundle, ssh_host(sshd))
        first = await engine.session("box1").connect(timeout=60)
        await engine.close()
        engine2 = Engine(app_home, agent_bundle, auto_reconnect=False)
        t0 = time.monotonic()
        second = await engine2.session("box1").connect(timeout=60)
        took = time.monotonic() - t0
        await engine2.close()
        assert first.status is not None and second.status is not None
        assert second.status.agent.build == agent_bundle.sha256
        return first.install.pushed_bytes, second.install.pushed_bytes, second.connection.state, took

    first_bytes, second_bytes, state, took = asyncio.run(go())
    assert first_bytes == len(agent_bundle.data)
    assert second_bytes == 0
    assert state in (ConnectionState.LIVE, ConnectionState.QUIET)
    assert took < 10
    assert len(agent_pids(sshd.uid)) >= 1
    mode = os.stat(sshd.home / ".local/share/wr-agent/wr-agent.pyz").st_mode & 0o777
    assert mode == 0o600


def test_changed_bundle_hands_off_keeping_settings_and_ceiling_clock(sshd, app_home, agent_bundle) -> None:
    trust_sshd(app_home, sshd)
    settings = CeilingSettings(ceiling_seconds=1234, prompt_timeout_seconds=321, ask_at_ceiling=False)

    async def install_first() -> None:
        engine = _engine(app_home, agent_bundle, ssh_host(sshd), settings=settings)
        await engine.session("box1").connect(timeout=60)
        await engine.close()

    asyncio.run(install_first())
    # A job keeps the workroom busy across the hand-off, so the awake clock must carry over.
    job = subprocess.Popen(["runuser", "-u", sshd.user, "--", "sleep", "120"])
    try:
        deadline = time.monotonic() + 10
        while _remote_status(sshd)["verdict"] != "BUSY" and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1.5)
        before = _remote_status(sshd)
        assert before["verdict"] == "BUSY"
        pid_before = agent_pids(sshd.uid)
        newer = variant_bundle(agent_bundle, "v2")
        provider = make_provider("ssh", Engine(app_home, newer, auto_reconnect=False).context)
        host = ssh_host(sshd)
        shell = provider.open_shell(host)
        try:
            report = AgentInstaller(shell, newer, AgentLayout(), provider.serve_options(host)).ensure()
        finally:
            shell.close()
        assert report.action == "handed_off"
        assert report.pushed_bytes == len(newer.data)
        after = _remote_status(sshd)
        assert after["agent"]["build"] == newer.sha256
        assert after["ceiling_seconds"] == 1234 and after["prompt_timeout_seconds"] == 321
        assert after["verdict"] == "BUSY"
        assert after["awake_seconds"] >= before["awake_seconds"], (before, after)
        assert sorted(agent_pids(sshd.uid)) == sorted(pid_before), "hand-off must re-exec in place"
    finally:
        job.kill()
        job.wait()


def test_upload_cut_midway_leaves_old_agent_running_and_next_connect_completes(sshd, app_home, agent_bundle) -> None:
    trust_sshd(app_home, sshd)

    async def install_first() -> None:
        engine = _engine(app_home, agent_bundle, ssh_host(sshd))
        await engine.session("box1").connect(timeout=60)
        await engine.close()

    asyncio.run(install_first())
    newer = variant_bundle(agent_bundle, "v3")
    host = ssh_host(sshd)
    provider = make_provider("ssh", Engine(app_home, newer, auto_reconnect=False).context)
    shell = provider.open_shell(host)
    real_put = shell.connection.sftp_put

    def cut_put(data, remote_path, mode=0o600, progress=None, timeout=30.0):  # type: ignore[no-untyped-def]
        def progress_then_cut(sent: int, total: int) -> None:
            if sent >= total // 3:
                shell.connection.close()  # the network goes away mid-upload

        return real_put(data, remote_path, mode=mode, progress=progress_then_cut, timeout=timeout)

    shell.connection.sftp_put = cut_put  # type: ignore[method-assign]
    with pytest.raises(Exception):  # noqa: B017 - any transport failure; the point is what is left behind
        AgentInstaller(shell, newer, AgentLayout(), provider.serve_options(host)).ensure()
    shell.close()
    # The old agent still runs the old build; the installed file is the old one.
    assert _remote_status(sshd)["agent"]["build"] == agent_bundle.sha256

    async def reconnect():  # type: ignore[no-untyped-def]
        engine = Engine(app_home, newer, auto_reconnect=False)
        snap = await engine.session("box1").connect(timeout=60)
        await engine.close()
        return snap

    snap = asyncio.run(reconnect())
    assert snap.install.action == "handed_off"
    assert snap.status.agent.build == newer.sha256
    leftovers = list((sshd.home / ".local/share/wr-agent").glob(".wr-agent.pyz.staged-*"))
    assert leftovers == []


def test_ask_mode_reaches_only_hosts_that_sleep(sshd, app_home, agent_bundle) -> None:
    """boxd's traits say it sleeps; the same sshd stands in for the box's SSH (the boxd CLI is absent, so
    the provider cannot be read: only an explicit wake connects, as the user's Wake and connect does)."""
    trust_sshd(app_home, sshd)
    settings = CeilingSettings(ceiling_seconds=3600, prompt_timeout_seconds=600, ask_at_ceiling=True)

    async def go(provider: str) -> bool:
        engine = _engine(app_home, agent_bundle, ssh_host(sshd, name=provider, provider=provider), settings=settings)
        snap = await engine.session(provider).connect(timeout=60, wake=True)
        await engine.close()
        return snap.status.ask_at_ceiling

    assert asyncio.run(go("ssh")) is False
    assert asyncio.run(go("boxd")) is True


def test_settings_change_reaches_connected_host_at_once(sshd, app_home, agent_bundle) -> None:
    trust_sshd(app_home, sshd)

    async def go() -> float:
        engine = _engine(app_home, agent_bundle, ssh_host(sshd))
        session = engine.session("box1")
        await session.connect(timeout=60)
        outcome = await engine.apply_settings({"ceiling_seconds": 7200})
        assert outcome == {"box1": None}
        ceiling = session.status.ceiling_seconds
        await engine.close()
        return ceiling

    assert asyncio.run(go()) == 7200
    assert _remote_status(sshd)["ceiling_seconds"] == 7200


def test_unknown_host_key_is_a_question_and_never_auto_added(sshd, app_home, agent_bundle) -> None:
    async def go(answer: bool):  # type: ignore[no-untyped-def]
        engine = _engine(app_home, agent_bundle) if "box1" not in Engine(app_home, agent_bundle).hosts.names() \
            else Engine(app_home, agent_bundle, auto_reconnect=False)
        if "box1" not in engine.hosts.names():
            engine.add_host(ssh_host(sshd))
        session = engine.session("box1")
        asked = []

        async def answerer(_s, question):  # type: ignore[no-untyped-def]
            asked.append(question.fingerprint)
            return answer

        session.host_key_answerer = answerer
        try:
            return await session.connect(timeout=60), asked
        finally:
            await engine.close()

    expected = subprocess.run(["ssh-keygen", "-lf", f"{sshd.host_key_path}.pub"], capture_output=True,
                              text=True, check=True).stdout.split()[1]
    from workroom.core.errors import UserError

    with pytest.raises(UserError):
        asyncio.run(go(False))
    assert not app_home.known_hosts_file.exists() or sshd.host_key_line.split()[2] not in \
        app_home.known_hosts_file.read_text()
    snap, asked = asyncio.run(go(True))
    assert asked == [expected]
    assert snap.connection.state in (ConnectionState.LIVE, ConnectionState.QUIET)


def test_changed_host_key_is_refused_naming_both_fingerprints(sshd, app_home, agent_bundle, tmp_path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other = (tmp_path / "other.pub").read_text().split()
    app_home.known_hosts_file.write_text(f"[127.0.0.1]:{sshd.port} {other[0]} {other[1]}\n")
    env = {**os.environ, "WORKROOM_HOME": os.environ["WORKROOM_HOME"]}
    subprocess.run([*WORKROOM, "hosts", "add", "box1", "--provider", "ssh", "--host", sshd.host, "--port",
                    str(sshd.port), "--user", sshd.user, "--identity", str(sshd.key_path)], env=env, check=True,
                   capture_output=True)
    done = subprocess.run([*WORKROOM, "connect", "box1", "--trust-new-host-key"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 6, done.stderr
    presented = subprocess.run(["ssh-keygen", "-lf", f"{sshd.host_key_path}.pub"], capture_output=True,
                               text=True, check=True).stdout.split()[1]
    expected = subprocess.run(["ssh-keygen", "-lf", str(tmp_path / "other.pub")], capture_output=True,
                              text=True, check=True).stdout.split()[1]
    assert presented in done.stderr and expected in done.stderr


def test_cli_connect_json_reports_pushed_bytes_and_build(sshd, app_home, agent_bundle) -> None:
    env = dict(os.environ)
    subprocess.run([*WORKROOM, "hosts", "add", "box1", "--provider", "ssh", "--host", sshd.host, "--port",
                    str(sshd.port), "--user", sshd.user, "--identity", str(sshd.key_path), "--candidates", "user"],
                   env=env, check=True, capture_output=True)
    first = subprocess.run([*WORKROOM, "connect", "box1"], env=env, capture_output=True, text=True, timeout=60)
    assert first.returncode == 5, first.stderr  # unknown host key, not trusted
    assert "SHA256:" in first.stderr
    assert "`workroom connect box1 --trust-new-host-key` trusts it" in first.stderr, first.stderr
    status = subprocess.run([*WORKROOM, "status", "--live"], env=env, capture_output=True, text=True, timeout=60)
    line = next(line for line in status.stdout.splitlines() if line.startswith("box1 "))
    assert "`workroom connect box1 --trust-new-host-key`" in line, line
    done = subprocess.run([*WORKROOM, "connect", "box1", "--trust-new-host-key", "--json"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["pushed_bytes"] > 0 and len(data["build"]) == 64
    again = json.loads(subprocess.run([*WORKROOM, "connect", "box1", "--json"], env=env, capture_output=True,
                                      text=True, timeout=60, check=True).stdout)
    assert again["pushed_bytes"] == 0 and again["build"] == data["build"]


def test_frozen_peer_is_noticed_within_10_seconds(sshd, app_home, agent_bundle) -> None:
    trust_sshd(app_home, sshd)

    async def go() -> float:
        engine = _engine(app_home, agent_bundle, ssh_host(sshd))
        session = engine.session("box1")
        await session.connect(timeout=60)
        lost = asyncio.Event()
        session.listeners.append(lambda s: lost.set() if s.connection.state is ConnectionState.LOST else None)
        # Freeze the sshd processes serving our connection (they run as the test user). A short-lived one
        # (the install probe's channel, ended since the first status) may be gone by the time it is signalled.
        found = [int(p) for p in subprocess.run(["pgrep", "-u", str(sshd.uid), "sshd"], capture_output=True,
                                                text=True).stdout.split()]
        frozen = []
        for pid in found:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                continue
            frozen.append(pid)
        assert frozen, f"no per-user sshd process left to freeze (found {found})"
        t0 = time.monotonic()
        try:
            await asyncio.wait_for(lost.wait(), 15)
            return time.monotonic() - t0
        finally:
            for pid in frozen:
                try:
                    os.kill(pid, signal.SIGCONT)
                except ProcessLookupError:
                    pass
            await engine.close()

    took = asyncio.run(go())
    assert took <= 10.0


def test_busy_job_on_host_reaches_the_app_as_an_event(sshd, app_home, agent_bundle) -> None:
    trust_sshd(app_home, sshd)

    async def go() -> tuple[float, list[str]]:
        engine = _engine(app_home, agent_bundle, ssh_host(sshd))
        session = engine.session("box1")
        await session.connect(timeout=60)
        busy = asyncio.Event()
        session.listeners.append(lambda s: busy.set() if s.status and s.status.verdict is Verdict.BUSY else None)
        job = await asyncio.create_subprocess_exec("runuser", "-u", sshd.user, "--", "sleep", "60")
        t0 = time.monotonic()
        try:
            await asyncio.wait_for(busy.wait(), 10)
            return time.monotonic() - t0, list(session.status.busy_reasons)
        finally:
            job.kill()
            await job.wait()
            await engine.close()

    took, reasons = asyncio.run(go())
    # A job that only sleeps counts once its timer sleep has lasted TIMER_MIN_SLEEP (a daemon's 1 s heartbeat
    # is not work: docs/agent.md); then one tick to notice and one push to arrive.
    assert took < TIMER_MIN_SLEEP + 2.0
    assert any("sleep" in r for r in reasons), reasons


def test_new_file_but_old_agent_running_is_handed_off(sshd, app_home, agent_bundle) -> None:
    """An upload that was placed but whose hand-off never took (the connection died between the two):
    the next connect sees the running agent's build differ from the file's and hands off."""
    trust_sshd(app_home, sshd)

    async def connect(bundle):  # type: ignore[no-untyped-def]
        engine = _engine(app_home, bundle, ssh_host(sshd)) if "box1" not in Engine(app_home, bundle).hosts.names() \
            else Engine(app_home, bundle, auto_reconnect=False)
        try:
            return await engine.session("box1").connect(timeout=60)
        finally:
            await engine.close()

    asyncio.run(connect(agent_bundle))
    newer = variant_bundle(agent_bundle, "placed-but-not-handed-off")
    installed = sshd.home / ".local/share/wr-agent/wr-agent.pyz"
    installed.write_bytes(newer.data)  # what _upload_and_place leaves behind
    assert _remote_status(sshd)["agent"]["build"] == agent_bundle.sha256
    snap = asyncio.run(connect(newer))
    assert snap.install.action == "handed_off" and snap.install.pushed_bytes == 0
    assert snap.status.agent.build == newer.sha256
