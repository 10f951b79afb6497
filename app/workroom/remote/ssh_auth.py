"""Logging in: which keys and secrets are tried, in which order, and how a refusal is explained.

The app answers secret requests from the keyring or asks the user; this module never stores one.
"""

from __future__ import annotations

import base64
import binascii
import functools
import socket
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import paramiko
from paramiko.agent import AgentKey, AgentSSH
from paramiko.auth_strategy import AuthSource, AuthStrategy
from paramiko.pkey import PublicBlob, UnknownKeyType

from workroom.core.errors import UserError
from workroom.core.questions import SecretRequest
from workroom.regular_file import read_regular_file
from workroom.remote.host_keys import fingerprint
from workroom.remote.ssh_config import SshTarget
from workroom.remote.ssh_errors import LOGIN_REFUSED_HINT, AuthFailed, HostUnreachable, LoginInterrupted, SshError

__all__ = ["AskSecret", "LoginAttempts", "SecretRequest", "agent_at"]

AGENT_TIMEOUT_SECONDS = 5.0


AskSecret = Callable[[SecretRequest], str | None]


class LoginAttempts(AuthStrategy):
    """Our login order, OpenSSH's: agent keys (only those named by IdentityFile under IdentitiesOnly),
    then key files (asking for a passphrase only when one is needed; a certificate first when one
    matches), then a password if the server accepts passwords and the caller can supply one.

    Unlike paramiko's own, it first asks the server which methods it accepts, so the user is never
    asked for a password the server would not take; it tells a real refusal (final) from a connection
    that dropped mid-login (worth retrying); and it explains failures in plain words.
    """

    def __init__(self, target: SshTarget, ask_secret: AskSecret | None, use_agent: bool) -> None:
        super().__init__(ssh_config=None)  # type: ignore[arg-type]  # paramiko's own sources use it; ours do not
        self.target = target
        self.ask_secret = ask_secret
        self.use_agent = use_agent and target.identity_agent is not None
        self.agent: _AgentAt | None = None
        self.tried: list[str] = []
        self.timed_out = False
        self.refused = False  # the server answered an attempt with "no"
        self.dropped = False  # the transport died under an attempt
        self.problems: list[str] = []
        self.rejected_secret: SecretRequest | None = None
        self.transport_seen: paramiko.Transport | None = None

    def get_sources(self) -> Iterator[AuthSource]:
        """Unused: `authenticate` is ours, not paramiko's source-by-source loop."""
        return iter(())

    def authenticate(self, transport: paramiko.Transport) -> list[str]:  # type: ignore[override]
        self.transport_seen = transport
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
                    self.dropped = True
                    break
                self.tried.append(label)
                if self._attempt(transport, functools.partial(transport.auth_publickey, user, key)):
                    return []
        if "password" in allowed and self.ask_secret is not None and transport.is_active():
            request = SecretRequest.password(self.target.user, self.target.hostname, self.target.port,
                                             where=self.target.describe())
            password = self._ask(request, "a password")
            if password is not None:
                self.tried.append("password")
                if self._attempt(transport, lambda: transport.auth_password(user, password)):
                    return []
                if self.refused:
                    self.rejected_secret = request
        if not transport.is_active():
            self.dropped = True
        raise self._failure(allowed, transport.is_active())

    def _ask(self, request: SecretRequest, what: str) -> str | None:
        """The caller's answer, or None; a secret store that cannot answer is noted, not fatal here."""
        assert self.ask_secret is not None
        try:
            return self.ask_secret(request)
        except UserError as exc:
            self.problems.append(f"{what} could not be asked for: {exc.title.lower()} ({exc.message})")
            return None

    def _attempt(self, transport: paramiko.Transport, call: Callable[[], object]) -> bool:
        try:
            remaining = call()
        except paramiko.AuthenticationException:
            # paramiko says "Authentication failed" both for a "no" and for a connection that died while
            # it waited for the answer; only a live connection, or a server that said goodbye, refused.
            if transport.is_active() or getattr(transport, "peer_disconnect", None) is not None:
                self.refused = True
            else:
                self.dropped = True
            return False
        except (paramiko.SSHException, EOFError, OSError) as exc:  # the agent could not sign, or a hang-up
            if "timeout" in str(exc).lower():
                self.timed_out = True  # slow (a waking box, a busy sshd), not refused: worth retrying
            if not transport.is_active():
                self.dropped = True
            return False
        if remaining:  # partial success: the server wants a second factor
            self.refused = True
            self.problems.append(f"the server asks for more ({remaining}), which workroom cannot provide")
            return False
        return True

    def _keys(self) -> Iterator[tuple[str, paramiko.PKey]]:
        """Keys in OpenSSH's order: the agent's (each IdentityFile's own first in agent order), then the
        files not in the agent. Under IdentitiesOnly only agent keys named by an IdentityFile (or
        certified by a CertificateFile)."""
        wanted = {path: _public_blob(path) for path in self.target.identity_files}
        certificates = [c for c in self._certificate_paths() if c.exists()]
        in_agent: set[Path] = set()
        for key in self._agent_keys():
            blob = key.asbytes()
            named = [path for path, pub in wanted.items() if pub == blob]
            in_agent.update(named)
            certified = [(cert, c) for cert in certificates if (c := _agent_key_with_certificate(key, cert))]
            if named or certified or not self.target.identities_only:
                for cert, with_cert in certified:  # the agent signs, the certificate vouches (Vault-style)
                    yield f"agent key {fingerprint(key)} with certificate {cert}", with_cert
                yield f"agent key {fingerprint(key)}", key
        for path in self.target.identity_files:
            if path in in_agent:
                continue
            if path.suffix == ".pub":
                if path.exists():
                    self.problems.append(f"{path} is a public key and its private half is not in the agent")
                continue
            if not path.exists():
                continue
            loaded = self._load(path)
            if loaded is None:
                continue
            key, passphrase = loaded
            for cert in certificates:
                file_key_with_cert = _with_certificate(path, passphrase, key, cert)
                if file_key_with_cert is not None:
                    yield f"{path} with certificate {cert}", file_key_with_cert
            yield f"{path} ({fingerprint(key)})", key

    def _certificate_paths(self) -> list[Path]:
        """CertificateFile entries, then `<key>-cert.pub` beside each IdentityFile, as ssh loads them."""
        paths = list(self.target.certificate_files)
        for path in self.target.identity_files:
            stem = path.with_suffix("") if path.suffix == ".pub" else path
            paths.append(stem.with_name(stem.name + "-cert.pub"))
        return list(dict.fromkeys(paths))

    def _agent_keys(self) -> list[paramiko.PKey]:
        if not self.use_agent or self.target.identity_agent is None:
            return []
        try:
            self.agent = agent_at(self.target.identity_agent)
            return list(self.agent.get_keys())
        except (paramiko.SSHException, OSError) as exc:
            self.problems.append(f"the agent at {self.target.identity_agent} did not answer ({exc})")
            return []

    def _load(self, path: Path) -> tuple[paramiko.PKey, bytes | None] | None:
        # paramiko opens the file with a plain open(), which waits for ever on a FIFO: look first.
        try:
            regular = stat.S_ISREG(path.stat().st_mode)
        except OSError as exc:
            self.problems.append(f"{path} could not be read ({exc.strerror or exc})")
            return None
        if not regular:
            self.problems.append(f"{path} is not a regular file (a FIFO, device or socket is in its place)")
            return None
        try:
            return paramiko.PKey.from_path(path), None
        except TypeError as exc:  # paramiko's way of saying "encrypted, no passphrase given"
            if "password" not in str(exc).lower():
                self.problems.append(f"{path} could not be read ({exc})")
                return None
        except (ValueError, OSError, paramiko.SSHException, UnknownKeyType) as exc:
            self.problems.append(f"{path} is not a private key paramiko can read ({exc})")
            return None
        request = SecretRequest.passphrase(str(path))
        passphrase = None
        if self.ask_secret is not None:
            passphrase = self._ask(request, f"the passphrase for {path}")
        if passphrase is None:
            self.problems.append(f"{path} needs a passphrase and none was available")
            return None
        try:
            secret = passphrase.encode("utf-8")
            return paramiko.PKey.from_path(path, secret), secret  # type: ignore[arg-type]  # bytes work
        except (TypeError, ValueError, paramiko.SSHException) as exc:
            self.problems.append(f"the passphrase for {path} was not accepted ({exc})")
            self.rejected_secret = request
            return None

    def _failure(self, allowed: list[str], still_connected: bool) -> SshError:
        where = self.target.describe()
        if self.timed_out:
            return HostUnreachable(
                "Login timed out",
                f"{where} did not finish the login in time.",
                "The host may be waking up or overloaded; the app tries again.")
        if self.dropped and not self.refused:
            return LoginInterrupted(
                "Connection dropped while logging in",
                f"{where} closed the connection before it accepted or refused a key.",
                "The host may still be starting its SSH server (after a wake or a reboot); the app tries again.")
        if self.tried:
            message = f"{where} did not accept user {self.target.user!r} with {', '.join(self.tried)}."
        else:
            message = f"No key was available to log in to {where} as {self.target.user!r}."
        if self.problems:
            message += " Also: " + "; ".join(self.problems) + "."
        if not still_connected:
            goodbye = getattr(self.transport_seen, "peer_disconnect", None)
            reason = f": {goodbye[1]}" if goodbye and goodbye[1] else " (too many attempts?)"
            message += f" The server closed the connection{reason}."
        if "publickey" not in allowed:
            message += f" The server only accepts: {', '.join(allowed) or 'nothing'}."
        return AuthFailed("Login refused", message, LOGIN_REFUSED_HINT, rejected_secret=self.rejected_secret)

    def close(self) -> None:
        if self.agent is not None:
            self.agent.close()
            self.agent = None


