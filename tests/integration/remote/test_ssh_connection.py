"""SshConnection against the real OpenSSH server fixture: host keys, login, exec, sftp, streams."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest
from fixtures.fifo import within
from integration.remote.stream_reader import StreamReader
from workroom.core.questions import SecretKind, SecretRequest
from workroom.remote.host_keys import KnownHosts
from workroom.remote.ssh_config import SshTarget, resolve_target
from workroom.remote.ssh_connection import (
    AuthFailed,
    CommandFailed,
    ConnectionLost,
    HostKeyChanged,
    HostKeyUnknown,
    HostUnreachable,
    SshConnection,
)
from workroom.remote.ssh_errors import QuickAckSocket, SshError, dial

pytestmark = pytest.mark.integration


def target_of(sshd, *, identity: Path | None = None) -> SshTarget:
    return SshTarget(alias=sshd.host, hostname=sshd.host, port=sshd.port, user=sshd.user,
                     identity_files=(identity or sshd.key_path,))


def trusted_known_hosts(tmp_path: Path, sshd) -> KnownHosts:
    app_file = tmp_path / "config" / "known_hosts"
    app_file.parent.mkdir()
    app_file.write_text(sshd.host_key_line + "\n")
    return KnownHosts(app_file, user_file=None)


def connect(sshd, known: KnownHosts, **kwargs) -> SshConnection:
    kwargs.setdefault("use_agent", False)
    kwargs.setdefault("timeout", 10.0)
    return SshConnection.connect(kwargs.pop("target", None) or target_of(sshd), known, **kwargs)


def keygen(path: Path, passphrase: str = "") -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "wr-test", "-f", str(path)],
                   check=True, capture_output=True, timeout=30)
    return path


def openssh_fingerprint(pub: Path) -> str:
    out = subprocess.run(["ssh-keygen", "-lf", str(pub)], check=True, capture_output=True, text=True,
                         timeout=30).stdout
    return out.split()[1]


@pytest.fixture
def authorized_extra(sshd):
    """Append public keys to the test user's authorized_keys for one test; restored afterwards."""
    auth = sshd.home / ".ssh" / "authorized_keys"
    original = auth.read_bytes()

    def add(pub: Path) -> None:
        with auth.open("ab") as handle:
            handle.write(pub.read_bytes())

    yield add
    auth.write_bytes(original)


def test_exec_returns_status_stdout_and_stderr(sshd, tmp_path) -> None:
    with connect(sshd, trusted_known_hosts(tmp_path, sshd)) as conn:
        assert conn.exec("echo out; echo err >&2; exit 3") == (3, b"out\n", b"err\n")
        assert conn.exec("cat", input=b"fed through stdin").stdout == b"fed through stdin"
        with pytest.raises(CommandFailed) as failed:
            conn.exec("echo nope >&2; exit 5", check=True)
        assert failed.value.exit_status == 5
        assert "nope" in failed.value.message
        assert conn.host_key.fingerprint == openssh_fingerprint(Path(f"{sshd.host_key_path}.pub"))


def test_unknown_host_key_is_a_question_then_trust_connects(sshd, tmp_path) -> None:
    known = KnownHosts(tmp_path / "known_hosts", user_file=None)
    with pytest.raises(HostKeyUnknown) as unknown:
        connect(sshd, known)
    question = unknown.value.question
    assert (question.host, question.port, question.key_type) == (sshd.host, sshd.port, "ssh-ed25519")
    assert question.fingerprint == openssh_fingerprint(Path(f"{sshd.host_key_path}.pub"))
    assert question.fingerprint in question.prompt()
    assert question.fingerprint in str(unknown.value)
    assert not (tmp_path / "known_hosts").exists(), "nothing may be recorded before the user says yes"

    known.trust_answer(question)
    assert (tmp_path / "known_hosts").read_text().split() == sshd.host_key_line.split()
    with connect(sshd, known) as conn:
        assert conn.exec("echo ok").stdout == b"ok\n"


