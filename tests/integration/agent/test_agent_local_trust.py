"""The app's side of the local socket: it trusts a hello only from a process of its own user, in a folder
only its user can reach. The impostor here is real: a process running as `nobody` that listens on a
socket in our folder (as if it had won a race for it) and greets with our build hash."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import tempfile

import pytest
from agentrun import as_nobody, python_for_nobody, wait_until
from workroom.remote.agent_link import UntrustedAgentError, open_unix_link
from wr_agent import bundle

pytestmark = [pytest.mark.integration, pytest.mark.root]

IMPOSTOR = """
import json, socket, sys
listener = socket.socket(fileno=int(sys.argv[1]))
listener.listen(4)
while True:
    conn, _ = listener.accept()
    conn.sendall(json.dumps({"hello": "wr-agent", "protocol": 1, "version": "0.1.0", "build": %r}).encode() + b"\\n")
    conn.close()
"""


def test_a_hello_from_another_users_process_is_not_trusted() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to run the impostor as another user")
    py = python_for_nobody()
    if py is None:
        pytest.skip("no Python that nobody can run")
    folder = tempfile.mkdtemp(prefix=f"wr-trust-{os.getpid()}-")  # ours, 0700
    path = os.path.join(folder, "agent.sock")
    bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    bound.bind(path)
    os.chmod(path, 0o666)
    # listen() is called by the impostor: SO_PEERCRED reports the uid of the process that listens.
    code = IMPOSTOR % bundle.build_hash()
    impostor = subprocess.Popen(as_nobody([py, "-c", code, str(bound.fileno())]), pass_fds=(bound.fileno(),),
                                stdin=subprocess.DEVNULL, cwd="/")
    try:
        wait_until(lambda: _greets(path), 10, 0.05, "the impostor listening")

        async def connect() -> None:
            await open_unix_link(path, None)

        with pytest.raises(UntrustedAgentError, match="uid 65534"):
            asyncio.run(connect())
    finally:
        impostor.kill()
        impostor.wait(timeout=10)
        bound.close()
        shutil.rmtree(folder, ignore_errors=True)


def _greets(path: str) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1)
    try:
        s.connect(path)
        return s.recv(100).startswith(b'{"hello"')
    except OSError:
        return False
    finally:
        s.close()


def test_a_socket_in_a_folder_open_to_others_is_not_used(tmp_path) -> None:  # type: ignore[no-untyped-def]
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o755)

    async def connect() -> None:
        await open_unix_link(str(folder / "agent.sock"), None)

    with pytest.raises(UntrustedAgentError, match="open to other users"):
        asyncio.run(connect())
