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
        assert (opened.local, opened.lport) == client.getsockname()[:2]
        assert opened.server_end(table) is inbound, "the server beside it: the end it accepted"
        assert inbound.server_end(table) is None and listening.server_end(table) is None
    finally:
        for s in (client, accepted, srv):
            s.close()


def test_an_ipv4_client_of_a_dual_stack_server_finds_the_end_it_accepted():
    """A server listening on `[::]` (Go's and Node's default) accepts an IPv4 client: the client's line is in `tcp`,
    the accepted end's in `tcp6` as an IPv4-mapped address. The two ends are still one connection."""
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    try:
        srv = socket.create_server(("::", 0), family=socket.AF_INET6, dualstack_ipv6=True)
    except (OSError, ValueError) as exc:
        pytest.skip(f"no dual-stack listener here: {exc}")
    client = socket.create_connection(("127.0.0.1", srv.getsockname()[1]))
    accepted, _ = srv.accept()
    try:
        table = netns_tcp.table("/proc", os.getpid())
        opened, inbound = table[_inode(client)], table[_inode(accepted)]
        assert (opened.name, inbound.name) == ("tcp", "tcp6")
        assert inbound.peer == "127.0.0.1" and opened.local == "127.0.0.1"
        assert opened.server_end(table) is inbound
    finally:
        for s in (client, accepted, srv):
            s.close()


def test_lines_it_cannot_read_are_skipped_and_the_rest_kept():
    header = b"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    good = b"   1: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 20 4\n"
    text = header + b"garbage\n   2: ZZ:ZZ 0100007F:1F90 01 0 0 0 0 0 0 777\n" + good + b"\n"
    text += b"   3: 0100007F:9C40 -1000007F:1F90 01 0 0 0 0 0 0 778\n"  # a negative word: struct cannot pack it
    found = netns_tcp.parse(text)
    assert list(found) == [4242]
    assert (found[4242].peer, found[4242].pport, found[4242].state) == ("127.0.0.1", 8080, tcp_rule.ESTABLISHED)


def test_an_ipv4_peer_on_a_dual_stack_socket_is_named_as_ipv4_and_its_table_is_kept():
    header = b"  sl  local_address remote_address st tx_queue rx_queue tr tm->when retrnsmt uid timeout inode\n"
    mapped = (b"   0: 0000000000000000FFFF00000100007F:9C40 0000000000000000FFFF00000500000A:1F90 01 "
              b"00000000:00000000 00:00000000 00000000  1000        0 5151 1 0 20 4\n")
    found = netns_tcp.parse(header + mapped, "tcp6")
    assert (found[5151].peer, found[5151].pport, found[5151].name) == ("10.0.0.5", 8080, "tcp6")


def test_a_server_that_closed_its_listener_is_still_one_that_accepted():
    """`nc -l` accepts once and closes its listener: its connection's local port is a fixed one below the ephemeral
    range and the client's is inside it, so it is inbound still; a client's own port is ephemeral."""
    header = b"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    served = b"   0: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000 0 61 1 0 20 4\n"
    asked = b"   1: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000 0 62 1 0 20 4\n"
    found = netns_tcp.parse(header + served + asked)
    assert found[61].inbound and not found[62].inbound


def test_a_table_cut_by_the_read_drops_its_last_line():
    header = b"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    line = b"   1: 0100007F:9C40 0100007F:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 20 4\n"
    text = (header + line * (netns_tcp.TABLE_BYTES // len(line) + 1))[:netns_tcp.TABLE_BYTES - 30]
    assert 4242 in netns_tcp.parse(text)
    cut = text + line[:30]
    assert len(cut) == netns_tcp.TABLE_BYTES and 4242 in netns_tcp.parse(cut)  # the last, partial line is dropped
    assert netns_tcp.parse(header + b"   1: 0100007F:9C40 0100007F 01 0:0 0:0 0 0 0 77\n") == {}


def test_a_process_whose_entry_cannot_be_read_gives_nothing():
    assert netns_tcp.table("/proc", "999999999") == {}
    assert netns_tcp.netns_id("/proc", "999999999") is None
