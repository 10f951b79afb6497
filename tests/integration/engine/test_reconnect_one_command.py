"""A reconnect to an up-to-date host whose agent's socket the app cannot open straight (none remembered, or
sshd refuses: test_reconnect_direct_socket.py) is one command after login: the probe checks the installed
bundle's sha256 and only then becomes the relay on the same stream (docs/protocol.md, transport). Against the
real sshd and the real agent; the SSH commands are counted on the real connection, not replaced. The engine
here remembers no socket, so every connect takes that path."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import pytest
from engine_helpers import ssh_host, tampered_bundle, trust_sshd
from workroom.core.connection import ConnectionState
from workroom.providers import make_provider
from workroom.remote.agent_install import AgentInstaller, AgentLayout, ServeOptions
from workroom.remote.host_shell import ExecResult, LocalShell
from workroom.remote.ssh_connection import SshConnection
from workroom.sessions.engine import Engine

pytestmark = pytest.mark.integration


class CommandLog:
    """Every command the app runs over SSH, in order: ("exec", cmd) or ("stream", cmd)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.commands: list[tuple[str, str]] = []
        real_exec, real_stream = SshConnection.exec, SshConnection.open_exec_channel

        def exec_(conn, command, *args, **kwargs):  # type: ignore[no-untyped-def]
            self.commands.append(("exec", command))
            return real_exec(conn, command, *args, **kwargs)

        def stream(conn, command, *args, **kwargs):  # type: ignore[no-untyped-def]
            self.commands.append(("stream", command))
            return real_stream(conn, command, *args, **kwargs)

        monkeypatch.setattr(SshConnection, "exec", exec_)
        monkeypatch.setattr(SshConnection, "open_exec_channel", stream)


async def _connect(app_home, agent_bundle, sshd):  # type: ignore[no-untyped-def]
    engine = Engine(app_home, agent_bundle, auto_reconnect=False)
    engine.context.agent_sockets = None  # no direct stream to the socket: the one command is what is tested
    if "box1" not in engine.hosts.names():
        engine.add_host(ssh_host(sshd))
    try:
        return await engine.session("box1").connect(timeout=60)
    finally:
        await engine.close()


