"""The shared fixtures do what they promise (the proofs named in the Foundation issue)."""

from __future__ import annotations

import base64
import io
import os
import pwd
import socket
import time

import paramiko
import pytest

pytestmark = pytest.mark.integration


def _client(server) -> paramiko.SSHClient:
    client = paramiko.SSHClient()
    keys = client.get_host_keys()
    host, key_type, key_b64 = server.host_key_line.split()
    keys.add(host, key_type, paramiko.Ed25519Key(data=base64.b64decode(key_b64)))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(server.host, server.port, username=server.user, key_filename=str(server.key_path),
                   allow_agent=False, look_for_keys=False, timeout=10)
    return client


def test_sshd_exec_and_sftp(sshd) -> None:
    client = _client(sshd)
    try:
        _, out, err = client.exec_command("id -un; echo $HOME; ls -A ~", timeout=10)
        lines = out.read().decode().splitlines()
        assert lines[0] == sshd.user
        assert lines[1] == str(sshd.home)
        assert err.read() == b""
        sftp = client.open_sftp()
        sftp.putfo(io.BytesIO(b"hello from the test\n"), "greeting.txt")
        sftp.close()
        _, out, _ = client.exec_command("cat greeting.txt", timeout=10)
        assert out.read() == b"hello from the test\n"
    finally:
        client.close()
    assert (sshd.home / "greeting.txt").read_bytes() == b"hello from the test\n"


def test_sshd_user_is_unprivileged_and_quiet(sshd) -> None:
    if os.geteuid() == 0:
        assert pwd.getpwnam(sshd.user).pw_uid != 0
    client = _client(sshd)
    try:
        _, out, err = client.exec_command("true", timeout=10)
        assert out.read() == b"" and err.read() == b""  # start-up prints nothing
    finally:
        client.close()


def test_sshd_rejects_unknown_host_key(sshd) -> None:
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    with pytest.raises(paramiko.SSHException):
        client.connect(sshd.host, sshd.port, username=sshd.user, key_filename=str(sshd.key_path),
                       allow_agent=False, look_for_keys=False, timeout=10)
    client.close()


@pytest.mark.root
def test_netns_box_gateway_datagram_moves_rx_and_quiet_is_quiet(netns_box) -> None:
    route = netns_box.exec("ip", "route", "show", "default", check=True).stdout
    assert f"via {netns_box.host_addr}" in route
    v6 = netns_box.exec("sysctl", "-n", f"net.ipv6.conf.{netns_box.box_if}.disable_ipv6", check=True).stdout
    assert v6.strip() == "1"
    # 3 quiet seconds: nothing moves.
    rx0 = netns_box.host_rx_bytes()
    time.sleep(3)
    assert netns_box.host_rx_bytes() == rx0, "the box sent bytes while nothing ran in it"
    # One 1-byte datagram to the default gateway, port 9.
    code = (f"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
            f"s.sendto(b'x', ('{netns_box.host_addr}', 9))")
    netns_box.exec("python3", "-c", code, check=True)
    deadline = time.monotonic() + 3
    while netns_box.host_rx_bytes() == rx0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert netns_box.host_rx_bytes() >= rx0 + 43  # eth 14 + ip 20 + udp 8 + 1 byte


@pytest.mark.root
def test_netns_box_receives_datagrams_on_host_socket(netns_box) -> None:
    rcv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    rcv.bind((netns_box.host_addr, 0))
    rcv.settimeout(5)
    port = rcv.getsockname()[1]
    try:
        code = f"import socket; socket.socket(2, 2).sendto(b'z', ('{netns_box.host_addr}', {port}))"
        netns_box.exec("python3", "-c", code, check=True)
        data, (addr, _) = rcv.recvfrom(16)
        assert data == b"z" and addr == netns_box.box_addr
    finally:
        rcv.close()


@pytest.mark.root
def test_netns_box_is_deleted_at_teardown(make_netns_box) -> None:
    import subprocess

    from fixtures import netns

    box = make_netns_box()
    netns.destroy(box)
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert box.name not in names
    assert not os.path.exists(f"/sys/class/net/{box.host_if}")


def test_memory_keyring(memory_keyring) -> None:
    import keyring

    keyring.set_password("wr-test", "alice", "s3cret")
    assert keyring.get_password("wr-test", "alice") == "s3cret"
    keyring.delete_password("wr-test", "alice")
    assert keyring.get_password("wr-test", "alice") is None
