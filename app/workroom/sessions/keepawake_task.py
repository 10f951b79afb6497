"""KeepAwake's runner: drives the pure policy (core.keepawake) on the asyncio loop.

The poll is the caller's (see KeepAwake in docs/providers.md): a coroutine returning a `PollOutcome`. A
caller holding a session passes one that first checks that the session still wants the box and answers
`PollOutcome.not_running()` instead of polling a box the user let go of (a poll would resume it).
The task stops when cancelled or when its handle is dropped, and ends with a `KeepAwakeReport` or a
`KeepAwakeError` once more consecutive failures than tolerated have happened.
"""

from __future__ import annotations

import asyncio
import math
import time
import weakref
from collections.abc import Awaitable, Callable

from workroom.core.host_snapshot import kept_until, wants_session
from workroom.core.keepawake import (
    Act,
    CheckAt,
    Finished,
    GaveUp,
    KeepAwakeEnd,
    KeepAwakePolicy,
    KeepAwakePolicyError,
    KeepAwakeReport,
    KeepAwakeState,
    PollOutcome,
)
from workroom.core.metering import Keeper
from workroom.core.protocol import Status, Verdict
from workroom.core.traits import ProviderTraits
from workroom.sessions.session_keeper import SessionKeeper

PollFn = Callable[[], Awaitable[PollOutcome]]


async def run_keep_awake(policy: KeepAwakePolicy, poll: PollFn, *,
                         clock: Callable[[], float] = time.monotonic,
                         stopped_because: Callable[[], KeepAwakeEnd] = lambda: KeepAwakeEnd.STOPPED,
                         kept_until: Callable[[], float] = lambda: math.inf,
                         ) -> KeepAwakeReport:
    """Run until the policy ends, keeping the box up until `kept_until()` (on `clock`, asked at each step);
    cancelled -> returns a report ended `stopped_because()` (not an exception)."""
    state = KeepAwakeState.begin(policy, clock())
    try:
        while True:
            state, action = state.next_action(clock(), kept_until())
            if isinstance(action, Act):
                started = clock()
                try:
                    outcome = await poll()
                except (OSError, TimeoutError) as error:
                    outcome = PollOutcome.failed(f"{type(error).__name__}: {error}")
                state, action = state.on_poll_result(outcome, started, kept_until())
            if isinstance(action, Finished):
                return action.report
            if isinstance(action, GaveUp):
                raise action.error
            if isinstance(action, CheckAt):
                await asyncio.sleep(max(0.0, action.at - clock()))
    except asyncio.CancelledError:
        return state.stop(stopped_because()).report()


class KeepAwakeTask:
    """A keep-awake running in the background. Dropping the handle (or `stop()`) stops the task."""

    def __init__(self, policy: KeepAwakePolicy, poll: PollFn, *, name: str = "keep-awake",
                 until: float = math.inf) -> None:
        policy.validate()
        # The task sees these lists, not this handle (dropping the handle stops the task).
        why = self._why = [KeepAwakeEnd.STOPPED]
        kept = self._until = [until]
        self.task: asyncio.Task[KeepAwakeReport] = asyncio.get_running_loop().create_task(
            run_keep_awake(policy, poll, stopped_because=lambda: why[0],
                           kept_until=lambda: kept[0]), name=name
        )
        self._finalizer = weakref.finalize(self, self.task.cancel)

    def stop(self, why: KeepAwakeEnd = KeepAwakeEnd.STOPPED) -> None:
        self._why[0] = why
        self.task.cancel()

    def keep_until(self, until: float) -> None:
        """The agent now means to keep the box up until `until` (on the task's clock): from the next step on."""
        self._until[0] = until

    async def wait(self) -> KeepAwakeReport:
        """The report (or the KeepAwakeError once the tolerated failures are exceeded)."""
        return await self.task

    @property
    def running(self) -> bool:
        return not self.task.done()


class OutsideKeepAwake(SessionKeeper):
    """One request-metered host's keep-awake from this computer, as its session drives it.

    Started when the agent says BUSY (and not already running); each poll first asks `still_wanted()`, so
    a box the user let go of is never polled (a poll would resume it). The host's state is reported back
    through `on_change(running, error, ended)`: `error` is the policy's refusal (an idle window too short) or
    why the task gave up, in plain words; `ended` is true when a running task has just ended (the status
    that started or refused one is published by the session anyway).
    """

    def __init__(self, name: str, traits: ProviderTraits, poll: PollFn, still_wanted: Callable[[], bool],
                 on_change: Callable[[bool, str | None, bool], None]) -> None:
        self._name = name
        self._traits = traits
        self._poll = poll
        self._still_wanted = still_wanted
        self._on_change = on_change
        self._task: KeepAwakeTask | None = None
        self.report: KeepAwakeReport | None = None
        """The last run's report (None while running, or when it gave up or was cancelled)."""

    def on_status(self, status: Status) -> None:
        if self._traits.metering.keeper is not Keeper.THIS_COMPUTER:
            return
        if not wants_session(status):  # idle, let sleep, or past its ceiling with no prompt pending
            if self._task is not None and self._task.running:
                # Heard over the link first: no further request through the meter (each one is billed time).
                self._task.stop(KeepAwakeEnd.NO_LONGER_BUSY if status.verdict is not Verdict.BUSY
                                else KeepAwakeEnd.DEADLINE)
            return
        until = kept_until(status, time.monotonic())
        if self._task is not None and self._task.running:
            self._task.keep_until(until)
            return

        async def gated_poll() -> PollOutcome:
            if not self._still_wanted():
                return PollOutcome.not_running()  # never poll (and so resume) a box the user let go of
            return await self._poll()

        try:
            policy = KeepAwakePolicy.new(idle_window_seconds=self._traits.idle_window_seconds).validate()
        except KeepAwakePolicyError as error:
            self._on_change(False, error.message, False)
            return
        self._task = KeepAwakeTask(policy, gated_poll, name=f"keep-awake-{self._name}", until=until)
        self._on_change(True, None, False)
        self._task.task.add_done_callback(self._ended)

    def stop(self) -> None:
        if self._task is not None:
            self._task.stop()

    def _ended(self, task: asyncio.Task[KeepAwakeReport]) -> None:
        failed = None if task.cancelled() else task.exception()
        self.report = None if task.cancelled() or failed is not None else task.result()
        self._on_change(False, str(failed) if failed is not None else None, True)