def test_changed_host_key_is_refused_naming_both_fingerprints(sshd, tmp_path) -> None:
    other = keygen(tmp_path / "other_host_key")
    other_type, other_b64 = Path(f"{other}.pub").read_text().split()[:2]
    app_file = tmp_path / "known_hosts"
    app_file.write_text(f"[{sshd.host}]:{sshd.port} {other_type} {other_b64}\n")
    known = KnownHosts(app_file, user_file=None)

    with pytest.raises(HostKeyChanged) as changed:
        connect(sshd, known)
    expected = openssh_fingerprint(Path(f"{other}.pub"))
    presented = openssh_fingerprint(Path(f"{sshd.host_key_path}.pub"))
    assert changed.value.change.expected_fingerprints == (expected,)
    assert changed.value.change.presented_fingerprint == presented
    assert expected in changed.value.message and presented in changed.value.message
    assert changed.value.title == "Host key changed"


def test_users_known_hosts_is_read_hashed_and_never_written(sshd, tmp_path) -> None:
    user_file = tmp_path / "user_known_hosts"
    user_file.write_text(sshd.host_key_line + "\n")
    subprocess.run(["ssh-keygen", "-H", "-f", str(user_file)], check=True, capture_output=True, timeout=30)
    hashed = user_file.read_bytes()
    assert b"|1|" in hashed and sshd.host.encode() not in hashed
    known = KnownHosts(tmp_path / "app_known_hosts", user_file=user_file)
    with connect(sshd, known) as conn:
        assert conn.host_key.source == user_file
    assert user_file.read_bytes() == hashed
    assert not (tmp_path / "app_known_hosts").exists()


def test_wrong_key_is_auth_failed_with_a_clear_message(sshd, tmp_path) -> None:
    stranger = keygen(tmp_path / "stranger")
    with pytest.raises(AuthFailed) as failed:
        connect(sshd, trusted_known_hosts(tmp_path, sshd), target=target_of(sshd, identity=stranger))
    assert failed.value.title == "Login refused"
    assert str(stranger) in failed.value.message and sshd.user in failed.value.message
    assert "authorized_keys" in failed.value.hint


def test_passphrase_comes_from_the_callable_and_a_wrong_one_is_named(sshd, tmp_path, authorized_extra) -> None:
    locked = keygen(tmp_path / "locked", passphrase="correct horse")
    authorized_extra(Path(f"{locked}.pub"))
    known = trusted_known_hosts(tmp_path, sshd)
    asked: list[SecretRequest] = []

    def ask(request: SecretRequest) -> str | None:
        asked.append(request)
        return "correct horse"

    with connect(sshd, known, target=target_of(sshd, identity=locked), ask_secret=ask) as conn:
        assert conn.exec("echo in").stdout == b"in\n"
    assert asked == [SecretRequest(SecretKind.PASSPHRASE, str(locked))]
    assert asked[0].prompt == f"Passphrase for {locked}"

    with pytest.raises(AuthFailed) as wrong:
        connect(sshd, known, target=target_of(sshd, identity=locked), ask_secret=lambda r: "wrong")
    assert wrong.value.rejected_secret == SecretRequest(SecretKind.PASSPHRASE, str(locked))
    assert "passphrase" in wrong.value.message

    with pytest.raises(AuthFailed) as declined:
        connect(sshd, known, target=target_of(sshd, identity=locked), ask_secret=lambda r: None)
    assert "needs a passphrase" in declined.value.message
    assert declined.value.rejected_secret is None


def test_sftp_put_sets_mode_counts_bytes_and_reports_progress(sshd, tmp_path) -> None:
    payload = os.urandom(200_000)
    seen: list[tuple[int, int]] = []
    with connect(sshd, trusted_known_hosts(tmp_path, sshd)) as conn:
        sent = conn.sftp_put(payload, "staged.bin", mode=0o600, progress=lambda d, t: seen.append((d, t)))
        assert sent == len(payload)
        assert seen[-1] == (len(payload), len(payload)) and len(seen) > 1
        local = tmp_path / "tool.sh"
        local.write_bytes(b"#!/bin/sh\necho tool\n")
        assert conn.sftp_put(local, "tool.sh", mode=0o700) == local.stat().st_size
        assert conn.exec("./tool.sh").stdout == b"tool\n"
    on_server = sshd.home / "staged.bin"
    assert on_server.read_bytes() == payload
    assert stat.S_IMODE(on_server.stat().st_mode) == 0o600
    assert on_server.stat().st_uid == sshd.uid


