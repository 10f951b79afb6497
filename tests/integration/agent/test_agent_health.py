"""`serve --health-listen`: real agents answering GET /v1/health over TCP.

Unprivileged parts run the agent on the host's loopback; the root part runs it in a netns_box + PID
namespace (so only the test's burner makes it busy) and asks from outside the box, over the veth, the
way a platform's proxy would.
"""

import fcntl
import hashlib
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import pytest
from agentrun import Agent, PidNamespace, agent_env, private_dir, serve_argv, start_agent, stop, wait_answering
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wr_agent import bundle

pytestmark = pytest.mark.integration

BURN = "import time\nt = time.monotonic() + 60\nwhile time.monotonic() < t: pass\n"
KEYS = {"busy", "verdict", "stalled"}


def http(addr, data, timeout=3.0):
    """Send raw bytes, read until the agent closes; (status, headers, body, raw)."""
    s = socket.create_connection(addr, timeout=timeout)
    try:
        s.sendall(data)
        raw = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            raw += chunk
    finally:
        s.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("ascii").split("\r\n")
    headers = dict(ln.split(": ", 1) for ln in lines[1:])
    return int(lines[0].split(" ")[1]), headers, body, raw


def get_health(addr, timeout=3.0):
    code, headers, body, _ = http(addr, b"GET /v1/health HTTP/1.1\r\nHost: box\r\n\r\n", timeout)
    assert code == 200 and headers["Content-Type"] == "application/json", (code, headers)
    return json.loads(body)


def health_addr(agent, host=None):
    listen = agent.status()["health_listen"]
    m = re.match(r"^\[?([0-9a-f.:]+)\]?:(\d+)$", listen)
    assert m, listen
    return (host or m.group(1), int(m.group(2)))


def agent_socket_inodes(pid):
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    return inodes


def tcp_inodes(pid):
    """{inode: state} of every TCP socket in the agent's network namespace (tcp and tcp6)."""
    out = {}
    for name in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{name}") as f:
                rows = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for row in rows:
            cols = row.split()
            out[cols[9]] = cols[3]
    return out


