"""known_hosts handling with keys made by paramiko: match, question, refusal, and what gets written."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import paramiko
import pytest
from fixtures.fifo import within
from workroom.remote.host_keys import (
    ChangedHostKey,
    HostKeyChanged,
    HostKeyUnknown,
    KnownHostKey,
    KnownHosts,
    KnownHostsError,
    UnknownHostKey,
    fingerprint,
    host_key_name,
    preferred_key_types,
)
from workroom.remote.ssh_connection import RefuseUnverifiedHostKey

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def keys() -> list[paramiko.PKey]:
    return [paramiko.ECDSAKey.generate() for _ in range(3)]


def line(name: str, key: paramiko.PKey) -> str:
    return f"{name} {key.get_name()} {key.get_base64()}\n"


def test_fingerprint_is_openssh_sha256_without_padding(keys) -> None:
    fp = fingerprint(keys[0])
    assert fp.startswith("SHA256:") and not fp.endswith("=") and len(fp) == 7 + 43
    assert fp == keys[0].fingerprint  # paramiko's own rendering agrees


def test_host_key_name() -> None:
    assert host_key_name("box.example", 22) == "box.example"
    assert host_key_name("10.0.0.1", 2222) == "[10.0.0.1]:2222"


def test_unknown_key_is_a_question_and_nothing_is_written(tmp_path: Path, keys) -> None:
    known = KnownHosts(tmp_path / "kh", user_file=None)
    verdict = known.verify("10.0.0.1", 2222, keys[0])
    assert isinstance(verdict, UnknownHostKey)
    assert (verdict.host, verdict.port, verdict.key_type) == ("10.0.0.1", 2222, "ecdsa-sha2-nistp256")
    assert verdict.fingerprint == fingerprint(keys[0])
    assert "[10.0.0.1]:2222" in verdict.prompt() and "ECDSA key fingerprint is SHA256:" in verdict.prompt()
    assert not (tmp_path / "kh").exists()


def test_trust_appends_atomically_with_private_mode_and_then_matches(tmp_path: Path, keys) -> None:
    app_file = tmp_path / "cfg" / "known_hosts"
    known = KnownHosts(app_file, user_file=None)
    known.trust("10.0.0.1", 2222, keys[0])
    known.trust("10.0.0.1", 2222, keys[0])  # already known: no duplicate
    known.trust("box.example", 22, keys[1])
    assert app_file.read_text() == line("[10.0.0.1]:2222", keys[0]) + line("box.example", keys[1])
    assert stat.S_IMODE(app_file.stat().st_mode) == 0o600
    assert sorted(p.name for p in app_file.parent.iterdir()) == ["known_hosts", "known_hosts.lock"]
    verdict = known.verify("10.0.0.1", 2222, keys[0])
    assert isinstance(verdict, KnownHostKey) and verdict.source == app_file
    assert isinstance(known.verify("10.0.0.1", 22, keys[0]), UnknownHostKey), "the port is part of the name"


def test_trust_keeps_existing_lines_even_without_final_newline(tmp_path: Path, keys) -> None:
    app_file = tmp_path / "known_hosts"
    app_file.write_text("# mine\n" + line("a.example", keys[0]).rstrip("\n"))
    KnownHosts(app_file, user_file=None).trust("b.example", 22, keys[1])
    assert app_file.read_text() == "# mine\n" + line("a.example", keys[0]) + line("b.example", keys[1])


def test_changed_key_is_refused_naming_both_and_cannot_be_trusted(tmp_path: Path, keys) -> None:
    known = KnownHosts(tmp_path / "kh", user_file=None)
    known.trust("box.example", 2222, keys[0])
    verdict = known.verify("box.example", 2222, keys[1])
    assert isinstance(verdict, ChangedHostKey)
    assert verdict.expected_fingerprints == (fingerprint(keys[0]),)
    assert verdict.presented_fingerprint == fingerprint(keys[1])
    with pytest.raises(HostKeyChanged) as refused:
        known.trust("box.example", 2222, keys[1])
    assert fingerprint(keys[0]) in refused.value.message and fingerprint(keys[1]) in refused.value.message
    assert "[box.example]:2222" in refused.value.hint
    assert (tmp_path / "kh").read_text() == line("[box.example]:2222", keys[0])


def test_key_of_another_type_than_the_recorded_one_is_refused(tmp_path: Path, keys) -> None:
    rsa = paramiko.RSAKey.generate(1024)
    known = KnownHosts(tmp_path / "kh", user_file=None)
    known.trust("box.example", 22, rsa)
    assert isinstance(known.verify("box.example", 22, keys[0]), ChangedHostKey)
    assert known.known_key_types("box.example", 22) == ["ssh-rsa"]


def test_user_file_is_read_but_never_written(tmp_path: Path, keys) -> None:
    user_file = tmp_path / "user_known_hosts"
    user_file.write_text(line("box.example", keys[0]))
    before = user_file.read_bytes()
    known = KnownHosts(tmp_path / "app_kh", user_file=user_file)
    verdict = known.verify("box.example", 22, keys[0])
    assert isinstance(verdict, KnownHostKey) and verdict.source == user_file
    known.trust("other.example", 22, keys[1])
    assert user_file.read_bytes() == before
    changed = known.verify("box.example", 22, keys[1])
    assert isinstance(changed, ChangedHostKey) and changed.sources == (user_file,)


def test_hashed_entries_match_only_their_host_and_port(tmp_path: Path, keys) -> None:
    user_file = tmp_path / "user_known_hosts"
    hashed = paramiko.HostKeys.hash_host("[10.1.2.3]:2200")
    user_file.write_text(line(hashed, keys[0]))
    known = KnownHosts(tmp_path / "kh", user_file=user_file)
    assert isinstance(known.verify("10.1.2.3", 2200, keys[0]), KnownHostKey)
    assert isinstance(known.verify("10.1.2.3", 2201, keys[0]), UnknownHostKey)
    assert isinstance(known.verify("10.1.2.3", 2200, keys[1]), ChangedHostKey)


def test_patterns_wildcards_lists_and_negation(tmp_path: Path, keys) -> None:
    user_file = tmp_path / "user_known_hosts"
    user_file.write_text(line("*.lab.example,!evil.lab.example,alias", keys[0]) + line("[10.0.0.?]:2222", keys[1]))
    known = KnownHosts(tmp_path / "kh", user_file=user_file)
    assert isinstance(known.verify("a.lab.example", 22, keys[0]), KnownHostKey)
    assert isinstance(known.verify("ALIAS", 22, keys[0]), KnownHostKey)
    assert isinstance(known.verify("evil.lab.example", 22, keys[0]), UnknownHostKey)
    assert isinstance(known.verify("10.0.0.7", 2222, keys[1]), KnownHostKey)
    assert isinstance(known.verify("10.0.0.77", 2222, keys[1]), UnknownHostKey)


def test_revoked_key_is_refused_and_garbage_lines_are_skipped(tmp_path: Path, keys) -> None:
    user_file = tmp_path / "user_known_hosts"
    user_file.write_text(
        "garbage\n\n# comment\nbox.example ssh-ed25519 not-base64!!\n"
        + "@cert-authority *.example " + line("", keys[2]).strip() + "\n"
        + "@revoked * " + line("", keys[1]).strip() + "\n"
        + line("box.example", keys[1])
    )
    known = KnownHosts(tmp_path / "kh", user_file=user_file)
    verdict = known.verify("box.example", 22, keys[1])
    assert isinstance(verdict, ChangedHostKey) and verdict.revoked
    assert "revoked" in HostKeyChanged(verdict).message
    assert isinstance(known.verify("other.example", 22, keys[2]), UnknownHostKey), "CA lines are not host keys"


def test_forget_removes_only_that_host(tmp_path: Path, keys) -> None:
    known = KnownHosts(tmp_path / "kh", user_file=None)
    known.trust("a.example", 22, keys[0])
    known.trust("b.example", 22, keys[1])
    assert known.forget("a.example", 22) == 1
    assert (tmp_path / "kh").read_text() == line("b.example", keys[1])
    known.trust("a.example", 22, keys[2])  # a rebuilt host can now be trusted anew
    assert isinstance(known.verify("a.example", 22, keys[2]), KnownHostKey)


def test_trust_refuses_names_that_would_corrupt_the_file(tmp_path: Path, keys) -> None:
    known = KnownHosts(tmp_path / "kh", user_file=None)
    for bad in ("", "a b", "a,b", "|1|x", "#x"):
        with pytest.raises(ValueError):
            known.trust(bad, 22, keys[0])
    assert not (tmp_path / "kh").exists()


def test_unwritable_app_file_is_a_clear_error(tmp_path: Path, keys) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the config folder should be")
    with pytest.raises(KnownHostsError) as failed:
        KnownHosts(blocker / "kh", user_file=None).trust("a.example", 22, keys[0])
    assert failed.value.title == "Could not save the host key" and str(blocker) in failed.value.message


def test_a_fifo_as_a_known_hosts_file_holds_no_key_and_never_blocks(tmp_path: Path, keys) -> None:
    user_file, app_file = tmp_path / "user_known_hosts", tmp_path / "known_hosts"
    os.mkfifo(user_file)
    os.mkfifo(app_file)
    known = KnownHosts(app_file, user_file=user_file)
    verdict = within(lambda: known.verify("a.example", 22, keys[0]), [user_file, app_file])
    assert isinstance(verdict, UnknownHostKey)  # like a file of garbage lines: no key on record, a question


def test_trusting_with_a_fifo_as_the_app_file_is_a_clear_error_and_leaves_it(tmp_path: Path, keys) -> None:
    app_file = tmp_path / "known_hosts"
    os.mkfifo(app_file)
    with pytest.raises(KnownHostsError) as failed:
        within(lambda: KnownHosts(app_file, user_file=None).trust("a.example", 22, keys[0]), [app_file])
    assert failed.value.title == "Could not save the host key" and "not a regular file" in failed.value.message
    assert stat.S_ISFIFO(os.lstat(app_file).st_mode)  # left in place: nothing of the user's is replaced


def test_policy_accepts_only_a_recorded_key(tmp_path: Path, keys) -> None:
    known = KnownHosts(tmp_path / "kh", user_file=None)
    known.trust("h", 2222, keys[0])
    client = paramiko.SSHClient()
    policy = RefuseUnverifiedHostKey(known, "h", 2222)
    policy.missing_host_key(client, "[h]:2222", keys[0])
    assert isinstance(policy.verdict, KnownHostKey)
    with pytest.raises(HostKeyChanged):
        RefuseUnverifiedHostKey(known, "h", 2222).missing_host_key(client, "[h]:2222", keys[1])
    with pytest.raises(HostKeyUnknown) as unknown:
        RefuseUnverifiedHostKey(known, "other", 22).missing_host_key(client, "other", keys[1])
    assert unknown.value.question.fingerprint == fingerprint(keys[1])
    assert unknown.value.title == "New host key"
    assert (tmp_path / "kh").read_text().count("\n") == 1, "the policy never adds a key"


def test_preferred_key_types_put_recorded_types_first() -> None:
    offered = ("ssh-ed25519", "ecdsa-sha2-nistp256", "rsa-sha2-512", "rsa-sha2-256", "ssh-rsa")
    assert preferred_key_types([], offered) == list(offered)
    assert preferred_key_types(["ecdsa-sha2-nistp256"], offered)[0] == "ecdsa-sha2-nistp256"
    assert preferred_key_types(["ssh-rsa"], offered)[:3] == ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"]
    assert sorted(preferred_key_types(["ssh-rsa", "ssh-ed25519"], offered)) == sorted(offered)
