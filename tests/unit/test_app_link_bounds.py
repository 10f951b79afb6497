"""The app's link holds under any client (docs/app_link.md, "Bounds"): past MAX_CLIENTS a connection is answered
BUSY at once (a look then runs in the command itself, anything else is refused in words), a client that reads
nothing is dropped within SLOW_READER_SECONDS, a question nobody answers times out, malformed, oversized and
unknown requests are refused and logged once; meanwhile a command is answered in time. Over the real
single-instance socket, the app side serving stand-in commands (tests/unit/test_app_link.py's harness)."""

from __future__ import annotations

import asyncio
import logging
import socket
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from fixtures.link_flood import answer_of, flood_client
from unit.test_app_link import app_serving, through_app
from workroom import app_link

pytestmark = pytest.mark.unit


def raw_client(lock, argv: list[str] | None = None) -> socket.socket:  # type: ignore[no-untyped-def]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(str(lock.socket_path))
    if argv is not None:
        sock.sendall(app_link.request(argv))
    return sock


def test_past_max_clients_a_look_runs_here_and_anything_else_is_refused_in_words(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    release, running = threading.Event(), threading.Semaphore(0)

    async def run(argv: list[str], term: app_link.LinkTerminal) -> int:
        if argv[0] == "hold":
            running.release()
            while not release.is_set():
                await asyncio.sleep(0.02)
        term.out("served")
        return 0

    with app_serving(tmp_path / "home", run) as lock:
        held = [raw_client(lock, ["hold"]) for _ in range(app_link.MAX_CLIENTS)]
        try:
            for _ in held:
                assert running.acquire(timeout=10)
            t0 = time.monotonic()
            assert through_app(tmp_path / "home", ["status"], capfd, monkeypatch)[0] is None  # a look: run here
            code, out, err = through_app(tmp_path / "home", ["connect", "box1"], capfd, monkeypatch)
            assert time.monotonic() - t0 < 2.0  # answered at once, never queued
            assert code == app_link.EXIT_BUSY and out == ""
            assert f"answering {app_link.MAX_CLIENTS} commands at once" in err and "Traceback" not in err
        finally:
            release.set()
            for sock in held:
                sock.close()
        deadline = time.monotonic() + 10
        while lock.clients and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lock.clients == 0
        code, out, _ = through_app(tmp_path / "home", ["connect", "box1"], capfd, monkeypatch)
        assert code == 0 and out == "served\n"  # the slots came back


def test_a_client_that_reads_nothing_is_dropped_and_the_app_goes_on(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_link, "SLOW_READER_SECONDS", 0.5)
    ended = threading.Event()

    async def run(argv: list[str], term: app_link.LinkTerminal) -> int:
        try:
            for _ in range(10_000):  # a `--watch` into a stopped pipe: ~640 MiB if nothing bounded it
                if term.gone:
                    break
                term.out("x" * 65536)
                await asyncio.sleep(0.001)
            return 0
        finally:
            ended.set()

    with app_serving(tmp_path / "home", run) as lock:
        sock = raw_client(lock, ["status", "--watch"])
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        try:
            assert ended.wait(20), "the app still writes to a client that reads nothing"
        finally:
            sock.close()


def test_a_question_nobody_answers_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_link, "ASK_SECONDS", 0.3)
    answers: list[str | None] = []
    done = threading.Event()

    async def run(argv: list[str], term: app_link.LinkTerminal) -> int:
        answers.append(await term.ask("Passphrase: ", secret=True))
        done.set()
        return 0

    with app_serving(tmp_path / "home", run) as lock:
        sock = raw_client(lock, ["connect", "box1"])  # reads, never answers
        try:
            assert done.wait(10)
        finally:
            sock.close()
    assert answers == [None]


def test_malformed_oversized_and_unknown_requests_are_refused_and_logged_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(app_link, "_logged", set())
    served: list[list[str]] = []

    async def run(argv: list[str], term: app_link.LinkTerminal) -> int:
        served.append(argv)
        await term.ask("Continue? ")
        return 0

    with caplog.at_level(logging.WARNING), app_serving(tmp_path / "home", run) as lock:
        four_gib = b"%s 1 0.1.0 %d\n" % (app_link.HEADER, 4 << 30)
        for _ in range(3):
            assert b"longer than the app takes" in answer_of(lock.socket_path, four_gib)
            assert answer_of(lock.socket_path, b"\x00\xff garbage \x01\n") == b""
            assert answer_of(lock.socket_path, b"x" * 10000) == b""  # no line within the first 4 KiB
        # A question answered with a frame the app does not take, then one larger than it takes: ended.
        for tail in (b"Z" + (3).to_bytes(4, "big") + b"abc", app_link.ANSWER + (1 << 30).to_bytes(4, "big")):
            assert app_link.EXIT not in answer_of(lock.socket_path, app_link.request(["connect", "box1"]) + tail)[-8:]
    assert served == [["connect", "box1"]] * 2
    for kind in ("refused a command's request", "neither a launch nor a command", "does not take",
                 "a frame of"):
        assert sum(kind in r.getMessage() for r in caplog.records) == 1, kind


