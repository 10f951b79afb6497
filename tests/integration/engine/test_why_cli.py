"""`workroom why` and `workroom exclusions` against the real agent on the real sshd: a process named like a
compiler runs on the host, the CLI says the box was awake compiling; marked "never work", it no longer counts.
A job waiting on a query is told with the connection's peer."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from engine_helpers import trust_sshd

pytestmark = [pytest.mark.integration, pytest.mark.slow]
WORKROOM = [sys.executable, "-m", "workroom.cli"]


def _cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([*WORKROOM, *args], capture_output=True, text=True, timeout=90)
    if check:
        assert done.returncode == 0, done.stderr
    return done


def _burner(sshd) -> subprocess.Popen[bytes]:  # type: ignore[no-untyped-def]
    """A shell busy-looping under the name `cc1` (its comm is the file's name), as the host's user; the copy
    lives in that user's home, so the test does not depend on where the checkout or tmp live."""
    where: Path = sshd.home / "bin"
    where.mkdir(mode=0o755, exist_ok=True)
    cc1 = where / "cc1"
    shutil.copy("/bin/sh", cc1)
    os.chmod(cc1, 0o755)
    os.chown(where, sshd.uid, -1)
    os.chown(cc1, sshd.uid, -1)
    return subprocess.Popen(["runuser", "-u", sshd.user, "--", str(cc1), "-c", "while :; do :; done"])


def _remote_reasons(sshd) -> list[str]:  # type: ignore[no-untyped-def]
    bundle = sshd.home / ".local/share/wr-agent/wr-agent.pyz"
    sock = sshd.home / ".local/state/wr-agent/agent.sock"
    out = subprocess.run(["runuser", "-u", sshd.user, "--", "python3", str(bundle), "status", "--socket", str(sock)],
                         capture_output=True, text=True, timeout=30, check=True)
    return list(json.loads(out.stdout)["busy_reasons"])


def _stop(proc: subprocess.Popen[bytes]) -> None:
    subprocess.run(["pkill", "-KILL", "-P", str(proc.pid)], check=False)
    proc.kill()
    proc.wait(10)


def test_why_names_the_compile_and_an_exclusion_stops_it_counting(sshd, app_home) -> None:  # type: ignore[no-untyped-def]
    trust_sshd(app_home, sshd)
    _cli("hosts", "add", "box1", "--provider", "ssh", "--host", sshd.host, "--port", str(sshd.port), "--user",
         sshd.user, "--identity", str(sshd.key_path), "--candidates", "user")
    _cli("connect", "box1")
    burner = _burner(sshd)
    try:
        time.sleep(8)
    finally:
        _stop(burner)

    data = json.loads(_cli("why", "box1", "--json").stdout)
    compiling = dict((a["activity"], a["seconds"]) for a in data["activities"]).get("compiling", 0)
    assert 4 <= compiling <= 30, data["activities"]
    assert data["headline"].startswith("awake ") and "compiling" in data["headline"]
    assert data["segments"][-1]["end"] == pytest.approx(time.time(), abs=30)
    assert data["cost"] is None and data["problem"] is None

    assert _cli("hosts", "price", "box1", "0.5").returncode == 0
    text = _cli("why", "box1", "--since", "2h").stdout
    assert "box1: awake" in text and "compiling" in text and "in the last 2 h" in text
    assert "cost ≈" in text and "at 0.5 an hour" in text
    bad = _cli("why", "box1", "--since", "yesterday", check=False)
    assert bad.returncode == 2 and "not a duration" in bad.stderr and "Traceback" not in bad.stderr

    listed = json.loads(_cli("exclusions", "box1", "--add", "cc1", "--add", "watch", "--json").stdout)
    assert listed["never_work"] == ["cc1", "watch"]
    saved = sshd.home / ".local/state/wr-agent/agent.sock.exclusions"
    assert json.loads(saved.read_text())["names"] == ["cc1", "watch"] and saved.stat().st_mode & 0o777 == 0o600
    burner = _burner(sshd)
    try:
        time.sleep(4)
        reasons = _remote_reasons(sshd)
    finally:
        _stop(burner)
    assert not any(r.startswith("cpu: cc1") for r in reasons), reasons
    removed = _cli("exclusions", "box1", "--remove", "cc1").stdout
    assert "never work: watch" in removed


# A client that sends one query and waits for the answer that never comes (no CPU, no timer sleep).
QUERY_WAIT = ("import socket, sys\n"
              "c = socket.create_connection(('127.0.0.1', int(sys.argv[1]))); c.sendall(b'SELECT slow()\\n')\n"
              "c.recv(64)\n")


def test_why_names_the_peer_a_job_waited_on(sshd, app_home) -> None:  # type: ignore[no-untyped-def]
    """The server end is the test's own (not the host user's, so not a candidate): only the client's wait counts."""
    trust_sshd(app_home, sshd)
    _cli("hosts", "add", "box1", "--provider", "ssh", "--host", sshd.host, "--port", str(sshd.port), "--user",
         sshd.user, "--identity", str(sshd.key_path), "--candidates", "user")
    _cli("connect", "box1")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    client = subprocess.Popen(["runuser", "-u", sshd.user, "--", "python3", "-c", QUERY_WAIT, str(port)])
    try:
        time.sleep(9)  # the wait counts after 2 s
    finally:
        _stop(client)
        server.close()

    words = f"waiting on the network (python3 → 127.0.0.1:{port})"
    data = json.loads(_cli("why", "box1", "--json").stdout)
    waited = dict((a["activity"], a["seconds"]) for a in data["activities"]).get(words, 0)
    assert 3 <= waited <= 30, data["activities"]
    tcp = [g for g in data["segments"] if g["class"] == "tcp" and g["kind"] == "busy"]
    assert tcp and all((g["peer"], g["port"], g["local_port"]) == ("127.0.0.1", port, None) for g in tcp), tcp
    text = _cli("why", "box1").stdout
    assert words in text.splitlines()[0], text
