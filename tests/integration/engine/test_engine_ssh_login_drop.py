"""A connection cut while logging in (a box whose sshd is still starting after a wake) is retried with
back-off, not reported as a refused login: real sshd killed and restarted mid-login, real session."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fixtures import sshd as sshd_mod
from fixtures.memory_keyring import MemoryKeyring
from workroom.core.connection import ConnectionState
from workroom.core.hosts import Host, IdentityRef
from workroom.credentials import CredentialKey, CredentialStore
from workroom.remote.ssh_errors import LoginInterrupted
from workroom.sessions.engine import Engine
from workroom.sessions.reconnect_rules import BACKOFF_SECONDS

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


class _KillingKeyring(MemoryKeyring):
    """The first passphrase lookup happens mid-login: kill that sshd (listener and the connection's
    processes) and start it again, then answer."""

    def __init__(self, server: sshd_mod.SshdServer) -> None:
        super().__init__()
        self.server = server
        self.killed = 0

    def get_password(self, service: str, username: str) -> str | None:
        if not self.killed:
            self.killed = 1
            for pid in reversed(_descendants(self.server.pid)):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            self.server._proc.wait(timeout=5)  # type: ignore[attr-defined]
            time.sleep(0.5)  # the client's transport sees the hang-up
            sshd_mod.restart_variant(self.server)
        return super().get_password(service, username)


def test_sshd_killed_mid_login_is_live_again_after_one_back_off(sshd, app_home, agent_bundle, tmp_path,
                                                                monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    server = sshd_mod.launch_variant(sshd, tmp_path / "waking")
    key = tmp_path / "id_locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "pass phrase", "-f", str(key)], check=True)
    auth = sshd.home / ".ssh" / "authorized_keys"
    original = auth.read_text()
    auth.write_text(original + (tmp_path / "id_locked.pub").read_text())
    with app_home.known_hosts_file.open("a") as handle:
        handle.write(server.host_key_line + "\n")
    backend = _KillingKeyring(server)
    store = CredentialStore(backend=backend)
    store.set(CredentialKey.passphrase(str(key)), "pass phrase")

    async def go() -> tuple[BaseException | None, list[ConnectionState], float]:
        engine = Engine(app_home, agent_bundle, auto_reconnect=True, credentials=store)
        engine.add_host(Host(name="waking", provider="ssh", address=server.host, port=server.port, user=sshd.user,
                             identity=IdentityRef.file(str(key)), agent_candidates="user"))
        session = engine.session("waking")
        seen: list[ConnectionState] = []
        session.listeners.append(lambda snap: seen.append(snap.connection.state))
        first: BaseException | None = None
        try:
            try:
                await session.connect(timeout=60)
            except LoginInterrupted as dropped:
                first = dropped
            lost_at = time.monotonic()
            deadline = lost_at + BACKOFF_SECONDS[0] + 30
            while session.connection.state is not ConnectionState.LIVE and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            return first, list(seen), time.monotonic() - lost_at
        finally:
            await engine.close()

    try:
        first, seen, took = asyncio.run(go())
    finally:
        auth.write_text(original)
        sshd_mod.stop_variant(server)
    assert backend.killed
    assert isinstance(first, LoginInterrupted), "the drop mid-login must not end as a refused login"
    assert ConnectionState.BACKING_OFF in seen and ConnectionState.ERROR not in seen
    assert seen[-1] is ConnectionState.LIVE
    assert took < BACKOFF_SECONDS[0] + 30  # one back-off step, then an ordinary connect and agent install
