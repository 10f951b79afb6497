"""One SSH connection to one host: blocking paramiko, bounded in time, and torn down as a whole.

Everything here blocks; call it from the host's `BlockingRunner`, never from the event loop. Every wait
on the peer has a deadline: when the peer stops answering, the connection is destroyed (transport,
channels, sftp, jump host) and the operation raises `ConnectionLost`, because a stream that quietly
hangs is how a box's death goes unnoticed (docs/architecture.md, "Remote: SSH").

Errors are `UserError`s (title, sentence, hint) so the app and the CLI can show them as they are.
"""

from __future__ import annotations

import contextlib
import io
import logging
import select
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import paramiko

from workroom.core.errors import UserError
from workroom.regular_file import read_regular_file
from workroom.remote.answer_limit import COMMAND_ANSWER, AnswerLimit
from workroom.remote.host_keys import (
    ChangedHostKey,
    HostKeyChanged,
    HostKeyUnknown,
    HostKeyVerdict,
    KnownHostKey,
    KnownHosts,
    UnknownHostKey,
    fingerprint,
    preferred_key_types,
)
from workroom.remote.ssh_auth import AskSecret, LoginAttempts, SecretRequest
from workroom.remote.ssh_config import SshTarget
from workroom.remote.ssh_errors import (
    AuthFailed,
    CommandFailed,
    CommandTimedOut,
    ConnectionLost,
    HostUnreachable,
    SshError,
    close_quietly,
    dial,
    handshake_error,
    logged_command,
    open_fdpass_proxy,
    open_proxy_command,
    said,
)
from workroom.remote.ssh_transport import WorkroomTransport

log = logging.getLogger(__name__)

__all__ = [
    "AuthFailed",
    "CommandFailed",
    "CommandTimedOut",
    "ConnectionLost",
    "ExecResult",
    "ExecStream",
    "HostKeyChanged",
    "HostKeyUnknown",
    "HostUnreachable",
    "SecretRequest",
    "SshConnection",
    "SshError",
]  # the error family and SecretRequest are re-exported so callers need one import

KEEPALIVE_REQUEST = "keepalive@openssh.com"  # what OpenSSH's ServerAliveInterval sends; servers reply
SFTP_CHUNK = 32768
STDERR_KEEP = 8192


# --- the guard: deadlines, the cause of death, the open channels -------------------------------


class ConnectionGuard:
    """What a connection and its streams share to die as one: deadlines on blocking calls, the one
    recorded cause of death, and the channels to close with it.

    `teardown` destroys the connection (called at most once, on the first failure); `is_active`
    says whether its transport still runs. Thread-safe.
    """

    def __init__(self, where: str, teardown: Callable[[], None], is_active: Callable[[], bool],
                 on_lost: Callable[[ConnectionLost], None] | None) -> None:
        self.where = where
        self._teardown = teardown
        self._is_active = is_active
        self._on_lost = on_lost
        self._lock = threading.Lock()
        self._channels: set[paramiko.Channel] = set()
        self.closed = False
        self.lost_error: ConnectionLost | None = None

    @property
    def closed_by_us(self) -> bool:
        """True after a deliberate close (not after the connection broke)."""
        return self.closed and self.lost_error is None

    @property
    def is_open(self) -> bool:
        return not self.closed and self._is_active()

    @contextlib.contextmanager
    def watch(self, timeout: float, what: str) -> Iterator[None]:
        """Bound a blocking paramiko call: if the peer has not answered by `timeout`, tear the
        connection down, which wakes the call with an error that becomes `ConnectionLost`."""
        def expire() -> None:
            self.fail(ConnectionLost(
                "Host stopped answering",
                f"{self.where} did not answer within {timeout:g} s while {what}.",
                "The host may be frozen, asleep or cut off; reconnect when it is back."))

        timer = threading.Timer(timeout, expire)
        timer.daemon = True
        timer.start()
        try:
            yield
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise self.broken(exc, what) from exc
        finally:
            timer.cancel()

    def broken(self, exc: BaseException, what: str) -> ConnectionLost:
        """The ConnectionLost for a low-level failure: the recorded cause if we tore down, else a new one."""
        if self.lost_error is None:
            self.fail(ConnectionLost(
                "Connection to the host lost",
                f"The connection to {self.where} broke while {what} ({_plain_cause(exc)}).",
                "Reconnect when the host is reachable again."))
        return self.lost_error or ConnectionLost(
            "Not connected", f"The connection to {self.where} is closed.", "Reconnect.")

    def fail(self, error: ConnectionLost) -> None:
        """Record why the connection died, destroy it, and tell `on_lost` (exactly once)."""
        with self._lock:
            if self.lost_error is not None or self.closed:
                return
            self.lost_error = error
        self._teardown()
        if self._on_lost is not None:
            self._on_lost(error)

    def track(self, channel: paramiko.Channel) -> None:
        with self._lock:
            self._channels.add(channel)

    def forget(self, channel: paramiko.Channel) -> None:
        with self._lock:
            self._channels.discard(channel)

    def close(self) -> list[paramiko.Channel] | None:
        """Mark the connection closed; returns the channels to close, or None if it already was."""
        with self._lock:
            if self.closed:
                return None
            self.closed = True
            channels = list(self._channels)
            self._channels.clear()
        return channels


