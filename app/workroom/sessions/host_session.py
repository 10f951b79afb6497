"""One HostSession per host: connect, push, subscribe, stay live or go quiet, notice loss, back off.

States (core.connection.ConnectionState): disconnected -> connecting -> (host_key_question) -> pushing
-> live | quiet -> lost -> backing_off -> connecting ... ; asleep when the provider says the box sleeps.
Every transition is published to listeners as a `HostSnapshot`.

The app's own traffic must never keep a sleepable box awake (docs/providers.md): status is pushed by the
agent, we never poll it, and on sleepable providers we are silent on the wire while the verdict is IDLE
(no pings, no SSH keepalives). While BUSY (or always, on hosts that never sleep) a ping that expects a
reply notices a dead or frozen peer within `liveness.LIVENESS_DEADLINE_SECONDS` — except while the keep-awake is
being checked against a network-metered provider's idle clock, when the provider's readings stand in for
the pings (docs/providers.md, "Is the heartbeat seen?").
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, cast

from workroom.core.ceiling import CeilingSettings
from workroom.core.connection import AgentReplaced, ConnectionInfo, ConnectionState
from workroom.core.errors import UserError
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.hosts import Host
from workroom.core.install_report import InstallReport
from workroom.core.keepawake import KeepAwakeReport
from workroom.core.last_known import LastKnown
from workroom.core.prompt_answers import SentAnswer
from workroom.core.protocol import (
    AgentCall,
    Method,
    PromptEvent,
    Status,
    StatusEvent,
    Verdict,
)
from workroom.core.questions import HostKeyQuestion
from workroom.providers.base import BoxState, Provider
from workroom.remote.agent_link import AgentLink
from workroom.remote.host_shell import HostShell
from workroom.sessions.agent_call import AgentCaller
from workroom.sessions.agent_reach import AgentReach, hand_settings
from workroom.sessions.blocking_runner import BlockingRunner, cancel_until_done
from workroom.sessions.keepawake_task import OutsideKeepAwake
from workroom.sessions.liveness import watch_liveness
from workroom.sessions.platform_keeper import PlatformSide, PlatformView
from workroom.sessions.proof_keeper import ProofKeeper
from workroom.sessions.provider_word import WATCHED, ConnectAsk, ProviderWord
from workroom.sessions.reconnect_rules import (
    ConnectTimedOut,
    EndOfRun,
    after_loss,
    lost_error,
    reconnect_delay,
    run_failure,
    slept_while_busy,
    under_running_job,
)
from workroom.sessions.session_keeper import SessionKeeper
from workroom.sessions.shell_opening import open_shell

log = logging.getLogger(__name__)

# A disconnect cancels the run, and again every CANCEL_AGAIN_SECONDS while it goes on (a cancel can be lost:
# blocking_runner.cancel_until_done), CANCEL_TRIES times at most.
CANCEL_AGAIN_SECONDS, CANCEL_TRIES = 1.0, 10

Listener = Callable[[HostSnapshot], None]
HostKeyAnswerer = Callable[["HostSession", HostKeyQuestion], Awaitable[bool]]
"""Asks the user whether to trust a host key nobody has confirmed; True to trust it."""


@dataclass
class _Runtime:
    shell: HostShell | None = None
    link: AgentLink | None = None
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)


class HostSession:
    """One host's connection, for as long as the app wants it: the states of the module's docstring, each
    published to `listeners` as a `HostSnapshot`.

    A run (`_run`) connects once (`_connect_once`: may we connect, a shell, the agent reached, the settings
    handed, live), waits for the link to close, then backs off and runs again, or settles where a reconnect would
    not help or would wake the box. The agent is reached by `AgentReach` (sessions/agent_reach.py) and asked
    through `call` (sessions/agent_call.py); the ways the box is kept awake or let go are keepers given the
    session's events (sessions/session_keeper.py); the peer is watched by pings, or on a sleepable box by the
    keep-awake's proof (sessions/proof_keeper.py). Everything here runs on the event loop; blocking calls go
    through the host's own `BlockingRunner`, one at a time.
    """

    def __init__(
        self,
        host: Host,
        provider: Provider,
        settings: CeilingSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        auto_reconnect: bool = True,
        previous_verdict: dict[str, Any] | None = None,
    ) -> None:
        self.host = host
        self.provider = provider
        self.traits = provider.traits(host)
        self.settings = settings
        """This computer's ceiling settings for the host: the agent is handed them at each connect if its own
        differ (the engine changes them and hands them to a connected agent through `call`)."""
        self._clock = clock
        self.auto_reconnect = auto_reconnect
        self.connection = ConnectionInfo()
        self.status: Status | None = None
        self.status_received_at: float | None = None
        self.prompt: PromptEvent | None = None
        self.listeners: list[Listener] = []
        self.host_key_answerer: HostKeyAnswerer | None = None
        self._runner = BlockingRunner(host.name)
        self._rt = _Runtime()
        self._main: asyncio.Task[None] | None = None
        self._wanted = False
        self._attempt = 0
        self._may_wake = False  # later reconnects happen in the background: they must not wake the box
        self._may_connect_unknown = False
        self._first_status: asyncio.Event = asyncio.Event()
        self.first_status_seconds: float | None = None
        self.failure: UserError | None = None
        self.phase_seconds: dict[str, float] = {}
        self._reach = AgentReach(host, provider, self._runner, self._on_event, self._hold_link, clock)
        self.previous_verdict = previous_verdict
        """What the app last saw before this run: {"verdict", "agent_monotonic"} (persisted by the engine)."""
        self.known_at_start = LastKnown.from_record(previous_verdict)
        """What the app knew of the host when this session was made (core.last_known): kept for the why-awake
        record's note of the platform's own stop, after `previous_verdict` has been used."""
        self._keepawake = OutsideKeepAwake(host.name, self.traits, lambda: provider.poll_health(host),
                                           lambda: self._wanted, self._keep_awake_changed)
        self._word = ProviderWord(host, provider, self.traits, lambda clock: self.update(platform=clock))
        self.last_answer: SentAnswer | None = None
        self._proof = ProofKeeper(host, provider, self.traits, self, clock=clock, link=lambda: self._rt.link,
                                  on_status=self._on_status, frozen=self._reach.frozen)
        self._platform = PlatformSide.of(host, provider, self.traits, publish=self._platform_view,
                                         link=lambda: self._rt.link, reconnect=lambda: self.start(wake=False),
                                         stopped=lambda: self._end_run(EndOfRun.asleep()))
        self._keepers: list[SessionKeeper] = [self._keepawake, *([self._platform] if self._platform else [])]
        """The ways this box is kept awake or let go, each given the session's events (sessions/session_keeper.py)."""
        self._caller = AgentCaller(host.name, lambda: self._rt.link, lambda: self.connection.state,
                                   lambda: self.connect(wake=False), self._answered, self._on_status)

    @property
    def install(self) -> InstallReport | None:
        """What the last install step found or did (pushed bytes, the agent's socket and supervisor)."""
        return self._reach.install

    def _hold_link(self, link: AgentLink | None) -> None:
        """The link being set up or live: what `_teardown` closes, what calls to the agent go over."""
        self._rt.link = link

    # -- public ----------------------------------------------------------------------------------

    def snapshot(self) -> HostSnapshot:
        return HostSnapshot(self.host, self.traits, self.connection, self.status, self.prompt,
                            self.status_received_at, self.install, self.last_answer)

    def start(self, *, wake: bool = False, unknown: bool | None = None) -> None:
        """Connect (and keep reconnecting) in the background.

        A box its provider reports asleep is left asleep (shown as such) unless `wake` is set: a
        background connect must not wake a sleeping box just to look at it. `unknown` says whether a
        sleepable box whose state cannot be read may be connected to all the same (default: `wake`).
        """
        self._may_wake = wake
        self._may_connect_unknown = wake if unknown is None else unknown
        self._wanted = True
        for keeper in self._keepers:
            keeper.run_started()
        if self._main is None or self._main.done():
            self._main = asyncio.get_running_loop().create_task(self._run(), name=f"session-{self.host.name}")

    async def connect(self, timeout: float = 60.0, *, wake: bool = False) -> HostSnapshot:
        """Start and wait for the first status (or the first failure).

        A box its provider says is asleep is woken only with `wake` (the user's explicit "Wake and connect",
        `--wake`); otherwise the session settles in ASLEEP and that snapshot is returned, the box untouched.
        Where the provider cannot tell without waking (state unknown), it connects."""
        self._first_status.clear()
        self.failure = None
        self.start(wake=wake, unknown=True)
        waiter = asyncio.ensure_future(self._first_status.wait())
        assert self._main is not None
        done, _ = await asyncio.wait({waiter, self._main}, timeout=timeout,
                                     return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if not done:
            raise ConnectTimedOut(self.host.name, timeout)
        if self._main in done and not self._main.cancelled():
            crashed = self._main.exception()
            if crashed is not None:
                raise crashed
        if not self.connection.spec.live and self.failure:
            raise self.failure
        return self.snapshot()

    async def disconnect(self) -> None:
        self._wanted = False
        self._word.stop()
        for keeper in self._keepers:
            keeper.stop()
        self._teardown("disconnected by the user")
        if self._main is not None and not await cancel_until_done(self._main, CANCEL_TRIES, CANCEL_AGAIN_SECONDS):
            log.warning("%s: its connection did not end when asked; left to end on its own", self.host.name)
        self._set_state(ConnectionState.DISCONNECTED)

    async def close(self) -> None:
        await self.disconnect()
        self._runner.shutdown()

    @property
    def linked(self) -> bool:
        """Whether the agent can be asked now (its link is up)."""
        link = self._rt.link
        return link is not None and not link.client.closed

    @property
    def call(self) -> AgentCall:
        """Ask this host's agent: `call(method, **params)` answers with the model `METHODS[method].result`, and a
        status it answers with is shown as any status is. Raises a UserError when the host cannot be reached
        (sessions/agent_call.py)."""
        return cast(AgentCall, self._caller)

    @property
    def keepawake_report(self) -> KeepAwakeReport | None:
        """How the last outside keep-awake (request-metered hosts) ended, once it has."""
        return self._keepawake.report

    # -- internals -------------------------------------------------------------------------------

    def _answered(self, answer: SentAnswer) -> None:
        self.last_answer = answer

    def update(self, *, publish: bool = False, **fields: Any) -> None:
        """Change these fields of the connection (core.connection.ConnectionInfo); said to the faces with `publish`."""
        self.connection = self.connection.model_copy(update=fields)
        if publish:
            self._publish()

    def _publish(self) -> None:
        snap = self.snapshot()
        for listener in list(self.listeners):
            try:
                listener(snap)
            except Exception:  # a face's bug must not kill the session
                log.exception("listener failed for %s", self.host.name)

    def waiting_for(self, what: str | None) -> None:
        """A connect on its way waits on `what` outside the app ("the keyring"), or no longer (None): said while the
        state is a waiting one (connecting, installing); a state past waiting carries none."""
        wanted = what if self.connection.spec.waiting else None
        if self.connection.waiting_for != wanted:
            self.update(publish=True, waiting_for=wanted)

    def _set_state(self, state: ConnectionState, error: UserError | None = None, **extra: Any) -> None:
        self.connection = self.connection.with_state(state, self._clock(), error=error)
        self.update(publish=True, **extra)

    def _keep_awake_changed(self, running: bool, error: str | None, ended: bool) -> None:
        """The outside keep-awake (request-metered hosts) started, was refused, or ended."""
        self.update(keepawake_running=running, keepawake_error=error)
        if ended:
            self._proof.watch_for(self.status)  # no polls, nothing to prove
            self._publish()

    def _on_status(self, status: Status) -> None:
        for keeper in self._keepers:
            keeper.on_status(status)
        self.status = status
        self.status_received_at = self._clock()
        if self.connection.agent_silent_since is not None:  # it spoke: it is not frozen
            self.update(agent_silent_since=None)
        self._proof.take(status)
        if not status.prompt_pending:
            self.prompt = None
        if self.connection.spec.live:
            quiet = self.traits.metering.sleeps and status.verdict is Verdict.IDLE
            state = ConnectionState.QUIET if quiet else ConnectionState.LIVE
            self.update(state=state, status_received_monotonic=self.status_received_at)
        self._publish()

    def _on_event(self, event: StatusEvent | PromptEvent) -> None:
        if isinstance(event, PromptEvent):
            self.prompt = event
            self._publish()
        else:
            self._on_status(event.status)

    def _teardown(self, why: str) -> None:
        for task in self._rt.tasks:
            task.cancel()
        for keeper in self._keepers:
            keeper.link_down()
        self._proof.stop()
        if self._rt.link is not None:
            self._rt.link.close(why)
        shell = self._rt.shell
        if shell is not None:
            # Closing a paramiko transport can block briefly; do it off the loop.
            asyncio.get_running_loop().run_in_executor(None, shell.close)
        self._rt = _Runtime()

    async def _run(self) -> None:
        while self._wanted:
            try:
                await self._connect_once()
                if not self._wanted:
                    # Let go of while it connected, and the cancel lost on the way (see disconnect): the link
                    # just made is nobody's; waiting for it to close would never end.
                    self._teardown("disconnected by the user")
                    return
                link = self._rt.link
                assert link is not None
                why = await link.closed
                if self._platform is not None and self._platform.releasing:
                    raise EndOfRun(ConnectionState.RELEASED, why=why)  # let go on purpose: no reconnect
                # The stream's own account (title, words, hint) when it gave one; else the link's words.
                failure: UserError | EndOfRun = link.end_error or lost_error(self.host, why)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a bug too must not leave the row at "Pushing" with a leaked shell
                failure = run_failure(self.host, exc)
            if isinstance(failure, EndOfRun):
                self._end_run(failure)
                return
            self._teardown(str(failure))
            if not self._wanted or not await self._after_loss(failure):
                return

    async def _after_loss(self, error: UserError) -> bool:
        """The link is lost: settle where a reconnect would wake the box or guess, else say LOST and back off;
        whether to connect again."""
        was_live = self.connection.spec.live
        box = await self._word.box_state()
        end = after_loss(box, sleeps=self.traits.metering.sleeps)
        if end is not None:
            if end.state is ConnectionState.ASLEEP and was_live:  # put to sleep under our eyes: work cut short?
                self.update(suspended_while_busy=under_running_job(self.status, sleeps=self.traits.metering.sleeps))
            self._end_run(end)
            return False
        self.failure = error
        self._set_state(ConnectionState.LOST, error)
        self._first_status.set()
        if not self.auto_reconnect or (self.traits.metering.sleeps and box is not BoxState.AWAKE):
            # On a box that sleeps, a reconnect we cannot prove harmless would wake it: leave it to the user.
            self._wanted = False
            return False
        delay = reconnect_delay(self._attempt, self.traits)
        self._attempt += 1
        self._set_state(ConnectionState.BACKING_OFF, error, retry_at_monotonic=self._clock() + delay)
        await asyncio.sleep(delay)
        return True

    def _end_run(self, end: EndOfRun) -> None:
        """This run is over and no reconnect follows: settle in the end's state, and wake `connect()`."""
        self._teardown(end.why)
        self._wanted = False
        if end.error is not None:
            self.failure = end.error
        self._set_state(end.state, end.error)
        self._first_status.set()
        if end.state in WATCHED:
            self._word.watch_asleep(lambda: self.connection, lambda: self._wanted,
                                    lambda: self.start(wake=False), self._set_state)
        if end.state is ConnectionState.RELEASED and self._platform is not None:
            clock = self.connection.platform
            self._platform.watch_released(clock.build if clock is not None else None)

    def _platform_view(self, view: PlatformView) -> None:
        self.update(publish=True, platform=view.clock, platform_not_kept=view.not_kept, platform_words=view.words,
                     platform_note=view.note)

    async def _connect_once(self) -> None:
        """One connect, in order: may we connect, open a shell, install and link, sync settings, go live."""
        start = self._clock()
        woken = self._may_wake and self.traits.metering.sleeps
        was_asleep = await self._may_we_connect()
        shell = await self._open_shell()
        self.phase_seconds = {"ssh": self._clock() - start}
        self._rt.shell = shell
        self._set_state(ConnectionState.PUSHING)
        link, subscribed = await self._reach.reach(shell, start, self.phase_seconds)
        self.phase_seconds["subscribe"] = self._clock() - start
        status = await hand_settings(link, subscribed, self.settings.for_provider(self.traits))
        if woken:
            # The user's explicit Wake and connect: they want the box up now, so the ceiling restarts (`keep`)
            # and an earlier Let it sleep, or a prompt that ran out while it slept, does not carry over.
            status = await link.client.call(Method.KEEP)
            assert isinstance(status, Status)
        self._go_live(link, status, was_asleep=was_asleep, seconds=self._clock() - start)
        if self._reach.direct:  # the probe's checks still run on this connect, after the first status
            self._rt.tasks.append(asyncio.get_running_loop().create_task(self._reach.check_installed(shell, link)))
        # Connected: what follows (a reconnect after a loss) is the app's doing, not the user's Connect,
        # so it may not wake the box, nor try a box whose state it cannot read.
        self._may_wake = False
        self._may_connect_unknown = False

    async def _may_we_connect(self) -> bool:
        """Decide from the provider's word (read without waking the box) whether this run may connect;
        says CONNECTING (or retrying) when it may. Returns whether the box was asleep (a timed wake)."""
        let_go = None if self._platform is None else self._platform.let_go(self.previous_verdict)
        ask = ConnectAsk(wake=self._may_wake, unknown=self._may_connect_unknown, let_go=let_go)
        was_asleep = await self._word.may_connect(ask, lambda: self._set_state(ConnectionState.CONNECTING))
        if self.connection.error is not None and self._attempt > 0:
            self.connection = self.connection.retrying(self._clock())
            self._publish()
        else:
            self._set_state(ConnectionState.CONNECTING)
        return was_asleep

    def _go_live(self, link: AgentLink, status: Status, *, was_asleep: bool, seconds: float) -> None:
        """The first status is in: say LIVE (or QUIET), wake `connect()`, and start watching the peer."""
        assert self.install is not None
        self.first_status_seconds = seconds
        wake = seconds if was_asleep else self.connection.wake_seconds
        suspended_while_busy = self.connection.suspended_while_busy or slept_while_busy(
            self.previous_verdict, status, sleeps=self.traits.metering.sleeps)
        self.previous_verdict = None
        replaced = AgentReplaced.after(self.install.action, time.strftime("%H:%M"), self._clock())
        if replaced is not None:  # it stopped answering (or checking): the connect replaced it
            log.info("%s: the agent %s; replaced it", self.host.name, replaced.why)
        self.connection = self.connection.with_state(ConnectionState.LIVE, self._clock()).model_copy(
            update={"wake_seconds": wake, "pushed_bytes": self.install.pushed_bytes, "error": None,
                    "suspended_while_busy": suspended_while_busy,
                    "agent_replaced": replaced or self.connection.agent_replaced}
        )
        self._attempt = 0
        for keeper in self._keepers:
            keeper.link_up()
        self._on_status(status)
        self._first_status.set()
        self._rt.tasks.append(asyncio.get_running_loop().create_task(watch_liveness(
            link, self._proof.ping_due, self._proof.note_own_traffic)))

    async def _open_shell(self) -> HostShell:
        """A shell on the host (sessions/shell_opening.py); an unknown host key is asked about."""
        answerer = self.host_key_answerer
        ask = None if answerer is None else lambda q: answerer(self, q)
        return await open_shell(self._runner, self.provider, self.host, ask, lambda state, fingerprint: self._set_state(
            state, None, **({} if fingerprint is None else {"host_key_fingerprint": fingerprint})))
