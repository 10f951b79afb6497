"""A GitHub codespace through the user's `gh` CLI: read with `gh codespace view`, reached with `gh codespace ssh
--stdio` only when it is Available, started only by the user's wake (the REST start through `gh api`), never
held while idle, and kept up while busy by the session's own traffic, which `gh` reports as activity
(docs/providers.md, "Coder and Codespaces").

The real `gh` talks to GitHub, which cannot run here: a fake `gh` on PATH (tests/fixtures/fake_platforms.py)
answers as cli/cli does (its sources are named there); its `--stdio` proxies to a real sshd in a network
namespace of its own (the codespace's container) with the real agent behind it, reports traffic as activity
each "minute" and starts a codespace that is not Available. Time is compressed: a minute is a second
(`CODESPACES_RULES.scaled(60)`).
"""

from __future__ import annotations

import asyncio
import time

import pytest
from engine_helpers import wait_until, wait_until_let_go
from fixtures.fake_platforms import Box, FakePlatform
from test_platform_coder import job
from workroom.core.connection import ConnectionState
from workroom.core.errors import UserError
from workroom.core.hosts import Host, IdentityRef
from workroom.core.provider_specs import spec_for
from workroom.providers.codespaces import CODESPACES_RULES, CodespacesProvider
from workroom.sessions.engine import Engine

pytestmark = pytest.mark.integration


@pytest.fixture
def sshd(sshd_own_network):  # type: ignore[no-untyped-def]
    """The platform's box has a network of its own, as a container has: its agent never reads this machine's
    other test boxes (the other tiers' links) as the box's traffic, which kept an idle box busy here."""
    return sshd_own_network


RULES = CODESPACES_RULES.scaled(60.0).with_release_after(3.0)  # the agent's own ticks are not scaled
LIVE = (ConnectionState.LIVE, ConnectionState.QUIET)


def codespace(platform: FakePlatform, sshd, state: str, timeout: float) -> None:  # type: ignore[no-untyped-def]
    platform.add(Box(name="cs1", platform="codespaces", state=state, ssh_host=sshd.host, ssh_port=sshd.port,
                     ttl=timeout, kill_uid=sshd.uid, last_activity=time.time() if state == "Available" else None))


def engine_for(paths, bundle, sshd) -> Engine:  # type: ignore[no-untyped-def]
    engine = Engine(paths, bundle, auto_reconnect=True)
    engine.use_provider(CodespacesProvider(engine.context, spec_for("codespaces"), RULES))
    engine.add_host(Host(name="cs1", provider="codespaces", user=sshd.user, agent_candidates="user",
                         identity=IdentityRef.file(str(sshd.key_path)), idle_window_seconds=10.0))
    return engine


def test_a_stopped_codespace_is_read_not_started(sshd, app_home, agent_bundle, fake_platform) -> None:
    codespace(fake_platform, sshd, "Shutdown", 10.0)

    async def go() -> None:
        engine = engine_for(app_home, agent_bundle, sshd)
        snap = await engine.session("cs1").connect(timeout=30)
        assert snap.connection.state is ConnectionState.ASLEEP
        await engine.close()

    asyncio.run(go())
    assert fake_platform.events_of("start") == []
    read_only = {("codespace", "view"), ("api", "user/codespaces/cs1")}
    assert {tuple(c["argv"][:2]) for c in fake_platform.calls} <= read_only


def test_wake_and_connect_starts_it_once_through_the_rest_start(sshd, app_home, agent_bundle, fake_platform) -> None:
    codespace(fake_platform, sshd, "Shutdown", 30.0)

    async def go() -> None:
        engine = engine_for(app_home, agent_bundle, sshd)
        snap = await engine.session("cs1").connect(timeout=60, wake=True)
        assert snap.connection.state in LIVE
        await engine.close()

    asyncio.run(go())
    assert [(e["box"], e["cause"]) for e in fake_platform.events_of("start")] == [("cs1", "api start")]
    api = [c["argv"] for c in fake_platform.calls if c["argv"][:1] == ["api"] and "POST" in c["argv"]]
    assert api == [["api", "--method", "POST", "user/codespaces/cs1/start"]]


def test_a_codespace_of_another_state_is_not_connected_to(sshd, app_home, agent_bundle, fake_platform) -> None:
    """Starting, rebuilding, a state the app does not know: `--stdio` would start or wait on it, so no connect,
    and the row says what gh said."""
    codespace(fake_platform, sshd, "Rebuilding", 30.0)

    async def go() -> None:
        engine = engine_for(app_home, agent_bundle, sshd)
        session = engine.session("cs1")
        with pytest.raises(UserError, match="gh: it says it is Rebuilding"):
            await session.connect(timeout=30)
        assert session.connection.state is ConnectionState.UNREADABLE  # read again on its own, never connected
        with pytest.raises(UserError, match="it says it is Rebuilding"):
            await session.connect(timeout=30, wake=True)  # not even a wake: `--stdio` could start it
        fake_platform.update("cs1", state="Exporting-2099")  # a newer state than the app knows
        with pytest.raises(UserError, match="gh: the codespace is Exporting-2099"):
            await session.connect(timeout=30)
        fake_platform.set(garbage='{"name": "cs1", "state": ["not", "a", "word"]}')
        with pytest.raises(UserError, match="no state"):
            await session.connect(timeout=30)
        fake_platform.set(garbage=None, logged_in=False)
        with pytest.raises(UserError, match="gh auth login"):
            await session.connect(timeout=30)
        assert "gh auth login" in session.snapshot().badge().tooltip
        await engine.close()

    asyncio.run(go())
    assert not [c for c in fake_platform.calls if "--stdio" in c["argv"]]
    assert fake_platform.events_of("start") == []


@pytest.mark.slow
@pytest.mark.timeout(200)
def test_a_busy_codespace_is_kept_up_by_the_sessions_traffic_and_stops_after_the_job(
        sshd, app_home, agent_bundle, fake_platform) -> None:
    """A 30-minute job in a codespace with a 10-minute idle timeout (scaled): the session's traffic while busy is
    the only activity, and it holds; after the job the app lets go, and the codespace stops one idle timeout
    after the last activity."""
    codespace(fake_platform, sshd, "Available", 10.0)
    work = job(sshd, 30)
    began = time.time()

    async def go() -> float:
        engine = engine_for(app_home, agent_bundle, sshd)
        session = engine.session("cs1")
        try:
            await asyncio.sleep(5)  # the job is seen by the agent before the first connect
            session.start(wake=False, unknown=False)
            await wait_until(lambda: session.status is not None and session.status.busy, 30, "a busy status")
            await wait_until_let_go(session, 180, "let go after the job (and the agent's 30 s hold)")
            released = time.time()
            await wait_until(lambda: session.connection.state is ConnectionState.ASLEEP, 30, "the codespace stopped")
            return released
        finally:
            await engine.close()

    try:
        released = asyncio.run(go())
    finally:
        work.kill()
        work.wait()
    stop = fake_platform.events_of("stop")
    assert len(stop) == 1 and stop[0]["at"] > began + 30  # never cut short while busy
    # After the app let go, no activity: the fake reports the tunnel's traffic at most one "minute" (1 s) late.
    assert [a for a in fake_platform.events_of("activity") if a["t"] > released + 1.5] == []
    last = fake_platform.events_of("activity")[-1]["t"]
    assert stop[0]["at"] == pytest.approx(last + 10.0, abs=0.05)
    assert fake_platform.events_of("start") == []
