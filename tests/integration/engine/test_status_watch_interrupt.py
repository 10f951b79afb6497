"""Ctrl-C ends `workroom status --watch` at once, even while a host's connect is stuck in the network: exit 130 (the
shell's code for a command ended by SIGINT), and nothing printed for the host it never reached.

The real CLI as its own process; its one host is an SSH server on loopback that accepts the TCP connection and
then says nothing (a box whose sshd hangs, a proxy that never answers), so the host's worker thread sits in the
SSH handshake until its timeout. Ctrl-C used to end the command only when that wait ran out (the interpreter
joined the worker thread on the way out: seen in CI as a live view taking more than 30 s to exit).

SIGINT gets its default disposition in the child: a background job of a non-interactive shell (CI's tiers run
with `&`) starts with it ignored, and the child would inherit that.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fixtures.procs import stop_process
from fixtures.quiet_server import QuietServer
from workroom.core.hosts import Host, HostsFile
from workroom.paths import app_paths
from workroom.storage import save_hosts

pytestmark = pytest.mark.integration

EXIT_SECONDS = 2.0


def test_ctrl_c_ends_the_live_view_while_a_connect_is_stuck(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORKROOM_", "XDG_"))}
    env.update(WORKROOM_HOME=str(home), WORKROOM_LOGIN_ENV="0",
               PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    server = QuietServer()
    save_hosts(app_paths(env), HostsFile(hosts=(Host(name="mute", provider="ssh", address="127.0.0.1",
                                                     port=server.port, user="nobody"),)))
    cli = subprocess.Popen([sys.executable, "-m", "workroom.cli", "status", "--watch"], env=env,
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 30
        while not server.accepted:  # the host's worker is now waiting in the SSH handshake
            assert cli.poll() is None, cli.communicate()
            assert time.monotonic() < deadline, "the CLI never connected to the host"
            time.sleep(0.05)
        time.sleep(0.5)
        cli.send_signal(signal.SIGINT)
        interrupted = time.monotonic()
        try:
            out, err = cli.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            cli.kill()
            out, err = cli.communicate(timeout=10)
        took = time.monotonic() - interrupted
        print(f"status --watch ended {took:.2f} s after Ctrl-C")
    finally:
        stop_process(cli, 10)
        server.stop()
    assert took < EXIT_SECONDS, f"Ctrl-C took {took:.1f} s to end the live view"
    assert cli.returncode == 130, (cli.returncode, out, err)
    assert out == "" and "Traceback" not in err, (out, err)
