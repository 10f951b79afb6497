"""The credential store over keyring: round trips, typed errors, and no plaintext fallback.

Uses the in-memory keyring from tests/fixtures (the real system keyring cannot run here: no
desktop session); keyring's own fail/null backends are the real ones.
"""

from __future__ import annotations

import threading

import pytest
from fixtures.memory_keyring import DialogKeyring, MemoryKeyring
from keyring.backends import chainer, fail, null
from keyring.errors import KeyringError, KeyringLocked
from workroom.credentials import (
    SERVICE_NAME,
    CredentialError,
    CredentialKey,
    CredentialStore,
    KeyringUnavailableError,
)

pytestmark = pytest.mark.unit


def test_round_trip_with_the_session_keyring(memory_keyring: MemoryKeyring) -> None:
    store = CredentialStore()
    key = CredentialKey.passphrase("/home/dev/.ssh/id_ed25519")
    assert store.get(key) is None
    store.set(key, "correct horse")
    assert store.get(key) == "correct horse"
    assert memory_keyring.get_password(SERVICE_NAME, "passphrase:/home/dev/.ssh/id_ed25519") == "correct horse"
    store.delete(key)
    assert store.get(key) is None
    store.delete(key)  # idempotent
    assert "MemoryKeyring" in store.backend_name()


def test_keys_do_not_collide() -> None:
    store = CredentialStore(backend=MemoryKeyring())
    password = CredentialKey.password("dev", "box", 22)
    passphrase = CredentialKey.passphrase("dev@box:22")
    store.set(password, "p1")
    store.set(passphrase, "p2")
    assert (store.get(password), store.get(passphrase)) == ("p1", "p2")
    with pytest.raises(ValueError):
        CredentialKey.passphrase("")
    with pytest.raises(ValueError):
        store.set(password, "")


@pytest.mark.parametrize("backend", [fail.Keyring(), null.Keyring(), chainer.ChainerBackend()])
def test_no_usable_keyring_refuses_clearly(backend: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chainer.ChainerBackend, "backends", [], raising=False)
    store = CredentialStore(backend=backend)
    with pytest.raises(KeyringUnavailableError) as caught:
        store.set(CredentialKey.password("u", "h"), "secret")
    error = caught.value
    assert "plain text" in error.message and error.hint and error.title == "No secure keyring"
    with pytest.raises(KeyringUnavailableError):
        store.get(CredentialKey.password("u", "h"))


def test_plaintext_backend_is_refused() -> None:
    plaintext = type("PlaintextKeyring", (MemoryKeyring,), {"__module__": "keyrings.alt.file"})()
    with pytest.raises(KeyringUnavailableError, match=r"keyrings\.alt\.file\.PlaintextKeyring"):
        CredentialStore(backend=plaintext).get(CredentialKey.password("u", "h"))
    assert plaintext.get_password(SERVICE_NAME, "password:u@h:22") is None


class _Failing(MemoryKeyring):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def get_password(self, service: str, username: str) -> str | None:
        raise self.error


@pytest.mark.parametrize(("error", "title"), [(KeyringLocked("locked"), "Keyring is locked"),
                                              (KeyringError("dbus gone"), "Keyring error")])
def test_backend_errors_become_typed_user_errors(error: Exception, title: str) -> None:
    store = CredentialStore(backend=_Failing(error))
    with pytest.raises(CredentialError) as caught:
        store.get(CredentialKey.password("u", "h"))
    assert caught.value.title == title and caught.value.hint


def test_backend_is_found_once_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    import keyring

    calls = []
    backend = MemoryKeyring()

    def counting() -> MemoryKeyring:
        calls.append(1)
        return backend

    monkeypatch.setattr(keyring, "get_keyring", counting)
    store = CredentialStore()
    assert calls == []  # nothing at construction
    threads = [threading.Thread(target=store.get, args=(CredentialKey.password("u", f"h{i}"),)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert calls == [1]


def test_a_keyring_call_that_waits_is_said_and_so_is_its_end(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call not answered within WAIT_SAID_SECONDS is told (True), once however many wait behind it, and its end
    (False) once none waits; a quick call is never told."""
    import time

    from workroom import credentials

    monkeypatch.setattr(credentials, "WAIT_SAID_SECONDS", 0.2)
    said: list[bool] = []
    quick = CredentialStore(backend=MemoryKeyring())
    quick.on_wait = said.append
    assert quick.get(CredentialKey.password("u", "h")) is None and said == []
    backend = DialogKeyring()
    store = CredentialStore(backend=backend)
    store.on_wait = said.append
    calls = [threading.Thread(target=store.get, args=(CredentialKey.password("u", f"h{n}"),)) for n in range(2)]
    for t in calls:
        t.start()
    deadline = time.monotonic() + 5
    while not said and time.monotonic() < deadline:
        time.sleep(0.02)
    assert said == [True]  # both wait (one in the dialog, one behind it): said once
    backend.closed.set()
    for t in calls:
        t.join(5)
    assert said == [True, False]
