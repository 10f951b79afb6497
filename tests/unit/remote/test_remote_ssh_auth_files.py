"""Key, public-key and certificate files met while logging in: a FIFO (or device) in any of their places is
skipped or reported, never waited on. Keys and certificates are made by the real ssh-keygen; no server is
needed because the files are read before any login attempt (`LoginAttempts._keys`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from fixtures.fifo import within
from workroom.remote.ssh_auth import LoginAttempts
from workroom.remote.ssh_config import resolve_target

pytestmark = [pytest.mark.unit,
              pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs OpenSSH's ssh-keygen")]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", str(path)],
                   check=True, capture_output=True, timeout=30)


def _keys(tmp_path: Path, config: str, fifos: list[Path]) -> tuple[list[str], list[str]]:
    (tmp_path / "config").write_text(config + "  IdentityAgent none\n")
    target = resolve_target("x", config_path=tmp_path / "config", home=tmp_path, default_identities=(),
                            environ={})
    attempts = LoginAttempts(target, None, use_agent=False)
    labels = within(lambda: [label for label, _ in attempts._keys()], fifos)
    return labels, attempts.problems


def test_a_real_key_and_its_certificate_are_offered_certificate_first(tmp_path: Path) -> None:
    _keygen(tmp_path / "ca")
    _keygen(tmp_path / "id")
    subprocess.run(["ssh-keygen", "-q", "-s", str(tmp_path / "ca"), "-I", "t", "-n", "u", str(tmp_path / "id.pub")],
                   check=True, capture_output=True, timeout=30)
    labels, problems = _keys(tmp_path, f"Host x\n  IdentityFile {tmp_path}/id\n", [])
    assert [label.split(" (")[0] for label in labels] == [f"{tmp_path}/id with certificate {tmp_path}/id-cert.pub",
                                                         f"{tmp_path}/id"]
    assert problems == []


def test_a_fifo_as_the_public_key_does_not_hang_and_the_key_is_still_offered(tmp_path: Path) -> None:
    _keygen(tmp_path / "id")
    (tmp_path / "id.pub").unlink()
    os.mkfifo(tmp_path / "id.pub")
    labels, _ = _keys(tmp_path, f"Host x\n  IdentityFile {tmp_path}/id\n", [tmp_path / "id.pub"])
    assert [label.split(" (")[0] for label in labels] == [f"{tmp_path}/id"]


def test_a_fifo_as_the_certificate_does_not_hang_and_the_key_is_offered_without_it(tmp_path: Path) -> None:
    _keygen(tmp_path / "id")
    cert = tmp_path / "user-cert.pub"
    os.mkfifo(cert)
    labels, _ = _keys(tmp_path, f"Host x\n  IdentityFile {tmp_path}/id\n  CertificateFile {cert}\n", [cert])
    assert [label.split(" (")[0] for label in labels] == [f"{tmp_path}/id"]


def test_a_fifo_as_the_private_key_is_reported_not_waited_on(tmp_path: Path) -> None:
    key = tmp_path / "id"
    os.mkfifo(key)
    labels, problems = _keys(tmp_path, f"Host x\n  IdentityFile {key}\n", [key])
    assert labels == []
    assert any(str(key) in p and "not a regular file" in p for p in problems), problems
