"""The agent under launchd: the LaunchAgent plist and the `launchctl` commands, checked with plistlib; and
a killed agent restarted within ~2 s, by the real launchd on a Mac.

launchctl exists only on macOS, so here a fake one stands in (the only fake): it records its arguments
and, for `bootstrap`, starts the plist's ProgramArguments in a new session the way launchd would; for the
restart test, a keeper does what launchd does with KeepAlive and ThrottleInterval. On a Mac the restart test
also runs for real (marked mac): the real launchctl in this user's GUI domain, or, where there is none
(nobody logged in), the installer's documented fallback, the agent's own supervisor. The shell, the
installer and the agent are real (docs/macos.md).
"""

from __future__ import annotations

import json
import os
import plistlib
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures.procs import processes_naming
from workroom.agent_bundle import AgentBundle, locate_agent_bundle
from workroom.core.connection import ConnectionInfo
from workroom.core.host_snapshot import HostSnapshot
from workroom.core.hosts import Host
from workroom.paths import agent_socket_dir
from workroom.remote.agent_install import (
    SUPERVISOR_LAUNCHD,
    SUPERVISOR_OWN,
    AgentInstaller,
    AgentLayout,
    ServeOptions,
    launchd_label,
)
from workroom.remote.host_shell import ExecResult, LocalShell
from workroom.ui.row_text import detail_lines

pytestmark = pytest.mark.integration

FAKE_LAUNCHCTL = """#!{python}
import json, os, plistlib, subprocess, sys
with open({record!r}, "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
if {fail_bootstrap!r} and sys.argv[1] == "bootstrap":
    sys.stderr.write("Bootstrap failed: 125: Domain does not support specified action\\n")
    sys.exit(125)
if sys.argv[1] == "bootstrap":
    with open(sys.argv[3], "rb") as f:
        job = plistlib.load(f)
    log = os.open(job["StandardErrorPath"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    subprocess.Popen(job["ProgramArguments"], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                     start_new_session=True, cwd=job["WorkingDirectory"])
    sys.exit(0)
if sys.argv[1] == "bootout":
    sys.stderr.write("Boot-out failed: 3: No such process\\n")
    sys.exit(3)
sys.exit(64)
"""


class ShellWith(LocalShell):
    """This computer's /bin/sh with a chosen PATH and HOME (the fake launchctl first on the PATH)."""

    def __init__(self, path: str, home: Path) -> None:
        self.path, self.home = path, home

    def run(self, cmd: str, *, input: bytes | None = None, timeout: float = 30.0, **kw: Any) -> ExecResult:
        prefix = f"PATH={self.path}; HOME={self.home}; export PATH HOME; unset XDG_RUNTIME_DIR; "
        return super().run(prefix + cmd, input=input, timeout=timeout, **kw)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> AgentBundle:
    return locate_agent_bundle(tmp_path_factory.mktemp("bundle-cache"))


def _setup(tmp_path: Path, fail_bootstrap: bool) -> tuple[ShellWith, Path, AgentLayout]:
    fakebin, home = tmp_path / "fakebin", tmp_path / "home"
    fakebin.mkdir()
    home.mkdir(mode=0o700)
    record = tmp_path / "launchctl.args"
    fake = fakebin / "launchctl"
    fake.write_text(FAKE_LAUNCHCTL.format(python=sys.executable, record=str(record), fail_bootstrap=fail_bootstrap))
    fake.chmod(0o755)
    layout = AgentLayout(install_dir=str(tmp_path / "agent"), state_dir=str(tmp_path / "run"))
    return ShellWith(f"{fakebin}:/usr/bin:/bin", home), record, layout


