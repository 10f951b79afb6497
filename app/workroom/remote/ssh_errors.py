"""The SSH error family, and the dial and handshake failures put into plain words.

Every failure a user may see is an `SshError` (a `UserError`: title, sentence, hint), so the app and
the CLI show it as it is, never as a Python exception.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import subprocess
import time
from typing import TYPE_CHECKING

from workroom.core.errors import ErrorKind, UserError
from workroom.core.host_text import plain
from workroom.core.questions import SecretRequest
from workroom.platform import local_network
from workroom.remote.ssh_config import SshTarget

if TYPE_CHECKING:  # paramiko loads with the first SSH connection (docs/architecture.md, start-up)
    import paramiko

__all__ = [
    "LOGIN_REFUSED_HINT",
    "AuthFailed",
    "CommandFailed",
    "CommandTimedOut",
    "ConnectionLost",
    "HostUnreachable",
    "LoginInterrupted",
    "SshError",
    "close_quietly",
    "dial",
    "handshake_error",
    "logged_command",
    "open_fdpass_proxy",
    "open_proxy_command",
]


log = logging.getLogger(__name__)

class SshError(UserError):
    """Base of every SSH failure a user may see.

    `retryable` (see UserError) says whether trying again later can help: a dead or slow transport can
    heal (a box's sshd still starting after a wake); a refusal by the server cannot.
    """


class HostUnreachable(SshError):
    """No SSH session could be set up: name, route, refused port, or not an SSH server."""


class AuthFailed(SshError):
    """The server refused every way we had to log in.

    `rejected_secret` names the secret that was tried and refused (a key's passphrase or a password), so
    the caller can drop it from the keyring and ask again.
    """

    retryable = False
    error_kind = ErrorKind.LOGIN_REFUSED  # the faces word it their own way: the app names its Key file field

    def __init__(self, title: str, message: str, hint: str = "", rejected_secret: SecretRequest | None = None) -> None:
        super().__init__(title, message, hint)
        self.rejected_secret = rejected_secret


LOGIN_REFUSED_HINT = ("Check the user name, that your public key is in ~/.ssh/authorized_keys on the host, and which "
                      "key to use (--identity FILE or IdentityFile in ~/.ssh/config).")
"""What to do about a refused login, in the command line's words (the app names its own field: core.errors)."""


class LoginInterrupted(HostUnreachable):
    """The connection dropped during the login before the server accepted or refused anything: retried."""


class CommandFailed(SshError):
    """A remote command exited non-zero (or was killed); carries its status and the end of stderr."""

    def __init__(self, command: str, exit_status: int, stderr: str) -> None:
        detail = plain(stderr.strip().splitlines()[-1], 300) if stderr.strip() else "no error output"
        logged_command(command)
        super().__init__(
            "Command failed on the host",
            f"A command the app ran on the host exited with status {exit_status}: {detail}",
            "See the host's error output above; the host may lack a program this needs.",
        )
        self.command = command
        self.exit_status = exit_status
        self.stderr = stderr


class CommandTimedOut(SshError):
    """A remote command ran past its time limit; the connection itself still answers."""


class ConnectionLost(SshError):
    """The connection broke or the peer stopped answering; everything on it has been torn down."""


def logged_command(command: str, limit: int = 300) -> None:
    """Put a command the app ran on a host in the log, where its text belongs: what a person reads names "a
    command the app ran", never the command (it is the app's machinery, and can be thousands of characters)."""
    log.info("the command was: %s", command if len(command) <= limit else command[: limit - 1] + "…")


def dial(target: SshTarget, timeout: float) -> socket.socket:
    """A TCP connection to the target's SSH port, or a `HostUnreachable` that says why not."""
    where = f"{target.hostname}:{target.port}"
    started = time.monotonic()
    try:
        sock = socket.create_connection((target.hostname, target.port), timeout=timeout)
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
    with contextlib.suppress(OSError):  # our small requests (a relay's lines) go out at once, as ssh's do
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return QuickAckSocket.of(sock) if QuickAckSocket.available else sock


class QuickAckSocket(socket.socket):
    """A TCP socket that acknowledges what it reads at once (Linux's TCP_QUICKACK, set before every read; the
    kernel clears it by itself).

    Why: sshd keeps Nagle's rule until a session starts, so a small packet it sends (the answer to a channel
    open, to a login step) waits until our ACK of its previous one; a delayed ACK is ~40 ms on Linux, and it
    came twice in every connect: in the login, and between opening the command's channel and starting it
    (seen with strace on both ends). With it: login 128 -> 78 ms, the first channel 55 -> 8 ms. The cost is
    an ACK per packet read instead of one per two: nothing while a box is idle (nothing is read then)."""

    available = hasattr(socket, "TCP_QUICKACK")

    @classmethod
    def of(cls, sock: socket.socket) -> socket.socket:
        timeout = sock.gettimeout()
        quick = cls(sock.family, sock.type, sock.proto, fileno=sock.detach())
        quick.settimeout(timeout)
        return quick

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        with contextlib.suppress(OSError):
            self.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
        return super().recv(bufsize, flags)


def open_proxy_command(target: SshTarget) -> paramiko.ProxyCommand:
    """Start the target's ProxyCommand as the connection's socket."""
    import paramiko

    assert target.proxy_command is not None
    try:
        return paramiko.ProxyCommand(target.proxy_command)
    except (paramiko.ProxyCommandFailure, OSError) as exc:
        raise HostUnreachable("ProxyCommand failed", f"The ProxyCommand for {target.alias} could not start "
                              f"({exc}).", "Check the ProxyCommand line in ~/.ssh/config.") from exc


def open_fdpass_proxy(target: SshTarget, timeout: float) -> socket.socket:
    """ProxyUseFdpass: run the ProxyCommand with a socket as its stdin and stdout; it passes back a
    connected socket (SCM_RIGHTS) and exits, and that socket is the connection, as with ssh."""
    assert target.proxy_command is not None
    ours, theirs = socket.socketpair()
    try:
        try:
            proc = subprocess.Popen(["/bin/sh", "-c", target.proxy_command], stdin=theirs.fileno(),
                                    stdout=theirs.fileno(), stderr=subprocess.DEVNULL, start_new_session=True)
        finally:
            theirs.close()
        ours.settimeout(timeout)
        try:
            _, fds, _, _ = socket.recv_fds(ours, 1, 1)
        finally:
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    except (OSError, TimeoutError) as exc:
        raise HostUnreachable("ProxyCommand failed", f"The ProxyCommand for {target.alias} did not pass back a "
                              f"connection ({exc}).", "Check the ProxyCommand and ProxyUseFdpass lines in "
                              "~/.ssh/config.") from exc
    finally:
        ours.close()
    if not fds:
        raise HostUnreachable("ProxyCommand failed", f"The ProxyCommand for {target.alias} exited (status "
                              f"{proc.returncode}) without passing back a connection.",
                              "Check the ProxyCommand and ProxyUseFdpass lines in ~/.ssh/config.")
    for extra in fds[1:]:
        os.close(extra)
    sock = socket.socket(fileno=fds[0])
    sock.settimeout(None)
    return sock


def handshake_error(target: SshTarget, exc: BaseException, timeout: float, transport: object = None) -> SshError:
    """The plain-words error for a failure during the SSH handshake. What the server said (its banner line,
    which paramiko quotes; anyone who answers on the address can say anything before any host-key check) is
    cleaned of control characters and cut before it goes into the message."""
    import paramiko

    from workroom.remote.ssh_transport import algorithm_mismatch

    mismatch = algorithm_mismatch(transport, exc)
    if mismatch is not None:
        return HostUnreachable("No common SSH algorithm", f"{target.describe()}: {plain(mismatch, 1000)}",
                               "Allow one of workroom's methods on the server (sshd_config), or connect "
                               "to a server with a current OpenSSH.")
    if isinstance(exc, paramiko.AuthenticationException):
        return AuthFailed("Login refused", f"{target.describe()} refused the login ({said(exc)}).", LOGIN_REFUSED_HINT)
    if isinstance(exc, TimeoutError | socket.timeout):
        return HostUnreachable("Host not answering", f"{target.describe()} did not complete the SSH "
                               f"handshake within {timeout:g} s.", "The host may be overloaded or asleep.")
    stalled = _stalled_handshake(target, exc, timeout, transport)
    if stalled is not None:
        return stalled
    return HostUnreachable(
        "SSH handshake failed",
        f"{target.describe()} did not complete an SSH handshake ({said(exc) or 'no further detail'}).",
        "Check that this address and port lead to an SSH server.")


def _stalled_handshake(target: SshTarget, exc: BaseException, timeout: float, transport: object) -> SshError | None:
    """A server that took the connection and then went quiet: paramiko's own words for it ("Error reading SSH
    protocol banner", or "No existing session" once its wait for the key exchange ran out) say nothing a person
    can use; this says what happened and for how long it was waited on."""
    import paramiko

    if transport is None or not isinstance(exc, paramiko.SSHException) or getattr(transport, "initial_kex_done", True):
        return None
    greeting = plain(str(getattr(transport, "remote_version", "") or ""), 100)
    timed_out = exc.args == ("No existing session",)  # its wait for the key exchange ran out first
    if not greeting:
        if "protocol banner" not in str(exc) and not timed_out:
            return None
        return HostUnreachable("Not an SSH server", f"{target.describe()} took the connection, but no SSH greeting "
                               f"came (it closed the connection, or said nothing of SSH within {timeout:g} s).",
                               "Check that this address and port lead to an SSH server; it may also be overloaded.")
    if not timed_out:
        return None
    return HostUnreachable("Host not answering", f"{target.describe()} greeted as an SSH server ({greeting}) but did "
                           f"not go on with the handshake within {timeout:g} s.",
                           "The server there may be overloaded or stuck.")


def said(exc: BaseException, limit: int = 300) -> str:
    """An exception's words as a host may have chosen them: plain text, at most `limit` characters."""
    return plain(str(exc), limit)


def close_quietly(sock: object) -> None:
    """Close a socket-like object (socket, channel, ProxyCommand) ignoring any error."""
    close = getattr(sock, "close", None)
    if callable(close):
        with contextlib.suppress(Exception):
            close()
