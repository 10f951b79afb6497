"""`workroom status` (no app) prints each host's line as it is known: a host that accepts TCP and never speaks SSH
does not hold the others' lines; it comes last, on its own deadline, saying why. Ctrl-C meanwhile ends the command
with exit 130 and prints nothing for the host it never reached. The real CLI as its own process, a real sshd
with the real agent, and a loopback server that takes connections and says nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from engine_helpers import ssh_host, trust_sshd
from fixtures.procs import stop_process
from fixtures.quiet_server import QuietServer
from workroom.core.hosts import Host, HostsFile
from workroom.paths import app_paths
from workroom.storage import save_hosts

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WORKROOM_", "XDG_"))}
    env.update(WORKROOM_HOME=str(home), WORKROOM_LOGIN_ENV="0", PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    return env


def _start(env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "workroom.cli", "status", "--live"], env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            bufsize=1,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _hosts(home: Path, sshd, mute: QuietServer) -> dict[str, str]:  # type: ignore[no-untyped-def]
    env = _env(home)
    paths = app_paths(env).ensure()
    trust_sshd(paths, sshd)
    save_hosts(paths, HostsFile(hosts=(Host(name="mute", provider="ssh", address="127.0.0.1", port=mute.port,
                                            user="nobody"), ssh_host(sshd, "live"))))
    first = subprocess.run([sys.executable, "-m", "workroom.cli", "connect", "live"], env=env, capture_output=True,
                           text=True, timeout=120)  # the agent pushed once, so the timed command only reconnects
    assert first.returncode == 0, first.stderr
    return env


def test_a_mute_host_does_not_hold_the_others_line_and_comes_last_saying_why(tmp_path: Path, sshd) -> None:  # type: ignore[no-untyped-def]
    mute = QuietServer()
    try:
        env = _hosts(tmp_path / "home", sshd, mute)
        started = time.monotonic()
        cli = _start(env)
        lines: list[tuple[float, str]] = []
        try:
            assert cli.stdout is not None
            for line in cli.stdout:
                lines.append((time.monotonic() - started, line.rstrip("\n")))
            assert cli.wait(timeout=60) == 0, cli.stderr.read() if cli.stderr else ""
        finally:
            stop_process(cli, 10)
    finally:
        mute.stop()
    assert [text.split()[0] for _, text in lines] == ["live", "mute"], lines
    (live_at, live), (mute_at, said) = lines
    assert live_at < 8 < mute_at, lines  # the SSH handshake's deadline (10 s) is the mute host's alone
    assert "Idle" in live or "Busy" in live or "Checking…" in live  # its agent just started: its first look
    assert "took the connection, but no SSH greeting came" in said and "No existing session" not in said, said


def test_ctrl_c_exits_130_and_prints_nothing_for_a_host_never_reached(tmp_path: Path, sshd) -> None:  # type: ignore[no-untyped-def]
    mute = QuietServer()
    try:
        env = _hosts(tmp_path / "home", sshd, mute)
        cli = _start(env)
        try:
            assert cli.stdout is not None
            first = cli.stdout.readline()
            assert first.startswith("live "), first
            cli.send_signal(signal.SIGINT)
            out, err = cli.communicate(timeout=30)
        finally:
            stop_process(cli, 10)
    finally:
        mute.stop()
    assert cli.returncode == 130, (cli.returncode, out, err)
    assert out == "" and "Traceback" not in err and "mute" not in err, (out, err)
