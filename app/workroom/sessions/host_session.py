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
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from pydantic import BaseModel

from workroom.core.ceiling import CeilingSettings
from workroom.core.connection import REPLACED_ACTIONS, AgentReplaced, ConnectionInfo, ConnectionState
from workroom.core.errors import UserError
from workroom.core.heartbeat_proof import HeartbeatProof, IdleClockReading
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.hosts import Host
from workroom.core.install_report import InstallReport
from workroom.core.keepawake import KeepAwakeReport
from workroom.core.last_known import LastKnown
from workroom.core.platform_clock import PlatformClock
from workroom.core.prompt_answers import Answer, AnswerFace, SentAnswer
from workroom.core.protocol import (
    AgentCall,
    Method,
    PromptEvent,
    Status,
    StatusEvent,
    Verdict,
)
from workroom.core.questions import HostKeyQuestion
from workroom.providers.base import BoxState, Provider, ProviderUnreadable
from workroom.remote.agent_client import REQUEST_TIMEOUT_SECONDS
from workroom.remote.agent_link import AgentLink
from workroom.remote.host_shell import HostShell
from workroom.sessions.agent_reach import AgentReach
from workroom.sessions.blocking_runner import BlockingRunner
from workroom.sessions.keepawake_task import OutsideKeepAwake
from workroom.sessions.liveness import watch_liveness
from workroom.sessions.platform_keeper import PlatformSide, PlatformView
from workroom.sessions.proof_keeper import ProofKeeper
from workroom.sessions.provider_word import WATCHED, ConnectAsk, ProviderWord
from workroom.sessions.reconnect_rules import (
    ConnectTimedOut,
    EndOfRun,
    lost_error,
    reconnect_delay,
    slept_while_busy,
    under_running_job,
)
from workroom.sessions.shell_opening import open_shell

log = logging.getLogger(__name__)

# A disconnect cancels the run, and again every CANCEL_AGAIN_SECONDS while it goes on (a cancel can be lost),
# CANCEL_TRIES times at most.
CANCEL_AGAIN_SECONDS, CANCEL_TRIES = 1.0, 10

Listener = Callable[[HostSnapshot], None]
HostKeyAnswerer = Callable[["HostSession", HostKeyQuestion], Awaitable[bool]]
"""Asks the user whether to trust a host key nobody has confirmed; True to trust it."""


@dataclass
class _Runtime:
    shell: HostShell | None = None
    link: AgentLink | None = None
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)


ANSWERS: Mapping[Method, Answer] = {Method.KEEP: Answer.KEEP, Method.LET_SLEEP: Answer.LET_SLEEP}
"""The methods that answer a ceiling prompt (recorded as `last_answer`)."""

NOT_CONNECTED_WORDS: Mapping[Method, str] = {
    Method.KEEP: "it cannot be kept awake",
    Method.LET_SLEEP: "its agent cannot let it sleep",
    Method.TIMELINE: "its agent cannot say what kept it awake",
    Method.EXCLUSIONS: "its agent cannot change what counts as work",
}
"""What a method asked of a host that is not connected cannot do, in the user's words ("box1 is not connected,
so ..."); a method without a row: "its agent cannot be asked"."""


