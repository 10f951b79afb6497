"""A Coder workspace through the user's `coder` CLI: read from its list, reached without autostart, never held
while idle, a busy one extended before its deadline but never past the awake ceiling (docs/providers.md,
"Coder and Codespaces").

The real `coder` talks to a Coder deployment, which cannot run here: a fake `coder` on PATH
(tests/fixtures/fake_platforms.py) answers as coder/coder's CLI does (its sources are named there), and its
`ssh --stdio` proxies to a real sshd in a network namespace of its own (the workspace's container) with the
real agent behind it. Time is compressed: a
deadline-minute is a second (`CODER_RULES.scaled(60)`, a 30 s minimum extension).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from engine_helpers import wait_until, wait_until_let_go
from fixtures.fake_platforms import Box, FakePlatform
from workroom.core.app_settings import AppSettings
from workroom.core.ceiling import CeilingSettings
from workroom.core.connection import ConnectionState
from workroom.core.errors import UserError
from workroom.core.hosts import Host, IdentityRef
from workroom.core.provider_specs import spec_for
from workroom.providers.coder import CODER_RULES, CoderProvider
from workroom.sessions.engine import Engine
from workroom.storage import save_settings

pytestmark = pytest.mark.integration


@pytest.fixture
def sshd(sshd_own_network):  # type: ignore[no-untyped-def]
    """The platform's box has a network of its own, as a container has: its agent never reads this machine's
    other test boxes (the other tiers' links) as the box's traffic, which kept an idle box busy here."""
    return sshd_own_network

SCALE = 60.0
RULES = CODER_RULES.scaled(SCALE).with_release_after(3.0)  # the agent's own ticks are not scaled
LIVE = (ConnectionState.LIVE, ConnectionState.QUIET)


def coder_host(sshd, name: str = "ws1") -> Host:  # type: ignore[no-untyped-def]
    return Host(name=name, provider="coder", user=sshd.user, identity=IdentityRef.file(str(sshd.key_path)),
                agent_candidates="user", idle_window_seconds=10.0)


def engine_for(paths, bundle, sshd, *, ceiling: float = 3600, ask: bool = False,  # type: ignore[no-untyped-def]
               prompt: float = 30) -> Engine:
    save_settings(paths, AppSettings(ceiling=CeilingSettings(ceiling_seconds=ceiling, prompt_timeout_seconds=prompt,
                                                             ask_at_ceiling=ask)))
    engine = Engine(paths, bundle, auto_reconnect=True)
    engine.use_provider(CoderProvider(engine.context, spec_for("coder"), RULES))
    if engine.hosts.get("ws1") is None:
        engine.add_host(coder_host(sshd))
    return engine


def workspace(platform: FakePlatform, sshd, state: str = "running", **more) -> None:  # type: ignore[no-untyped-def]
    platform.add(Box(name="ws1", platform="coder", state=state, ssh_host=sshd.host, ssh_port=sshd.port,
                     kill_uid=sshd.uid, **more))
    if state == "running":
        platform.update("ws1", deadline=time.time() + more.get("ttl", 3600.0))


def test_a_stopped_workspace_is_shown_asleep_and_never_started_by_a_connect(sshd, app_home, agent_bundle,
                                                                              fake_platform) -> None:
    workspace(fake_platform, sshd, "stopped", ttl=10.0, bump=10.0)

    async def go() -> None:
        engine = engine_for(app_home, agent_bundle, sshd)
        session = engine.session("ws1")
        snap = await session.connect(timeout=30)
        assert snap.connection.state is ConnectionState.ASLEEP
        assert fake_platform.events_of("start") == []
        assert [c["argv"][0] for c in fake_platform.calls] == ["list"]  # read from the list, no ssh at all
        await engine.close()

    asyncio.run(go())


def test_wake_and_connect_starts_it_once_through_coder_start(sshd, app_home, agent_bundle, fake_platform) -> None:
    workspace(fake_platform, sshd, "stopped", ttl=60.0, bump=10.0)

    async def go() -> None:
        engine = engine_for(app_home, agent_bundle, sshd)
        snap = await engine.session("ws1").connect(timeout=60, wake=True)
        assert snap.connection.state in LIVE
        await engine.close()

    asyncio.run(go())
    assert [(e["box"], e["cause"]) for e in fake_platform.events_of("start")] == [("ws1", "coder start")]
    ssh = [c["argv"] for c in fake_platform.calls if c["argv"][0] == "ssh" and "--stdio" in c["argv"]]
    assert ssh and all("--disable-autostart" in argv for argv in ssh)


def test_an_idle_workspace_is_let_go_and_stops_at_its_deadline(sshd, app_home, agent_bundle, fake_platform) -> None:
    """Running and idle, the app running for ten deadline-minutes: after the first IDLE no session is open and
    nothing the app does pushes the deadline; the workspace stops at it."""
    workspace(fake_platform, sshd, "running", ttl=20.0, bump=10.0)

    async def go() -> None:
        engine = engine_for(app_home, agent_bundle, sshd)
        session = engine.session("ws1")
        session.start(wake=False, unknown=False)
        await wait_until(lambda: session.status is not None, 30, "the first status")
        # The agent's first look (6 s) and the release delay (3 s), on a busy machine.
        await wait_until_let_go(session, 40, "the session let go")
        released = time.time()
        await wait_until(lambda: session.connection.state is ConnectionState.ASLEEP, 40, "the workspace stopped")
        assert time.time() - released < 30  # its deadline: at most one activity bump (10 s) after the app's session
        await engine.close()
        return released

    released = asyncio.run(go())
    assert len(fake_platform.events_of("session_open")) == 1
    # After the app let go, nothing of the app's moves the deadline: the fake's agent reports the session at most
    # one stats interval (1 s) late.
    assert [b for b in fake_platform.events_of("bump") if b["t"] > released + 1.5] == []
    assert fake_platform.events_of("extend") == []
    stop = fake_platform.events_of("stop")
    assert len(stop) == 1 and stop[0]["reason"] == "autostop"
    assert fake_platform.events_of("start") == []


class ScaledCoder(CoderProvider):
    """The real provider; only its agent's hold after work is compressed like the platform's clock (2 s, not
    30 s), so that "the job ended" comes in a scaled time too."""

    def serve_options(self, host: Host):  # type: ignore[no-untyped-def]
        base = super().serve_options(host)
        return dataclasses.replace(base, extra=(*base.extra, "--hold-seconds", "2"))


def job(sshd, seconds: float) -> subprocess.Popen[bytes]:  # type: ignore[no-untyped-def]
    """Work on the box: a long sleep of the box's user, which the agent counts as busy."""
    argv = ["sleep", str(seconds)]
    if sshd.uid != os.getuid():
        argv = ["runuser", "-u", sshd.user, "--", *argv]
    return subprocess.Popen(argv)


async def run_busy(paths, bundle, sshd, platform: FakePlatform, *, ceiling: float, job_seconds: float,  # type: ignore[no-untyped-def]
                   ask: bool = False, within: float = 150) -> dict[str, float]:
    """The app is running and has let go of the idle workspace; a job starts there, in a session of the user's own
    that ends at once (the platform records the use); the app learns of it from the list, connects, and keeps the
    busy workspace up (no activity bump on this template: only the app's extensions) until it stops. Returns when
    the work began, when the app let go after it, and when it stopped (Unix seconds)."""
    save_settings(paths, AppSettings(ceiling=CeilingSettings(ceiling_seconds=ceiling, prompt_timeout_seconds=30,
                                                             ask_at_ceiling=ask)))
    engine = Engine(paths, bundle, auto_reconnect=True)
    engine.use_provider(ScaledCoder(engine.context, spec_for("coder"), RULES))
    engine.add_host(coder_host(sshd))
    session = engine.session("ws1")
    session.start(wake=False, unknown=False)
    await wait_until_let_go(session, 60, "the idle workspace let go")
    await asyncio.sleep(RULES.outside_use_grace_seconds + 1)
    work = job(sshd, job_seconds)
    began = time.time()
    await asyncio.sleep(5)  # the user's session, in which the job was started, ends a few seconds later
    platform.use("ws1")
    try:
        await wait_until(lambda: session.status is not None and session.status.busy
                         and session.connection.spec.live, 30, "the app to connect to the busy workspace")
        await wait_until(lambda: session.connection.state in (ConnectionState.RELEASED, ConnectionState.ASLEEP),
                         within, "the app to let go, or the workspace to stop")
        released = time.time()
        await wait_until(lambda: session.connection.state is ConnectionState.ASLEEP, within, "the workspace stopped")
        return {"began": began, "released": released}
    finally:
        work.kill()
        work.wait()
        await engine.close()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_busy_workspace_is_extended_before_its_deadline_and_stops_on_its_own_after_the_job(
        sshd, app_home, agent_bundle, fake_platform) -> None:
    """A 40-minute job (scaled), no user session, an hour's ceiling: the deadline is extended before it passes,
    never past the ceiling; after the job no extension, and the workspace stops at its own deadline."""
    workspace(fake_platform, sshd, "running", ttl=20.0, bump=0.0)  # a template without an activity bump
    times = asyncio.run(run_busy(app_home, agent_bundle, sshd, fake_platform, ceiling=60, job_seconds=40))
    extends = fake_platform.events_of("extend")
    stop = fake_platform.events_of("stop")
    assert len(extends) >= 2, extends  # 10 min to begin with, 30 min at a time
    # Never past the hour's ceiling but by the platform's 30-minute minimum, and only by the last step.
    ceiling = times["began"] + 60 + 10  # the agent counts its awake time from when it first saw the job
    assert all(e["until"] <= ceiling + 30 for e in extends), (times, extends)
    assert all(e["until"] <= ceiling for e in extends[:-1]), (times, extends)
    assert [e for e in extends if e["t"] > times["released"]] == []
    assert len(stop) == 1 and stop[0]["reason"] == "autostop"
    assert stop[0]["at"] == pytest.approx(extends[-1]["until"], abs=0.01)  # its own deadline, the last one asked
    assert stop[0]["at"] > times["began"] + 40  # the job was never cut short
    assert fake_platform.events_of("start") == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_extensions_stop_at_the_awake_ceiling(sshd, app_home, agent_bundle, fake_platform) -> None:
    """A job longer than the (advisory) ceiling: the workspace stops at the ceiling, passed by at most the
    platform's 30-minute minimum step."""
    workspace(fake_platform, sshd, "running", ttl=20.0, bump=0.0)
    times = asyncio.run(run_busy(app_home, agent_bundle, sshd, fake_platform, ceiling=30, job_seconds=90))
    extends = fake_platform.events_of("extend")
    stop = fake_platform.events_of("stop")
    assert extends and all(e["until"] <= times["began"] + 30 + 30 for e in extends), (times, extends)
    assert len(stop) == 1 and stop[0]["at"] < times["began"] + 90  # stopped under the job: the ceiling held
    assert [e for e in extends if e["t"] > times["released"]] == []


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_an_unanswered_ask_stops_it_at_the_deadline_after_the_prompts(sshd, app_home, agent_bundle,
                                                                      fake_platform) -> None:
    workspace(fake_platform, sshd, "running", ttl=20.0, bump=0.0)
    times = asyncio.run(run_busy(app_home, agent_bundle, sshd, fake_platform, ceiling=30, job_seconds=120, ask=True))
    extends = fake_platform.events_of("extend")
    stop = fake_platform.events_of("stop")
    prompt_deadline = times["began"] + 30 + 30
    assert len(stop) == 1
    assert prompt_deadline - 3 <= stop[0]["at"] <= prompt_deadline + 30 + 3, (times, stop, extends)
    assert stop[0]["at"] == pytest.approx(extends[-1]["until"], abs=0.01)
    assert [e for e in extends if e["t"] > times["released"]] == []


def test_the_next_start_does_not_open_a_session_on_a_workspace_let_go_while_idle(sshd, app_home, agent_bundle,
                                                                                 fake_platform) -> None:
    """The app starting again is a background connect: a workspace it let go of while idle, used by nobody since,
    is not connected to (a session would push its deadline); once someone uses it, it is."""
    workspace(fake_platform, sshd, "running", ttl=600.0, bump=10.0)

    async def first_run() -> None:
        engine = engine_for(app_home, agent_bundle, sshd)
        session = engine.session("ws1")
        session.start(wake=False, unknown=False)
        await wait_until_let_go(session, 60, "the session let go")
        await asyncio.sleep(0.5)  # the engine's record written
        await engine.close()

    async def next_run() -> None:
        engine = engine_for(app_home, agent_bundle, sshd)
        session = engine.session("ws1")
        session.start(wake=False, unknown=False)
        await wait_until(lambda: session.connection.state is ConnectionState.RELEASED, 10, "let go at once")
        assert len(fake_platform.events_of("session_open")) == 1
        await asyncio.sleep(RULES.outside_use_grace_seconds + 1)
        fake_platform.use("ws1")
        await wait_until(lambda: len(fake_platform.events_of("session_open")) == 2, 10, "a connect after the use")
        await engine.close()

    asyncio.run(first_run())
    asyncio.run(next_run())
    assert fake_platform.events_of("start") == []


@pytest.mark.parametrize("ground", ["not installed", "not logged in", "hanging", "too old", "garbage",
                                    "newer fields"])
def test_bad_ground_is_a_clear_row_never_a_traceback_and_never_a_start(sshd, app_home, agent_bundle, fake_platform,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      ground: str) -> None:
    """The CLI missing, not logged in, hanging, older than --disable-autostart, answering something else, or
    answering a newer Coder's JSON: the row says what is wrong in words (or, for a newer CLI, just works), and
    nothing starts the workspace or opens a session the app cannot account for."""
    import os

    from workroom.providers import platform_cli

    workspace(fake_platform, sshd, "running", ttl=600.0, bump=0.0)
    expected = {"not installed": "`coder` is not installed", "not logged in": "You are not logged in",
                "hanging": "gave no answer within 1 s", "too old": "The coder CLI is too old",
                "garbage": "its answer is not JSON", "newer fields": None}[ground]
    if ground == "not installed":
        monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                                   if not (Path(p) / "coder").exists()))
    elif ground == "not logged in":
        fake_platform.set(logged_in=False)
    elif ground == "hanging":
        monkeypatch.setattr(platform_cli, "CLI_TIMEOUT_SECONDS", 1.0)
        monkeypatch.setattr("workroom.providers.coder.CLI_TIMEOUT_SECONDS", 1.0)
        fake_platform.set(hang=True)
    elif ground == "too old":
        fake_platform.set(old_coder=True)
    elif ground == "garbage":
        fake_platform.set(garbage="<html>502 Bad Gateway</html>")
    else:  # a newer Coder: fields and a nested shape this app has never seen, around the ones it reads
        box = fake_platform.box("ws1")
        from fixtures.fake_platforms import coder_workspace

        row = coder_workspace(box)
        row["latest_build"]["has_ai_task"] = {"prompt": None}
        row["automatic_updates"] = "always"
        fake_platform.set(garbage=json.dumps([row]))

    async def go() -> str:
        engine = engine_for(app_home, agent_bundle, sshd)
        session = engine.session("ws1")
        try:
            await session.connect(timeout=30)
        except UserError as error:
            return str(error)
        finally:
            snap = session.snapshot()
            await engine.close()
        return f"{snap.connection.state.value}: {snap.badge().tooltip}"

    said = asyncio.run(go())
    assert "Traceback" not in said
    if expected is None:
        assert said.startswith(("live", "quiet", "released")), said
    else:
        assert expected in said, said
    assert fake_platform.events_of("start") == []
    if ground != "newer fields":
        assert fake_platform.events_of("session_open") == []