def _kill_agents(bundle_path: str) -> None:
    out = subprocess.run(["pgrep", "-f", bundle_path], capture_output=True, text=True)
    for pid in out.stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_launchagent_plist_and_bootstrap(tmp_path: Path, bundle: AgentBundle) -> None:
    shell, record, layout = _setup(tmp_path, fail_bootstrap=False)
    installer = AgentInstaller(shell, bundle, layout, ServeOptions(workroom="mac", heartbeat=False),
                               python=(sys.executable,))
    try:
        report = installer.ensure()
        assert report.action == "installed" and report.supervisor == SUPERVISOR_LAUNCHD
        label = launchd_label(report.socket_path)
        assert label.startswith("dev.workroom.companion.agent.")
        plist_path = shell.home / "Library" / "LaunchAgents" / f"{label}.plist"
        job = plistlib.loads(plist_path.read_bytes())
        assert job["Label"] == label
        args = job["ProgramArguments"]  # through the launcher, the expected hash on the command line
        assert args[:2] == [sys.executable, "-c"] and args[3:7] == [
            bundle.sha256, report.bundle_path, str(shell.home / "Library" / "LaunchAgents"), "serve"]
        assert "--supervise" not in job["ProgramArguments"] and "--detach" not in job["ProgramArguments"]
        assert job["KeepAlive"] is True and job["RunAtLoad"] is True and job["ThrottleInterval"] == 1
        assert job["StandardErrorPath"] == report.socket_path + ".log"
        calls = [json.loads(line) for line in record.read_text().splitlines()]
        uid = os.getuid()
        assert calls == [["bootout", f"gui/{uid}/{label}"], ["bootstrap", f"gui/{uid}", str(plist_path)]]
        # The next connect finds the agent running and says which supervisor keeps it.
        again = AgentInstaller(shell, bundle, layout, ServeOptions(workroom="mac"), python=(sys.executable,))
        second = again.ensure()
        assert second.action == "none" and second.supervisor == SUPERVISOR_LAUNCHD
        host = Host(name="mac")
        snap = HostSnapshot(host, host.traits, ConnectionInfo(), None, None, install=second)
        assert ("Kept running by", "launchd LaunchAgent") in detail_lines(snap, 0.0)
    finally:
        _kill_agents(str(tmp_path / "agent" / "wr-agent.pyz"))


def test_no_gui_domain_falls_back_to_the_agents_own_supervisor(tmp_path: Path, bundle: AgentBundle) -> None:
    shell, record, layout = _setup(tmp_path, fail_bootstrap=True)
    installer = AgentInstaller(shell, bundle, layout, ServeOptions(workroom="mac", heartbeat=False),
                               python=(sys.executable,))
    try:
        report = installer.ensure()
        assert report.supervisor == SUPERVISOR_OWN
        assert [json.loads(line)[0] for line in record.read_text().splitlines()] == ["bootout", "bootstrap"]
    finally:
        _kill_agents(str(tmp_path / "agent" / "wr-agent.pyz"))


# --- restarted after kill -9 -----------------------------------------------------------------------------

RESTART_WITHIN = 2.0  # seconds from kill -9 to a new agent process (ThrottleInterval 1; own supervisor 0.5 s)
FINDER_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"

# launchctl and launchd in one stand-in: `bootstrap` starts a keeper that runs the plist's job and, as launchd
# does with KeepAlive, starts it again when it exits, no sooner than ThrottleInterval after its last start.
KEEPING_LAUNCHCTL = """#!{python}
import os, signal, subprocess, sys
state = {state!r}
cmd = sys.argv[1:]
def label_of(target):
    return target.rsplit("/", 1)[1]
def keeper_pid(label):
    try:
        return int(open(os.path.join(state, label)).read())
    except (OSError, ValueError):
        return None
if cmd[0] == "bootstrap":
    import plistlib
    label = plistlib.load(open(cmd[2], "rb"))["Label"]
    keeper = subprocess.Popen([sys.executable, {keeper!r}, cmd[2]], start_new_session=True,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    open(os.path.join(state, label), "w").write(str(keeper.pid))
    sys.exit(0)
if cmd[0] in ("bootout", "print"):
    pid = keeper_pid(label_of(cmd[1]))
    if pid is None:
        sys.stderr.write("Boot-out failed: 3: No such process\\n" if cmd[0] == "bootout" else "not found\\n")
        sys.exit(3 if cmd[0] == "bootout" else 113)
    if cmd[0] == "bootout":
        os.kill(pid, signal.SIGTERM)
        os.unlink(os.path.join(state, label_of(cmd[1])))
    sys.exit(0)
sys.exit(64)
"""
KEEPER = """import os, plistlib, signal, subprocess, sys, time
job = plistlib.load(open(sys.argv[1], "rb"))
stopping, child = [], [None]
def stop(*_):
    stopping.append(1)
    if child[0] is not None:
        child[0].kill()
signal.signal(signal.SIGTERM, stop)
os.umask(job.get("Umask", 0o022))
log = os.open(job["StandardErrorPath"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
deadline = time.monotonic() + 600  # never outlives a test run by much
while not stopping and time.monotonic() < deadline:
    started = time.monotonic()
    child[0] = subprocess.Popen(job["ProgramArguments"], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                cwd=job["WorkingDirectory"])
    child[0].wait()
    if stopping or not job.get("KeepAlive"):
        break
    time.sleep(max(0.0, job.get("ThrottleInterval", 10) - (time.monotonic() - started)))
"""