# --- results and streams ----------------------------------------------------------------------


class RefuseUnverifiedHostKey(paramiko.MissingHostKeyPolicy):
    """paramiko's host key hook for one connection: accept only a key on record, raise otherwise.

    The SSHClient using it holds no host keys of its own, so every key comes through here and is
    checked against `KnownHosts` (never added).
    """

    def __init__(self, known_hosts: KnownHosts, host: str, port: int) -> None:
        self.known_hosts = known_hosts
        self.host = host
        self.port = port
        self.verdict: HostKeyVerdict | None = None

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        verdict = self.known_hosts.verify(self.host, self.port, key)
        self.verdict = verdict
        if isinstance(verdict, UnknownHostKey):
            raise HostKeyUnknown(verdict)
        if isinstance(verdict, ChangedHostKey):
            raise HostKeyChanged(verdict)
        if not isinstance(verdict, KnownHostKey):  # defensive: only an explicit match passes
            raise HostKeyUnknown(UnknownHostKey(self.host, self.port, key.get_name(), fingerprint(key), key))


class ExecResult(NamedTuple):
    exit_status: int
    stdout: bytes
    stderr: bytes


def _send_or_ended(channel: paramiko.Channel, guard: ConnectionGuard, data: bytes, timeout: float,
                   ended: Callable[[], str]) -> None:
    """Send on a stream's channel: `BrokenPipeError` (in `ended()`'s words) when its far end has already closed
    while the connection lives on, `ConnectionLost` when the connection broke."""
    closed_alone = False
    with guard.watch(timeout, "sending to the host"):
        try:
            channel.sendall(data)
        except OSError:
            if not (channel.closed and guard.is_open):
                raise
            closed_alone = True
    if closed_alone:
        raise BrokenPipeError(ended())


class ExecStream:
    """A long-running remote command (the agent relay): send to its stdin, read its stdout.

    Reads block until data, end of stream, or the connection's teardown; they never hang on a dead
    peer as long as someone checks the connection (`check_alive`) or closes it. After `recv`
    returns b"", `end_error()` says how it ended: None for a clean exit (or our own close),
    `CommandFailed` with its stderr (e.g. "python3: not found") or `ConnectionLost`.
    """

    def __init__(self, channel: paramiko.Channel, guard: ConnectionGuard, command: str) -> None:
        self._channel = channel
        self._guard = guard
        self.command = command
        self._closed_locally = False

    def send(self, data: bytes, timeout: float = 10.0) -> None:
        """Raises `BrokenPipeError` when the command has already ended (the connection lives on: a probe that
        said what to change ends before the request sent after it), `ConnectionLost` when the connection broke."""
        _send_or_ended(self._channel, self._guard, data, timeout,
                       lambda: "the app's command on the host has ended")

    def recv(self, size: int = 65536) -> bytes:
        try:
            return bytes(self._channel.recv(size))
        except (OSError, EOFError, paramiko.SSHException):
            return b""

    def end_error(self, wait: float = 2.0) -> UserError | None:
        """How the stream ended (call after `recv` returned b""). Waits briefly for the exit status."""
        if self._closed_locally or self._guard.closed_by_us:
            return None
        deadline = time.monotonic() + wait
        while not self._channel.exit_status_ready() and time.monotonic() < deadline:
            if self._channel.closed and not self._guard.is_open:
                break
            time.sleep(0.01)
        lost = self._guard.lost_error
        if lost is not None:
            return lost
        # paramiko reports -1 when the channel closed without an exit status
        status = self._channel.recv_exit_status() if self._channel.exit_status_ready() else -1
        if status == 0:
            return None
        if status > 0:
            return CommandFailed(self.command, status, self._stderr_tail())
        return ConnectionLost("Connection to the host lost",
                              "The app's command on the host ended without an exit status.",
                              "The host may have restarted or dropped the connection; reconnect.")

    def _stderr_tail(self) -> str:
        data = b""
        with contextlib.suppress(OSError, paramiko.SSHException):
            while self._channel.recv_stderr_ready():
                data = (data + self._channel.recv_stderr(65536))[-STDERR_KEEP:]
        return data.decode("utf-8", errors="replace")

    def close(self) -> None:
        """Close the stream (its remote command gets EOF and a hang-up)."""
        self._closed_locally = True
        self._guard.forget(self._channel)
        self._channel.close()


