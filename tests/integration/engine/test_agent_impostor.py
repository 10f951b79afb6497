"""Another user of the host runs a fake agent where the app may knock, greeting with the app's build hash (which
is public) and a busy job of its choosing: the app never believes it, tells it nothing, and signals nothing it
names (docs/security.md, "The agent proves who it is"). Real sshd, real login users, a real second user of the
host running the fake (tests/fixtures/fake_agent.py) as itself; the app through its real CLI and engine.

- A host added as user A, connected, removed, and added again as user B: A runs a fake at the old path (mode
  0666, its folders 0711). B's connect never reaches it (the remembered place was A's login's), and B's own agent
  answers.
- The login user's ~/.local/state is group-writable (umask 002, a shared group): a user of that group swaps
  `wr-agent/` for their own with a fake agent, its lock naming another process of the login user's. The
  remembered socket (the direct reconnect) reaches the fake, which cannot prove who it is; the install probe
  then refuses the folder in words; the uninstall stops nothing and removes nothing; the victim lives.
"""

from __future__ import annotations

import asyncio
import grp
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from demo_states import make_status
from engine_helpers import ssh_host, trust_sshd
from fixtures import sshd as sshd_mod
from fixtures.procs import kill_uid_processes
from workroom.agent_bundle import AgentBundle
from workroom.core.connection import ConnectionState
from workroom.core.errors import UserError
from workroom.paths import AppPaths
from workroom.providers.agent_sockets import FILE_NAME
from workroom.sessions.engine import Engine

pytestmark = [pytest.mark.integration, pytest.mark.skipif(os.geteuid() != 0, reason="needs root: other users")]
WORKROOM = [sys.executable, "-m", "workroom.cli"]
FAKE_AGENT = Path(__file__).resolve().parents[2] / "fixtures" / "fake_agent.py"
FAKE_JOB = "running: fake-job"
HOST_PYTHON = "/usr/bin/python3"


