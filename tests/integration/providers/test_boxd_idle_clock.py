"""boxd's idle clock read back through its command line, and the proof loop judging it.

The real boxd CLI talks to a cloud account and cannot run here, so a stand-in `boxd` script on PATH answers
`boxd machine status NAME --json` with the idle time the test writes into a file (the fields docs/providers.md
names). Everything else — the provider, the proof loop, the judging — is the real code.
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
from pathlib import Path

import pytest
from workroom.agent_bundle import AgentBundle
from workroom.core.heartbeat_proof import HeartbeatProof, ProofState
from workroom.core.hosts import Host
from workroom.paths import app_paths
from workroom.providers import make_provider
from workroom.providers.base import ProviderContext
from workroom.sessions.heartbeat_watch import HeartbeatWatch

pytestmark = pytest.mark.integration

HOST = Host(name="m1", provider="boxd", address="m1.example", reference={"machine": "m1"})


@pytest.fixture
def answer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file whose JSON the stand-in prints; every call is logged beside it."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    reply = tmp_path / "reply.json"
    script = bindir / "boxd"
    script.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path / "calls"}\ncat {reply}\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return reply


def _context(tmp_path: Path) -> ProviderContext:
    paths = app_paths({"WORKROOM_HOME": str(tmp_path / "home")}).ensure()
    return ProviderContext(bundle=AgentBundle(b"x", "0" * 64, "0.0.0"), known_hosts=None, state_dir=paths.state_dir)


@pytest.mark.parametrize(("reply", "idle", "window"), [
    ({"state": "running", "idle_seconds": 12.5, "idle_window_seconds": 120}, 12.5, 120),
    ({"state": "running", "idle_seconds": 3}, 3, None),
    ({"state": "running"}, None, None),  # no idle time reported: cannot be read
    ({"state": "hibernated", "idle_seconds": 500}, None, None),  # asleep: nothing to confirm
    ({"state": "running", "idle_seconds": -4}, None, None),  # nonsense is not a reading
])
def test_idle_clock_from_the_boxd_cli(tmp_path: Path, answer: Path, reply: dict[str, object],
                                      idle: float | None, window: float | None) -> None:
    answer.write_text(json.dumps(reply))
    reading = asyncio.run(make_provider("boxd", _context(tmp_path)).read_idle_clock(HOST))
    if idle is None:
        assert reading is None
    else:
        assert reading is not None and (reading.idle_seconds, reading.window_seconds) == (idle, window)
    assert (tmp_path / "calls").read_text().split() == ["machine", "status", "m1", "--json"]


def test_the_proof_loop_confirms_then_notices_the_clock_running_away(tmp_path: Path, answer: Path) -> None:
    provider = make_provider("boxd", _context(tmp_path))
    answer.write_text(json.dumps({"state": "running", "idle_seconds": 0.5, "idle_window_seconds": 60}))
    proofs: list[HeartbeatProof] = []

    async def scenario() -> None:
        watch = HeartbeatWatch(lambda: provider.read_idle_clock(HOST), interval_seconds=4.0, window_seconds=60,
                               own_traffic_at=lambda: None, on_proof=proofs.append)
        try:
            # The first reads show a reset from before the watch began: not evidence yet (unconfirmed). Once the
            # clock shows a reset after the start (the stand-in keeps answering 0.5 s), it is confirmed.
            for _ in range(150):
                if proofs and proofs[-1].state is ProofState.CONFIRMED:
                    break
                await asyncio.sleep(0.05)
            assert proofs[0].state is ProofState.UNCONFIRMED
            assert proofs[-1].state is ProofState.CONFIRMED
            answer.write_text(json.dumps({"state": "running", "idle_seconds": 41, "idle_window_seconds": 60}))
            for _ in range(200):  # the next read is due within interval + margin (7.4 s)
                if proofs[-1].state is ProofState.NOT_SEEN:
                    break
                await asyncio.sleep(0.05)
            assert proofs[-1].state is ProofState.NOT_SEEN
            assert proofs[-1].why == "The provider is not seeing the heartbeat (idle 41 s of a 60 s window)."
        finally:
            watch.stop()

    asyncio.run(scenario())
    calls = (tmp_path / "calls").read_text().splitlines()
    # few reads: about one a second (a quarter interval) until confirmed, then one as the limit came due
    assert 3 <= len(calls) <= 7, calls


def test_a_provider_without_an_idle_clock_is_unconfirmed(tmp_path: Path) -> None:
    proofs: list[HeartbeatProof] = []
    provider = make_provider("ssh", _context(tmp_path))

    async def scenario() -> None:
        watch = HeartbeatWatch(lambda: provider.read_idle_clock(HOST), interval_seconds=4.0, window_seconds=None,
                               own_traffic_at=lambda: None, on_proof=proofs.append)
        await asyncio.sleep(0.2)
        watch.stop()

    asyncio.run(scenario())
    assert [p.state for p in proofs] == [ProofState.UNCONFIRMED]
    assert proofs[0].confirmed is None and "does not let the app read its idle clock" in proofs[0].why


@pytest.mark.parametrize(("agent_says", "expected"), [
    (True, ProofState.CONFIRMED),  # it sent a heartbeat when the provider saw activity
    (False, ProofState.UNCONFIRMED),  # it answered, but the activity was something else (a job's traffic)
    (None, None),  # no answer: frozen; the watch ends (the session closes the link)
])
def test_a_reset_is_confirmed_only_when_the_agent_says_it_was_its_heartbeat(
        tmp_path: Path, answer: Path, agent_says: bool | None, expected: ProofState | None) -> None:
    """The clock shows a reset nothing of ours explains; the agent is asked once per reset, and its answer
    decides (a reset from the box's own traffic proves nothing about the agent)."""
    provider = make_provider("boxd", _context(tmp_path))
    answer.write_text(json.dumps({"state": "running", "idle_seconds": 0.5, "idle_window_seconds": 60}))
    proofs: list[HeartbeatProof] = []
    asked: list[float | None] = []

    async def confirm(proof: HeartbeatProof) -> bool | None:
        asked.append(proof.last_seen_at)
        return agent_says

    async def scenario() -> None:
        watch = HeartbeatWatch(lambda: provider.read_idle_clock(HOST), interval_seconds=4.0, window_seconds=60,
                               own_traffic_at=lambda: None, on_proof=proofs.append, confirm=confirm)
        try:
            for _ in range(100):
                if asked and (watch.task.done() or len(proofs) >= 3):
                    break
                await asyncio.sleep(0.05)
        finally:
            watch.stop()

    asyncio.run(scenario())
    assert asked, proofs
    if expected is None:
        assert not [p for p in proofs if p.state is ProofState.CONFIRMED]
    else:
        assert proofs[-1].state is expected, proofs
        if expected is ProofState.UNCONFIRMED:
            assert "was not the agent's heartbeat" in proofs[-1].why
