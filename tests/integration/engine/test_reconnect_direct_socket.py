"""A reconnect reaches the agent's socket straight over the SSH connection (OpenSSH's streamlocal forwarding):
no command runs on the host before the first status; the install probe still runs, after it, and anything it
finds to change sends the next connect the probe's way (docs/protocol.md, transport). Against the real sshd
and the real agent; the SSH commands and socket streams are counted on the real connection, not replaced."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from engine_helpers import (
    agent_pids,
    host_agent_status_argv,
    ssh_host,
    tampered_bundle,
    trust_sshd,
    variant_bundle,
    wait_put_right,
    wait_until,
)
from fixtures import sshd as sshd_mod
from fixtures.thread_stop import other_threads, threads_stopped
from workroom.core.connection import ConnectionState
from workroom.providers.agent_sockets import FILE_NAME
from workroom.remote.ssh_connection import SshConnection
from workroom.sessions.engine import Engine

pytestmark = pytest.mark.integration

LIVE = (ConnectionState.LIVE, ConnectionState.QUIET)


class Wire:
    """What the app opens on its SSH connections, in order: ("exec" | "stream", command) or ("socket", path)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.opened: list[tuple[str, str]] = []
        real = {"exec": SshConnection.exec, "stream": SshConnection.open_exec_channel,
                "socket": SshConnection.open_socket_stream}
        for kind, name in (("exec", "exec"), ("stream", "open_exec_channel"), ("socket", "open_socket_stream")):
            def wrapped(conn, what, *args, _kind=kind, **kwargs):  # type: ignore[no-untyped-def]
                self.opened.append((_kind, what))
                return real[_kind](conn, what, *args, **kwargs)

            monkeypatch.setattr(SshConnection, name, wrapped)

    def kinds(self) -> list[str]:
        return [kind for kind, _ in self.opened]


async def _connect(app_home, bundle, sshd, *, name: str = "box1"):  # type: ignore[no-untyped-def]
    engine = Engine(app_home, bundle, auto_reconnect=False)
    if name not in engine.hosts.names():
        engine.add_host(ssh_host(sshd, name))
    try:
        return await engine.session(name).connect(timeout=60)
    finally:
        await engine.close()


def _remembered(app_home) -> dict:  # type: ignore[no-untyped-def]
    return json.loads((app_home.state_dir / FILE_NAME).read_text())["hosts"]


def test_a_reconnect_opens_the_agents_socket_and_runs_no_command_before_its_first_status(
        sshd, app_home, agent_bundle, monkeypatch: pytest.MonkeyPatch) -> None:
    trust_sshd(app_home, sshd)
    first = asyncio.run(_connect(app_home, agent_bundle, sshd))  # the push; it remembers where the agent is
    assert first.install is not None and first.install.pushed_bytes > 0
    socket_path = _remembered(app_home)["box1"]["socket"]
    assert socket_path == first.install.socket_path and socket_path.startswith(str(sshd.home))
    wire = Wire(monkeypatch)

    async def reconnect() -> None:
        engine = Engine(app_home, agent_bundle, auto_reconnect=False)
        session = engine.session("box1")
        seen: list[list[tuple[str, str]]] = []
        session.listeners.append(lambda s: s.status is None or seen or seen.append(list(wire.opened)))
        try:
            snap = await session.connect(timeout=60)
            at_first_status = seen[0]
            assert snap.connection.state in LIVE
            assert snap.install is not None and snap.install.pushed_bytes == 0
            assert snap.status is not None and snap.status.agent.build == agent_bundle.sha256
            assert at_first_status == [("socket", socket_path)], at_first_status
            # The probe's checks follow on the same connection: one command, and the link stays.
            await wait_until(lambda: wire.kinds() == ["socket", "exec"], 30, "the install probe after the first status")
            assert agent_bundle.sha256 in wire.opened[1][1]
            await asyncio.sleep(0.5)
            assert session.snapshot().connection.state in LIVE
            assert wire.kinds() == ["socket", "exec"]
        finally:
            await engine.close()

    asyncio.run(reconnect())


