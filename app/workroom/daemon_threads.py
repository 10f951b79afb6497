"""Worker threads that a leaving process does not wait for.

ThreadPoolExecutor's workers are not daemon threads: since Python 3.9 the interpreter joins them on the way
out, whatever `shutdown(wait=False)` said. So a call stuck in a network wait — an SSH handshake with a server
that never answers, an HTTP poll of a slow health URL — kept the process alive after Ctrl-C or Quit until that
wait ran out (`workroom status --watch` took more than 30 s to end in CI; 9.8 s with one mute SSH server,
0.3 s with these threads). Nothing such a call does needs finishing once the process is leaving: a partial
agent upload is never run (it is checked by hash before the hand-off), a poll's answer has nobody to go to,
and the kernel closes the sockets.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

T = TypeVar("T")
_Call = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class DaemonThreads(Executor):
    """`workers` daemon threads (started with the first call) that run what is submitted; with one worker, in
    the order submitted."""

    def __init__(self, name: str, workers: int = 1) -> None:
        if workers < 1:
            raise ValueError("at least one worker")
        self._name = name
        self._workers = workers
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name} is shut down")
            future: Future[T] = Future()
            self._calls.put((future, fn, args, kwargs))
            if not self._threads:
                for n in range(self._workers):
                    name = self._name if self._workers == 1 else f"{self._name}-{n}"
                    thread = threading.Thread(target=self._work, name=name, daemon=True)
                    thread.start()
                    self._threads.append(thread)
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
        self._calls.put(None)  # the next worker ends too

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._closed = True
            if cancel_futures:
                with contextlib.suppress(queue.Empty):
                    while (call := self._calls.get_nowait()) is not None:
                        call[0].cancel()
            self._calls.put(None)
            threads = list(self._threads)
        if wait:
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join()
