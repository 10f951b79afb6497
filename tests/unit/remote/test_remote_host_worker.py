"""HostWorker ordering and cancellation; LineReader framing and its exactly-once end report.

LineReader reads from a real socketpair here (the SSH stream is covered in the integration tests);
`SocketSource` adapts the socket to the reader's three-method interface.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import threading
import time

import pytest
from workroom.core.errors import UserError
from workroom.remote.host_worker import HostWorker, LineReader, StreamBroken, WorkerStopped

pytestmark = pytest.mark.unit


def test_calls_run_in_order_one_at_a_time() -> None:
    worker = HostWorker("box")
    active = 0
    overlaps = 0
    order: list[int] = []
    lock = threading.Lock()

    def job(n: int) -> int:
        nonlocal active, overlaps
        with lock:
            active += 1
            overlaps += active > 1
        time.sleep(0.002)
        order.append(n)
        with lock:
            active -= 1
        return n * n

    futures = [worker.submit(job, n) for n in range(20)]
    assert [f.result(timeout=5) for f in futures] == [n * n for n in range(20)]
    assert order == list(range(20)) and overlaps == 0
    worker.shutdown(wait=True)


def test_run_awaits_without_blocking_the_loop() -> None:
    worker = HostWorker("box")
    ticks = 0

    async def main() -> str:
        nonlocal ticks

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0.01)

        task = asyncio.create_task(ticker())
        result = await worker.run(lambda: (time.sleep(0.3), "done")[1])
        task.cancel()
        return result

    assert asyncio.run(main()) == "done"
    assert ticks >= 10, "the loop kept running while the worker blocked"
    worker.shutdown(wait=True)


def test_errors_reach_the_awaiting_side() -> None:
    worker = HostWorker("box")

    def fail() -> None:
        raise UserError("Nope", "It failed.", "Try again.")

    with pytest.raises(UserError, match="It failed"):
        asyncio.run(worker.run(fail))
    worker.shutdown(wait=True)


def test_shutdown_cancels_queued_work_and_refuses_more() -> None:
    worker = HostWorker("box")
    release = threading.Event()
    running = worker.submit(release.wait, 5)
    queued = [worker.submit(lambda: "never") for _ in range(3)]
    worker.shutdown(wait=False)
    assert all(f.cancelled() for f in queued)
    release.set()
    assert running.result(timeout=5) is True
    with pytest.raises(WorkerStopped):
        worker.submit(lambda: None)
    assert worker.stopped


def test_cancelling_the_await_cancels_queued_work() -> None:
    worker = HostWorker("box")
    release = threading.Event()
    worker.submit(release.wait, 5)
    started = threading.Event()

    async def main() -> concurrent.futures.Future[None]:
        future = worker.submit(started.set)
        task = asyncio.ensure_future(asyncio.wrap_future(future))
        await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0.01)
        return future

    future = asyncio.run(main())
    release.set()
    worker.shutdown(wait=True)
    assert future.cancelled() and not started.is_set()


class SocketSource:
    """A socket with the reader's interface; `end` is what end_error reports."""

    def __init__(self, sock: socket.socket, end: UserError | None = None) -> None:
        self.sock = sock
        self.end = end
        self.closed = 0

    def recv(self, size: int) -> bytes:
        try:
            return self.sock.recv(size)
        except OSError:
            return b""

    def close(self) -> None:
        self.closed += 1
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def end_error(self) -> UserError | None:
        return self.end


class Collector:
    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.ends: list[BaseException | None] = []

    def on_line(self, line: bytes) -> None:
        self.lines.append(line)

    def on_end(self, error: BaseException | None) -> None:
        self.ends.append(error)


def run_reader(chunks: list[bytes], *, end: UserError | None = None, max_line: int = 1 << 20,
               on_line=None) -> tuple[Collector, SocketSource]:
    ours, theirs = socket.socketpair()
    source = SocketSource(ours, end)
    got = Collector()
    reader = LineReader(source, on_line or got.on_line, got.on_end, max_line=max_line).start()
    with theirs:
        for chunk in chunks:
            theirs.sendall(chunk)
            time.sleep(0.002)
    assert reader.join(5)
    ours.close()
    return got, source


def test_lines_split_across_chunks_arrive_whole_and_in_order() -> None:
    got, _ = run_reader([b'{"a":', b'1}\n{"b":2}\n{"c"', b":3}\n", b"\n"])
    assert got.lines == [b'{"a":1}', b'{"b":2}', b'{"c":3}', b""]
    assert got.ends == [None]


def test_the_streams_own_end_error_is_reported_once() -> None:
    failure = UserError("Command failed on the host", "python3: not found", "")
    got, _ = run_reader([b"partial output\n"], end=failure)
    assert got.lines == [b"partial output"]
    assert got.ends == [failure]


def test_ending_mid_line_is_reported_as_broken() -> None:
    got, _ = run_reader([b"whole\nhalf"])
    assert got.lines == [b"whole"]
    assert len(got.ends) == 1 and isinstance(got.ends[0], StreamBroken)


def test_an_endless_line_is_refused_and_the_stream_closed() -> None:
    got, source = run_reader([b"x" * 5000], max_line=1000)
    assert len(got.ends) == 1 and isinstance(got.ends[0], StreamBroken)
    assert "1000 bytes" in got.ends[0].message
    assert source.closed >= 1


def test_a_failing_callback_stops_reading_and_is_reported() -> None:
    def explode(line: bytes) -> None:
        raise RuntimeError(f"cannot handle {line!r}")

    got, source = run_reader([b"one\ntwo\n"], on_line=explode)
    assert len(got.ends) == 1 and isinstance(got.ends[0], RuntimeError)
    assert source.closed >= 1


def test_stop_ends_the_reader_cleanly_once() -> None:
    ours, theirs = socket.socketpair()
    source = SocketSource(ours, end=UserError("should not be reported", "x", ""))
    got = Collector()
    reader = LineReader(source, got.on_line, got.on_end).start()
    theirs.sendall(b"hello\n")
    deadline = time.monotonic() + 5
    while not got.lines and time.monotonic() < deadline:
        time.sleep(0.005)
    reader.stop()
    assert reader.join(5)
    reader.stop()
    assert got.lines == [b"hello"] and got.ends == [None]
    ours.close()
    theirs.close()
