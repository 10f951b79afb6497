"""The health endpoint: JSON and a refreshing page; bad requests get a 4xx and the daemon carries on."""

from __future__ import annotations

import json
import os
import socket
import urllib.request
from collections.abc import Iterator

import pytest
import simbox
from simbox_helpers import home_of

pytestmark = [pytest.mark.integration, pytest.mark.root]


@pytest.fixture(scope="module")
def one_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[simbox.SimboxState]:
    """One long-window box shared by the bad-request cases (none of them may change it)."""
    if os.geteuid() != 0:
        pytest.skip("needs root: the simbox creates network namespaces, cgroups and users")
    home = tmp_path_factory.mktemp("health")
    state = simbox.up(1, 60.0, home=home)
    try:
        yield state
    finally:
        assert not simbox.down(home=home)["problems"]


def _raw(port: int, payload: bytes) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[1]


@pytest.mark.parametrize(("payload", "status"), [
    (b"GET /v1/boxes/nope HTTP/1.1\r\n\r\n", 404),
    (b"GET /nowhere HTTP/1.1\r\n\r\n", 404),
    (b"POST /v1/boxes HTTP/1.1\r\n\r\n", 405),
    (b"GET /v1/boxes/box1/wake HTTP/1.1\r\n\r\n", 405),
    (b"DELETE /v1/boxes/box1 HTTP/1.1\r\n\r\n", 405),
    (b"garbage\r\n\r\n", 400),
    (b"\xff\xfe\x00\r\n\r\n", 400),
    (b"GET /" + b"a" * 10000 + b" HTTP/1.1\r\n\r\n", 431),
    (b"GET / HTTP/1.1\r\nno-colon-here\r\n\r\n", 400),
    (b"POST /v1/boxes/box1/sleep HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400),
    (b"POST /v1/boxes/box1/sleep HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", 413),
    (b"POST /v1/boxes/box1/sleep HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc", 400),
    (b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 200 + b"\r\n", 431),
    (b"", 400),
])
def test_bad_requests_get_4xx_and_the_daemon_survives(one_box: simbox.SimboxState, payload: bytes,
                                                      status: int) -> None:
    state = one_box
    got, body = _raw(state.health_port, payload)
    assert got == status, body
    assert "error" in json.loads(body)
    box = simbox.box_status("box1", home=home_of(state))
    assert box["state"] == "awake" and box["sleeps"] == 0  # nothing changed, the daemon answers


def test_json_and_page_show_the_clock(make_simbox) -> None:  # type: ignore[no-untyped-def]
    state = make_simbox(boxes=2, window=30.0)
    with urllib.request.urlopen(f"{state.health_url}/v1/boxes", timeout=5) as resp:
        assert resp.headers["Content-Type"] == "application/json"
        data = json.loads(resp.read())
    assert [b["name"] for b in data["boxes"]] == ["box1", "box2"]
    for b in data["boxes"]:
        assert b["state"] == "awake" and b["idle_window_s"] == 30.0 and 0 <= b["idle_for_s"] < 30
        assert {"last_byte_at", "open_connections", "history", "rx_bytes", "tx_bytes", "ssh"} <= b.keys()
    with urllib.request.urlopen(f"{state.health_url}/", timeout=5) as resp:
        page = resp.read().decode()
    assert "http-equiv='refresh'" in page and "box1" in page and "box2" in page and "/ 30 s" in page
