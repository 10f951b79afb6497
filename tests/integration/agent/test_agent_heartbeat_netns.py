"""The heartbeat counted on the host end of a netns_box: datagrams while BUSY, none while IDLE, none once
an unanswered ceiling prompt suppresses the verdict. The agent runs in the box, in its own PID namespace
(so only the test's job makes it busy); datagrams are counted on a UDP socket bound to the host's address
on port 9 in the root namespace."""

import os
import socket
import time

import pytest
from agentrun import Agent, PidNamespace, agent_env, private_dir, serve_argv, wait_answering

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.slow]


class Counter:
    def __init__(self, addr):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((addr, 9))
        self.sock.setblocking(False)

    def drain(self):
        n = 0
        while True:
            try:
                data = self.sock.recv(64)
            except BlockingIOError:
                return n
            assert data == b"\x00"
            n += 1

    def count_for(self, seconds):
        self.drain()
        time.sleep(seconds)
        return self.drain()

    def close(self):
        self.sock.close()


@pytest.fixture
def boxed(netns_box, tmp_path):
    ns = PidNamespace(netns=netns_box.name)
    counter = Counter(netns_box.host_addr)
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    proc = ns.popen(serve_argv(sock, "--hold-seconds", "1", "--heartbeat-interval", "1", "--test-min-duration",
                               "1"), env=agent_env())
    wait_answering(sock, proc)
    try:
        yield ns, Agent(sock, proc), counter, netns_box
    finally:
        counter.close()
        ns.close()


def test_datagrams_only_while_busy(boxed):
    ns, agent, counter, box = boxed
    st = agent.wait_status(lambda s: s["verdict"] == "IDLE", 5, "idle")
    assert st["keep_awake"]["enabled"] and not st["asserting"]
    assert counter.count_for(2.5) == 0
    job = ns.popen(["sleep", "600"])
    st = agent.wait_status(lambda s: s["verdict"] == "BUSY" and s["keep_awake"]["last_sent"], 7, "busy+sent")
    assert st["asserting"] and st["keep_awake"]["target"] == f"{box.host_addr}:9"
    assert st["keep_awake"]["error"] is None
    n = counter.count_for(3.0)
    assert 2 <= n <= 4, n  # every 1 s
    ns.kill(job)
    agent.wait_status(lambda s: s["verdict"] == "IDLE", 5, "idle again")
    assert counter.count_for(2.5) == 0


def test_unanswered_prompt_stops_the_heartbeat(boxed):
    ns, agent, counter, _ = boxed
    c = agent.client()
    res = c.call("settings", ceiling_seconds=2, prompt_timeout_seconds=1.5, ask_at_ceiling=True)["result"]
    assert res["ask_at_ceiling"]
    c.call("subscribe")
    job = ns.popen(["sleep", "600"])
    try:
        prompt = None
        deadline = time.monotonic() + 12  # a timer sleep counts after 3 s
        while prompt is None and time.monotonic() < deadline:
            ev = c.next_event(1.0)
            if ev and ev["event"] == "awake_ceiling_prompt":
                prompt = ev
        assert prompt is not None and prompt["awake_seconds"] >= 2
        st = agent.wait_status(lambda s: s["suppressed"], 4, "suppressed")
        assert st["verdict"] == "IDLE" and st["classifier_verdict"] == "BUSY" and not st["asserting"]
        assert counter.count_for(2.5) == 0
        st = c.call("keep")["result"]  # the user answers: awake again, heartbeat resumes at once
        assert st["verdict"] == "BUSY" and not st["suppressed"]
        assert counter.count_for(1.5) >= 1
    finally:
        c.close()
        ns.kill(job)


def test_no_default_route_is_reported(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root: namespaces")
    ns = PidNamespace()  # a fresh net namespace: only lo, no route
    try:
        sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
        proc = ns.popen(serve_argv(sock, "--hold-seconds", "1"), env=agent_env())
        wait_answering(sock, proc)
        agent = Agent(sock, proc)
        ns.popen(["sleep", "600"])
        st = agent.wait_status(lambda s: s["keep_awake"]["error"], 8, "heartbeat error")  # sleep: 3 s
        assert "no IPv4 default route" in st["keep_awake"]["error"] and not st["asserting"]
        assert st["verdict"] == "BUSY"
    finally:
        ns.close()
