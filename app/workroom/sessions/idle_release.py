"""Never hold a session on an idle box where an open session is activity (metering `sessions`: Coder, Codespaces).

While the agent's verdict says the box need not be kept up (IDLE, a prompt run out, Let it sleep, or past an
advisory awake ceiling) the session lets go within a few seconds (`IdleRelease`), and the app then learns of new
work from the platform's list on a slow cadence that costs the box nothing (`ReleasedWatch`): the box stopped,
or someone used it (a new run, or its last use moved later than the app's own session can explain). It never
reconnects on a timer. docs/providers.md, "Coder and Codespaces".
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from workroom.core.host_snapshot import wants_session
from workroom.core.platform_clock import PlatformClock, PlatformRules, PlatformState
from workroom.core.protocol import Status

log = logging.getLogger(__name__)

FIRST_LOOK_SECONDS = 6.0
"""A link is held at least this long: an agent that has just started (or woken) says IDLE before its classifier
has seen the work already running (a timer sleep counts once it has lasted 3 s; a resume mask of 3 s follows a
tick gap), and letting go on that first word would miss the job until someone used the box again."""


class IdleRelease:
    """Calls `release()` once the statuses have said "no need to keep it up" for `after` seconds straight."""

    def __init__(self, name: str, after: float, release: Callable[[], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._name = name
        self._after = after
        self._release = release
        self._clock = clock
        self._not_before = 0.0
        self._timer: asyncio.TimerHandle | None = None

    def link_up(self) -> None:
        """A new link: hold it at least `FIRST_LOOK_SECONDS`, whatever its first statuses say."""
        self._not_before = self._clock() + FIRST_LOOK_SECONDS

    def on_status(self, status: Status) -> None:
        if wants_session(status):
            self.cancel()
        elif self._timer is None:
            delay = max(self._after, self._not_before - self._clock())
            self._timer = asyncio.get_running_loop().call_later(delay, self._fire)

    def _fire(self) -> None:
        self._timer = None
        log.info("%s: idle where a session is activity; letting go of the session", self._name)
        self._release()

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class ReleasedWatch:
    """While the app holds no session: the platform's list, read every `read_interval_seconds`."""

    def __init__(self, name: str, read: Callable[[], Awaitable[PlatformClock | None]], rules: PlatformRules, *,
                 released_at: float, run: str | None, on_clock: Callable[[PlatformClock], None],
                 on_stopped: Callable[[], None], on_used: Callable[[], None],
                 wall: Callable[[], float] = time.time) -> None:
        self._read = read
        self._rules = rules
        self._released_at = released_at
        self._run = run
        self._on_clock = on_clock
        self._on_stopped = on_stopped
        self._on_used = on_used
        self._wall = wall
        self.reads = 0
        self.task = asyncio.get_running_loop().create_task(self._watch(), name=f"released-{name}")

    def stop(self) -> None:
        self.task.cancel()

    def used_by_someone(self, clock: PlatformClock) -> bool:
        """A new run, or a last use later than the app's own session's echo can be (`outside_use_grace_seconds`)."""
        if self._run is not None and clock.build is not None and clock.build != self._run:
            return True
        echo_until = self._released_at + self._rules.outside_use_grace_seconds
        return clock.last_used is not None and clock.last_used > echo_until

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self._rules.read_interval_seconds)
            clock = await self._read()
            self.reads += 1
            if clock is None:
                continue
            self._on_clock(clock)
            if clock.state is PlatformState.STOPPED:
                self._on_stopped()
                return
            if clock.state is PlatformState.RUNNING and self.used_by_someone(clock):
                self._on_used()
                return