def test_a_host_that_forbids_socket_forwarding_gets_the_one_command(sshd, app_home, agent_bundle, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    server = sshd_mod.launch_variant(sshd, tmp_path / "no-forwarding", extra=["AllowStreamLocalForwarding no"])
    try:
        trust_sshd(app_home, server)
        asyncio.run(_connect(app_home, agent_bundle, server))
        assert "box1" in _remembered(app_home)
        wire = Wire(monkeypatch)
        snap = asyncio.run(_connect(app_home, agent_bundle, server))
        assert snap.connection.state in LIVE and snap.install is not None and snap.install.pushed_bytes == 0
        assert wire.kinds()[:2] == ["socket", "stream"], wire.opened  # refused at once, then the probe-and-relay
        assert "exec" not in wire.kinds()
    finally:
        sshd_mod.stop_variant(server)


def test_a_remembered_socket_nobody_listens_on_falls_back_to_the_probe(sshd, app_home, agent_bundle,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    trust_sshd(app_home, sshd)
    asyncio.run(_connect(app_home, agent_bundle, sshd))
    memo = app_home.state_dir / FILE_NAME
    data = json.loads(memo.read_text())
    real = data["hosts"]["box1"]["socket"]
    data["hosts"]["box1"]["socket"] = str(sshd.home / "nobody-listens-here.sock")
    memo.write_text(json.dumps(data))
    wire = Wire(monkeypatch)
    snap = asyncio.run(_connect(app_home, agent_bundle, sshd))
    assert snap.connection.state in LIVE and snap.install is not None and snap.install.pushed_bytes == 0
    assert wire.kinds()[:2] == ["socket", "stream"], wire.opened
    assert _remembered(app_home)["box1"]["socket"] == real  # put right by the probe's answer


@pytest.mark.parametrize("damage", [b"{not json", b"\xff\xfe", b'{"version": 1, "hosts": {"box1": {"socket": 3}}}',
                                    b'{"version": 1, "hosts": {"box1": {"socket": "relative.sock", "bundle": "x"}}}'])
def test_a_damaged_memory_file_costs_only_the_round_trip(sshd, app_home, agent_bundle, damage: bytes,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    trust_sshd(app_home, sshd)
    asyncio.run(_connect(app_home, agent_bundle, sshd))
    memo = app_home.state_dir / FILE_NAME
    memo.write_bytes(damage)
    wire = Wire(monkeypatch)
    snap = asyncio.run(_connect(app_home, agent_bundle, sshd))
    assert snap.connection.state in LIVE and snap.install is not None and snap.install.pushed_bytes == 0
    assert wire.kinds()[:1] == ["stream"], wire.opened  # nothing usable remembered: not even a knock
    assert _remembered(app_home)["box1"]["socket"].startswith(str(sshd.home))


def test_an_agent_of_another_build_at_the_socket_is_handed_off_the_probes_way(sshd, app_home, agent_bundle,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    trust_sshd(app_home, sshd)
    asyncio.run(_connect(app_home, agent_bundle, sshd))
    running = sorted(agent_pids(sshd.uid))
    newer = variant_bundle(agent_bundle, "another build")
    wire = Wire(monkeypatch)
    snap = asyncio.run(_connect(app_home, newer, sshd))
    assert snap.connection.state in LIVE and snap.status is not None and snap.status.agent.build == newer.sha256
    assert snap.install is not None and snap.install.pushed_bytes == len(newer.data)
    assert wire.kinds()[:2] == ["socket", "stream"], wire.opened
    assert sorted(agent_pids(sshd.uid)) == running  # a hand-off re-executes in place



def _agent_status(sshd) -> dict | None:  # type: ignore[no-untyped-def]
    """The agent's own status, asked on the host with the installed bundle; None if it gave none in 10 s."""
    try:
        out = subprocess.run(host_agent_status_argv(sshd), capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(out.stdout) if out.returncode == 0 else None


def _serving_agent(sshd) -> int:  # type: ignore[no-untyped-def]
    """The PID of the agent that serves the socket (not its supervisor, which names itself wr-agent-super)."""
    serving = [pid for pid in agent_pids(sshd.uid) if Path(f"/proc/{pid}/comm").read_text().strip() != "wr-agent-super"]
    assert len(serving) == 1, serving
    return serving[0]


def test_a_stalled_agent_at_the_socket_is_restarted_the_probes_way(sshd, app_home, agent_bundle,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's checks are really stuck: its threads but the server's are stopped (ptrace, the server still
    answers) until the agent itself reports `stalled` (30 s after its last tick). The direct link is then not
    kept; the probe's way restarts the agent in place (a hand-off into the same bundle: same PID), and the
    first status is a checking agent's, with nothing pushed."""
    trust_sshd(app_home, sshd)
    asyncio.run(_connect(app_home, agent_bundle, sshd))
    pid = _serving_agent(sshd)
    for _attempt in range(5):  # a thread stopped while it held the status lock would hang the server too
        with threads_stopped(other_threads(pid)):
            if _agent_status(sshd) is None:
                continue
            deadline = time.monotonic() + 60
            while not (_agent_status(sshd) or {}).get("stalled"):
                assert time.monotonic() < deadline, "the agent never said it had stalled"
                time.sleep(1)
            wire = Wire(monkeypatch)
            snap = asyncio.run(_connect(app_home, agent_bundle, sshd))
        break
    else:
        raise AssertionError("the agent's server hung each time its other threads were stopped")
    assert snap.connection.state in LIVE and snap.status is not None and not snap.status.stalled
    assert snap.install is not None and snap.install.action == "restarted" and snap.install.pushed_bytes == 0
    assert wire.kinds()[:2] == ["socket", "stream"], wire.opened  # the direct link not kept: the probe's way
    assert _serving_agent(sshd) == pid  # restarted in place
    assert not (_agent_status(sshd) or {"stalled": True})["stalled"]


def test_an_installed_bundle_changed_under_a_running_agent_is_put_right_after_a_direct_reconnect(
        sshd, app_home, agent_bundle, monkeypatch: pytest.MonkeyPatch) -> None:
    """The running agent is this build, so the direct link is taken; the probe that follows finds the file's
    other bytes, and the reconnect it causes goes the probe's way: the file is replaced, never run."""
    trust_sshd(app_home, sshd)
    asyncio.run(_connect(app_home, agent_bundle, sshd))
    installed = sshd.home / ".local/share/wr-agent/wr-agent.pyz"
    marker = sshd.home / "the-tampered-bundle-ran"
    running = sorted(agent_pids(sshd.uid))
    installed.write_bytes(tampered_bundle(marker))  # still the user's own file, 0600: only its bytes differ
    os.chown(installed, sshd.uid, sshd.uid)
    wire = Wire(monkeypatch)

    async def run() -> None:
        engine = Engine(app_home, agent_bundle, auto_reconnect=True)
        session = engine.session("box1")
        try:
            snap = await session.connect(timeout=60)
            assert snap.connection.state in LIVE and wire.kinds()[0] == "socket" and "stream" not in wire.kinds()
            await wait_put_right(session, installed, agent_bundle)
        finally:
            await engine.close()

    asyncio.run(run())
    assert not marker.exists(), "a bundle was run before its hash was checked"
    assert wire.kinds()[:3] == ["socket", "exec", "stream"], wire.opened  # direct, its probe, then the probe's way
    assert sorted(agent_pids(sshd.uid)) == running


BURN = "timeout {s} sh -c 'while :; do :; done'"  # one process, all CPU


def test_commands_on_the_apps_own_connection_are_not_the_boxs_work_and_another_connections_are(
        sshd, app_home, agent_bundle) -> None:
    """The agent leaves out the tree of the sshd that carries the app's stream (it subscribed through it): a
    CPU-bound command the app runs on that connection is not work. The same command on another SSH connection
    (a person's) is work: the exclusion is that one connection's, not every sshd's."""
    trust_sshd(app_home, sshd)
    asyncio.run(_connect(app_home, agent_bundle, sshd))

    async def run() -> None:
        engine = Engine(app_home, agent_bundle, auto_reconnect=False)
        session = engine.session("box1")
        try:
            await session.connect(timeout=60)
            assert session.install is not None and session._reach.direct  # the stream went straight to the socket

            def named() -> list[str]:
                status = session.snapshot().status
                return [r for r in (status.busy_reasons if status else ()) if " sh " in f" {r} "]

            own = asyncio.get_running_loop().run_in_executor(
                None, lambda: session._rt.shell.run(BURN.format(s=5), timeout=20))  # type: ignore[union-attr]
            seen: list[str] = []
            deadline = time.monotonic() + 4
            while time.monotonic() < deadline:
                seen += named()
                await asyncio.sleep(0.25)
            await own
            assert not seen, seen
            other = engine.provider_for(session.host).open_shell(session.host)  # a second connection
            try:
                theirs = asyncio.get_running_loop().run_in_executor(None, lambda: other.run(BURN.format(s=6),
                                                                                           timeout=20))
                await wait_until(lambda: bool(named()), 6, "the other connection's command seen as work")
                await theirs
            finally:
                other.close()
        finally:
            await engine.close()

    asyncio.run(run())


def test_removing_a_host_forgets_where_its_agent_was(sshd, app_home, agent_bundle) -> None:
    trust_sshd(app_home, sshd)
    asyncio.run(_connect(app_home, agent_bundle, sshd))
    assert "box1" in _remembered(app_home)

    async def remove() -> None:
        engine = Engine(app_home, agent_bundle, auto_reconnect=False)
        try:
            await engine.remove_host("box1")
        finally:
            await engine.close()

    asyncio.run(remove())
    assert "box1" not in _remembered(app_home)