class SocketStream:
    """A stream to a Unix socket on the host (`SshConnection.open_socket_stream`): no command runs on the
    host, so it has no exit status; it ends when the socket's other end closes, or with the connection."""

    def __init__(self, channel: paramiko.Channel, guard: ConnectionGuard, path: str) -> None:
        self._channel = channel
        self._guard = guard
        self.path = path

    def recv(self, size: int = 65536) -> bytes:
        try:
            return bytes(self._channel.recv(size))
        except (OSError, EOFError, paramiko.SSHException):
            return b""

    def send(self, data: bytes, timeout: float = 10.0) -> None:
        """Raises `BrokenPipeError` when the socket's end has closed (the connection lives on), as
        `ExecStream.send` does for a command that ended; `ConnectionLost` when the connection broke."""
        _send_or_ended(self._channel, self._guard, data, timeout, lambda: f"the agent's socket {self.path} has closed")

    def end_error(self) -> UserError | None:
        """How the stream ended: the connection's loss, or None (the socket's end closed, or ours)."""
        return None if self._guard.closed_by_us else self._guard.lost_error

    def close(self) -> None:
        self._guard.forget(self._channel)
        self._channel.close()


class SocketRefused(SshError):
    """The host would not connect a channel to a Unix socket (forwarding not allowed, nobody listening)."""


# --- the connection ---------------------------------------------------------------------------


