"""The one way blocking work runs: one thread per host, calls in order, results awaited on the loop.

paramiko (and a keyring unlock, and an agent push) blocks; the event loop is the GUI thread, so every
such call for a host goes through that host's `BlockingRunner`. Calls never overlap, so two operations
on one connection cannot interleave. The only other threads are the ones a long-lived stream needs to
read (one per agent relay, in `remote/agent_link.py`): such a stream stays open for hours and cannot sit
in the host's queue.

The host's thread is a daemon thread. ThreadPoolExecutor's workers are not (since Python 3.9 the interpreter
joins them on the way out), so a call stuck in a network wait — an SSH handshake with a server that never
answers, bounded only by its timeout — kept the process alive after Ctrl-C or Quit until that wait ran out
(`workroom status --watch` took more than 30 s to end in CI). Nothing a host's call does needs finishing once
the process is leaving: a partial agent upload is never run (it is verified by hash before the hand-off), and
the kernel closes the sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class _Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


_Call = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class HostThread(Executor):
    """One daemon thread that runs the calls submitted to it in order (started with the first call)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name} is shut down")
            future: Future[T] = Future()
            self._calls.put((future, fn, args, kwargs))
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name=self._name, daemon=True)
                self._thread.start()
            return future

    def _work(self) -> None:
        while (call := self._calls.get()) is not None:
            future, fn, args, kwargs = call
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to the waiter, as ThreadPoolExecutor does
                future.set_exception(exc)
            else:
                future.set_result(result)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            if cancel_futures:
                with contextlib.suppress(queue.Empty):
                    while (call := self._calls.get_nowait()) is not None:
                        call[0].cancel()
            self._calls.put(None)
            thread = self._thread
        if wait and thread is not None and thread is not threading.current_thread():
            thread.join()


class BlockingRunner:
    """Runs blocking calls for one host in order on one thread (paramiko never on the event loop)."""

    def __init__(self, name: str) -> None:
        self._pool = HostThread(f"wr-host-{name}")

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
