"""One SSH connection to one host: blocking paramiko, bounded in time, and torn down as a whole.

Everything here blocks; call it from the host's `HostWorker`, never from the event loop. Every wait
on the peer has a deadline: when the peer stops answering, the connection is destroyed (transport,
channels, sftp, jump host) and the operation raises `ConnectionLost`, because a stream that quietly
hangs is how a box's death goes unnoticed (DESIGN.md §9, lesson 3).

Errors are `UserError`s (title, sentence, hint) so the app and the CLI can show them as they are.
"""

from __future__ import annotations

import contextlib
import functools
import io
import select
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, NamedTuple

import paramiko
from paramiko.auth_strategy import AuthStrategy

from workroom.core.errors import UserError
from workroom.platform import local_network
from workroom.remote.host_keys import (
    HostKeyChanged,
    HostKeyUnknown,
    KnownHostKey,
    KnownHosts,
    RefuseUnverifiedHostKey,
    fingerprint,
    preferred_key_types,
)
from workroom.remote.ssh_config import SshTarget

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
]

KEEPALIVE_REQUEST = "keepalive@openssh.com"  # what OpenSSH's ServerAliveInterval sends; servers reply
SFTP_CHUNK = 32768
STDERR_KEEP = 8192


# --- errors -----------------------------------------------------------------------------------


class SshError(UserError):
    """Base of every SSH failure a user may see."""


class HostUnreachable(SshError):
    """No SSH session could be set up: name, route, refused port, or not an SSH server."""


class AuthFailed(SshError):
    """The server refused every way we had to log in.

    `rejected_secret` names the keyring secret that was tried and refused ("passphrase:<key path>"
    or "password:<user@host:port>"), so the caller can drop it from the keyring and ask again.
    """

    def __init__(self, title: str, message: str, hint: str = "", rejected_secret: str | None = None) -> None:
        super().__init__(title, message, hint)
        self.rejected_secret = rejected_secret


class CommandFailed(SshError):
    """A remote command exited non-zero (or was killed); carries its status and the end of stderr."""

    def __init__(self, command: str, exit_status: int, stderr: str) -> None:
        detail = stderr.strip().splitlines()[-1] if stderr.strip() else "no error output"
        super().__init__(
            "Command failed on the host",
            f"`{_short(command)}` exited with status {exit_status}: {detail}",
            "See the host's error output above; the host may lack a program this needs.",
        )
        self.command = command
        self.exit_status = exit_status
        self.stderr = stderr


class CommandTimedOut(SshError):
    """A remote command ran past its time limit; the connection itself still answers."""


class ConnectionLost(SshError):
    """The connection broke or the peer stopped answering; everything on it has been torn down."""


def _short(command: str, limit: int = 80) -> str:
    return command if len(command) <= limit else command[: limit - 1] + "…"


# --- credentials ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SecretRequest:
    """What the caller's secret provider is asked for (the app answers from keyring, or asks the user).

    `key` is a stable name to store the answer under: "passphrase:<key path>" or
    "password:<user@host:port>".
    """

    kind: Literal["passphrase", "password"]
    key: str
    prompt: str
    key_path: Path | None = None


AskSecret = Callable[[SecretRequest], str | None]


