"""A server that takes the connection and then stalls is said so, with how long it was waited on, never in
paramiko's own words ("Error reading SSH protocol banner", "No existing session"): one that says nothing, one
that closes at once, one that greets as an SSH server and goes quiet. Real paramiko against real loopback
servers; the connect's own deadline is short so the test is."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures.quiet_server import QuietServer
from workroom.remote.host_keys import KnownHosts
from workroom.remote.ssh_config import SshTarget
from workroom.remote.ssh_connection import SshConnection
from workroom.remote.ssh_errors import HostUnreachable

pytestmark = pytest.mark.integration

DEADLINE = 2.0


@pytest.fixture
def known(tmp_path: Path) -> Iterator[KnownHosts]:
    yield KnownHosts(tmp_path / "known_hosts", user_file=None)


@pytest.mark.parametrize(("greeting", "close", "title", "words"), [
    (None, False, "Not an SSH server", "took the connection, but no SSH greeting came"),
    (None, True, "Not an SSH server", "took the connection, but no SSH greeting came"),
    (b"SSH-2.0-OpenSSH_9.2\r\n", False, "Host not answering",
     "greeted as an SSH server (SSH-2.0-OpenSSH_9.2) but did not go on with the handshake within 2 s"),
])
def test_a_stalled_handshake_is_said_in_words(known: KnownHosts, greeting: bytes | None, close: bool, title: str,
                                              words: str) -> None:
    server = QuietServer(greeting, close=close)
    try:
        with pytest.raises(HostUnreachable) as refused:
            SshConnection.connect(SshTarget(alias="b", hostname="127.0.0.1", port=server.port, user="u"), known,
                                  timeout=DEADLINE, use_agent=False)
    finally:
        server.stop()
    error = refused.value
    assert error.title == title and words in error.message, error.message
    assert "No existing session" not in str(error) and "protocol banner" not in str(error)
