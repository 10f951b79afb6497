"""This computer as a host on a Mac-like PATH: none of the Linux-only tools the agent start once needed.

A Mac has no setsid, flock, ionice, taskset, unshare, nsenter, runuser, prlimit, chrt or systemctl. The
stand-in is this computer with a PATH folder of links to everything else in /usr/bin:/bin:/usr/sbin:/sbin;
the real CLI, real shell and real agent run on it. On a Mac the same body runs for real (marked mac): Finder's
PATH itself and the real /usr/bin tools, the agent under launchd (docs/macos.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.procs import kill_local_agents

pytestmark = pytest.mark.integration

FINDER_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
LINUX_ONLY = {"setsid", "flock", "ionice", "taskset", "unshare", "nsenter", "runuser", "prlimit", "chrt",
              "systemctl"}


def mac_like_path(folder: Path) -> str:
    """A folder of links to every tool in the system PATH except the Linux-only ones (first found wins)."""
    folder.mkdir()
    for src in ("/usr/bin", "/bin", "/usr/sbin", "/sbin"):
        if not os.path.isdir(src):
            continue
        for name in os.listdir(src):
            target = folder / name
            if name in LINUX_ONLY or target.exists() or target.is_symlink():
                continue
            target.symlink_to(os.path.join(src, name))
    return str(folder)


@pytest.mark.parametrize("mac", ["stand-in", pytest.param("real", marks=pytest.mark.mac)])
def test_this_computer_comes_up_without_linux_only_tools(tmp_path: Path, mac: str) -> None:
    path = FINDER_PATH if mac == "real" else mac_like_path(tmp_path / "bin")
    for name in LINUX_ONLY:
        assert shutil.which(name, path=path) is None, name
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORKROOM_", "XDG_"))}
    env.update(PATH=path, WORKROOM_HOME=str(home), PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    if mac == "real":  # the LaunchAgent's plist goes to this test's home, not the runner's
        (tmp_path / "user").mkdir()
        env["HOME"] = str(tmp_path / "user")
    try:
        listed = subprocess.run([sys.executable, "-m", "workroom.cli", "hosts", "list", "--json"], env=env,
                                capture_output=True, text=True, timeout=90)
        assert listed.returncode == 0, listed.stdout + listed.stderr
        local = [h["name"] for h in json.loads(listed.stdout) if h["provider"] == "local"]
        assert local, listed.stdout
        # The agent of this computer is started by the app or by an explicit connect, never by a look.
        out = subprocess.run([sys.executable, "-m", "workroom.cli", "connect", local[0], "--json"], env=env,
                             capture_output=True, text=True, timeout=90)
        assert out.returncode == 0, out.stdout + out.stderr
        snap = json.loads(out.stdout)
        assert snap["status"] is not None, snap
        assert snap["status"]["agent"]["build"], snap
        assert snap["left_running"]["this_computer_agent"] > 0, snap  # named in its output
    finally:
        kill_local_agents(home / "state")
