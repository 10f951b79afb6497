"""The local agent leaves out the app that subscribes to it directly, and what the app runs.

A stand-in app (a Python process, not the Qt app) connects to the real agent's socket and subscribes, as
the local provider's link does; then a burner it starts must not make the box BUSY, while the same burner
started beside it does (so the test can fail).
"""

import os
import subprocess
import sys
import time

import pytest
from agentrun import Agent, PidNamespace, agent_env, private_dir, serve_argv, wait_answering

pytestmark = [pytest.mark.integration, pytest.mark.root]

APP = ("import json, socket, subprocess, sys\n"
       "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile('rwb')\n"
       "f.readline(); f.write(b'{\"id\":1,\"method\":\"subscribe\"}\\n'); f.flush(); f.readline()\n"
       "print('subscribed', flush=True)\n"
       "sys.stdin.readline()\n"
       "subprocess.Popen([sys.executable, '-c', 'while True: pass'])\n"
       "print('burning', flush=True)\n"
       "sys.stdin.readline()\n")
BURN = "import time\nt = time.monotonic() + 30\nwhile time.monotonic() < t: pass\n"


@pytest.fixture
def ns():
    if os.geteuid() != 0:
        pytest.skip("needs root: PID namespace")
    n = PidNamespace()
    yield n
    n.close()


def test_app_subscribed_directly_and_its_children_are_not_work(ns, tmp_path):
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    proc = ns.popen(serve_argv(sock, "--hold-seconds", "2", "--no-heartbeat"), env=agent_env())
    wait_answering(sock, proc)
    agent = Agent(sock, proc)
    app = ns.popen([sys.executable, "-c", APP, sock], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert app.stdout.readline().strip() == b"subscribed"
    agent.wait_status(lambda s: s["verdict"] == "IDLE", 10, "idle once the app's start-up is held out")
    app.stdin.write(b"go\n")
    app.stdin.flush()
    assert app.stdout.readline().strip() == b"burning"
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        st = agent.status()
        assert st["verdict"] == "IDLE", st["busy_reasons"]
        time.sleep(0.25)
    other = ns.popen([sys.executable, "-c", BURN])
    agent.wait_status(lambda s: s["verdict"] == "BUSY", 5, "a burner beside the app is work")
    ns.kill(other)
    ns.kill(app)
    agent.stop()
