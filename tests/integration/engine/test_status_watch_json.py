"""`workroom status --json --watch` is a JSON Lines stream: the first line every host, then one object per change.

The real CLI on the embedded default (this computer as a host, its real agent); a CPU job started the way a
user's would be (not a child of the CLI, which the local agent leaves out) makes a change to print.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.procs import kill_local_agents, stop_process

pytestmark = [pytest.mark.integration,
              pytest.mark.linux(reason="a CPU job turns BUSY through the agent's /proc sampler")]


def test_status_watch_with_json_prints_only_json(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORKROOM_", "XDG_"))}
    env.update(WORKROOM_HOME=str(home), PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    # This computer's agent is started by an explicit connect (docs/cli.md, "Nothing left behind"); the live view
    # then reads it.
    listed = subprocess.run([sys.executable, "-m", "workroom.cli", "hosts", "list", "--json"], env=env,
                            capture_output=True, text=True, timeout=60, check=True)
    local = next(h["name"] for h in json.loads(listed.stdout) if h["provider"] == "local")
    subprocess.run([sys.executable, "-m", "workroom.cli", "connect", local], env=env, capture_output=True,
                   timeout=90, check=True)
    cli = subprocess.Popen([sys.executable, "-m", "workroom.cli", "status", "--json", "--watch"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    burner = None
    lines: list[str] = []
    try:
        assert cli.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(cli.stdout, selectors.EVENT_READ)
        deadline = time.monotonic() + 90
        while len(lines) < 3 and time.monotonic() < deadline:
            if not sel.select(timeout=1.0):
                continue
            line = cli.stdout.readline()
            if not line:
                break
            lines.append(line)
            if len(lines) == 1:  # every host, connected: now make a change
                started = subprocess.run(["sh", "-c", f"'{sys.executable}' -c 'while True: pass' >/dev/null 2>&1 "
                                          "& echo $!"], capture_output=True, text=True, check=True, timeout=10)
                burner = int(started.stdout.strip())
        assert len(lines) >= 2, f"no change printed: {lines!r}"
        first = json.loads(lines[0])
        assert isinstance(first, list) and any(s["provider"] == "local" for s in first), first
        for line in lines[1:]:
            change = json.loads(line)  # not a plain-text line
            assert isinstance(change, dict) and change["name"], change
    finally:
        if burner is not None:
            os.kill(burner, signal.SIGKILL)
        stop_process(cli, 10)
        kill_local_agents(home / "state")
