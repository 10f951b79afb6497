"""The one place secrets live: SSH key passphrases and passwords, and each agent's key (what it proves who it is
with: providers/agent_keys.py), in the system keyring.

Lazy (the keyring backend is found on first use, since unlocking it can block and must not
happen at import), locked (one backend lookup, no interleaved calls), with typed errors. If no
usable keyring exists we say so and refuse: there is no plaintext fallback, ever.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from workroom.core.errors import ExitCode, UserError
from workroom.core.questions import SecretKind, SecretRequest

SERVICE_NAME = "workroom-companion"
WAIT_SAID_SECONDS = 1.0
"""A keyring call that has not answered in this long is said (`CredentialStore.on_wait`): a system dialog (unlock,
"choose a password for the new keyring", the Keychain's sheet) may be waiting for the person."""

_REFUSED_BACKENDS = {
    ("keyring.backends.fail", "Keyring"),
    ("keyring.backends.null", "Keyring"),
    ("keyrings.alt.file", "PlaintextKeyring"),
}
"""Backends that are not a real secret store (or store secrets in plain text)."""


class CredentialError(UserError):
    """Reading or writing a secret failed (the keyring is locked or failing): nothing was stored or read."""

    exit_code = ExitCode.NO_KEYRING


class KeyringUnavailableError(CredentialError):
    """No usable (non-plaintext) keyring on this computer."""

    def __init__(self, found: str) -> None:
        super().__init__(
            "No secure keyring",
            f"This computer has no usable system keyring (found: {found}), so the app will not store "
            "passphrases or passwords; it never saves them in plain text.",
            "Use ssh-agent or a key without a passphrase, or install a keyring service "
            "(e.g. GNOME Keyring or KWallet) and restart the app.",
        )


class AppSecret(StrEnum):
    """Secrets the app keeps for itself: never asked of the user, never typed."""

    AGENT_KEY = "agent-key"
    """The key a host's agent proves who it is with; the subject names the host and what it was bound to."""


@dataclass(frozen=True)
class CredentialKey:
    """Which secret: a kind and what it belongs to. Never holds the secret."""

    kind: SecretKind | AppSecret
    subject: str

    def __post_init__(self) -> None:
        if not self.subject or "\n" in self.subject or "\x00" in self.subject:
            raise ValueError(f"a credential subject must be a non-empty single line, got {self.subject!r}")

    @property
    def username(self) -> str:
        """The keyring 'username' this secret is filed under."""
        return f"{self.kind.value}:{self.subject}"

    @classmethod
    def of(cls, request: SecretRequest) -> CredentialKey:
        """Where the secret a login asked for is filed."""
        return cls(request.kind, request.subject)

    @classmethod
    def passphrase(cls, key_path: str) -> CredentialKey:
        return cls.of(SecretRequest.passphrase(key_path))

    @classmethod
    def password(cls, user: str, host: str, port: int = 22) -> CredentialKey:
        return cls.of(SecretRequest.password(user, host, port))

    @classmethod
    def agent_key(cls, host_name: str, binding: str) -> CredentialKey:
        return cls(AppSecret.AGENT_KEY, f"{host_name}#{binding}")


def _backend_id(backend: object) -> tuple[str, str]:
    cls = type(backend)
    return cls.__module__, cls.__qualname__


def _usable(backend: object) -> bool:
    if _backend_id(backend) in _REFUSED_BACKENDS:
        return False
    children = getattr(backend, "backends", None)
    if _backend_id(backend) == ("keyring.backends.chainer", "ChainerBackend"):
        return bool(children) and any(_usable(child) for child in children or ())
    priority = getattr(backend, "priority", 1)
    try:
        return float(priority) > 0
    except (TypeError, ValueError):
        return True


class CredentialStore:
    """Get, set and delete secrets in the keyring.

    Thread-safe; calls may block on a keyring unlock, so run them off the GUI thread.
    """

    def __init__(self, service: str = SERVICE_NAME, backend: object | None = None) -> None:
        self._service = service
        self._backend = backend
        self._lock = threading.Lock()
        self.on_wait: Callable[[bool], None] | None = None
        """Told True (from the calling thread's timer) when a call has waited WAIT_SAID_SECONDS on the keyring, and
        False when no call waits any more; set by the engine, which says it on every face."""
        self._waits = 0
        self._waits_lock = threading.Lock()

    def _waited(self, more: int) -> None:
        on_wait = self.on_wait
        with self._waits_lock:
            before = self._waits
            self._waits += more
            now = self._waits
        if on_wait is not None and (before == 0) != (now == 0):
            on_wait(now > 0)

    def _keyring(self) -> object:
        """The backend, found once. Caller holds the lock."""
        if self._backend is None:
            try:
                import keyring
                import keyring.errors
            except ImportError as error:  # pragma: no cover - keyring is a dependency
                raise KeyringUnavailableError(f"the keyring package is missing ({error})") from None
            try:
                backend = keyring.get_keyring()
            except Exception as error:  # keyring's discovery can fail in many backend-specific ways
                raise KeyringUnavailableError(f"keyring failed to start: {error}") from None
            if not _usable(backend):
                module, name = _backend_id(backend)
                raise KeyringUnavailableError(f"{module}.{name}")
            self._backend = backend
        if not _usable(self._backend):
            module, name = _backend_id(self._backend)
            raise KeyringUnavailableError(f"{module}.{name}")
        return self._backend

    def _call(self, action: str, key: CredentialKey, *args: str) -> str | None:
        """One keyring call (behind any other in flight); one that takes WAIT_SAID_SECONDS is said (`on_wait`)."""
        said = threading.Event()

        def say() -> None:
            said.set()
            self._waited(1)

        timer = threading.Timer(WAIT_SAID_SECONDS, say)
        timer.daemon = True
        timer.start()
        try:
            return self._call_now(action, key, *args)
        finally:
            timer.cancel()
            timer.join()  # a `say` under way has finished: its count is in before it is taken back
            if said.is_set():
                self._waited(-1)

    def _call_now(self, action: str, key: CredentialKey, *args: str) -> str | None:
        import keyring.errors

        with self._lock:
            backend = self._keyring()
            method = getattr(backend, f"{action}_password")
            try:
                result: str | None = method(self._service, key.username, *args)
            except keyring.errors.PasswordDeleteError:
                return None  # only delete raises this: already gone, and deleting is idempotent
            except keyring.errors.KeyringLocked:
                raise CredentialError(
                    "Keyring is locked",
                    f"The system keyring is locked, so the {key.kind.value} for {key.subject} "
                    "could not be used.",
                    "Unlock your keyring (log in again or open your keyring app), then retry.",
                ) from None
            except keyring.errors.KeyringError as error:
                raise CredentialError(
                    "Keyring error",
                    f"The system keyring failed to {action} the {key.kind.value} for {key.subject}: {error}.",
                    "Check that your keyring service is running, then retry.",
                ) from None
            return result

    def get(self, key: CredentialKey) -> str | None:
        """The secret, or None if none is stored."""
        return self._call("get", key)

    def set(self, key: CredentialKey, secret: str) -> None:
        if not isinstance(secret, str) or not secret:
            raise ValueError("a secret must be a non-empty string")
        self._call("set", key, secret)

    def delete(self, key: CredentialKey) -> None:
        """Forget the secret (no error if there was none)."""
        self._call("delete", key)

    def backend_name(self) -> str:
        """Which keyring is in use (for diagnostics); raises if none is usable."""
        with self._lock:
            module, name = _backend_id(self._keyring())
        return f"{module}.{name}"
