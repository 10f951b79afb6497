"""A session keeps a link only when the agent behind it proves who it is (remote/agent_proof.py): the real agent
code in this process (stand_in), reached on its real socket; the host's shell, which cannot run here, answers the
probe as the host would, or, for the test, with a key that is not the agent's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from unit.sessions.stand_in import InProcessAgent, ScriptedProvider, UpToDateShell, stand_in_context
from workroom.core.ceiling import CeilingSettings
from workroom.core.connection import ConnectionState
from workroom.core.errors import UserError
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.hosts import Host
from workroom.core.traits import SSH_TRAITS
from workroom.remote.host_shell import ExecResult, HostShell
from workroom.sessions.host_session import HostSession

pytestmark = pytest.mark.unit

HOST = Host(name="box", provider="ssh", address="box.example")
FORGED = "1" * 64


@pytest.fixture
def agent() -> Iterator[InProcessAgent]:
    running = InProcessAgent()
    yield running
    running.close()


class ForgedKeyShell(UpToDateShell):
    """The probe's answer names a key that is not the agent's (what the app would hold for an impostor's socket)."""

    def run(self, cmd: str, *, input: bytes | None = None, timeout: float = 30.0, **kw: Any) -> ExecResult:
        answer = json.loads(super().run(cmd, input=input, timeout=timeout, **kw).stdout)
        answer["key"] = FORGED
        return ExecResult(0, json.dumps(answer).encode() + b"\n", b"")


class ForgingProvider(ScriptedProvider):
    def open_shell(self, host: Host) -> HostShell:
        assert self.agent is not None
        return ForgedKeyShell(self.agent.socket_path)


def test_a_proven_agent_is_live_and_its_events_reach_the_session(tmp_path: Path, agent: InProcessAgent) -> None:
    async def scenario() -> None:
        session = HostSession(HOST, ScriptedProvider(stand_in_context(tmp_path), SSH_TRAITS, agent=agent),
                              CeilingSettings())
        snap = await session.connect(timeout=10)
        assert snap.connection.state in (ConnectionState.LIVE, ConnectionState.QUIET)
        assert snap.status is not None and snap.status.proof is None  # checked, then dropped
        await session.close()

    asyncio.run(asyncio.wait_for(scenario(), 30))


def test_an_agent_that_cannot_prove_who_it_is_is_not_believed(tmp_path: Path, agent: InProcessAgent) -> None:
    async def scenario() -> None:
        session = HostSession(HOST, ForgingProvider(stand_in_context(tmp_path), SSH_TRAITS, agent=agent),
                              CeilingSettings(), auto_reconnect=False)
        seen: list[HostSnapshot] = []
        session.listeners.append(seen.append)
        with pytest.raises(UserError) as refused:
            await session.connect(timeout=10)
        assert refused.value.title == "The agent did not prove who it is"
        assert agent.socket_path in refused.value.message and agent.socket_path in refused.value.hint
        assert all(s.status is None for s in seen), "a status from an agent that did not prove itself was shown"
        after = session.snapshot().connection
        assert not after.spec.live and after.error is not None and after.error.title == refused.value.title
        await session.close()

    asyncio.run(asyncio.wait_for(scenario(), 30))
