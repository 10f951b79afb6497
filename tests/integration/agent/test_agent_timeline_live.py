"""The why-awake record on real agent processes: it survives a restart (saved at SIGTERM) and a hand-off
(the new process carries on without a gap), and a corrupt file is set aside and reported, nothing else."""

import hashlib
import itertools
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agentrun import Agent, agent_env, private_dir, start_agent, wait_answering, wait_until
from test_agent_handoff import newer_bundle
from wr_agent import bundle

pytestmark = [pytest.mark.integration, pytest.mark.slow,
              pytest.mark.linux(reason="busy reasons from the agent's /proc sampler")]
ARGS = ("--no-heartbeat", "--candidates", "user", "--hold-seconds", "2")


def timeline(agent, since=None):
    c = agent.client()
    try:
        reply = c.call("timeline") if since is None else c.call("timeline", since=since)
    finally:
        c.close()
    assert "result" in reply, reply
    return reply["result"]


def covered(agent, seconds, what):
    def enough():
        spans = timeline(agent)["spans"]
        return spans if spans and spans[-1]["end"] - spans[0]["start"] >= seconds else None
    return wait_until(enough, seconds + 15, 0.2, what)


def continuous(spans):
    """No hole over 2 s between consecutive spans, and nothing called asleep."""
    holes = [b["start"] - a["end"] for a, b in itertools.pairwise(spans)]
    return all(h <= 2.0 for h in holes) and not any(s["state"] == "asleep" for s in spans)


def test_restart_keeps_the_record(tmp_path):
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    agent = start_agent(sock, *ARGS)
    try:
        before = covered(agent, 3, "3 s of record")
    finally:
        agent.stop()
    path = sock + ".timeline"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    saved = json.loads(Path(path).read_text())
    assert saved["format"] == 1 and saved["spans"]
    restarted_at = time.time()
    agent = start_agent(sock, *ARGS)
    try:
        time.sleep(2.5)
        spans = timeline(agent)["spans"]
    finally:
        agent.stop()
    assert spans[0]["start"] == pytest.approx(before[0]["start"], abs=0.2)
    assert spans[-1]["end"] > restarted_at + 1
    assert not any(s["state"] == "asleep" for s in spans)  # the agent's absence is not sleep


def test_a_handoff_carries_the_record_on_without_a_gap(tmp_path):
    install = tmp_path / "share" / "wr-agent.pyz"
    install.parent.mkdir()
    install.write_bytes(bundle.bundle_bytes())
    sock = os.path.join(private_dir(tmp_path / "state"), "agent.sock")
    env = agent_env()
    del env["PYTHONPATH"]  # the zipapp runs on its own
    proc = subprocess.Popen([sys.executable, str(install), "serve", "--socket", sock, *ARGS], env=env)
    agent = Agent(sock, proc)
    try:
        wait_answering(sock, proc)
        before = covered(agent, 3, "3 s of record")
        data = newer_bundle(tmp_path)
        install.write_bytes(data)
        handed_at = time.time()
        r = subprocess.run([sys.executable, str(install), "handoff", "--socket", sock, "--bundle", str(install),
                            "--sha256", hashlib.sha256(data).hexdigest()], env=env, capture_output=True, text=True,
                           timeout=30)
        assert r.returncode == 0, r.stdout + r.stderr
        time.sleep(3)
        spans = timeline(agent)["spans"]
    finally:
        agent.stop()
    assert spans[0]["start"] == pytest.approx(before[0]["start"], abs=0.2)
    assert spans[-1]["end"] > handed_at + 2
    assert continuous(spans), spans


def test_a_corrupt_record_is_set_aside_reported_and_replaced(tmp_path):
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    garbage = b'{"format": 1, "spans": [[5, 1, "busy"'
    with open(sock + ".timeline", "wb") as f:
        f.write(garbage)
    agent = start_agent(sock, *ARGS)
    try:
        assert agent.status()["stalled"] is False
        first = covered(agent, 2, "a new record")
        reply = timeline(agent)
        assert "unreadable" in reply["problem"] and sock + ".timeline.corrupt" in reply["problem"]
        assert first and continuous(first)
    finally:
        agent.stop()
    with open(sock + ".timeline.corrupt", "rb") as f:
        assert f.read() == garbage
    assert json.loads(Path(sock + ".timeline").read_text())["spans"]  # the new record was saved at stop


def test_a_never_work_command_stops_counting_at_once(tmp_path):
    """A CPU burner named by its command line (not its comm, `sh`, shared by every shell) is excluded,
    with its children; another burner with a different command still counts."""
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    tag = f"wr-excl-{os.getpid()}"
    loop = "while :; do :; done"
    agent = start_agent(sock, *ARGS)
    burners = [subprocess.Popen(["sh", "-c", loop, f"{tag}-a"]), subprocess.Popen(["sh", "-c", loop, f"{tag}-b"])]
    try:
        def names_both(st):
            return all(f"(pid {b.pid})" in " ".join(st["busy_reasons"]) for b in burners)
        agent.wait_status(names_both, 10, "both burners as busy reasons")
        c = agent.client()
        reply = c.call("exclusions", names=[f"sh -c {loop} {tag}-a"])
        c.close()
        assert reply["result"]["names"] == [f"sh -c {loop} {tag}-a"], reply
        time.sleep(2.5)
        reasons = " ".join(agent.status()["busy_reasons"])
        assert f"(pid {burners[0].pid})" not in reasons and f"(pid {burners[1].pid})" in reasons, reasons
    finally:
        for b in burners:
            b.kill()
            b.wait(5)
        agent.stop()


def test_a_save_cut_short_leaves_no_temp_file_behind(tmp_path):
    """A crash mid-save leaves `<file>.tmp.<pid>`; the next start removes it (the lock says no save runs)."""
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    left = [Path(sock + ".timeline.tmp.4242"), Path(sock + ".exclusions.tmp.4243")]
    for path in left:
        path.write_text("{half")
    agent = start_agent(sock, *ARGS)
    agent.stop()
    assert not any(path.exists() for path in left)
