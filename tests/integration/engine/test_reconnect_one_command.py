"""A reconnect to an up-to-date host is one command after login: the probe checks the installed bundle's
sha256 and only then becomes the relay on the same stream (docs/protocol.md, transport). Against the real
sshd and the real agent; the SSH commands are counted on the real connection, not replaced."""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import zipfile
from pathlib import Path

import pytest
from engine_helpers import ssh_host, trust_sshd
from workroom.core.connection import ConnectionState
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


def _tampered_bundle(marker: Path) -> bytes:
    """A zipapp that, if ever run, leaves `marker` behind (and says nothing a relay would)."""
    out = io.BytesIO()
    out.write(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(out, "a") as z:
        z.writestr("__main__.py", f"open({str(marker)!r}, 'w').write('ran')\n")
    return out.getvalue()


def test_a_bundle_whose_hash_differs_is_never_run_and_is_replaced(sshd, app_home, agent_bundle,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    trust_sshd(app_home, sshd)
    asyncio.run(_connect(app_home, agent_bundle, sshd))
    installed = sshd.home / ".local/share/wr-agent/wr-agent.pyz"
    marker = sshd.home / "the-tampered-bundle-ran"
    installed.write_bytes(_tampered_bundle(marker))  # still the user's own file, 0600: only its bytes differ
    os.chown(installed, sshd.uid, sshd.uid)
    log = CommandLog(monkeypatch)
    snap = asyncio.run(_connect(app_home, agent_bundle, sshd))
    assert not marker.exists(), "a bundle was run before its hash was checked"
    assert snap.install is not None and snap.install.pushed_bytes == len(agent_bundle.data)
    assert hashlib.sha256(installed.read_bytes()).hexdigest() == agent_bundle.sha256
    assert snap.status is not None and snap.status.agent.build == agent_bundle.sha256
    probes = [cmd for kind, cmd in log.commands if agent_bundle.sha256 in cmd and "relay" in cmd]
    assert len(probes) == 1  # the probe's answer was used for the push: the host was not probed twice
