"""boxd reads a machine's state from the `boxd` command line, so a background look never wakes it.

The real boxd CLI talks to a cloud account and cannot run here, so these tests put a stand-in `boxd`
script on PATH that answers `boxd machine status NAME --json` the way the real one documents. Everything
else (the session, its decisions) is the real code.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest
from workroom.agent_bundle import AgentBundle
from workroom.core.ceiling import CeilingSettings
from workroom.core.connection import ConnectionState
from workroom.core.hosts import Host
from workroom.paths import app_paths
from workroom.providers import make_provider
from workroom.providers.base import BoxState, Provider, ProviderContext, ProviderUnreadable
from workroom.providers.ssh_family import parse_boxd_state
from workroom.sessions.host_session import HostSession

pytestmark = pytest.mark.integration


def _stand_in(tmp_path: Path, body: str) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    script = bindir / "boxd"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bindir


def _provider(tmp_path: Path) -> Provider:
    paths = app_paths({"WORKROOM_HOME": str(tmp_path / "home")}).ensure()
    return make_provider("boxd", ProviderContext(bundle=AgentBundle(b"x", "0" * 64, "0.0.0"), known_hosts=None,
                                        state_dir=paths.state_dir))


@pytest.mark.parametrize(("answer", "expected"), [
    ('{"name": "m1", "state": "hibernated"}', BoxState.ASLEEP),
    ('{"name": "m1", "state": "running"}', BoxState.AWAKE),
    ('{"name": "m1", "state": "provisioning"}', "it says the machine is 'provisioning', neither awake nor asleep"),
    ("not json at all", "did not answer with a machine's status"),
])
def test_box_state_from_the_boxd_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str,
                                     expected: BoxState | str) -> None:
    """Awake or asleep as boxd says; anything else is "could not read the provider", with why, never a guess."""
    log = tmp_path / "calls"
    bindir = _stand_in(tmp_path, f'echo "$@" >> {log}\necho \'{answer}\'\n')
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    host = Host(name="m1", provider="boxd", address="m1.example", reference={"machine": "m1"})
    if isinstance(expected, BoxState):
        assert asyncio.run(_provider(tmp_path).box_state(host)) is expected
    else:
        with pytest.raises(ProviderUnreadable) as unreadable:
            asyncio.run(_provider(tmp_path).box_state(host))
        assert expected in unreadable.value.message
    assert log.read_text().split() == ["machine", "status", "m1", "--json"]


def test_no_boxd_cli_means_unreadable_never_a_guess(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    host = Host(name="m1", provider="boxd", address="m1.example")
    with pytest.raises(ProviderUnreadable, match="not installed"):
        asyncio.run(_provider(tmp_path).box_state(host))


def test_a_hibernated_box_is_shown_asleep_and_not_connected_to(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The app's start-up connect reads the state first and leaves a sleeping box asleep: no SSH at all."""
    bindir = _stand_in(tmp_path, "echo '{\"state\": \"hibernated\"}'\n")
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    provider = _provider(tmp_path)
    opened: list[str] = []

    def no_ssh(host: Host):  # type: ignore[no-untyped-def]
        opened.append(host.name)
        raise AssertionError("the app must not open SSH to a sleeping box just to look")

    provider.open_shell = no_ssh  # type: ignore[method-assign]
    host = Host(name="m1", provider="boxd", address="203.0.113.7", reference={"machine": "m1"})

    async def go() -> ConnectionState:
        session = HostSession(host, provider, CeilingSettings(), auto_reconnect=False)
        states: list[ConnectionState] = []
        session.listeners.append(lambda s: states.append(s.connection.state))
        session.start(wake=False)
        for _ in range(100):
            if ConnectionState.ASLEEP in states:
                break
            await asyncio.sleep(0.05)
        await session.close()
        return ConnectionState.ASLEEP if ConnectionState.ASLEEP in states else states[-1]

    assert asyncio.run(go()) is ConnectionState.ASLEEP
    assert opened == []


def test_parse_boxd_state_is_total() -> None:
    for raw in (b"", b"[]", b"null", b'{"state": 5}', b"\xff\xfe"):
        assert parse_boxd_state(raw) is BoxState.UNKNOWN
