"""The typed questions the engine asks a person: which secret (kind and subject, never a "kind:subject"
string), and which host key."""

from __future__ import annotations

import pytest
from workroom.core.questions import HostKeyQuestion, SecretKind, SecretRequest
from workroom.credentials import CredentialKey

pytestmark = pytest.mark.unit


def test_a_password_is_named_by_its_login_and_a_passphrase_by_its_key_file() -> None:
    password = SecretRequest.password("dev", "10.0.0.5", 2222, where="dev@box (10.0.0.5:2222)")
    assert (password.kind, password.subject) == (SecretKind.PASSWORD, "dev@10.0.0.5:2222")
    assert password.prompt == "Password for dev@box (10.0.0.5:2222)"
    passphrase = SecretRequest.passphrase("/home/dev/.ssh/id_ed25519")
    assert (passphrase.kind, passphrase.subject) == (SecretKind.PASSPHRASE, "/home/dev/.ssh/id_ed25519")
    assert passphrase.prompt == "Passphrase for /home/dev/.ssh/id_ed25519"


def test_the_keyring_files_a_request_where_the_cli_stores_it() -> None:
    """The login asks, the CLI's `secret set` stores: both must land on the same keyring entry."""
    asked = SecretRequest.password("dev", "box", 22, where="anything the prompt says")
    assert CredentialKey.of(asked) == CredentialKey.password("dev", "box", 22)
    assert CredentialKey.of(SecretRequest.passphrase("/k")) == CredentialKey.passphrase("/k")
    assert CredentialKey.of(asked).username == "password:dev@box:22"


@pytest.mark.parametrize("subject", ["", "two\nlines", "nul\x00"])
def test_a_subject_is_one_non_empty_line(subject: str) -> None:
    with pytest.raises(ValueError):
        SecretRequest(SecretKind.PASSPHRASE, subject)


def test_a_host_key_question_names_the_port_only_when_it_is_not_22() -> None:
    assert HostKeyQuestion("box", 22, "ssh-ed25519", "SHA256:x").where == "box"
    assert HostKeyQuestion("10.1.2.3", 2222, "ssh-ed25519", "SHA256:x").where == "10.1.2.3:2222"


def test_a_host_key_is_named_as_people_say_it() -> None:
    from workroom.core.questions import HostKeyQuestion

    def words(key_type: str) -> str:
        return HostKeyQuestion("box", 22, key_type, "SHA256:x").key_words

    assert words("ssh-ed25519") == "an Ed25519 key (ssh-ed25519)"  # it read "a ssh-ed25519 key"
    assert words("ecdsa-sha2-nistp256") == "an ECDSA key (ecdsa-sha2-nistp256)"
    assert words("ssh-rsa") == "an RSA key (ssh-rsa)"
    assert words("x-new-type") == "a key of type x-new-type"
