"""Where the app keeps each agent's key (providers/agent_keys.py): in the keyring, filed under the host's binding,
and forgotten with the remembered place when the host is removed or edited; with no usable keyring, in memory for
the run only, never on disk. Real sshd and agent; the keyring is the tests' in-memory backend (a real keyring
service needs a desktop session: tests/integration/test_keyring_secret_service.py holds the store itself)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from engine_helpers import ssh_host, trust_sshd, wait_until
from fixtures.cli_child import run_in_child
from workroom.agent_bundle import AgentBundle
from workroom.core.connection import ConnectionState
from workroom.credentials import SERVICE_NAME
from workroom.paths import AppPaths
from workroom.providers.agent_sockets import FILE_NAME
from workroom.sessions.engine import Engine

pytestmark = pytest.mark.integration
WORKROOM = [sys.executable, "-m", "workroom.cli"]
LIVE = (ConnectionState.LIVE, ConnectionState.QUIET)


def host_key(sshd) -> str:  # type: ignore[no-untyped-def]
    """The key the agent keeps on the host (read as root: the file is the login user's, 0600)."""
    path = sshd.home / ".local/state/wr-agent/agent.sock.key"
    assert path.stat().st_uid == sshd.uid and path.stat().st_mode & 0o077 == 0
    return path.read_text().strip()


def agent_keys_in(keyring) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {user: secret for (service, user), secret in keyring._store.items()
            if service == SERVICE_NAME and user.startswith("agent-key:")}


def test_the_key_is_kept_in_the_keyring_and_forgotten_with_the_host(
        sshd, app_home: AppPaths, agent_bundle: AgentBundle, memory_keyring) -> None:  # type: ignore[no-untyped-def]
    trust_sshd(app_home, sshd)

    async def scenario() -> None:
        engine = Engine(app_home, agent_bundle, auto_reconnect=False)
        engine.add_host(ssh_host(sshd))
        try:
            snap = await engine.session("box1").connect(timeout=60)
            assert snap.connection.state in LIVE
            binding = json.loads((app_home.state_dir / FILE_NAME).read_text())["hosts"]["box1"]["binding"]
            # Written on a thread of its own (a connect never waits on the keyring): there within moments.
            await wait_until(lambda: agent_keys_in(memory_keyring) == {f"agent-key:box1#{binding}": host_key(sshd)},
                             10, "the key in the keyring")
            # A price alone is not where or as whom: the session and what it knows of its agent go on.
            await engine.replace_host("box1", ssh_host(sshd, hourly_price=1.5))
            await asyncio.sleep(0.5)
            assert agent_keys_in(memory_keyring) == {f"agent-key:box1#{binding}": host_key(sshd)}
            # Any other edit (here its idle window) is another binding: both are forgotten.
            await engine.replace_host("box1", ssh_host(sshd, hourly_price=1.5, idle_window_seconds=600.0))
            await wait_until(lambda: agent_keys_in(memory_keyring) == {} and "box1" not in json.loads(
                (app_home.state_dir / FILE_NAME).read_text())["hosts"], 10, "the place and key forgotten")
            snap = await engine.session("box1").connect(timeout=60)  # the probe hands the key over again
            assert snap.connection.state in LIVE
            await wait_until(lambda: list(agent_keys_in(memory_keyring).values()) == [host_key(sshd)], 10,
                             "the key in the keyring again")
            await engine.remove_host("box1")
            await wait_until(lambda: agent_keys_in(memory_keyring) == {}, 10, "the key forgotten")
        finally:
            await engine.close()

    asyncio.run(scenario())


def test_with_no_keyring_the_key_is_never_written_on_this_computer(
        sshd, app_home: AppPaths, agent_bundle: AgentBundle, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    trust_sshd(app_home, sshd)
    asyncio.run(_add(app_home, agent_bundle, sshd))
    env = dict(os.environ, PYTHON_KEYRING_BACKEND="keyring.backends.fail.Keyring")
    for _ in range(2):  # the second run knows no key: it goes the probe's way, which hands it over again
        done = subprocess.run([*WORKROOM, "connect", "box1"], capture_output=True, text=True, timeout=120, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stderr == "", done.stderr  # nothing to warn about: no secret went anywhere
    key = host_key(sshd).encode()
    home = Path(os.environ["WORKROOM_HOME"])
    holding = [p for p in home.rglob("*") if p.is_file() and key in p.read_bytes()]
    assert holding == [], f"the agent's key was written to {holding}"


async def _add(app_home: AppPaths, bundle: AgentBundle, sshd) -> None:  # type: ignore[no-untyped-def]
    engine = Engine(app_home, bundle, auto_reconnect=False)
    engine.add_host(ssh_host(sshd))
    await engine.close()


def test_a_command_run_without_the_app_leaves_the_keyring_alone(
        sshd, app_home: AppPaths, agent_bundle: AgentBundle) -> None:  # type: ignore[no-untyped-def]
    """`workroom connect` without the app is one connect: the probe's answer gives it the agent's key, so it
    neither starts the keyring nor reads or writes a key there (starting the keyring cost it ~80 ms here), and
    a second run goes the same way. The app's own engine still keeps the key (the test above)."""
    trust_sshd(app_home, sshd)
    asyncio.run(_add(app_home, agent_bundle, sshd))
    for _ in range(2):
        ended = run_in_child(["connect", "box1", "--json"], os.environ)
        assert ended["code"] == 0, ended["out"]
        assert json.loads(ended["out"])["connection"] in ("live", "quiet")
        assert [m for m in ended["modules"] if m.split(".")[0] in ("keyring", "secretstorage", "jeepney")] == []