class FakeAgent:
    """tests/fixtures/fake_agent.py run as `entry` at `socket_path`, greeting with `build`, busy with FAKE_JOB;
    `record` lists every line the app sent it. Stopped by `stop` (and by itself after two minutes)."""

    def __init__(self, shared: Path, entry: pwd.struct_passwd, socket_path: Path, build: str,
                 lock_pid: int | None = None) -> None:
        script, status, self.record = shared / "fake_agent.py", shared / "status.json", shared / "record"
        shutil.copy(FAKE_AGENT, script)
        status.write_text(json.dumps(make_status("fake", verdict="BUSY", busy_reasons=[FAKE_JOB],
                                                 agent={"version": "0.1.0", "protocol": 1, "build": build})
                                     .model_dump(mode="json")))
        for path in (script, status):
            path.chmod(0o644)
        self.record.touch(mode=0o666)
        self.record.chmod(0o666)
        argv = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups", HOST_PYTHON,
                str(script), str(socket_path), build, str(status), str(self.record), "120"]
        self.proc = subprocess.Popen([*argv, *([str(lock_pid)] if lock_pid else [])], cwd="/")
        deadline = time.monotonic() + 10
        while not socket_path.is_socket():
            assert self.proc.poll() is None, "the fake agent did not start"
            assert time.monotonic() < deadline, "the fake agent did not listen within 10 s"
            time.sleep(0.05)

    def heard(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.record.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait(10)


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder every user can read and write (the fake's script, its status and its record)."""
    folder = Path(tempfile.mkdtemp(prefix="wr-impostor-"))
    folder.chmod(0o777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*WORKROOM, *args], capture_output=True, text=True, timeout=120)


def remembered(app_home: AppPaths) -> dict[str, dict[str, str]]:
    path = app_home.state_dir / FILE_NAME
    return json.loads(path.read_text())["hosts"] if path.exists() else {}


def test_a_host_added_again_as_another_user_never_reaches_the_first_users_fake_agent(
        sshd, app_home: AppPaths, tmp_path: Path, shared: Path, agent_bundle: AgentBundle) -> None:  # type: ignore[no-untyped-def]
    server, user_b = sshd_mod.second_login(sshd, tmp_path / "two-logins")
    fake = None
    try:
        trust_sshd(app_home, server)
        add = ["hosts", "add", "box1", "--provider", "ssh", "--host", server.host, "--port", str(server.port),
               "--identity", str(sshd.key_path), "--candidates", "user"]
        assert cli(*add, "--user", sshd.user).returncode == 0
        first = cli("connect", "box1")
        assert first.returncode == 0, first.stdout + first.stderr
        old_place = Path(remembered(app_home)["box1"]["socket"])
        assert old_place.is_relative_to(sshd.home)
        assert cli("hosts", "remove", "box1").returncode == 0
        assert cli(*add, "--user", user_b.pw_name).returncode == 0
        # User A, on the host: its agent gone, a fake of its own at the old path, open to every user.
        kill_uid_processes(sshd.uid)
        for folder in (sshd.home / ".local", sshd.home / ".local/state", old_place.parent):
            folder.chmod(0o711)
        fake = FakeAgent(shared, pwd.getpwnam(sshd.user), old_place, agent_bundle.sha256)
        second = cli("connect", "box1")
        said = second.stdout + second.stderr
        assert second.returncode == 0, said
        assert FAKE_JOB not in said and "fake" not in said, said
        assert fake.heard() == [], "the app told the first user's fake agent something"
        assert Path(remembered(app_home)["box1"]["socket"]).is_relative_to(Path(user_b.pw_dir))
    finally:
        if fake is not None:
            fake.stop()
        sshd_mod.stop_variant(server)
        sshd_mod.delete_test_user(user_b.pw_name)


@pytest.fixture
def intruder(sshd) -> Iterator[pwd.struct_passwd]:  # type: ignore[no-untyped-def]
    """Another user of the host, in the login user's group (umask 002 makes its folders theirs to write)."""
    entry = sshd_mod.create_other_user(grp.getgrgid(pwd.getpwnam(sshd.user).pw_gid).gr_name)
    try:
        yield entry
    finally:
        sshd_mod.delete_test_user(entry.pw_name)


@pytest.fixture
def victim(sshd) -> Iterator[subprocess.Popen[bytes]]:  # type: ignore[no-untyped-def]
    """A process of the login user's that is not its agent (what a planted lock would name)."""
    proc = subprocess.Popen(["setpriv", f"--reuid={sshd.uid}", f"--regid={sshd.uid}", "--init-groups",
                             "sleep", "300"], cwd="/")
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(10)


async def _connect(app_home: AppPaths, bundle: AgentBundle, sshd, seen: list[str] | None = None):  # type: ignore[no-untyped-def]
    engine = Engine(app_home, bundle, auto_reconnect=False)
    if "box1" not in engine.hosts.names():
        engine.add_host(ssh_host(sshd))
    session = engine.session("box1")
    if seen is not None:
        session.listeners.append(lambda s: seen.extend(s.status.busy_reasons if s.status is not None else ()))
    try:
        return await session.connect(timeout=60)
    finally:
        await engine.close()


def test_a_state_folder_swapped_by_another_user_is_never_believed_nor_obeyed(
        sshd, app_home: AppPaths, shared: Path, agent_bundle: AgentBundle, intruder: pwd.struct_passwd,
        victim: subprocess.Popen[bytes], memory_keyring) -> None:  # type: ignore[no-untyped-def]
    trust_sshd(app_home, sshd)
    snap = asyncio.run(_connect(app_home, agent_bundle, sshd))
    assert snap.connection.state in (ConnectionState.LIVE, ConnectionState.QUIET)
    state = sshd.home / ".local/state"
    place = Path(remembered(app_home)["box1"]["socket"])
    assert place.parent == state / "wr-agent"
    (sshd.home / ".local").chmod(0o755)  # others may pass through it, not write to it
    state.chmod(0o775)  # what umask 002 makes: its group may write to it
    swap = f"cd {state} && mv wr-agent wr-agent.old && mkdir -m 711 wr-agent"  # the login user may enter it
    subprocess.run(["setpriv", f"--reuid={intruder.pw_uid}", f"--regid={intruder.pw_gid}", "--init-groups",
                    "sh", "-c", swap], check=True, capture_output=True, timeout=30)
    fake = FakeAgent(shared, intruder, place, agent_bundle.sha256, lock_pid=victim.pid)
    try:
        # The reconnect knocks on the remembered socket (sshd connects as the login user: the fake's socket is
        # 0666), where the fake cannot prove who it is; the probe then finds the folder above open to a group.
        seen: list[str] = []
        with pytest.raises(UserError) as not_safe:
            asyncio.run(_connect(app_home, agent_bundle, sshd, seen))
        assert "not safe" in not_safe.value.title, not_safe.value
        assert f"{state / 'wr-agent'} belongs to uid {intruder.pw_uid}" in not_safe.value.message
        assert FAKE_JOB not in seen, "the fake agent's status reached the session"
        heard = fake.heard()
        assert [line.get("method") for line in heard] == ["subscribe"], heard  # its challenge, and nothing else
        # The uninstall trusts nothing in that folder: it stops nothing (the victim lives) and removes nothing,
        # and the host stays.
        async def remove_uninstalling() -> None:
            engine = Engine(app_home, agent_bundle, auto_reconnect=False)
            try:
                await engine.remove_host("box1", uninstall=True)
            finally:
                await engine.close()

        with pytest.raises(UserError) as refused:
            asyncio.run(remove_uninstalling())
        assert "not safe" in refused.value.title and "nothing was stopped or removed" in refused.value.message
        assert "box1" in Engine(app_home, agent_bundle).hosts.names()
        time.sleep(0.5)
        assert victim.poll() is None and fake.proc.poll() is None
        assert (state / "wr-agent.old").exists()
    finally:
        fake.stop()
