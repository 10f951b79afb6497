"""One worker thread per host, and one reader thread per long-lived stream.

paramiko blocks, and two operations on one connection must not interleave, so every call for a host
goes through that host's `HostWorker`: run in order, one at a time, off the event loop. A stream
that stays open for hours (the agent relay) cannot sit in that queue, so it gets a `LineReader`
thread of its own that hands complete lines to a callback and reports the end exactly once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Callable
from typing import Any, ParamSpec, Protocol, TypeVar

from workroom.core.errors import UserError

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_MAX_LINE = 1 << 20  # far above the protocol's 64 KiB, only to bound memory on garbage


class WorkerStopped(UserError):
    """Work was handed to a host worker that has been shut down."""


class HostWorker:
    """Runs blocking calls for one host on one thread, in submission order.

    `submit` returns a `concurrent.futures.Future`; `await worker.run(...)` does the same from
    asyncio without blocking the loop. `shutdown` cancels whatever has not started yet.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                               thread_name_prefix=f"host-{name}")
        self._stopped = False

    def submit(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> concurrent.futures.Future[T]:
        if self._stopped:
            raise self._stopped_error()
        try:
            return self._executor.submit(fn, *args, **kwargs)
        except RuntimeError:  # shut down between the check and the submit
            raise self._stopped_error() from None

    async def run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run on this host's thread and await the result (cancelling the await cancels queued work)."""
        return await asyncio.wrap_future(self.submit(fn, *args, **kwargs))

    def shutdown(self, wait: bool = False) -> None:
        """Stop taking work and cancel what is queued; the running call finishes (close its connection
        first to make it end promptly). With `wait`, block until the thread is done."""
        self._stopped = True
        self._executor.shutdown(wait=wait, cancel_futures=True)

    @property
    def stopped(self) -> bool:
        return self._stopped

    def _stopped_error(self) -> WorkerStopped:
        return WorkerStopped("Host is shutting down", f"No more work is accepted for {self.name}.",
                             "Reconnect to the host.")


class LineSource(Protocol):
    """What `LineReader` reads: `ExecStream` fits; so does any socket-like object with these."""

    def recv(self, size: int) -> bytes: ...

    def close(self) -> None: ...

    def end_error(self) -> UserError | None: ...


class StreamBroken(UserError):
    """The stream sent something that is not newline-delimited text we can use."""


class LineReader:
    """Reads a stream on its own thread and calls `on_line(line)` for each complete line (without
    the newline), then `on_end(error)` exactly once: None for a clean end, else the reason.

    The callbacks run on the reader thread: hand off to your loop (`loop.call_soon_threadsafe`). If
    `on_line` raises, reading stops, the stream is closed and the exception goes to `on_end`.
    """

    def __init__(self, source: LineSource, on_line: Callable[[bytes], Any],
                 on_end: Callable[[BaseException | None], Any], *, name: str = "line-reader",
                 max_line: int = DEFAULT_MAX_LINE) -> None:
        self._source = source
        self._on_line = on_line
        self._on_end = on_end
        self._max_line = max_line
        self._stopping = False
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> LineReader:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close the stream; the reader then ends (with `on_end(None)` unless it had already ended)."""
        self._stopping = True
        with contextlib.suppress(Exception):
            self._source.close()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the end to have been reported; True if it has."""
        return self._ended.wait(timeout)

    @property
    def ended(self) -> bool:
        return self._ended.is_set()

    def _run(self) -> None:
        error: BaseException | None = None
        try:
            error = self._pump()
        except BaseException as exc:  # a bug or on_line raising: report it, never die silently
            error = exc
        if error is not None:
            with contextlib.suppress(Exception):
                self._source.close()
        try:
            self._on_end(None if self._stopping and not isinstance(error, StreamBroken) else error)
        finally:
            self._ended.set()

    def _pump(self) -> BaseException | None:
        pending = bytearray()
        while True:
            chunk = self._source.recv(65536)
            if not chunk:
                break
            pending += chunk
            start = 0
            while (newline := pending.find(b"\n", start)) >= 0:
                self._on_line(bytes(pending[start:newline]))
                start = newline + 1
            del pending[:start]
            if len(pending) > self._max_line:
                return StreamBroken("Bad data from the host",
                                    f"The stream sent a line longer than {self._max_line} bytes.",
                                    "Reconnect; if it happens again, update the agent on the host.")
        if self._stopping:
            return None
        end = self._source.end_error()
        if end is None and pending:
            return StreamBroken("Stream ended early", "The host's stream stopped in the middle of a line.",
                                "Reconnect.")
        return end
