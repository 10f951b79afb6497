"""The KeepAwake runner on the real event loop with short intervals; the polls are coroutines that
stand in for GET /v1/health against a box (a real HTTP round trip is in the simulator tests)."""

from __future__ import annotations

import asyncio
import gc
import itertools
import time

import pytest
from workroom.core.keepawake import KeepAwakeEnd, KeepAwakeError, KeepAwakePolicy, PollOutcome
from workroom.sessions.keepawake_task import KeepAwakeTask, run_keep_awake

pytestmark = pytest.mark.unit


def policy(**kw) -> KeepAwakePolicy:  # type: ignore[no-untyped-def]
    return KeepAwakePolicy.new(idle_window_seconds=1.0, interval_seconds=0.1, **kw)


class BusyPolls:
    """A poll that always finds the box busy, counting its calls."""

    def __init__(self) -> None:
        self.count = 0

    async def __call__(self) -> PollOutcome:
        self.count += 1
        return PollOutcome.busy()


def test_polls_at_cadence_until_no_longer_busy() -> None:
    times: list[float] = []

    async def poll() -> PollOutcome:
        times.append(time.monotonic())
        return PollOutcome.busy() if len(times) < 5 else PollOutcome.not_busy()

    report = asyncio.run(run_keep_awake(policy(), poll))
    assert report.ended is KeepAwakeEnd.NO_LONGER_BUSY and report.polls == 5
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert all(0.08 <= g <= 0.3 for g in gaps), gaps


def test_gate_closed_never_reaches_the_box() -> None:
    """The caller's gate checks that the box still runs before polling."""
    box_requests = 0
    running = True
    lock = asyncio.Lock()

    async def main() -> object:
        nonlocal running

        async def gated_poll() -> PollOutcome:
            nonlocal box_requests
            async with lock:
                if not running:
                    return PollOutcome.not_running()
                box_requests += 1
                return PollOutcome.busy()

        task = KeepAwakeTask(policy(), gated_poll)
        await asyncio.sleep(0.25)
        async with lock:
            running = False  # the user suspends the box
            seen = box_requests
        report = await task.wait()
        assert box_requests == seen, "a suspended box was polled (and so would have been resumed)"
        return report

    report = asyncio.run(main())
    assert report.ended is KeepAwakeEnd.GATE_CLOSED


def test_tolerated_failures_then_an_error() -> None:
    calls = 0

    async def poll() -> PollOutcome:
        nonlocal calls
        calls += 1
        raise ConnectionRefusedError("proxy refused")

    with pytest.raises(KeepAwakeError) as info:
        asyncio.run(run_keep_awake(policy(tolerated_errors=2), poll))
    assert calls == 3
    assert info.value.report.failures == 3
    assert "proxy refused" in str(info.value)


def test_a_success_resets_the_failure_count() -> None:
    outcomes = [PollOutcome.failed("x"), PollOutcome.failed("x"), PollOutcome.busy(),
                PollOutcome.failed("x"), PollOutcome.failed("x"), PollOutcome.not_busy()]

    async def poll() -> PollOutcome:
        return outcomes.pop(0)

    report = asyncio.run(run_keep_awake(policy(tolerated_errors=2), poll))
    assert report.ended is KeepAwakeEnd.NO_LONGER_BUSY and report.failures == 4


def test_it_ends_where_the_agent_stops_keeping_the_box_up() -> None:
    """`keep_until` moves the end on a running task: the polls stop as soon as the last one's window covers it
    (a poll past that would keep the box up past the agent's ceiling), and the task ends there."""
    async def main() -> tuple[object, int, int, float]:
        poll = BusyPolls()
        task = KeepAwakeTask(policy(), poll)
        await asyncio.sleep(0.35)
        end = time.monotonic() + 0.3
        task.keep_until(end)  # the agent's ceiling, 0.3 s from now: the last poll's 1 s window covers it
        before = poll.count
        report = await asyncio.wait_for(task.wait(), 5)
        return report, before, poll.count, time.monotonic() - end

    report, before, after, late = asyncio.run(main())
    assert 3 <= before <= 5
    assert after <= before + 1  # at most one poll already on its way
    assert report.ended is KeepAwakeEnd.DEADLINE and -0.05 <= late <= 0.25, (report, late)


def test_cancel_and_drop_both_stop_the_task() -> None:
    async def main() -> tuple[object, int, int]:
        poll = BusyPolls()
        task = KeepAwakeTask(policy(), poll)
        await asyncio.sleep(0.2)
        task.stop()
        report = await task.wait()
        dropped = KeepAwakeTask(policy(), poll)
        inner = dropped.task
        del dropped
        gc.collect()
        await asyncio.sleep(0.05)
        at_drop = poll.count
        await asyncio.sleep(0.3)
        assert inner.done()
        return report, at_drop, poll.count

    report, at_drop, final = asyncio.run(main())
    assert report.ended is KeepAwakeEnd.STOPPED
    assert final == at_drop, "a dropped keep-awake went on polling"


def test_invalid_policy_is_refused_before_starting() -> None:
    async def main() -> None:
        async def poll() -> PollOutcome:
            return PollOutcome.busy()

        KeepAwakeTask(KeepAwakePolicy.new(idle_window_seconds=10, interval_seconds=6), poll)

    from workroom.core.keepawake import KeepAwakePolicyError

    with pytest.raises(KeepAwakePolicyError, match="half the idle window"):
        asyncio.run(main())