def test_sftp_put_of_a_fifo_is_a_clear_error_not_a_hang(sshd, tmp_path) -> None:
    fifo = tmp_path / "not-a-file"
    os.mkfifo(fifo)
    with connect(sshd, trusted_known_hosts(tmp_path, sshd)) as conn:
        with pytest.raises(SshError) as refused:
            within(lambda: conn.sftp_put(fifo, "x.bin"), [fifo])
        assert refused.value.title == "Cannot read the file to upload" and "not a regular file" in refused.value.message
        assert conn.exec("echo still here").stdout == b"still here\n"
    assert not (sshd.home / "x.bin").exists()


def test_persistent_channel_streams_lines_and_reports_eof_once(sshd, tmp_path) -> None:
    with connect(sshd, trusted_known_hosts(tmp_path, sshd)) as conn:
        stream = conn.open_exec_channel("while read x; do echo \"got $x\"; done; echo bye")
        got = reader = StreamReader(stream).start()
        stream.send(b"one\ntwo\n")
        deadline = time.monotonic() + 5
        while len(got.lines) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert got.lines == [b"got one", b"got two"]
        assert conn.exec("echo alongside").stdout == b"alongside\n", "the stream must not block the connection"
        stream.send(b"three\n")
        stream._channel.shutdown_write()  # EOF on the remote stdin ends the loop
        assert reader.join(5)
        time.sleep(0.2)
    assert got.lines == [b"got one", b"got two", b"got three", b"bye"]
    assert got.ends == [None]


def test_stream_failure_reports_exit_status_and_stderr_once(sshd, tmp_path) -> None:
    with connect(sshd, trusted_known_hosts(tmp_path, sshd)) as conn:
        stream = conn.open_exec_channel("no-such-python3 relay --socket /tmp/x")
        got = reader = StreamReader(stream).start()
        assert reader.join(5)
        time.sleep(0.1)
    assert len(got.ends) == 1 and isinstance(got.ends[0], CommandFailed)
    assert got.ends[0].exit_status == 127
    assert "not found" in got.ends[0].message


def test_sending_to_a_command_that_ended_fails_that_stream_and_keeps_the_connection(sshd, tmp_path) -> None:
    """A probe that said what to change ends at once, while the request the app pipelined after it may still
    be on its way: that send fails (BrokenPipeError, a stream's end), and the connection the push then needs
    stays up -- it used to be torn down as lost (a fast probe lost this race and the connect failed)."""
    with connect(sshd, trusted_known_hosts(tmp_path, sshd)) as conn:
        stream = conn.open_exec_channel("echo answer")
        got = reader = StreamReader(stream).start()
        assert reader.join(5)
        deadline = time.monotonic() + 5
        while not stream._channel.closed and time.monotonic() < deadline:
            time.sleep(0.01)
        with pytest.raises(BrokenPipeError):
            stream.send(b'{"id": 1, "method": "subscribe"}\n')
        assert conn.is_open and conn.lost_error is None
        assert conn.exec("echo still here").stdout == b"still here\n"
    assert got.lines == [b"answer"] and got.ends == [None]


def test_the_dialled_socket_sends_at_once_and_acknowledges_at_once(sshd, tmp_path) -> None:
    """TCP_NODELAY, and on Linux an ACK for every read (sshd holds a small packet until our ACK of the one
    before, and a delayed ACK is ~40 ms: twice per connect). The connection works through it as before."""
    sock = dial(target_of(sshd), 10)
    try:
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
        assert isinstance(sock, QuickAckSocket) == hasattr(socket, "TCP_QUICKACK")
        assert sock.recv(64).startswith(b"SSH-2.0-")  # the server's banner, read through the override
    finally:
        sock.close()
    with connect(sshd, trusted_known_hosts(tmp_path, sshd)) as conn:
        assert conn.exec("echo through").stdout == b"through\n"


