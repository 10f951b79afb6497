"""EHOSTUNREACH at once to a local-network address names macOS Local Network privacy, not "unreachable".

No Mac here: a fresh network namespace (root) with an `unreachable` route to a private address fails the
connect with EHOSTUNREACH at once, as macOS 15+ does for an app not allowed on the local network. The app's
own dial runs there with the system name set to Darwin (the only stand-in); on Linux it stays plain.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.root]
ROOT = Path(__file__).resolve().parents[3]

DIAL = """
import json, sys
from workroom.platform import local_network
from workroom.remote.ssh_config import SshTarget
from workroom.remote.ssh_errors import HostUnreachable, dial
local_network._system = lambda: sys.argv[2]
try:
    dial(SshTarget(alias="box", hostname=sys.argv[1], port=22), timeout=5)
except HostUnreachable as e:
    print(json.dumps([e.title, e.message, e.hint]))
"""


def _dial_in_netns(address: str, system: str) -> list[str]:
    script = (f"ip link set lo up && ip route add unreachable {address} && "
              f"exec {sys.executable} -c \"$0\" {address} {system}")
    out = subprocess.run(["unshare", "--net", "sh", "-c", script, DIAL], capture_output=True, text=True,
                         timeout=60, env=dict(os.environ, PYTHONPATH=str(ROOT / "app")))
    assert out.returncode == 0, out.stderr
    return list(json.loads(out.stdout))


@pytest.fixture(autouse=True)
def _needs_root() -> None:
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.skip("needs root, unshare and ip to make a network namespace")


def test_private_address_blocked_at_once_names_local_network_privacy() -> None:
    title, message, hint = _dial_in_netns("192.168.77.7", "Darwin")
    assert title == "Local network access blocked"
    assert "macOS may be blocking local network access for Workroom" in message
    assert "System Settings › Privacy & Security › Local Network" in hint


def test_link_local_counts_too_and_linux_stays_plain() -> None:
    assert _dial_in_netns("169.254.10.20", "Darwin")[0] == "Local network access blocked"
    assert _dial_in_netns("192.168.77.7", "Linux")[0] == "Host unreachable"
    assert _dial_in_netns("1.1.1.1", "Darwin")[0] == "Host unreachable"  # public: not privacy (no route out)
