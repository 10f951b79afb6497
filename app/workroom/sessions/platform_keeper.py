"""A busy box on a platform that stops it at a deadline (metering `sessions`), kept up honestly from this computer.

`PlatformKeeper` reads the platform's clock through the provider (its list, never the box) while the agent means
to keep the box up, and extends the deadline through the platform's own call before it passes, never past the
awake ceiling (or a pending prompt's deadline) but by the platform's minimum step, never past the platform's
maximum (core.platform_clock.plan_extension). Ask mode unanswered, Let it sleep and IDLE stop it: the status that
says so ends it. `PlatformSide` is what a `HostSession` holds for such a host: the keeper, the release of an
idle session and the watch of the list while let go (sessions/idle_release.py), published on the connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from workroom.core.durations import format_duration
from workroom.core.errors import UserError
from workroom.core.host_snapshot import kept_until, wants_session
from workroom.core.hosts import Host
from workroom.core.keepawake import Act, Cannot, CheckAt
from workroom.core.metering import NotKeptAwakeReason
from workroom.core.platform_clock import PlatformClock, PlatformRules, PlatformState, plan_extension
from workroom.core.protocol import Status
from workroom.core.traits import ProviderTraits
from workroom.providers.base import Provider
from workroom.remote.agent_link import AgentLink
from workroom.sessions.idle_release import IdleRelease, ReleasedWatch
from workroom.sessions.session_keeper import SessionKeeper

log = logging.getLogger(__name__)

RETRY_AFTER_FAILURE_FRACTION = 0.25
"""After a failed extension, ask again after this share of the lead (several tries before the deadline)."""


@dataclass(frozen=True)
class PlatformView:
    """What the session publishes of the platform: its clock, and why it cannot keep the box up (if so)."""

    clock: PlatformClock | None
    not_kept: NotKeptAwakeReason | None = None
    words: str | None = None
    note: str | None = None


class PlatformKeeper:
    """One busy stretch's keep-alive. `stop()` (or a status that no longer wants the box up) ends it."""

    def __init__(self, name: str, read: Callable[[], Awaitable[PlatformClock | None]],
                 extend: Callable[[float], Awaitable[None]], rules: PlatformRules,
                 on_view: Callable[[PlatformView], None], wall: Callable[[], float] = time.time) -> None:
        self._name = name
        self._read = read
        self._extend = extend
        self._rules = rules
        self._on_view = on_view
        self._wall = wall
        self._until = wall()
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self.extensions: list[float] = []
        """Every deadline this keeper asked for (tests read it; the platform's own record is the truth)."""
        self._note: str | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def keep_until(self, until: float) -> None:
        """The agent means to keep the box up until `until`: start, or tell the running loop."""
        changed = abs(until - self._until) > 1.0
        self._until = until
        if not self.running:
            self._task = asyncio.get_running_loop().create_task(self._run(), name=f"platform-keeper-{self._name}")
        elif changed:
            self._wake.set()

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _pause(self, seconds: float) -> None:
        self._wake.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), max(0.05, seconds))

    async def _run(self) -> None:
        while True:
            clock = await self._read()
            if clock is None:
                return  # this provider keeps no clock
            now = self._wall()
            plan = plan_extension(clock, now=now, kept_until=self._until, rules=self._rules)
            match plan:
                case Act(until=until, passes_ceiling_by=past):
                    try:
                        await self._extend(until)
                    except UserError as refused:
                        log.info("%s: the platform did not extend it: %s", self._name, refused.message)
                        self._on_view(PlatformView(clock, NotKeptAwakeReason.PLATFORM_EXTEND_FAILING,
                                                   refused.message))
                        await self._pause(max(1.0, self._rules.lead_seconds * RETRY_AFTER_FAILURE_FRACTION))
                        continue
                    self.extensions.append(until)
                    log.info("%s: deadline extended to %.0f (%.0f s past the ceiling)", self._name, until, past)
                    self._note = None if past < 1.0 else (
                        f"the last extension reaches {format_duration(past)} past the awake ceiling: the platform's "
                        f"shortest is {format_duration(self._rules.min_extension_seconds)}")
                    continue  # read it back: the platform's list is the proof
                case CheckAt(at=at):
                    self._on_view(PlatformView(clock, note=self._note))
                    await self._pause(at - now)
                case Cannot(reason=reason, words=words):
                    self._on_view(PlatformView(clock, reason, words))
                    await self._pause(self._rules.read_interval_seconds)