class _LoginAttempts(AuthStrategy):  # type: ignore[misc]
    """Our login order: agent keys, then key files (asking for a passphrase only when one is needed),
    then a password if the server accepts passwords and the caller can supply one.

    Unlike paramiko's own, it first asks the server which methods it accepts, so the user is never
    asked for a password the server would not take; and it explains failures in plain words.
    """

    def __init__(self, target: SshTarget, ask_secret: AskSecret | None, use_agent: bool) -> None:
        super().__init__(ssh_config=None)
        self.target = target
        self.ask_secret = ask_secret
        self.use_agent = use_agent and not target.identities_only
        self.agent: paramiko.Agent | None = None
        self.tried: list[str] = []
        self.timed_out = False
        self.problems: list[str] = []
        self.rejected_secret: str | None = None

    def authenticate(self, transport: paramiko.Transport) -> list[str]:
        user = self.target.user
        try:
            return list(transport.auth_none(user))  # rarely succeeds; tells us what is allowed
        except paramiko.BadAuthenticationType as exc:
            allowed = list(exc.allowed_types)
        except paramiko.AuthenticationException:
            allowed = ["publickey", "password"]
        if "publickey" in allowed:
            for label, key in self._keys():
                if not transport.is_active():
                    break
                self.tried.append(label)
                if self._attempt(functools.partial(transport.auth_publickey, user, key)):
                    return []
        if "password" in allowed and self.ask_secret is not None and transport.is_active():
            secret_key = f"password:{self.target.user}@{self.target.hostname}:{self.target.port}"
            password = self.ask_secret(SecretRequest(
                "password", secret_key, f"Password for {self.target.describe()}"))
            if password is not None:
                self.tried.append("password")
                if self._attempt(lambda: transport.auth_password(user, password)):
                    return []
                self.rejected_secret = secret_key
        raise self._failure(allowed, transport.is_active())

    def _attempt(self, call: Callable[[], object]) -> bool:
        try:
            remaining = call()
        except paramiko.SSHException as exc:  # refused, or the agent could not sign, or the server hung up
            if "timeout" in str(exc).lower():
                self.timed_out = True  # slow (a waking box, a busy sshd), not refused: worth retrying
            return False
        if remaining:  # partial success: the server wants a second factor
            self.problems.append(f"the server asks for more ({remaining}), which workroom cannot provide")
            return False
        return True

    def _keys(self) -> Iterator[tuple[str, paramiko.PKey]]:
        if self.use_agent:
            try:
                self.agent = paramiko.Agent()
                agent_keys = list(self.agent.get_keys())
            except (paramiko.SSHException, OSError):
                agent_keys = []
            for key in agent_keys:
                yield f"agent key {fingerprint(key)}", key
        for path in self.target.identity_files:
            if not path.exists():
                continue
            key = self._load(path)
            if key is not None:
                yield f"{path} ({fingerprint(key)})", key

    def _load(self, path: Path) -> paramiko.PKey | None:
        try:
            return paramiko.PKey.from_path(path)
        except TypeError as exc:  # paramiko's way of saying "encrypted, no passphrase given"
            if "password" not in str(exc).lower():
                self.problems.append(f"{path} could not be read ({exc})")
                return None
        except (ValueError, OSError, paramiko.SSHException, paramiko.UnknownKeyType) as exc:
            self.problems.append(f"{path} is not a private key paramiko can read ({exc})")
            return None
        secret_key = f"passphrase:{path}"
        passphrase = None
        if self.ask_secret is not None:
            passphrase = self.ask_secret(SecretRequest(
                "passphrase", secret_key, f"Passphrase for {path}", key_path=path))
        if passphrase is None:
            self.problems.append(f"{path} needs a passphrase and none was available")
            return None
        try:
            return paramiko.PKey.from_path(path, passphrase.encode("utf-8"))
        except (TypeError, ValueError, paramiko.SSHException) as exc:
            self.problems.append(f"the passphrase for {path} was not accepted ({exc})")
            self.rejected_secret = secret_key
            return None

    def _failure(self, allowed: list[str], still_connected: bool) -> AuthFailed | HostUnreachable:
        where = self.target.describe()
        if self.timed_out:
            return HostUnreachable(
                "Login timed out",
                f"{where} did not finish the login in time.",
                "The host may be waking up or overloaded; the app tries again.")
        if self.tried:
            message = f"{where} did not accept user {self.target.user!r} with {', '.join(self.tried)}."
        else:
            message = f"No key was available to log in to {where} as {self.target.user!r}."
        if self.problems:
            message += " Also: " + "; ".join(self.problems) + "."
        if not still_connected:
            message += " The server closed the connection (too many attempts?)."
        if "publickey" not in allowed:
            message += f" The server only accepts: {', '.join(allowed) or 'nothing'}."
        return AuthFailed(
            "Login refused",
            message,
            "Check the user name, that your public key is in ~/.ssh/authorized_keys on the host, and "
            "which key to use (--identity FILE or IdentityFile in ~/.ssh/config).",
            rejected_secret=self.rejected_secret,
        )

    def close(self) -> None:
        if self.agent is not None:
            self.agent.close()
            self.agent = None


