"""HostSession's state machine alone: asleep, would-wake, fatal, back-off and quiet mode, without sshd.

The provider is `stand_in.ScriptedProvider` (a scripted shell; the real agent code in this process).
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from unit.sessions.stand_in import InProcessAgent, ScriptedProvider, stand_in_context
from workroom.core.ceiling import CeilingSettings
from workroom.core.connection import ConnectionState
from workroom.core.errors import UserError
from workroom.core.exception_names import shows_exception_name
from workroom.core.heartbeat_proof import IdleClockReading, ProofState
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.hosts import Host
from workroom.core.keepawake import KeepAwakeEnd, PollOutcome
from workroom.core.protocol import Verdict
from workroom.core.questions import SecretRequest
from workroom.core.traits import BOXD_TRAITS, REQUEST_METERED_TRAITS, SSH_TRAITS
from workroom.providers.base import BoxState
from workroom.remote import agent_client
from workroom.remote.agent_client import AgentClient
from workroom.remote.host_keys import ChangedHostKey, HostKeyChanged
from workroom.remote.host_shell import ExecResult, HostShell
from workroom.remote.ssh_connection import AuthFailed, HostUnreachable
from workroom.sessions import host_session, liveness, reconnect_rules
from workroom.sessions.host_session import HostSession
from wr_agent.heartbeat import Heartbeat
from wr_agent.signals import Signals

pytestmark = pytest.mark.unit

HOST = Host(name="box", provider="ssh", address="box.example")
BUSY = Signals(cpu=[("job", "5", 1.0)])


@pytest.fixture
def agent() -> Iterator[InProcessAgent]:
    running = InProcessAgent()
    yield running
    running.close()


class Recorder:
    """Every snapshot the session publishes, in order."""

    def __init__(self, session: HostSession) -> None:
        self.snaps: list[HostSnapshot] = []
        session.listeners.append(self.snaps.append)

    @property
    def states(self) -> list[ConnectionState]:
        out: list[ConnectionState] = []
        for snap in self.snaps:
            if not out or out[-1] is not snap.connection.state:
                out.append(snap.connection.state)
        return out


async def until(check: Callable[[], Any], seconds: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {seconds} s: {check.__doc__ or check}")
        await asyncio.sleep(0.01)


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


def session_for(provider: ScriptedProvider) -> HostSession:
    return HostSession(HOST, provider, CeilingSettings())


def unreachable() -> HostUnreachable:
    return HostUnreachable("Connection refused", "box.example:22 refused the connection.", "Is sshd running?")


def test_a_box_asleep_is_left_asleep_by_a_background_start(tmp_path: Path, agent: InProcessAgent) -> None:
    async def scenario() -> None:
        provider = ScriptedProvider(stand_in_context(tmp_path), BOXD_TRAITS, box=BoxState.ASLEEP, agent=agent)
        session = session_for(provider)
        seen = Recorder(session)
        session.start()
        await until(lambda: session.connection.state is ConnectionState.ASLEEP)
        await asyncio.sleep(0.1)
        assert provider.shell_attempts == 0, "a background start must not wake the box"
        assert seen.states == [ConnectionState.ASLEEP]
        # A connect without an explicit wake answers "asleep" and leaves the box alone ...
        snap = await session.connect(timeout=10)
        assert snap.connection.state is ConnectionState.ASLEEP and provider.shell_attempts == 0
        # ... the user's explicit wake ("Wake and connect", --wake) wakes it (and the wake is timed).
        snap = await session.connect(timeout=10, wake=True)
        assert snap.connection.state in (ConnectionState.LIVE, ConnectionState.QUIET)
        assert provider.shell_attempts == 1 and snap.connection.wake_seconds is not None
        await session.close()

    run(scenario())


@pytest.mark.parametrize("traits", [REQUEST_METERED_TRAITS, SSH_TRAITS], ids=["request-metered", "ssh"])
def test_every_providers_word_on_the_box_is_asked(tmp_path: Path, agent: InProcessAgent, traits: Any) -> None:
    """box_state is part of every provider's contract: a provider that says ASLEEP is heard whatever its traits
    (it was asked only when a trait said so, a trap for the next provider that could read the state)."""
    async def scenario() -> None:
        provider = ScriptedProvider(stand_in_context(tmp_path), traits, box=BoxState.ASLEEP, agent=agent)
        session = session_for(provider)
        session.start()
        await until(lambda: session.connection.state is ConnectionState.ASLEEP)
        assert provider.box_reads >= 1 and provider.shell_attempts == 0
        await session.close()

    run(scenario())


def test_a_sleepable_box_of_unknown_state_is_not_woken(tmp_path: Path) -> None:
    async def scenario() -> None:
        provider = ScriptedProvider(stand_in_context(tmp_path), BOXD_TRAITS, box=BoxState.UNKNOWN)
        session = session_for(provider)
        session.start()
        await until(lambda: session.failure is not None)
        assert session.connection.state is ConnectionState.DISCONNECTED
        assert session.connection.error is not None and "would wake" in session.connection.error.message
        await asyncio.sleep(0.1)
        assert provider.shell_attempts == 0
        await session.close()

    run(scenario())


def test_a_changed_host_key_is_fatal_and_never_retried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reconnect_rules, "BACKOFF_SECONDS", (0.01,))
    change = ChangedHostKey("box.example", 22, "ssh-ed25519", "SHA256:new", ("SHA256:old",), (tmp_path / "kh",))

    async def scenario() -> None:
        provider = ScriptedProvider(stand_in_context(tmp_path), SSH_TRAITS, shell_failures=[HostKeyChanged(change)])
        session = session_for(provider)
        with pytest.raises(HostKeyChanged):
            await session.connect(timeout=10)
        await asyncio.sleep(0.2)
        assert session.connection.state is ConnectionState.ERROR
        assert provider.shell_attempts == 1, "reconnecting cannot fix a changed key"
        await session.close()

    run(scenario())


def test_a_refused_secret_is_forgotten_and_the_login_is_fatal(tmp_path: Path) -> None:
    forgotten: list[SecretRequest] = []
    wrong = SecretRequest.passphrase("/home/dev/.ssh/id_ed25519")
    refused = AuthFailed("Login refused", "box.example did not accept the passphrase.", "", rejected_secret=wrong)

    async def scenario() -> None:
        provider = ScriptedProvider(stand_in_context(tmp_path, forgotten.append), SSH_TRAITS,
                                    shell_failures=[refused])
        session = session_for(provider)
        with pytest.raises(AuthFailed):
            await session.connect(timeout=10)
        assert session.connection.state is ConnectionState.ERROR
        await session.close()

    run(scenario())
    assert forgotten == [wrong]


def test_an_unreachable_host_is_retried_with_growing_back_off(tmp_path: Path, agent: InProcessAgent,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reconnect_rules, "BACKOFF_SECONDS", (0.05, 0.2))

    async def scenario() -> None:
        provider = ScriptedProvider(stand_in_context(tmp_path), SSH_TRAITS, agent=agent,
                                    shell_failures=[unreachable(), unreachable(), unreachable()])
        session = session_for(provider)
        seen = Recorder(session)
        session.start()
        await until(lambda: session.connection.state is ConnectionState.LIVE)
        assert provider.shell_attempts == 4
        waits = [round(s.connection.retry_at_monotonic - s.connection.since_monotonic, 2) for s in seen.snaps
                 if s.connection.state is ConnectionState.BACKING_OFF and s.connection.retry_at_monotonic]
        assert waits == [0.05, 0.2, 0.2], "each retry waits longer, up to the last step"
        assert seen.states[:3] == [ConnectionState.CONNECTING, ConnectionState.LOST, ConnectionState.BACKING_OFF]
        assert session.connection.error is None, "a success clears the last error"
        await session.close()

    run(scenario())


def test_a_sleepable_box_is_not_retried_when_its_state_cannot_be_read(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reconnect_rules, "BACKOFF_SECONDS", (0.01,))

    async def scenario() -> None:
        provider = ScriptedProvider(stand_in_context(tmp_path), BOXD_TRAITS, box=BoxState.UNKNOWN,
                                    shell_failures=[unreachable(), unreachable()])
        session = session_for(provider)
        with pytest.raises(HostUnreachable):
            await session.connect(timeout=10)
        await asyncio.sleep(0.2)
        assert session.connection.state is ConnectionState.LOST
        assert provider.shell_attempts == 1, "a reconnect could wake the box: the user's call"
        await session.close()

    run(scenario())


class NoPythonShell:
    """A host whose login shell has no python3: the installer's probe exits 127 saying so."""

    def run(self, cmd: str, *, input: bytes | None = None, timeout: float = 30.0, **kw: Any) -> ExecResult:
        return ExecResult(127, b"", b"wr: no python3\n")

    def put_file(self, data: bytes, remote_path: str, *, mode: int = 0o600) -> int:
        raise AssertionError("nothing is pushed to a host without Python")

    def close(self) -> None:
        pass


