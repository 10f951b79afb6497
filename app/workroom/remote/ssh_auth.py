"""Logging in: which keys and secrets are tried, in which order, and how a refusal is explained.

The app answers secret requests from the keyring or asks the user; this module never stores one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import paramiko
from paramiko.auth_strategy import AuthStrategy

from workroom.remote.host_keys import fingerprint
from workroom.remote.ssh_config import SshTarget
from workroom.remote.ssh_errors import AuthFailed, HostUnreachable

__all__ = ["AskSecret", "LoginAttempts", "SecretRequest"]


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


class LoginAttempts(AuthStrategy):  # type: ignore[misc]
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