def test_closing_the_connection_ends_streams_without_blame(sshd, tmp_path) -> None:
    conn = connect(sshd, trusted_known_hosts(tmp_path, sshd))
    stream = conn.open_exec_channel("cat")
    got = reader = StreamReader(stream).start()
    conn.close()
    assert reader.join(5)
    assert got.ends == [None]
    with pytest.raises(ConnectionLost):
        conn.exec("true")


def test_refused_port_is_host_unreachable(tmp_path) -> None:
    from fixtures.procs import free_port

    target = SshTarget(alias="127.0.0.1", hostname="127.0.0.1", port=free_port(), user="nobody")
    with pytest.raises(HostUnreachable) as refused:
        SshConnection.connect(target, KnownHosts(tmp_path / "kh", user_file=None), timeout=3, use_agent=False)
    assert refused.value.title == "Connection refused"


def test_ssh_config_alias_and_proxyjump_reach_the_host(sshd, tmp_path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host testbox\n  HostName {sshd.host}\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.key_path}\n"
        f"Host viajump\n  HostName {sshd.host}\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.key_path}\n  ProxyJump testbox\n")
    known = trusted_known_hosts(tmp_path, sshd)
    direct = resolve_target("testbox", config_path=config, default_identities=())
    with SshConnection.connect(direct, known, timeout=10, use_agent=False) as conn:
        assert conn.exec("echo direct").stdout == b"direct\n"
    jumped = resolve_target("viajump", config_path=config, default_identities=())
    assert jumped.proxy_jump is not None and jumped.proxy_jump.alias == "testbox"
    with SshConnection.connect(jumped, known, timeout=10, use_agent=False) as conn:
        assert conn.exec("echo jumped").stdout == b"jumped\n"
        assert conn._jump is not None and conn._jump.is_open
        jump = conn._jump
    assert not jump.is_open, "closing a connection closes its jump host too"


@pytest.fixture
def ssh_agent(tmp_path, monkeypatch):
    """A real ssh-agent on a private socket for one test; killed by PID afterwards."""
    sock = tmp_path / "agent.sock"
    out = subprocess.run(["ssh-agent", "-a", str(sock)], check=True, capture_output=True, text=True,
                         timeout=10).stdout
    pid = int(out.split("SSH_AGENT_PID=")[1].split(";")[0])
    monkeypatch.setenv("SSH_AUTH_SOCK", str(sock))
    yield sock
    try:
        os.kill(pid, 15)
    except ProcessLookupError:
        pass


def test_keys_from_ssh_agent_log_in_without_key_files(sshd, tmp_path, ssh_agent) -> None:
    subprocess.run(["ssh-add", str(sshd.key_path)], check=True, capture_output=True, timeout=10)
    target = SshTarget(alias=sshd.host, hostname=sshd.host, port=sshd.port, user=sshd.user)
    with SshConnection.connect(target, trusted_known_hosts(tmp_path, sshd), timeout=10, use_agent=True) as conn:
        assert conn.exec("echo agent").stdout == b"agent\n"
    with pytest.raises(AuthFailed, match="No key was available"):
        SshConnection.connect(target, KnownHosts(tmp_path / "config" / "known_hosts", user_file=None),
                              timeout=10, use_agent=False)


def test_proxycommand_from_ssh_config(sshd, tmp_path) -> None:
    known = trusted_known_hosts(tmp_path, sshd)
    config = tmp_path / "ssh_config"
    config.write_text(
        f"Host piped\n  HostName {sshd.host}\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.key_path}\n"
        f"  ProxyCommand ssh -q -i {sshd.key_path} -o BatchMode=yes -o UserKnownHostsFile={known.app_file} "
        f"-o StrictHostKeyChecking=yes -p {sshd.port} {sshd.user}@{sshd.host} -W %h:%p\n")
    target = resolve_target("piped", config_path=config, default_identities=())
    assert target.proxy_command is not None and f"-W {sshd.host}:{sshd.port}" in target.proxy_command
    with SshConnection.connect(target, known, timeout=10, use_agent=False) as conn:
        assert conn.exec("echo piped").stdout == b"piped\n"