class HostSession:
    """One host's connection, for as long as the app wants it: the states of the module's docstring, each
    published to `listeners` as a `HostSnapshot`.

    A run (`_run`) connects once (`_connect_once`: may we connect, a shell, the agent reached, the settings
    synced, live), waits for the link to close, then backs off and runs again, or settles where a reconnect
    would not help or would wake the box. How the agent is reached -- its remembered socket, the probe that
    becomes the relay, a push, this computer's socket -- is `AgentReach`'s (sessions/agent_reach.py); the
    session holds the link it returns, takes the agent's pushed statuses and prompts, and watches the peer
    (pings, or the keep-awake's proof on a network-metered box: `HeartbeatWatch`; request-metered boxes:
    `OutsideKeepAwake`). Everything here runs on the event loop; blocking calls go through the host's own
    `BlockingRunner`, one at a time.
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
        self.known_at_start = LastKnown.from_record(previous_verdict)
        """What the app knew of the host when this session was made (core.last_known): kept for the why-awake
        record's note of the platform's own stop, after `previous_verdict` has been used."""
        """What the app last saw before this run: {"verdict", "agent_monotonic"} (persisted by the engine)."""
        self._keepawake = OutsideKeepAwake(host.name, self.traits, lambda: provider.poll_health(host),
                                           lambda: self._wanted, self._keep_awake_changed)
        self._word = ProviderWord(host, provider, self.traits, self._note_platform_clock)
        self.last_answer: SentAnswer | None = None
        self._proof = ProofKeeper(host, provider, self.traits, clock=clock, link=lambda: self._rt.link,
                                  current=lambda: self.connection.heartbeat_proof, show=self._show_proof,
                                  on_status=self._on_status, frozen=self._agent_frozen,
                                  reading=self._show_idle_clock)
        self._platform = self._platform_side()

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
        if self._platform is not None:
            self._platform.run_started()
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
        self._keepawake.stop()
        if self._platform is not None:
            self._platform.stop()
        self._teardown("disconnected by the user")
        main = self._main
        if main is not None:
            # A cancel can be lost: Python 3.11's wait_for returns a result that came in the same moment as the
            # cancel and drops the cancel. So it is asked again until the run ends, and a run that will not end
            # is logged and left, never waited on for ever (an app's quit, a removed host).
            for _ in range(CANCEL_TRIES):
                main.cancel()
                await asyncio.wait({main}, timeout=CANCEL_AGAIN_SECONDS)
                if main.done():
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        main.result()
                    break
            else:
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
        status it answers with is shown as any status is. Raises a UserError when the host cannot be reached."""
        return cast(AgentCall, self._call)

    async def _call(self, method: Method, /, *, timeout: float = REQUEST_TIMEOUT_SECONDS,
                    face: AnswerFace = AnswerFace.COMMAND_LINE, **params: Any) -> BaseModel:
        """`face`: who answers, for a method that answers a ceiling prompt (recorded as `last_answer`)."""
        if method is Method.KEEP and self.connection.state is ConnectionState.RELEASED:
            await self.connect(wake=False)  # a box the app let go of runs: its agent must hear the answer
        link = self._rt.link
        if not self.linked:
            cannot = NOT_CONNECTED_WORDS.get(method, "its agent cannot be asked")
            raise UserError("Not connected", f"{self.host.name} is not connected, so {cannot}.",
                            "Connect to the host and try again.")
        assert link is not None
        result = await link.client.call(method, timeout=timeout, **params)
        answer = ANSWERS.get(method)
        if answer is not None:
            self.last_answer = SentAnswer(answer, face, time.time())
        if isinstance(result, Status):
            self._on_status(result)  # a prompt answered (keep, let_sleep) is cleared with it
        return result

    @property
    def keepawake_report(self) -> KeepAwakeReport | None:
        """How the last outside keep-awake (request-metered hosts) ended, once it has."""
        return self._keepawake.report

    # -- internals -------------------------------------------------------------------------------

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
            self.connection = self.connection.model_copy(update={"waiting_for": wanted})
            self._publish()

    def _set_state(self, state: ConnectionState, error: UserError | None = None, **extra: Any) -> None:
        info = self.connection.with_state(state, self._clock(), error=error)
        if extra:
            info = info.model_copy(update=extra)
        self.connection = info
        self._publish()

    def _keep_awake_changed(self, running: bool, error: str | None, ended: bool) -> None:
        """The outside keep-awake (request-metered hosts) started, was refused, or ended."""
        self.connection = self.connection.model_copy(update={"keepawake_running": running, "keepawake_error": error})
        if ended:
            self._watch_proof(self.status)  # no polls, nothing to prove
            self._publish()

    def _on_status(self, status: Status) -> None:
        self._keepawake.on_status(status)
        if self._platform is not None:
            self._platform.on_status(status)
        self.status = status
        self.status_received_at = self._clock()
        self._proof.note_own_traffic()
        if self.connection.agent_silent_since is not None:  # it spoke: it is not frozen
            self.connection = self.connection.model_copy(update={"agent_silent_since": None})
        link = self._rt.link
        if status.stalled and self.traits.sleeps_when_idle and link is not None and not link.closed.done() and (
                status.verdict is Verdict.BUSY or status.classifier_verdict is Verdict.BUSY):
            # It says it has stopped checking: nothing keeps the box awake. The reconnect replaces it (the
            # direct link refuses a stalled agent; the probe restarts it).
            asyncio.get_running_loop().call_soon(link.close, "the agent has stalled (no check for 30 s)")
        self._watch_proof(status)
        if self.connection.idle_clock is not None:
            self.connection = self.connection.model_copy(update={"idle_clock": None})
        self._proof.read_idle_clock(status, self.traits.sleeps_when_idle)
        if not status.prompt_pending:
            self.prompt = None
        if self.connection.spec.live:
            quiet = self.traits.sleeps_when_idle and status.verdict is Verdict.IDLE
            state = ConnectionState.QUIET if quiet else ConnectionState.LIVE
            self.connection = self.connection.model_copy(
                update={"state": state, "status_received_monotonic": self.status_received_at}
            )
        self._publish()

    # -- is the keep-awake seen? (sessions/proof_keeper.py) ---------------------------------------------------

    def _watch_proof(self, status: Status | None) -> None:
        self._proof.watch(status, outside_running=self.connection.keepawake_running)

    def _pings_due(self) -> bool:
        """Ping while a peer must be watched; silence while a sleepable box is idle, and while the provider's
        readings stand in for the pings (ProofKeeper.ping_due)."""
        if self.traits.sleeps_when_idle and (self.status is None or self.status.verdict is Verdict.IDLE):
            return False
        return self._proof.ping_due()

    def _show_idle_clock(self, status: Status, reading: IdleClockReading) -> None:
        """The provider's idle clock, read once for an idle status: the faces say when it will sleep."""
        if self.status is status and self.connection.spec.live:
            self.connection = self.connection.model_copy(update={"idle_clock": reading})
            self._publish()

    def _show_proof(self, proof: HeartbeatProof | None, publish: bool) -> None:
        self.connection = self.connection.model_copy(update={"heartbeat_proof": proof})
        if publish:
            self._publish()

    def _agent_frozen(self, link: AgentLink, how: str) -> None:
        """The agent does not answer: say it has stalled (busy but not kept awake), close the link, and let the
        reconnect replace it (the probe finds it frozen; agent_reach, agent_install)."""
        last = self.status_received_at if self.status_received_at is not None else self._clock()
        self.connection = self.connection.model_copy(update={"agent_silent_since": last})
        log.info("%s: the agent %s: frozen; replacing it", self.host.name, how)
        self._reach.skip_direct = True
        self._publish()
        link.close(f"the agent {how} (frozen)")

    def _on_event(self, event: StatusEvent | PromptEvent) -> None:
        if isinstance(event, PromptEvent):
            self.prompt = event
            self._publish()
        else:
            self._on_status(event.status)

    def _teardown(self, why: str) -> None:
        for task in self._rt.tasks:
            task.cancel()
        if self._platform is not None:
            self._platform.stop_keeping()
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
            error: UserError
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
                error = link.end_error or lost_error(self.host, why)
            except asyncio.CancelledError:
                raise
            except EndOfRun as end:
                self._end_run(end)
                return
            except UserError as user_error:
                if not user_error.retryable:  # the same again cannot work: say so and stop knocking
                    self._end_run(EndOfRun.fatal(user_error))
                    return
                error = user_error
            except (OSError, TimeoutError, EOFError) as other:
                error = lost_error(self.host, other)
            except Exception:  # a bug must not leave the row at "Pushing" with a leaked shell
                log.exception("session %s failed unexpectedly", self.host.name)
                error = UserError("Something went wrong",  # what it was goes to the log, not to the user
                                  f"An unexpected error stopped the connection to {self.host.name}.",
                                  "The app will try again; if it repeats, report it with the app's log.")
            self._teardown(str(error))
            if not self._wanted:
                return
            was_live = self.connection.spec.live
            box = await self._word.box_state()
            if isinstance(box, ProviderUnreadable) and self.traits.sleeps_when_idle:
                # It may have gone to sleep: never shown asleep or offline on a guess, and never reconnected to.
                self._end_run(EndOfRun(ConnectionState.UNREADABLE, box, why="provider unreadable"))
                return
            if box is BoxState.ASLEEP:
                if was_live:  # put to sleep under our eyes: under a running job, work was cut short
                    self.connection = self.connection.model_copy(update={"suspended_while_busy": under_running_job(
                        self.status, sleeps=self.traits.sleeps_when_idle)})
                self._end_run(EndOfRun.asleep())  # connecting again would wake it: that is the user's call
                return
            self.failure = error
            self._set_state(ConnectionState.LOST, error)
            self._first_status.set()
            if not self.auto_reconnect or (self.traits.sleeps_when_idle and box is not BoxState.AWAKE):
                # On a box that sleeps, a reconnect we cannot prove harmless would wake it: leave it to the user.
                self._wanted = False
                return
            delay = reconnect_delay(self._attempt, self.traits)
            self._attempt += 1
            self._set_state(ConnectionState.BACKING_OFF, error, retry_at_monotonic=self._clock() + delay)
            await asyncio.sleep(delay)

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

    # -- where an open session is activity (core.metering `sessions`) --------------------------------

    def _platform_side(self) -> PlatformSide | None:
        rules = self.provider.platform_rules
        if rules is None or self.traits.metering.session_while_idle:
            return None
        return PlatformSide(
            self.host.name, rules, lambda: self.provider.platform_clock(self.host),
            lambda until: self.provider.extend_deadline(self.host, until),
            publish=self._platform_view, release=self._release_idle, reconnect=lambda: self.start(wake=False),
            stopped=lambda: self._end_run(EndOfRun.asleep()))

    def _note_platform_clock(self, clock: PlatformClock) -> None:
        """The clock a state read found goes with the next snapshot (an asleep box's stop reason)."""
        self.connection = self.connection.model_copy(update={"platform": clock})

    def _platform_view(self, view: PlatformView) -> None:
        self.connection = self.connection.model_copy(update={
            "platform": view.clock, "platform_not_kept": view.not_kept, "platform_words": view.words,
            "platform_note": view.note})
        self._publish()

    def _release_idle(self) -> None:
        """Let go of the session (the platform counts it as activity); the run ends RELEASED, not lost."""
        link = self._rt.link
        if link is None or link.closed.done():
            if self._platform is not None:
                self._platform.releasing = False  # nothing live to let go of: a loss is handled as a loss
            return
        link.close("let go while idle: an open session is activity on this platform")

    async def _connect_once(self) -> None:
        """One connect, in order: may we connect, open a shell, install and link, sync settings, go live."""
        start = self._clock()
        woken = self._may_wake and self.traits.sleeps_when_idle
        was_asleep = await self._may_we_connect()
        shell = await self._open_shell()
        self.phase_seconds = {"ssh": self._clock() - start}
        self._rt.shell = shell
        self._set_state(ConnectionState.PUSHING)
        link, subscribed = await self._reach.reach(shell, start, self.phase_seconds)
        status = await self._sync_settings(link, start, subscribed)
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
        let_go = None
        if self._platform is not None and self.previous_verdict is not None:
            platform, record = self._platform, self.previous_verdict

            def let_go(clock: PlatformClock | None) -> bool:
                if not platform.still_let_go(record, clock):
                    return False
                self._platform_view(PlatformView(clock))
                return True

        ask = ConnectAsk(wake=self._may_wake, unknown=self._may_connect_unknown, let_go=let_go)
        was_asleep = await self._word.may_connect(ask, lambda: self._set_state(ConnectionState.CONNECTING))
        if self.connection.error is not None and self._attempt > 0:
            self.connection = self.connection.retrying(self._clock())
            self._publish()
        else:
            self._set_state(ConnectionState.CONNECTING)
        return was_asleep

    async def _sync_settings(self, link: AgentLink, start: float, subscribed: Status) -> Status:
        """Take the agent's answer to the subscribe the reach sent (its proof checked), and hand the agent this
        computer's ceiling settings if its own differ."""
        status = subscribed
        self.phase_seconds["subscribe"] = self._clock() - start
        wanted = self.settings.for_provider(self.traits)
        if wanted.differs_from(status.settings_values) or status.settings_error is not None:
            status = await link.client.settings(wanted, reported=status.settings_values)
        return status

    def _go_live(self, link: AgentLink, status: Status, *, was_asleep: bool, seconds: float) -> None:
        """The first status is in: say LIVE (or QUIET), wake `connect()`, and start watching the peer."""
        assert self.install is not None
        self.first_status_seconds = seconds
        wake = seconds if was_asleep else self.connection.wake_seconds
        suspended_while_busy = self.connection.suspended_while_busy or slept_while_busy(
            self.previous_verdict, status, sleeps=self.traits.sleeps_when_idle)
        self.previous_verdict = None
        replaced = self.connection.agent_replaced
        if self.install.action in REPLACED_ACTIONS:  # it stopped answering (or checking): the connect replaced it
            replaced = AgentReplaced(at_clock=time.strftime("%H:%M"), at_monotonic=self._clock(),
                                     why=REPLACED_ACTIONS[self.install.action])
            log.info("%s: the agent %s; replaced it", self.host.name, replaced.why)
        self.connection = self.connection.with_state(ConnectionState.LIVE, self._clock()).model_copy(
            update={"wake_seconds": wake, "pushed_bytes": self.install.pushed_bytes, "error": None,
                    "suspended_while_busy": suspended_while_busy, "agent_replaced": replaced}
        )
        self._attempt = 0
        if self._platform is not None:
            self._platform.link_up()
        self._on_status(status)
        self._first_status.set()
        self._rt.tasks.append(asyncio.get_running_loop().create_task(watch_liveness(
            link, lambda: self._pings_due(), self._proof.note_own_traffic)))

    async def _open_shell(self) -> HostShell:
        """A shell on the host (sessions/shell_opening.py); an unknown host key is asked about."""
        answerer = self.host_key_answerer

        def say(state: ConnectionState, fingerprint: str | None) -> None:
            if fingerprint is None:
                self._set_state(state)
            else:
                self._set_state(state, host_key_fingerprint=fingerprint)

        ask = None if answerer is None else lambda q: answerer(self, q)
        return await open_shell(self._runner, self.provider, self.host, ask, say)
