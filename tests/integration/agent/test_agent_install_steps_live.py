"""The installer's steps on the host (wr_agent/install_probe.py, install_wait.py, uninstall.py) against real
agents: the probe and the wait asking a running agent, the uninstall stopping an agent and its own supervisor
(and one that ignores SIGTERM), and every carried command run through the app's installer by the oldest
Python the agent supports. Over sshd: tests/integration/engine/ (test_reconnect_one_command.py,
test_uninstall_agent.py)."""

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from agentrun import Client, agent_env, private_dir, serve_argv, start_agent, stop, wait_answering, wait_until
from workroom.agent_bundle import AgentBundle
from workroom.remote.agent_install import AgentInstaller, AgentLayout, ServeOptions
from workroom.remote.host_shell import LocalShell
from wr_agent import VERSION, bundle, install_probe, install_wait, uninstall

pytestmark = [pytest.mark.integration, pytest.mark.linux(reason="follows processes and their names in /proc")]
PY38 = os.path.expanduser("~/.pyenv/versions/3.8.18/bin/python3")
PREFIX = "dev.workroom.companion.agent"


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    monkeypatch.setenv("HOME", str(home))
    return home


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_probe_and_the_wait_ask_a_running_agent(tmp_path):
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    agent = start_agent(sock, "--no-heartbeat")
    try:
        build = Client(sock).hello["build"]
        assert install_probe.lock_held(sock) is True
        assert install_probe.ask_agent(sock) == (build, False)
        assert install_wait.wait_for_agent(sock, 5, build) is None
        assert install_wait.wait_for_agent(sock, 5) is None  # checking: not stalled
        t0 = time.monotonic()
        why = install_wait.wait_for_agent(sock, 0.5, "0" * 64)
        assert why == f"the agent did not come up with the new build within 0 s (agent still runs build {build})"
        assert time.monotonic() - t0 < 5
    finally:
        agent.stop()


def test_the_uninstall_stops_the_supervisor_first_then_the_agent(tmp_path, home):
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    sup = subprocess.Popen(serve_argv(sock, "--no-heartbeat", "--supervise", "--log", sock + ".log"),
                           env=agent_env())
    try:
        wait_answering(sock, sup)
        agent_pid = uninstall.holder(sock)
        assert agent_pid not in (None, -1, sup.pid)
        out = uninstall.uninstall(str(tmp_path / "share" / "wr-agent.pyz"), sock, PREFIX)
        assert out["stopped"] == [f"the agent's own supervisor (pid {sup.pid})", f"the agent (pid {agent_pid})"]
        assert out["still_running"] is False and out["problems"] == []
        assert sup.wait(timeout=10) is not None
        wait_until(lambda: not alive(agent_pid), 10, what="the agent gone")
        time.sleep(1.5)  # longer than the supervisor's restart delay: nothing comes back
        assert uninstall.holder(sock) is None
        assert not os.path.exists(os.path.dirname(sock))  # its files removed, then its empty folder
    finally:
        stop(sup)


def test_an_agent_that_ignores_sigterm_is_killed(tmp_path, home):
    """A stand-in agent (it holds the lock and its command line serves the socket) that ignores SIGTERM."""
    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    holder = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "fd = os.open(sys.argv[1] + '.lock', os.O_RDWR | os.O_CREAT, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "os.pwrite(fd, b'%d\\n' % os.getpid(), 0)\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"), sock, "serve", f"--socket={sock}"], stdout=subprocess.PIPE)
    try:
        assert holder.stdout.readline() == b"held\n"
        t0 = time.monotonic()
        out = uninstall.uninstall(str(tmp_path / "share" / "wr-agent.pyz"), sock, PREFIX, term_seconds=0.5)
        assert out["stopped"] == [f"the agent (pid {holder.pid})"] and out["still_running"] is False
        assert holder.wait(timeout=10) == -signal.SIGKILL
        assert time.monotonic() - t0 < 8
    finally:
        holder.kill()
        holder.wait(timeout=10)
        holder.stdout.close()


@pytest.mark.skipif(not os.path.exists(PY38), reason="Python 3.8 not installed here")
def test_every_carried_step_runs_on_the_oldest_python_the_agent_supports(tmp_path):
    """Probe, push (upload check, start, wait), the probe-then-relay command and the uninstall, each carried in
    its command from the app's bundle, run by Python 3.8 on this computer."""
    data = bundle.bundle_bytes()
    ours = AgentBundle(data=data, sha256=hashlib.sha256(data).hexdigest(), version=VERSION)
    layout = AgentLayout(install_dir=str(tmp_path / "share"), state_dir=str(tmp_path / "state"))
    installer = AgentInstaller(LocalShell(), ours, layout, ServeOptions(workroom="t", heartbeat=False),
                               python=(PY38,))
    try:
        assert installer.probe().python.startswith("3.8.")
        report = installer.ensure()
        assert report.action == "installed" and report.pushed_bytes == len(data)
        probe = installer.probe()
        assert probe.running and probe.sha256 == ours.sha256 and probe.running_build == ours.sha256
        done = LocalShell().run(installer.probe_then_relay_command(), input=b'{"id":1,"method":"subscribe"}\n',
                                timeout=30)
        lines = [json.loads(line) for line in done.stdout.splitlines()]
        assert lines[0]["sha256"] == ours.sha256 and lines[0]["python"].startswith("3.8.")
        assert lines[1]["hello"] == "wr-agent" and lines[1]["build"] == ours.sha256
        assert next(line for line in lines if line.get("id") == 1)["result"]["agent"]["build"] == ours.sha256
    finally:
        removed = installer.uninstall()
    assert any("supervisor" in s for s in removed.stopped) and layout.bundle_path in removed.removed


@pytest.mark.parametrize("victim", ["another process of this user", "a process holding the lock"])
def test_a_lock_naming_a_process_that_is_not_our_agent_signals_nothing(tmp_path, home, victim):
    """A lock file anyone could write names a pid: uninstall and the frozen agent's replacement verify that it is
    this user's agent serving the socket before signalling it, and say why not."""
    from wr_agent import replace_frozen

    sock = os.path.join(private_dir(tmp_path / "run"), "agent.sock")
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    locker = subprocess.Popen([sys.executable, "-c", (
        "import fcntl, os, sys, time\n"
        "fd = os.open(sys.argv[1] + '.lock', os.O_RDWR | os.O_CREAT, 0o600)\n"
        "fcntl.flock(fd, fcntl.LOCK_EX)\n"
        "os.pwrite(fd, b'%d\\n' % int(sys.argv[2]), 0)\n"
        "print('held', flush=True)\n"
        "time.sleep(60)\n"), sock, str(bystander.pid)], stdout=subprocess.PIPE)
    try:
        assert locker.stdout.readline() == b"held\n"
        if victim == "a process holding the lock":  # the lock names its holder, which is not an agent
            os.pwrite(os.open(sock + ".lock", os.O_WRONLY), b"%d\n" % locker.pid, 0)
        named = uninstall.holder(sock)
        out = uninstall.uninstall(str(tmp_path / "share" / "wr-agent.pyz"), sock, PREFIX, term_seconds=0.5)
        assert out["stopped"] == [] and out["still_running"] is True
        assert any("will not stop" in p for p in out["problems"]), out
        answer = replace_frozen.replace(sock)
        assert "refused" in answer and str(named) in answer["refused"], answer
        time.sleep(0.3)
        assert bystander.poll() is None and locker.poll() is None  # neither was signalled
    finally:
        for p in (bystander, locker):
            p.kill()
            p.wait(timeout=10)
        locker.stdout.close()
