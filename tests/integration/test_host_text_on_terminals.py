"""What a host says reaches a terminal as plain text. Before authentication anyone who answers on a host's
address can send anything as its SSH banner: a real server on loopback sends escape sequences that would
retitle and clear the terminal, and `workroom connect` and `workroom status` print only plain text."""

from __future__ import annotations

import re
import socket
import threading
from pathlib import Path

import pytest
from fixtures.procs import kill_local_agents
from integration.test_cli_errors import workroom

pytestmark = pytest.mark.integration

BANNER = b"SSH-\x1b]0;TITLE\x07\x1b[2J\x1b[31m\xe2\x80\xae-evil\r\n"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def banner_server() -> tuple[socket.socket, int]:
    listen = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        while True:
            try:
                conn, _ = listen.accept()
            except OSError:
                return
            try:
                conn.sendall(BANNER)
                conn.recv(1024)
            except OSError:
                pass
            finally:
                conn.close()

    threading.Thread(target=run, daemon=True).start()
    return listen, listen.getsockname()[1]


def test_an_ssh_banner_with_escape_sequences_reaches_the_terminal_plain(tmp_path: Path) -> None:
    listen, port = banner_server()
    try:
        added = workroom(tmp_path, "hosts", "add", "evil", "--provider", "ssh", "--host", "127.0.0.1",
                         "--port", str(port), "--user", "me")
        assert added.returncode == 0, added.stderr
        connect = workroom(tmp_path, "connect", "evil", "--timeout", "10")
        status = workroom(tmp_path, "status")
    finally:
        listen.close()
        kill_local_agents(tmp_path / "home" / "state")  # `status` also reached this computer's agent
    assert connect.returncode != 0
    assert "handshake" in connect.stderr.lower() or "ssh" in connect.stderr.lower(), connect.stderr
    for out in (connect.stdout, connect.stderr, status.stdout, status.stderr):
        assert not CONTROL.search(out), repr(out)
    assert "evil" in status.stdout