class NoPythonProvider(ScriptedProvider):
    def open_shell(self, host: Host) -> HostShell:
        self.shell_attempts += 1
        return NoPythonShell()


def test_a_host_without_python_is_not_retried_even_while_its_box_reads_awake(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every try is a login on the box's network: knocking again and again would keep a sleepable box up."""
    monkeypatch.setattr(reconnect_rules, "BACKOFF_SECONDS", (0.01,))

    async def scenario() -> None:
        provider = NoPythonProvider(stand_in_context(tmp_path), BOXD_TRAITS, box=BoxState.AWAKE)
        session = session_for(provider)
        session.start(wake=True)
        await until(lambda: session.connection.state is ConnectionState.ERROR)
        await asyncio.sleep(0.5)
        assert provider.shell_attempts == 1, f"tried {provider.shell_attempts} times"
        assert session.connection.state is ConnectionState.ERROR
        assert session.failure is not None and session.failure.title == "No Python on the host"
        await session.close()

    run(scenario())


def test_after_the_users_connect_a_reconnect_never_wakes_the_box(tmp_path: Path, agent: InProcessAgent,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The user's Connect may wake the box; a reconnect after a loss is the app's doing and may not."""
    monkeypatch.setattr(reconnect_rules, "BACKOFF_SECONDS", (0.01,))

    async def scenario() -> None:
        provider = ScriptedProvider(stand_in_context(tmp_path), BOXD_TRAITS, box=BoxState.AWAKE, agent=agent)
        session = session_for(provider)
        await session.connect(timeout=10)
        assert provider.shell_attempts == 1
        reads = provider.box_reads
        assert session._rt.link is not None
        session._rt.link.close("cut")  # the link is lost while the box still reads awake ...
        await until(lambda: provider.box_reads > reads)
        provider.box = BoxState.ASLEEP  # ... and it falls asleep before the reconnect
        await until(lambda: session.connection.state is ConnectionState.ASLEEP)
        await asyncio.sleep(0.2)
        assert provider.shell_attempts == 1, "the reconnect woke the sleeping box"
        await session.close()

    run(scenario())


def test_a_bug_while_connecting_reaches_the_user_in_plain_words(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """What the bug was goes to the log; the row and the CLI say what happened and what to do."""
    monkeypatch.setattr(reconnect_rules, "BACKOFF_SECONDS", (0.01,))

    async def scenario() -> None:
        provider = ScriptedProvider(stand_in_context(tmp_path), SSH_TRAITS,
                                    shell_failures=[KeyError("slot"), KeyError("slot")])
        session = session_for(provider)
        session.start()
        await until(lambda: session.failure is not None)
        failure = session.failure
        assert failure is not None and failure.title == "Something went wrong"
        assert not shows_exception_name(str(failure)), str(failure)
        assert "KeyError" not in str(failure) and HOST.name in failure.message
        await session.close()

    run(scenario())


class IdleClockProvider(ScriptedProvider):
    """A network-metered box whose provider lets its idle clock be read: `heartbeat_seen` decides whether the
    reading shows the keep-awake (reset a moment ago) or a clock long past the limit."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.heartbeat_seen = True

    async def read_idle_clock(self, host: Host) -> IdleClockReading | None:
        return IdleClockReading(idle_seconds=0.2 if self.heartbeat_seen else 500.0, window_seconds=3600.0,
                                read_at=time.monotonic())


def _freeze(agent: InProcessAgent) -> None:
    """The agent's service thread stops; its sockets stay open and unread (a link that died silently)."""
    agent._stop.set()
    agent.server.wake()
    agent._thread.join(5)


@pytest.mark.parametrize("link_alive", [True, False])
def test_before_saying_not_kept_awake_the_link_is_checked(tmp_path: Path, agent: InProcessAgent,
                                                          monkeypatch: pytest.MonkeyPatch, link_alive: bool) -> None:
    """No pings run while the proof is read; a link that died silently would leave the job's BUSY showing and
    the end of the job would read as a missed heartbeat. One ping decides: a live link shows "not seen", a
    dead one is a loss (and no false "busy but not kept awake")."""
    monkeypatch.setattr(liveness, "PING_TIMEOUT_SECONDS", 0.5)
    agent.agent.heartbeat = Heartbeat(interval=4.0, target=("127.0.0.1", 9))  # loopback discard port

    async def scenario() -> None:
        provider = IdleClockProvider(stand_in_context(tmp_path), BOXD_TRAITS, box=BoxState.AWAKE, agent=agent)
        session = HostSession(HOST, provider, CeilingSettings(), auto_reconnect=False)
        seen = Recorder(session)
        await session.connect(timeout=10)
        agent.tick(BUSY)
        await until(lambda: session.connection.heartbeat_proof is not None)
        if not link_alive:
            _freeze(agent)
        provider.heartbeat_seen = False
        if link_alive:
            await until(lambda: session.connection.heartbeat_proof is not None
                        and session.connection.heartbeat_proof.state is ProofState.NOT_SEEN, 8)
            assert session.connection.state in (ConnectionState.LIVE, ConnectionState.QUIET)
        else:
            await until(lambda: session.connection.state is ConnectionState.LOST, 8)
            proofs = [s.connection.heartbeat_proof for s in seen.snaps if s.connection.heartbeat_proof]
            assert all(p.state is not ProofState.NOT_SEEN for p in proofs), "a dead link read as a missed heartbeat"
        await session.close()

    run(scenario())


@pytest.fixture
def pings(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The loop times of the session's pings to its agent (real pings, counted; sent every 0.02 s)."""
    monkeypatch.setattr(liveness, "PING_INTERVAL_SECONDS", 0.02)
    sent: list[float] = []
    real_ping = AgentClient.ping

    async def counted_ping(self: AgentClient, timeout: float) -> float:
        sent.append(asyncio.get_running_loop().time())
        return await real_ping(self, timeout)

    monkeypatch.setattr(AgentClient, "ping", counted_ping)
    return sent


def test_quiet_mode_sends_no_pings_while_a_sleepable_box_is_idle(tmp_path: Path, agent: InProcessAgent,
                                                                 pings: list[float]) -> None:
    async def scenario() -> None:
        provider = ScriptedProvider(stand_in_context(tmp_path), BOXD_TRAITS, box=BoxState.AWAKE, agent=agent)
        session = session_for(provider)
        snap = await session.connect(timeout=10)
        assert snap.connection.state is ConnectionState.QUIET
        await asyncio.sleep(0.3)
        assert pings == [], "an idle sleepable box hears nothing from us"
        agent.tick(BUSY)
        await until(lambda: session.connection.state is ConnectionState.LIVE)
        await until(lambda: len(pings) >= 3, 3.0)  # busy: the peer is watched
        agent.tick(Signals())
        await until(lambda: session.connection.state is ConnectionState.QUIET)
        await asyncio.sleep(0.05)  # a ping already in flight finishes
        quiet_since = len(pings)
        await asyncio.sleep(0.3)
        assert len(pings) == quiet_since
        await session.close()

    run(scenario())


def test_a_host_that_never_sleeps_is_watched_even_when_idle(tmp_path: Path, agent: InProcessAgent,
                                                             pings: list[float]) -> None:
    async def scenario() -> None:
        provider = ScriptedProvider(stand_in_context(tmp_path), SSH_TRAITS, agent=agent)
        session = session_for(provider)
        snap = await session.connect(timeout=10)
        assert snap.connection.state is ConnectionState.LIVE and snap.status is not None
        assert snap.status.verdict.value == "IDLE"
        await until(lambda: len(pings) >= 3, 3.0)
        await session.close()

    run(scenario())


class MeteredProvider(ScriptedProvider):
    """A request-metered stand-in: `poll_health` answers "busy" and counts (no provider proxy runs here)."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.polls = 0

    async def poll_health(self, host: Host) -> PollOutcome:
        self.polls += 1
        return PollOutcome.busy()


def test_a_request_metered_box_is_kept_awake_from_outside_while_busy(tmp_path: Path, agent: InProcessAgent) -> None:
    async def scenario() -> None:
        traits = REQUEST_METERED_TRAITS.with_idle_window(0.6)  # polls every 0.2 s
        provider = MeteredProvider(stand_in_context(tmp_path), traits, box=BoxState.AWAKE, agent=agent)
        session = session_for(provider)
        await session.connect(timeout=10)
        await asyncio.sleep(0.3)
        assert provider.polls == 0, "an idle box is left to its provider's timer"
        agent.tick(BUSY)
        await until(lambda: provider.polls >= 2 and session.connection.keepawake_running)
        await session.disconnect()
        await until(lambda: not session.connection.keepawake_running)
        assert session.keepawake_report is not None and session.keepawake_report.ended is KeepAwakeEnd.STOPPED
        polls = provider.polls
        await asyncio.sleep(0.5)
        assert provider.polls == polls, "a box the user let go of is never polled (that would resume it)"
        await session.close()

    run(scenario())


async def busy_metered(tmp_path: Path, agent: InProcessAgent,
                       ceiling: CeilingSettings | None = None) -> tuple[MeteredProvider, HostSession]:
    """A request-metered box (polled every 0.2 s) whose agent says BUSY, its outside keep-awake polling."""
    traits = REQUEST_METERED_TRAITS.with_idle_window(0.6)
    provider = MeteredProvider(stand_in_context(tmp_path), traits, box=BoxState.AWAKE, agent=agent)
    session = HostSession(HOST, provider, ceiling or CeilingSettings())
    await session.connect(timeout=10)
    agent.tick(BUSY)
    await until(lambda: provider.polls >= 2 and session.connection.keepawake_running)
    return provider, session


async def no_more_polls(provider: MeteredProvider, after: str) -> None:
    polls = provider.polls
    await asyncio.sleep(0.6)  # three intervals
    assert provider.polls == polls, f"{provider.polls - polls} request(s) through the meter after {after}"


def test_the_outside_keep_awake_stops_when_the_agent_says_idle(tmp_path: Path, agent: InProcessAgent) -> None:
    """IDLE heard over the link ends the polling at once: one more request through the meter is billed time."""
    async def scenario() -> None:
        provider, session = await busy_metered(tmp_path, agent)
        agent.tick(Signals())  # the job ended (no hold in this agent)
        await until(lambda: session.status is not None and session.status.verdict is Verdict.IDLE)
        await no_more_polls(provider, "IDLE")
        assert not session.connection.keepawake_running
        report = session.keepawake_report
        assert report is not None and report.ended is KeepAwakeEnd.NO_LONGER_BUSY, report
        await session.close()

    run(scenario())


def test_the_outside_keep_awake_stops_when_the_user_lets_a_busy_box_sleep(tmp_path: Path,
                                                                           agent: InProcessAgent) -> None:
    """"Let it sleep" on a busy request-metered box while the job runs on: no request goes through the meter after
    the answer (each one moves its idle clock: polling on would keep it up against the user's word)."""
    from workroom.core.protocol import Method

    async def scenario() -> None:
        provider, session = await busy_metered(tmp_path, agent)
        await session.call(Method.LET_SLEEP)
        await until(lambda: session.status is not None and session.status.suppressed)
        await until(lambda: not session.connection.keepawake_running)
        agent.tick(BUSY)  # the job goes on
        await no_more_polls(provider, "Let it sleep")
        await session.close()

    run(scenario())


def test_the_outside_keep_awake_stops_at_the_awake_ceiling(tmp_path: Path, agent: InProcessAgent) -> None:
    """A busy request-metered box past its awake ceiling (no prompt pending: the ceiling lets it sleep) is polled
    no more, as the agent's heartbeat stops keeping a sleepable box up there (it was polled for as long as the job
    ran)."""
    async def scenario() -> None:
        provider, session = await busy_metered(tmp_path, agent,
                                               CeilingSettings(ceiling_seconds=30, ask_at_ceiling=False))
        for _ in range(32):  # busy past the 30 s ceiling
            agent.tick(BUSY)
        await until(lambda: session.status is not None and session.status.awake_ceiling_exceeded)
        await until(lambda: not session.connection.keepawake_running)
        report = session.keepawake_report
        assert report is not None and report.ended is KeepAwakeEnd.DEADLINE, report
        agent.tick(BUSY)
        await no_more_polls(provider, "the ceiling")
        await session.close()

    run(scenario())


def test_the_outside_keep_awake_goes_on_while_the_ceilings_question_is_open(tmp_path: Path,
                                                                             agent: InProcessAgent) -> None:
    """Ask mode: past the ceiling the agent asks, and the box is kept up until the question's deadline."""
    async def scenario() -> None:
        provider, session = await busy_metered(tmp_path, agent, CeilingSettings(
            ceiling_seconds=30, prompt_timeout_seconds=600, ask_at_ceiling=True))
        for _ in range(32):
            agent.tick(BUSY)
        await until(lambda: session.prompt is not None)
        polls = provider.polls
        await until(lambda: provider.polls >= polls + 2)
        assert session.connection.keepawake_running
        await session.close()

    run(scenario())


def test_an_idle_window_too_short_for_the_keep_awake_is_said(tmp_path: Path, agent: InProcessAgent) -> None:
    async def scenario() -> None:
        traits = REQUEST_METERED_TRAITS.with_idle_window(0.2)  # a third of it is under the shortest interval
        provider = MeteredProvider(stand_in_context(tmp_path), traits, box=BoxState.AWAKE, agent=agent)
        session = session_for(provider)
        await session.connect(timeout=10)
        agent.tick(BUSY)
        await until(lambda: session.connection.keepawake_error is not None)
        assert "shortest allowed" in session.connection.keepawake_error
        assert provider.polls == 0 and not session.connection.keepawake_running
        await session.close()

    run(scenario())


class SlowProvider(ScriptedProvider):
    """Opening a shell takes longer than the caller waits (a box that is slow to answer)."""

    def open_shell(self, host: Host) -> HostShell:
        time.sleep(1.0)
        return super().open_shell(host)


def test_a_connect_that_waits_too_long_is_an_error_a_person_can_read(tmp_path: Path, agent: InProcessAgent) -> None:
    async def scenario() -> None:
        session = session_for(SlowProvider(stand_in_context(tmp_path), SSH_TRAITS, agent=agent))
        with pytest.raises(UserError) as waited:
            await session.connect(timeout=0.2)
        assert isinstance(waited.value, TimeoutError)  # and still a timeout, for callers that catch those
        assert waited.value.title == "No answer yet" and "box" in waited.value.message
        await session.close()

    run(scenario())


class SilentAgent:
    """A socket of this user's that takes connections and never says a word (an agent hung before its hello)."""

    def __init__(self) -> None:
        self._dir = tempfile.mkdtemp(prefix="wr-silent-")
        self.socket_path = str(Path(self._dir) / "agent.sock")
        self._listen = socket.socket(socket.AF_UNIX)
        self._listen.bind(self.socket_path)
        self._listen.listen()  # connections wait in the backlog; none is answered

    def close(self) -> None:
        self._listen.close()
        shutil.rmtree(self._dir, ignore_errors=True)


def test_an_agent_that_never_says_hello_is_named_with_the_wait(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(agent_client, "HELLO_TIMEOUT_SECONDS", 0.3)
    silent = SilentAgent()

    async def scenario() -> UserError:
        provider = ScriptedProvider(stand_in_context(tmp_path), SSH_TRAITS, agent=silent)  # type: ignore[arg-type]
        session = HostSession(HOST, provider, CeilingSettings(), auto_reconnect=False)
        try:
            with pytest.raises(UserError) as failed:
                await session.connect(timeout=10)
            return failed.value
        finally:
            await session.close()

    try:
        error = run(scenario())
    finally:
        silent.close()
    assert error.message == "The connection to box ended: the agent did not say hello within 0.3 s.", error
    assert not shows_exception_name(str(error))


@pytest.mark.parametrize("busy", [True, False])
def test_a_live_box_put_to_sleep_while_its_agent_says_busy_is_marked_so(tmp_path: Path, agent: InProcessAgent,
                                                                         busy: bool) -> None:
    """The link drops and the provider says asleep: with the last status BUSY the badge says the work may have
    been cut short (a lost-work episode); an idle box simply sleeps."""
    from workroom.core.badge import BadgeKind
    from workroom.core.metering import NotKeptAwakeReason

    async def scenario() -> None:
        provider = ScriptedProvider(stand_in_context(tmp_path), BOXD_TRAITS, box=BoxState.AWAKE, agent=agent)
        session = session_for(provider)
        await session.connect(timeout=10)
        if busy:
            agent.tick(BUSY)
            await until(lambda: session.status is not None and session.status.verdict is Verdict.BUSY)
        provider.box = BoxState.ASLEEP
        assert session._rt.link is not None
        session._rt.link.close("the box froze")
        await until(lambda: session.connection.state is ConnectionState.ASLEEP)
        badge = session.snapshot().badge()
        assert badge.kind is BadgeKind.ASLEEP
        assert session.connection.suspended_while_busy is busy
        assert badge.reason is (NotKeptAwakeReason.SLEPT_WHILE_BUSY if busy else None)
        await session.close()

    run(scenario())


@pytest.mark.parametrize("after", ["connects", "waits"])
def test_a_disconnect_ends_a_run_that_lost_its_cancel(tmp_path: Path, agent: InProcessAgent,
                                                      monkeypatch: pytest.MonkeyPatch, after: str) -> None:
    """Python 3.11's wait_for returns a result that came in the same moment as a cancel and drops the cancel (an
    app's quit under load hung for ever so). Here the run loses the cancel while it connects, then either connects
    (its fresh link must be let go, not waited on until it closes) or waits on (it is cancelled again): either
    way the close ends within seconds and no link of it stays open."""
    monkeypatch.setattr(host_session, "CANCEL_AGAIN_SECONDS", 0.2)
    original = HostSession._connect_once
    lost = asyncio.Event()

    async def losing_its_cancel(self: HostSession) -> None:
        try:
            await asyncio.sleep(30)  # connecting
        except asyncio.CancelledError:
            lost.set()  # what 3.11's wait_for does when the awaited call finished as the cancel came
        if after == "waits":
            await asyncio.sleep(3600)
        await original(self)

    monkeypatch.setattr(HostSession, "_connect_once", losing_its_cancel)

    async def scenario() -> None:
        provider = ScriptedProvider(stand_in_context(tmp_path), SSH_TRAITS, agent=agent)
        session = session_for(provider)
        session.start()
        await asyncio.sleep(0.2)
        await asyncio.wait_for(session.close(), 5)
        assert lost.is_set()
        assert session.connection.state is ConnectionState.DISCONNECTED
        assert session._main is not None and session._main.done()
        assert session._rt.link is None

    run(scenario())


def test_a_connect_never_waits_on_a_keyring_whose_dialog_is_open(tmp_path: Path, agent: InProcessAgent) -> None:
    """The keyring holds the agent's key behind an unlock dialog nobody answers (its backend blocks): the connect
    asks the agent for its key instead (the probe's way) after KEYRING_WAIT_SECONDS, and is live; the key it learnt
    is kept in memory at once, and its keyring write waits on its own thread."""
    import threading

    from workroom.providers.agent_keys import AgentKeys
    from workroom.sessions import agent_reach

    dialog_answered = threading.Event()

    class DialogOpen:
        def get(self, key):  # type: ignore[no-untyped-def]
            dialog_answered.wait(30)
            return None

        set = get

        def delete(self, key):  # type: ignore[no-untyped-def]
            return None

    async def scenario() -> None:
        context = stand_in_context(tmp_path)
        context.agent_keys = AgentKeys(DialogOpen())  # type: ignore[arg-type]
        provider = ScriptedProvider(context, SSH_TRAITS, agent=agent)
        session = session_for(provider)
        t0 = time.monotonic()
        snap = await session.connect(timeout=agent_reach.KEYRING_WAIT_SECONDS + 8)
        assert snap.connection.state in (ConnectionState.LIVE, ConnectionState.QUIET)
        assert time.monotonic() - t0 < agent_reach.KEYRING_WAIT_SECONDS + 5
        dialog_answered.set()  # the loop's end waits for the keyring's thread
        await session.close()

    try:
        run(scenario())
    finally:
        dialog_answered.set()