class _AgentAt(AgentSSH):
    """An agent reached at a given socket path (IdentityAgent), not only at $SSH_AUTH_SOCK."""

    def __init__(self, path: str) -> None:
        super().__init__()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(AGENT_TIMEOUT_SECONDS)
        try:
            sock.connect(path)
            self._connect(sock)  # type: ignore[attr-defined]  # paramiko's agent plumbing is private
        except BaseException:
            sock.close()
            raise

    def close(self) -> None:
        self._close()  # type: ignore[attr-defined]


def agent_at(path: str) -> _AgentAt:
    """Connect to the SSH agent listening at `path`; raises OSError or SSHException."""
    return _AgentAt(path)


def _public_blob(path: Path) -> bytes | None:
    """The public key blob for an IdentityFile: the file itself if it is a .pub, else `<file>.pub`."""
    pub = path if path.suffix == ".pub" else path.with_name(path.name + ".pub")
    try:
        fields = read_regular_file(pub, None).decode("utf-8").split()
        return base64.b64decode(fields[1], validate=True) if len(fields) >= 2 else None
    except (OSError, UnicodeDecodeError, binascii.Error, ValueError):
        return None


def _certificate(cert: Path) -> PublicBlob | None:
    """The certificate in `cert`, read once and never waiting on a FIFO; None when it cannot be read."""
    try:
        return PublicBlob.from_string(read_regular_file(cert, None).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _with_certificate(path: Path, passphrase: bytes | None, key: paramiko.PKey,
                      cert: Path) -> paramiko.PKey | None:
    """A second copy of the key carrying `cert`, if `cert` certifies this very key; else None."""
    blob = _certificate(cert)
    if blob is None:
        return None
    if not _certifies(blob.key_blob, key.asbytes()):
        return None
    try:
        copy = paramiko.PKey.from_path(path, passphrase)  # type: ignore[arg-type]  # bytes work
        copy.load_certificate(paramiko.Message(blob.key_blob))  # the bytes read above, not the path again
    except (OSError, ValueError, TypeError, paramiko.SSHException):
        return None
    return copy


def _agent_key_with_certificate(key: paramiko.PKey, cert: Path) -> paramiko.PKey | None:
    """A second handle on an agent key carrying `cert`, if `cert` certifies that key; else None."""
    blob = _certificate(cert)
    if blob is None:
        return None
    if not isinstance(key, AgentKey) or not _certifies(blob.key_blob, key.asbytes()):
        return None
    copy = AgentKey(key.agent, key.asbytes(), key.comment)
    try:
        copy.load_certificate(paramiko.Message(blob.key_blob))  # the bytes read above, not the path again
    except (OSError, ValueError):
        return None
    return copy


def _certifies(cert_blob: bytes, key_blob: bytes) -> bool:
    """A certificate is (type, nonce, the key's own public fields, ...); a key is (type, fields)."""
    try:
        cert = paramiko.Message(cert_blob)
        cert.get_string()
        cert.get_string()
        key = paramiko.Message(key_blob)
        key.get_string()
        return cert_blob[cert.packet.tell():].startswith(key_blob[key.packet.tell():])
    except (EOFError, IndexError, ValueError):
        return False
