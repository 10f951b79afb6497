"""Another network namespace's TCP sockets read from its /proc table (netns_tcp), checked against the kernel's own
answer for sockets this test made: each socket's inode (fstat), its peer and its state."""

import os
import socket

import pytest
from wr_agent import netns_tcp, tcp_rule

pytestmark = [pytest.mark.unit, pytest.mark.linux(reason="reads this machine's /proc/PID/net/tcp")]


def _inode(s):
    return os.fstat(s.fileno()).st_ino


@pytest.mark.parametrize(("family", "addr"), [(socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")])
def test_the_table_names_each_end_as_the_kernel_made_it(family, addr):
    """A listener, a connection to it and the one it accepted: the table says which is which (the accepted one is
    inbound: its local port is the listener's), and the opened one's peer and port as getpeername says."""
    if family == socket.AF_INET6 and not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    try:
        srv = socket.create_server((addr, 0), family=family)
    except OSError as exc:
        pytest.skip(f"cannot listen on {addr}: {exc}")
    client = socket.create_connection(srv.getsockname()[:2])
    accepted, _ = srv.accept()
    try:
        table = netns_tcp.table("/proc", os.getpid())
        listening, opened, inbound = table[_inode(srv)], table[_inode(client)], table[_inode(accepted)]
        assert listening.state == tcp_rule.LISTEN
        assert opened.state == tcp_rule.ESTABLISHED and not opened.inbound
        assert (opened.peer, opened.pport) == client.getpeername()[:2]
        assert inbound.state == tcp_rule.ESTABLISHED and inbound.inbound
        assert (inbound.peer, inbound.pport) == accepted.getpeername()[:2]
    finally:
        for s in (client, accepted, srv):
            s.close()


def test_lines_it_cannot_read_are_skipped_and_the_rest_kept():
    header = b"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    good = b"   1: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 20 4\n"
    text = header + b"garbage\n   2: ZZ:ZZ 0100007F:1F90 01 0 0 0 0 0 0 777\n" + good + b"\n"
    found = netns_tcp.parse(text)
    assert list(found) == [4242]
    assert (found[4242].peer, found[4242].pport, found[4242].state) == ("127.0.0.1", 8080, tcp_rule.ESTABLISHED)


def test_a_process_whose_entry_cannot_be_read_gives_nothing():
    assert netns_tcp.table("/proc", "999999999") == {}
    assert netns_tcp.netns_id("/proc", "999999999") is None
