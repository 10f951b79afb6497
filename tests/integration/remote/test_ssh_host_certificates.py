"""Host certificates judged as ssh judges them: signer, principal, validity window and a revoked CA.

Certificates are made by the real ssh-keygen; the key the host would present is the host key loaded with
its certificate, exactly what paramiko hands the host key check."""

from __future__ import annotations

import subprocess
from pathlib import Path

import paramiko
import pytest
from workroom.remote.host_keys import ChangedHostKey, KnownHostKey, KnownHosts

pytestmark = pytest.mark.integration

PORT = 2222


def _keygen(path: Path) -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True,
                   capture_output=True, timeout=30)
    return path


def _presented(tmp_path: Path, ca: Path, *, principals: str = "box.example", validity: str = "-5m:+1h",
               host: bool = True) -> paramiko.PKey:
    key = _keygen(tmp_path / "host_key")
    subprocess.run(["ssh-keygen", "-q", "-s", str(ca), "-I", "test", "-n", principals, "-V", validity,
                    *(["-h"] if host else []), f"{key}.pub"], check=True, capture_output=True, timeout=30)
    loaded = paramiko.Ed25519Key.from_private_key_file(str(key))
    loaded.load_certificate(f"{key}-cert.pub")
    return loaded


def _known(tmp_path: Path, lines: list[str]) -> KnownHosts:
    user_file = tmp_path / "known_hosts"
    user_file.write_text("\n".join(lines) + "\n")
    return KnownHosts(tmp_path / "app_known_hosts", user_file=user_file)


def _ca_line(ca: Path, marker: str = "@cert-authority", pattern: str = "*.example") -> str:
    key_type, b64 = Path(f"{ca}.pub").read_text().split()[:2]
    return f"{marker} {pattern} {key_type} {b64}"


@pytest.fixture
def ca(tmp_path: Path) -> Path:
    return _keygen(tmp_path / "ca")


def test_a_valid_certificate_from_a_trusted_ca_is_known(tmp_path, ca) -> None:
    known = _known(tmp_path, [_ca_line(ca, pattern="[box.example]:*")])
    verdict = known.verify("box.example", PORT, _presented(tmp_path, ca))
    assert isinstance(verdict, KnownHostKey)
    assert "ssh-ed25519-cert-v01@openssh.com" in known.known_key_types("box.example", PORT)


@pytest.mark.parametrize(("kwargs", "why"), [
    ({"principals": "other.example"}, "made for another name"),
    ({"validity": "-2h:-1h"}, "expired"),
    ({"host": False}, "a user certificate, not a host one"),
])
def test_a_certificate_that_fails_a_check_is_refused(tmp_path, ca, kwargs, why) -> None:
    known = _known(tmp_path, [_ca_line(ca, pattern="[box.example]:*")])
    verdict = known.verify("box.example", PORT, _presented(tmp_path, ca, **kwargs))
    assert isinstance(verdict, ChangedHostKey) and verdict.certificate, why


def test_a_revoked_ca_is_refused(tmp_path, ca) -> None:
    known = _known(tmp_path, [_ca_line(ca, pattern="[box.example]:*"), _ca_line(ca, "@revoked", "*")])
    verdict = known.verify("box.example", PORT, _presented(tmp_path, ca))
    assert isinstance(verdict, ChangedHostKey) and verdict.revoked


def test_a_ca_for_other_hosts_does_not_vouch(tmp_path, ca) -> None:
    """No CA for this name: the certificate's plain key is judged as any key (here: a question)."""
    known = _known(tmp_path, [_ca_line(ca, pattern="*.elsewhere")])
    verdict = known.verify("box.example", PORT, _presented(tmp_path, ca))
    assert not isinstance(verdict, KnownHostKey)
