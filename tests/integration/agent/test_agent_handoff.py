"""Hand-off: a newer bundle takes over the running agent in place (same PID), keeping settings, the
awake clock and a pending prompt; a wrong hash is refused and the old agent carries on."""

import hashlib
import os
import shutil
import subprocess
import sys

import pytest
from agentrun import Agent, PidNamespace, agent_env, private_dir, wait_answering
from wr_agent import bundle

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.slow]


def newer_bundle(tmp_path):
    pkg = tmp_path / "src" / "wr_agent"
    shutil.copytree(bundle.package_dir(), str(pkg), ignore=shutil.ignore_patterns("__pycache__"))
    with open(str(pkg / "__init__.py"), "a") as f:
        f.write("# a newer build\n")
    return bundle.bundle_bytes(str(pkg))


def agent_pid(ns, proc):
    pids = [p for p in ns._descendants(proc.pid) if ns._comm(p) == "wr-agent"]
    assert len(pids) == 1, pids
    return pids[0]


def test_handoff_keeps_pid_settings_and_ceiling_state(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root: PID namespace")
    install = tmp_path / "share" / "wr-agent.pyz"
    install.parent.mkdir()
    install.write_bytes(bundle.bundle_bytes())
    old_hash = hashlib.sha256(install.read_bytes()).hexdigest()
    sock = os.path.join(private_dir(tmp_path / "state"), "agent.sock")
    env = agent_env()
    del env["PYTHONPATH"]  # the zipapp runs on its own
    ns = PidNamespace()
    try:
        proc = ns.popen([sys.executable, str(install), "serve", "--socket", sock, "--no-heartbeat",
                         "--test-min-duration", "1", "--awake-ceiling", "2", "--awake-prompt-timeout", "600",
                         "--ask-at-awake-ceiling", "--hold-seconds", "30"], env=env)
        wait_answering(sock, proc)
        agent = Agent(sock, proc)
        ns.popen(["sleep", "600"])
        before = agent.wait_status(lambda s: s["prompt_pending"], 15, "prompt pending")  # a sleep counts after 3 s
        assert before["agent"]["build"] == old_hash
        pid = agent_pid(ns, proc)

        c = agent.client()
        bad = c.call("handoff", bundle=str(install), sha256="0" * 64)
        assert bad["error"]["code"] == "failed" and "sha256" in bad["error"]["message"]
        c.close()

        data = newer_bundle(tmp_path)
        new_hash = hashlib.sha256(data).hexdigest()
        staged = install.parent / ".wr-agent.pyz.staged"
        staged.write_bytes(data)
        os.rename(str(staged), str(install))
        r = subprocess.run([sys.executable, str(install), "handoff", "--socket", sock, "--bundle", str(install),
                            "--sha256", new_hash], env=env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stdout + r.stderr
        after = agent.status()
        assert after["agent"]["build"] == new_hash
        assert agent_pid(ns, proc) == pid
        assert after["prompt_pending"] and after["prompt_deadline"] == before["prompt_deadline"]
        assert after["awake_seconds"] >= before["awake_seconds"]
        assert after["verdict"] == "BUSY" and after["ceiling_seconds"] == 2 and after["ask_at_ceiling"]
        assert not os.path.exists(sock + ".state")
        second = subprocess.run([sys.executable, str(install), "serve", "--socket", sock], env=env,
                                capture_output=True, text=True, timeout=30)
        assert second.returncode == 3  # the lock came through the exec
    finally:
        ns.close()
