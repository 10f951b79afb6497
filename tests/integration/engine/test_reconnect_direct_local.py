"""A reconnect to this computer reaches its agent's socket before the install probe (a Python process of its
own) has run; the probe still runs, after the first status, and anything it finds to change sends the next
connect the probe's way (docs/protocol.md, transport). The real local agent and the real LocalShell: its
commands are counted on the way through, not replaced."""

from __future__ import annotations

import asyncio

import pytest
from engine_helpers import tampered_bundle, wait_put_right, wait_until
from fixtures.procs import kill_local_agents
from workroom.core.connection import ConnectionState
from workroom.core.hosts import Host
from workroom.remote.host_shell import LocalShell
from workroom.sessions.engine import Engine

pytestmark = pytest.mark.integration

LIVE = (ConnectionState.LIVE, ConnectionState.QUIET)


class Commands:
    """Every command the app runs on this computer, in order; and how many had run when `session` first said
    it was live (`before_live`, the moment of its first status: the probe after it may start at once)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.ran: list[str] = []
        self.before_live: int | None = None
        real = LocalShell.run

        def run(shell, cmd, *args, **kwargs):  # type: ignore[no-untyped-def]
            self.ran.append(cmd)
            return real(shell, cmd, *args, **kwargs)

        monkeypatch.setattr(LocalShell, "run", run)

    def watch(self, session) -> None:  # type: ignore[no-untyped-def]
        def seen(snap) -> None:  # type: ignore[no-untyped-def]
            if self.before_live is None and snap.connection.state in LIVE:
                self.before_live = len(self.ran)

        session.listeners.append(seen)


def _engine(app_home, bundle, *, auto_reconnect: bool = False) -> Engine:  # type: ignore[no-untyped-def]
    engine = Engine(app_home, bundle, auto_reconnect=auto_reconnect)
    if "here" not in engine.hosts.names():
        engine.add_host(Host(name="here", provider="local"))
    return engine


async def _connect(app_home, bundle):  # type: ignore[no-untyped-def]
    engine = _engine(app_home, bundle)
    try:
        return await engine.session("here").connect(timeout=60)
    finally:
        await engine.close()


@pytest.fixture
def local_agent(app_home, agent_bundle):  # type: ignore[no-untyped-def]
    """This computer's agent, installed and started by a first connect; killed by PID after the test."""
    try:
        first = asyncio.run(_connect(app_home, agent_bundle))
        assert first.connection.state in LIVE and first.install is not None and first.install.action != "none"
        yield first
    finally:
        kill_local_agents(app_home.state_dir)


def test_a_reconnect_to_this_computer_runs_no_command_before_its_first_status(
        app_home, agent_bundle, local_agent, monkeypatch: pytest.MonkeyPatch) -> None:
    commands = Commands(monkeypatch)

    async def run() -> None:
        engine = _engine(app_home, agent_bundle)
        session = engine.session("here")
        commands.watch(session)
        try:
            snap = await session.connect(timeout=60)
            assert commands.before_live == 0, commands.ran  # the socket, straight: no probe before it
            assert snap.connection.state in LIVE and snap.status is not None
            assert snap.status.agent.build == agent_bundle.sha256
            assert snap.install is not None and snap.install.pushed_bytes == 0
            assert snap.install.socket_path == local_agent.install.socket_path
            await wait_until(lambda: len(commands.ran) >= 1, 30, "the install probe after the first status")
        finally:
            await engine.close()

    asyncio.run(run())


def test_a_stopped_agent_of_this_computer_is_started_the_probes_way(
        app_home, agent_bundle, local_agent, monkeypatch: pytest.MonkeyPatch) -> None:
    kill_local_agents(app_home.state_dir)  # the remembered socket is left behind, nobody listening on it
    commands = Commands(monkeypatch)
    snap = asyncio.run(_connect(app_home, agent_bundle))
    assert snap.connection.state in LIVE and snap.install is not None and snap.install.action == "started"
    assert commands.ran, "the agent was started without a probe"
    assert snap.status is not None and snap.status.agent.build == agent_bundle.sha256


def test_an_installed_bundle_changed_under_this_computers_agent_is_put_right_after_the_direct_reconnect(
        app_home, agent_bundle, local_agent, monkeypatch: pytest.MonkeyPatch) -> None:
    """The running agent is this build, so the socket is kept; the probe after the first status finds the
    file's other bytes, and the reconnect it causes goes the probe's way: the file is replaced, never run."""
    installed = app_home.state_dir / "agent" / "wr-agent.pyz"
    assert installed.is_file()
    marker = app_home.state_dir / "the-tampered-bundle-ran"
    installed.write_bytes(tampered_bundle(marker))
    commands = Commands(monkeypatch)

    async def run() -> None:
        engine = _engine(app_home, agent_bundle, auto_reconnect=True)
        session = engine.session("here")
        commands.watch(session)
        try:
            snap = await session.connect(timeout=60)
            assert snap.connection.state in LIVE and commands.before_live == 0, commands.ran
            await wait_put_right(session, installed, agent_bundle)
        finally:
            await engine.close()

    asyncio.run(run())
    assert not marker.exists(), "a bundle was run before its hash was checked"
