"""`wr-agent serve --supervise --detach` on a host without setsid(1): it returns at once, and the agent it
leaves behind is in its own session (no controlling terminal, outlives the SSH session) and serves.
Real agent processes; the PATH holds no setsid (docs/macos.md)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
AGENT_SRC = Path(__file__).resolve().parents[3] / "agent_bundle"


def _hello(sock: Path) -> dict[str, object]:
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(2)
        s.connect(str(sock))
        return dict(json.loads(s.makefile("rb").readline()))


def test_detach_returns_at_once_and_leaves_a_session_leader_serving(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("sh", "ps"):  # no setsid here
        (bindir / tool).symlink_to(f"/bin/{tool}" if os.path.exists(f"/bin/{tool}") else f"/usr/bin/{tool}")
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    sock, log = run / "agent.sock", run / "agent.sock.log"
    env = dict(os.environ, PYTHONPATH=str(AGENT_SRC), PATH=str(bindir))
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "wr_agent", "serve", "--socket", str(sock), "--no-heartbeat",
                          "--supervise", "--log", str(log), "--detach"],
                         env=env, capture_output=True, text=True, timeout=30, start_new_session=False)
    assert out.returncode == 0, out.stderr
    assert time.monotonic() - started < 10
    supervisor = int(out.stdout.strip())
    try:
        assert os.getsid(supervisor) == supervisor != os.getsid(0)  # its own session, not ours
        deadline = time.monotonic() + 15
        hello: dict[str, object] = {}
        while time.monotonic() < deadline and not hello:
            try:
                hello = _hello(sock)
            except OSError:
                time.sleep(0.05)
        assert hello.get("build"), log.read_text() if log.exists() else "no log"
        assert "serving" in log.read_text()
    finally:
        try:
            os.kill(supervisor, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(supervisor, 0)
                with open(f"/proc/{supervisor}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                        break
                time.sleep(0.05)
            except (ProcessLookupError, FileNotFoundError):
                break
