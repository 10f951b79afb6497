"""The health endpoint's parts: the --health-listen parser, the request parser/responder on heads, the
answer from a real Agent's published state (fake sampler and clock, as in the ceiling tests), and the
server thread on a real loopback socket with short deadlines (the real agent's 5 s deadline is covered
by the integration tests)."""

import json
import socket
import threading
import time

import pytest
from agentfake import make_agent
from hypothesis import given, settings
from hypothesis import strategies as st
from wr_agent import health
from wr_agent.settings import Settings
from wr_agent.signals import Signals


def make_agent_(settings_):
    return make_agent(settings_, hold_seconds=2)

pytestmark = pytest.mark.unit


def parse(resp):
    head, _, body = resp.partition(b"\r\n\r\n")
    lines = head.decode("ascii").split("\r\n")
    code = int(lines[0].split(" ")[1])
    headers = dict(ln.split(": ", 1) for ln in lines[1:])
    return code, headers, body


def ok_answer():
    return {"busy": True, "verdict": "BUSY", "stalled": False}


# -- --health-listen -------------------------------------------------------------------------------------
@pytest.mark.parametrize("text,expected", [
    ("127.0.0.1:8080", (socket.AF_INET, "127.0.0.1", 8080)),
    ("0.0.0.0:0", (socket.AF_INET, "0.0.0.0", 0)),
    ("[::1]:65535", (socket.AF_INET6, "::1", 65535)),
    ("[::]:0", (socket.AF_INET6, "::", 0)),
])
def test_parse_listen_accepts_literals(text, expected):
    assert health.parse_listen(text) == expected


@pytest.mark.parametrize("text,words", [
    ("localhost:80", "not an IPv4 address"),
    ("127.0.0.1", "HOST:PORT"),
    (":80", "HOST:PORT"),
    ("127.0.0.1:65536", "port must be 0-65535"),
    ("127.0.0.1:-1", "port must be 0-65535"),
    ("127.0.0.1:http", "port must be 0-65535"),
    ("::1:80", "not an IPv4 address"),
    ("[::1]80", "[ADDR]:PORT"),
    ("[127.0.0.1]:80", "not an IPv6 address"),
    ("1.2.3:80", "not an IPv4 address"),
    ("", "HOST:PORT"),
])
def test_parse_listen_refuses_with_a_clear_message(text, words):
    with pytest.raises(health.HealthListenError) as err:
        health.parse_listen(text)
    assert words in str(err.value)


@given(st.text(max_size=40))
def test_parse_listen_never_raises_anything_else(text):
    try:
        family, _, port = health.parse_listen(text)
    except health.HealthListenError:
        return
    assert family in (socket.AF_INET, socket.AF_INET6) and 0 <= port <= 65535


def test_open_listener_reports_a_port_in_use():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        port = taken.getsockname()[1]
        with pytest.raises(health.HealthListenError) as err:
            health.open_listener((socket.AF_INET, "127.0.0.1", port))
        assert f"127.0.0.1:{port}" in str(err.value) and "in use" in str(err.value)
    finally:
        taken.close()


# -- requests --------------------------------------------------------------------------------------------
def test_get_answers_exactly_three_keys():
    code, headers, body = parse(health.respond(b"GET /v1/health HTTP/1.1\r\nHost: x", ok_answer))
    assert code == 200
    assert headers["Content-Type"] == "application/json" and headers["Connection"] == "close"
    assert json.loads(body) == {"busy": True, "verdict": "BUSY", "stalled": False}
    assert int(headers["Content-Length"]) == len(body)
    assert set(headers) == {"Content-Type", "Content-Length", "Cache-Control", "Connection"}


def test_extra_fields_from_the_answer_never_leak():
    def chatty():
        return {"busy": False, "verdict": "IDLE", "stalled": True, "workroom": "secret", "pid": 42}
    _, _, body = parse(health.respond(b"GET /v1/health HTTP/1.0", chatty))
    assert json.loads(body) == {"busy": False, "verdict": "IDLE", "stalled": True}


def test_head_has_the_get_headers_and_no_body():
    get = health.respond(b"GET /v1/health HTTP/1.1", ok_answer)
    head = health.respond(b"HEAD /v1/health HTTP/1.1", ok_answer)
    assert head == get.partition(b"\r\n\r\n")[0] + b"\r\n\r\n"


@pytest.mark.parametrize("target", [b"/v1/health?x=1", b"http://box:8080/v1/health", b"HTTP://b/v1/health?q"])
def test_query_and_absolute_form_reach_the_health_path(target):
    assert parse(health.respond(b"GET " + target + b" HTTP/1.1", ok_answer))[0] == 200


