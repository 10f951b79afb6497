"""What the provider's idle clock says of one host, for as long as its session is live: is the keep-awake seen
(docs/providers.md, "Is the heartbeat seen?"), and, for an idle box, when it will sleep (core.box_times).

While a box that sleeps is kept awake (the agent's heartbeat on a network-metered box, or this computer's polls
on a request-metered one), `HeartbeatWatch` reads the provider's idle clock and judges whether the keep-awake
moves it. This is what the session does with those judgements: a miss is said only after the link is known to
be alive (one ask; a dead link is a loss, not a missed heartbeat), a reset the provider saw is matched to the
agent's own last heartbeat (one ask of its status, right after the reading), and an agent that does not answer
is frozen (the session replaces it). It also keeps when our own bytes last crossed the box's wire, which the
judge discounts where they move the idle clock, and says when the session's pings would hide a missing heartbeat.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, Protocol

from workroom.core.connection import ConnectionInfo
from workroom.core.errors import UserError
from workroom.core.heartbeat_proof import HeartbeatProof, IdleClockReading, ProofState
from workroom.core.hosts import Host
from workroom.core.metering import Keeper
from workroom.core.protocol import Method, ProtocolError, Status, Verdict
from workroom.core.traits import ProviderTraits
from workroom.providers.base import Provider
from workroom.remote.agent_link import AgentLink
from workroom.sessions.heartbeat_watch import HeartbeatWatch, keep_awake_interval

log = logging.getLogger(__name__)

CONFIRM_ASK_SECONDS = 3.0
"""How long the agent may take to answer the ask that confirms a heartbeat (or the ping after a missed one):
it answers at once; past this it is frozen. A frozen agent is so named within one interval, the margin and this."""
HEARTBEAT_MATCH_SECONDS = 2.5
"""How close the provider's last activity must be to the agent's last heartbeat to be that heartbeat: the
provider samples its meter about once a second, and the two clocks are matched over one round trip."""


class WatchedSession(Protocol):
    """What the proof reads and changes of its session (`HostSession`)."""

    connection: ConnectionInfo
    status: Status | None
    status_received_at: float | None

    def update(self, *, publish: bool = False, **fields: Any) -> None: ...


class ProofKeeper:
    """The proof of one host's keep-awake. The session gives it each status (`take`), notes its own traffic
    (`note_own_traffic`), asks it whether a ping is due (`ping_due`) and stops it with the link (`stop`); it shows
    on the session's connection the proof and the idle clock's reading, gives the session a status an ask brought
    back (`on_status`), and closes the link of an agent that does not answer (`frozen()` first: the reconnect
    must replace it). `link()` is the session's live link."""

    def __init__(self, host: Host, provider: Provider, traits: ProviderTraits, session: WatchedSession, *,
                 clock: Callable[[], float], link: Callable[[], AgentLink | None],
                 on_status: Callable[[Status], None], frozen: Callable[[], None]) -> None:
        self._host, self._provider, self._traits, self._clock = host, provider, traits, clock
        self._session, self._link, self._on_status, self._frozen = session, link, on_status, frozen
        self._watch: HeartbeatWatch | None = None
        self._check: asyncio.Task[None] | None = None
        self._idle_read: asyncio.Task[None] | None = None
        self.own_traffic_at: float | None = None
        """When the app last put bytes on the box's wire (link set-up, a status, a ping, an ask)."""

    def take(self, status: Status) -> None:
        """A status came over the link (our own bytes crossed the wire): a stalled agent's link is closed (the
        reconnect replaces it), its keep-awake watched, and the idle clock read afresh for an idle one."""
        self.note_own_traffic()
        link = self._link()
        if status.stalled and self._traits.metering.sleeps and link is not None and not link.closed.done() and (
                status.verdict is Verdict.BUSY or status.classifier_verdict is Verdict.BUSY):
            # It says it has stopped checking: nothing keeps the box awake. The reconnect replaces it (the
            # direct link refuses a stalled agent; the probe restarts it).
            asyncio.get_running_loop().call_soon(link.close, "the agent has stalled (no check for 30 s)")
        self.watch_for(status)
        if self._session.connection.idle_clock is not None:
            self._session.update(idle_clock=None)
        self.read_idle_clock(status, self._traits.metering.sleeps)

    def watch_for(self, status: Status | None) -> None:
        self.watch(status, outside_running=self._session.connection.keepawake_running)

    def _agent_frozen(self, link: AgentLink, how: str) -> None:
        """The agent does not answer: say it has stalled (busy but not kept awake), close the link, and let the
        reconnect replace it (the probe finds it frozen; agent_reach, agent_install)."""
        received = self._session.status_received_at
        self._session.update(agent_silent_since=received if received is not None else self._clock())
        log.info("%s: the agent %s: frozen; replacing it", self._host.name, how)
        self._frozen()
        self._session.update(publish=True)
        link.close(f"the agent {how} (frozen)")

    def _current(self) -> HeartbeatProof | None:
        return self._session.connection.heartbeat_proof

    def _show(self, proof: HeartbeatProof | None, publish: bool) -> None:
        self._session.update(publish=publish, heartbeat_proof=proof)

    def _reading(self, status: Status, reading: IdleClockReading) -> None:
        """The provider's idle clock, read once for an idle status: the faces say when it will sleep."""
        if self._session.status is status and self._session.connection.spec.live:
            self._session.update(publish=True, idle_clock=reading)

    def note_own_traffic(self) -> None:
        self.own_traffic_at = self._clock()

    def watch(self, status: Status | None, *, outside_running: bool) -> None:
        """Watch (or stop watching) for this status: the keep-awake's period to judge against, if any."""
        interval = None if status is None else keep_awake_interval(
            self._traits, status, outside_running=outside_running)
        watch = self._watch
        if watch is not None and (interval is None or watch.interval_seconds != interval):
            watch.stop()
            self._watch = watch = None
            self._show(None, False)
        if watch is None and interval is not None:
            self._watch = HeartbeatWatch(
                lambda: self._provider.read_idle_clock(self._host), interval_seconds=interval,
                window_seconds=self._traits.idle_window_seconds, own_traffic_at=self._own_traffic_counted,
                on_proof=self._on_proof, clock=self._clock, name=f"heartbeat-watch-{self._host.name}",
                confirm=self._confirm_heartbeat if self._traits.metering.keeper is Keeper.AGENT_HEARTBEAT else None)

    def stop(self) -> None:
        """The link is down: no check or read in flight, nothing watched."""
        if self._check is not None:
            self._check.cancel()
        self._cancel_idle_read()
        self.watch(None, outside_running=False)

    def read_idle_clock(self, status: Status, sleeps: bool) -> None:
        """An idle status on a box that sleeps: read the provider's idle clock once (from the provider, never
        over the box's wire), so the faces can say when it will sleep (`reading(status, reading)`, core.box_times).
        Any other status cancels a read still in flight."""
        self._cancel_idle_read()
        if not sleeps or status.verdict is not Verdict.IDLE:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a status fed by hand, outside the session's loop
            return

        async def read() -> None:
            try:
                reading = await self._provider.read_idle_clock(self._host)
            except Exception:  # a provider's bug costs the estimate, never the session
                log.exception("reading the idle clock of %s failed", self._host.name)
                return
            if reading is not None:
                self._reading(status, reading)

        self._idle_read = loop.create_task(read(), name=f"idle-clock-{self._host.name}")

    def _cancel_idle_read(self) -> None:
        if self._idle_read is not None:
            self._idle_read.cancel()
            self._idle_read = None

    def ping_due(self) -> bool:
        """Ping while a peer must be watched; silence while a sleepable box is idle, and while the keep-awake is
        being proven where our own bytes reset the provider's clock too (they would hide a missing heartbeat):
        the provider's readings stand in for the pings."""
        status = self._session.status
        if self._traits.metering.sleeps and (status is None or status.verdict is Verdict.IDLE):
            return False
        watch = self._watch
        if watch is None or watch.task.done() or not self._traits.metering.own_traffic_resets_clock:
            return True
        proof = self._current()
        return proof is not None and proof.read_at is None  # the provider could not be read: ping as usual

    def _own_traffic_counted(self) -> float | None:
        """Our own traffic as the provider's meter sees it: bytes on the box's wire where they move its idle
        clock (the metering row says); else nothing (a request meter counts only requests, and our polls are
        the keep-awake itself)."""
        return self.own_traffic_at if self._traits.metering.own_traffic_resets_clock else None

    def _on_proof(self, proof: HeartbeatProof) -> None:
        was = self._current()
        if proof == was:
            return
        link = self._link()
        if proof.state is ProofState.NOT_SEEN and (was is None or was.state is not ProofState.NOT_SEEN):
            if link is None or link.closed.done():
                return  # the link is down (its loss is being said, and the watch stops with it): no proof of a miss
            # No pings run while the proof is read, so a link that died silently (this computer slept) would
            # still show the job's BUSY: ask once before saying "not kept awake". A dead link is a loss, not a
            # missed heartbeat; the ping is our own traffic, which the judge discounts from here on.
            self._check = asyncio.get_running_loop().create_task(
                self._confirm_link_then_show(link, proof), name=f"proof-link-{self._host.name}")
            return
        self._show(proof, True)

    async def _confirm_link_then_show(self, link: AgentLink, proof: HeartbeatProof) -> None:
        self.note_own_traffic()
        try:
            await link.client.ping(timeout=CONFIRM_ASK_SECONDS)
        except TimeoutError:
            self._agent_frozen(link, f"sent no heartbeat and did not answer within {CONFIRM_ASK_SECONDS:.0f} s")
            return
        except Exception as error:  # an unwatched connection is worse than a reconnect
            link.close(f"the liveness check failed: {error}")
            return
        if self._link() is link and not link.closed.done():
            self._show(proof, True)

    async def _confirm_heartbeat(self, proof: HeartbeatProof) -> bool | None:
        """Was the reset the provider saw this agent's heartbeat? Ask the agent once (its status: when it sent its
        last heartbeat), right after the reading that showed the reset, far from the next heartbeat, so the
        ask's own bytes (counted as ours) never stand in for a heartbeat. True: the agent is ticking and sent a
        heartbeat when the provider saw activity; False: it answered, but what the provider saw was something
        else (a job's traffic, a person's ssh); None: no answer — it is frozen, the link is closed, and the
        reconnect replaces it (docs/providers.md, "Is the heartbeat seen?")."""
        link = self._link()
        if link is None or link.closed.done() or proof.last_seen_at is None:
            return None
        self.note_own_traffic()
        try:
            status = await link.client.call(Method.STATUS, timeout=CONFIRM_ASK_SECONDS)
        except TimeoutError:
            self._agent_frozen(link, f"did not answer within {CONFIRM_ASK_SECONDS:.0f} s")
            return None
        except (UserError, ProtocolError, OSError, EOFError):
            return None  # the link's own trouble: its loss is noticed and said where it always is
        received = self._clock()
        self._on_status(status)
        keep = status.keep_awake
        if keep is None or keep.last_sent is None:
            return False
        sent_here = received - (status.monotonic - keep.last_sent)
        return abs(sent_here - proof.last_seen_at) <= HEARTBEAT_MATCH_SECONDS
