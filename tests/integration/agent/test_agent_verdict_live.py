"""The classifier on real processes, in a fresh PID namespace so only the test's jobs are candidates."""

import os
import sys
import time

import pytest
from agentrun import Agent, PidNamespace, agent_env, private_dir, serve_argv, wait_answering

pytestmark = [pytest.mark.integration, pytest.mark.root]

BURN = "import time\nt = time.monotonic() + 60\nwhile time.monotonic() < t: pass\n"
# A query over IPv6 loopback answered after 6 s, then the connection left open and idle (a pool's).
TCP_JOB = ("import socket, sys, threading, time\n"
           "s = socket.socket(socket.AF_INET6); s.bind(('::1', 0)); s.listen(1)\n"
           "def serve():\n"
           "    a, _ = s.accept(); a.recv(64); time.sleep(6); a.sendall(b'42\\n'); a.recv(64)\n"
           "threading.Thread(target=serve, daemon=True).start()\n"
           "c = socket.create_connection(s.getsockname()[:2]); c.sendall(b'SELECT slow()\\n')\n"
           "c.recv(64); print('answered', flush=True); c.recv(64)\n")  # then idle: no timer sleep


@pytest.fixture
def ns():
    if os.geteuid() != 0:
        pytest.skip("needs root: PID/mount/net namespaces")
    n = PidNamespace()
    yield n
    n.close()


@pytest.fixture
def agent(ns, tmp_path):
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    proc = ns.popen(serve_argv(sock, "--hold-seconds", "2", "--no-heartbeat", "--workroom", "nsbox"),
                    env=agent_env())
    wait_answering(sock, proc)
    a = Agent(sock, proc)
    a.wait_status(lambda s: s["verdict"] == "IDLE", 5, "idle at start")
    return a


def test_cpu_burner_busy_within_2s_then_idle_after_hold(ns, agent):
    burner = ns.popen([sys.executable, "-c", BURN])
    t0 = time.monotonic()
    st = agent.wait_status(lambda s: s["verdict"] == "BUSY", 3, "busy")
    assert time.monotonic() - t0 <= 2.0
    assert any(r.startswith("cpu: python") for r in st["busy_reasons"]), st["busy_reasons"]
    ns.kill(burner)
    t1 = time.monotonic()
    agent.wait_status(lambda s: s["verdict"] == "IDLE", 6, "idle after the hold")
    assert time.monotonic() - t1 <= 2 + 1.5


def test_job_that_only_sleeps_is_busy(ns, agent):
    job = ns.popen(["sh", "-c", "sleep 600"])
    st = agent.wait_status(lambda s: s["verdict"] == "BUSY", 7, "busy")  # a timer sleep counts after 3 s
    assert any(r.startswith("sleep: sleep") for r in st["busy_reasons"]), st["busy_reasons"]
    ns.kill(job)
    agent.wait_status(lambda s: s["verdict"] == "IDLE", 8, "idle after the hold")


def test_a_request_waiting_on_a_connection_is_busy_and_the_open_connection_after_it_is_not(ns, agent):
    """The kernel's per-connection facts (sock_diag, IPv6 here): BUSY while the query waits, IDLE once it is
    answered though the connection stays open."""
    import subprocess
    job = ns.popen([sys.executable, "-c", TCP_JOB], stdout=subprocess.PIPE)
    st = agent.wait_status(lambda s: any(r.startswith("tcp: python") for r in s["busy_reasons"]), 5,
                           "tcp reason")
    assert st["verdict"] == "BUSY" and st["tcp"] == "sock_diag"
    tcp = [r for r in st["structured_reasons"] if r["class"] == "tcp"]
    assert tcp and tcp[0]["detail"]["peer"] == "::1" and tcp[0]["detail"]["port"] > 0, tcp  # the peer, as data
    assert job.stdout.readline().strip() == b"answered"
    agent.wait_status(lambda s: s["verdict"] == "IDLE", 2 + 8 + 4, "idle with the connection still open")
    time.sleep(3)
    assert agent.status()["verdict"] == "IDLE" and job.poll() is None
    ns.kill(job)


@pytest.mark.slow
def test_idle_agent_is_silent_and_changes_are_pushed(ns, agent):
    c = agent.client()
    try:
        sub = c.call("subscribe")["result"]
        assert sub["verdict"] == "IDLE"
        assert c.next_event(2.5) is None  # idle: nothing on the wire
        job = ns.popen(["sleep", "600"])
        ev = c.next_event(7.0)  # a timer sleep counts after 3 s
        assert ev is not None and ev["event"] == "status" and ev["status"]["verdict"] == "BUSY"
        ns.kill(job)
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            ev = c.next_event(1.0)
            if ev and ev["status"]["verdict"] == "IDLE":
                break
        else:
            pytest.fail("no IDLE event after the job ended")
        assert c.next_event(2.0) is None
    finally:
        c.close()


def test_coarse_sampler_sees_a_burner(ns, tmp_path):
    sock = os.path.join(private_dir(tmp_path / "coarse"), "agent.sock")
    proc = ns.popen(serve_argv(sock, "--sampler", "coarse", "--hold-seconds", "1", "--no-heartbeat",
                               "--tick-seconds", "0.2"),
                    env=agent_env())
    wait_answering(sock, proc)
    a = Agent(sock, proc)
    assert a.status()["sampler"] == "coarse" and a.status()["keep_awake"]["enabled"] is False
    ns.popen([sys.executable, "-c", BURN])
    st = a.wait_status(lambda s: s["verdict"] == "BUSY", 5, "coarse busy (ps every 5 ticks = 1 s)")
    assert any(r.endswith("(coarse)") for r in st["busy_reasons"]), st["busy_reasons"]
