"""Where `ssh` connects, the app connects: real sshd servers, the OpenSSH client first, then the app.

Each test builds a real setup (an ssh-agent started here, a test CA, a restricted server...), shows that
OpenSSH's own client logs in with the config, then resolves and connects the app with the same config.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures import sshd as sshd_mod
from fixtures.procs import stop_process
from workroom.credentials import KeyringUnavailableError
from workroom.remote.host_keys import HostKeyChanged, KnownHosts
from workroom.remote.ssh_config import resolve_target
from workroom.remote.ssh_connection import AuthFailed, HostUnreachable, SecretRequest, SshConnection
from workroom.remote.ssh_errors import LoginInterrupted
from workroom.sessions.reconnect_rules import BACKOFF_SECONDS

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BASE_ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-wr-home"}


def _keygen(path: Path, passphrase: str = "") -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", path.name, "-f", str(path)],
                   check=True, capture_output=True, timeout=30)
    return path


@pytest.fixture
def authorize(sshd) -> Iterator:
    """authorize(pubkey_path) adds a key to the test user's authorized_keys; restored afterwards."""
    auth = (sshd.home / ".ssh" / "authorized_keys") if sshd.owns_user else sshd.key_path.parent / "authorized_keys"
    original = auth.read_text()

    def add(pub: Path) -> None:
        with auth.open("a") as handle:
            handle.write(pub.read_text())

    yield add
    auth.write_text(original)


@pytest.fixture
def variants(sshd, tmp_path) -> Iterator:
    """variant(extra=..., host_certificate_ca=...) starts another sshd for the test user; all stopped after."""
    started: list[sshd_mod.SshdServer] = []

    def start(**kwargs) -> sshd_mod.SshdServer:  # type: ignore[no-untyped-def]
        server = sshd_mod.launch_variant(sshd, tmp_path / f"variant{len(started)}", **kwargs)
        started.append(server)
        return server

    yield start
    for server in started:
        sshd_mod.stop_variant(server)


def _write_config(tmp_path: Path, server, alias: str, lines: list[str], *, known_hosts: Path | None = None,
                  name: str = "config") -> Path:
    if known_hosts is None:
        known_hosts = tmp_path / f"known_hosts_{server.port}"
        known_hosts.write_text(server.host_key_line + "\n")
    config = tmp_path / name
    config.write_text("\n".join([
        f"Host {alias}",
        f"  HostName {server.host}",
        f"  Port {server.port}",
        f"  User {server.user}",
        f"  UserKnownHostsFile {known_hosts}",
        "  GlobalKnownHostsFile /dev/null",
        "  StrictHostKeyChecking yes",
        "  BatchMode yes",
        *(f"  {line}" for line in lines),
        "",
    ]))
    config.chmod(0o600)
    return config


def _openssh(config: Path, alias: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ssh", "-F", str(config), alias, "echo", "openssh-ok"], capture_output=True, text=True,
                          timeout=30, env={**BASE_ENV, **(env or {})}, stdin=subprocess.DEVNULL)


def _app(tmp_path: Path, config: Path, alias: str, env: dict[str, str] | None = None, **kwargs) -> bytes:
    target = resolve_target(alias, config_path=config, default_identities=(), environ={**BASE_ENV, **(env or {})})
    app_known = KnownHosts(tmp_path / "app_known_hosts", user_file=None)
    with SshConnection.connect(target, app_known, timeout=10, **kwargs) as conn:
        return conn.exec("echo app-ok", timeout=10).stdout


def _both_connect(tmp_path: Path, config: Path, alias: str, env: dict[str, str] | None = None) -> None:
    done = _openssh(config, alias, env)
    assert done.returncode == 0 and done.stdout == "openssh-ok\n", done.stderr
    assert _app(tmp_path, config, alias, env) == b"app-ok\n"


