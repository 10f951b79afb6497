"""Faults around a running agent: a hand-off that fails half-way must leave the old agent fully running
(ticks, heartbeat, subscriptions), not stalled for good."""

import contextlib
import hashlib
import os
import socket
import subprocess
import sys

import pytest
from agentrun import Agent, PidNamespace, agent_env, wait_answering
from wr_agent import VERSION, bundle

pytestmark = [pytest.mark.integration, pytest.mark.root, pytest.mark.slow]


@contextlib.contextmanager
def tiny_tmpfs(path, size="256k"):
    """A real small filesystem we can fill up (a full disk), unmounted afterwards."""
    os.makedirs(str(path), exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], check=True)
    try:
        yield str(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(directory):
    """Write until ENOSPC; returns the filler's path."""
    filler = os.path.join(directory, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):
            for _ in range(10000):
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)
    return filler


def test_a_handoff_that_cannot_write_its_state_leaves_the_old_agent_running(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root: tmpfs mount and a PID namespace")
    install = tmp_path / "wr-agent.pyz"
    install.write_bytes(bundle.bundle_bytes())
    sha = hashlib.sha256(install.read_bytes()).hexdigest()
    env = agent_env()
    del env["PYTHONPATH"]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with tiny_tmpfs(tmp_path / "state") as state:
        sock = os.path.join(state, "agent.sock")
        ns = PidNamespace()
        try:
            # The heartbeat's target is a port on the namespace's own loopback: it is sent while BUSY.
            proc = ns.popen([sys.executable, str(install), "serve", "--socket", sock, "--hold-seconds", "0.5",
                             "--tick-seconds", "0.2", "--heartbeat-target", "127.0.0.1:9",
                             "--heartbeat-interval", "1"], env=env)
            wait_answering(sock, proc)
            agent = Agent(sock, proc)
            agent.wait_status(lambda s: s["verdict"] == "IDLE", 10, "idle at start")
            sub = agent.client()
            sub.call("subscribe")
            fill(state)
            c = agent.client()
            assert c.call("handoff", bundle=str(install), sha256=sha)["result"] == {"accepted": True}
            c.close()
            # The state file could not be written; the same process carries on with its ticks.
            burner = ns.popen(["sh", "-c", "while :; do :; done"])
            busy = agent.wait_status(lambda s: s["verdict"] == "BUSY" and s["keep_awake"]["last_sent"],
                                     15, "BUSY with a heartbeat after the failed hand-off")
            assert not busy["stalled"] and busy["agent"]["build"] == sha
            event = sub.next_event(10)
            assert event is not None and event["event"] == "status"
            ns.kill(burner)
            agent.wait_status(lambda s: s["verdict"] == "IDLE", 15, "IDLE again")
            assert not [n for n in os.listdir(state) if ".state" in n]  # no half-written state left
            assert proc.poll() is None
        finally:
            ns.close()
            udp.close()


def test_reconnecting_restarts_a_stalled_agent_in_place(tmp_path):
    """The badge's advice for a stalled agent is "Reconnect to restart the agent": the installer's probe
    (what every connect runs) sees `stalled` and restarts it in place, keeping its PID and its settings.
    The stall is real: a tick interval far longer than the 30 s stall rule."""
    from workroom.agent_bundle import AgentBundle
    from workroom.remote.agent_install import AgentInstaller, AgentLayout, ServeOptions
    from workroom.remote.host_shell import LocalShell

    data = bundle.bundle_bytes()
    agent_bundle = AgentBundle(data=data, sha256=hashlib.sha256(data).hexdigest(), version=VERSION)
    layout = AgentLayout(install_dir=str(tmp_path / "share"), state_dir=str(tmp_path / "state"))
    os.makedirs(layout.install_dir)
    os.makedirs(layout.state_dir, mode=0o700)
    with open(layout.bundle_path, "wb") as f:
        f.write(data)
    env = agent_env()
    del env["PYTHONPATH"]
    proc = subprocess.Popen([sys.executable, layout.bundle_path, "serve", "--socket", layout.socket_path,
                             "--candidates", "user", "--no-heartbeat", "--tick-seconds", "100000",
                             "--test-min-duration", "1", "--awake-ceiling", "77"], env=env)
    try:
        wait_answering(layout.socket_path, proc)
        agent = Agent(layout.socket_path, proc)
        agent.wait_status(lambda s: s["stalled"], 45, "the agent stalled")
        serve = ServeOptions(workroom="t", candidates="user", heartbeat=False)
        report = AgentInstaller(LocalShell(), agent_bundle, layout, serve).ensure()
        assert report.action == "restarted" and report.pushed_bytes == 0
        after = agent.status()
        assert not after["stalled"] and after["ceiling_seconds"] == 77
        assert proc.poll() is None  # the same process, re-executed in place
        again = AgentInstaller(LocalShell(), agent_bundle, layout, serve).ensure()
        assert again.action == "none"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


HOSTILE_NAME = "\x1b]0;PWN\x07\x1b[2J<h1"  # 15 bytes: the longest process name the kernel keeps
NAMED_BURN = (f"open('/proc/self/comm', 'w').write({HOSTILE_NAME!r})\n"
              "import time\nt = time.monotonic() + 60\nwhile time.monotonic() < t: pass\n")


def test_a_hostile_process_name_leaves_the_agent_as_plain_text(tmp_path):
    """Any user can name a process; the agent's busy reasons carry no control characters."""
    if os.geteuid() != 0:
        pytest.skip("needs root: PID namespace")
    sock = os.path.join(str(tmp_path), "run", "agent.sock")
    os.makedirs(os.path.dirname(sock), mode=0o700)
    ns = PidNamespace()
    try:
        proc = ns.popen([sys.executable, "-m", "wr_agent", "serve", "--socket", sock, "--no-heartbeat",
                         "--hold-seconds", "2"], env=agent_env())
        wait_answering(sock, proc)
        agent = Agent(sock, proc)
        ns.popen([sys.executable, "-c", NAMED_BURN])
        st = agent.wait_status(lambda s: any("PWN" in r for r in s["busy_reasons"]), 10, "the burner seen")
        reason = next(r for r in st["busy_reasons"] if "PWN" in r)
        assert "?]0;PWN??[2J<h1" in reason, reason
        assert not any(ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F for ch in "".join(st["busy_reasons"]))
        # The why-awake record keeps what it was busy with, and `workroom why` prints it in a terminal.
        c = agent.client()
        try:
            spans = c.call("timeline")["result"]["spans"]
        finally:
            c.close()
        subjects = "".join(span["subject"] for span in spans)
        assert "PWN" in subjects, spans
        assert not any(ord(ch) < 32 or 0x7F <= ord(ch) <= 0x9F for ch in subjects), spans
    finally:
        ns.close()
