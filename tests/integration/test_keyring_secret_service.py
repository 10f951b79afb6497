"""Secrets in a real Secret Service: gnome-keyring on a private D-Bus session (tests/fixtures/secret_service.py).

This is the keyring a Linux desktop user has (the macOS Keychain is reached through the same `keyring`
package and cannot run here). The in-memory keyring stays for unit tests; these tests show the app's own
`CredentialStore` and the `workroom` CLI storing, using and forgetting secrets in the real thing, logging in
to the real sshd with a passphrase that lives only there, and refusing — never writing plain text — when
the bus has no Secret Service or its collection is locked.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures import secret_service
from workroom.core.errors import ExitCode
from workroom.core.questions import SecretRequest
from workroom.credentials import CredentialKey, CredentialStore

pytestmark = [pytest.mark.integration, pytest.mark.slow,
              pytest.mark.linux(reason="a Secret Service (gnome-keyring on D-Bus)")]

PASSPHRASE = "correct horse battery staple 7f3a"
WORKROOM = [sys.executable, "-m", "workroom.cli"]


def _session(**kind: bool) -> Iterator[secret_service.SecretServiceSession]:
    missing = secret_service.available()
    if missing:
        pytest.skip(missing)
    session = secret_service.start(**kind)
    try:
        yield session
    finally:
        secret_service.stop(session)


@pytest.fixture
def keyring_session() -> Iterator[secret_service.SecretServiceSession]:
    """gnome-keyring with an unlocked login collection on a private bus."""
    yield from _session()


@pytest.fixture
def bare_bus() -> Iterator[secret_service.SecretServiceSession]:
    """A private session bus with no Secret Service on it."""
    yield from _session(keyring=False)


@pytest.fixture
def locked_keyring() -> Iterator[secret_service.SecretServiceSession]:
    """gnome-keyring whose login collection is locked (no one can type its password here)."""
    yield from _session(unlock=False)


def _secret_service_store(session: secret_service.SecretServiceSession,
                          monkeypatch: pytest.MonkeyPatch) -> CredentialStore:
    """The app's store over keyring's SecretService backend, on the test's bus (secretstorage reads the
    address from the environment on every call, so a fresh backend per store sees only this bus)."""
    import keyring.backends.SecretService

    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", session.address)
    return CredentialStore(backend=keyring.backends.SecretService.Keyring())


def run_cli(session: secret_service.SecretServiceSession, *args: str,
            stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`workroom ARGS` on the session's bus."""
    return subprocess.run([*WORKROOM, *args], input=stdin, capture_output=True, text=True, timeout=90,
                          env=session.env(WORKROOM_HOME=str(session.home / "workroom")))


def test_the_store_keeps_reads_and_forgets_secrets_in_gnome_keyring(keyring_session, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    passphrase = CredentialKey.of(SecretRequest.passphrase("/home/dev/.ssh/id_ed25519"))
    password = CredentialKey.of(SecretRequest.password("dev", "box.example", 2222))
    store = _secret_service_store(keyring_session, monkeypatch)
    assert store.get(passphrase) is None
    store.set(passphrase, PASSPHRASE)
    store.set(password, "pw-" + PASSPHRASE)

    # A second store (its own backend and D-Bus connections) reads what the daemon holds, not a cache.
    again = _secret_service_store(keyring_session, monkeypatch)
    assert again.backend_name() == "keyring.backends.SecretService.Keyring"
    assert again.get(passphrase) == PASSPHRASE
    assert again.get(password) == "pw-" + PASSPHRASE
    assert keyring_session.files_containing(PASSPHRASE) == [], "the keyring file on disk is encrypted"

    again.delete(passphrase)
    again.delete(passphrase)  # forgetting twice is not an error
    assert store.get(passphrase) is None
    assert store.get(password) == "pw-" + PASSPHRASE
    store.delete(password)
    assert again.get(password) is None


@pytest.fixture
def locked_key(sshd, keyring_session) -> Iterator[Path]:  # type: ignore[no-untyped-def]
    """A passphrase-protected key the test sshd accepts, in the keyring session's HOME."""
    key = keyring_session.home / "id_locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", PASSPHRASE, "-f", str(key)], check=True)
    auth = sshd.home / ".ssh" / "authorized_keys"
    original = auth.read_text()
    auth.write_text(original + key.with_suffix(".pub").read_text())
    yield key
    auth.write_text(original)


def test_ssh_login_with_a_passphrase_only_in_gnome_keyring(sshd, keyring_session, locked_key,  # type: ignore[no-untyped-def]
                                                           monkeypatch) -> None:
    _cli = run_cli
    added = _cli(keyring_session, "hosts", "add", "locked", "--provider", "ssh", "--host", sshd.host,
                 "--port", str(sshd.port), "--user", sshd.user, "--identity", str(locked_key), "--candidates", "user")
    assert added.returncode == 0, added.stderr

    # Nothing stored yet: the login says it needs a passphrase (the CLI cannot ask).
    first = _cli(keyring_session, "connect", "locked", "--trust-new-host-key", "--timeout", "60")
    assert first.returncode != 0
    assert "passphrase" in first.stderr

    stored = _cli(keyring_session, "secret", "set", "--passphrase", str(locked_key), stdin=PASSPHRASE + "\n")
    assert stored.returncode == 0, stored.stderr
    assert "keyring.backends.SecretService.Keyring" in stored.stdout  # found by keyring's own discovery

    connected = _cli(keyring_session, "connect", "locked", "--timeout", "60")
    assert connected.returncode == 0, connected.stderr
    assert "locked" in connected.stdout
    assert keyring_session.files_containing(PASSPHRASE) == []

    # A wrong stored passphrase: the key refuses it, the login fails, and the keyring forgets it.
    wrong = "not the passphrase 51c2"
    assert _cli(keyring_session, "secret", "set", "--passphrase", str(locked_key), stdin=wrong + "\n").returncode == 0
    store = _secret_service_store(keyring_session, monkeypatch)
    assert store.get(CredentialKey.passphrase(str(locked_key))) == wrong
    refused = _cli(keyring_session, "connect", "locked", "--timeout", "60")
    assert refused.returncode != 0
    assert "not accepted" in refused.stderr
    assert store.get(CredentialKey.passphrase(str(locked_key))) is None


def test_no_secret_service_on_the_bus_refuses_and_writes_nothing(bare_bus) -> None:  # type: ignore[no-untyped-def]
    key_file = bare_bus.home / "id_any"
    stored = run_cli(bare_bus, "secret", "set", "--passphrase", str(key_file), stdin=PASSPHRASE + "\n")
    assert stored.returncode == ExitCode.NO_KEYRING, stored.stderr
    assert "No secure keyring" in stored.stderr
    assert "Traceback" not in stored.stderr
    password = run_cli(bare_bus, "secret", "set", "--password", "dev@box.example:22", stdin=PASSPHRASE + "\n")
    assert password.returncode == ExitCode.NO_KEYRING
    assert bare_bus.files_containing(PASSPHRASE) == []


def test_a_locked_collection_refuses_and_writes_nothing(locked_keyring) -> None:  # type: ignore[no-untyped-def]
    key_file = locked_keyring.home / "id_any"
    stored = run_cli(locked_keyring, "secret", "set", "--passphrase", str(key_file), stdin=PASSPHRASE + "\n")
    assert stored.returncode == ExitCode.NO_KEYRING, stored.stderr
    assert "Keyring is locked" in stored.stderr
    assert "Traceback" not in stored.stderr
    assert locked_keyring.files_containing(PASSPHRASE) == []
