"""A real agent that runs out of file descriptors neither spins nor stops for good.

When `accept()` fails with EMFILE the pending connection stays queued and the listener stays readable; an
event loop that only returns wakes at once, for ever, burning a core on the box and filling its log. Both
listeners (the agent socket and the health endpoint) pause instead, say so once, and serve again as soon as
descriptors are free. The descriptor limit is lowered for the agent process only (RLIMIT_NOFILE, soft and hard).
"""

import os
import resource
import socket
import time

import pytest
from agentrun import Client, private_dir, start_agent, stop, wait_until
from test_agent_health import get_health, health_addr

pytestmark = [pytest.mark.integration, pytest.mark.linux(reason="counts a process's files in /proc")]

LIMIT = 64  # soft and hard (the agent lifts its soft limit to the hard one); below its 64-client cap
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _low_fd_limit():
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def _cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime + stime


def _open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_out_of_descriptors_the_agent_waits_quietly_and_serves_again(tmp_path):
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    log_path = tmp_path / "agent.err"
    with open(log_path, "wb") as log:
        agent = start_agent(sock, "--health-listen", "127.0.0.1:0", preexec_fn=_low_fd_limit, stderr=log)
    held = []
    try:
        addr = health_addr(agent)
        assert get_health(addr)["verdict"] in ("BUSY", "IDLE")
        pid = agent.proc.pid
        # Fill the agent's table: each connection it accepts costs it one descriptor; the rest wait queued.
        for _ in range(LIMIT + 8):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(sock)
            held.append(s)
        wait_until(lambda: _open_fds(pid) >= LIMIT - 1, 10, what="the agent out of descriptors")
        queued_health = socket.create_connection(addr, timeout=3)
        held.append(queued_health)
        time.sleep(0.5)
        before = _cpu_seconds(pid)
        time.sleep(3.0)
        spent = _cpu_seconds(pid) - before
        assert spent < 0.6, f"the agent spent {spent:.2f} s of CPU in 3 s while out of descriptors (spinning?)"
        said = log_path.read_text(errors="replace")
        for what in ("agent socket", "health endpoint"):
            told = said.count(f"{what}: cannot accept a connection")
            assert told == 1, f"{what}: said {told} times in 3.5 s that it cannot accept (once is enough): {said}"

        for s in held:
            s.close()
        held.clear()

        def answers():
            try:
                c = Client(sock, 2.0)
            except OSError:
                return False
            try:
                return c.call("status").get("result", {}).get("verdict") in ("BUSY", "IDLE")
            finally:
                c.close()
        wait_until(answers, 15, interval=0.2, what="the agent socket serving again")
        assert get_health(addr)["verdict"] in ("BUSY", "IDLE")
        assert agent.proc.poll() is None
    finally:
        for s in held:
            s.close()
        stop(agent.proc)
    assert "agent socket: accepting connections again" in log_path.read_text(errors="replace")