def _gui_domain() -> bool:
    """Whether this user has a GUI launchd domain (someone is logged in at the screen)."""
    return subprocess.run(["launchctl", "print", f"gui/{os.getuid()}"], capture_output=True,
                          timeout=30).returncode == 0


def _agents(bundle_path: str) -> set[int]:
    """The serving agents (not an own supervisor, whose command carries --supervise)."""
    return {pid for pid, cmd in processes_naming(bundle_path).items() if "--supervise" not in cmd.split()}


def _answers(sock: str) -> bool:
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(2)
            s.connect(sock)
            return bool(json.loads(s.makefile("rb").readline()).get("build"))
    except (OSError, ValueError):
        return False


def _wait(what: str, timeout: float, check):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


@pytest.mark.parametrize("launchd", ["stand-in", pytest.param("real", marks=pytest.mark.mac)])
def test_a_killed_agent_is_running_again_within_two_seconds(tmp_path: Path, bundle: AgentBundle,
                                                             launchd: str) -> None:
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    if launchd == "real":
        shell = ShellWith(FINDER_PATH, home)  # the real /bin/launchctl, as the app from Finder finds it
        expected = SUPERVISOR_LAUNCHD if _gui_domain() else SUPERVISOR_OWN
    else:
        fakebin, state = tmp_path / "fakebin", tmp_path / "launchd"
        fakebin.mkdir()
        state.mkdir()
        (tmp_path / "keeper.py").write_text(KEEPER)
        fake = fakebin / "launchctl"
        fake.write_text(KEEPING_LAUNCHCTL.format(python=sys.executable, state=str(state),
                                                 keeper=str(tmp_path / "keeper.py")))
        fake.chmod(0o755)
        shell = ShellWith(f"{fakebin}:/usr/bin:/bin", home)
        expected = SUPERVISOR_LAUNCHD
    run_dir = agent_socket_dir(tmp_path / "run")  # a Mac's temp folders are too deep for a socket address
    layout = AgentLayout(install_dir=str(tmp_path / "agent"), state_dir=str(run_dir))
    installer = AgentInstaller(shell, bundle, layout, ServeOptions(workroom="mac", heartbeat=False),
                               python=(sys.executable,))
    bundle_path = str(tmp_path / "agent" / "wr-agent.pyz")
    report = None
    try:
        report = installer.ensure()
        assert report.supervisor == expected, report
        first = _wait("the agent", 10, lambda: _agents(bundle_path))
        assert len(first) == 1, first
        old = first.pop()
        killed = time.monotonic()
        os.kill(old, signal.SIGKILL)
        _wait("a new agent", 10, lambda: _agents(bundle_path) - {old})
        restarted = time.monotonic() - killed
        _wait("the new agent to answer", 10, lambda: _answers(report.socket_path))
        print(f"\n[launchd {launchd}, {report.supervisor}] agent running again {restarted:.2f} s after kill -9")
        assert restarted <= RESTART_WITHIN, f"restarted after {restarted:.2f} s"
    finally:
        label = launchd_label(report.socket_path if report else layout.socket_path)
        shell.run(f"launchctl bootout gui/$(id -u)/{label}", timeout=30)
        for pid in processes_naming(bundle_path):  # the own supervisor first: it would start another
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_uninstall_boots_the_launchagent_out_and_removes_its_plist(tmp_path: Path, bundle: AgentBundle) -> None:
    """Removing a host with "uninstall": `launchctl bootout` for the agent's label, then the agent (here the fake
    launchd's child, which a real launchd would stop itself) by its lock's pid, and the plist, bundle and state
    files removed."""
    shell, record, layout = _setup(tmp_path, fail_bootstrap=False)
    installer = AgentInstaller(shell, bundle, layout, ServeOptions(workroom="mac", heartbeat=False),
                               python=(sys.executable,))
    try:
        report = installer.ensure()
        label = launchd_label(report.socket_path)
        plist_path = shell.home / "Library" / "LaunchAgents" / f"{label}.plist"
        assert plist_path.exists()
        gone = installer.uninstall()
        calls = [json.loads(line) for line in record.read_text().splitlines()]
        assert calls[-1] == ["bootout", f"gui/{os.getuid()}/{label}"]
        assert "launchd LaunchAgent" in gone.stopped and not plist_path.exists()
        assert not Path(report.bundle_path).exists() and not Path(report.socket_path + ".lock").exists()
        out = subprocess.run(["pgrep", "-f", report.bundle_path], capture_output=True, text=True)
        assert not out.stdout.split(), "the agent still runs"
    finally:
        _kill_agents(str(tmp_path / "agent" / "wr-agent.pyz"))
