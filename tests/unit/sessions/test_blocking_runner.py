"""The workers (workroom.daemon_threads): a host's calls in order on one daemon thread (a leaving process does
not wait for it: tests/integration/engine/test_status_watch_interrupt.py), results and errors back to the
waiter, queued calls cancelled at shutdown, a pool of several that all end."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import CancelledError

import pytest
from workroom.daemon_threads import DaemonThreads
from workroom.sessions.blocking_runner import BlockingRunner

pytestmark = pytest.mark.unit


def test_calls_run_in_order_on_one_daemon_thread() -> None:
    pool = DaemonThreads("wr-host-test")
    seen: list[tuple[int, str, bool]] = []

    def call(n: int) -> int:
        me = threading.current_thread()
        seen.append((n, me.name, me.daemon))
        return n * 2

    futures = [pool.submit(call, n) for n in range(5)]
    assert [f.result(5) for f in futures] == [0, 2, 4, 6, 8]
    assert [n for n, _, _ in seen] == [0, 1, 2, 3, 4]
    assert {(name, daemon) for _, name, daemon in seen} == {("wr-host-test", True)}
    pool.shutdown()


def test_an_error_reaches_the_waiter_and_the_thread_goes_on() -> None:
    runner = BlockingRunner("errs")

    def fail() -> None:
        raise OSError("the host went away")

    async def scenario() -> int:
        with pytest.raises(OSError, match="went away"):
            await runner.run(fail)
        return await runner.run(lambda: 7)

    assert asyncio.run(scenario()) == 7
    runner.shutdown()


def test_shutdown_cancels_what_is_queued_and_refuses_more() -> None:
    pool = DaemonThreads("wr-host-busy")
    release = threading.Event()
    running = pool.submit(release.wait, 5)
    queued = pool.submit(lambda: "never")
    time.sleep(0.05)
    pool.shutdown(wait=False, cancel_futures=True)
    assert queued.cancelled()
    with pytest.raises(RuntimeError, match="shut down"):
        pool.submit(lambda: None)
    release.set()
    assert running.result(5) is True
    with pytest.raises(CancelledError):
        queued.result(0)


def test_several_workers_each_end_at_shutdown() -> None:
    pool = DaemonThreads("wr-poll", workers=3)
    gate = threading.Barrier(3, timeout=5)
    futures = [pool.submit(gate.wait) for _ in range(3)]  # only three threads at once can pass the barrier
    assert sorted(f.result(5) for f in futures) == [0, 1, 2]
    pool.shutdown(wait=True)
    assert not any(t.is_alive() for t in pool._threads)
