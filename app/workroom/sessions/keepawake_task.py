"""KeepAwake's runner: drives the pure policy (core.keepawake) on the asyncio loop.

The poll is the caller's (see KeepAwake in docs/providers.md): a coroutine returning a `PollOutcome`. A
caller holding a session passes one that first checks that the session still wants the box and answers
`PollOutcome.not_running()` instead of polling a box the user let go of (a poll would resume it).
The task stops when cancelled or when its handle is dropped, and ends with a `KeepAwakeReport` or a
`KeepAwakeError` once more consecutive failures than tolerated have happened.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Awaitable, Callable

from workroom.core.keepawake import (
    Finished,
    GaveUp,
    KeepAwakePolicy,
    KeepAwakeReport,
    KeepAwakeState,
    Poll,
    PollOutcome,
    Wait,
)

PollFn = Callable[[], Awaitable[PollOutcome]]


async def run_keep_awake(policy: KeepAwakePolicy, poll: PollFn, *,
                         clock: Callable[[], float] = time.monotonic,
                         on_state: Callable[[KeepAwakeState], None] | None = None) -> KeepAwakeReport:
    """Run until the policy ends; cancelled -> returns a STOPPED report (not an exception)."""
    state = KeepAwakeState.begin(policy, clock())
    try:
        while True:
            state, action = state.next_action(clock())
            if isinstance(action, Poll):
                started = clock()
                try:
                    outcome = await poll()
                except (OSError, TimeoutError) as error:
                    outcome = PollOutcome.failed(f"{type(error).__name__}: {error}")
                state, action = state.on_poll_result(outcome, started)
                if on_state is not None:
                    on_state(state)
            if isinstance(action, Finished):
                return action.report
            if isinstance(action, GaveUp):
                raise action.error
            if isinstance(action, Wait):
                await asyncio.sleep(max(0.0, action.until_monotonic - clock()))
    except asyncio.CancelledError:
        return state.stop().report()


class KeepAwakeTask:
    """A keep-awake running in the background. Dropping the handle (or `stop()`) stops the task."""

    def __init__(self, policy: KeepAwakePolicy, poll: PollFn, *, name: str = "keep-awake",
                 on_state: Callable[[KeepAwakeState], None] | None = None) -> None:
        policy.validate()
        self.task: asyncio.Task[KeepAwakeReport] = asyncio.get_running_loop().create_task(
            run_keep_awake(policy, poll, on_state=on_state), name=name
        )
        self._finalizer = weakref.finalize(self, self.task.cancel)

    def stop(self) -> None:
        self.task.cancel()

    async def wait(self) -> KeepAwakeReport:
        """The report (or the KeepAwakeError once the tolerated failures are exceeded)."""
        return await self.task

    @property
    def running(self) -> bool:
        return not self.task.done()
