"""A relay that dies on the host (killed, as a crash or an OOM kill would) is reported in plain words: the
stream's own title, sentence and hint reach the session and the `workroom` command's output, with no
Python exception name in them. Real sshd, real agent, real relay."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time

import pytest
from engine_helpers import ssh_host, trust_sshd
from workroom.cli.words import snapshot_line as _snapshot_line
from workroom.core.connection import ConnectionState
from workroom.core.exception_names import shows_exception_name
from workroom.core.host_snapshot import HostSnapshot
from workroom.sessions.engine import Engine

pytestmark = pytest.mark.integration


def _relay_pids(uid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-u", str(uid), "-x", "wr-agent-relay"], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


def test_a_killed_relay_is_reported_in_the_streams_own_words(sshd, app_home, agent_bundle) -> None:  # type: ignore[no-untyped-def]
    trust_sshd(app_home, sshd)

    async def go() -> HostSnapshot:
        engine = Engine(app_home, agent_bundle, auto_reconnect=False)
        engine.add_host(ssh_host(sshd))
        session = engine.session("box1")
        try:
            await session.connect(timeout=60)
            relays = _relay_pids(sshd.uid)
            assert relays, "no relay process found on the host"
            for pid in relays:
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 15
            while session.connection.state is not ConnectionState.LOST and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return session.snapshot()
        finally:
            await engine.close()

    snap = asyncio.run(go())
    assert snap.connection.state is ConnectionState.LOST
    error = snap.connection.error
    assert error is not None
    # The stream's own words and hint (ssh_connection.ExecStream.end_error), not a wrapped exception.
    assert error.title == "Connection to the host lost", error
    assert "ended without an exit status" in error.message and "`" not in error.message  # no command text
    assert error.hint == "The host may have restarted or dropped the connection; reconnect."
    assert not shows_exception_name(error.message), error.message
    assert ".." not in error.message
    line = _snapshot_line(snap)  # what `workroom status` and `workroom connect --watch` print
    assert "ended without an exit status" in line
    assert not shows_exception_name(line), line
