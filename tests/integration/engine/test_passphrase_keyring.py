"""SSH key passphrases come only from the keyring, end to end against the real sshd (the keyring is the
in-memory test backend, since no desktop keyring runs on a headless machine)."""

from __future__ import annotations

import asyncio
import subprocess

import pytest
from engine_helpers import trust_sshd
from workroom.core.errors import UserError
from workroom.core.hosts import Host, IdentityRef
from workroom.credentials import CredentialKey, CredentialStore
from workroom.sessions.engine import Engine

pytestmark = pytest.mark.integration


@pytest.fixture
def encrypted_key(sshd, tmp_path):  # type: ignore[no-untyped-def]
    key = tmp_path / "id_locked"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "correct horse", "-f", str(key)], check=True)
    auth = sshd.home / ".ssh" / "authorized_keys"
    original = auth.read_text()
    auth.write_text(original + (tmp_path / "id_locked.pub").read_text())
    yield key
    auth.write_text(original)


def _connect(app_home, agent_bundle, sshd, key, store: CredentialStore):  # type: ignore[no-untyped-def]
    async def go():  # type: ignore[no-untyped-def]
        engine = Engine(app_home, agent_bundle, auto_reconnect=False, credentials=store)
        if "locked" not in engine.hosts.names():
            engine.add_host(Host(name="locked", provider="ssh", address=sshd.host, port=sshd.port, user=sshd.user,
                                 identity=IdentityRef.file(str(key)), agent_candidates="user"))
        try:
            return await engine.session("locked").connect(timeout=60)
        finally:
            await engine.close()

    return asyncio.run(go())


def test_passphrase_from_the_keyring_logs_in(sshd, app_home, agent_bundle, encrypted_key, memory_keyring,
                                            monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    trust_sshd(app_home, sshd)
    store = CredentialStore(backend=memory_keyring)
    with pytest.raises(UserError, match="needs a passphrase"):
        _connect(app_home, agent_bundle, sshd, encrypted_key, store)
    store.set(CredentialKey.passphrase(str(encrypted_key)), "correct horse")
    snap = _connect(app_home, agent_bundle, sshd, encrypted_key, store)
    assert snap.status is not None


def test_a_refused_passphrase_is_forgotten(sshd, app_home, agent_bundle, encrypted_key, memory_keyring,
                                           monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    trust_sshd(app_home, sshd)
    store = CredentialStore(backend=memory_keyring)
    key = CredentialKey.passphrase(str(encrypted_key))
    store.set(key, "wrong")
    with pytest.raises(UserError, match="not accepted"):
        _connect(app_home, agent_bundle, sshd, encrypted_key, store)
    assert store.get(key) is None


def test_no_usable_keyring_is_said_never_a_plaintext_fallback(sshd, app_home, agent_bundle, encrypted_key,
                                                              monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import keyring.backends.fail

    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    trust_sshd(app_home, sshd)
    store = CredentialStore(backend=keyring.backends.fail.Keyring())
    with pytest.raises(UserError) as info:
        _connect(app_home, agent_bundle, sshd, encrypted_key, store)
    assert "keyring" in str(info.value).lower()