@pytest.fixture
def sock(tmp_path):
    return os.path.join(private_dir(tmp_path / "run"), "agent.sock")


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One agent on 127.0.0.1 for the request-shape tests (its verdict is whatever the host is doing)."""
    sock = os.path.join(private_dir(tmp_path_factory.mktemp("health") / "run"), "agent.sock")
    a = start_agent(sock, "--no-heartbeat", "--hold-seconds", "1", "--workroom", "secret-room",
                    "--health-listen", "127.0.0.1:0")
    yield a, health_addr(a)
    a.stop()


# -- shape -----------------------------------------------------------------------------------------------
def test_health_answers_three_keys_and_nothing_else_leaks(shared):
    agent, addr = shared
    code, headers, body, raw = http(addr, b"GET /v1/health HTTP/1.1\r\nHost: box\r\n\r\n")
    assert code == 200
    assert headers["Content-Type"] == "application/json" and headers["Connection"] == "close"
    ans = json.loads(body)
    assert set(ans) == KEYS and isinstance(ans["busy"], bool) and isinstance(ans["stalled"], bool)
    assert ans["verdict"] == ("BUSY" if ans["busy"] else "IDLE") and ans["stalled"] is False
    st_ = agent.status()
    for secret in (st_["workroom"], st_["agent"]["version"], st_["agent"]["build"][:12], str(agent.proc.pid),
                   "Server", "wr-agent"):
        assert secret.encode() not in raw
    code, hheaders, hbody, _ = http(addr, b"HEAD /v1/health HTTP/1.1\r\n\r\n")
    # The same head without a body. Its length may differ by one: this machine may have turned busy or idle
    # between the two requests ("true" / "false").
    assert code == 200 and hbody == b"" and int(hheaders.pop("Content-Length")) in (46, 47)
    assert hheaders == {k: v for k, v in headers.items() if k != "Content-Length"}


def test_health_listen_is_in_status_and_log(tmp_path, sock):
    log = str(tmp_path / "agent.log")
    a = start_agent(sock, "--no-heartbeat", "--health-listen", "127.0.0.1:0", "--log", log)
    try:
        listen = a.status()["health_listen"]
        assert re.match(r"^127\.0\.0\.1:[1-9][0-9]*$", listen), listen
        with open(log) as f:
            assert f"health endpoint listening on {listen}" in f.read()
    finally:
        a.stop()


def test_ipv6_loopback(sock):
    try:
        probe = socket.socket(socket.AF_INET6)
        probe.bind(("::1", 0))
        probe.close()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    a = start_agent(sock, "--no-heartbeat", "--health-listen", "[::1]:0")
    try:
        listen = a.status()["health_listen"]
        assert listen.startswith("[::1]:")
        assert set(get_health(("::1", int(listen.rsplit(":", 1)[1])))) == KEYS
    finally:
        a.stop()


@pytest.mark.parametrize("request_bytes,code", [
    (b"GET / HTTP/1.1\r\n\r\n", 404),
    (b"GET /v1/health/extra HTTP/1.1\r\n\r\n", 404),
    (b"GET /v1/status HTTP/1.1\r\n\r\n", 404),
    (b"POST /v1/health HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc", 405),
    (b"PUT /v1/health HTTP/1.1\r\n\r\n", 405),
    (b"OPTIONS /v1/health HTTP/1.1\r\n\r\n", 405),
    (b"GET /v1/health\r\n\r\n", 400),
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400),
    (b"GET /v1/health HTTP/1.1\r\nno colon\r\n\r\n", 400),
    (b"GET /v1/health HTTP/1.1\r\nX: " + b"a" * 9000 + b"\r\n\r\n", 431),
    (b"GET /v1/health HTTP/1.1\r\nX: " + b"a" * 30000, 431),
    (b"GET /v1/health HTTP/3.0\r\n\r\n", 505),
])
def test_bad_requests_get_4xx(shared, request_bytes, code):
    _, addr = shared
    got, headers, body, _ = http(addr, request_bytes)
    assert got == code and headers["Connection"] == "close" and b"busy" not in body
    if code == 405:
        assert headers["Allow"] == "GET, HEAD"
    assert set(get_health(addr)) == KEYS


def test_a_large_body_is_ignored_and_the_answer_arrives(shared):
    _, addr = shared
    body = os.urandom(300000)
    code, _, answer, _ = http(addr, b"GET /v1/health HTTP/1.1\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
    assert code == 200 and set(json.loads(answer)) == KEYS


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.binary(max_size=400), tail=st.sampled_from([b"", b"\r\n\r\n", b"\n\n"]),
       hang_up=st.booleans())
def test_arbitrary_bytes_never_hurt(shared, payload, tail, hang_up):
    agent, addr = shared
    s = socket.create_connection(addr, timeout=3.0)
    try:
        s.sendall(payload + tail)
        if hang_up:
            s.shutdown(socket.SHUT_WR)
        s.settimeout(0.1 if not hang_up else 3.0)
        try:
            out = s.recv(4096)
        except TimeoutError:
            out = b""  # an unfinished head: the agent waits for more (until its deadline)
        if out:
            assert re.match(rb"^HTTP/1\.1 (200|400|404|405|431|505) ", out), out[:80]
    finally:
        s.close()
    assert set(get_health(addr)) == KEYS
    assert agent.status()["stalled"] is False


# -- slow clients ----------------------------------------------------------------------------------------
def test_slow_clients_delay_nobody_and_are_cut(shared):
    agent, addr = shared
    slow = []
    try:
        for _ in range(40):  # more than the 32 served at once
            s = socket.create_connection(addr, timeout=10)
            s.sendall(b"GET /v1/health HTTP/1.1\r\nX-Slow: ")
            slow.append(s)
        t0 = time.monotonic()
        assert set(get_health(addr, timeout=1.0)) == KEYS
        assert time.monotonic() - t0 < 1.0
        st_ = agent.status()
        assert st_["stalled"] is False
        t1 = time.monotonic()
        a2 = agent.status()
        assert a2["monotonic"] > st_["monotonic"] and time.monotonic() - t1 < 1.0
        # The newest slow client is still held; it is cut at the 5 s deadline without an answer.
        last = slow[-1]
        last.settimeout(8)
        assert last.recv(100) == b""
        waited = time.monotonic() - t0
        assert 3.5 <= waited <= 7.0, waited
    finally:
        for s in slow:
            s.close()


# -- no port without the flag ------------------------------------------------------------------------------
def test_tcp_listener_only_with_the_flag(sock, tmp_path):
    plain = start_agent(sock, "--no-heartbeat")
    try:
        assert plain.status()["health_listen"] is None
        mine = agent_socket_inodes(plain.proc.pid)
        assert mine  # the unix listener at least
        assert not mine & set(tcp_inodes(plain.proc.pid))
    finally:
        plain.stop()
    sock2 = os.path.join(private_dir(tmp_path / "run2"), "agent.sock")
    flagged = start_agent(sock2, "--no-heartbeat", "--health-listen", "127.0.0.1:0")
    try:
        tcp = tcp_inodes(flagged.proc.pid)
        listening = [i for i in agent_socket_inodes(flagged.proc.pid) if tcp.get(i) == "0A"]
        assert len(listening) == 1  # the control: this is how the check sees a listener
    finally:
        flagged.stop()


# -- start-up failures -------------------------------------------------------------------------------------
def run_serve(sock, *extra):
    return subprocess.run(serve_argv(sock, "--no-heartbeat", *extra), env=agent_env(), capture_output=True,
                          text=True, timeout=30)


@pytest.mark.parametrize("spec,words", [
    ("localhost:8080", "is not an IPv4 address literal"),
    ("127.0.0.1", "must be HOST:PORT"),
    ("127.0.0.1:99999", "port must be 0-65535"),
    ("[::1]8080", "[ADDR]:PORT"),
])
def test_bad_address_refuses_before_the_lock(sock, spec, words):
    r = run_serve(sock, "--health-listen", spec)
    assert r.returncode == 2 and words in r.stderr, r.stderr
    assert not os.path.exists(sock + ".lock")  # refused before taking (creating) the lock


def test_port_in_use_exits_2_and_releases_the_lock(sock):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        port = taken.getsockname()[1]
        r = run_serve(sock, "--health-listen", f"127.0.0.1:{port}")
        assert r.returncode == 2
        assert f"cannot listen for health requests on 127.0.0.1:{port}" in r.stderr, r.stderr
        fd = os.open(sock + ".lock", os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free: the failed agent let it go
        finally:
            os.close(fd)
        assert not os.path.exists(sock)
    finally:
        taken.close()


def test_second_agent_on_the_socket_exits_3_not_port_in_use(sock):
    a = start_agent(sock, "--no-heartbeat", "--health-listen", "127.0.0.1:0")
    try:
        listen = a.status()["health_listen"]
        r = run_serve(sock, "--health-listen", listen)
        assert r.returncode == 3 and "already serving" in r.stderr, r.stderr
        assert set(get_health(health_addr(a))) == KEYS
    finally:
        a.stop()


# -- hand-off --------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_handoff_keeps_the_health_port(tmp_path, sock):
    install = tmp_path / "share" / "wr-agent.pyz"
    install.parent.mkdir()
    install.write_bytes(bundle.bundle_bytes())
    env = agent_env()
    del env["PYTHONPATH"]
    proc = subprocess.Popen([sys.executable, str(install), "serve", "--socket", sock, "--no-heartbeat",
                             "--health-listen", "127.0.0.1:0"], env=env)
    try:
        wait_answering(sock, proc)
        agent = Agent(sock, proc)
        addr = health_addr(agent)
        pkg = tmp_path / "src" / "wr_agent"
        shutil.copytree(bundle.package_dir(), str(pkg), ignore=shutil.ignore_patterns("__pycache__"))
        with open(str(pkg / "__init__.py"), "a") as f:
            f.write("# a newer build\n")
        data = bundle.bundle_bytes(str(pkg))
        new_hash = hashlib.sha256(data).hexdigest()
        install.write_bytes(data)
        r = subprocess.run([sys.executable, str(install), "handoff", "--socket", sock, "--bundle", str(install),
                            "--sha256", new_hash], env=env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        st_ = agent.status()
        assert st_["agent"]["build"] == new_hash and proc.poll() is None
        assert health_addr(agent) == addr
        assert set(get_health(addr)) == KEYS
    finally:
        stop(proc)


# -- the verdict, live (root) --------------------------------------------------------------------------------
@pytest.mark.root
def test_health_follows_the_verdict_from_outside_the_box(netns_box, tmp_path):
    """A burner inside the agent's PID namespace: health says busy, then idle after the hold; asked from
    the host over the veth, as a platform's proxy would. Polls cross the box's link (~0.9 KB each): two
    a second must not make an idle box busy (the agent discounts its own health traffic, or a poller
    running while BUSY would keep it BUSY forever). 40 slow clients held during the burner delay neither
    the tick (the cpu reason within 2 s) nor another health request (under 1 s)."""
    ns = PidNamespace(netns=netns_box.name)
    slow = []
    try:
        sock = os.path.join(private_dir(tmp_path / "box"), "agent.sock")
        proc = ns.popen(serve_argv(sock, "--hold-seconds", "1", "--no-heartbeat", "--health-listen", "0.0.0.0:0"),
                        env=agent_env())
        wait_answering(sock, proc)
        agent = Agent(sock, proc)
        addr = health_addr(agent, host=netns_box.box_addr)
        agent.wait_status(lambda s: s["verdict"] == "IDLE", 5, "idle at start")
        for _ in range(8):  # ~1.8 KB/s of polls: over the net signal's 500 B/s, yet not the box's work
            assert get_health(addr) == {"busy": False, "verdict": "IDLE", "stalled": False}
            time.sleep(0.5)
            st_ = agent.status()
            assert st_["verdict"] == "IDLE", st_["busy_reasons"]

        for _ in range(40):
            s = socket.create_connection(addr, timeout=10)
            s.sendall(b"GET /v1/hea")
            slow.append(s)
        burner = ns.popen([sys.executable, "-c", BURN])
        t0 = time.monotonic()
        st_ = agent.wait_status(lambda s: any(r.startswith("cpu: python") for r in s["busy_reasons"]), 3,
                                "cpu reason")
        assert time.monotonic() - t0 <= 2.0 and st_["verdict"] == "BUSY"
        t1 = time.monotonic()
        assert get_health(addr, 1.0) == {"busy": True, "verdict": "BUSY", "stalled": False}
        assert time.monotonic() - t1 < 1.0

        ns.kill(burner)
        st_ = agent.wait_status(lambda s: s["verdict"] == "IDLE", 8, "idle after the hold")
        assert st_["stalled"] is False
        assert get_health(addr) == {"busy": False, "verdict": "IDLE", "stalled": False}
    finally:
        for s in slow:
            s.close()
        ns.close()
