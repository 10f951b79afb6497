"""`serve --supervise` restarts a dead serve child quickly; SIGTERM stops both."""

import os
import signal
import subprocess
import time

import pytest
from agentrun import agent_env, private_dir, serve_argv, stop, wait_answering, wait_until

pytestmark = pytest.mark.integration


def child_of(pid):
    with open(f"/proc/{pid}/task/{pid}/children") as f:
        kids = f.read().split()
    return int(kids[0]) if kids else None


def test_dead_child_is_restarted_within_a_second_or_so(tmp_path):
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    sup = subprocess.Popen(serve_argv(sock, "--no-heartbeat", "--supervise", "--log", str(tmp_path / "log")),
                           env=agent_env())
    try:
        wait_answering(sock, sup)
        first = child_of(sup.pid)
        assert first is not None
        with open(f"/proc/{sup.pid}/comm") as f:
            assert f.read().strip() == "wr-agent-super"
        t0 = time.monotonic()
        os.kill(first, signal.SIGKILL)

        def restarted():
            kid = child_of(sup.pid)
            if kid in (None, first):
                return None
            try:
                wait_answering(sock, sup, timeout=0.2)
            except TimeoutError:
                return None
            return kid
        second = wait_until(restarted, 5, 0.05, "restarted child")
        assert time.monotonic() - t0 < 2.0
        assert second != first
    finally:
        stop(sup)
    assert sup.returncode == 0
    assert child_of_gone(second)


def child_of_gone(pid):
    if not os.path.exists(f"/proc/{pid}"):
        return True
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] == "Z"
