"""Every HTTP poll (keep-awake, idle clock, a simulated box's state) goes through one bounded client:
real HTTP servers on loopback that misbehave the ways a hostile or broken platform can."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from workroom.agent_bundle import AgentBundle
from workroom.core.hosts import Host
from workroom.core.keepawake import PollOutcome, PollOutcomeKind
from workroom.core.provider_specs import spec_for
from workroom.providers import bounded_http, idle_clock, request_metered, simbox
from workroom.providers.base import ProviderContext
from workroom.providers.ssh_family import parse_boxd_idle

pytestmark = pytest.mark.integration

Handler = Callable[[socket.socket], None]


class Server:
    """A TCP server on loopback; each connection's request head is read, then `handler` answers."""

    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        self.stop = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/health"

    def _run(self) -> None:
        self.sock.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.hits += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(5)
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                head += chunk
            self.handler(conn)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], Server]]:
    made: list[Server] = []

    def make(handler: Handler) -> Server:
        made.append(Server(handler))
        return made[-1]

    yield make
    for s in made:
        s.close()


def head(status: str = "200 OK", extra: str = "") -> bytes:
    return f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n{extra}\r\n".encode()


def provider() -> request_metered.RequestMeteredProvider:
    return request_metered.RequestMeteredProvider(ProviderContext(bundle=AgentBundle(b"x", "0" * 64, "0.0.0"),
                                                                  known_hosts=None, state_dir=Path("/")),
                                                  spec_for("request-metered"))


def host(ref: str) -> Host:
    return Host(name="rm", provider="request-metered", address="127.0.0.1", provider_ref=ref)


def poll(url_base: str) -> PollOutcome:
    return asyncio.run(provider().poll_health(host(url_base)))


def test_an_endless_body_is_cut_at_the_cap(serve) -> None:  # type: ignore[no-untyped-def]
    def endless(conn: socket.socket) -> None:
        conn.sendall(head())
        block = b"[" * 65536
        for _ in range(4096):  # 256 MiB, unless the client stops reading
            conn.sendall(block)

    server = serve(endless)
    started = time.monotonic()
    outcome = poll(f"http://127.0.0.1:{server.port}")
    assert time.monotonic() - started < 5
    assert outcome.kind is PollOutcomeKind.FAILED and "larger than 64 KiB" in (outcome.error or ""), outcome


def test_a_trickling_server_is_cut_at_the_overall_deadline(serve, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(request_metered, "POLL_TIMEOUT_SECONDS", 1.5)

    def trickle(conn: socket.socket) -> None:
        for byte in head() + b'{"busy": true}' + b" " * 100:
            conn.sendall(bytes([byte]))
            time.sleep(0.4)  # each read answers well within the limit; the whole never does

    server = serve(trickle)
    started = time.monotonic()
    outcome = poll(f"http://127.0.0.1:{server.port}")
    took = time.monotonic() - started
    assert took < 3.5, f"the poll took {took:.1f} s against a 1.5 s limit"
    assert outcome.kind is PollOutcomeKind.FAILED and "within 1.5 s" in (outcome.error or ""), outcome


@pytest.mark.parametrize("depth", [30_000, 200_000])
def test_deeply_nested_json_is_a_failed_poll_not_an_exception(serve, depth: int) -> None:  # type: ignore[no-untyped-def]
    server = serve(lambda conn: conn.sendall(head(extra=f"Content-Length: {depth}\r\n") + b"[" * depth))
    outcome = poll(f"http://127.0.0.1:{server.port}")
    assert outcome.kind is PollOutcomeKind.FAILED and outcome.error


def test_a_redirect_is_not_followed(serve) -> None:  # type: ignore[no-untyped-def]
    elsewhere = serve(lambda conn: conn.sendall(head(extra="Content-Length: 14\r\n") + b'{"busy": true}'))
    server = serve(lambda conn: conn.sendall(head("302 Found", f"Location: {elsewhere.url}\r\nContent-Length: 0\r\n")))
    outcome = poll(f"http://127.0.0.1:{server.port}")
    assert outcome.kind is PollOutcomeKind.FAILED
    assert "302" in (outcome.error or "") and "not followed" in (outcome.error or "")
    assert elsewhere.hits == 0


def test_an_idle_clock_on_a_local_file_is_never_read(tmp_path: Path) -> None:
    """`#idle-clock=file:///…` made the proof say "confirmed" from a file anyone could write."""
    doc = tmp_path / "clock.json"
    doc.write_text('{"state": "awake", "idle_seconds": 1, "idle_window_seconds": 60}')
    with pytest.raises(ValueError, match="http:// or https://"):  # refused when the host is added or loaded
        host(f"http://127.0.0.1:1#idle-clock=file://{doc}")
    forged = Host.model_construct(name="rm", provider="request-metered", address="127.0.0.1",
                                  reference={"proxy_url": "http://127.0.0.1:1", "idle_clock_url": f"file://{doc}"})
    reading = asyncio.run(provider().read_idle_clock(forged))  # and never read, however it got there
    assert reading is None
    with pytest.raises(bounded_http.PollFailed, match="only http"):
        bounded_http.get(f"file://{doc}", 1.0)


def test_stuck_polls_never_starve_the_loops_default_executor(serve, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Stuck polls used to fill the loop's default executor, after which another host's relay sends (which
    run there) hung. Twelve polls on a server that never answers; a default-executor call still runs."""
    monkeypatch.setattr(request_metered, "POLL_TIMEOUT_SECONDS", 3.0)
    release = threading.Event()
    server = serve(lambda conn: release.wait(10))

    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        polls = [asyncio.ensure_future(provider().poll_health(host(f"http://127.0.0.1:{server.port}")))
                 for _ in range(12)]
        await asyncio.sleep(0.5)
        started = time.monotonic()
        await asyncio.wait_for(loop.run_in_executor(None, lambda: None), 5)
        took = time.monotonic() - started
        outcomes = await asyncio.gather(*polls)
        assert all(o.kind is PollOutcomeKind.FAILED for o in outcomes)
        return took

    try:
        assert asyncio.run(scenario()) < 0.5
    finally:
        release.set()


def test_one_reader_for_every_idle_clock(serve) -> None:  # type: ignore[no-untyped-def]
    """The simulator's names and boxd's names are one reader's; a state must be an awake one."""
    for doc in ({"state": "awake", "idle_for_s": 4, "idle_window_s": 30},
                {"state": "running", "idle_seconds": 4, "idle_window_seconds": 30},
                {"idle_seconds": 4, "idle_window_seconds": 30}):
        r = idle_clock.reading_from(doc, 1.0)
        assert r is not None and (r.idle_seconds, r.window_seconds) == (4, 30), doc
    for doc in ({"state": "asleep", "idle_for_s": 4}, {"idle_seconds": "4"}, {"idle_seconds": -1}, [],
                {"idle_seconds": True}, {"idle_seconds": 1e400}):
        assert idle_clock.reading_from(doc, 1.0) is None, doc
    reading = parse_boxd_idle(b'{"state": "running", "idle_seconds": 2, "idle_window_seconds": 60}', 3.0)
    assert reading is not None and reading.window_seconds == 60
    body = b'{"state": "awake", "idle_for_s": 2.5, "idle_window_s": 30}'
    server = serve(lambda conn: conn.sendall(head(extra=f"Content-Length: {len(body)}\r\n") + body))
    box = simbox.SimboxProvider(provider().context, spec_for("simbox"))
    got = asyncio.run(box.read_idle_clock(Host(name="sb", provider="simbox", address="127.0.0.1",
                                                provider_ref=server.url)))
    assert got is not None and got.idle_seconds == 2.5