@pytest.mark.parametrize("line,code", [
    (b"GET / HTTP/1.1", 404),
    (b"GET /v1/health/ HTTP/1.1", 404),
    (b"GET /v1/healthz HTTP/1.1", 404),
    (b"GET /V1/HEALTH HTTP/1.1", 404),
    (b"POST /nope HTTP/1.1", 404),
    (b"GET http://box HTTP/1.1", 404),
    (b"POST /v1/health HTTP/1.1", 405),
    (b"DELETE /v1/health HTTP/1.1", 405),
    (b"OPTIONS /v1/health HTTP/1.1", 405),
    (b"get /v1/health HTTP/1.1", 405),
    (b"GET /v1/health HTTP/2.0", 505),
    (b"GET /v1/health", 400),
    (b"GET  /v1/health HTTP/1.1", 400),
    (b"GET /v1/health HTTP/1.1 ", 400),
    (b"G(T /v1/health HTTP/1.1", 400),
    (b"GET /v1/\x00health HTTP/1.1", 400),
    (b"GET /v1/h\xc3\xa9alth HTTP/1.1", 400),
    (b"GET v1/health HTTP/1.1", 400),
    (b"GET /v1/health HTTP/1.x", 400),
    (b"GET /v1/health http/1.1", 400),
    (b"GET /v1/health HTTP/1.1\r\nNo colon here", 400),
    (b"GET /v1/health HTTP/1.1\r\n folded: line", 400),
    (b"GET /v1/health HTTP/1.1\r\nBad Name: x", 400),
    (b"GET /v1/health HTTP/1.1\r\nX: a\x01b", 400),
    (b"GET /v1/health HTTP/1.1\r\nX: a\rb", 400),
    (b"", 400),
])
def test_error_statuses(line, code):
    called = []

    def answer():
        called.append(1)
        return ok_answer()
    got, headers, body = parse(health.respond(line, answer))
    assert got == code
    assert not called and headers["Connection"] == "close" and b"busy" not in body
    if code == 405:
        assert headers["Allow"] == "GET, HEAD"


def test_head_of_an_unknown_path_has_no_body():
    resp = health.respond(b"HEAD /x HTTP/1.1", ok_answer)
    assert resp.endswith(b"\r\n\r\n") and parse(resp)[0] == 404


def test_a_failing_answer_is_500_not_an_exception():
    def broken():
        raise RuntimeError("bug")
    assert parse(health.respond(b"GET /v1/health HTTP/1.1", broken))[0] == 500


def test_head_size_limit_is_8_kib():
    line = b"GET /v1/health HTTP/1.1\r\nX: "
    fits = line + b"a" * (health.MAX_HEAD - len(line) - 4) + b"\r\n\r\n"
    assert len(fits) == health.MAX_HEAD
    head, refusal = health.head_status(bytearray(fits))
    assert refusal is None and head == fits[:-4]
    over = line + b"a" * (health.MAX_HEAD - len(line) - 3) + b"\r\n\r\n"
    assert parse(health.head_status(bytearray(over))[1])[0] == 431
    assert parse(health.head_status(bytearray(b"a" * health.MAX_HEAD))[1])[0] == 431
    assert health.head_status(bytearray(b"a" * (health.MAX_HEAD - 1))) == (None, None)
    assert health.head_status(bytearray(b"GET /v1/health HTTP/1.1\n\n")) == (b"GET /v1/health HTTP/1.1", None)


@settings(max_examples=300)
@given(st.binary(max_size=300))
def test_arbitrary_heads_get_a_status_never_an_exception(data):
    resp = health.respond(data, ok_answer)
    code, headers, _ = parse(resp)
    assert code in (200, 400, 404, 405, 505)
    assert headers["Connection"] == "close"


# -- the answer from a real Agent ---------------------------------------------------------------------------
def test_answer_follows_the_published_verdict_and_stall():
    agent, sampler, clock = make_agent_(Settings(3600, 600, False))
    assert health.agent_answer(agent) == {"busy": False, "verdict": "IDLE", "stalled": False}
    sampler.sig = Signals(cpu=[("job", "5", 1.0)])
    agent.tick()
    assert health.agent_answer(agent) == {"busy": True, "verdict": "BUSY", "stalled": False}
    st_ = agent.status()
    assert st_["verdict"] == "BUSY" and st_["health_listen"] is None
    clock.t += 30  # no tick for 30 s: stalled, as the status object says
    assert health.agent_answer(agent)["stalled"] and agent.status()["stalled"]


def test_answer_is_the_published_verdict_not_the_classifiers():
    """Suppressed by an unanswered prompt, the box must be allowed to sleep: health says IDLE."""
    agent, sampler, clock = make_agent_(Settings(60, 30, True))
    sampler.sig = Signals(cpu=[("job", "5", 1.0)])
    for _ in range(100):
        agent.tick()
        clock.t += 1
    st_ = agent.status()
    assert st_["suppressed"] and st_["classifier_verdict"] == "BUSY"
    assert health.agent_answer(agent) == {"busy": False, "verdict": "IDLE", "stalled": False}


def test_answer_does_not_wait_for_the_agent_lock():
    agent, _, _ = make_agent_(Settings(3600, 600, False))
    done = []
    with agent.lock:
        t = threading.Thread(target=lambda: done.append(health.agent_answer(agent)))
        t.start()
        t.join(2)
    assert done and done[0]["verdict"] == "IDLE"