@pytest.fixture
def ssh_agent(tmp_path) -> Iterator[Path]:
    """An ssh-agent started by the test (by PID, stopped after), listening at a socket of our own."""
    sock = tmp_path / "agent.sock"
    proc = subprocess.Popen(["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=BASE_ENV)
    deadline = time.monotonic() + 10
    while not sock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sock.exists(), "ssh-agent did not start"
    yield sock
    stop_process(proc)


def _agent_add(sock: Path, key: Path) -> None:
    subprocess.run(["ssh-add", "-q", str(key)], check=True, capture_output=True, timeout=30,
                   env={**BASE_ENV, "SSH_AUTH_SOCK": str(sock)})


def test_an_alias_from_an_included_file_connects(sshd, tmp_path) -> None:
    included = tmp_path / "conf.d"
    included.mkdir()
    inner = _write_config(tmp_path, sshd, "orbbox", [f"IdentityFile {sshd.key_path}"], name="conf.d/orb")
    config = tmp_path / "config"
    config.write_text(f"Include {included}/*\n")
    assert inner.exists()
    _both_connect(tmp_path, config, "orbbox")


def test_identity_agent_with_a_key_that_is_nowhere_on_disk(sshd, tmp_path, authorize, ssh_agent) -> None:
    key = _keygen(tmp_path / "agent_only")
    authorize(key.with_name("agent_only.pub"))
    _agent_add(ssh_agent, key)
    key.unlink()
    key.with_name("agent_only.pub").unlink()  # the key now lives only in the agent
    config = _write_config(tmp_path, sshd, "viaagent", [f"IdentityAgent {ssh_agent}"])
    _both_connect(tmp_path, config, "viaagent")  # no SSH_AUTH_SOCK in the environment: only IdentityAgent


def test_identity_agent_none_turns_the_agent_off(sshd, tmp_path, authorize, ssh_agent) -> None:
    key = _keygen(tmp_path / "agent_only")
    authorize(key.with_name("agent_only.pub"))
    _agent_add(ssh_agent, key)
    key.unlink()
    config = _write_config(tmp_path, sshd, "noagent", ["IdentityAgent none"])
    env = {"SSH_AUTH_SOCK": str(ssh_agent)}
    assert _openssh(config, "noagent", env).returncode != 0
    with pytest.raises(Exception) as refused:
        _app(tmp_path, config, "noagent", env)
    assert getattr(refused.value, "title", "") == "Login refused"


def test_identities_only_selects_the_agent_key_named_by_a_pub_file(sshd, tmp_path, authorize, ssh_agent,
                                                                   variants) -> None:
    """The server allows one attempt: trying the decoy the agent lists first would use it up."""
    server = variants(extra=["MaxAuthTries 1"])
    decoy = _keygen(tmp_path / "decoy")  # first in the agent, not authorized
    wanted = _keygen(tmp_path / "wanted")
    authorize(wanted.with_name("wanted.pub"))
    _agent_add(ssh_agent, decoy)
    _agent_add(ssh_agent, wanted)
    wanted.unlink()  # only wanted.pub stays on disk
    config = _write_config(tmp_path, server, "pubonly", [
        "IdentitiesOnly yes", f"IdentityFile {tmp_path / 'wanted.pub'}"])
    _both_connect(tmp_path, config, "pubonly", {"SSH_AUTH_SOCK": str(ssh_agent)})


@pytest.fixture
def user_ca(tmp_path) -> Path:
    return _keygen(tmp_path / "user_ca")


def test_a_user_certificate_beside_its_key(sshd, tmp_path, variants, user_ca) -> None:
    server = variants(extra=[f"TrustedUserCAKeys {user_ca}.pub", "AuthorizedKeysFile none"])
    key = _keygen(tmp_path / "certified")
    sshd_mod.sign_key(user_ca, key.with_name("certified.pub"), principals=sshd.user)
    assert key.with_name("certified-cert.pub").exists()
    config = _write_config(tmp_path, server, "certbox", [f"IdentityFile {key}", "IdentitiesOnly yes"])
    _both_connect(tmp_path, config, "certbox")


def test_a_user_certificate_named_by_certificate_file(sshd, tmp_path, variants, user_ca) -> None:
    server = variants(extra=[f"TrustedUserCAKeys {user_ca}.pub", "AuthorizedKeysFile none"])
    key = _keygen(tmp_path / "certified")
    cert = sshd_mod.sign_key(user_ca, key.with_name("certified.pub"), principals=sshd.user)
    elsewhere = tmp_path / "certs" / "my.cert"
    elsewhere.parent.mkdir()
    cert.rename(elsewhere)
    config = _write_config(tmp_path, server, "certfile", [
        f"IdentityFile {key}", f"CertificateFile {elsewhere}", "IdentitiesOnly yes"])
    _both_connect(tmp_path, config, "certfile")


def test_a_host_certificate_trusted_through_cert_authority(sshd, tmp_path, variants) -> None:
    host_ca = _keygen(tmp_path / "host_ca")
    server = variants(host_certificate_ca=host_ca)
    ca_line = Path(f"{host_ca}.pub").read_text().split()
    known = tmp_path / "ca_known_hosts"
    known.write_text(f"@cert-authority [{server.host}]:* {ca_line[0]} {ca_line[1]}\n")
    config = _write_config(tmp_path, server, "hostcert", [f"IdentityFile {sshd.key_path}"], known_hosts=known)
    _both_connect(tmp_path, config, "hostcert")
    assert not (tmp_path / "app_known_hosts").exists(), "a host ssh trusts is never asked about or written"


def test_a_host_certificate_from_another_ca_is_refused(sshd, tmp_path, variants) -> None:
    server = variants(host_certificate_ca=_keygen(tmp_path / "rogue_ca"))
    trusted_ca = Path(f"{_keygen(tmp_path / 'host_ca')}.pub").read_text().split()
    known = tmp_path / "ca_known_hosts"
    known.write_text(f"@cert-authority [{server.host}]:* {trusted_ca[0]} {trusted_ca[1]}\n")
    config = _write_config(tmp_path, server, "rogue", [f"IdentityFile {sshd.key_path}"], known_hosts=known)
    assert _openssh(config, "rogue").returncode != 0
    with pytest.raises(HostKeyChanged) as refused:
        _app(tmp_path, config, "rogue")
    assert "certificate" in refused.value.message


def test_a_server_that_offers_only_rfc8731_curve25519_and_sntrup(sshd, tmp_path, variants) -> None:
    server = variants(extra=["KexAlgorithms sntrup761x25519-sha512@openssh.com,curve25519-sha256"])
    config = _write_config(tmp_path, server, "modern", [f"IdentityFile {sshd.key_path}"])
    _both_connect(tmp_path, config, "modern")


def test_no_common_key_exchange_names_both_lists_without_a_traceback(sshd, tmp_path, variants, capfd) -> None:
    """A server that offers only sntrup761 (which OpenSSH speaks and paramiko does not; see
    docs/providers.md): the app says so in plain words."""
    server = variants(extra=["KexAlgorithms sntrup761x25519-sha512@openssh.com"])
    config = _write_config(tmp_path, server, "pq", [f"IdentityFile {sshd.key_path}"])
    assert _openssh(config, "pq").returncode == 0
    with pytest.raises(HostUnreachable) as failed:
        _app(tmp_path, config, "pq")
    assert failed.value.title == "No common SSH algorithm"
    assert "sntrup761x25519-sha512@openssh.com" in failed.value.message  # the server's offer
    assert "curve25519-sha256" in failed.value.message  # ours
    assert "Traceback" not in capfd.readouterr().err


def _children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rpartition(")")[2].split()[1]) == pid:
            found.append(int(entry))
    return found


def test_a_connection_dropped_mid_login_is_retried_not_refused(sshd, tmp_path, variants, authorize) -> None:
    """sshd is killed while the login waits (for a passphrase), then restarted: the failure is a
    retryable drop, and the next try after one back-off step logs in."""
    server = variants()
    key = _keygen(tmp_path / "locked", passphrase="pass phrase")
    authorize(key.with_name("locked.pub"))
    config = _write_config(tmp_path, server, "waking", [f"IdentityFile {key}", "IdentitiesOnly yes"])
    killed = []

    def kill_sshd_then_answer(request: SecretRequest) -> str:
        if not killed:
            pids = [server.pid, *_children_of(server.pid)]
            for pid in [p for q in pids for p in (q, *_children_of(q))]:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            killed.extend(pids)
            server._proc.wait(timeout=5)
            time.sleep(0.5)  # let the client's transport see the hang-up
        return "pass phrase"

    with pytest.raises(LoginInterrupted) as dropped:
        _app(tmp_path, config, "waking", ask_secret=kill_sshd_then_answer)
    assert dropped.value.retryable
    sshd_mod.restart_variant(server)
    time.sleep(BACKOFF_SECONDS[0])
    started = time.monotonic()
    assert _app(tmp_path, config, "waking", ask_secret=kill_sshd_then_answer) == b"app-ok\n"
    assert time.monotonic() - started < 10


def test_host_key_alias_and_several_known_hosts_files(sshd, tmp_path) -> None:
    """The key is on record under the alias in the second of two UserKnownHostsFile entries: both
    clients trust it, and the app asks nothing and writes nothing."""
    key_type, key_b64 = sshd.host_key_line.split()[1:3]
    second = tmp_path / "second_known_hosts"
    second.write_text(f"storedalias {key_type} {key_b64}\n")
    config = _write_config(tmp_path, sshd, "aliased", [f"IdentityFile {sshd.key_path}", "HostKeyAlias storedalias"],
                           known_hosts=Path(f"{tmp_path / 'missing_known_hosts'} {second}"))
    _both_connect(tmp_path, config, "aliased")
    assert not (tmp_path / "app_known_hosts").exists()


def test_a_revoked_host_key_is_refused_naming_its_fingerprint(sshd, tmp_path) -> None:
    key_type, key_b64 = sshd.host_key_line.split()[1:3]
    known = tmp_path / "revoking_known_hosts"
    known.write_text(f"{sshd.host_key_line}\n@revoked * {key_type} {key_b64}\n")
    config = _write_config(tmp_path, sshd, "revoked", [f"IdentityFile {sshd.key_path}"], known_hosts=known)
    assert _openssh(config, "revoked").returncode != 0
    with pytest.raises(HostKeyChanged) as refused:
        _app(tmp_path, config, "revoked")
    assert "revoked" in refused.value.message and "SHA256:" in refused.value.message


def test_password_server_without_keyring_says_which_key_was_refused(sshd, tmp_path, variants) -> None:
    """The key is not authorized, the server also takes passwords, and there is no keyring to ask: the
    message names the refused key and the user (not only "no secure keyring")."""
    server = variants(extra=["PasswordAuthentication yes"])
    stranger = _keygen(tmp_path / "stranger")
    config = _write_config(tmp_path, server, "pwbox", [f"IdentityFile {stranger}", "IdentitiesOnly yes"])
    assert "Permission denied" in _openssh(config, "pwbox").stderr

    def no_keyring(request: SecretRequest) -> str | None:
        raise KeyringUnavailableError("keyring.backends.fail.Keyring")

    with pytest.raises(AuthFailed) as refused:
        _app(tmp_path, config, "pwbox", ask_secret=no_keyring)
    message = refused.value.message
    assert str(stranger) in message and repr(server.user) in message
    assert "password could not be asked for" in message and "keyring" in message


def test_a_key_in_the_global_known_hosts_file_is_trusted(sshd, tmp_path) -> None:
    global_file = tmp_path / "ssh_known_hosts"
    global_file.write_text(sshd.host_key_line + "\n")
    config = _write_config(tmp_path, sshd, "globally", [f"IdentityFile {sshd.key_path}"],
                           known_hosts=tmp_path / "empty_user_known_hosts")
    config.write_text(config.read_text().replace("GlobalKnownHostsFile /dev/null",
                                                 f"GlobalKnownHostsFile {global_file}"))
    _both_connect(tmp_path, config, "globally")
    assert not (tmp_path / "app_known_hosts").exists()


def test_proxy_command_written_before_proxy_jump_is_the_one_used(sshd, tmp_path) -> None:
    """A ProxyJump to a host that does not exist comes second, so it must be ignored."""
    known = tmp_path / "known_hosts_pipe"
    known.write_text(sshd.host_key_line + "\n")
    config = _write_config(tmp_path, sshd, "piped", [
        f"IdentityFile {sshd.key_path}",
        f"ProxyCommand ssh -q -i {sshd.key_path} -o BatchMode=yes -o UserKnownHostsFile={known} "
        f"-o StrictHostKeyChecking=yes -p {sshd.port} {sshd.user}@{sshd.host} -W %h:%p",
        "ProxyJump nowhere.invalid",
    ], known_hosts=known)
    _both_connect(tmp_path, config, "piped")


def test_match_user_sees_the_user_typed_in_user_at_host(sshd, tmp_path) -> None:
    """Only `Match user <test user>` names the key; the user comes from `user@alias` alone."""
    known = tmp_path / "known_hosts_mu"
    known.write_text(sshd.host_key_line + "\n")
    config = tmp_path / "config"
    config.write_text("\n".join([
        "Host typed", f"  HostName {sshd.host}", f"  Port {sshd.port}", f"  UserKnownHostsFile {known}",
        "  GlobalKnownHostsFile /dev/null", "  StrictHostKeyChecking yes", "  BatchMode yes",
        "  IdentitiesOnly yes",
        f"Match user {sshd.user}", f"  IdentityFile {sshd.key_path}", ""]))
    _both_connect(tmp_path, config, f"{sshd.user}@typed")


def test_a_server_that_hangs_up_after_too_many_attempts_is_a_refusal_not_a_drop(sshd, tmp_path, variants) -> None:
    """sshd says goodbye ("Too many authentication failures") instead of answering the last attempt: that
    is final, unlike a connection that just dies."""
    server = variants(extra=["MaxAuthTries 1"])
    stranger = _keygen(tmp_path / "stranger")
    config = _write_config(tmp_path, server, "strict", [f"IdentityFile {stranger}", "IdentitiesOnly yes"])
    assert _openssh(config, "strict").returncode != 0
    with pytest.raises(AuthFailed) as refused:
        _app(tmp_path, config, "strict")
    assert not refused.value.retryable
    assert str(stranger) in refused.value.message


def test_proxy_use_fdpass_as_orbstack_writes_it(sshd, tmp_path) -> None:
    helper = Path(__file__).with_name("fdpass_proxy.py")
    config = _write_config(tmp_path, sshd, "orb", [
        f"IdentityFile {sshd.key_path}", f"ProxyCommand '{sys.executable}' '{helper}' %h %p", "ProxyUseFdpass yes"])
    _both_connect(tmp_path, config, "orb")


def test_an_agent_key_with_its_certificate_on_disk(sshd, tmp_path, variants, user_ca, ssh_agent) -> None:
    """Vault-style: the key lives only in the agent, its short-lived certificate in a file; the server
    accepts certificates only."""
    server = variants(extra=[f"TrustedUserCAKeys {user_ca}.pub", "AuthorizedKeysFile none"])
    key = _keygen(tmp_path / "vaulted")
    cert = sshd_mod.sign_key(user_ca, key.with_name("vaulted.pub"), principals=sshd.user)
    cert = cert.rename(tmp_path / "vault-issued.cert")  # not beside the key: ssh-add must not load it
    _agent_add(ssh_agent, key)
    key.unlink()
    config = _write_config(tmp_path, server, "vault", [
        f"IdentityFile {key}.pub", f"CertificateFile {cert}", "IdentitiesOnly yes", f"IdentityAgent {ssh_agent}"])
    _both_connect(tmp_path, config, "vault")
