"""Hostile clients: garbage, oversize lines, half lines, floods. Each costs only its own connection; the
tick goes on (a job started during the abuse still turns the verdict BUSY)."""

import json
import os
import socket
import time

import pytest
from agentrun import Agent, Client, PidNamespace, agent_env, private_dir, serve_argv, start_agent, stop, wait_answering
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = [pytest.mark.integration, pytest.mark.root]


@pytest.fixture(scope="module")
def ns():
    if os.geteuid() != 0:
        pytest.skip("needs root: PID/mount/net namespaces")
    n = PidNamespace()
    yield n
    n.close()


@pytest.fixture(scope="module")
def agent(ns, tmp_path_factory):
    sock = os.path.join(private_dir(tmp_path_factory.mktemp("hostile") / "run"), "agent.sock")
    proc = ns.popen(serve_argv(sock, "--hold-seconds", "1", "--no-heartbeat"), env=agent_env())
    wait_answering(sock, proc)
    return Agent(sock, proc)


def raw_exchange(path, data, timeout=2.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            out += chunk
        return out
    finally:
        s.close()


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids,
                                                                                     max_size=4),
                           max_leaves=12)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=st.binary(max_size=300))
def test_random_bytes_get_error_replies(agent, payload):
    out = raw_exchange(agent.sock, payload + b"\n")
    lines = [json.loads(x) for x in out.split(b"\n") if x]
    assert lines[0]["hello"] == "wr-agent"
    for reply in lines[1:]:
        assert "error" in reply or "result" in reply


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(req=st.dictionaries(st.sampled_from(["id", "method", "ceiling_seconds", "prompt_timeout_seconds",
                                            "ask_at_ceiling", "bundle", "sha256", "x"]), json_values, max_size=6),
       method=st.sampled_from(["status", "settings", "keep", "ping", "subscribe", "handoff", "bogus", None]))
def test_random_requests_never_hurt(agent, req, method):
    if method is not None:
        req["method"] = method
    if method == "keep":
        req["method"] = "status"  # keep is harmless but changes state other examples do not care about
    line = json.dumps(req).encode() + b"\n"
    out = raw_exchange(agent.sock, line)
    lines = [json.loads(x) for x in out.split(b"\n") if x]
    replies = [x for x in lines[1:] if "event" not in x]
    assert len(replies) == 1 and ("error" in replies[0] or "result" in replies[0])
    if "error" in replies[0]:
        assert replies[0]["error"]["code"] in ("invalid", "unsupported", "out_of_range", "failed")


def test_oversize_line_is_refused_and_closed(agent):
    out = raw_exchange(agent.sock, b"x" * 70000)
    lines = [json.loads(x) for x in out.split(b"\n") if x]
    assert lines[-1] == {"id": None, "error": {"code": "too_large", "message": "line longer than 65536 bytes"}}


def _rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def test_a_refused_client_that_keeps_sending_costs_no_memory(tmp_path):
    """Answers queued (it never reads), then an oversize line, then a stream: once refused nothing more is read.
    A plain agent process (its own PID, for its memory), not the namespace one."""
    agent = start_agent(os.path.join(private_dir(tmp_path / "run"), "agent.sock"), "--no-heartbeat")
    try:
        _stream_after_refusal(agent)
    finally:
        stop(agent.proc)


def _stream_after_refusal(agent):
    probe = Client(agent.sock)
    answer = len(json.dumps(probe.call("status"))) + 1
    probe.close()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(agent.sock)
    before = _rss_kib(agent.proc.pid)
    streamed = 0
    try:
        # About 600 KiB of answers: more than the kernel buffers hold, less than the agent's 1 MiB send limit.
        s.sendall(b'{"id":1,"method":"status"}\n' * (260_000 // answer))  # it does not read them
        s.sendall(b"x" * 70000)
        chunk = b"y" * (1 << 20)
        while streamed < 128 << 20:
            s.sendall(chunk)
            streamed += len(chunk)
    except OSError:  # timed out (nobody reads any more) or the agent hung up: both fine
        pass
    finally:
        s.close()
    grown = _rss_kib(agent.proc.pid) - before
    assert grown < 30 * 1024, f"the agent grew {grown} KiB while a refused client streamed {streamed >> 20} MiB"
    fresh = Client(agent.sock)
    assert fresh.call("ping")["result"]["monotonic"] > 0
    fresh.close()


def test_deep_nesting_is_invalid_not_fatal(agent):
    out = raw_exchange(agent.sock, b"[" * 60000 + b"\n")
    assert json.loads(out.split(b"\n")[1])["error"]["code"] == "invalid"


def test_half_a_line_then_hang_up_and_a_flood(ns, agent):
    app = Client(agent.sock)
    assert app.call("subscribe")["result"]["verdict"] == "IDLE"
    for _ in range(20):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(agent.sock)
        s.sendall(b'{"id":1,"method":"sta')
        s.close()
    flood = []
    job = None
    try:
        deadline = time.monotonic() + 10
        while len(flood) < 200 and time.monotonic() < deadline:  # more than the agent serves at once
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(2)
            try:
                s.connect(agent.sock)
            except BlockingIOError:  # backlog full for a moment: the agent is accepting
                s.close()
                time.sleep(0.01)
                continue
            flood.append(s)
        assert len(flood) == 200
        job = ns.popen(["sleep", "600"])
        t0 = time.monotonic()
        ev = app.next_event(8.0)  # a timer sleep counts once it has lasted 3 s (docs/agent.md)
        assert ev is not None and ev["status"]["verdict"] == "BUSY" and time.monotonic() - t0 < 8
        fresh = Client(agent.sock)
        assert fresh.call("ping")["result"]["monotonic"] > 0
        fresh.close()
    finally:
        for s in flood:
            s.close()
        app.close()
        if job is not None:
            ns.kill(job)