class SshConnection:
    """A logged-in SSH connection to one host (create with `SshConnection.connect`).

    Not thread-safe for concurrent operations: run them one at a time on the host's worker. The
    exceptions are `close()`, `ExecStream.recv` (its own reader thread) and `check_alive`, which
    may all run alongside.
    """

    def __init__(self, target: SshTarget, client: paramiko.SSHClient, host_key: KnownHostKey,
                 jump: SshConnection | None, login: LoginAttempts,
                 on_lost: Callable[[ConnectionLost], None] | None) -> None:
        self.target = target
        self.host_key = host_key
        self._client = client
        self._jump = jump
        self._login = login
        self._ping_lock = threading.Lock()
        self._sftp: paramiko.SFTPClient | None = None
        self._guard = ConnectionGuard(target.describe(), self.close, self._transport_active, on_lost)

    # connect ---------------------------------------------------------------------------------

    @classmethod
    def connect(
        cls,
        target: SshTarget,
        known_hosts: KnownHosts,
        *,
        timeout: float = 10.0,
        ask_secret: AskSecret | None = None,
        use_agent: bool = True,
        on_lost: Callable[[ConnectionLost], None] | None = None,
    ) -> SshConnection:
        """Open, check the host key, log in. Raises HostUnreachable, HostKeyUnknown, HostKeyChanged,
        AuthFailed or ConnectionLost; on any failure nothing is left open.

        `ask_secret` is called (on this thread) only when a key needs a passphrase or the server takes
        passwords; return None to decline. `on_lost` is called once, from whichever thread noticed,
        when the connection breaks by itself (not after `close()`).
        """
        jump: SshConnection | None = None
        sock: object
        try:
            if target.proxy_jump is not None:
                jump = cls.connect(target.proxy_jump, known_hosts, timeout=timeout, ask_secret=ask_secret,
                                   use_agent=use_agent)
                sock = jump._open_tunnel(target, timeout)
            elif target.proxy_command and target.proxy_use_fdpass:
                sock = open_fdpass_proxy(target, timeout)
            elif target.proxy_command:
                sock = open_proxy_command(target)
            else:
                sock = dial(target, timeout)
        except BaseException:
            if jump is not None:
                jump.close()
            raise

        client = paramiko.SSHClient()
        # As ssh: the host's own known-hosts files count too, and HostKeyAlias names the key (no port).
        known_hosts = known_hosts.with_files((*target.user_known_hosts_files, *target.global_known_hosts_files))
        key_host, key_port = (target.host_key_alias, 22) if target.host_key_alias else (target.hostname, target.port)
        policy = RefuseUnverifiedHostKey(known_hosts, key_host, key_port)
        client.set_missing_host_key_policy(policy)
        login = LoginAttempts(target, ask_secret, use_agent)
        known_types = known_hosts.known_key_types(key_host, key_port)

        def make_transport(sock: Any, **kwargs: Any) -> paramiko.Transport:  # paramiko's own call, passed through
            transport = WorkroomTransport(sock, **kwargs)
            options = transport.get_security_options()
            offered = tuple(options.key_types) + tuple(t for t in known_types if t not in options.key_types)
            options.key_types = preferred_key_types(known_types, offered)
            return transport

        transport_seen = None
        try:
            client.connect(
                target.hostname, target.port, username=target.user, sock=sock,
                timeout=timeout, banner_timeout=timeout, auth_timeout=timeout, channel_timeout=timeout,
                allow_agent=False, look_for_keys=False, auth_strategy=login,
                transport_factory=make_transport,
            )
            if not isinstance(policy.verdict, KnownHostKey):  # never reached without a checked key
                raise HostUnreachable("Host key not checked", f"{target.describe()}: no host key check ran.",
                                      "This is a bug in workroom; please report it.")
        except BaseException as exc:
            transport_seen = client.get_transport()
            login.close()
            client.close()
            close_quietly(sock)
            if jump is not None:
                jump.close()
            if isinstance(exc, UserError | KeyboardInterrupt):
                raise
            raise handshake_error(target, exc, timeout, transport_seen) from exc
        login.close()  # the agent is needed only to sign the login
        return cls(target, client, policy.verdict, jump, login, on_lost)

    def _open_tunnel(self, target: SshTarget, timeout: float) -> paramiko.Channel:
        """A direct-tcpip channel to target through this (jump) connection."""
        return self._open_channel(
            lambda: self._transport.open_channel("direct-tcpip", (target.hostname, target.port), ("127.0.0.1", 0),
                                                 timeout=timeout),
            f"reaching {target.hostname} through {self.target.hostname}", timeout,
            lambda exc: HostUnreachable(
                "Host unreachable",
                f"The jump host {self.target.describe()} could not reach {target.hostname}:{target.port} ({exc.text}).",
                "Check the host name and port as seen from the jump host."))

    def _open_channel(self, open_it: Callable[[], paramiko.Channel], what: str, timeout: float,
                      refused: Callable[[paramiko.ChannelException], UserError]) -> paramiko.Channel:
        """Open a channel, the wait bounded (`ConnectionGuard.watch`); the server's refusal as `refused` says."""
        with self._guard.watch(timeout + 1.0, what):
            try:
                return open_it()
            except paramiko.ChannelException as exc:
                raise refused(exc) from exc

    # state -----------------------------------------------------------------------------------

    @property
    def _transport(self) -> paramiko.Transport:
        transport = self._client.get_transport()
        if transport is None or self._guard.closed:
            raise self._guard.lost_error or ConnectionLost(
                "Not connected", f"The connection to {self.target.describe()} is closed.", "Reconnect.")
        return transport

    def _transport_active(self) -> bool:
        transport = self._client.get_transport()
        return transport is not None and transport.is_active()

    @property
    def lost_error(self) -> ConnectionLost | None:
        """Why the connection broke by itself (None while open or after a deliberate close)."""
        return self._guard.lost_error

    @property
    def closed_by_us(self) -> bool:
        """True after `close()` was called deliberately (not after the connection broke)."""
        return self._guard.closed_by_us

    @property
    def is_open(self) -> bool:
        return self._guard.is_open

    # operations ------------------------------------------------------------------------------

    def exec(self, command: str, input: bytes | None = None, timeout: float = 30.0,
             check: bool = False, limit: AnswerLimit = COMMAND_ANSWER) -> ExecResult:
        """Run `command`, feed it `input` (small payloads), and collect its output and exit status.

        Past `timeout` the command is abandoned: `CommandTimedOut` if the host still answers a
        keepalive, otherwise `ConnectionLost` (and the connection is torn down). With `check`, a
        non-zero exit raises `CommandFailed`. More than `limit` bytes on stdout or stderr: the command is
        abandoned and `AnswerTooLarge` raised (nothing past the limit is kept).
        """
        deadline = time.monotonic() + timeout
        channel = self._start(command, timeout)
        out, err = io.BytesIO(), io.BytesIO()
        try:
            if input:
                with self._guard.watch(max(deadline - time.monotonic(), 0.1), "sending input"):
                    channel.sendall(input)
            with self._guard.watch(timeout + 5.0, "running a command"):  # backstop; the loop below ends first
                channel.shutdown_write()
                if not self._collect(channel, out, err, deadline, limit.max_bytes):
                    raise limit.exceeded(command)
        finally:
            self._guard.forget(channel)
            _close_polled(channel)
        if not channel.exit_status_ready():
            if self.lost_error is not None:
                raise self.lost_error
            self.check_alive(timeout=min(5.0, max(timeout, 1.0)))
            logged_command(command)
            raise CommandTimedOut("Command timed out",
                                  f"A command the app ran on the host did not finish within {timeout:g} s.",
                                  "The host is answering but the command is slow or stuck; try again.")
        result = ExecResult(channel.recv_exit_status(), out.getvalue(), err.getvalue())
        if check and result.exit_status != 0:
            raise CommandFailed(command, result.exit_status, result.stderr.decode("utf-8", errors="replace"))
        return result

    def _start(self, command: str, timeout: float) -> paramiko.Channel:
        channel = self._open_channel(
            lambda: self._transport.open_session(timeout=timeout), "starting a command", timeout,
            lambda exc: SshError("The host refused a new session",
                                 f"{self.target.describe()} refused to start the app's command ({exc.text}).",
                                 "The host may limit sessions per connection; reconnect."))
        self._guard.track(channel)
        with self._guard.watch(timeout + 1.0, "starting a command"):
            channel.exec_command(command)
        return channel

    @staticmethod
    def _collect(channel: paramiko.Channel, out: io.BytesIO, err: io.BytesIO, deadline: float,
                 max_bytes: int) -> bool:
        """Read until the command ends or `deadline`; False as soon as either stream passes `max_bytes`."""
        fd = channel.fileno()  # a pipe paramiko signals on data, EOF and close
        while True:
            while channel.recv_ready():
                out.write(channel.recv(65536))
                if out.tell() > max_bytes:
                    return False
            while channel.recv_stderr_ready():
                err.write(channel.recv_stderr(65536))
                if err.tell() > max_bytes:
                    return False
            if channel.closed or (channel.eof_received and channel.exit_status_ready()):
                if not channel.recv_ready() and not channel.recv_stderr_ready():
                    return True
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            select.select([fd], [], [], min(remaining, 0.2))

    def open_exec_channel(self, command: str, timeout: float = 10.0) -> ExecStream:
        """Start a long-running command and return its stream (stdin/stdout); see `ExecStream`."""
        channel = self._start(command, timeout)
        channel.settimeout(None)
        return ExecStream(channel, self._guard, command)

    def open_socket_stream(self, path: str, timeout: float = 10.0) -> SocketStream:
        """A stream to the Unix socket `path` on the host, as the login user (OpenSSH's streamlocal
        forwarding, what `ssh -W path` opens): one round trip, nothing started on the host. Raises
        `SocketRefused` when sshd refuses it (its words in the message)."""
        transport = self._transport
        assert isinstance(transport, WorkroomTransport)
        channel = self._open_channel(
            lambda: transport.open_streamlocal(path, timeout), "reaching the agent's socket", timeout,
            lambda exc: SocketRefused("The host refused the agent's socket",
                                      f"{self.target.describe()} would not connect to {path} ({exc.text}).",
                                      "The app reaches the agent with a command instead."))
        self._guard.track(channel)
        channel.settimeout(None)
        return SocketStream(channel, self._guard, path)

    def sftp_put(self, source: Path | str | bytes, remote_path: str, mode: int = 0o600,
                 progress: Callable[[int, int], None] | None = None, timeout: float = 30.0) -> int:
        """Upload a file (or bytes) to `remote_path` with `mode`; returns the bytes sent.

        The mode is set before any byte is written, so the content is never readable by others. An
        interrupted upload leaves a partial file: upload to a staging name and rename. `progress`
        gets (bytes sent, total). `timeout` bounds each wait on the server, not the whole transfer.
        """
        if isinstance(source, bytes):
            data = source
        else:
            try:
                data = read_regular_file(source, None)  # a FIFO must not stall this host's worker
            except OSError as exc:
                raise SshError("Cannot read the file to upload", f"{source}: {exc.strerror or exc}.",
                               "Check that the file exists and is readable.") from exc
        total = len(data)
        what = f"uploading to {remote_path}"
        sftp = self._open_sftp(timeout)
        try:
            # Each read or write below waits at most `timeout` (the sftp channel's timeout).
            with sftp.open(remote_path, "wb") as handle:
                handle.chmod(mode)
                handle.set_pipelined(True)
                sent = 0
                for start in range(0, total, SFTP_CHUNK):
                    chunk = data[start:start + SFTP_CHUNK]
                    handle.write(chunk)
                    sent += len(chunk)
                    if progress is not None:
                        progress(sent, total)
        except (TimeoutError, EOFError, paramiko.SSHException) as exc:
            raise self._guard.broken(exc, what) from exc
        except OSError as exc:  # an SFTP status (no such folder, permission denied, disk full)
            if self.lost_error is not None or not self.is_open:
                raise self._guard.broken(exc, what) from exc
            raise SshError("Upload failed", f"Could not write {remote_path} on the host: "
                           f"{exc.strerror or exc}.",
                           "Check the folder exists on the host, its permissions, and free space.") from exc
        if total == 0 and progress is not None:
            progress(0, 0)
        return total

    def _open_sftp(self, timeout: float) -> paramiko.SFTPClient:
        if self._sftp is None:
            with self._guard.watch(timeout, "starting SFTP"):
                sftp = self._client.open_sftp()
            channel = sftp.get_channel()
            assert channel is not None
            self._guard.track(channel)
            self._sftp = sftp
        channel = self._sftp.get_channel()
        assert channel is not None
        channel.settimeout(timeout)
        return self._sftp

    # liveness --------------------------------------------------------------------------------

    def check_alive(self, timeout: float = 5.0) -> float:
        """Ask the server for a reply (keepalive@openssh.com); returns the round trip in seconds.

        No reply within `timeout`: the connection is torn down and `ConnectionLost` raised.
        """
        transport = self._transport
        with self._ping_lock:
            started = time.monotonic()
            answered = threading.Event()

            def ping() -> None:
                # paramiko's global_request waits for the reply without a deadline; it returns once
                # a reply arrives or the transport closes, so the deadline is enforced here.
                with contextlib.suppress(Exception):
                    transport.global_request(KEEPALIVE_REQUEST, wait=True)
                answered.set()

            threading.Thread(target=ping, name=f"ssh-ping-{self.target.hostname}", daemon=True).start()
            if answered.wait(timeout) and transport.is_active():
                return time.monotonic() - started
        error = ConnectionLost(
            "Host stopped answering",
            f"{self.target.describe()} did not answer a keepalive within {timeout:g} s.",
            "The host may be frozen, asleep or cut off; reconnect when it is back.")
        self._guard.fail(error)
        raise self.lost_error or error

    # teardown --------------------------------------------------------------------------------

    def close(self) -> None:
        """Destroy everything tied to this connection: channels, sftp, transport, jump.

        Safe from any thread, idempotent, and never waits on the peer (the transport is closed first,
        which ends every channel and wakes every reader locally).
        """
        channels = self._guard.close()
        if channels is None:
            return
        self._sftp = None
        transport = self._client.get_transport()
        if transport is not None:
            transport.close()
        for channel in channels:
            with contextlib.suppress(Exception):
                channel.close()
        self._client.close()
        self._login.close()
        if self._jump is not None:
            self._jump.close()

    def __enter__(self) -> SshConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _plain_cause(exc: BaseException) -> str:
    """A low-level failure's own words, or plain ones for those that have none (never a type name)."""
    if str(exc):
        return said(exc)
    log.debug("connection broke with %r", exc)
    if isinstance(exc, EOFError):
        return "the host closed it"
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return "no further detail"


def _close_polled(channel: paramiko.Channel) -> None:
    """Close a channel whose `fileno()` was polled. Paramiko's transport thread signals that pipe when data
    arrives, checking only beforehand that it is open; data still streaming in (a command abandoned past its
    answer limit) could be signalled on a pipe closed a moment before, whose descriptor number another pipe
    already reuses, breaking the whole connection. Each buffer is handed a plain event first, under its own
    lock, so no later signal reaches the pipe."""
    with contextlib.suppress(AttributeError):
        channel.in_buffer.set_event(threading.Event())
        channel.in_stderr_buffer.set_event(threading.Event())
    channel.close()
