"""What the engine asks a person (through whichever face is running), as typed values.

A login that reaches a host key nobody has confirmed asks `HostKeyQuestion`; a login that needs a key's
passphrase or a password asks `SecretRequest`. The desktop app's dialogs, the CLI and the keyring all take
these values: nobody reads attributes by name or splits a `"kind:subject"` string.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True)
class HostKeyQuestion:
    """A host presented a key this computer has not seen: trust it? (The fingerprint is `SHA256:...`, as
    `ssh-keygen -l` prints it.)"""

    host: str
    port: int
    key_type: str
    fingerprint: str

    @property
    def where(self) -> str:
        """`host`, or `host:port` when the port is not SSH's own."""
        return f"{self.host}:{self.port}" if self.port != 22 else self.host

    @property
    def key_words(self) -> str:
        """The key's kind with its article, as a person says it: "an Ed25519 key (ssh-ed25519)" (it read "a
        ssh-ed25519 key"); a type this table does not know is named as it is, after "a key of type"."""
        name = KEY_TYPE_NAMES.get(self.key_type)
        if name is None:
            return f"a key of type {self.key_type}"
        return f"an {name} key ({self.key_type})"


KEY_TYPE_NAMES = {
    "ssh-ed25519": "Ed25519",
    "sk-ssh-ed25519@openssh.com": "Ed25519 security",
    "ssh-rsa": "RSA",
    "rsa-sha2-256": "RSA",
    "rsa-sha2-512": "RSA",
    "ecdsa-sha2-nistp256": "ECDSA",
    "ecdsa-sha2-nistp384": "ECDSA",
    "ecdsa-sha2-nistp521": "ECDSA",
    "sk-ecdsa-sha2-nistp256@openssh.com": "ECDSA security",
}
"""Host key types by the name people use (each begins with a vowel's sound: "an")."""


class SecretKind(StrEnum):
    PASSPHRASE = "passphrase"
    """A private key file's passphrase; the subject is the key file's path."""
    PASSWORD = "password"
    """An SSH password; the subject is user@host:port."""


@dataclass(frozen=True)
class SecretRequest:
    """Which secret a login needs: its kind and what it belongs to. Never holds the secret.

    The same value names the secret in the keyring, in the question to the user, and in a refusal
    (`AuthFailed.rejected_secret`), so a wrong stored one can be forgotten.
    """

    kind: SecretKind
    subject: str
    where: str = ""
    """The login in words for the prompt (e.g. `dev@box (10.0.0.5:22)`), when not the subject itself."""

    def __post_init__(self) -> None:
        if not self.subject or "\n" in self.subject or "\x00" in self.subject:
            raise ValueError(f"a secret's subject must be a non-empty single line, got {self.subject!r}")

    @classmethod
    def passphrase(cls, key_path: str) -> SecretRequest:
        return cls(SecretKind.PASSPHRASE, key_path)

    @classmethod
    def password(cls, user: str, host: str, port: int = 22, *, where: str = "") -> SecretRequest:
        return cls(SecretKind.PASSWORD, f"{user}@{host}:{port}", where)

    @property
    def prompt(self) -> str:
        """The question in a few words: "Passphrase for ~/.ssh/id_ed25519"."""
        return f"{self.kind.value.capitalize()} for {self.where or self.subject}"