class PlatformSide(SessionKeeper):
    """The platform's part of one host's session: keep a busy box up, let go of an idle one, watch while let go.

    Given the session's events (sessions/session_keeper.py), and `watch_released()` once the session has let go;
    this calls back `publish(view)`, closes the session's link when it lets go (the run ends let go, not lost),
    `reconnect()` (the box was used: connect again, no wake) and `stopped()` (the platform stopped it)."""

    @classmethod
    def of(cls, host: Host, provider: Provider, traits: ProviderTraits, **calls: Any) -> PlatformSide | None:
        """The side for a host whose platform counts an open session as activity (core.metering `sessions`);
        None for any other. `calls`: the constructor's callbacks."""
        rules = provider.platform_rules
        if rules is None or traits.metering.session_while_idle:
            return None
        return cls(host.name, rules, lambda: provider.platform_clock(host),
                   lambda until: provider.extend_deadline(host, until), **calls)

    def __init__(self, name: str, rules: PlatformRules, read: Callable[[], Awaitable[PlatformClock | None]],
                 extend: Callable[[float], Awaitable[None]], *, publish: Callable[[PlatformView], None],
                 link: Callable[[], AgentLink | None], reconnect: Callable[[], None], stopped: Callable[[], None],
                 wall: Callable[[], float] = time.time) -> None:
        self.name = name
        self.rules = rules
        self._read = read
        self._publish = publish
        self._link = link
        self._reconnect = reconnect
        self._stopped = stopped
        self._wall = wall
        self.keeper = PlatformKeeper(name, read, extend, rules, publish, wall)
        self._idle = IdleRelease(name, rules.release_after_seconds, self._release)
        self.watch: ReleasedWatch | None = None
        self.releasing = False
        """The session is letting go of its link on purpose (the run ends let go, not lost)."""
        self.released_at: float | None = None
        self._last_run: str | None = None
        self._reading: asyncio.Task[None] | None = None

    def on_status(self, status: Status) -> None:
        self._idle.on_status(status)
        if wants_session(status):
            self.keeper.keep_until(kept_until(status, self._wall()))
        else:
            self.keeper.stop()

    def on_clock(self, clock: PlatformClock) -> None:
        self._last_run = clock.build or self._last_run
        self._publish(PlatformView(clock))

    def _release(self) -> None:
        """Let go of the session (the platform counts it as activity): the run ends RELEASED, not lost."""
        self.keeper.stop()
        self.released_at = self._wall()
        link = self._link()
        if link is None or link.closed.done():
            return  # nothing live to let go of: a loss is handled as a loss
        self.releasing = True
        link.close("let go while idle: an open session is activity on this platform")

    def still_let_go(self, record: dict[str, object] | None, clock: PlatformClock | None) -> bool:
        """A background connect (the app starting, a box seen running) need not open a session: the app last let
        go of this box while it was idle (`record`, what the engine kept of it), it is the same run, and nobody
        has used it since but the app's own session's echo. Then the app goes on watching the list instead."""
        if record is None or record.get("verdict") != "IDLE":
            return False
        if clock is None or clock.state is not PlatformState.RUNNING:
            return False
        released, run = record.get("released_at"), record.get("run")
        if not isinstance(released, int | float) or isinstance(released, bool):
            return False
        if isinstance(run, str) and clock.build is not None and clock.build != run:
            return False
        if clock.last_used is not None and clock.last_used > released + self.rules.outside_use_grace_seconds:
            return False
        self.released_at = float(released)
        self._last_run = run if isinstance(run, str) else clock.build
        return True

    def let_go(self, record: dict[str, object] | None) -> Callable[[PlatformClock | None], bool] | None:
        """For a background connect with what the engine kept of the box (`record`): a check of the platform's
        clock that says whether the box is still let go (`still_let_go`; its clock is then shown)."""
        if record is None:
            return None

        def still(clock: PlatformClock | None) -> bool:
            if not self.still_let_go(record, clock):
                return False
            self._publish(PlatformView(clock))
            return True

        return still

    def link_up(self) -> None:
        """A link is live (a first connect, a reconnect): its agent gets its first look before any letting go, and
        the platform's clock is read once (the row's "stops in", and the run the app lets go of)."""
        self.releasing = False
        self._idle.link_up()
        if not self.keeper.running:
            self._reading = asyncio.get_running_loop().create_task(self._read_once(), name=f"platform-read-{self.name}")

    async def _read_once(self) -> None:
        clock = await self._read()
        if clock is not None:
            self.on_clock(clock)

    def run_started(self) -> None:
        """A new connect: not letting go any more, nor watching the list."""
        self.releasing = False
        self.stop_watching()

    def watch_released(self, run: str | None) -> None:
        """The session has let go: read the platform's list on its slow cadence until the box stops or is used."""
        self.stop_watching()
        self._last_run = run or self._last_run

        def used() -> None:
            log.info("%s: used while let go; connecting again (it is running: no wake)", self.name)
            self._reconnect()

        self.watch = ReleasedWatch(self.name, self._read, self.rules, released_at=self.released_at or self._wall(),
                                   run=self._last_run, on_clock=self.on_clock, on_stopped=self._stopped,
                                   on_used=used, wall=self._wall)

    def link_down(self) -> None:
        self._idle.cancel()
        self.keeper.stop()
        if self._reading is not None:
            self._reading.cancel()

    def stop_watching(self) -> None:
        if self.watch is not None:
            self.watch.stop()
            self.watch = None

    def stop(self) -> None:
        self.link_down()
        self.stop_watching()