def test_500_parallel_clients_leave_the_app_answering(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """500 clients at once (idle ones that send nothing, garbage, and real commands): every real command is either
    answered or told the app is busy, none waits for ever, and once the flood has passed a command is answered
    through the link at once (p99 of 50 in a row within 100 ms)."""
    async def run(argv: list[str], term: app_link.LinkTerminal) -> int:
        term.out("ok")
        return 0

    with app_serving(tmp_path / "home", run) as lock:
        with ThreadPoolExecutor(max_workers=500) as pool:
            results = list(pool.map(lambda i: flood_client(lock.socket_path, i), range(500)))
        commands = [r for i, r in enumerate(results) if i % 3 == 2]
        assert all(r in (0, app_link.EXIT_BUSY, -1) for r in commands) and commands.count(0) > 0
        times = []
        for _ in range(50):
            t0 = time.monotonic()
            code, out, _ = through_app(tmp_path / "home", ["connect", "box1"], capfd, monkeypatch)
            times.append(time.monotonic() - t0)
            assert code == 0 and out == "ok\n"
        assert statistics.quantiles(times, n=100, method="inclusive")[98] <= 0.1, sorted(times)[-5:]
        deadline = time.monotonic() + 10  # the last command's end, on the app's side
        while lock.clients and time.monotonic() < deadline:
            time.sleep(0.05)
        assert lock.clients == 0


def test_idle_connections_never_take_a_commands_place(tmp_path: Path, capfd: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """More idle connections than MAX_CLIENTS (connected, nothing sent): they are counted apart, while their request
    line may still come (REQUEST_SECONDS), so a person's command still goes through the app meanwhile; past
    MAX_WAITING of them, one more is answered BUSY at once."""
    monkeypatch.setattr(app_link, "MAX_WAITING", app_link.MAX_CLIENTS + 8)

    async def run(argv: list[str], term: app_link.LinkTerminal) -> int:
        term.out("served")
        return 0

    with app_serving(tmp_path / "home", run) as lock:
        idle = [raw_client(lock) for _ in range(app_link.MAX_CLIENTS + 4)]
        try:
            deadline = time.monotonic() + 5
            while lock.waiting < len(idle) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert lock.waiting == len(idle) and lock.clients == 0
            code, out, _ = through_app(tmp_path / "home", ["connect", "box1"], capfd, monkeypatch)
            assert code == 0 and out == "served\n", "a command went through beside the idle connections"
            more = [raw_client(lock) for _ in range(4)]
            idle += more
            deadline = time.monotonic() + 5  # each counted by the app's loop (not a fixed sleep: CI is loaded)
            while lock.waiting < len(idle) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert lock.waiting == len(idle) == app_link.MAX_WAITING
            code, out, err = through_app(tmp_path / "home", ["connect", "box1"], capfd, monkeypatch)
            assert code == app_link.EXIT_BUSY and "commands at once" in err, "past MAX_WAITING: busy at once"
        finally:
            for sock in idle:
                sock.close()
        deadline = time.monotonic() + 5
        while lock.waiting and time.monotonic() < deadline:
            time.sleep(0.02)
        assert lock.waiting == 0, "a closed connection is no longer counted"


def test_a_command_whose_process_went_away_holds_its_place_until_it_has_ended_on_the_apps_loop(
        tmp_path: Path) -> None:
    """The command runs on the app's loop, the link on a thread of its own: when the `workroom` process goes away
    the command is cancelled there, and its place (one of MAX_CLIENTS) is free only once it has ended there (its
    clean-up here takes half a second), so the bound holds what runs on the app's loop."""
    started, ended = threading.Event(), threading.Event()

    async def run(argv: list[str], term: app_link.LinkTerminal) -> int:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await asyncio.sleep(0.5)  # its clean-up takes a while
            ended.set()
            raise
        return 0

    with app_serving(tmp_path / "home", run) as lock:
        client = raw_client(lock, ["status", "--watch"])
        assert client.recv(5)[:1] == app_link.HELLO
        deadline = time.monotonic() + 5
        while lock.clients == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert lock.clients == 1 and started.wait(5)  # running on the app's loop (one cancelled before it starts
        client.close()  # Ctrl-C: the process goes away                  never runs, and holds nothing)
        seen = []
        deadline = time.monotonic() + 10
        while lock.clients and time.monotonic() < deadline:
            seen.append(ended.is_set())
            time.sleep(0.02)
        assert lock.clients == 0 and ended.is_set()
        assert seen and not seen[0], "the place was held while the command cleaned up"
