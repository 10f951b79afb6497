"""Issue 7's request meter on a real box (`--metering requests`): only requests through the box's HTTP
proxy reset its clock; the guest's own traffic and loopback requests do not; a suspended box is resumed
by the next request through the proxy."""

from __future__ import annotations

import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import simbox
from simbox_helpers import box_json, home_of, stop_inside, wait_for, wait_state

pytestmark = [pytest.mark.integration, pytest.mark.root]

WINDOW = 2.0
GUEST_PORT = 8080
# `python3 -m http.server` would do, but HTTPServer.server_bind resolves the box's address (getfqdn),
# which inside a namespace with no DNS server waits for resolver timeouts; TCPServer does not.
GUEST_SERVER = """
import functools, http.server, socketserver
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory={dir!r})
handler.func.log_message = lambda *a: None
socketserver.TCPServer.allow_reuse_address = True
socketserver.TCPServer(({addr!r}, {port}), handler).serve_forever()
"""


def _get(state: simbox.SimboxState, path: str = "/hello.txt", timeout: float = 5) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{state.boxes[0].http_port}{path}", timeout=timeout) as r:
        return bytes(r.read())


@pytest.fixture
def metered(make_simbox) -> Iterator[simbox.SimboxState]:  # type: ignore[no-untyped-def]
    """A request-metered box with a guest HTTP server (as the box's user)."""
    state = make_simbox(boxes=1, window=WINDOW, metering="requests", guest_port=GUEST_PORT)
    rec = state.boxes[0]
    Path(rec.home, "hello.txt").write_text("hello from the guest\n")
    server = subprocess.Popen(simbox.exec_argv("box1", ["python3", "-c", GUEST_SERVER.format(
        addr=rec.box_addr, port=GUEST_PORT, dir=rec.home)], home=home_of(state)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: _try_get(state), 5, step=0.1)
        yield state
    finally:
        stop_inside(server, state)


def _try_get(state: simbox.SimboxState) -> bool:
    try:
        return _get(state, timeout=1) == b"hello from the guest\n"
    except OSError:
        return False


def test_guest_traffic_and_loopback_requests_do_not_count(metered: simbox.SimboxState) -> None:
    state, rec = metered, metered.boxes[0]
    assert box_json(state)["metering"] == "requests"
    # the guest talks to its gateway and to its own HTTP server, for longer than a window
    code = (f"import socket,time,urllib.request\ns=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
            f"for _ in range(40):\n s.sendto(b'x',('{rec.host_addr}',9))\n"
            f" urllib.request.urlopen('http://{rec.box_addr}:{GUEST_PORT}/hello.txt').read()\n"
            f" time.sleep(0.1)\n")
    guest = subprocess.Popen(simbox.exec_argv("box1", ["python3", "-c", code], home=home_of(state)))
    try:
        data = wait_state(state, "asleep", WINDOW + 1.0)  # suspended although the guest was busy on the wire
        assert guest.poll() is None  # ... and still mid-loop when it was frozen
    finally:
        stop_inside(guest, state)
    sleep = next(h for h in data["history"] if h["event"] == "sleep")
    assert WINDOW <= sleep["idle_for_s"] < WINDOW + 0.3, sleep
    assert data["last_byte_at"] is not None and data["last_byte_at"] > data["last_activity_at"]


def test_requests_keep_it_awake_and_a_request_resumes_it(metered: simbox.SimboxState) -> None:
    state = metered
    deadline = time.monotonic() + 1.6 * WINDOW
    while time.monotonic() < deadline:  # a caller outside polling at a third of the window
        assert _get(state) == b"hello from the guest\n"
        time.sleep(WINDOW / 3)
    data = box_json(state)
    assert data["state"] == "awake" and data["sleeps"] == 0
    assert data["last_activity_reason"] in ("request start", "request end")
    stopped = time.monotonic()
    wait_state(state, "asleep", WINDOW + 1.0)
    assert time.monotonic() - stopped < WINDOW + 0.5
    t0 = time.monotonic()
    assert _get(state) == b"hello from the guest\n"  # resumes it
    took = time.monotonic() - t0
    data = box_json(state)
    wake = next(h for h in data["history"] if h["event"] == "wake")
    assert data["state"] == "awake" and wake["reason"] == "request" and took < 1.5
    print(f"\nrequest resume: thaw {wake['wake_s'] * 1000:.1f} ms, request answered in {took * 1000:.0f} ms")


@pytest.mark.parametrize(("payload", "status"), [
    (b"nonsense\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
    (b"GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
])
def test_bad_requests_are_refused_and_do_not_count(metered: simbox.SimboxState, payload: bytes,
                                                   status: int) -> None:
    import socket

    time.sleep(0.2)  # so that a reset, had there been one, would show
    before = box_json(metered)["last_activity_at"]
    with socket.create_connection(("127.0.0.1", metered.boxes[0].http_port), timeout=5) as s:
        s.sendall(payload)
        reply = s.recv(4096)
    assert reply.startswith(f"HTTP/1.1 {status} ".encode()), reply
    assert box_json(metered)["last_activity_at"] == pytest.approx(before, abs=0.05)
