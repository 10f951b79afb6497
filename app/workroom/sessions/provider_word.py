"""The provider's word on one box, read without waking it (docs/providers.md): whether a run may connect, and,
while the box is asleep or its provider cannot say, a look now and then.

A session asks `may_connect` before it opens anything: a box asleep is connected to only on the user's wake; a
sleepable box whose state cannot be read only on the user's explicit connect; a platform's box that is not running
is started only by the user's wake, through the platform's own start command, and one the app let go of while idle
is watched through the platform's list instead of a session. Each refusal is an `EndOfRun` saying where the
session settles. After a run ends asleep (or unreadable), `watch_asleep` looks again on the provider's cadence and
hands a box someone else woke back to the session.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from workroom.core.connection import ConnectionInfo, ConnectionState
from workroom.core.errors import UserError
from workroom.core.hosts import Host
from workroom.core.platform_clock import PlatformClock
from workroom.core.traits import ProviderTraits
from workroom.providers.base import BoxState, Provider, ProviderUnreadable
from workroom.sessions.reconnect_rules import EndOfRun, asleep_recheck_seconds

log = logging.getLogger(__name__)

WATCHED = (ConnectionState.ASLEEP, ConnectionState.UNREADABLE)
"""The states a session looks again from, without waking the box."""


@dataclass(frozen=True)
class ConnectAsk:
    """What this run may do to the box: `wake` it (the user's Wake and connect), connect where its state is
    `unknown`; and, for a platform box the app let go of while idle, `let_go(clock)` answers from the platform's
    clock whether it stays let go (None: not such a box)."""

    wake: bool
    unknown: bool
    let_go: Callable[[PlatformClock | None], bool] | None = None


class ProviderWord:
    """One host's provider, asked what the box is doing. `noted` takes the platform clock a state read came with
    (an asleep box's stop reason goes with the next snapshot)."""

    def __init__(self, host: Host, provider: Provider, traits: ProviderTraits,
                 noted: Callable[[PlatformClock], None]) -> None:
        self.host, self.provider, self.traits = host, provider, traits
        self._noted = noted
        self._watch: asyncio.Task[None] | None = None

    async def box_state(self) -> BoxState | ProviderUnreadable:
        """The provider's word on the box (every provider answers: docs/providers.md); why it could not be read,
        when the provider says (a provider's bug counts as unknown, and is logged)."""
        try:
            box = await self.provider.box_state(self.host)
            self._note_clock()
            return box
        except ProviderUnreadable as unreadable:
            self._note_clock()
            log.info("%s: %s", self.host.name, unreadable.message)
            return unreadable
        except Exception:
            log.exception("reading the state of %s failed", self.host.name)
            return BoxState.UNKNOWN

    def _note_clock(self) -> None:
        clock = self.provider.last_platform_clock(self.host)
        if clock is not None:
            self._noted(clock)

    async def may_connect(self, ask: ConnectAsk, connecting: Callable[[], None]) -> bool:
        """Whether this run may connect, from the provider's word; `connecting()` is called where a wake starts
        the box. Returns whether the box was asleep (a timed wake); raises EndOfRun where the run ends instead."""
        box = await self.box_state()
        sleeps = self.traits.metering.sleeps
        if isinstance(box, ProviderUnreadable):
            if sleeps and (not ask.wake or self.provider.connects_only_when_awake):
                # It may be asleep, and the provider cannot say: only an explicit wake may reach it (and not even
                # that where connecting itself would start it: a platform's tunnel).
                raise EndOfRun(ConnectionState.UNREADABLE, box, why="provider unreadable")
            box = BoxState.UNKNOWN  # the user's Wake and connect: reach it all the same
        was_asleep = box is BoxState.ASLEEP
        if was_asleep and not ask.wake:
            raise EndOfRun.asleep()
        if self.provider.connects_only_when_awake:
            box = await self._awake_or_end(box, ask, connecting)
        if sleeps and box is BoxState.UNKNOWN and not ask.unknown:
            raise EndOfRun(ConnectionState.DISCONNECTED, UserError(
                "Not connected", f"{self.host.name} may be asleep, and connecting would wake it.",
                "Click Connect when you need it."), why="would wake")
        return was_asleep

    async def _awake_or_end(self, box: BoxState, ask: ConnectAsk, connecting: Callable[[], None]) -> BoxState:
        """Where connecting itself would start a box that is not running right now (a platform's tunnel): an
        asleep box is started only by the user's wake, through the platform's own start command; any other
        state than awake ends the run, saying what the platform said, and nothing connects."""
        if box is BoxState.ASLEEP and ask.wake:
            connecting()
            await self.provider.wake(self.host)
            return BoxState.AWAKE
        if box is not BoxState.AWAKE:
            words = self.provider.state_words(self.host) or "its platform cannot say whether it runs"
            raise EndOfRun(ConnectionState.DISCONNECTED, UserError(
                "Not connected", f"{self.host.name}: {words}.",
                "Connecting now could start it; the app connects once its platform says it runs."), why=words)
        # A background connect to a box the app let go of while idle: a session would be activity; if nobody has
        # used it since, go on watching the list instead.
        if ask.let_go is not None and not ask.unknown and ask.let_go(await self.provider.platform_clock(self.host)):
            raise EndOfRun(ConnectionState.RELEASED, why="still idle, as the app let go of it")
        return box

    def watch_asleep(self, current: Callable[[], ConnectionInfo], wanted: Callable[[], bool],
                     woke: Callable[[], None], say: Callable[[ConnectionState, UserError | None], None]) -> None:
        """While the session is asleep or unreadable (`current()`) and not wanted, look again now and then: a box
        woken by someone else is handed back (`woke()`), so its prompts and badge are live; a provider that
        answers again says asleep or awake; one that stops answering is said to be unreadable, never left
        "asleep"."""

        async def watch() -> None:
            while current().state in WATCHED and not wanted():
                await asyncio.sleep(asleep_recheck_seconds(self.traits.idle_window_seconds))
                if current().state not in WATCHED or wanted():
                    return
                box = await self.box_state()
                if box is BoxState.AWAKE:
                    woke()
                    return
                info = current()
                if isinstance(box, ProviderUnreadable):
                    if info.state is not ConnectionState.UNREADABLE or info.error != box.info():
                        say(ConnectionState.UNREADABLE, box)
                elif box is BoxState.ASLEEP and info.state is not ConnectionState.ASLEEP:
                    say(ConnectionState.ASLEEP, None)

        if self._watch is None or self._watch.done():
            self._watch = asyncio.get_running_loop().create_task(watch(), name=f"asleep-{self.host.name}")

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()

