"""A frozen peer is noticed within 10 s and everything on the connection is torn down
(docs/architecture.md, "Remote: SSH").

The peer is frozen for real: the sshd processes serving our one connection get SIGSTOP (found by the
connection's socket in /proc), so TCP stays up but nothing answers, as with a box that froze.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from integration.remote.stream_reader import StreamReader
from workroom.remote.host_keys import KnownHosts
from workroom.remote.ssh_config import SshTarget
from workroom.remote.ssh_connection import ConnectionLost, SshConnection

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _socket_inode(local_port: int, server_port: int) -> str:
    """Inode of the server side of our TCP connection (127.0.0.1:server_port <- 127.0.0.1:local_port)."""
    want_local, want_remote = f"0100007F:{server_port:04X}", f"0100007F:{local_port:04X}"
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[1] == want_local and fields[2] == want_remote:
            return fields[9]
    raise AssertionError("server side of our connection not found in /proc/net/tcp")


def _pids_holding(inode: str) -> list[int]:
    target = f"socket:[{inode}]"
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except (PermissionError, FileNotFoundError):
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{entry}/fd/{fd}") == target:
                    pids.append(int(entry))
                    break
            except OSError:
                continue
    return pids


@pytest.fixture
def frozen(sshd):
    """freeze(conn) SIGSTOPs the sshd processes serving conn; they are resumed and killed by PID after."""
    stopped: list[int] = []

    def freeze(conn: SshConnection) -> list[int]:
        local_port = conn._client.get_transport().sock.getsockname()[1]
        pids = _pids_holding(_socket_inode(local_port, sshd.port))
        assert pids and sshd.pid not in pids, pids
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)
        return pids

    yield freeze
    for pid in stopped:
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def _connect(sshd, tmp_path: Path, **kwargs) -> SshConnection:
    app_file = tmp_path / "known_hosts"
    app_file.write_text(sshd.host_key_line + "\n")
    target = SshTarget(alias=sshd.host, hostname=sshd.host, port=sshd.port, user=sshd.user,
                       identity_files=(sshd.key_path,))
    return SshConnection.connect(target, KnownHosts(app_file, user_file=None), timeout=5, use_agent=False,
                                 **kwargs)


def test_keepalive_notices_a_frozen_peer_and_tears_everything_down(sshd, tmp_path, frozen) -> None:
    lost: list[ConnectionLost] = []
    lost_event = threading.Event()

    def on_lost(error: ConnectionLost) -> None:
        lost.append(error)
        lost_event.set()

    conn = _connect(sshd, tmp_path, on_lost=on_lost)
    stream = conn.open_exec_channel("cat")
    reader = StreamReader(stream).start()
    ends = reader.ends
    assert conn.check_alive(timeout=3) < 3
    stop_pinging = threading.Event()

    def ping() -> None:  # what the session's liveness check does: a keepalive with a deadline, repeated
        while not stop_pinging.wait(1.0):
            try:
                conn.check_alive(timeout=3.0)
            except ConnectionLost:
                return

    threading.Thread(target=ping, daemon=True).start()

    frozen(conn)
    started = time.monotonic()
    assert lost_event.wait(10), "a frozen peer must be noticed within 10 s"
    assert time.monotonic() - started < 10
    assert reader.join(2)
    time.sleep(0.2)
    assert len(lost) == 1 and "did not answer" in lost[0].message
    assert len(ends) == 1 and isinstance(ends[0], ConnectionLost)
    assert not conn.is_open
    with pytest.raises(ConnectionLost):
        conn.exec("true", timeout=2)
    stop_pinging.set()


def test_exec_on_a_frozen_peer_fails_within_its_timeout(sshd, tmp_path, frozen) -> None:
    conn = _connect(sshd, tmp_path)
    assert conn.exec("echo warm").stdout == b"warm\n"
    frozen(conn)
    started = time.monotonic()
    with pytest.raises(ConnectionLost):
        conn.exec("echo never", timeout=3)
    assert time.monotonic() - started < 10
    assert not conn.is_open


def test_an_idle_connection_sends_nothing(sshd, tmp_path) -> None:
    """Quiet mode relies on this: a connection nobody uses puts nothing on the wire (counters stay put)."""
    conn = _connect(sshd, tmp_path)
    try:
        assert conn.check_alive(timeout=3) < 3
        time.sleep(0.3)
        packetizer = conn._client.get_transport().packetizer
        before = packetizer._Packetizer__sent_packets
        time.sleep(1.0)
        assert packetizer._Packetizer__sent_packets == before
        assert conn.is_open
    finally:
        conn.close()
