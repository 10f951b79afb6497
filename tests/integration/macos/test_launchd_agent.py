"""The agent under launchd: the LaunchAgent plist and the `launchctl` commands, checked with plistlib.

launchctl exists only on macOS, so a fake one stands in (the only fake here): it records its arguments
and, for `bootstrap`, starts the plist's ProgramArguments in a new session the way launchd would. The
shell, the installer and the agent are real (docs/macos.md).
"""

from __future__ import annotations

import json
import os
import plistlib
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from workroom.agent_bundle import AgentBundle, locate_agent_bundle
from workroom.core.connection import ConnectionInfo
from workroom.core.hosts import Host
from workroom.remote.agent_install import (
    SUPERVISOR_LAUNCHD,
    SUPERVISOR_OWN,
    AgentInstaller,
    AgentLayout,
    ServeOptions,
    launchd_label,
)
from workroom.remote.host_shell import ExecResult, LocalShell
from workroom.sessions.host_session import HostSnapshot
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