# -- the server thread ---------------------------------------------------------------------------------------
@pytest.fixture
def server():
    sock = health.open_listener((socket.AF_INET, "127.0.0.1", 0))
    srv = health.HealthServer(sock, ok_answer, max_clients=4, deadline=0.4)
    srv.start()
    yield srv
    srv.stop()
    sock.close()


def connect(srv, timeout=2.0):
    host, port = srv.address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=timeout)


def exchange(srv, data, timeout=2.0):
    s = connect(srv, timeout)
    try:
        s.sendall(data)
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out
            out += chunk
    finally:
        s.close()


def test_server_answers_and_closes(server):
    code, _, body = parse(exchange(server, b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"))
    assert code == 200 and json.loads(body)["busy"] is True


def test_head_sent_byte_by_byte_is_answered(server):
    s = connect(server)
    try:
        for b in b"\r\nGET /v1/health HTTP/1.0\r\n\r\n":
            s.send(bytes([b]))
        assert parse(s.recv(4096))[0] == 200
    finally:
        s.close()


def test_a_body_is_ignored_and_the_answer_arrives(server):
    body = b"x" * 200000
    out = exchange(server, b"POST /v1/health HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    assert parse(out)[0] == 405
    out = exchange(server, b"GET /v1/health HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\n\r\n")
    code, _, rest = parse(out)
    assert code == 200 and rest.count(b"HTTP/1.1") == 0  # one answer per connection, pipelining ignored


def test_a_slow_client_is_cut_at_the_deadline(server):
    s = connect(server, timeout=3.0)
    try:
        s.sendall(b"GET /v1/health HTTP/1.1\r\n")
        t0 = time.monotonic()
        assert s.recv(4096) == b""  # closed without an answer
        assert 0.2 <= time.monotonic() - t0 <= 1.5
    finally:
        s.close()


def test_the_oldest_client_makes_room_at_the_limit(server):
    slow = [connect(server) for _ in range(4)]
    try:
        for s in slow:
            s.sendall(b"GET /v1/he")
        time.sleep(0.05)
        t0 = time.monotonic()
        assert parse(exchange(server, b"GET /v1/health HTTP/1.1\r\n\r\n"))[0] == 200
        assert time.monotonic() - t0 < 0.3
        slow[0].settimeout(1.0)
        assert slow[0].recv(10) == b""  # the oldest was dropped
    finally:
        for s in slow:
            s.close()
    assert len(server.clients) <= 4


def test_oversize_head_is_431(server):
    out = exchange(server, b"GET /v1/health HTTP/1.1\r\nX: " + b"a" * 20000)
    assert parse(out)[0] == 431


def test_hang_up_mid_head_gets_400_on_the_half_close(server):
    s = connect(server)
    try:
        s.sendall(b"GET /v1/health HTTP/1.1\r\n")
        s.shutdown(socket.SHUT_WR)
        assert parse(s.recv(4096))[0] == 400
    finally:
        s.close()


def _credited(data, link_counts=None):
    """Send `data` to a real endpoint on loopback; (what it credited to the own-traffic discount as
    (payload, messages) pairs, what it answered)."""
    seen = []
    lock = threading.Lock()

    def on_traffic(payload, messages):
        with lock:
            seen.append((payload, messages))
    sock = health.open_listener((socket.AF_INET, "127.0.0.1", 0))
    kw = {} if link_counts is None else {"link_counts": link_counts}
    srv = health.HealthServer(sock, ok_answer, on_traffic=on_traffic, **kw)
    srv.start()
    try:
        out = exchange(srv, data)
        time.sleep(0.3)  # what the endpoint counts after the answer (it lingers reading the rest)
    finally:
        srv.stop()
        sock.close()
    with lock:
        return list(seen), out


REQUEST = b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n"


def test_own_traffic_credits_only_what_the_endpoint_sends():
    """On a link the network signal counts: the answer's bytes and one poll's allowance, nothing of what
    the client sent (a 1 MiB body credited 1 MiB, so a flood of them erased a busy box's `net:` signal)."""
    seen, out = _credited(REQUEST + b"x" * (1 << 20), link_counts=lambda s: True)
    assert out.startswith(b"HTTP/1.1 200")
    assert sum(m for _, m in seen) == health.CONNECTION_MESSAGES
    assert sum(p for p, _ in seen) == len(out)


def test_nothing_is_credited_for_a_peer_on_this_machine():
    """Another local user polling over loopback moves no byte the network signal counts: no credit."""
    assert health.crosses_counted_link  # the default judge
    seen, out = _credited(REQUEST + b"x" * (1 << 20))
    assert out.startswith(b"HTTP/1.1 200") and seen == []


def test_the_link_judge_knows_loopback_and_this_machines_own_addresses():
    listen = socket.create_server(("127.0.0.1", 0))
    try:
        client = socket.create_connection(listen.getsockname())
        conn, _ = listen.accept()
        try:
            assert health.crosses_counted_link(conn) is False
        finally:
            conn.close()
            client.close()
    finally:
        listen.close()
    from wr_agent.host_signals import interface_counts
    assert interface_counts("lo") is False and interface_counts("veth12ab") is False