def test_a_reconnect_is_one_command_and_pushes_nothing(sshd, app_home, agent_bundle,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    trust_sshd(app_home, sshd)
    asyncio.run(_connect(app_home, agent_bundle, sshd))  # the first push
    log = CommandLog(monkeypatch)
    snap = asyncio.run(_connect(app_home, agent_bundle, sshd))
    assert snap.connection.state in (ConnectionState.LIVE, ConnectionState.QUIET)
    assert snap.install is not None and snap.install.pushed_bytes == 0 and snap.install.action == "none"
    assert snap.status is not None and snap.status.agent.build == agent_bundle.sha256
    assert [kind for kind, _ in log.commands] == ["stream"]  # no probe of its own, no second relay
    assert agent_bundle.sha256 in log.commands[0][1]  # the hash the probe checks before the relay runs



def test_a_bundle_whose_hash_differs_is_never_run_and_is_replaced(sshd, app_home, agent_bundle,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    trust_sshd(app_home, sshd)
    asyncio.run(_connect(app_home, agent_bundle, sshd))
    installed = sshd.home / ".local/share/wr-agent/wr-agent.pyz"
    marker = sshd.home / "the-tampered-bundle-ran"
    installed.write_bytes(tampered_bundle(marker))  # still the user's own file, 0600: only its bytes differ
    os.chown(installed, sshd.uid, sshd.uid)
    log = CommandLog(monkeypatch)
    snap = asyncio.run(_connect(app_home, agent_bundle, sshd))
    assert not marker.exists(), "a bundle was run before its hash was checked"
    assert snap.install is not None and snap.install.pushed_bytes == len(agent_bundle.data)
    assert hashlib.sha256(installed.read_bytes()).hexdigest() == agent_bundle.sha256
    assert snap.status is not None and snap.status.agent.build == agent_bundle.sha256
    probes = [cmd for kind, cmd in log.commands if agent_bundle.sha256 in cmd and "relay" in cmd]
    assert len(probes) == 1  # the probe's answer was used for the push: the host was not probed twice


def _probe_then_relay(shell, installer, *, deadline_s: float = 30.0) -> list[bytes]:  # type: ignore[no-untyped-def]
    """Run the probe-then-relay command as a reconnect does (subscribe sent at once); its lines up to the reply."""
    stream = shell.connection.open_exec_channel(installer.probe_then_relay_command())
    try:
        stream.send(b'{"id": 1, "method": "subscribe"}\n')
        buf, deadline = b"", time.monotonic() + deadline_s
        while b'"id": 1' not in buf and b'"id":1' not in buf and time.monotonic() < deadline:
            data = stream.recv()
            if not data:
                break
            buf += data
        return buf.splitlines()
    finally:
        stream.close()


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace to see which files the host opens")
def test_the_relay_runs_from_the_checked_bytes_never_from_the_installed_file_again(
        sshd, app_home, agent_bundle) -> None:
    """One interpreter checks the installed bundle's sha256 and becomes the relay, whose code came with the
    command from the app's bundle: the installed file is opened once (for its hash), so a swap after the check
    has nothing to swap, and no zip is imported. Seen with strace on the real host, as the login user."""
    trust_sshd(app_home, sshd)
    asyncio.run(_connect(app_home, agent_bundle, sshd))  # the first push; its agent runs
    host = ssh_host(sshd)
    provider = make_provider("ssh", Engine(app_home, agent_bundle, auto_reconnect=False).context)
    shell = provider.open_shell(host)
    trace = sshd.home / "probe.trace"
    traced = ("strace", "-f", "-qq", "-e", "trace=open,openat", "-o", str(trace), "python3")
    installer = AgentInstaller(shell, agent_bundle, AgentLayout(), provider.serve_options(host), python=traced)
    try:
        lines = _probe_then_relay(shell, installer)
    finally:
        shell.close()
    answer, hello = json.loads(lines[0]), json.loads(lines[1])
    assert answer["sha256"] == agent_bundle.sha256 and answer["running"] is True
    assert hello["hello"] == "wr-agent" and hello["build"] == agent_bundle.sha256
    assert json.loads(lines[-1])["result"]["agent"]["build"] == agent_bundle.sha256  # the subscribe's answer
    opened = [line for line in trace.read_text().splitlines() if "wr-agent.pyz" in line and "open" in line]
    assert len(opened) == 1, opened


def test_a_bundle_swapped_for_another_is_refused_by_the_one_command(sshd, app_home, agent_bundle) -> None:
    """The same command, the installed file swapped for other bytes (the user's own file, 0600) while the agent
    runs: the answer reports their hash, the relay does not follow, and the marker the other bytes would leave
    is never written."""
    trust_sshd(app_home, sshd)
    asyncio.run(_connect(app_home, agent_bundle, sshd))
    installed = sshd.home / ".local/share/wr-agent/wr-agent.pyz"
    marker = sshd.home / "the-swapped-bundle-ran"
    swapped = tampered_bundle(marker)
    installed.write_bytes(swapped)
    os.chown(installed, sshd.uid, sshd.uid)
    host = ssh_host(sshd)
    provider = make_provider("ssh", Engine(app_home, agent_bundle, auto_reconnect=False).context)
    shell = provider.open_shell(host)
    installer = AgentInstaller(shell, agent_bundle, AgentLayout(), provider.serve_options(host))
    try:
        lines = _probe_then_relay(shell, installer, deadline_s=10.0)
    finally:
        shell.close()
    assert len(lines) == 1, lines  # the answer alone: no hello, no relay
    answer = json.loads(lines[0])
    assert answer["sha256"] == hashlib.sha256(swapped).hexdigest() and answer["running"] is True
    assert not installer.relay_follows(installer.read_probe(ExecResult(0, lines[0] + b"\n", b"")))
    assert not marker.exists()


def test_the_probes_answer_carries_any_folder_name_as_json_does(tmp_path: Path, agent_bundle) -> None:
    """The probe writes its answer without the json module (its start-up was a third of the probe's): folder
    names with quotes, backslashes, non-ASCII and bytes that are not UTF-8 come back exactly as they are."""
    odd = os.fsdecode(b'w\xc3\xa9 "q" \\ \xff')
    layout = AgentLayout(install_dir=str(tmp_path / odd / "share"), state_dir=str(tmp_path / odd / "state"))
    probe = AgentInstaller(LocalShell(), agent_bundle, layout, ServeOptions(workroom="t")).probe()
    assert probe.bundle_path == layout.bundle_path and probe.socket_path == layout.socket_path
    assert probe.sha256 is None and probe.running is False