# --- results and streams ----------------------------------------------------------------------


class ExecResult(NamedTuple):
    exit_status: int
    stdout: bytes
    stderr: bytes


class ExecStream:
    """A long-running remote command (the agent relay): send to its stdin, read its stdout.

    Reads block until data, end of stream, or the connection's teardown; they never hang on a dead
    peer as long as the connection's keepalive is on or someone closes the connection. After `recv`
    returns b"", `end_error()` says how it ended: None for a clean exit (or our own close),
    `CommandFailed` with its stderr (e.g. "python3: not found") or `ConnectionLost`.
    """

    def __init__(self, channel: paramiko.Channel, connection: SshConnection, command: str) -> None:
        self._channel = channel
        self._connection = connection
        self.command = command
        self._closed_locally = False

    def send(self, data: bytes, timeout: float = 10.0) -> None:
        with self._connection._guard(timeout, "sending to the host"):
            try:
                self._channel.sendall(data)
            except (OSError, EOFError, paramiko.SSHException) as exc:
                raise self._connection._broken(exc, "sending to the host") from exc

    def recv(self, size: int = 65536) -> bytes:
        try:
            return bytes(self._channel.recv(size))
        except (OSError, EOFError, paramiko.SSHException):
            return b""

    def end_error(self, wait: float = 2.0) -> UserError | None:
        """How the stream ended (call after `recv` returned b""). Waits briefly for the exit status."""
        if self._closed_locally or self._connection.closed_by_us:
            return None
        deadline = time.monotonic() + wait
        while not self._channel.exit_status_ready() and time.monotonic() < deadline:
            if self._channel.closed and not self._connection.is_open:
                break
            time.sleep(0.01)
        lost = self._connection.lost_error
        if lost is not None:
            return lost
        # paramiko reports -1 when the channel closed without an exit status
        status = self._channel.recv_exit_status() if self._channel.exit_status_ready() else -1
        if status == 0:
            return None
        if status > 0:
            return CommandFailed(self.command, status, self._stderr_tail())
        return ConnectionLost("Connection to the host lost",
                              f"The stream `{_short(self.command)}` ended without an exit status.",
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
        self._connection._forget_channel(self._channel)
        self._channel.close()


# --- the connection ---------------------------------------------------------------------------


class SshConnection:
    """A logged-in SSH connection to one host (create with `SshConnection.connect`).

    Not thread-safe for concurrent operations: run them one at a time on the host's worker. The
    exceptions are `close()`, `ExecStream.recv` (its own reader thread) and the keepalive thread,
    which may all run alongside.
    """

    def __init__(self, target: SshTarget, client: paramiko.SSHClient, host_key: KnownHostKey,
                 jump: SshConnection | None, login: _LoginAttempts,
                 on_lost: Callable[[ConnectionLost], None] | None) -> None:
        self.target = target
        self.host_key = host_key
        self._client = client
        self._jump = jump
        self._login = login
        self._on_lost = on_lost
        self._lock = threading.Lock()
        self._ping_lock = threading.Lock()
        self._channels: set[paramiko.Channel] = set()
        self._sftp: paramiko.SFTPClient | None = None
        self._closed = False
        self.lost_error: ConnectionLost | None = None
        self._keepalive_stop: threading.Event | None = None

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
            elif target.proxy_command:
                sock = _proxy_command(target)
            else:
                sock = _dial(target, timeout)
        except BaseException:
            if jump is not None:
                jump.close()
            raise

        client = paramiko.SSHClient()
        policy = RefuseUnverifiedHostKey(known_hosts, target.hostname, target.port)
        client.set_missing_host_key_policy(policy)
        login = _LoginAttempts(target, ask_secret, use_agent)
        known_types = known_hosts.known_key_types(target.hostname, target.port)

        def make_transport(sock: object, **kwargs: object) -> paramiko.Transport:
            transport = paramiko.Transport(sock, **kwargs)
            options = transport.get_security_options()
            options.key_types = preferred_key_types(known_types, tuple(options.key_types))
            return transport

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
            login.close()
            client.close()
            _close_quietly(sock)
            if jump is not None:
                jump.close()
            if isinstance(exc, UserError | KeyboardInterrupt):
                raise
            raise _handshake_error(target, exc, timeout) from exc
        login.close()  # the agent is needed only to sign the login
        return cls(target, client, policy.verdict, jump, login, on_lost)

    def _open_tunnel(self, target: SshTarget, timeout: float) -> paramiko.Channel:
        """A direct-tcpip channel to target through this (jump) connection."""
        with self._guard(timeout + 1.0, f"reaching {target.hostname} through {self.target.hostname}"):
            try:
                return self._transport.open_channel(
                    "direct-tcpip", (target.hostname, target.port), ("127.0.0.1", 0), timeout=timeout)
            except paramiko.ChannelException as exc:
                raise HostUnreachable(
                    "Host unreachable",
                    f"The jump host {self.target.describe()} could not reach {target.hostname}:"
                    f"{target.port} ({exc.text}).",
                    "Check the host name and port as seen from the jump host.") from exc

    # state -----------------------------------------------------------------------------------

    @property
    def _transport(self) -> paramiko.Transport:
        transport = self._client.get_transport()
        if transport is None or self._closed:
            raise self.lost_error or ConnectionLost(
                "Not connected", f"The connection to {self.target.describe()} is closed.", "Reconnect.")
        return transport

    @property
    def closed_by_us(self) -> bool:
        """True after `close()` was called deliberately (not after the connection broke)."""
        return self._closed and self.lost_error is None

    @property
    def is_open(self) -> bool:
        transport = self._client.get_transport()
        return not self._closed and transport is not None and transport.is_active()

    # guarded waits ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _guard(self, timeout: float, what: str) -> Iterator[None]:
        """Bound a blocking paramiko call: if the peer has not answered by `timeout`, tear the
        connection down, which wakes the call with an error that becomes `ConnectionLost`."""
        def expire() -> None:
            self._fail(ConnectionLost(
                "Host stopped answering",
                f"{self.target.describe()} did not answer within {timeout:g} s while {what}.",
                "The host may be frozen, asleep or cut off; reconnect when it is back."))

        timer = threading.Timer(timeout, expire)
        timer.daemon = True
        timer.start()
        try:
            yield
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise self._broken(exc, what) from exc
        finally:
            timer.cancel()

    def _broken(self, exc: BaseException, what: str) -> ConnectionLost:
        """The ConnectionLost for a low-level failure: the recorded cause if we tore down, else a new one."""
        if self.lost_error is None:
            self._fail(ConnectionLost(
                "Connection to the host lost",
                f"The connection to {self.target.describe()} broke while {what} ({exc or type(exc).__name__}).",
                "Reconnect when the host is reachable again."))
        assert self.lost_error is not None
        return self.lost_error

    def _fail(self, error: ConnectionLost) -> None:
        """Record why the connection died, destroy it, and tell `on_lost` (exactly once)."""
        with self._lock:
            if self.lost_error is not None or self._closed:
                return
            self.lost_error = error
        self.close()
        if self._on_lost is not None:
            self._on_lost(error)

    def _forget_channel(self, channel: paramiko.Channel) -> None:
        with self._lock:
            self._channels.discard(channel)

    # operations ------------------------------------------------------------------------------

    def exec(self, command: str, input: bytes | None = None, timeout: float = 30.0,
             check: bool = False) -> ExecResult:
        """Run `command`, feed it `input` (small payloads), and collect its output and exit status.

        Past `timeout` the command is abandoned: `CommandTimedOut` if the host still answers a
        keepalive, otherwise `ConnectionLost` (and the connection is torn down). With `check`, a
        non-zero exit raises `CommandFailed`.
        """
        deadline = time.monotonic() + timeout
        channel = self._start(command, timeout)
        out, err = io.BytesIO(), io.BytesIO()
        try:
            if input:
                with self._guard(max(deadline - time.monotonic(), 0.1), "sending input"):
                    channel.sendall(input)
            with self._guard(timeout + 5.0, "running a command"):  # backstop; the loop below ends first
                channel.shutdown_write()
                self._collect(channel, out, err, deadline)
        finally:
            self._forget_channel(channel)
            channel.close()
        if not channel.exit_status_ready():
            if self.lost_error is not None:
                raise self.lost_error
            self.check_alive(timeout=min(5.0, max(timeout, 1.0)))
            raise CommandTimedOut("Command timed out", f"`{_short(command)}` did not finish within {timeout:g} s.",
                                  "The host is answering but the command is slow or stuck; try again.")
        result = ExecResult(channel.recv_exit_status(), out.getvalue(), err.getvalue())
        if check and result.exit_status != 0:
            raise CommandFailed(command, result.exit_status, result.stderr.decode("utf-8", errors="replace"))
        return result

    def _start(self, command: str, timeout: float) -> paramiko.Channel:
        with self._guard(timeout + 1.0, "starting a command"):
            try:
                channel = self._transport.open_session(timeout=timeout)
            except paramiko.ChannelException as exc:
                raise SshError("The host refused a new session",
                               f"{self.target.describe()} refused to start `{_short(command)}` ({exc.text}).",
                               "The host may limit sessions per connection; reconnect.") from exc
            with self._lock:
                self._channels.add(channel)
            channel.exec_command(command)
        return channel

    @staticmethod
    def _collect(channel: paramiko.Channel, out: io.BytesIO, err: io.BytesIO, deadline: float) -> None:
        fd = channel.fileno()  # a pipe paramiko signals on data, EOF and close
        while True:
            while channel.recv_ready():
                out.write(channel.recv(65536))
            while channel.recv_stderr_ready():
                err.write(channel.recv_stderr(65536))
            if channel.closed or (channel.eof_received and channel.exit_status_ready()):
                if not channel.recv_ready() and not channel.recv_stderr_ready():
                    return
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            select.select([fd], [], [], min(remaining, 0.2))

    def open_exec_channel(self, command: str, timeout: float = 10.0) -> ExecStream:
        """Start a long-running command and return its stream (stdin/stdout); see `ExecStream`."""
        channel = self._start(command, timeout)
        channel.settimeout(None)
        return ExecStream(channel, self, command)

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
                data = Path(source).read_bytes()
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
            raise self._broken(exc, what) from exc
        except OSError as exc:  # an SFTP status (no such folder, permission denied, disk full)
            if self.lost_error is not None or not self.is_open:
                raise self._broken(exc, what) from exc
            raise SshError("Upload failed", f"Could not write {remote_path} on the host: "
                           f"{exc.strerror or exc}.",
                           "Check the folder exists on the host, its permissions, and free space.") from exc
        if total == 0 and progress is not None:
            progress(0, 0)
        return total

    def _open_sftp(self, timeout: float) -> paramiko.SFTPClient:
        if self._sftp is None:
            with self._guard(timeout, "starting SFTP"):
                sftp = self._client.open_sftp()
            channel = sftp.get_channel()
            assert channel is not None
            with self._lock:
                self._channels.add(channel)
            self._sftp = sftp
        channel = self._sftp.get_channel()
        assert channel is not None
        channel.settimeout(timeout)
        return self._sftp

    def remote_mode(self, remote_path: str, timeout: float = 10.0) -> int:
        """Permission bits of a remote file (as `stat.S_IMODE`)."""
        with self._guard(timeout, f"checking {remote_path}"):
            attrs = self._open_sftp(timeout).stat(remote_path)
        return stat.S_IMODE(attrs.st_mode or 0)

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
        self._fail(error)
        raise self.lost_error or error

    def set_keepalive(self, enabled: bool, interval: float = 3.0, reply_timeout: float = 6.0) -> None:
        """Watch the peer (on) or stay silent on the wire (off, for a host that should fall asleep).

        On: every `interval` s a keepalive that expects a reply; none within `reply_timeout` tears the
        connection down and calls `on_lost`, so a dead peer is noticed within interval + reply_timeout.
        """
        with self._lock:
            if self._keepalive_stop is not None:
                self._keepalive_stop.set()
                self._keepalive_stop = None
            if not enabled or self._closed:
                return
            stop = self._keepalive_stop = threading.Event()

        def watch() -> None:
            while not stop.wait(interval):
                try:
                    self.check_alive(reply_timeout)
                except ConnectionLost:
                    return

        threading.Thread(target=watch, name=f"ssh-keepalive-{self.target.hostname}", daemon=True).start()

    # teardown --------------------------------------------------------------------------------

    def close(self) -> None:
        """Destroy everything tied to this connection: keepalive, channels, sftp, transport, jump.

        Safe from any thread, idempotent, and never waits on the peer (the transport is closed first,
        which ends every channel and wakes every reader locally).
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._keepalive_stop is not None:
                self._keepalive_stop.set()
                self._keepalive_stop = None
            channels = list(self._channels)
            self._channels.clear()
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


# --- helpers ----------------------------------------------------------------------------------


def _dial(target: SshTarget, timeout: float) -> socket.socket:
    where = f"{target.hostname}:{target.port}"
    started = time.monotonic()
    try:
        return socket.create_connection((target.hostname, target.port), timeout=timeout)
    except socket.gaierror as exc:
        raise HostUnreachable("Host not found", f"The name {target.hostname!r} could not be resolved "
                              f"({exc.strerror}).", "Check the host name or your network.") from exc
    except ConnectionRefusedError as exc:
        raise HostUnreachable("Connection refused", f"Nothing accepts SSH connections at {where}.",
                              "Check the port, and that the SSH server runs on the host.") from exc
    except TimeoutError as exc:
        raise HostUnreachable("Host not answering", f"{where} did not answer within {timeout:g} s.",
                              "The host may be off, asleep, or behind a firewall.") from exc
    except OSError as exc:
        if local_network.looks_blocked_by_privacy(exc, target.hostname, target.port, time.monotonic() - started):
            raise HostUnreachable(local_network.BLOCKED_TITLE, local_network.BLOCKED_MESSAGE.format(where=where),
                                  local_network.BLOCKED_HINT) from exc
        raise HostUnreachable("Host unreachable", f"Could not reach {where}: {exc.strerror or exc}.",
                              "Check your network connection and the host address.") from exc


def _proxy_command(target: SshTarget) -> paramiko.ProxyCommand:
    assert target.proxy_command is not None
    try:
        return paramiko.ProxyCommand(target.proxy_command)
    except (paramiko.ProxyCommandFailure, OSError) as exc:
        raise HostUnreachable("ProxyCommand failed", f"The ProxyCommand for {target.alias} could not start "
                              f"({exc}).", "Check the ProxyCommand line in ~/.ssh/config.") from exc


def _handshake_error(target: SshTarget, exc: BaseException, timeout: float) -> SshError:
    if isinstance(exc, paramiko.AuthenticationException):
        return AuthFailed("Login refused", f"{target.describe()} refused the login ({exc}).",
                          "Check the user name and key for this host.")
    if isinstance(exc, TimeoutError | socket.timeout):
        return HostUnreachable("Host not answering", f"{target.describe()} did not complete the SSH "
                               f"handshake within {timeout:g} s.", "The host may be overloaded or asleep.")
    return HostUnreachable(
        "SSH handshake failed",
        f"{target.describe()} did not complete an SSH handshake ({exc or type(exc).__name__}).",
        "Check that this address and port lead to an SSH server.")


def _close_quietly(sock: object) -> None:
    close = getattr(sock, "close", None)
    if callable(close):
        with contextlib.suppress(Exception):
            close()
