"""The one way blocking work runs: one thread per host, calls in order, results awaited on the loop.

paramiko (and a keyring unlock, and an agent push) blocks; the event loop is the GUI thread, so every
such call for a host goes through that host's `BlockingRunner`. Calls never overlap, so two operations
on one connection cannot interleave. The only other threads are the ones a long-lived stream needs to
read and write (two per agent relay, in `remote/agent_link.py`): such a stream stays open for hours and cannot
sit in the host's queue, and a send stuck on its peer holds its own link alone.

The host's thread is a daemon thread (workroom.daemon_threads says why): a call stuck in the network must not
keep the process alive after Ctrl-C or Quit.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, Protocol, TypeVar

from workroom.daemon_threads import DaemonThreads

T = TypeVar("T")


class _Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


class BlockingRunner:
    """Runs blocking calls for one host in order on one thread (paramiko never on the event loop)."""

    def __init__(self, name: str) -> None:
        self._pool = DaemonThreads(f"wr-host-{name}")

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    async def run_closing_on_cancel(self, fn: Callable[..., C], *args: Any) -> C:
        """Like `run`, for calls that return something to close: if the waiter is cancelled (the user
        disconnected mid-connect), the result is closed when it arrives instead of leaking."""
        future = self._pool.submit(fn, *args)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            def close_late(done: Future[C]) -> None:
                if not done.cancelled() and done.exception() is None:
                    with contextlib.suppress(Exception):
                        done.result().close()

            future.add_done_callback(close_late)
            raise

    def shutdown(self) -> None:
        """Cancel queued calls; a call already running finishes on its own thread."""
        self._pool.shutdown(wait=False, cancel_futures=True)


async def cancel_until_done(task: asyncio.Task[Any], tries: int, every: float) -> bool:
    """Cancel `task` and wait for it to end, asking again every `every` seconds, `tries` times at most: a cancel
    can be lost (Python 3.11's wait_for returns a result that came in the same moment as the cancel and drops the
    cancel). Whether it ended; one that will not end is left, never waited on for ever (an app's quit, a removed
    host)."""
    for _ in range(tries):
        task.cancel()
        await asyncio.wait({task}, timeout=every)
        if task.done():
            with contextlib.suppress(asyncio.CancelledError, Exception):
                task.result()
            return True
    return False
