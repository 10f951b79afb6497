"""The app's relay is never the box's work, even when the agent first saw it before it named itself.

A relay starts as a plain `python3` (imports take a moment, longer on a loaded box) and only then names
itself `wr-agent-relay` and subscribes. Seen by the agent in that moment, it was kept under its first name
and counted as work for as long as it ran ("cpu: python3 (pid …)" on a simulator box in the GUI tests).
Here a relay-like process does the same, slowly enough to be seen first: real agent, real socket.
"""

import os
import subprocess
import sys
import time

import pytest
from agentrun import agent_env, private_dir, start_agent

pytestmark = [pytest.mark.integration,
              pytest.mark.linux(reason="the relay is told apart by SO_PEERCRED and /proc comm")]

RELAY_LIKE = r"""
import json, socket, sys, time
def burn(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass
burn(float(sys.argv[2]))                      # as the relay's start-up, before it names itself
open("/proc/self/comm", "w").write("wr-agent-relay")
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
f = s.makefile("rwb")
f.readline()                                  # hello
f.write(b'{"id": 1, "method": "subscribe"}\n'); f.flush()
f.readline()
print("subscribed", flush=True)
burn(float(sys.argv[3]))                      # relaying: the app's traffic, never the box's work
"""


def test_a_relay_seen_before_it_named_itself_is_not_work_once_it_subscribes(tmp_path):
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    agent = start_agent(sock, "--no-heartbeat", "--candidates", "user")
    relay = None
    try:
        relay = subprocess.Popen([sys.executable, "-c", RELAY_LIKE, sock, "2.5", "6"], env=agent_env(),
                                 stdout=subprocess.PIPE, text=True)
        mine = f"(pid {relay.pid})"
        agent.wait_status(lambda st: any(mine in r for r in st["busy_reasons"]), 10,
                          "the relay-like process seen as work before it named itself")
        assert relay.stdout.readline().strip() == "subscribed"
        time.sleep(2.5)  # two ticks and more: the agent looks again
        named = []
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and relay.poll() is None:
            # A vote for it, not the hold: the hold keeps naming the last vote for its 30 s ("hold: after …").
            named += [r for r in agent.status()["busy_reasons"] if mine in r and not r.startswith("hold:")]
            time.sleep(0.3)
        assert relay.poll() is None, "the relay-like process ended before it could be checked"
        assert not named, named
    finally:
        if relay is not None:
            relay.kill()
            relay.wait(10)
        agent.stop()


CONNECT_AS = r"""
import socket, sys, time
open("/proc/self/comm", "w").write(sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.recv(1)                                     # held until the test has looked at the peer
"""


@pytest.mark.parametrize(("comm", "ours"), [("wr-agent-relay", True), ("sshd", True), ("sshd-session", True),
                                            ("bash", False), ("sshd-evil", False), ("python3", False)])
def test_the_apps_stream_is_told_apart_by_its_peer(tmp_path, comm: str, ours: bool) -> None:
    """The app's bytes are its own traffic (never the box's network work) when its stream comes through our
    relay or straight through sshd (streamlocal forwarding): the peer's comm, read with SO_PEERCRED."""
    import socket

    from wr_agent import server

    path = os.path.join(private_dir(tmp_path / "run"), "peer.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    listener.settimeout(10)
    peer = subprocess.Popen([sys.executable, "-c", CONNECT_AS, path, comm])
    try:
        conn, _ = listener.accept()
        with conn:
            assert server._peer_is_relay(conn) is ours
            conn.send(b"x")
        peer.wait(10)
    finally:
        if peer.poll() is None:
            peer.kill()
            peer.wait(10)
        listener.close()
